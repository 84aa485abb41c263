// attn_internal.h — helpers shared by the attention kernel files (not part of the public API).
#ifndef ZG_ATTN_INTERNAL_H
#define ZG_ATTN_INTERNAL_H

#include "kernels/kernels.h"

#define ZG_ATTN_MAX_HEAD_DIM 256

zg_status zg_attn_check_shape(zg_attn_shape shape, zg_error *err);
// Checks starts/lengths are >= 0; with q_disjoint, also that non-empty q ranges do not overlap.
zg_status zg_attn_check_slices(const zg_attn_slice *slices, int32_t n_slices, int q_disjoint,
                               zg_error *err);
// When any slice has rows, every bufs[j] must be non-NULL (names[j] names it in the message).
zg_status zg_attn_check_bufs(const zg_attn_slice *slices, int32_t n_slices, const void *const *bufs,
                             const char *const *names, int n_bufs, zg_error *err);

#endif

// ---------------------------------------------------------------------------------------------
// Tile primitives the fast kernels are built from; one table per instruction set, chosen at
// run time (attn_ops.c). Rows are packed tiles in per-thread scratch, so lengths are small.

typedef struct zg_attn_ops {
    const char *isa; // "avx512", "avx2" or "scalar"
    // C[m][n] (+)= sum_k A[k*sa_k + m*sa_m] * B[k*ldb + n], m < M, n < N, k < K; acc=0 overwrites.
    // The AVX2 version needs N % 8 == 0 (callers pad); AVX-512 masks any tail.
    void (*gemm)(int64_t M, int64_t N, int64_t K, const float *A, int64_t sa_k, int64_t sa_m,
                 const float *B, int64_t ldb, float *C, int64_t ldc, int acc);
    // Column-wise softmax helpers over a (rows, cols) tile s (cols % 8 == 0 for AVX2), one
    // column per query: mx[i] = max(mx[i], max_j scale*s[j][i]);
    void (*col_max)(const float *s, int64_t rows, int64_t cols, float scale, float *mx);
    // s[j][i] = exp(scale*s[j][i] - sub[i]); sum[i] += sum_j s[j][i] (rows in order j = 0..).
    void (*col_exp)(float *s, int64_t rows, int64_t cols, float scale, const float *sub,
                    float *sum);
    // ds[j][i] = scale * p[j][i] * (ds[j][i] - delta[i])  (ds holds dP on entry)
    void (*col_ds)(const float *p, float *ds, int64_t rows, int64_t cols, const float *delta,
                   float scale);
    // x[j] *= a, j < n
    void (*row_scale)(float *x, int64_t n, float a);
    // sum_j a[j]*b[j]
    float (*dot)(const float *a, const float *b, int64_t n);
} zg_attn_ops;

extern const zg_attn_ops zg_attn_ops_scalar;
extern const zg_attn_ops zg_attn_ops_avx2;
extern const zg_attn_ops zg_attn_ops_avx512;
// The table for this CPU and head dim (AVX2/AVX-512 need D % 8 == 0), honouring a forced ISA
// (opts, else ZG_KERNELS_ISA); fails when a forced ISA is not available.
zg_status zg_attn_ops_pick(int32_t isa, int32_t head_dim, const zg_attn_ops **ops, zg_error *err);

// ---------------------------------------------------------------------------------------------
// Work items for the OpenMP loops: a block of rows [r0, r0+rn) of one (group, head), with an
// estimated cost. Items are sorted by cost, largest first, and handed out dynamically, so a few
// huge slices start early and many tiny ones fill in behind them. Each item owns its output
// rows, so results do not depend on which thread ran it (bit-identical for any thread count).

typedef struct zg_attn_item {
    int32_t group, head;
    int64_t r0, rn;
    double cost;
} zg_attn_item;

// Sorts largest cost first (ties by group, head, r0): a deterministic total order.
void zg_attn_items_sort(zg_attn_item *items, int64_t n);

// Runs fn(ctx, item, scratch) over every item on nt OpenMP threads: sorts the items, gives each
// thread its own 64-byte aligned scratch of scr_n floats, and hands the items out dynamically.
// Returns 1 when some thread could not allocate its scratch (its items were skipped), else 0.
typedef void (*zg_attn_item_fn)(const void *ctx, const zg_attn_item *it, float *scr);
int zg_attn_items_run(const void *ctx, zg_attn_item *items, int64_t n, zg_attn_item_fn fn,
                      size_t scr_n, int nt);

// Copies n rows of D floats, stride ld, into a contiguous (n, D) tile. GEMM operands that
// are walked row by row are packed first: rows of one head sit ld = H*D floats apart, so an
// unpacked 256-row block touches ~200 pages and thrashes the TLB.
void zg_attn_pack_rows(float *dst, const float *src, int64_t n, int64_t D, int64_t ld);

// Head-major copy dst (H, n, D) of rows [0, n) of src (n, H, D), OpenMP over rows with nt
// threads. The kernels stream K and V per head; in the packed (T, H, D) layout one head's rows
// sit H*D floats apart, so a long sequence's keys span more pages than the TLB holds.
void zg_attn_head_major(float *dst, const float *src, int64_t n, int64_t H, int64_t D, int nt);
// 1 + the last key row any slice with queries reads (0 if none).
int64_t zg_attn_keys_used(const zg_attn_slice *slices, int32_t n_slices);

// 64-byte aligned scratch (NULL on failure); free with free().
float *zg_attn_scratch(size_t n_floats);

#ifdef ZG_HAVE_OPENMP
#include <omp.h>
#define ZG_ATTN_THREADS(opts)                                                                      \
    ((opts) && (opts)->n_threads > 0 ? (opts)->n_threads : omp_get_max_threads())
#else
#define ZG_ATTN_THREADS(opts) 1
#endif

#define ZG_ATTN_BQ 144 // query rows per tile (a multiple of the 6-row micro-kernel)
#define ZG_ATTN_BK 256 // keys per tile
