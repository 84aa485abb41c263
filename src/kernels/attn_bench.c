// attn_bench.c — the attention kernels' benchmark (kernels.h, "benchmark"): kernels vs SGEMM on the
// same shapes measured in the same run, correctness against the reference on samples, and the
// machine's FP32 peak. Moved from tools/zellige/cmd_bench_attention.c; the CLI keeps the PyTorch
// helper process and the re-run with the OpenBLAS variables unset (hooks here).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "kernels/kernels.h"

#ifdef ZG_HAVE_OPENMP
#include <omp.h>
#endif

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

// Best over D = 64 and 128 at T tokens, plus a square (side n) SGEMM for reference.
static double sgemm_ceiling(int64_t T, int n, double *square, zg_error *err) {
    double a = sgemm_attn_shapes(T, 64, err), b = sgemm_attn_shapes(T, 128, err);
    *square = sgemm_shape(n, n, n, 0, err);
    if (a < 0 || b < 0 || *square < 0) return -1.0;
    return a > b ? a : b;
}

// --- machine FP32 peak ------------------------------------------------------------------------

// `iters` rounds of 12 independent FMA chains held in registers (no memory traffic): enough
// chains to cover FMA latency x ports on current x86 cores. Returns the flops done; the sum
// goes to *sink so the loop is kept. One version per ISA, chosen like the kernels' tables.
#define FMA12(T, FMA)                                                                              \
    x0 = FMA(x0, a, b), x1 = FMA(x1, a, b), x2 = FMA(x2, a, b), x3 = FMA(x3, a, b);                \
    x4 = FMA(x4, a, b), x5 = FMA(x5, a, b), x6 = FMA(x6, a, b), x7 = FMA(x7, a, b);                \
    x8 = FMA(x8, a, b), x9 = FMA(x9, a, b), x10 = FMA(x10, a, b), x11 = FMA(x11, a, b)

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
// The 12 chains of vector type T (SET1 broadcasts, FMA fuses, ADD adds), run `iters` rounds and
// summed into one vector `t` for the caller's horizontal sum.
#define FMA12_VEC_LOOP(T, SET1, FMA, ADD)                                                          \
    const T a = SET1(0.999999f), b = SET1(1e-7f);                                                  \
    T x0 = SET1(0.f), x1 = SET1(1.f), x2 = SET1(2.f), x3 = SET1(3.f), x4 = SET1(4.f),              \
      x5 = SET1(5.f), x6 = SET1(6.f), x7 = SET1(7.f), x8 = SET1(8.f), x9 = SET1(9.f),              \
      x10 = SET1(10.f), x11 = SET1(11.f);                                                          \
    for (int64_t i = 0; i < iters; i++) {                                                          \
        FMA12(T, FMA);                                                                             \
    }                                                                                              \
    T t = ADD(ADD(ADD(x0, x1), ADD(x2, x3)), ADD(ADD(x4, x5), ADD(x6, x7)));                       \
    t = ADD(t, ADD(ADD(x8, x9), ADD(x10, x11)))

__attribute__((target("avx512f"))) static double fma_loop_avx512(int64_t iters, float *sink) {
    FMA12_VEC_LOOP(__m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps);
    *sink = _mm512_reduce_add_ps(t);
    return (double)iters * 12.0 * 16.0 * 2.0;
}

__attribute__((target("avx2,fma"))) static double fma_loop_avx2(int64_t iters, float *sink) {
    FMA12_VEC_LOOP(__m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps);
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
                            const zg_attn_bench_opts *o, int do_bwd, int64_t gemm_T,
                            zg_attn_bench_row *r, double *max_err, zg_rng *rng, zg_error *err) {
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
    if (!st && o->torch_fwd && !strcmp(r->kind, "single"))
        r->torch_fwd = o->torch_fwd(o->ctx, T, dim);
    return st;
}

void zg_attn_bench_opts_default(zg_attn_bench_opts *o) {
    *o = (zg_attn_bench_opts){.max_tokens = 4096, .shard = 8192, .heads = 12, .pack_images = 50,
              .square = 2048};
}

double zg_attn_bench_sgemm(int64_t tokens, int64_t threads, int32_t square, double *square_gflops,
                           zg_error *err) {
    if (threads > 0) openblas_set_num_threads((int)threads);
    return sgemm_ceiling(tokens, square, square_gflops, err);
}

int64_t zg_attn_bench_threads(int64_t requested) {
#ifdef ZG_HAVE_OPENMP
    return requested > 0 ? requested : omp_get_max_threads();
#else
    (void)requested;
    return 1;
#endif
}

static zg_status check_opts(const zg_attn_bench_opts *in, zg_attn_bench_opts *o, zg_error *err) {
    *o = *in;
    if (o->quick) {
        o->max_tokens = o->max_tokens < 1024 ? o->max_tokens : 1024;
        o->shard = o->shard < 2048 ? o->shard : 2048;
    }
    if (o->max_tokens < 256 || o->max_tokens > 65536 || o->shard < 1 || o->shard > 65536 ||
        o->heads < 1 || o->heads > 64 || o->threads < 0)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "bad sizes: --max-tokens %lld (256..65536), --shard %lld (1..65536), "
                            "--heads %lld (1..64), --threads %lld (>= 0)",
                            (long long)o->max_tokens, (long long)o->shard, (long long)o->heads,
                            (long long)o->threads);
    if (o->pack_images < 1 || o->pack_images > 50 || o->square < 64 || o->square > 4096)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "bad sizes: pack_images %d (1..50), square %d (64..4096)",
                            o->pack_images, o->square);
    return ZG_OK;
}

// Every row: single sequences 256..max_tokens at both head dims, then the coalesced pack.
static zg_status run_rows(const zg_attn_bench_opts *o, zg_attn_bench_result *r, zg_error *err) {
    zg_rng rng;
    zg_rng_init(&rng, 2024);
    zg_status st = ZG_OK;
    for (int64_t T = 256; T <= o->max_tokens && !st; T *= 2)
        for (int d = 64; d <= 128 && !st; d *= 2) {
            zg_attn_bench_row *row = &r->rows[r->n_rows++];
            *row = (zg_attn_bench_row){"single", T, d, 0, -1, -1, 0};
            zg_attn_slice s = {0, T, 0, T};
            st = bench_case(&s, 1, T, d, o, 1, T, row, &r->max_err, &rng, err);
            if (!st && o->on_row) o->on_row(o->ctx, row);
        }
    // coalesced pack: pack_images images of 1560 tokens, then 3 shards of `shard` tokens
    zg_attn_slice pack[53];
    int32_t n = o->pack_images + 3;
    int64_t t = 0;
    for (int32_t i = 0; i < n; i++) {
        int64_t len = i < o->pack_images ? 1560 : o->shard;
        pack[i] = (zg_attn_slice){t, len, t, len};
        t += len;
    }
    r->pack_tokens = t;
    for (int d = 64; d <= 128 && !st; d *= 2) {
        zg_attn_bench_row *row = &r->rows[r->n_rows++];
        *row = (zg_attn_bench_row){"pack", t, d, 0, -1, -1, 0};
        st = bench_case(pack, n, t, d, o, d == 64, o->shard > 1560 ? o->shard : 1560, row,
                        &r->max_err, &rng, err);
        if (!st && o->on_row) o->on_row(o->ctx, row);
    }
    return st;
}

// Headline averages over the rows (see kernels.h).
static void headline(zg_attn_bench_result *r) {
    int64_t big = 0;
    for (int i = 0; i < r->n_rows; i++)
        if (!strcmp(r->rows[i].kind, "single") && r->rows[i].tokens > big) big = r->rows[i].tokens;
    if (big > 4096) big = 4096;
    int nf = 0, nt = 0, np = 0;
    for (int i = 0; i < r->n_rows; i++) {
        const zg_attn_bench_row *w = &r->rows[i];
        if (!strcmp(w->kind, "single") && w->tokens >= big) {
            r->fwd += w->fwd, r->bwd += w->bwd, r->sgemm += w->sgemm, nf++;
            r->fwd_vs_sgemm += w->fwd / w->sgemm, r->bwd_vs_sgemm += w->bwd / w->sgemm;
            if (w->torch_fwd > 0)
                r->torch_fwd += w->torch_fwd, r->fwd_vs_torch += w->fwd / w->torch_fwd, nt++;
        }
        if (!strcmp(w->kind, "pack")) {
            r->pack_fwd += w->fwd, r->pack_vs_sgemm += w->fwd / w->sgemm, np++;
            if (w->bwd > 0) r->pack_bwd = w->bwd;
        }
    }
    r->headline_tokens = big, r->n_torch = nt;
    r->fwd /= nf, r->bwd /= nf, r->sgemm /= nf, r->fwd_vs_sgemm /= nf, r->bwd_vs_sgemm /= nf;
    r->pack_fwd /= np, r->pack_vs_sgemm /= np;
    if (nt) r->torch_fwd /= nt, r->fwd_vs_torch /= nt;
}

zg_status zg_attn_bench_run(const zg_attn_bench_opts *in, zg_attn_bench_result *r, zg_error *err) {
    memset(r, 0, sizeof *r);
    zg_attn_bench_opts o;
    zg_status st = check_opts(in, &o, err);
    if (st) return st;
    o.threads = zg_attn_bench_threads(o.threads);
#ifdef ZG_HAVE_OPENMP
    omp_set_num_threads((int)o.threads);
#endif
    openblas_set_num_threads((int)o.threads); // the SGEMM ceiling uses the run's threads too
    r->threads = o.threads, r->heads = o.heads;
    // the kernels' path (ZG_KERNELS_ISA honoured); fails cleanly
    if ((st = zg_attn_isa_resolve(ZG_ATTN_ISA_AUTO, &r->isa, err))) return st;
    r->peak_isa = peak_isa();
    r->peak = peak_gflops((int)o.threads, r->peak_isa); // again at the end: the higher counts
    if ((st = run_rows(&o, r, err))) return st;
    for (int d = 64; d <= 128; d *= 2) {
        double e = small_bwd_error(d, err);
        if (e < 0) return err->status ? err->status : ZG_ERR_INTERNAL;
        if (e > r->bwd_err) r->bwd_err = e;
    }
    // OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE: measure both ways back to back; if the unset run
    // is faster, every row's ceiling is raised by that factor (report against the higher).
    r->gemm_tokens = o.max_tokens < 4096 ? o.max_tokens : 4096;
    r->sgemm_env = sgemm_ceiling(r->gemm_tokens, o.square, &r->sgemm_square, err);
    if (r->sgemm_env < 0) return err->status ? err->status : ZG_ERR_NOMEM;
    r->env_set = getenv("OPENBLAS_CORETYPE") || getenv("OPENBLAS_L2_SIZE");
    r->sgemm_env_unset = r->env_set && o.sgemm_env_unset
                             ? o.sgemm_env_unset(o.ctx, r->gemm_tokens, o.threads)
                             : -1.0;
    r->env_factor = r->sgemm_env_unset > r->sgemm_env ? r->sgemm_env_unset / r->sgemm_env : 1.0;
    for (int i = 0; i < r->n_rows; i++)
        r->rows[i].sgemm *= r->env_factor;
    double peak_end = peak_gflops((int)o.threads, r->peak_isa); // a shared machine's load moves
    if (peak_end > r->peak) r->peak = peak_end;
    headline(r);
    return ZG_OK;
}
