// kernels — attention forward/backward over slice lists (the coalesced engine's kernel
// contract) and partial-result merge. A plain fp32 reference (attn_ref.c) and a fast version
// (FlashAttention-2 style tiled online softmax, AVX-512F and AVX2+FMA micro-kernels with runtime
// dispatch and a scalar fallback, OpenMP) that tests check against it; see docs/kernels.md. (No GEMM wrapper
// yet: other modules call OpenBLAS cblas_sgemm directly.) The same contract on CUDA devices
// (bf16/fp16 tensor-core and simple fp32 kernels, src/kernels/cuda/) is at the end of this file.
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

// ---- benchmark (attn_bench.c): `zellige bench attention` as a library -------------------------
//
// GFLOP/s of the fast kernels forward and backward against OpenBLAS SGEMM on the attention GEMM
// shapes measured in the same run, the machine's FP32 peak, and (through caller hooks) PyTorch
// and an SGEMM run with OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE unset.
//
// Flops: forward 4*Lq*Lk*D*H per slice; backward 2.5x that (the FlashAttention convention).
// Single sequences 256..max_tokens (doubling), a coalesced pack (pack_images images of 1560
// tokens + 3 video shards of `shard` tokens), head dims 64 and 128. The kernels run their
// ZG_KERNELS_ISA path (kernels.h); the result names it. Timings are the best of up to 3 runs
// (stopping after ~0.3 s). Not deterministic (it measures); never a timed test.
#define ZG_ATTN_BENCH_MAX_ROWS 64

typedef struct zg_attn_bench_row {
    char kind[16]; // "single" | "pack"
    int64_t tokens;
    int32_t dim;
    double fwd, bwd, torch_fwd; // GFLOP/s; bwd and torch_fwd < 0 when not measured
    double sgemm;               // SGEMM ceiling measured right after the row's kernels
} zg_attn_bench_row;

typedef struct zg_attn_bench_opts {
    int64_t max_tokens;  // largest single sequence, 256..65536 (default 4096)
    int64_t shard;       // video shard tokens of the pack, 1..65536 (default 8192)
    int64_t heads;       // 1..64 (default 12)
    int64_t threads;     // OpenMP and OpenBLAS threads of the run (0: OpenMP's default)
    int32_t quick;       // caps max_tokens at 1024 and shard at 2048
    int32_t pack_images; // images of 1560 tokens in the pack, 1..50 (default 50)
    int32_t square;      // side of the square SGEMM reference, 64..4096 (default 2048)
    // Hooks (any may be NULL), called with ctx:
    // torch_fwd: PyTorch's forward GFLOP/s on a single sequence (T tokens, head dim D), taken
    // right after the kernel's own timing of it; < 0 when unavailable.
    double (*torch_fwd)(void *ctx, int64_t tokens, int32_t dim);
    // sgemm_env_unset: when OPENBLAS_CORETYPE or OPENBLAS_L2_SIZE is set, the SGEMM ceiling
    // (zg_attn_bench_sgemm) measured in a process without them; < 0 when it failed.
    double (*sgemm_env_unset)(void *ctx, int64_t tokens, int64_t threads);
    // on_row: after each row is measured.
    void (*on_row)(void *ctx, const zg_attn_bench_row *row);
    void *ctx;
} zg_attn_bench_opts;
void zg_attn_bench_opts_default(zg_attn_bench_opts *o);

typedef struct zg_attn_bench_result {
    const char *isa;      // the kernels' path ("avx512", "avx2", "scalar")
    const char *peak_isa; // the widest ISA of this CPU (the peak loop's)
    int64_t threads, heads;
    double peak; // machine FP32 peak GFLOP/s (the higher of start and end)
    int32_t n_rows;
    zg_attn_bench_row rows[ZG_ATTN_BENCH_MAX_ROWS];
    double max_err;         // forward: worst sampled relative error vs the reference
    double bwd_err;         // backward: worst relative error vs the reference (small case)
    int64_t gemm_tokens;    // T of the final SGEMM ceiling (min(max_tokens, 4096))
    double sgemm_env;       // the final SGEMM ceiling, environment as set
    double sgemm_square;    // square SGEMM
    int32_t env_set;        // OPENBLAS_CORETYPE or OPENBLAS_L2_SIZE is set
    double sgemm_env_unset; // the ceiling without them (< 0: not measured)
    double env_factor;      // rows' ceilings were raised by this (>= 1)
    // Headline: single sequences of >= headline_tokens (the largest measured, at most 4096),
    // both head dims; ratios per row (kernel vs the SGEMM / torch measured next to it), averaged.
    int64_t headline_tokens, pack_tokens;
    double fwd, bwd, sgemm, fwd_vs_sgemm, bwd_vs_sgemm;
    int32_t n_torch;                // headline rows with a torch timing
    double torch_fwd, fwd_vs_torch; // when n_torch > 0
    double pack_fwd, pack_bwd, pack_vs_sgemm;
} zg_attn_bench_result;

// The thread count a run uses for `requested` (0: OpenMP's default; 1 without OpenMP).
int64_t zg_attn_bench_threads(int64_t requested);
// Runs the benchmark. Sets the OpenMP and OpenBLAS thread counts of the process to the run's.
zg_status zg_attn_bench_run(const zg_attn_bench_opts *o, zg_attn_bench_result *r, zg_error *err);
// The SGEMM ceiling at T tokens: the best of one head's attention GEMM shapes at head dims 64
// and 128 (T capped at 4096); *square = a square^3 SGEMM. threads > 0 sets OpenBLAS's threads.
// < 0 (err filled) when out of memory.
double zg_attn_bench_sgemm(int64_t tokens, int64_t threads, int32_t square, double *square_gflops,
                           zg_error *err);

// ---------------------------------------------------------------------------------------------
// CUDA (src/kernels/cuda/; compiled when the build finds nvcc, which defines ZG_HAVE_CUDA; in a
// build without it every call below returns ZG_ERR_UNSUPPORTED and zg_cuda_available() is 0).
// Same slice-list contract and packed layouts as above, with two differences: q, k, v and dout
// may be bf16 or fp16 (ZG_DTYPE_*; accumulation is always fp32), and every tensor is a DEVICE
// pointer. O and LSE (and dQ/dK/dV) stay fp32 so partial results merge exactly. The slice
// list stays on the host (it is validated there and uploaded with the call's tile list).
// Calls are asynchronous on the context's stream: they return once the work is queued;
// zg_attn_cuda_sync waits and reports a kernel fault. See docs/kernels.md ("CUDA").

typedef enum {
    ZG_DTYPE_F32 = 0,
    ZG_DTYPE_BF16 = 1,
    ZG_DTYPE_F16 = 2,
} zg_dtype;

typedef enum {
    ZG_ATTN_CUDA_AUTO = 0, // tensor cores when they take the call (bf16/fp16, D 64 or 128,
                           // 16-byte aligned pointers), else the simple kernels
    ZG_ATTN_CUDA_TC,       // the tensor-core kernels; ZG_ERR_UNSUPPORTED when they cannot
    ZG_ATTN_CUDA_SIMPLE,   // one warp per row, fp32 math: any dtype, D 1..256 (for checks)
} zg_attn_cuda_kernel;

// 1 when the build has CUDA and the runtime sees at least one device.
int zg_cuda_available(void);
// Devices visible (0 with the runtime's reason in err when there are none or the driver is
// missing; ZG_ERR_UNSUPPORTED in a build without CUDA) and the name of device 0.
zg_status zg_cuda_device_count(int32_t *count, char *name, size_t name_len, zg_error *err);

// A context: the device, the stream every call runs on, and the device work space (tile lists,
// backward's delta) grown on demand. `stream` is a cudaStream_t, or NULL for a stream of its own.
typedef struct zg_attn_cuda zg_attn_cuda;
zg_status zg_attn_cuda_init(zg_attn_cuda **ctx, int32_t device, void *stream, zg_error *err);
void zg_attn_cuda_free(zg_attn_cuda *ctx);
void *zg_attn_cuda_stream(const zg_attn_cuda *ctx); // the cudaStream_t calls are queued on
// Waits for the stream; a kernel fault comes back as ZG_ERR_INTERNAL with the runtime's message.
zg_status zg_attn_cuda_sync(zg_attn_cuda *ctx, zg_error *err);

// Forward: q (Tq, H, D), k and v (Tk, H, D) in `dtype` -> o (Tq, H, D), lse (Tq, H) fp32.
// Contract as zg_attn_forward (q ranges disjoint, empty key range -> O = 0, LSE = -inf).
zg_status zg_attn_cuda_forward(zg_attn_cuda *ctx, const zg_attn_slice *slices, int32_t n_slices,
                               zg_attn_shape shape, int32_t dtype, const void *q, const void *k,
                               const void *v, float *o, float *lse, int32_t kernel, zg_error *err);
// Backward: ACCUMULATES into fp32 dq (Tq, H, D), dk and dv (Tk, H, D), like zg_attn_backward;
// o and lse are the merged fp32 forward outputs, dout (Tq, H, D) is in `dtype`. Deterministic:
// each launch owns its output rows (no atomics); slices sharing rows are added in a fixed order.
zg_status zg_attn_cuda_backward(zg_attn_cuda *ctx, const zg_attn_slice *slices, int32_t n_slices,
                                zg_attn_shape shape, int32_t dtype, const void *q, const void *k,
                                const void *v, const float *o, const float *lse, const void *dout,
                                float *dq, float *dk, float *dv, int32_t kernel, zg_error *err);
// zg_attn_merge on the device: (o1, lse1) <- (o1, lse1) merged with (o2, lse2), rows x H rows.
zg_status zg_attn_cuda_merge(zg_attn_cuda *ctx, int64_t rows, zg_attn_shape shape, float *o1,
                             float *lse1, const float *o2, const float *lse2, zg_error *err);

// The engine's pack/unpack on the device: a batch of strided copies in one launch. Descriptor
// i copies `rows` rows of `width` elements from src + src_off + r*src_ld to dst + dst_off +
// r*dst_ld (all in elements of elem_bytes = 2, 4 or 8 bytes). Destinations must not overlap.
typedef struct zg_copy2d {
    int64_t src_off, dst_off;
    int64_t rows, width;
    int64_t src_ld, dst_ld;
} zg_copy2d;
zg_status zg_cuda_copy2d(zg_attn_cuda *ctx, const zg_copy2d *descs, int32_t n, int32_t elem_bytes,
                         const void *src, void *dst, zg_error *err);
// The engine's token -> work-space move of one item: tokens [t0, t0 + n) of x (T, H, w), heads
// [h0, h0 + nh) -> head-major y (nh, n, w) at row y_row (rows of w elements); unpack is the
// inverse. elem_bytes as above.
zg_status zg_cuda_pack_heads(zg_attn_cuda *ctx, const void *x, int32_t H, int32_t w, int64_t t0,
                             int64_t n, int32_t h0, int32_t nh, void *y, int64_t y_row,
                             int32_t elem_bytes, zg_error *err);
zg_status zg_cuda_unpack_heads(zg_attn_cuda *ctx, const void *y, int64_t y_row, void *x, int32_t H,
                               int32_t w, int64_t t0, int64_t n, int32_t h0, int32_t nh,
                               int32_t elem_bytes, zg_error *err);
// n elements from src (src_dtype) to dst (dst_dtype), rounding to nearest.
zg_status zg_cuda_convert(zg_attn_cuda *ctx, int64_t n, const void *src, int32_t src_dtype,
                          void *dst, int32_t dst_dtype, zg_error *err);

#endif
