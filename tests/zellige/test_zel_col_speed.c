// test_zel_col_speed.c — (1) the column DP (search/column.c) with its per-block records, skipped
// stacks, parent counts and contiguous runs returns exactly what a plain restatement of the DP
// returns (ref_column below: the O(G N^2) tables' semantics, every width, the pull form), plan,
// T and K bit for bit, on random models with ledgers, several options per block (lean != fast),
// ties and memory-tight caps. (2) The filler stage's tournament tree (stage2/filler.c: a group of
// several fillers picks each one's rank from a tree of the §5.3 scores instead of scanning the
// ranks) picks exactly the ranks the scan picks. Reference: the same problem with every filler
// in a group of its own (same options, same whole price: the scan path), whose fillers come in
// the same order and whose F is the same sum (whole prices are small multiples of 1/4, so every
// partial sum is exact). Choices, loads and memory must agree bit for bit, on random problems
// with coarse loads (equal scores: the lowest-rank tie-break), missing and duplicated whole
// options, split options, tight memory (the split fallback and the memory-first mode),
// infeasible ones (the same status) and zero prices (F = 0: infinite and NaN scores).
#include "zgtest.h"
#include "zel_testlib.h"

// Random problem: ng groups (count 1..6 each) on N ranks; group g has whole options on a
// random subset of ranks (some twice: the first one counts) and a few split options.
static zg_problem rand_fill_problem(zg_rng *rng, int32_t N, int32_t ng, double cap, int coarse,
                                    int zero) {
    int64_t cnt[8];
    for (int32_t g = 0; g < ng; g++) cnt[g] = zg_rng_int(rng, 1, 6);
    zg_problem pr = tprob_shell(N, cap, ng, cnt, 'f');
    for (int32_t g = 0; g < ng; g++) {
        zg_group *G = &pr.groups[g];
        G->whole_time = zero ? 0.0 : (double)zg_rng_int(rng, 1, 64) / 4.0;
        G->whole_mem = zg_rng_range(rng, 0.05, 0.5) * cap;
        G->opts = calloc((size_t)(2 * N + 8), sizeof(zg_option));
        int32_t ns = (int32_t)zg_rng_int(rng, 0, 4);
        for (int32_t i = 0; i < ns && N >= 2; i++) {  // split options first (any order works)
            int32_t d = (int32_t)zg_rng_int(rng, 2, N < 4 ? N : 4);
            zg_option *o = &G->opts[G->n_opts++];
            o->config = (zg_config){1, d, 1};
            o->start = (int32_t)zg_rng_int(rng, 0, N - d);
            o->time = G->whole_time / d * zg_rng_range(rng, 1.0, 1.5);
            o->mem = G->whole_mem / d * zg_rng_range(rng, 1.0, 1.3);
        }
        for (int32_t r = 0; r < N; r++) {
            int reps = zg_rng_int(rng, 0, 9) == 0 ? 0 : (zg_rng_int(rng, 0, 9) == 0 ? 2 : 1);
            for (int32_t i = 0; i < reps; i++) {
                zg_option *o = &G->opts[G->n_opts++];
                o->config = (zg_config){1, 1, 1};
                o->start = r;
                double f = coarse ? 1.0 : zg_rng_range(rng, 0.8, 1.2);
                o->time = G->whole_time * f;
                o->mem = coarse ? G->whole_mem : G->whole_mem * zg_rng_range(rng, 0.8, 1.2);
            }
        }
    }
    return pr;
}

// The same problem with every filler of group g of pr in a group of its own (numbered group by
// group, members in order), sharing pr's options.
static zg_problem split_groups(const zg_problem *pr) {
    zg_problem q;
    memset(&q, 0, sizeof q);
    q.world_size = pr->world_size;
    q.mem_room = pr->mem_room;
    q.n_seqs = pr->n_seqs;
    for (int32_t g = 0; g < pr->n_groups; g++) q.n_groups += (int32_t)pr->groups[g].count;
    q.groups = calloc((size_t)q.n_groups, sizeof(zg_group));
    q.group_of = calloc((size_t)q.n_seqs + 1, sizeof(int32_t));
    int32_t at = 0;
    for (int32_t g = 0; g < pr->n_groups; g++) {
        for (int64_t m = 0; m < pr->groups[g].count; m++, at++) {
            zg_group *G = &q.groups[at];
            *G = pr->groups[g];
            G->count = 1;
            G->members = malloc(sizeof(int64_t));
            G->members[0] = pr->groups[g].members[m];
            q.group_of[G->members[0]] = at;
        }
    }
    return q;
}

static void free_split(zg_problem *q) {
    for (int32_t g = 0; g < q->n_groups; g++) free(q->groups[g].members);
    free(q->groups), free(q->group_of);
}

ZG_TEST(filler_tree_matches_scan_bit_for_bit) {
    zg_rng rng = trng(20261201);
    int n_infeasible = 0, n_ok = 0, n_tied = 0;
    for (int trial = 0; trial < 600; trial++) {
        int32_t N = (int32_t)zg_rng_int(&rng, 1, trial % 7 == 0 ? 70 : 20);
        int32_t ng = (int32_t)zg_rng_int(&rng, 1, 5);
        double cap = zg_rng_range(&rng, 1.0, 4.0);
        int coarse = trial % 3 == 0;
        // zero prices: F = 0, scores of -infinity and NaN (never picked / the memory term)
        zg_problem pr = rand_fill_problem(&rng, N, ng, cap, coarse, trial % 11 == 5);
        zg_problem q = split_groups(&pr);
        // fill: a random subset of the groups (at least one), in a random order
        int32_t fa[8], nf = 0;
        for (int32_t g = 0; g < ng; g++)
            if (zg_rng_int(&rng, 0, 3) || (g == ng - 1 && nf == 0)) fa[nf++] = g;
        for (int32_t i = nf - 1; i > 0; i--) {
            int32_t j = (int32_t)zg_rng_int(&rng, 0, i), t = fa[i];
            fa[i] = fa[j], fa[j] = t;
        }
        int32_t *fb = calloc((size_t)q.n_groups + 1, sizeof(int32_t)), nfb = 0;
        for (int32_t i = 0; i < nf; i++) {
            int32_t first = 0;
            for (int32_t g = 0; g < fa[i]; g++) first += (int32_t)pr.groups[g].count;
            for (int64_t m = 0; m < pr.groups[fa[i]].count; m++) fb[nfb++] = first + (int32_t)m;
        }
        double *L = calloc(4 * (size_t)N, sizeof(double)), *H = L + N, *L2 = L + 2 * N,
               *H2 = L + 3 * N;
        int tight = trial % 4 == 1;
        for (int32_t r = 0; r < N; r++) {
            L[r] = coarse ? (double)zg_rng_int(&rng, 0, 3) : zg_rng_range(&rng, 0, 10);
            H[r] = coarse ? 0.25 * cap * (double)zg_rng_int(&rng, 0, 2)
                          : zg_rng_range(&rng, 0, (tight ? 0.95 : 0.5) * cap);
        }
        memcpy(L2, L, sizeof(double) * 2 * (size_t)N);
        int32_t *ca = calloc((size_t)pr.n_seqs + 1, sizeof(int32_t));
        int32_t *cb = calloc((size_t)pr.n_seqs + 1, sizeof(int32_t));
        for (int64_t s = 0; s < pr.n_seqs; s++) ca[s] = cb[s] = -7;
        zg_error ea, eb;
        zg_status sa = zel_filler_place(&pr, NULL, fa, nf, L, H, ca, &ea);
        zg_status sb = zel_filler_place(&q, NULL, fb, nfb, L2, H2, cb, &eb);
        CHECK_EQ_INT(sa, sb);
        if (sa == ZG_OK) {
            n_ok++;
            CHECK(memcmp(ca, cb, sizeof(int32_t) * (size_t)pr.n_seqs) == 0);
            CHECK(memcmp(L, L2, sizeof(double) * 2 * (size_t)N) == 0);
            for (int32_t r = 1; r < N; r++) n_tied += L[r] == L[r - 1];
        } else {
            n_infeasible++;
        }
        free(fb), free(L), free(ca), free(cb);
        free_split(&q);
        tprob_free(&pr);
    }
    CHECK(n_ok > 300);
    CHECK(n_infeasible > 0);
    CHECK(n_tied > 100);
}

// Hand-built: two ranks with equal scores take the fillers alternately from the lower one, and
// a rank without the memory is never picked.
ZG_TEST(filler_tree_known_choices) {
    int64_t cnt[1] = {4};
    zg_problem pr = tprob_shell(3, 10.0, 1, cnt, 'k');
    zg_group *G = &pr.groups[0];
    G->whole_time = 1.0;
    G->whole_mem = 1.0;
    G->opts = calloc(3, sizeof(zg_option));
    for (int32_t r = 0; r < 3; r++)
        G->opts[G->n_opts++] = (zg_option){(zg_config){1, 1, 1}, r, 1.0, 1.0};
    double L[3] = {0, 0, 0}, H[3] = {0, 0, 9.5};
    int32_t ch[4], fill[1] = {0};
    zg_error err;
    CHECK_OK(zel_filler_place(&pr, NULL, fill, 1, L, H, ch, &err), &err);
    CHECK_EQ_INT(ch[0], 0);
    CHECK_EQ_INT(ch[1], 1);
    CHECK_EQ_INT(ch[2], 0);
    CHECK_EQ_INT(ch[3], 1);
    CHECK(L[0] == 2.0 && L[1] == 2.0 && L[2] == 0.0);
    tprob_free(&pr);
}

// ---- (1) the column DP --------------------------------------------------------------------

// Plain restatement: f(p, k) in the pull form over every sub-content j of k (ascending), w(p, j)
// the least width >= every parent's width at which the stack of j fits (fastest options, else
// leanest), tried at every width; then the same bisection and decode as zel_column_incumbent.
typedef struct rcol {
    const zel_model *m;
    int32_t N, G, K, cnt[8], stride[8];
    int32_t *W, *pick;
    uint8_t *lean;
    double *A, *f;
} rcol;

static int32_t rdig(const rcol *c, int32_t k, int32_t g) {
    return (k / c->stride[g]) % (c->cnt[g] + 1);
}

static int32_t rblock(const zel_grp *G, int32_t p, int32_t w, int lean) {  // option, -1 none
    for (int32_t b = 0; b < G->n_blocks; b++) {
        const zel_opt *o = &G->opts[G->blk[b]];
        if (o->start == p && o->degree == w) return lean ? G->blk[b + 1] - 1 : G->blk[b];
    }
    return -1;
}

static double rcol_run(rcol *c, double T) {
    const zel_model *m = c->m;
    int32_t N = c->N, K = c->K;
    for (int32_t k = 0; k < K; k++) c->f[(size_t)N * K + k] = k ? INFINITY : 0;
    for (int32_t p = N - 1; p >= 0; p--) {
        int32_t *W = c->W + (size_t)p * K;
        W[0] = 0;
        for (int32_t j = 1; j < K; j++) {
            int32_t w0 = 1, dead = 0;
            for (int32_t g = 0; g < c->G; g++) {
                if (!rdig(c, j, g) || j == c->stride[g]) continue;
                int32_t pw = W[j - c->stride[g]];
                if (pw == 0) dead = 1;
                if (pw > w0) w0 = pw;
            }
            W[j] = 0;
            for (int32_t w = w0; !dead && p + w <= N && !W[j]; w++) {
                double l = -INFINITY, h = -INFINITY;
                for (int32_t r = p; r < p + w; r++) {
                    if (m->base_load[r] > l) l = m->base_load[r];
                    if (m->base_mem[r] > h) h = m->base_mem[r];
                }
                for (int lean = 0; lean < 2 && !W[j]; lean++) {
                    double t = 0, mem = h;
                    for (int32_t g = 0; g < c->G; g++) {
                        int32_t d = rdig(c, j, g);
                        if (!d) continue;
                        int32_t o = rblock(&m->grps[g], p, w, lean);
                        t += d * (o < 0 ? INFINITY : m->grps[g].opts[o].time);
                        mem += d * (o < 0 ? INFINITY : m->grps[g].opts[o].mem);
                    }
                    if (!(l + t <= T) || mem > m->mem_room) continue;
                    W[j] = w, c->A[(size_t)p * K + j] = t * w, c->lean[(size_t)p * K + j] = lean;
                }
            }
        }
        for (int32_t k = 0; k < K; k++) {
            double best = c->f[(size_t)(p + 1) * K + k];
            int32_t pick = -1;
            for (int32_t j = 1; j <= k; j++) {
                int sub = 1;
                for (int32_t g = 0; g < c->G && sub; g++) sub = rdig(c, j, g) <= rdig(c, k, g);
                if (!sub || !W[j]) continue;
                double v = c->A[(size_t)p * K + j] + c->f[(size_t)(p + W[j]) * K + (k - j)];
                if (v < best) best = v, pick = j;
            }
            c->f[(size_t)p * K + k] = best, c->pick[(size_t)p * K + k] = pick;
        }
    }
    return c->f[K - 1];
}

static int rcol_decode(const rcol *c, zel_sol *out) {
    const zel_model *m = c->m;
    int64_t next[8];
    for (int32_t g = 0; g < c->G; g++) next[g] = m->unit0[g];
    int32_t p = 0, k = c->K - 1;
    while (k > 0 && p < c->N) {
        int32_t j = c->pick[(size_t)p * c->K + k];
        if (j < 0) {
            p++;
            continue;
        }
        int32_t w = c->W[(size_t)p * c->K + j];
        for (int32_t g = 0; g < c->G; g++)
            for (int32_t n = rdig(c, j, g); n > 0; n--)
                out->opt[next[g]++] = rblock(&m->grps[g], p, w, c->lean[(size_t)p * c->K + j]);
        p += w, k -= j;
    }
    if (k != 0) return 0;
    zel_sol_canon(m, out);
    return zel_sol_eval(m, out->opt, NULL, NULL, &out->T, &out->K);
}

static int rcol_height(rcol *c, double T, double S, zel_sol *cand, zel_sol *out, int *found) {
    double a = rcol_run(c, T);
    if (!(a < INFINITY)) return 0;
    if (rcol_decode(c, cand) &&
        (!*found || cand->T < out->T || (cand->T == out->T && cand->K < out->K))) {
        zel_sol_copy(c->m, out, cand);
        *found = 1;
    }
    return (S + a) / c->N <= T * (1 + 1e-12);
}

static int ref_column(const zel_model *m, double lb, double ub, zel_sol *out) {
    out->T = INFINITY, out->K = 0;
    if (m->n_units == 0 || !(lb > 0) || !(ub > lb * (1 + 3e-3))) return 0;
    rcol c = {m, m->n_ranks, m->n_grps, 1, {0}, {0}, NULL, NULL, NULL, NULL, NULL};
    if (c.N < 1 || c.N > 64 || c.G < 1 || c.G > 8) return 0;
    int64_t pairs = 1;
    for (int32_t g = 0; g < c.G; g++) {
        int64_t n = m->grps[g].count;
        c.cnt[g] = (int32_t)n, c.stride[g] = c.K;
        if (n > 4096 || (int64_t)c.K * (n + 1) > 4096) return 0;
        c.K *= (int32_t)n + 1;
        pairs *= (n + 1) * (n + 2) / 2;
        if (pairs * (c.N + 1) > 400000) return 0;
    }
    size_t nk = (size_t)(c.N + 1) * c.K;
    c.W = calloc(nk, sizeof(int32_t)), c.pick = calloc(nk, sizeof(int32_t));
    c.lean = calloc(nk, 1), c.A = calloc(nk, sizeof(double)), c.f = calloc(nk, sizeof(double));
    zel_sol cand = {0};
    zel_sol_alloc(m, &cand, NULL);
    double S = m->extra_area;
    for (int32_t r = 0; r < c.N; r++) S += m->base_load[r];
    int found = 0;
    double lo = lb * (1 + 1e-5), hi = ub;
    if (!(hi < INFINITY)) {
        if (rcol_height(&c, lb, S, &cand, out, &found)) {
            hi = lb;
        } else {
            for (hi = 2 * lb; hi < 512 * lb && !rcol_height(&c, hi, S, &cand, out, &found); hi *= 2)
                lo = hi;
        }
    }
    for (int32_t step = 0; step < 5 && hi > lo * (1 + 3e-3); step++) {
        double T = 0.5 * (lo + hi);
        if (rcol_height(&c, T, S, &cand, out, &found)) hi = T;
        else lo = T;
        if (found && out->T < hi) hi = out->T;
    }
    zel_sol_free(&cand);
    free(c.W), free(c.pick), free(c.lean), free(c.A), free(c.f);
    return found;
}

// Random problem with several options per rank block (quantised: ties, lean != fast), some
// over the memory cap; every group has a whole option on rank 0.
static zg_problem rand_col_problem(zg_rng *rng, int32_t N, int32_t ng, int64_t maxc, int32_t *idx) {
    int64_t cnt[8];
    for (int32_t g = 0; g < ng; g++) cnt[g] = zg_rng_int(rng, 1, maxc), idx[g] = g;
    double cap = zg_rng_range(rng, 1.5, 4.0);
    zg_problem pr = tprob_shell(N, cap, ng, cnt, 'c');
    for (int32_t g = 0; g < ng; g++) {
        zg_group *G = &pr.groups[g];
        int32_t no = (int32_t)zg_rng_int(rng, 1, 4 * N);
        G->opts = calloc((size_t)no + 1, sizeof(zg_option));
        double w = (double)zg_rng_int(rng, 2, 20) * 0.5;
        G->opts[G->n_opts++] = (zg_option){{1, 1, 1}, 0, w, cap * 0.25};
        for (int32_t j = 0; j < no; j++) {
            zg_option *o = &G->opts[G->n_opts++];
            int32_t d = (int32_t)zg_rng_int(rng, 1, N < 8 ? N : 8);
            int32_t kind = (int32_t)zg_rng_int(rng, 0, 2);
            o->config = kind == 0 ? (zg_config){1, d, 1} : kind == 1 ? (zg_config){d, 1, 1}
                                                                     : (zg_config){1, 1, d};
            o->start = (int32_t)zg_rng_int(rng, 0, N - d);
            o->time = (double)zg_rng_int(rng, 2, 8) * w / (4.0 * d);
            o->mem = (double)zg_rng_int(rng, 1, 6) * cap / (4.0 * d);
        }
        G->whole_time = w;
        G->whole_mem = cap * 0.25;
    }
    return pr;
}

ZG_TEST(column_dp_matches_plain_restatement) {
    zg_rng rng = trng(42);
    int found = 0, lean_used = 0, runs = 0;
    for (int trial = 0; trial < 160; trial++) {
        int32_t N = (int32_t)zg_rng_int(&rng, 1, trial % 4 == 0 ? 24 : 12);
        int32_t ng = (int32_t)zg_rng_int(&rng, 1, trial % 5 == 0 ? 6 : 4);
        int32_t idx[8];
        zg_problem pr = trial % 3 == 2 ? trand_problem(&rng, N, ng, 4, idx)
                                       : rand_col_problem(&rng, N, ng, trial % 7 == 0 ? 9 : 3, idx);
        double bl[32], bm[32];
        int led = trial % 2;
        trand_ledgers(&rng, N, trial % 4 == 1, 5, pr.mem_room * 0.6, bl, bm);
        zel_model m;
        zg_error err;
        if (zel_model_build(&pr, idx, ng, led ? bl : NULL, led ? bm : NULL, &m, &err) != ZG_OK) {
            tprob_free(&pr);
            continue;
        }
        if (trial % 3 == 0) m.extra_area = zg_rng_range(&rng, 0.0, 2.0 * N);
        zel_sol a, b;
        CHECK_OK(zel_sol_alloc(&m, &a, &err), &err);
        CHECK_OK(zel_sol_alloc(&m, &b, &err), &err);
        double lb = zel_model_lower_bound(&m);
        double ubs[3] = {INFINITY, lb * 1.5, lb * 1.05};
        for (int u = 0; u < 3; u++) {
            runs++;
            int ga = zel_column_incumbent(&m, lb, ubs[u], &a);
            int gb = ref_column(&m, lb, ubs[u], &b);
            CHECK_MSG(ga == gb, "trial %d ub %d: %d vs %d", trial, u, ga, gb);
            CHECK(a.T == b.T || (isnan(a.T) && isnan(b.T)));
            if (!ga) continue;
            found++;
            CHECK(a.K == b.K);
            CHECK_MSG(!memcmp(a.opt, b.opt, sizeof(int32_t) * (size_t)m.n_units),
                      "trial %d ub %d: plans differ", trial, u);
            for (int64_t v = 0; v < m.n_units; v++) {
                const zel_grp *G = &m.grps[m.grp_of[v]];
                for (int32_t bk = 0; bk < G->n_blocks; bk++)
                    lean_used += a.opt[v] == G->blk[bk + 1] - 1 && G->blk[bk + 1] - 1 > G->blk[bk];
            }
        }
        zel_sol_free(&a), zel_sol_free(&b);
        zel_model_free(&m);
        tprob_free(&pr);
    }
    CHECK_MSG(found > 150, "found %d of %d", found, runs);
    CHECK_MSG(lean_used > 0, "lean %d", lean_used);
}

ZG_TEST_MAIN()
