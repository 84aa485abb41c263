// device.c — measured device rows (profile.h, "measured device rows"; docs/profiler.md): time the
// real attention kernels and the block's GEMMs on one device at the model's shapes over a list
// of local token counts, count FLOPs as the analytic model does, and fit its efficiency row.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cblas.h>

#include "profile/profile.h"

#ifdef ZG_HAVE_CUDA
#include <cublas_v2.h>
#include <cuda_runtime.h>
#endif

#define ATTN_BWD_FLOPS 2.5 // as src/cost/analytic.c: FlashAttention backward is 2.5x forward
#define LIN_FWD_BWD 3.0    // GEMM forward + backward (dX, dW): 3x the forward FLOPs

// Default token lists: the cpu one keeps wan2.1-1.3b's backward under ~2 s per point on one
// core; the cuda one spans a 256p image (~256 tokens) to 64K (a 75K-token video on one GPU is
// beyond the curve's knee; local shards of split sequences are 1K..16K).
static const int64_t cpu_tokens[] = {128, 256, 512, 1024, 2048};
static const int64_t cuda_tokens[] = {256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536};

void zg_devrow_opts_default(zg_devrow_opts *o) {
    memset(o, 0, sizeof *o);
    o->model = "wan2.1-1.3b";
    o->backend = "cpu";
    o->warmup = -1;
    o->reps = 3;
    o->stat = "median";
    o->threads = 1;
    o->seed = 1;
}

int32_t zg_devrow_gemms(const zg_model *m, zg_devrow_gemm *g) {
    int32_t n = 0, d = m->dim, f = m->ffn_dim;
#define ADD(nm, kk, nn)                                                                            \
    (snprintf(g[n].name, sizeof g[n].name, "%s", nm), g[n].k = kk, g[n++].n = nn)
    ADD("q", d, d), ADD("k", d, d), ADD("v", d, d), ADD("o", d, d);
    switch (m->arch) {
    case ZG_ARCH_WAN:
        ADD("cross_q", d, d), ADD("cross_o", d, d), ADD("ffn_up", d, f), ADD("ffn_down", f, d);
        break;
    case ZG_ARCH_HUNYUAN:
    case ZG_ARCH_MMDIT: ADD("mlp_up", d, f), ADD("mlp_down", f, d); break;
    case ZG_ARCH_PLAIN: ADD("gate", d, f), ADD("up", d, f), ADD("down", f, d); break;
    }
#undef ADD
    return n;
}

// ---- the fit ---------------------------------------------------------------------------------

// Sum over families of the relative squared residuals at half h, with each family's eff in
// closed form: minimising sum_i (e r_i - 1)^2, r_i = g_i / y_i, gives e = sum r / sum r^2, capped
// at 1 (the objective is a parabola in e, so the cap is the constrained optimum): a device never
// runs above its peak, and samples still on the curve's linear part (n << half) would otherwise
// trade an ever larger half for an ever larger eff.
static double fit_sse(const double *x, const double *const *y, int32_t n_fam, int32_t n, double h,
                      double *eff) {
    double sse = 0;
    for (int32_t f = 0; f < n_fam; f++) {
        double s1 = 0, s2 = 0;
        for (int32_t i = 0; i < n; i++) {
            double r = x[i] / (x[i] + h) / y[f][i];
            s1 += r, s2 += r * r;
        }
        double e = s1 / s2 < 1 ? s1 / s2 : 1;
        for (int32_t i = 0; i < n; i++) {
            double res = e * x[i] / (x[i] + h) / y[f][i] - 1;
            sse += res * res;
        }
        if (eff) eff[f] = e;
    }
    return sse;
}

zg_status zg_devrow_fit(const double *tokens, const double *const *rates, int32_t n_fam, int32_t n,
                        double peak, double *eff, double *half, double *max_rel, zg_error *err) {
    if (n_fam < 1 || n_fam > 2)
        return zg_error_set(err, ZG_ERR_INVALID, "device row fit: %d families (1 or 2)", n_fam);
    if (!(peak > 0 && isfinite(peak)))
        return zg_error_set(err, ZG_ERR_INVALID, "device row fit: peak %g FLOP/s must be positive",
                            peak);
    int distinct = 0;
    for (int32_t i = 0; i < n; i++) {
        if (!(tokens[i] > 0 && isfinite(tokens[i])))
            return zg_error_set(err, ZG_ERR_INVALID,
                                "device row fit: token count %g must be positive", tokens[i]);
        if (i > 0 && tokens[i] != tokens[0]) distinct = 1;
        for (int32_t f = 0; f < n_fam; f++)
            if (!(rates[f][i] > 0 && isfinite(rates[f][i])))
                return zg_error_set(err, ZG_ERR_INVALID,
                                    "device row fit: rate %g FLOP/s at %g tokens must be positive",
                                    rates[f][i], tokens[i]);
    }
    if (n < 2 || !distinct)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "device row fit: needs at least 2 distinct token counts to fit a "
                            "half-point (got %d)",
                            n);
    double *y[2] = {NULL, NULL}, ybuf[2 * ZG_DEVROW_MAX_SAMPLES];
    if (n > ZG_DEVROW_MAX_SAMPLES)
        return zg_error_set(err, ZG_ERR_INVALID, "device row fit: %d samples (at most %d)", n,
                            ZG_DEVROW_MAX_SAMPLES);
    for (int32_t f = 0; f < n_fam; f++) {
        y[f] = ybuf + f * ZG_DEVROW_MAX_SAMPLES;
        for (int32_t i = 0; i < n; i++)
            y[f][i] = rates[f][i] / peak;
    }
    const double *const *yc = (const double *const *)y;
    // grid: h = 0 and 10^(k/40), k = 0..360 (1 .. 1e9 tokens)
    enum { GRID = 361 };
    double best_h = 0, best = fit_sse(tokens, yc, n_fam, n, 0, NULL);
    int32_t best_k = -1;
    for (int32_t k = 0; k < GRID; k++) {
        double h = pow(10.0, k / 40.0), s = fit_sse(tokens, yc, n_fam, n, h, NULL);
        if (s < best) best = s, best_h = h, best_k = k;
    }
    // golden section in log h between the best point's grid neighbours (h = 0: on [0, 1])
    double lo, hi;
    int logs = best_k >= 1;
    if (best_k < 0)
        lo = 0, hi = 1;
    else if (best_k == 0)
        lo = 0, hi = pow(10.0, 1 / 40.0), logs = 0;
    else
        lo = (best_k - 1) / 40.0, hi = (best_k + 1 < GRID ? best_k + 1 : best_k) / 40.0;
    const double gr = 0.6180339887498949;
    double a = lo, b = hi, c = b - gr * (b - a), d = a + gr * (b - a);
#define H_OF(t) (logs ? pow(10.0, (t)) : (t))
    double fc = fit_sse(tokens, yc, n_fam, n, H_OF(c), NULL);
    double fd = fit_sse(tokens, yc, n_fam, n, H_OF(d), NULL);
    for (int it = 0; it < 200 && b - a > 1e-13 * (fabs(a) + fabs(b) + 1e-300); it++) {
        if (fc < fd)
            b = d, d = c, fd = fc, c = b - gr * (b - a),
            fc = fit_sse(tokens, yc, n_fam, n, H_OF(c), NULL);
        else
            a = c, c = d, fc = fd, d = a + gr * (b - a),
            fd = fit_sse(tokens, yc, n_fam, n, H_OF(d), NULL);
    }
    double hm = H_OF(0.5 * (a + b));
#undef H_OF
    if (fit_sse(tokens, yc, n_fam, n, hm, NULL) < best) best_h = hm;
    *half = best_h;
    fit_sse(tokens, yc, n_fam, n, best_h, eff);
    for (int32_t f = 0; f < n_fam; f++) {
        double worst = 0;
        for (int32_t i = 0; i < n; i++) {
            double r = fabs(eff[f] * tokens[i] / (tokens[i] + best_h) / y[f][i] - 1);
            worst = r > worst ? r : worst;
        }
        if (max_rel) max_rel[f] = worst;
    }
    return ZG_OK;
}

// ---- timing ----------------------------------------------------------------------------------

typedef zg_status (*call_fn)(void *ctx, zg_error *err); // one call, queued or run
typedef zg_status (*sync_fn)(void *ctx, zg_error *err); // wait for queued calls (NULL: none)

// Per-call seconds: `warmup` calls (at least one; the last one timed, to size the windows: the
// first call of a kind may load modules or fault pages in), then `reps` windows of `iters`
// back-to-back calls, each at least min_window long; the stat over windows.
static zg_status time_calls(call_fn call, sync_fn sync, void *ctx, const zg_devrow_opts *o,
                            zg_profile_stat stat, double *out, zg_error *err) {
    zg_status st = ZG_OK;
    double first = 0;
    for (int32_t w = 0; w < (o->warmup > 0 ? o->warmup : 1); w++) {
        double t0 = zg_time_now();
        if ((st = call(ctx, err)) || (sync && (st = sync(ctx, err)))) return st;
        first = zg_time_now() - t0;
    }
    int64_t iters = first > 0 ? (int64_t)ceil(o->min_window_s / first) : 1;
    iters = iters < 1 ? 1 : iters > 10000 ? 10000 : iters;
    double v[64];
    int32_t reps = o->reps < 64 ? o->reps : 64;
    for (int32_t r = 0; r < reps; r++) {
        double t0 = zg_time_now();
        for (int64_t i = 0; i < iters; i++)
            if ((st = call(ctx, err))) return st;
        if (sync && (st = sync(ctx, err))) return st;
        v[r] = (zg_time_now() - t0) / (double)iters;
    }
    *out = zg_profile_stat_of(v, reps, stat);
    return ZG_OK;
}

// What one token count measures; the backends fill the buffers and the calls.
typedef struct bench {
    int64_t n; // tokens
    zg_attn_shape shape;
    zg_attn_slice slice; // the whole sequence: rows 0..n-1 attend to keys 0..n-1
    const zg_devrow_gemm *g;
    int32_t ng;
    int32_t threads;
    // cpu: fp32 buffers (allocated for the largest n)
    float *q, *k, *v, *o, *lse, *dout, *dq, *dk, *dv; // (n, H, D) each; lse (n, H)
    float *x, *w, *y, *dy, *dx,
        *dw; // x (n, Kmax), w (Kmax, Nmax), y / dy (n, Nmax), dw (Kmax, Nmax)
#ifdef ZG_HAVE_CUDA
    zg_attn_cuda *cu;
    cublasHandle_t blas;
    int32_t kernel;                     // ZG_ATTN_CUDA_TC or _AUTO
    void *dq16, *dk16, *dv16, *ddout16; // bf16 q, k, v, dout (n, H, D)
    float *d_o, *d_lse, *d_dq, *d_dk, *d_dv;
    void *dx16, *dw16, *dy16, *ddy16, *ddx16, *ddw16; // bf16 GEMM operands
#endif
} bench;

static zg_status cpu_fwd(void *ctx, zg_error *err) {
    bench *b = ctx;
    zg_attn_opts ao = {.n_threads = b->threads};
    return zg_attn_forward_opts(&b->slice, 1, b->shape, b->q, b->k, b->v, b->o, b->lse, &ao, err);
}

static zg_status cpu_bwd(void *ctx, zg_error *err) {
    bench *b = ctx;
    zg_attn_opts ao = {.n_threads = b->threads};
    return zg_attn_backward_opts(&b->slice, 1, b->shape, b->q, b->k, b->v, b->o, b->lse, b->dout,
                                 b->dq, b->dk, b->dv, &ao, err);
}

// One block's linear layers forward and backward: Y = X W, dX = dY W^T, dW = X^T dY.
static zg_status cpu_gemms(void *ctx, zg_error *err) {
    bench *b = ctx;
    int n = (int)b->n;
    for (int32_t i = 0; i < b->ng; i++) {
        int K = b->g[i].k, N = b->g[i].n;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, N, K, 1.0f, b->x, K, b->w, N,
                    0.0f, b->y, N);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, K, N, 1.0f, b->dy, N, b->w, N, 0.0f,
                    b->dx, K);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, K, N, n, 1.0f, b->x, K, b->dy, N, 0.0f,
                    b->dw, N);
    }
    (void)err;
    return ZG_OK;
}

#ifdef ZG_HAVE_CUDA
static zg_status cu_fail(zg_error *err, cudaError_t e, const char *what) {
    return zg_error_set(err, e == cudaErrorMemoryAllocation ? ZG_ERR_NOMEM : ZG_ERR_INTERNAL,
                        "profile-device cuda: %s failed: %s (%s)", what, cudaGetErrorString(e),
                        cudaGetErrorName(e));
}

static zg_status blas_fail(zg_error *err, cublasStatus_t s, const char *what) {
    return zg_error_set(err, s == CUBLAS_STATUS_ALLOC_FAILED ? ZG_ERR_NOMEM : ZG_ERR_INTERNAL,
                        "profile-device cuda: %s failed: cuBLAS status %d", what, (int)s);
}

static zg_status cu_sync(void *ctx, zg_error *err) {
    return zg_attn_cuda_sync(((bench *)ctx)->cu, err);
}

static zg_status cu_fwd(void *ctx, zg_error *err) {
    bench *b = ctx;
    return zg_attn_cuda_forward(b->cu, &b->slice, 1, b->shape, ZG_DTYPE_BF16, b->dq16, b->dk16,
                                b->dv16, b->d_o, b->d_lse, b->kernel, err);
}

static zg_status cu_bwd(void *ctx, zg_error *err) {
    bench *b = ctx;
    return zg_attn_cuda_backward(b->cu, &b->slice, 1, b->shape, ZG_DTYPE_BF16, b->dq16, b->dk16,
                                 b->dv16, b->d_o, b->d_lse, b->ddout16, b->d_dq, b->d_dk, b->d_dv,
                                 b->kernel, err);
}

// cuBLAS is column-major: a row-major (r, c) matrix is its (c, r) transpose. Y (n, N) = X W is
// Y^T = W^T X^T: gemm(N, N, m=N, n=n, k=K, A=W (ld N), B=X (ld K)); dX^T = W dY^T: gemm(T, N,
// m=K, n=n, k=N, A=W (ld N), B=dY (ld N)); dW^T = dY^T X: gemm(N, T, m=N, n=K, k=n, A=dY (ld N),
// B=X (ld K)). bf16 operands and outputs, fp32 accumulation.
static zg_status cu_gemms(void *ctx, zg_error *err) {
    bench *b = ctx;
    const float one = 1.0f, zero = 0.0f;
    int n = (int)b->n;
    for (int32_t i = 0; i < b->ng; i++) {
        int K = b->g[i].k, N = b->g[i].n;
        cublasStatus_t s = cublasGemmEx(b->blas, CUBLAS_OP_N, CUBLAS_OP_N, N, n, K, &one, b->dw16,
                                        CUDA_R_16BF, N, b->dx16, CUDA_R_16BF, K, &zero, b->dy16,
                                        CUDA_R_16BF, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        if (!s)
            s = cublasGemmEx(b->blas, CUBLAS_OP_T, CUBLAS_OP_N, K, n, N, &one, b->dw16, CUDA_R_16BF,
                             N, b->ddy16, CUDA_R_16BF, N, &zero, b->ddx16, CUDA_R_16BF, K,
                             CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        if (!s)
            s = cublasGemmEx(b->blas, CUBLAS_OP_N, CUBLAS_OP_T, N, K, n, &one, b->ddy16,
                             CUDA_R_16BF, N, b->dx16, CUDA_R_16BF, K, &zero, b->ddw16, CUDA_R_16BF,
                             N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        if (s) return blas_fail(err, s, "cublasGemmEx");
    }
    return ZG_OK;
}

// fp32 -> bf16, round to nearest even (inputs are finite).
static uint16_t to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// Fills `count` bf16 values on the device by tiling a block of random values.
static zg_status cu_fill(void *dst, size_t count, const uint16_t *blk, size_t blk_n,
                         zg_error *err) {
    for (size_t at = 0; at < count; at += blk_n) {
        size_t m = count - at < blk_n ? count - at : blk_n;
        cudaError_t e = cudaMemcpy((uint16_t *)dst + at, blk, m * 2, cudaMemcpyHostToDevice);
        if (e) return cu_fail(err, e, "cudaMemcpy");
    }
    return ZG_OK;
}

static void cu_free_all(bench *b) {
    void *ptrs[] = {b->dq16, b->dk16, b->dv16, b->ddout16, b->d_o,   b->d_lse, b->d_dq, b->d_dk,
                    b->d_dv, b->dx16, b->dw16, b->dy16,    b->ddy16, b->ddx16, b->ddw16};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++)
        if (ptrs[i]) cudaFree(ptrs[i]);
    if (b->blas) cublasDestroy(b->blas);
    if (b->cu) zg_attn_cuda_free(b->cu);
}

// Device buffers for the largest token count nmax; random bf16 inputs.
static zg_status cu_setup(bench *b, int64_t nmax, int32_t kmax, int32_t nmaxw, size_t wmax,
                          int32_t device, uint64_t seed, zg_error *err) {
    zg_status st = zg_attn_cuda_init(&b->cu, device, NULL, err);
    if (st) return st;
    cublasStatus_t s = cublasCreate(&b->blas);
    if (!s) s = cublasSetStream(b->blas, (cudaStream_t)zg_attn_cuda_stream(b->cu));
    if (s) return blas_fail(err, s, "cublasCreate");
    size_t hd = (size_t)nmax * b->shape.n_heads * b->shape.head_dim;
    struct {
        void **p;
        size_t bytes;
    } al[] = {
        {&b->dq16, hd * 2},
        {&b->dk16, hd * 2},
        {&b->dv16, hd * 2},
        {&b->ddout16, hd * 2},
        {(void **)&b->d_o, hd * 4},
        {(void **)&b->d_lse, (size_t)nmax * b->shape.n_heads * 4},
        {(void **)&b->d_dq, hd * 4},
        {(void **)&b->d_dk, hd * 4},
        {(void **)&b->d_dv, hd * 4},
        {&b->dx16, (size_t)nmax * kmax * 2},
        {&b->dw16, wmax * 2},
        {&b->dy16, (size_t)nmax * nmaxw * 2},
        {&b->ddy16, (size_t)nmax * nmaxw * 2},
        {&b->ddx16, (size_t)nmax * kmax * 2},
        {&b->ddw16, wmax * 2},
    };
    for (size_t i = 0; i < sizeof al / sizeof al[0]; i++) {
        cudaError_t e = cudaMalloc(al[i].p, al[i].bytes);
        if (e) return cu_fail(err, e, "cudaMalloc of the measurement buffers");
    }
    enum { BLK = 1 << 20 };
    uint16_t *blk = zg_calloc(BLK, sizeof *blk, err);
    if (!blk) return ZG_ERR_NOMEM;
    zg_rng rng;
    zg_rng_init(&rng, seed);
    for (size_t i = 0; i < BLK; i++)
        blk[i] = to_bf16((float)(0.5 * zg_rng_normal(&rng)));
    void *fills[] = {b->dq16, b->dk16, b->dv16, b->ddout16};
    for (int i = 0; i < 4 && !st; i++)
        st = cu_fill(fills[i], hd, blk, BLK, err);
    if (!st) st = cu_fill(b->dx16, (size_t)nmax * kmax, blk, BLK, err);
    if (!st) st = cu_fill(b->dw16, wmax, blk, BLK, err);
    if (!st) st = cu_fill(b->ddy16, (size_t)nmax * nmaxw, blk, BLK, err);
    free(blk);
    cudaError_t e;
    if (!st && (e = cudaMemset(b->d_dq, 0, hd * 4))) st = cu_fail(err, e, "cudaMemset");
    if (!st && (e = cudaMemset(b->d_dk, 0, hd * 4))) st = cu_fail(err, e, "cudaMemset");
    if (!st && (e = cudaMemset(b->d_dv, 0, hd * 4))) st = cu_fail(err, e, "cudaMemset");
    return st;
}
#endif

// The cluster device name contained in the GPU's name (the longest match), or NULL.
static const char *device_of_gpu(const char *gpu) {
    const char *best = NULL;
    for (const char *const *d = zg_cluster_devices(); *d; d++)
        if (strcasestr(gpu, *d) && (!best || strlen(*d) > strlen(best))) best = *d;
    return best;
}

// cuda: ZG_OK when a GPU is usable (its name in gpu), else ZG_ERR_UNSUPPORTED with the reason.
static zg_status cuda_probe(int32_t device, char *gpu, size_t gpu_len, zg_error *err) {
#ifdef ZG_HAVE_CUDA
    int32_t count = 0;
    char name[160];
    zg_status st = zg_cuda_device_count(&count, name, sizeof name, err);
    if (st) return zg_error_prefix(err, "--backend cuda: "), ZG_ERR_UNSUPPORTED;
    if (count < 1)
        return zg_error_set(err, ZG_ERR_UNSUPPORTED,
                            "--backend cuda: the CUDA runtime sees no GPU on this machine; run it "
                            "on a GPU machine, or measure --backend cpu");
    if (device < 0 || device >= count)
        return zg_error_set(err, ZG_ERR_INVALID, "--device %d: this machine has %d GPU(s) (0..%d)",
                            device, count, count - 1);
    if (device != 0) { // the name zg_cuda_device_count gives is device 0's
        struct cudaDeviceProp prop;
        if (cudaGetDeviceProperties(&prop, device) == cudaSuccess)
            snprintf(name, sizeof name, "%.100s (sm_%d%d, %d SMs, %.1f GiB)", prop.name, prop.major,
                     prop.minor, prop.multiProcessorCount,
                     (double)prop.totalGlobalMem / (1024.0 * 1024.0 * 1024.0));
    }
    snprintf(gpu, gpu_len, "%s", name);
    return ZG_OK;
#else
    (void)device, (void)gpu, (void)gpu_len;
    return zg_error_set(err, ZG_ERR_UNSUPPORTED,
                        "--backend cuda: this build has no CUDA (nvcc was not found when it was "
                        "built); rebuild with the CUDA toolkit on the PATH, or measure "
                        "--backend cpu");
#endif
}

static void free_cpu(bench *b) {
    float *p[] = {b->q,  b->k, b->v, b->o, b->lse, b->dout, b->dq, b->dk,
                  b->dv, b->x, b->w, b->y, b->dy,  b->dx,   b->dw};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
        free(p[i]);
}

static zg_status setup_cpu(bench *b, int64_t nmax, int32_t kmax, int32_t nmaxw, size_t wmax,
                           uint64_t seed, zg_error *err) {
    size_t hd = (size_t)nmax * b->shape.n_heads * b->shape.head_dim;
    struct {
        float **p;
        size_t n;
    } al[] = {
        {&b->q, hd},
        {&b->k, hd},
        {&b->v, hd},
        {&b->o, hd},
        {&b->lse, (size_t)nmax * b->shape.n_heads},
        {&b->dout, hd},
        {&b->dq, hd},
        {&b->dk, hd},
        {&b->dv, hd},
        {&b->x, (size_t)nmax * kmax},
        {&b->w, wmax},
        {&b->y, (size_t)nmax * nmaxw},
        {&b->dy, (size_t)nmax * nmaxw},
        {&b->dx, (size_t)nmax * kmax},
        {&b->dw, wmax},
    };
    for (size_t i = 0; i < sizeof al / sizeof al[0]; i++)
        if (!(*al[i].p = zg_calloc(al[i].n, sizeof(float), err))) return ZG_ERR_NOMEM;
    zg_rng rng;
    zg_rng_init(&rng, seed);
    float *fill[] = {b->q, b->k, b->v, b->dout};
    for (int f = 0; f < 4; f++)
        for (size_t i = 0; i < hd; i++)
            fill[f][i] = (float)(0.5 * zg_rng_normal(&rng));
    for (size_t i = 0; i < (size_t)nmax * kmax; i++)
        b->x[i] = (float)zg_rng_range(&rng, -1, 1);
    for (size_t i = 0; i < wmax; i++)
        b->w[i] = (float)zg_rng_range(&rng, -1, 1);
    for (size_t i = 0; i < (size_t)nmax * nmaxw; i++)
        b->dy[i] = (float)zg_rng_range(&rng, -1, 1);
    return ZG_OK;
}

zg_status zg_devrow_run(const zg_devrow_opts *oin, zg_devrow_result *r, zg_error *err) {
    memset(r, 0, sizeof *r);
    double t_start = zg_time_now();
    zg_devrow_opts o = *oin;
    if (!o.model) o.model = "wan2.1-1.3b";
    if (!o.backend) o.backend = "cpu";
    if (!o.stat) o.stat = "median";
    int cuda = !strcmp(o.backend, "cuda");
    if (!cuda && strcmp(o.backend, "cpu"))
        return zg_error_set(err, ZG_ERR_INVALID, "--backend '%s': use cpu or cuda", o.backend);
    zg_profile_stat stat;
    zg_status st = zg_profile_stat_parse(o.stat, &stat, err);
    if (st) return zg_error_prefix(err, "--stat: "), st;
    if (o.warmup < 0) o.warmup = cuda ? 2 : 1;
    if ((st = zg_check_i64("--reps", o.reps, 1, 64, err)) ||
        (st = zg_check_i64("--warmup", o.warmup, 0, 1000, err)) ||
        (st = zg_check_i64("--threads", o.threads, 0, 1024, err)) ||
        (st = zg_check_f64("--min-window", o.min_window_s, 0, 60, err)))
        return st;
    if (o.min_window_s <= 0) o.min_window_s = cuda ? 0.005 : 0.02;
    if (!o.tokens || o.n_tokens <= 0) {
        o.tokens = cuda ? cuda_tokens : cpu_tokens;
        o.n_tokens = cuda ? (int32_t)(sizeof cuda_tokens / sizeof cuda_tokens[0])
                          : (int32_t)(sizeof cpu_tokens / sizeof cpu_tokens[0]);
    }
    if (o.n_tokens > ZG_DEVROW_MAX_SAMPLES)
        return zg_error_set(err, ZG_ERR_INVALID, "--tokens: %d token counts (at most %d)",
                            o.n_tokens, ZG_DEVROW_MAX_SAMPLES);
    int64_t nmax = 0;
    for (int32_t i = 0; i < o.n_tokens; i++) {
        if ((st = zg_check_i64("--tokens", o.tokens[i], 1, 1 << 20, err))) return st;
        for (int32_t j = 0; j < i; j++)
            if (o.tokens[j] == o.tokens[i])
                return zg_error_set(err, ZG_ERR_INVALID,
                                    "--tokens: %lld is given twice; give distinct token counts",
                                    (long long)o.tokens[i]);
        if (o.tokens[i] > nmax) nmax = o.tokens[i];
    }
    if (o.n_tokens < 2)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "--tokens: %d token count given; the fit needs at least 2 (e.g. "
                            "--tokens 256,1024)",
                            o.n_tokens);

    // the device first: without a GPU nothing else is worth loading
    if (cuda && (st = cuda_probe(o.device, r->gpu, sizeof r->gpu, err))) return st;
    if ((st = zg_model_load(o.model, &r->model, err))) return zg_error_prefix(err, "--model: "), st;
    char cname[64];
    const char *gdev = cuda ? device_of_gpu(r->gpu) : "cpu";
    if (!o.cluster) {
        if (!gdev)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "GPU '%s' is none of the devices the cost model knows; give "
                                "--cluster a JSON file naming its device and peak_flops",
                                r->gpu);
        snprintf(cname, sizeof cname, cuda ? "1x%s" : "cpu:1", gdev);
        o.cluster = cname;
    }
    if ((st = zg_cluster_load(o.cluster, &r->cluster, err)))
        return zg_error_prefix(err, "--cluster: "), st;
    const char *cdev = r->cluster.device;
    if (!cuda && strcasecmp(cdev, "cpu"))
        return zg_error_set(err, ZG_ERR_INVALID,
                            "--backend cpu measures this machine's CPU, but cluster %s's device "
                            "is %s; use --cluster cpu:N (or --backend cuda on a %s)",
                            r->cluster.name, cdev, cdev);
    if (cuda && !strcasecmp(cdev, "cpu"))
        return zg_error_set(err, ZG_ERR_INVALID,
                            "--backend cuda measures GPU '%s', but cluster %s's device is cpu; "
                            "use --cluster 1x<GPU> (e.g. 1x%s)",
                            r->gpu, r->cluster.name, gdev ? gdev : "H100");
    if (cuda && !strcasestr(r->gpu, cdev))
        return zg_error_set(err, ZG_ERR_INVALID,
                            "the GPU is '%s' but cluster %s's device is %s: a row measured here "
                            "would price another device; use --cluster 1x%s",
                            r->gpu, r->cluster.name, cdev, gdev ? gdev : "<this GPU>");
    zg_cost_device_row(cdev, &r->builtin);

    const zg_model *m = &r->model;
    r->n_gemms = zg_devrow_gemms(m, r->gemms);
    int32_t kmax = 0, nw = 0;
    size_t wmax = 0;    // the largest weight, k x n elements
    double lin_tok = 0; // forward FLOPs per token of the listed GEMMs
    for (int32_t i = 0; i < r->n_gemms; i++) {
        kmax = r->gemms[i].k > kmax ? r->gemms[i].k : kmax;
        nw = r->gemms[i].n > nw ? r->gemms[i].n : nw;
        size_t kn = (size_t)r->gemms[i].k * (size_t)r->gemms[i].n;
        wmax = kn > wmax ? kn : wmax;
        lin_tok += 2.0 * r->gemms[i].k * r->gemms[i].n;
    }
    // the list must mean the model's linear FLOPs (per layer, no text): same count, or the
    // measured rate would not be the one the pricer divides by
    double model_tok = zg_model_forward_flops(m, 1, 0).linear / m->n_layers;
    if (fabs(lin_tok - model_tok) > 1e-9 * model_tok)
        return zg_error_set(err, ZG_ERR_INTERNAL,
                            "device row: the block's GEMM list (%g FLOPs/token) disagrees with the "
                            "model's linear FLOPs (%g/token) for arch %s",
                            lin_tok, model_tok, zg_arch_name(m->arch));

    bench b;
    memset(&b, 0, sizeof b);
    b.shape = (zg_attn_shape){m->n_heads, m->head_dim, (float)(1.0 / sqrt(m->head_dim))};
    b.g = r->gemms, b.ng = r->n_gemms;
    b.threads = o.threads;
    call_fn fwd = cpu_fwd, bwd = cpu_bwd, gem = cpu_gemms;
    sync_fn sync = NULL;
    if (cuda) {
#ifdef ZG_HAVE_CUDA
        int tc = m->head_dim == 64 || m->head_dim == 128;
        b.kernel = tc ? ZG_ATTN_CUDA_TC : ZG_ATTN_CUDA_AUTO;
        snprintf(r->attn_kernel, sizeof r->attn_kernel, "%s", tc ? "tc-bf16" : "simple-bf16");
        snprintf(r->dtype, sizeof r->dtype, "bf16");
        st = cu_setup(&b, nmax, kmax, nw, wmax, o.device, o.seed, err);
        fwd = cu_fwd, bwd = cu_bwd, gem = cu_gemms, sync = cu_sync;
#endif
    } else {
        zg_profile_set_threads(o.threads, 1);
        snprintf(r->attn_kernel, sizeof r->attn_kernel, "%s", zg_attn_isa());
        snprintf(r->dtype, sizeof r->dtype, "fp32");
        st = setup_cpu(&b, nmax, kmax, nw, wmax, o.seed, err);
    }
    snprintf(r->backend, sizeof r->backend, "%s", o.backend);
    double peak = r->cluster.peak_flops;
    double d = (double)m->n_heads * m->head_dim;
    for (int32_t i = 0; i < o.n_tokens && !st; i++) {
        zg_devrow_sample *s = &r->s[i];
        double n = (double)o.tokens[i];
        b.n = o.tokens[i];
        b.slice = (zg_attn_slice){0, b.n, 0, b.n};
        s->tokens = b.n;
        s->attn_fwd_flops = 4 * n * n * d;
        s->attn_bwd_flops = ATTN_BWD_FLOPS * s->attn_fwd_flops;
        s->gemm_flops = LIN_FWD_BWD * lin_tok * n;
        if (!(st = time_calls(fwd, sync, &b, &o, stat, &s->attn_fwd_s, err)) &&
            !(st = time_calls(bwd, sync, &b, &o, stat, &s->attn_bwd_s, err)))
            st = time_calls(gem, sync, &b, &o, stat, &s->gemm_s, err);
        if (!st) {
            r->n = i + 1;
            if (o.on_sample) o.on_sample(o.ctx, s, i, o.n_tokens, peak);
        }
    }
#ifdef ZG_HAVE_CUDA
    if (cuda) cu_free_all(&b);
#endif
    free_cpu(&b);
    if (st) return st;

    // fit: attention fwd + bwd share the half-point; GEMMs on their own
    double x[ZG_DEVROW_MAX_SAMPLES], af[ZG_DEVROW_MAX_SAMPLES], ab[ZG_DEVROW_MAX_SAMPLES],
        gm[ZG_DEVROW_MAX_SAMPLES];
    for (int32_t i = 0; i < r->n; i++) {
        x[i] = (double)r->s[i].tokens;
        af[i] = r->s[i].attn_fwd_flops / r->s[i].attn_fwd_s;
        ab[i] = r->s[i].attn_bwd_flops / r->s[i].attn_bwd_s;
        gm[i] = r->s[i].gemm_flops / r->s[i].gemm_s;
    }
    const char *fam[3] = {"attention forward", "attention backward", "GEMM"};
    double *rates[3] = {af, ab, gm};
    for (int f = 0; f < 3; f++)
        for (int32_t i = 0; i < r->n; i++)
            if (rates[f][i] > peak)
                return zg_error_set(err, ZG_ERR_INVALID,
                                    "measured %s rate %.4g FLOP/s at %lld tokens is above cluster "
                                    "%s's peak_flops %.4g: efficiencies would exceed 1; give "
                                    "--cluster a JSON file whose peak_flops is this device's "
                                    "real peak",
                                    fam[f], rates[f][i], (long long)r->s[i].tokens, r->cluster.name,
                                    peak);
    const double *attn_rates[2] = {af, ab}, *gemm_rates[1] = {gm};
    double ae[2], ge[1];
    r->row = r->builtin;
    if ((st =
             zg_devrow_fit(x, attn_rates, 2, r->n, peak, ae, &r->row.attn_half, r->max_rel, err)) ||
        (st = zg_devrow_fit(x, gemm_rates, 1, r->n, peak, ge, &r->row.gemm_half, r->max_rel + 2,
                            err)))
        return st;
    r->row.attn_fwd_eff = ae[0], r->row.attn_bwd_eff = ae[1], r->row.gemm_eff = ge[0];
    if ((st = zg_cost_device_check(&r->row, "measured device row", err))) return st;
    r->opts = o;
    r->opts.tokens = NULL; // o.tokens may point at the caller's array; the samples keep them
    r->opts.cluster = r->cluster.name; // o.cluster may be the local default's buffer
    r->elapsed_s = zg_time_now() - t_start;
    return ZG_OK;
}

static cJSON *row_json(const zg_cost_device *d) {
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    cJSON_AddNumberToObject(j, "attn_fwd_eff", d->attn_fwd_eff);
    cJSON_AddNumberToObject(j, "attn_bwd_eff", d->attn_bwd_eff);
    cJSON_AddNumberToObject(j, "gemm_eff", d->gemm_eff);
    cJSON_AddNumberToObject(j, "attn_half", d->attn_half);
    cJSON_AddNumberToObject(j, "gemm_half", d->gemm_half);
    cJSON_AddNumberToObject(j, "framework_bytes", d->framework_bytes);
    return j;
}

cJSON *zg_devrow_to_json(const zg_devrow_result *r) {
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    double peak = r->cluster.peak_flops;
    cJSON_AddNumberToObject(j, "version", 1);
    cJSON_AddStringToObject(j, "kind", "device_row");
    cJSON_AddStringToObject(j, "device", r->cluster.device);
    cJSON_AddStringToObject(j, "backend", r->backend);
    cJSON_AddStringToObject(j, "dtype", r->dtype);
    cJSON_AddStringToObject(j, "model", r->model.name);
    cJSON_AddStringToObject(j, "cluster", r->cluster.name);
    cJSON_AddNumberToObject(j, "peak_flops", peak);
    cJSON_AddItemToObject(j, "row", row_json(&r->row));
    cJSON_AddItemToObject(j, "builtin_row", row_json(&r->builtin));
    cJSON *fit = cJSON_AddObjectToObject(j, "fit");
    if (fit) {
        cJSON_AddStringToObject(fit, "method",
                                "least squares on relative rate residuals; attention forward and "
                                "backward share the half-point");
        cJSON_AddNumberToObject(fit, "attn_fwd_max_rel_err", r->max_rel[0]);
        cJSON_AddNumberToObject(fit, "attn_bwd_max_rel_err", r->max_rel[1]);
        cJSON_AddNumberToObject(fit, "gemm_max_rel_err", r->max_rel[2]);
    }
    cJSON *sh = cJSON_AddObjectToObject(j, "shape");
    if (sh) {
        cJSON_AddNumberToObject(sh, "n_heads", r->model.n_heads);
        cJSON_AddNumberToObject(sh, "head_dim", r->model.head_dim);
        cJSON_AddStringToObject(sh, "attn_kernel", r->attn_kernel);
        cJSON *gs = cJSON_AddArrayToObject(sh, "gemms");
        for (int32_t i = 0; gs && i < r->n_gemms; i++) {
            cJSON *g = cJSON_CreateObject();
            if (!g) break;
            cJSON_AddStringToObject(g, "name", r->gemms[i].name);
            cJSON_AddNumberToObject(g, "k", r->gemms[i].k);
            cJSON_AddNumberToObject(g, "n", r->gemms[i].n);
            cJSON_AddItemToArray(gs, g);
        }
    }
    cJSON *ss = cJSON_AddArrayToObject(j, "samples");
    for (int32_t i = 0; ss && i < r->n; i++) {
        const zg_devrow_sample *s = &r->s[i];
        cJSON *e = cJSON_CreateObject();
        if (!e) break;
        double rf = s->attn_fwd_flops / s->attn_fwd_s, rb = s->attn_bwd_flops / s->attn_bwd_s,
               rg = s->gemm_flops / s->gemm_s;
        cJSON_AddNumberToObject(e, "tokens", (double)s->tokens);
        cJSON_AddNumberToObject(e, "attn_fwd_s", s->attn_fwd_s);
        cJSON_AddNumberToObject(e, "attn_bwd_s", s->attn_bwd_s);
        cJSON_AddNumberToObject(e, "gemm_s", s->gemm_s);
        cJSON_AddNumberToObject(e, "attn_fwd_flops", s->attn_fwd_flops);
        cJSON_AddNumberToObject(e, "attn_bwd_flops", s->attn_bwd_flops);
        cJSON_AddNumberToObject(e, "gemm_flops", s->gemm_flops);
        cJSON_AddNumberToObject(e, "attn_fwd_flops_per_s", rf);
        cJSON_AddNumberToObject(e, "attn_bwd_flops_per_s", rb);
        cJSON_AddNumberToObject(e, "gemm_flops_per_s", rg);
        cJSON_AddNumberToObject(e, "attn_fwd_of_peak", rf / peak);
        cJSON_AddNumberToObject(e, "attn_bwd_of_peak", rb / peak);
        cJSON_AddNumberToObject(e, "gemm_of_peak", rg / peak);
        cJSON_AddItemToArray(ss, e);
    }
    cJSON *set = cJSON_AddObjectToObject(j, "settings");
    if (set) {
        cJSON_AddNumberToObject(set, "warmup", r->opts.warmup);
        cJSON_AddNumberToObject(set, "reps", r->opts.reps);
        cJSON_AddStringToObject(set, "stat", r->opts.stat);
        cJSON_AddNumberToObject(set, "min_window_s", r->opts.min_window_s);
        cJSON_AddNumberToObject(set, "threads", r->opts.threads);
        cJSON_AddNumberToObject(set, "seed", (double)r->opts.seed);
        cJSON_AddNumberToObject(set, "elapsed_s", r->elapsed_s);
    }
    cJSON *mach = zg_profile_machine_json(1);
    if (mach && r->gpu[0]) cJSON_AddStringToObject(mach, "gpu", r->gpu);
    if (mach) cJSON_AddItemToObject(j, "machine", mach);
    return j;
}
