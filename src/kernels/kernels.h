// kernels — attention forward/backward over slice lists (the coalesced engine's kernel
// contract) and partial-result merge. A plain fp32 reference (attn_ref.c) and a fast version
// (FlashAttention-2 style tiled online softmax, AVX-512F and AVX2+FMA micro-kernels with runtime
// dispatch and a scalar fallback, OpenMP) that tests check against it; see docs/kernels.md. (No GEMM wrapper
// yet: other modules call OpenBLAS cblas_sgemm directly.)
//
// Layout: packed token-major buffers. Q is (Tq, H, D), K and V are (Tk, H, D), O is (Tq, H, D),
// LSE is (Tq, H), all fp32 and contiguous. A slice (q_start, q_len, k_start, k_len) means rows
// q_start..q_start+q_len-1 of Q attend, bidirectionally (no mask), to rows
// k_start..k_start+k_len-1 of K/V, for every head. LSE is the natural-log sum of exp of the
// scaled scores (so partial results over disjoint key sets merge exactly).
//
// May include: core.
#ifndef ZG_KERNELS_H
#define ZG_KERNELS_H

#include "core/core.h"

typedef struct zg_attn_slice {
    int64_t q_start, q_len;
    int64_t k_start, k_len;
} zg_attn_slice;

typedef struct zg_attn_shape {
    int32_t n_heads;  // H
    int32_t head_dim; // D (any 1..256; 64 and 128 are the fast paths)
    float scale;      // usually 1/sqrt(D)
} zg_attn_shape;

// Forward over a slice list. The q ranges of different slices must not overlap (each output row
// is written by exactly one slice); k ranges may overlap (slices may share keys). Rows of O/LSE
// not covered by any slice are left untouched. An empty key range (k_len 0) yields O = 0 and
// LSE = -inf for its rows.
zg_status zg_attn_forward(const zg_attn_slice *slices, int32_t n_slices, zg_attn_shape shape,
                          const float *q, const float *k, const float *v, float *o, float *lse,
                          zg_error *err);

// Backward (FlashAttention-2 style recompute from O and LSE). ACCUMULATES into dq, dk, dv
// (callers zero them first), so slices sharing keys, and ring steps over the same queries,
// add up. `o` and `lse` must be the final (merged) forward outputs for the rows' full key set;
// `dout` is dL/dO, shaped like O.
zg_status zg_attn_backward(const zg_attn_slice *slices, int32_t n_slices, zg_attn_shape shape,
                           const float *q, const float *k, const float *v, const float *o,
                           const float *lse, const float *dout, float *dq, float *dk, float *dv,
                           zg_error *err);

// Merge a partial result (o2, lse2) over more keys into (o1, lse1), in place, for `rows` rows
// of H heads: lse = log(exp(lse1)+exp(lse2)), o = o1*exp(lse1-lse) + o2*exp(lse2-lse).
// Handles -inf (empty) partials exactly.
void zg_attn_merge(int64_t rows, zg_attn_shape shape, float *o1, float *lse1, const float *o2,
                   const float *lse2);

// The plain fp32 reference versions (same contracts); double-accumulating, readable, slow.
zg_status zg_attn_forward_ref(const zg_attn_slice *slices, int32_t n_slices, zg_attn_shape shape,
                              const float *q, const float *k, const float *v, float *o, float *lse,
                              zg_error *err);
zg_status zg_attn_backward_ref(const zg_attn_slice *slices, int32_t n_slices, zg_attn_shape shape,
                               const float *q, const float *k, const float *v, const float *o,
                               const float *lse, const float *dout, float *dq, float *dk, float *dv,
                               zg_error *err);

// Options for the fast kernels (the plain calls above use the defaults: all zero).
typedef enum {
    ZG_ATTN_ISA_AUTO = 0, // the best path this CPU supports (avx512 > avx2 > scalar), or the
                          // one the ZG_KERNELS_ISA environment variable names (see below)
    ZG_ATTN_ISA_SCALAR,   // plain C tiles (for tests and comparisons)
    ZG_ATTN_ISA_AVX2,     // AVX2+FMA; ZG_ERR_UNSUPPORTED if the CPU lacks it or D % 8 != 0
    ZG_ATTN_ISA_AVX512,   // AVX-512F; ZG_ERR_UNSUPPORTED if the CPU lacks it or D % 8 != 0
} zg_attn_isa_choice;

// ZG_KERNELS_ISA=auto|scalar|avx2|avx512 forces the path of ZG_ATTN_ISA_AUTO calls (an explicit
// opts.isa wins). Head dims that are not a multiple of 8 still take the scalar path. A name
// this CPU cannot run (e.g. avx512 on an AVX2-only machine) makes every AUTO call fail with
// ZG_ERR_UNSUPPORTED and an unknown name with ZG_ERR_INVALID: a clear error, never SIGILL.

// Which SIMD path ZG_ATTN_ISA_AUTO calls take for head dims that are a multiple of 8 on this
// CPU, honouring ZG_KERNELS_ISA ("avx512", "avx2", "scalar"; "invalid" when ZG_KERNELS_ISA
// names a path that is unknown or that this CPU lacks). Head dims not a multiple of 8 always
// take the scalar path.
const char *zg_attn_isa(void);
// The same for a given choice, with the reason on failure (*name = NULL then).
zg_status zg_attn_isa_resolve(int32_t isa, const char **name, zg_error *err);
// 1 when this CPU and build can run choice `isa` (AUTO and SCALAR: always), else 0.
int zg_attn_isa_supported(int32_t isa);
// "auto", "scalar", "avx2", "avx512" for a zg_attn_isa_choice ("unknown" otherwise), and back.
const char *zg_attn_isa_name(int32_t isa);
zg_status zg_attn_isa_parse(const char *name, int32_t *isa, zg_error *err);

typedef struct zg_attn_opts {
    int32_t isa;       // a zg_attn_isa_choice
    int32_t n_threads; // OpenMP threads; 0 = the OpenMP default. Results are bit-identical
                       // for every thread count (fixed work items, fixed reduction order).
    int32_t bwd_plan;  // a zg_attn_bwd_plan: how backward splits its work (tests force each)
} zg_attn_opts;

typedef enum {
    ZG_ATTN_BWD_AUTO = 0, // ONE_PASS when the list has >= 8 balanced (component, head) items
    ZG_ATTN_BWD_ONE_PASS, // items = (slices linked by shared rows, head): 5 GEMMs per tile
    ZG_ATTN_BWD_TWO_PASS, // key blocks for dK/dV, then query blocks for dQ: 7 GEMMs per tile
} zg_attn_bwd_plan;

zg_status zg_attn_forward_opts(const zg_attn_slice *slices, int32_t n_slices, zg_attn_shape shape,
                               const float *q, const float *k, const float *v, float *o, float *lse,
                               const zg_attn_opts *opts, zg_error *err);
zg_status zg_attn_backward_opts(const zg_attn_slice *slices, int32_t n_slices, zg_attn_shape shape,
                                const float *q, const float *k, const float *v, const float *o,
                                const float *lse, const float *dout, float *dq, float *dk,
                                float *dv, const zg_attn_opts *opts, zg_error *err);

#endif
