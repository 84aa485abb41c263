// check.c — random legal plans and the distributed-vs-single-process check used by the tests,
// `zellige check-engine` and the benchmarks. The reference runs every sequence whole with the
// plain fp32 reference kernels (zg_attn_*_ref) on deterministic data that every rank can
// generate for any token, so no data moves for the comparison.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"

int32_t zg_engine_configs(int32_t world, int32_t n_heads, zg_config *out, int32_t cap) {
    int32_t n = 0;
    for (int32_t deg = 1; deg <= world; deg++)
        for (int32_t q = 1; q <= deg; q++)
            for (int32_t k = 1; k <= deg; k++)
                for (int32_t h = 1; h <= deg; h++) {
                    if (q * h * k != deg || n_heads % h != 0) continue;
                    if (out && n < cap) out[n] = (zg_config){q, h, k};
                    n++;
                }
    return n;
}

zg_status zg_engine_random_plan(int32_t world, int32_t n_heads, int32_t max_seqs,
                                int64_t max_tokens, int32_t force_cfg, int32_t idle_rank,
                                uint64_t seed, zg_plan *out, zg_error *err) {
    if (world < 1 || n_heads < 1 || max_seqs < 1 || max_tokens < 1)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "random plan: world %d, heads %d, max_seqs %d, max_tokens %lld must "
                            "be >= 1",
                            world, n_heads, max_seqs, (long long)max_tokens);
    zg_rng rng;
    zg_rng_init(&rng, seed);
    int32_t avail[256], n_avail = 0;
    if (world > 256) return zg_error_set(err, ZG_ERR_UNSUPPORTED, "random plan: world > 256");
    for (int32_t r = 0; r < world; r++)
        if (r != idle_rank || world == 1) avail[n_avail++] = r;
    zg_config cfgs[512];
    int32_t nc = zg_engine_configs(n_avail, n_heads, cfgs, 512);
    if (nc > 512) nc = 512;
    int32_t n = (int32_t)zg_rng_int(&rng, 1, max_seqs);
    zg_status st = zg_plan_alloc(out, n, world, err);
    if (st) return st;
    snprintf(out->policy, sizeof out->policy, "random");
    for (int32_t i = 0; i < n && !st; i++) {
        zg_config c;
        if (i == 0 && force_cfg >= 0)
            c = cfgs[force_cfg % nc];
        else if (zg_rng_uniform(&rng) < 0.3)
            c = cfgs[0]; // whole sequences are common
        else
            c = cfgs[zg_rng_int(&rng, 0, nc - 1)];
        int32_t deg = zg_config_degree(c);
        int64_t lo = deg, hi = max_tokens > deg ? max_tokens : deg;
        zg_seq s;
        memset(&s, 0, sizeof s);
        s.id = i;
        s.tokens = zg_rng_int(&rng, lo, hi);
        s.origin_rank = (int32_t)zg_rng_int(&rng, 0, world - 1);
        int32_t perm[256], ranks[256];
        int64_t lens[256];
        memcpy(perm, avail, (size_t)n_avail * sizeof(int32_t));
        for (int32_t a = n_avail - 1; a > 0; a--) { // Fisher-Yates
            int32_t b = (int32_t)zg_rng_int(&rng, 0, a), t = perm[a];
            perm[a] = perm[b];
            perm[b] = t;
        }
        for (int32_t a = 0; a < deg; a++) {
            ranks[a] = perm[a];
            lens[a] = 1;
        }
        for (int64_t t = deg; t < s.tokens; t++)
            lens[zg_rng_int(&rng, 0, deg - 1)]++;
        st = zg_plan_set_ranks(out, i, &s, i, c, ranks, lens, deg, err);
    }
    return st;
}

float zg_engine_test_value(uint64_t seed, int64_t id, int32_t which, int64_t t, int32_t hd,
                           int32_t d, int32_t n_heads, int32_t head_dim) {
    uint64_t idx =
        ((((uint64_t)id * 4 + (uint64_t)which) * 0x100000000ull + (uint64_t)t) * (uint64_t)n_heads +
         (uint64_t)hd) *
            (uint64_t)head_dim +
        (uint64_t)d;
    uint64_t x = zg_rng_derive(seed, idx);
    return (float)((double)(x >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
}

// Fills rows [r0, r0 + (end - start)) of a (T, H, D) buffer with tensor `which` of sequence id.
static void fill(float *buf, int64_t r0, int64_t id, int32_t which, int64_t start, int64_t end,
                 int32_t H, int32_t D, uint64_t seed) {
    for (int64_t t = start; t < end; t++)
        for (int32_t h = 0; h < H; h++)
            for (int32_t d = 0; d < D; d++)
                buf[((size_t)(r0 + t - start) * (size_t)H + (size_t)h) * (size_t)D + (size_t)d] =
                    zg_engine_test_value(seed, id, which, t, h, d, H, D);
}

static double max_abs(const float *x, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++)
        if (fabs(x[i]) > m) m = fabs(x[i]);
    return m;
}

static double rel_err(const float *a, const float *ref, size_t n, double scale) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)ref[i]);
        if (!(d <= m)) m = d; // NaN propagates as +inf-like
    }
    return m / (scale > 1e-30 ? scale : 1e-30);
}

typedef struct bufs {
    float *q, *k, *v, *dout, *o, *lse, *dq, *dk, *dv;
} bufs;

static float *alloc_f(size_t n, zg_error *err) {
    return zg_calloc(n ? n : 1, sizeof(float), err);
}

// Compares the local rows of item j against the whole-sequence reference.
static zg_status compare_item(const zg_engine *e, int64_t j, const bufs *b, uint64_t seed,
                              double *ef, double *eb, zg_error *err) {
    const zg_eitem *it = &e->items[j];
    const zg_placement *pl = &e->plan->p[it->p];
    int32_t H = e->shape.n_heads, D = e->shape.head_dim;
    int64_t L = pl->tokens;
    size_t n = (size_t)L * (size_t)H * (size_t)D;
    float *m = alloc_f(9 * n + 2 * (size_t)L * (size_t)H, err);
    if (!m) return err ? err->status : ZG_ERR_NOMEM;
    float *q = m, *k = m + n, *v = m + 2 * n, *dout = m + 3 * n, *o = m + 4 * n, *dq = m + 5 * n,
          *dk = m + 6 * n, *dv = m + 7 * n, *lse = m + 9 * n;
    fill(q, 0, pl->id, 0, 0, L, H, D, seed);
    fill(k, 0, pl->id, 1, 0, L, H, D, seed);
    fill(v, 0, pl->id, 2, 0, L, H, D, seed);
    fill(dout, 0, pl->id, 3, 0, L, H, D, seed);
    zg_attn_slice s = {0, L, 0, L};
    zg_status st = zg_attn_forward_ref(&s, 1, e->shape, q, k, v, o, lse, err);
    if (!st) st = zg_attn_backward_ref(&s, 1, e->shape, q, k, v, o, lse, dout, dq, dk, dv, err);
    if (!st) {
        int64_t a = pl->shards[it->pos].start;
        size_t off = (size_t)a * (size_t)H * (size_t)D, loc = (size_t)it->tok_off * H * D;
        size_t cnt = (size_t)it->cl * (size_t)H * (size_t)D;
        size_t lo = (size_t)a * (size_t)H, ll = (size_t)it->tok_off * H, lc = (size_t)it->cl * H;
        double f1 = rel_err(b->o + loc, o + off, cnt, max_abs(o, n));
        double f2 = rel_err(b->lse + ll, lse + lo, lc, max_abs(lse, (size_t)L * H));
        // gradients are scaled by the sequence's largest gradient entry (dq and dk of a
        // 1-token sequence are exactly 0, so a per-tensor scale would divide rounding by 0)
        double gs = fmax(max_abs(dq, n), fmax(max_abs(dk, n), max_abs(dv, n)));
        double g1 = rel_err(b->dq + loc, dq + off, cnt, gs);
        double g2 = rel_err(b->dk + loc, dk + off, cnt, gs);
        double g3 = rel_err(b->dv + loc, dv + off, cnt, gs);
        if (getenv("ZG_ENGINE_DEBUG"))
            fprintf(stderr,
                    "item p%lld pos %d cfg (%d,%d,%d): o %.3g lse %.3g dq %.3g dk %.3g dv %.3g\n",
                    (long long)it->p, it->pos, it->c.q, it->c.h, it->c.k, f1, f2, g1, g2, g3);
        *ef = fmax(*ef, fmax(f1, f2));
        *eb = fmax(*eb, fmax(g1, fmax(g2, g3)));
    }
    free(m);
    return st;
}

// saved: backward from the forward's work space (zg_engine_attn_backward_saved).
static zg_status run_once(zg_engine *e, bufs *b, int saved, zg_error *err) {
    zg_status st = zg_engine_attn_forward(e, b->q, b->k, b->v, b->o, b->lse, err);
    if (!st && saved)
        st = zg_engine_attn_backward_saved(e, b->dout, b->dq, b->dk, b->dv, err);
    else if (!st)
        st = zg_engine_attn_backward(e, b->q, b->k, b->v, b->o, b->lse, b->dout, b->dq, b->dk,
                                     b->dv, err);
    return st;
}

zg_status zg_engine_check_plan(zg_comm *comm, const zg_plan *plan, zg_attn_shape shape,
                               const zg_engine_opts *opts, uint64_t data_seed, double tol,
                               zg_engine_check *res, zg_error *err) {
    memset(res, 0, sizeof *res);
    zg_engine *e = NULL;
    zg_status st = zg_engine_init(&e, comm, plan, shape, opts, err);
    if (st) return st;
    int32_t H = shape.n_heads, D = shape.head_dim;
    size_t T = (size_t)e->t_local, n = T * (size_t)H * (size_t)D, nl = T * (size_t)H;
    bufs b[2];
    float *m = alloc_f(2 * (9 * n + nl), err);
    if (!m) {
        zg_engine_free(e);
        return err ? err->status : ZG_ERR_NOMEM;
    }
    for (int r = 0; r < 2; r++) {
        float *x = m + (size_t)r * (9 * n + nl);
        b[r] = (bufs){x,         x + n,     x + 2 * n, x + 3 * n, x + 4 * n,
                      x + 9 * n, x + 5 * n, x + 6 * n, x + 7 * n};
    }
    for (int64_t j = 0; j < e->n_items; j++) {
        const zg_eitem *it = &e->items[j];
        const zg_placement *pl = &plan->p[it->p];
        const zg_shard *s = &pl->shards[it->pos];
        for (int w = 0; w < 4; w++) {
            float *dst = w == 0 ? b[0].q : w == 1 ? b[0].k : w == 2 ? b[0].v : b[0].dout;
            fill(dst, it->tok_off, pl->id, w, s->start, s->end, H, D, data_seed);
        }
    }
    memcpy(b[1].q, b[0].q, 4 * n * sizeof(float)); // q, k, v, dout are contiguous
    st = run_once(e, &b[0], 0, err);
    res->kernel_calls = e->stats.kernel_calls;
    if (!st) st = run_once(e, &b[1], 1, err); // the saved path must give the same bits
    double ef = 0, eb = 0;
    int ident = memcmp(b[0].o, b[1].o, 5 * n * sizeof(float)) == 0 &&
                memcmp(b[0].lse, b[1].lse, nl * sizeof(float)) == 0;
    for (int64_t j = 0; j < e->n_items && !st; j++)
        st = compare_item(e, j, &b[0], data_seed, &ef, &eb, err);
    free(m);
    // world-reduce: errors and flags (every rank reaches this unless a local error happened)
    int32_t *world = NULL;
    zg_status st2 = zg_comm_world_ranks(comm, &world, err);
    double v[4] = {ef, eb, ident ? 0.0 : 1.0, st ? 1.0 : 0.0};
    double tok = (double)e->t_local;
    if (!st2) st2 = zg_comm_allreduce_max_f64(comm, world, comm->size, v, 4, 31000, err);
    if (!st2) st2 = zg_comm_allreduce_f64(comm, world, comm->size, &tok, 1, 31002, err);
    free(world);
    zg_engine_free(e);
    if (st) return st;
    if (st2) return st2;
    if (v[3] != 0) return zg_error_set(err, ZG_ERR_INTERNAL, "check-engine: another rank failed");
    res->plans = 1;
    res->max_rel_err_fwd = v[0];
    res->max_rel_err_bwd = v[1];
    res->bit_identical = v[2] == 0;
    res->tokens = (int64_t)tok;
    res->passed = v[0] <= tol && v[1] <= tol && res->bit_identical;
    return ZG_OK;
}
