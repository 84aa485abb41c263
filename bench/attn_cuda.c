// attn_cuda.c — CUDA attention throughput on the paper's shapes (Wan2.1-1.3B: 12 heads x 128,
// bf16): single sequences of 1K..75K tokens and coalesced varlen packs of many short sequences
// (64..512 tokens) totalling 1K..32K, forward and backward, in TFLOP/s against the GPU's dense
// bf16 peak and against a cuBLAS bf16 GEMM measured in the same run (the ceiling on this machine).
// Forward flops = 4 * sum(q_len * k_len) * D * H (non-causal); backward = 2.5x forward (the
// FlashAttention convention), so the numbers compare with published FlashAttention figures.
// Each case also checks the tensor-core forward against the simple fp32-math kernel on the same
// bf16 inputs (cases up to 4K tokens): max |tc - simple| / (|simple| + rms(simple)).
//
// Run: build/bin/bench_attn_cuda [--quick] [--iters N] [--max-tokens N] [--peak TFLOPS]
//                                [--json FILE] [--shapes FILE]
//   --shapes FILE writes the cases (sequence lengths) for bench/gpu/attn_torch.py;
//   --shapes-only FILE writes them and exits (no GPU needed);
//   --max-err X: exit 3 when a case's tensor-core error against the simple kernel exceeds X
//   (default 0.03; an emulation of the bf16 rounding gives 0.006-0.008 at 1K-4K tokens).
// Built only with CUDA (Makefile: *_cuda.c); exits 2 with a message when no GPU is visible.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"

#define H 12
#define D 128

typedef struct bcase {
    const char *kind; // "single" or "mixed"
    int64_t tokens;
    int32_t n;
    int64_t *lens;
} bcase;

typedef struct bres {
    double fwd_ms, bwd_ms, fwd_tf, bwd_tf, err;
} bres;

static void die(const char *what, const zg_error *err) {
    fprintf(stderr, "bench_attn_cuda: %s: %s\n", what, err ? err->msg : "");
    exit(1);
}

#define CU(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "bench_attn_cuda: %s: %s\n", #x, cudaGetErrorString(e_));              \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

// Sequence lengths of a case: one sequence, or 64..512-token sequences up to `total` (the last
// one trimmed so the total is exact).
static bcase make_case(const char *kind, int64_t total, uint64_t seed) {
    bcase c = {kind, total, 0, calloc((size_t)(total / 64 + 2), sizeof(int64_t))};
    if (!strcmp(kind, "single")) {
        c.lens[c.n++] = total;
        return c;
    }
    zg_rng rng;
    zg_rng_init(&rng, seed);
    int64_t t = 0;
    while (t < total) {
        int64_t len = zg_rng_int(&rng, 64, 512);
        if (t + len > total) len = total - t;
        c.lens[c.n++] = len;
        t += len;
    }
    return c;
}

static double flops_fwd(const bcase *c) {
    double s = 0;
    for (int32_t i = 0; i < c->n; i++)
        s += (double)c->lens[i] * (double)c->lens[i];
    return 4.0 * s * D * H;
}

// Milliseconds per call of fn over `iters` back-to-back calls after one warm-up, from events on
// the context's stream (so the host's per-call work counts when it is the bottleneck).
typedef zg_status (*call_fn)(void *arg, zg_error *err);
static double time_calls(zg_attn_cuda *ctx, call_fn fn, void *arg, int iters) {
    zg_error err = {0};
    cudaStream_t st = (cudaStream_t)zg_attn_cuda_stream(ctx);
    if (fn(arg, &err) || zg_attn_cuda_sync(ctx, &err)) die("warm-up", &err);
    cudaEvent_t a, b;
    CU(cudaEventCreate(&a));
    CU(cudaEventCreate(&b));
    CU(cudaEventRecord(a, st));
    for (int i = 0; i < iters; i++)
        if (fn(arg, &err)) die("call", &err);
    CU(cudaEventRecord(b, st));
    if (zg_attn_cuda_sync(ctx, &err)) die("sync", &err);
    float ms = 0;
    CU(cudaEventElapsedTime(&ms, a, b));
    cudaEventDestroy(a), cudaEventDestroy(b);
    return ms / iters;
}

typedef struct call_args {
    zg_attn_cuda *ctx;
    const zg_attn_slice *sl;
    int32_t n;
    zg_attn_shape sh;
    void *q, *k, *v, *dout;
    float *o, *lse, *dq, *dk, *dv;
    int32_t kernel;
} call_args;

static zg_status call_fwd(void *p, zg_error *err) {
    call_args *a = p;
    return zg_attn_cuda_forward(a->ctx, a->sl, a->n, a->sh, ZG_DTYPE_BF16, a->q, a->k, a->v, a->o,
                                a->lse, a->kernel, err);
}

static zg_status call_bwd(void *p, zg_error *err) {
    call_args *a = p;
    return zg_attn_cuda_backward(a->ctx, a->sl, a->n, a->sh, ZG_DTYPE_BF16, a->q, a->k, a->v, a->o,
                                 a->lse, a->dout, a->dq, a->dk, a->dv, a->kernel, err);
}

// cuBLAS bf16 GEMM (fp32 accumulate) TFLOP/s at n^3, best of 5: the ceiling on this machine.
static double cublas_ceiling(int n) {
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return -1;
    void *a = NULL, *b = NULL, *c = NULL;
    size_t bytes = (size_t)n * n * 2;
    if (cudaMalloc(&a, bytes) || cudaMalloc(&b, bytes) || cudaMalloc(&c, bytes)) return -1;
    cudaMemset(a, 0, bytes), cudaMemset(b, 0, bytes);
    const float one = 1.0f, zero = 0.0f;
    double best = 0;
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0), cudaEventCreate(&e1);
    for (int r = 0; r < 6; r++) {
        cudaEventRecord(e0, 0);
        for (int i = 0; i < 5; i++)
            cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, CUDA_R_16BF, n, b,
                         CUDA_R_16BF, n, &zero, c, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F,
                         CUBLAS_GEMM_DEFAULT);
        cudaEventRecord(e1, 0);
        cudaEventSynchronize(e1);
        float ms = 0;
        cudaEventElapsedTime(&ms, e0, e1);
        double tf = 5 * 2.0 * n * (double)n * n / (ms * 1e-3) / 1e12;
        if (r > 0 && tf > best) best = tf; // run 0 warms up
    }
    cudaFree(a), cudaFree(b), cudaFree(c);
    cublasDestroy(h);
    return best;
}

// max |a - b| / (|b| + rms(b)) over n floats (device buffers)
static double rel_err(const float *da, const float *db, size_t n) {
    float *a = malloc(n * 4), *b = malloc(n * 4);
    cudaMemcpy(a, da, n * 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(b, db, n * 4, cudaMemcpyDeviceToHost);
    double ss = 0, worst = 0;
    for (size_t i = 0; i < n; i++)
        ss += (double)b[i] * b[i];
    double rms = sqrt(ss / (double)(n ? n : 1));
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - b[i]) / (fabs(b[i]) + rms);
        if (!(e <= worst)) worst = e;
    }
    free(a), free(b);
    return worst;
}

int main(int argc, char **argv) {
    int quick = 0, iters = 0, shapes_only = 0;
    int64_t max_tokens = 75600;
    double peak = 0, max_err = 0.03;
    const char *json = NULL, *shapes = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
            iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--max-tokens") && i + 1 < argc)
            max_tokens = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--peak") && i + 1 < argc)
            peak = atof(argv[++i]);
        else if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json = argv[++i];
        else if (!strcmp(argv[i], "--shapes") && i + 1 < argc)
            shapes = argv[++i];
        else if (!strcmp(argv[i], "--shapes-only") && i + 1 < argc)
            shapes = argv[++i], shapes_only = 1;
        else if (!strcmp(argv[i], "--max-err") && i + 1 < argc)
            max_err = atof(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_attn_cuda [--quick] [--iters N] [--max-tokens N] [--peak "
                            "TFLOPS] [--json FILE] [--shapes FILE | --shapes-only FILE] "
                            "[--max-err X]\n");
            return 1;
        }
    }
    zg_error err = {0};
    static const int64_t singles[] = {1024, 2048, 4096, 8192, 16384, 32768, 75600};
    static const int64_t mixes[] = {1024, 2048, 4096, 8192, 16384, 32768};
    bcase cases[16];
    int nc = 0;
    for (size_t i = 0; i < sizeof singles / sizeof singles[0]; i++)
        if (singles[i] <= max_tokens && (!quick || singles[i] <= 8192))
            cases[nc++] = make_case("single", singles[i], 0);
    for (size_t i = 0; i < sizeof mixes / sizeof mixes[0]; i++)
        if (mixes[i] <= max_tokens && (!quick || mixes[i] <= 8192))
            cases[nc++] = make_case("mixed", mixes[i], 100 + i);
    int64_t T = 0;
    for (int i = 0; i < nc; i++)
        if (cases[i].tokens > T) T = cases[i].tokens;

    if (shapes) {
        FILE *f = fopen(shapes, "w");
        if (!f) die("cannot write the shapes file", NULL);
        fprintf(f, "{\"heads\":%d,\"dim\":%d,\"cases\":[", H, D);
        for (int i = 0; i < nc; i++) {
            fprintf(f, "%s{\"kind\":\"%s\",\"tokens\":%lld,\"lens\":[", i ? "," : "", cases[i].kind,
                    (long long)cases[i].tokens);
            for (int32_t j = 0; j < cases[i].n; j++)
                fprintf(f, "%s%lld", j ? "," : "", (long long)cases[i].lens[j]);
            fprintf(f, "]}");
        }
        fprintf(f, "]}\n");
        fclose(f);
    }
    if (shapes_only) return 0;

    int32_t ndev = 0;
    char name[256] = "";
    if (zg_cuda_device_count(&ndev, name, sizeof name, &err) || ndev == 0) {
        fprintf(stderr, "bench_attn_cuda: no GPU: %s\n", err.msg[0] ? err.msg : "0 devices");
        return 2;
    }
    // dense bf16 peak (no sparsity): H100 SXM and H200 989.4 TFLOP/s; H100 PCIe 756
    if (peak <= 0)
        peak = strstr(name, "H100 PCIe")                      ? 756.0
               : strstr(name, "H100") || strstr(name, "H200") ? 989.4
                                                              : 0;
    zg_attn_cuda *ctx = NULL;
    if (zg_attn_cuda_init(&ctx, 0, NULL, &err)) die("init", &err);

    // inputs: one fp32 random buffer; q, k, v, dout are bf16 copies of it at offsets 0..3
    const size_t E = (size_t)T * H * D;
    float *hr = malloc((E + 4) * sizeof(float));
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < E + 4; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        hr[i] =
            (float)((double)(x >> 11) / 9007199254740992.0 * 2.0 - 1.0) * 1.7f; // uniform, std ~1
    }
    float *rnd = NULL, *o = NULL, *o2 = NULL, *lse = NULL, *lse2 = NULL, *dq = NULL, *dk = NULL,
          *dv = NULL;
    void *q = NULL, *k = NULL, *v = NULL, *dout = NULL;
    CU(cudaMalloc((void **)&rnd, (E + 4) * 4));
    CU(cudaMemcpy(rnd, hr, (E + 4) * 4, cudaMemcpyHostToDevice));
    free(hr);
    void **in[4] = {&q, &k, &v, &dout};
    for (int i = 0; i < 4; i++) {
        CU(cudaMalloc(in[i], E * 2));
        if (zg_cuda_convert(ctx, (int64_t)E, rnd + i, ZG_DTYPE_F32, *in[i], ZG_DTYPE_BF16, &err))
            die("convert", &err);
    }
    if (zg_attn_cuda_sync(ctx, &err)) die("convert", &err); // the converts read rnd
    CU(cudaFree(rnd));
    float **out[7] = {&o, &o2, &dq, &dk, &dv, &lse, &lse2};
    for (int i = 0; i < 7; i++) {
        CU(cudaMalloc((void **)out[i], (i < 5 ? E : (size_t)T * H) * 4));
        CU(cudaMemset(*out[i], 0, (i < 5 ? E : (size_t)T * H) * 4));
    }

    CU(cudaDeviceSynchronize()); // the memsets ran on the legacy stream
    double ceiling = cublas_ceiling(8192);
    printf("CUDA attention: %s; %d heads x %d, bf16 in, fp32 accumulate, non-causal\n", name, H, D);
    printf("dense bf16 peak %.1f TFLOP/s%s; cuBLAS bf16 GEMM 8192^3 on this GPU: %.1f TFLOP/s\n",
           peak, peak > 0 ? "" : " (unknown GPU: pass --peak)", ceiling);
    printf("%-6s %7s %5s %9s %9s %6s %9s %9s %6s %9s\n", "kind", "tokens", "seqs", "fwd ms",
           "fwd TF/s", "%peak", "bwd ms", "bwd TF/s", "%peak", "max err");
    bres res[16];
    for (int ci = 0; ci < nc; ci++) {
        bcase *c = &cases[ci];
        zg_attn_slice *sl = calloc((size_t)c->n, sizeof *sl);
        int64_t t = 0;
        for (int32_t j = 0; j < c->n; j++) {
            sl[j] = (zg_attn_slice){t, c->lens[j], t, c->lens[j]};
            t += c->lens[j];
        }
        call_args a = {
            ctx, sl, c->n,           {H, D, 1.0f / sqrtf((float)D)}, q, k, v, dout, o, lse, dq,
            dk,  dv, ZG_ATTN_CUDA_TC};
        const double ff = flops_fwd(c);
        // iterations: about 0.3 s of forward work at 300 TFLOP/s, 3..50
        int it = iters > 0 ? iters : (int)fmin(50, fmax(3, 0.3 * 300e12 / ff));
        bres *r = &res[ci];
        r->fwd_ms = time_calls(ctx, call_fwd, &a, it);
        r->bwd_ms = time_calls(ctx, call_bwd, &a, it);
        r->fwd_tf = ff / (r->fwd_ms * 1e-3) / 1e12;
        r->bwd_tf = 2.5 * ff / (r->bwd_ms * 1e-3) / 1e12;
        r->err = -1;
        if (c->tokens <= 4096) { // tensor cores vs the simple fp32-math kernel, same inputs
            call_args s = a;
            s.o = o2, s.lse = lse2, s.kernel = ZG_ATTN_CUDA_SIMPLE;
            if (call_fwd(&a, &err) || call_fwd(&s, &err) || zg_attn_cuda_sync(ctx, &err))
                die("check", &err);
            r->err = rel_err(o, o2, (size_t)c->tokens * H * D);
        }
        printf("%-6s %7lld %5d %9.3f %9.1f %5.1f%% %9.3f %9.1f %5.1f%% ", c->kind,
               (long long)c->tokens, (int)c->n, r->fwd_ms, r->fwd_tf,
               peak > 0 ? 100 * r->fwd_tf / peak : 0.0, r->bwd_ms, r->bwd_tf,
               peak > 0 ? 100 * r->bwd_tf / peak : 0.0);
        if (r->err >= 0)
            printf("%9.2e\n", r->err);
        else
            printf("%9s\n", "-");
        fflush(stdout);
        free(sl);
    }
    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) die("cannot write the JSON file", NULL);
        fprintf(f,
                "{\"bench\":\"attn_cuda\",\"device\":\"%s\",\"heads\":%d,\"dim\":%d,"
                "\"dtype\":\"bf16\",\"peak_tflops\":%.1f,\"cublas_bf16_tflops\":%.1f,\"rows\":[",
                name, H, D, peak, ceiling);
        for (int i = 0; i < nc; i++) {
            char e[32] = "null";
            if (res[i].err >= 0) snprintf(e, sizeof e, "%.3g", res[i].err);
            fprintf(f,
                    "%s{\"kind\":\"%s\",\"tokens\":%lld,\"seqs\":%d,\"fwd_ms\":%.4f,"
                    "\"fwd_tflops\":%.2f,\"bwd_ms\":%.4f,\"bwd_tflops\":%.2f,\"max_rel_err\":%s}",
                    i ? "," : "", cases[i].kind, (long long)cases[i].tokens, (int)cases[i].n,
                    res[i].fwd_ms, res[i].fwd_tf, res[i].bwd_ms, res[i].bwd_tf, e);
        }
        fprintf(f, "]}\n");
        fclose(f);
    }
    int bad = 0;
    for (int i = 0; i < nc; i++)
        if (res[i].err > max_err || res[i].err != res[i].err) {
            fprintf(stderr,
                    "bench_attn_cuda: CHECK FAILED: %s %lld tokens: tensor cores vs the simple "
                    "kernel max rel err %.3g > %.3g\n",
                    cases[i].kind, (long long)cases[i].tokens, res[i].err, max_err);
            bad = 1;
        }
    for (int i = 0; i < 4; i++)
        cudaFree(*in[i]);
    for (int i = 0; i < 7; i++)
        cudaFree(*out[i]);
    for (int i = 0; i < nc; i++)
        free(cases[i].lens);
    zg_attn_cuda_free(ctx);
    return bad ? 3 : 0;
}
