// cmd_bench_attention.c — `zellige bench attention [--json]`: GFLOP/s of the CPU attention
// kernels (src/kernels) against OpenBLAS SGEMM on comparable shapes, measured in the same run,
// and against PyTorch's scaled_dot_product_attention when a Python with torch is available.
//
// Flops: forward 4*Lq*Lk*D*H per slice; backward 2.5x that (the FlashAttention convention).
// Single sequences 256.. --max-tokens (default 4096), a coalesced pack (50 images of 1560
// tokens + 3 video shards of --shard tokens, default 8192), head dims 64 and 128, 12 heads.
// Also the machine's FP32 peak (a register-only FMA loop on every thread, widest ISA), so
// results read as fractions of peak. ZG_KERNELS_ISA (see kernels.h) picks the kernels' path;
// the JSON names it ("isa"). --threads N sets OpenMP, OpenBLAS and the torch helper alike.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cblas.h>

#include "cli.h"
#include "kernels/kernels.h"

#ifdef ZG_HAVE_OPENMP
#include <omp.h>
#endif

typedef struct bench_opts {
    int json, quick, no_torch;
    int64_t max_tokens, shard, heads, threads;
    const char *python, *torch_script;
} bench_opts;

typedef struct row {
    char kind[16];
    int64_t tokens;
    int dim;
    double fwd, bwd, torch_fwd; // GFLOP/s; bwd, torch_fwd < 0 when not measured
    double sgemm;               // SGEMM ceiling measured right after this row's kernels
} row;

// Best time over a few repetitions (at most 3, stop after ~0.3 s in total).
typedef zg_status (*bench_fn)(void *ctx, zg_error *err);
static double time_best(bench_fn fn, void *ctx, zg_error *err) {
    double best = INFINITY, total = 0.0;
    for (int rep = 0; rep < 3 && (rep == 0 || total < 0.3); rep++) {
        double t0 = zg_time_now();
        if (fn(ctx, err)) return -1.0;
        double dt = zg_time_now() - t0;
        total += dt;
        if (dt < best) best = dt;
    }
    return best;
}

typedef struct attn_case {
    const zg_attn_slice *slices;
    int32_t n;
    zg_attn_shape shape;
    float *q, *k, *v, *o, *lse, *dout, *dq, *dk, *dv;
} attn_case;

static zg_status run_fwd(void *p, zg_error *err) {
    attn_case *c = p;
    return zg_attn_forward(c->slices, c->n, c->shape, c->q, c->k, c->v, c->o, c->lse, err);
}

static zg_status run_bwd(void *p, zg_error *err) {
    attn_case *c = p;
    return zg_attn_backward(c->slices, c->n, c->shape, c->q, c->k, c->v, c->o, c->lse, c->dout,
                            c->dq, c->dk, c->dv, err);
}

static double case_flops(const zg_attn_slice *s, int32_t n, zg_attn_shape sh) {
    double f = 0.0;
    for (int32_t i = 0; i < n; i++)
        f += 4.0 * (double)s[i].q_len * (double)s[i].k_len * sh.head_dim * sh.n_heads;
    return f;
}

// Worst |fast - ref| / (|ref| + rms(ref)) over up to 24 sampled query rows of slice `si`:
// the sampled rows are copied into a compact Q and the reference runs on them only, against
// the slice's full key range.
static double sample_fwd_error(const attn_case *c, int32_t si, zg_error *err) {
    const zg_attn_slice s0 = c->slices[si];
    const int64_t H = c->shape.n_heads, D = c->shape.head_dim, HD = H * D;
    const int64_t m = s0.q_len < 24 ? s0.q_len : 24;
    if (m == 0) return 0.0;
    zg_attn_slice rows[24];
    int64_t src[24];
    float *q = zg_calloc((size_t)(m * HD), sizeof(float), err);
    float *o = zg_calloc((size_t)(m * HD), sizeof(float), err);
    float *lse = zg_calloc((size_t)(m * H), sizeof(float), err);
    double worst = -1.0;
    if (q && o && lse) {
        for (int64_t i = 0; i < m; i++) {
            src[i] = s0.q_start + i * s0.q_len / m; // distinct, spread over the slice
            rows[i] = (zg_attn_slice){i, 1, s0.k_start, s0.k_len};
            memcpy(q + i * HD, c->q + src[i] * HD, (size_t)HD * sizeof(float));
        }
        if (zg_attn_forward_ref(rows, (int32_t)m, c->shape, q, c->k, c->v, o, lse, err) == ZG_OK) {
            double ss = 0.0;
            for (int64_t x = 0; x < m * HD; x++)
                ss += (double)o[x] * o[x];
            double rms = sqrt(ss / (double)(m * HD));
            worst = 0.0;
            for (int64_t i = 0; i < m; i++) {
                for (int64_t x = 0; x < HD; x++) {
                    double ref = o[i * HD + x], e = fabs((double)c->o[src[i] * HD + x] - ref);
                    if (e / (fabs(ref) + rms) > worst) worst = e / (fabs(ref) + rms);
                }
                for (int64_t h = 0; h < H; h++) {
                    double ref = lse[i * H + h], e = fabs((double)c->lse[src[i] * H + h] - ref);
                    if (e / (fabs(ref) + 1.0) > worst) worst = e / (fabs(ref) + 1.0);
                }
            }
        }
    }
    free(q), free(o), free(lse);
    return worst;
}

// Backward check vs the reference on a small case (the reference needs all query rows).
static double small_bwd_error(int dim, zg_error *err) {
    const int64_t T = 300, H = 2, D = dim;
    zg_attn_slice s[2] = {{0, 200, 0, 300}, {200, 100, 0, 300}};
    zg_attn_shape sh = {(int32_t)H, (int32_t)D, (float)(1.0 / sqrt((double)D))};
    size_t e = (size_t)(T * H * D);
    float *buf = zg_calloc(e * 11 + (size_t)(T * H), sizeof(float), err);
    if (!buf) return -1.0;
    float *q = buf, *k = q + e, *v = k + e, *o = v + e, *dout = o + e, *g = dout + e;
    float *lse = buf + 11 * e;
    zg_rng rng;
    zg_rng_init(&rng, 99);
    for (size_t i = 0; i < 5 * e; i++)
        buf[i] = (float)zg_rng_normal(&rng);
    double worst = -1.0;
    if (!zg_attn_forward_ref(s, 2, sh, q, k, v, o, lse, err) &&
        !zg_attn_backward(s, 2, sh, q, k, v, o, lse, dout, g, g + e, g + 2 * e, err) &&
        !zg_attn_backward_ref(s, 2, sh, q, k, v, o, lse, dout, g + 3 * e, g + 4 * e, g + 5 * e,
                              err)) {
        worst = 0.0;
        for (int t = 0; t < 3; t++) {
            const float *a = g + t * e, *r = g + (3 + t) * e;
            double ss = 0.0;
            for (size_t i = 0; i < e; i++)
                ss += (double)r[i] * r[i];
            double rms = sqrt(ss / (double)e);
            for (size_t i = 0; i < e; i++) {
                double x = fabs((double)a[i] - r[i]) / (fabs(r[i]) + rms);
                if (x > worst) worst = x;
            }
        }
    }
    free(buf);
    return worst;
}

// --- SGEMM ceiling --------------------------------------------------------------------------

typedef struct gemm_case {
    int m, n, k;
    int trans_b;
    float *a, *b, *c;
} gemm_case;

static zg_status run_gemm(void *p, zg_error *err) {
    gemm_case *g = p;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, g->trans_b ? CblasTrans : CblasNoTrans, g->m, g->n,
                g->k, 1.0f, g->a, g->k, g->b, g->trans_b ? g->k : g->n, 0.0f, g->c, g->n);
    return ZG_OK;
}

// SGEMM GFLOP/s of one (m x n x k) shape, best of a few runs; -1 on allocation failure.
static double sgemm_shape(int m, int n, int k, int trans_b, zg_error *err) {
    gemm_case g = {m, n, k, trans_b, NULL, NULL, NULL};
    size_t na = (size_t)m * k, nb = (size_t)k * n, nc = (size_t)m * n;
    g.a = malloc(na * 4), g.b = malloc(nb * 4), g.c = malloc(nc * 4);
    double gf = -1.0;
    if (g.a && g.b && g.c) {
        for (size_t i = 0; i < na; i++)
            g.a[i] = (float)((i * 7919) % 1000) * 1e-3f - 0.5f;
        for (size_t i = 0; i < nb; i++)
            g.b[i] = (float)((i * 104729) % 997) * 1e-3f - 0.5f;
        gf = 2.0 * m * n * (double)k / time_best(run_gemm, &g, err) / 1e9;
    } else {
        zg_error_set(err, ZG_ERR_NOMEM, "bench: no memory for a %dx%dx%d SGEMM", m, n, k);
    }
    free(g.a), free(g.b), free(g.c);
    return gf;
}

// The ceiling for attention over T tokens at head dim D: the better of one head's two GEMM
// shapes (S = Q K^T is T x T x D, O = P V is T x D x T), T capped at 4096.
static double sgemm_attn_shapes(int64_t T, int D, zg_error *err) {
    int t = (int)(T < 4096 ? T : 4096);
    double a = sgemm_shape(t, t, D, 1, err), b = sgemm_shape(t, D, t, 0, err);
    if (a < 0 || b < 0) return -1.0;
    return a > b ? a : b;
}

// Best over D = 64 and 128 at T tokens, plus a square 2048^3 for reference.
static double sgemm_ceiling(int64_t T, double *square, zg_error *err) {
    double a = sgemm_attn_shapes(T, 64, err), b = sgemm_attn_shapes(T, 128, err);
    *square = sgemm_shape(2048, 2048, 2048, 0, err);
    if (a < 0 || b < 0 || *square < 0) return -1.0;
    return a > b ? a : b;
}

// Re-runs this binary's SGEMM measurement with OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE unset
// (OpenBLAS reads them when it loads, so it must be a fresh process). -1 if it failed.
static double sgemm_env_unset(int64_t T, int64_t threads) {
    int fd[2];
    if (pipe(fd)) return -1.0;
    pid_t pid = fork();
    if (pid < 0) return -1.0;
    if (pid == 0) {
        close(fd[0]);
        dup2(fd[1], STDOUT_FILENO);
        unsetenv("OPENBLAS_CORETYPE");
        unsetenv("OPENBLAS_L2_SIZE");
        char tok[32], thr[32];
        snprintf(tok, sizeof tok, "%lld", (long long)T);
        snprintf(thr, sizeof thr, "%lld", (long long)threads);
        execl("/proc/self/exe", "zellige", "bench", "attention", "--threads", thr, "--sgemm-only",
              tok, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    char buf[128] = {0};
    ssize_t got = read(fd[0], buf, sizeof buf - 1);
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (got <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1.0;
    return atof(buf);
}

// --- PyTorch ---------------------------------------------------------------------------------

// The helper runs as a server (one torch import), so each torch timing is taken right next to
// the C kernel's timing of the same case: on a shared machine the load changes by the minute.
typedef struct torch_srv {
    pid_t pid;
    FILE *to, *from;
    char version[64];
} torch_srv;

static int torch_start(const bench_opts *o, torch_srv *t) {
    int in[2], out[2];
    memset(t, 0, sizeof *t);
    if (pipe(in)) return 0;
    if (pipe(out)) {
        close(in[0]), close(in[1]);
        return 0;
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(in[0]), close(in[1]), close(out[0]), close(out[1]);
        return 0;
    }
    if (pid == 0) { // child: stdin <- in[0], stdout -> out[1], stderr discarded
        dup2(in[0], STDIN_FILENO), dup2(out[1], STDOUT_FILENO);
        FILE *null = freopen("/dev/null", "w", stderr);
        (void)null;
        close(in[0]), close(in[1]), close(out[0]), close(out[1]);
        char heads[32], threads[32];
        snprintf(heads, sizeof heads, "%lld", (long long)o->heads);
        snprintf(threads, sizeof threads, "%lld", (long long)o->threads);
        execlp(o->python, o->python, o->torch_script, "--serve", "--heads", heads, "--threads",
               threads, (char *)NULL);
        _exit(127);
    }
    close(in[0]), close(out[1]);
    t->pid = pid, t->to = fdopen(in[1], "w"), t->from = fdopen(out[0], "r");
    char line[256];
    cJSON *j = t->to && t->from && fgets(line, sizeof line, t->from) ? cJSON_Parse(line) : NULL;
    const cJSON *v = j ? cJSON_GetObjectItem(j, "torch") : NULL;
    int ok = cJSON_IsString(v) && cJSON_IsTrue(cJSON_GetObjectItem(j, "ready"));
    if (ok) snprintf(t->version, sizeof t->version, "%s", v->valuestring);
    cJSON_Delete(j);
    if (!ok) {
        if (t->to) fclose(t->to);
        if (t->from) fclose(t->from);
        waitpid(pid, NULL, 0);
        memset(t, 0, sizeof *t);
    }
    return ok;
}

static double torch_measure(torch_srv *t, int64_t T, int D) {
    if (!t->pid) return -1.0;
    char line[512];
    fprintf(t->to, "%lld %d\n", (long long)T, D);
    fflush(t->to);
    if (!fgets(line, sizeof line, t->from)) return -1.0;
    cJSON *j = cJSON_Parse(line);
    const cJSON *g = j ? cJSON_GetObjectItem(j, "fwd_gflops") : NULL;
    double r = cJSON_IsNumber(g) ? g->valuedouble : -1.0;
    cJSON_Delete(j);
    return r;
}

static void torch_stop(torch_srv *t) {
    if (!t->pid) return;
    fclose(t->to), fclose(t->from); // EOF on its stdin ends the helper
    waitpid(t->pid, NULL, 0);
    t->pid = 0;
}

// --- machine FP32 peak ------------------------------------------------------------------------

// `iters` rounds of 12 independent FMA chains held in registers (no memory traffic): enough
// chains to cover FMA latency x ports on current x86 cores. Returns the flops done; the sum
// goes to *sink so the loop is kept. One version per ISA, chosen like the kernels' tables.
#define FMA12(T, FMA)                                                                              \
    x0 = FMA(x0, a, b), x1 = FMA(x1, a, b), x2 = FMA(x2, a, b), x3 = FMA(x3, a, b);              \
    x4 = FMA(x4, a, b), x5 = FMA(x5, a, b), x6 = FMA(x6, a, b), x7 = FMA(x7, a, b);              \
    x8 = FMA(x8, a, b), x9 = FMA(x9, a, b), x10 = FMA(x10, a, b), x11 = FMA(x11, a, b)

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
__attribute__((target("avx512f"))) static double fma_loop_avx512(int64_t iters, float *sink) {
    const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
    __m512 x0 = _mm512_set1_ps(0.f), x1 = _mm512_set1_ps(1.f), x2 = _mm512_set1_ps(2.f),
           x3 = _mm512_set1_ps(3.f), x4 = _mm512_set1_ps(4.f), x5 = _mm512_set1_ps(5.f),
           x6 = _mm512_set1_ps(6.f), x7 = _mm512_set1_ps(7.f), x8 = _mm512_set1_ps(8.f),
           x9 = _mm512_set1_ps(9.f), x10 = _mm512_set1_ps(10.f), x11 = _mm512_set1_ps(11.f);
    for (int64_t i = 0; i < iters; i++) {
        FMA12(__m512, _mm512_fmadd_ps);
    }
    __m512 t = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(x0, x1), _mm512_add_ps(x2, x3)),
                             _mm512_add_ps(_mm512_add_ps(x4, x5), _mm512_add_ps(x6, x7)));
    t = _mm512_add_ps(t, _mm512_add_ps(_mm512_add_ps(x8, x9), _mm512_add_ps(x10, x11)));
    *sink = _mm512_reduce_add_ps(t);
    return (double)iters * 12.0 * 16.0 * 2.0;
}

__attribute__((target("avx2,fma"))) static double fma_loop_avx2(int64_t iters, float *sink) {
    const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
    __m256 x0 = _mm256_set1_ps(0.f), x1 = _mm256_set1_ps(1.f), x2 = _mm256_set1_ps(2.f),
           x3 = _mm256_set1_ps(3.f), x4 = _mm256_set1_ps(4.f), x5 = _mm256_set1_ps(5.f),
           x6 = _mm256_set1_ps(6.f), x7 = _mm256_set1_ps(7.f), x8 = _mm256_set1_ps(8.f),
           x9 = _mm256_set1_ps(9.f), x10 = _mm256_set1_ps(10.f), x11 = _mm256_set1_ps(11.f);
    for (int64_t i = 0; i < iters; i++) {
        FMA12(__m256, _mm256_fmadd_ps);
    }
    __m256 t = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(x0, x1), _mm256_add_ps(x2, x3)),
                             _mm256_add_ps(_mm256_add_ps(x4, x5), _mm256_add_ps(x6, x7)));
    t = _mm256_add_ps(t, _mm256_add_ps(_mm256_add_ps(x8, x9), _mm256_add_ps(x10, x11)));
    float v[8];
    _mm256_storeu_ps(v, t);
    *sink = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
    return (double)iters * 12.0 * 8.0 * 2.0;
}
#endif

#define SCALAR_FMA(x, a, b) ((x) * (a) + (b))
static double fma_loop_scalar(int64_t iters, float *sink) {
    const float a = 0.999999f, b = 1e-7f;
    float x0 = 0, x1 = 1, x2 = 2, x3 = 3, x4 = 4, x5 = 5, x6 = 6, x7 = 7, x8 = 8, x9 = 9, x10 = 10,
          x11 = 11;
    for (int64_t i = 0; i < iters; i++) {
        FMA12(float, SCALAR_FMA);
    }
    *sink = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7 + x8 + x9 + x10 + x11;
    return (double)iters * 12.0 * 2.0;
}

// Widest ISA this CPU runs (independent of ZG_KERNELS_ISA: the peak is the machine's).
static const char *peak_isa(void) {
    if (zg_attn_isa_supported(ZG_ATTN_ISA_AVX512)) return "avx512";
    if (zg_attn_isa_supported(ZG_ATTN_ISA_AVX2)) return "avx2";
    return "scalar";
}

static double fma_loop(const char *isa, int64_t iters, float *sink) {
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
    if (!strcmp(isa, "avx512")) return fma_loop_avx512(iters, sink);
    if (!strcmp(isa, "avx2")) return fma_loop_avx2(iters, sink);
#endif
    return fma_loop_scalar(iters, sink);
}

// Machine FP32 peak, GFLOP/s: every thread of the run does the register-only FMA loop at once
// (the widest ISA); best of 5 runs of ~0.02-0.05 s each (the first ones can catch the cores
// still clocking up: 1222 vs 1572 GFLOP/s measured on a 16-vCPU AVX-512 VM). The benchmark
// measures it at the start and at the end and keeps the higher: on a loaded machine (other
// processes on the cores) it reads low, even below the SGEMM measured later.
static double peak_gflops(int threads, const char *isa) {
    const int64_t iters = !strcmp(isa, "scalar") ? 2000000 : 10000000;
    double best = 0.0;
    (void)threads;
    for (int rep = 0; rep < 5; rep++) {
        double flops = 0.0, t0 = zg_time_now();
#ifdef ZG_HAVE_OPENMP
#pragma omp parallel num_threads(threads) reduction(+ : flops)
#endif
        {
            float s = 0.0f;
            flops += fma_loop(isa, iters, &s);
            if (s == 12345.0f) flops += 1.0; // keeps s (and the loop) live
        }
        double gf = flops / (zg_time_now() - t0) / 1e9;
        if (gf > best) best = gf;
    }
    return best;
}

// --- the benchmark ---------------------------------------------------------------------------

// Times one case (forward, then backward if asked), then, right after, the SGEMM ceiling on
// its shapes (gemm_T tokens) and, for single sequences, torch on the same shape.
static zg_status bench_case(const zg_attn_slice *sl, int32_t n, int64_t T, int dim,
                            const bench_opts *o, int do_bwd, int64_t gemm_T, torch_srv *torch,
                            row *r, double *max_err, zg_rng *rng, zg_error *err) {
    zg_attn_shape sh = {(int32_t)o->heads, dim, (float)(1.0 / sqrt((double)dim))};
    size_t e = (size_t)T * (size_t)o->heads * (size_t)dim;
    attn_case c = {sl, n, sh, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    float **bufs[] = {&c.q, &c.k, &c.v, &c.o, &c.dout, &c.dq, &c.dk, &c.dv};
    int nb = do_bwd ? 8 : 4;
    zg_status st = ZG_OK;
    for (int i = 0; i < nb && !st; i++)
        if (!(*bufs[i] = zg_calloc(e, sizeof(float), err))) st = ZG_ERR_NOMEM;
    if (!st && !(c.lse = zg_calloc((size_t)T * (size_t)o->heads, sizeof(float), err)))
        st = ZG_ERR_NOMEM;
    float *fill[4] = {c.q, c.k, c.v, c.dout}; // random inputs, never zeros
    for (int i = 0; i < (do_bwd ? 4 : 3) && !st; i++)
        for (size_t j = 0; j < e; j++)
            fill[i][j] = (float)zg_rng_normal(rng);
    double fl = case_flops(sl, n, sh);
    if (!st) {
        double t = time_best(run_fwd, &c, err);
        if (t < 0)
            st = err->status;
        else
            r->fwd = fl / t / 1e9;
    }
    if (!st) {
        for (int32_t si = 0; si < n && !st; si += (n > 1 ? n - 1 : 1)) { // first and last
            double e1 = sample_fwd_error(&c, si, err);
            if (e1 < 0)
                st = err->status ? err->status : ZG_ERR_INTERNAL;
            else if (e1 > *max_err)
                *max_err = e1;
        }
    }
    if (!st && do_bwd) { // best of a few runs, like time_best; backward accumulates into
        double best = INFINITY, total = 0.0; // dq/dk/dv, so they are zeroed (untimed) first
        for (int rep = 0; rep < 3 && (rep == 0 || total < 0.3) && !st; rep++) {
            memset(c.dq, 0, e * sizeof(float)), memset(c.dk, 0, e * sizeof(float));
            memset(c.dv, 0, e * sizeof(float));
            double t0 = zg_time_now();
            st = run_bwd(&c, err);
            double dt = zg_time_now() - t0;
            total += dt;
            if (dt < best) best = dt;
        }
        r->bwd = 2.5 * fl / best / 1e9;
    }
    for (int i = 0; i < 8; i++)
        free(*bufs[i]);
    free(c.lse);
    if (!st && (r->sgemm = sgemm_attn_shapes(gemm_T, dim, err)) < 0) st = err->status;
    if (!st && torch && !strcmp(r->kind, "single")) r->torch_fwd = torch_measure(torch, T, dim);
    return st;
}

static int usage(FILE *f) {
    fprintf(
        f, "usage: zellige bench attention [--json] [--quick] [--max-tokens N] [--shard N]\n"
           "                               [--heads H] [--threads N] [--python PY]\n"
           "                               [--torch-script FILE] [--no-torch]\n"
           "  CPU attention kernels (fwd/bwd GFLOP/s; fwd = 4*Lq*Lk*D*H flops, bwd = 2.5x) on\n"
           "  single sequences 256..max-tokens (default 4096; --quick: 1024) and a coalesced\n"
           "  pack (50 images x 1560 tokens + 3 shards of --shard tokens, default 8192), head\n"
           "  dims 64 and 128, 12 heads; OpenBLAS SGEMM on the attention GEMM shapes in the same\n"
           "  run (also with OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE unset when they are set); PyTorch\n"
           "  scaled_dot_product_attention through the helper script when PY imports torch;\n"
           "  the machine's FP32 peak (register-only FMA loop, all threads, widest ISA).\n"
           "  --threads N: kernels, OpenBLAS and torch threads (default: OpenMP's).\n"
           "  ZG_KERNELS_ISA=auto|scalar|avx2|avx512 forces the kernels' ISA (JSON \"isa\").\n"
           "  --json prints one JSON line instead of the table.\n");
    return f == stdout ? 0 : 2;
}

static int cmd_bench_attention(int argc, char **argv) {
    bench_opts o = {0, 0, 0, 4096, 8192, 12, 0, NULL, NULL};
    zg_error err = {0};
    const char *py = getenv("ZG_PYTHON");
    o.python = py && *py ? py : "python3";
    static char script[4096];
    int bad = 0;
    for (int i = 1; i < argc; i++) {
        int r = 0;
        if (cli_is_help(argv[i])) return usage(stdout);
        if (!strcmp(argv[i], "--json"))
            o.json = 1;
        else if (!strcmp(argv[i], "--quick"))
            o.quick = 1;
        else if (!strcmp(argv[i], "--no-torch"))
            o.no_torch = 1;
        else if (!strcmp(argv[i], "--sgemm-only") && i + 1 < argc) {
            if (o.threads > 0) openblas_set_num_threads((int)o.threads);
            double sq = 0.0, c = sgemm_ceiling(atoll(argv[i + 1]), &sq, &err);
            printf("%.3f\n", c > sq ? c : sq);
            return c < 0;
        } else if ((r = cli_opt_int(argc, argv, &i, "--max-tokens", &o.max_tokens, &err, &bad)) ||
                   (r = cli_opt_int(argc, argv, &i, "--shard", &o.shard, &err, &bad)) ||
                   (r = cli_opt_int(argc, argv, &i, "--heads", &o.heads, &err, &bad)) ||
                   (r = cli_opt_int(argc, argv, &i, "--threads", &o.threads, &err, &bad)) ||
                   (r = cli_opt_str(argc, argv, &i, "--python", &o.python, &err, &bad)) ||
                   (r = cli_opt_str(argc, argv, &i, "--torch-script", &o.torch_script, &err,
                                    &bad))) {
            if (r < 0 || bad) return cli_fail("bench attention", &err);
        } else {
            zg_error_set(&err, ZG_ERR_INVALID, "unknown option '%s' (see --help)", argv[i]);
            return cli_fail("bench attention", &err);
        }
    }
    if (o.quick) {
        o.max_tokens = o.max_tokens < 1024 ? o.max_tokens : 1024;
        o.shard = o.shard < 2048 ? o.shard : 2048;
    }
    if (o.max_tokens < 256 || o.max_tokens > 65536 || o.shard < 1 || o.shard > 65536 ||
        o.heads < 1 || o.heads > 64 || o.threads < 0) {
        zg_error_set(&err, ZG_ERR_INVALID,
                     "bad sizes: --max-tokens %lld (256..65536), --shard %lld (1..65536), "
                     "--heads %lld (1..64), --threads %lld (>= 0)",
                     (long long)o.max_tokens, (long long)o.shard, (long long)o.heads,
                     (long long)o.threads);
        return cli_fail("bench attention", &err);
    }
#ifdef ZG_HAVE_OPENMP
    if (o.threads == 0) o.threads = omp_get_max_threads();
    omp_set_num_threads((int)o.threads);
#else
    o.threads = 1;
#endif
    openblas_set_num_threads((int)o.threads); // the SGEMM ceiling uses the run's threads too
    const char *kisa = NULL; // the kernels' path (ZG_KERNELS_ISA honoured); fails cleanly
    if (zg_attn_isa_resolve(ZG_ATTN_ISA_AUTO, &kisa, &err))
        return cli_fail("bench attention", &err);
    const char *pisa = peak_isa();
    double peak = peak_gflops((int)o.threads, pisa); // again at the end: the higher counts
    if (!o.torch_script) { // the helper sits next to this file: <root>/tools/zellige/
        char exe[4096] = {0};
        ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
        char *slash = l > 0 ? strrchr(exe, '/') : NULL;
        if (slash) *slash = 0; // <root>/<build>/bin
        snprintf(script, sizeof script, "%s/../../tools/zellige/bench_attention_torch.py", exe);
        o.torch_script = script;
    }

    signal(SIGPIPE, SIG_IGN); // a torch helper that dies must not kill the benchmark
    torch_srv torch;
    int have_torch = !o.no_torch && torch_start(&o, &torch);
    row rows[64];
    int n_rows = 0;
    double max_err = 0.0;
    zg_rng rng;
    zg_rng_init(&rng, 2024);
    zg_status st = ZG_OK;
    for (int64_t T = 256; T <= o.max_tokens && !st; T *= 2)
        for (int d = 64; d <= 128 && !st; d *= 2) {
            row *r = &rows[n_rows++];
            *r = (row){"single", T, d, 0, -1, -1, 0};
            zg_attn_slice s = {0, T, 0, T};
            st = bench_case(&s, 1, T, d, &o, 1, T, have_torch ? &torch : NULL, r, &max_err, &rng,
                            &err);
            if (!o.json) fprintf(stderr, "  single T=%lld D=%d done\n", (long long)T, d);
        }
    // coalesced pack: 50 images of 1560 tokens, then 3 shards of `shard` tokens
    zg_attn_slice pack[53];
    int64_t t = 0;
    for (int i = 0; i < 53; i++) {
        int64_t len = i < 50 ? 1560 : o.shard;
        pack[i] = (zg_attn_slice){t, len, t, len};
        t += len;
    }
    for (int d = 64; d <= 128 && !st; d *= 2) {
        row *r = &rows[n_rows++];
        *r = (row){"pack", t, d, 0, -1, -1, 0};
        st = bench_case(pack, 53, t, d, &o, d == 64, o.shard > 1560 ? o.shard : 1560, NULL, r,
                        &max_err, &rng, &err);
        if (!o.json) fprintf(stderr, "  pack D=%d done\n", d);
    }
    if (have_torch) torch_stop(&torch);
    if (st) return cli_fail("bench attention", &err);
    double bwd_err = 0.0;
    for (int d = 64; d <= 128; d *= 2) {
        double e = small_bwd_error(d, &err);
        if (e < 0) return cli_fail("bench attention", &err);
        if (e > bwd_err) bwd_err = e;
    }
    // OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE: measure both ways back to back; if the unset run
    // is faster, every row's ceiling is raised by that factor (report against the higher).
    int64_t gemm_T = o.max_tokens < 4096 ? o.max_tokens : 4096;
    double square = 0.0, sgemm_env = sgemm_ceiling(gemm_T, &square, &err);
    if (sgemm_env < 0) return cli_fail("bench attention", &err);
    int env_set = getenv("OPENBLAS_CORETYPE") || getenv("OPENBLAS_L2_SIZE");
    double sgemm_unset = env_set ? sgemm_env_unset(gemm_T, o.threads) : -1.0;
    double env_factor = sgemm_unset > sgemm_env ? sgemm_unset / sgemm_env : 1.0;
    for (int i = 0; i < n_rows; i++)
        rows[i].sgemm *= env_factor;
    double peak_end = peak_gflops((int)o.threads, pisa); // a shared machine's load moves
    if (peak_end > peak) peak = peak_end;

    // headline: single sequences of >= 4096 tokens (or the largest measured), both head dims;
    // ratios are per row (kernel vs the SGEMM / torch run measured next to it), then averaged
    int64_t big = 0;
    for (int i = 0; i < n_rows; i++)
        if (!strcmp(rows[i].kind, "single") && rows[i].tokens > big) big = rows[i].tokens;
    if (big > 4096) big = 4096;
    double fwd = 0, bwd = 0, tfwd = 0, sg = 0, rf = 0, rb = 0, rt = 0;
    double pack_fwd = 0, pack_bwd = 0, rp = 0;
    int nf = 0, nt = 0, np = 0;
    for (int i = 0; i < n_rows; i++) {
        row *r = &rows[i];
        if (!strcmp(r->kind, "single") && r->tokens >= big) {
            fwd += r->fwd, bwd += r->bwd, sg += r->sgemm, nf++;
            rf += r->fwd / r->sgemm, rb += r->bwd / r->sgemm;
            if (r->torch_fwd > 0) tfwd += r->torch_fwd, rt += r->fwd / r->torch_fwd, nt++;
        }
        if (!strcmp(r->kind, "pack")) {
            pack_fwd += r->fwd, rp += r->fwd / r->sgemm, np++;
            if (r->bwd > 0) pack_bwd = r->bwd;
        }
    }
    fwd /= nf, bwd /= nf, sg /= nf, rf /= nf, rb /= nf, pack_fwd /= np, rp /= np;
    if (nt) tfwd /= nt, rt /= nt;
    if (o.json) {
        printf("{\"isa\":\"%s\",\"peak_gflops\":%.2f,\"peak_isa\":\"%s\",\"threads\":%lld,"
               "\"heads\":%lld,\"headline_tokens_min\":%lld,"
               "\"fwd_gflops\":%.2f,\"bwd_gflops\":%.2f,\"pack_fwd_gflops\":%.2f,"
               "\"pack_bwd_gflops\":%.2f,\"pack_tokens\":%lld,\"sgemm_gflops\":%.2f,"
               "\"sgemm_square_gflops\":%.2f,",
               kisa, peak, pisa, (long long)o.threads, (long long)o.heads, (long long)big, fwd, bwd,
               pack_fwd, pack_bwd, (long long)t, sg, square);
        if (env_set)
            printf("\"sgemm_gflops_env\":%.2f,\"sgemm_gflops_env_unset\":%.2f,", sgemm_env,
                   sgemm_unset);
        if (nt)
            printf("\"torch_fwd_gflops\":%.2f,\"torch\":\"%s\",", tfwd, torch.version);
        else
            printf("\"torch_fwd_gflops\":null,");
        printf("\"fwd_vs_sgemm\":%.3f,\"bwd_vs_sgemm\":%.3f,\"pack_vs_sgemm\":%.3f,", rf, rb, rp);
        printf("\"fwd_vs_peak\":%.3f,\"bwd_vs_peak\":%.3f,\"pack_vs_peak\":%.3f,"
               "\"sgemm_vs_peak\":%.3f,",
               fwd / peak, bwd / peak, pack_fwd / peak, sg / peak);
        if (nt)
            printf("\"fwd_vs_torch\":%.3f,", rt);
        else
            printf("\"fwd_vs_torch\":null,");
        printf("\"max_rel_err\":%.3g,\"bwd_max_rel_err\":%.3g,\"rows\":[", max_err, bwd_err);
        for (int i = 0; i < n_rows; i++) {
            printf("%s{\"kind\":\"%s\",\"tokens\":%lld,\"dim\":%d,\"fwd_gflops\":%.2f,"
                   "\"sgemm_gflops\":%.2f",
                   i ? "," : "", rows[i].kind, (long long)rows[i].tokens, rows[i].dim, rows[i].fwd,
                   rows[i].sgemm);
            if (rows[i].bwd > 0) printf(",\"bwd_gflops\":%.2f", rows[i].bwd);
            if (rows[i].torch_fwd > 0) printf(",\"torch_fwd_gflops\":%.2f", rows[i].torch_fwd);
            printf("}");
        }
        printf("]}\n");
        return 0;
    }
    printf("attention kernels: isa %s, %lld threads, %lld heads\n", kisa, (long long)o.threads,
           (long long)o.heads);
    printf("machine FP32 peak (register-only %s FMA loop, %lld threads): %.1f GFLOP/s\n", pisa,
           (long long)o.threads, peak);
    printf("%-7s %7s %4s %9s %9s %9s %9s %8s %8s %8s\n", "kind", "tokens", "D", "fwd GF/s",
           "bwd GF/s", "SGEMM", "torch", "fwd/gemm", "bwd/gemm", "fwd/torch");
    for (int i = 0; i < n_rows; i++) {
        row *r = &rows[i];
        char tb[16] = "-", bb[16] = "-", bg[16] = "-", ft[16] = "-";
        if (r->torch_fwd > 0)
            snprintf(tb, sizeof tb, "%.1f", r->torch_fwd),
                snprintf(ft, sizeof ft, "%.2fx", r->fwd / r->torch_fwd);
        if (r->bwd > 0)
            snprintf(bb, sizeof bb, "%.1f", r->bwd),
                snprintf(bg, sizeof bg, "%.0f%%", 100 * r->bwd / r->sgemm);
        printf("%-7s %7lld %4d %9.1f %9s %9.1f %9s %7.0f%% %8s %8s\n", r->kind,
               (long long)r->tokens, r->dim, r->fwd, bb, r->sgemm, tb, 100 * r->fwd / r->sgemm, bg,
               ft);
    }
    printf("SGEMM: per row, the attention GEMM shapes of one head (T<=4096) measured right after "
           "the row; at the end: %.1f GFLOP/s at T=%lld, square 2048^3 %.1f\n",
           sgemm_env, (long long)gemm_T, square);
    if (env_set)
        printf("SGEMM with OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE unset: %.1f (ceilings x%.2f)\n",
               sgemm_unset, env_factor);
    printf("headline (T >= %lld): fwd %.1f GF/s = %.0f%% of SGEMM, bwd %.1f = %.0f%%, pack fwd "
           "%.1f = %.0f%%",
           (long long)big, fwd, 100 * rf, bwd, 100 * rb, pack_fwd, 100 * rp);
    if (nt)
        printf(", torch fwd %.1f (ours %.2fx)\n", tfwd, rt);
    else
        printf(", torch: absent\n");
    printf("as fraction of the FP32 peak %.1f: fwd %.0f%%, bwd %.0f%%, pack fwd %.0f%%, SGEMM "
           "%.0f%%\n",
           peak, 100 * fwd / peak, 100 * bwd / peak, 100 * pack_fwd / peak, 100 * sg / peak);
    printf("max rel err vs reference: fwd %.3g, bwd %.3g\n", max_err, bwd_err);
    return 0;
}

static int cmd_bench(int argc, char **argv) {
    if (argc < 2 || cli_is_help(argv[1])) {
        FILE *f = argc < 2 ? stderr : stdout;
        fprintf(f, "usage: zellige bench <kind> [options]\n  kinds: attention\n");
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "attention")) return cmd_bench_attention(argc - 1, argv + 1);
    fprintf(stderr, "zellige bench: unknown kind '%s' (kinds: attention)\n", argv[1]);
    return 2;
}

ZG_CLI_COMMAND(bench, "bench", "benchmarks: `bench attention` (CPU attention kernels vs SGEMM)",
               cmd_bench)
