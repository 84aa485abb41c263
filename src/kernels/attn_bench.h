// attn_bench.h — the attention kernels' benchmark (`zellige bench attention`) as a library:
// GFLOP/s of the fast kernels forward and backward against OpenBLAS SGEMM on the attention GEMM
// shapes measured in the same run, the machine's FP32 peak, and (through caller hooks) PyTorch
// and an SGEMM run with OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE unset.
//
// Flops: forward 4*Lq*Lk*D*H per slice; backward 2.5x that (the FlashAttention convention).
// Single sequences 256..max_tokens (doubling), a coalesced pack (pack_images images of 1560
// tokens + 3 video shards of `shard` tokens), head dims 64 and 128. The kernels run their
// ZG_KERNELS_ISA path (kernels.h); the result names it. Timings are the best of up to 3 runs
// (stopping after ~0.3 s). Not deterministic (it measures); never a timed test.
#ifndef ZG_ATTN_BENCH_H
#define ZG_ATTN_BENCH_H

#include "kernels/kernels.h"

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

#endif
