// test_zel_speedups.c — the planner's constant-cost shortcuts (root bound with one breakpoint
// per block and a bounded sweep, counting-sorted options, incremental range maxima and skipped
// passes of the greedy incumbent, the fused objective, the fluid context's merge of moved
// ranks, the filler rule's division-free pre-check, the provable skips of the tile safety net
// and of stage-2 candidates) give exactly what the plain restatements in zel_speedref.h give,
// on a few hundred random models and problems each, plus hand-built cases with known values.
#include "zgtest.h"
#include "zel_testlib.h"
#include "zel_speedref.h"

// A random model: tprob_make (one option per block) or rprob_make (several per block, ties,
// duplicates), over zero or random ledgers (some integer loads: equal breakpoints), with or
// without fluid area and fluid memory. Free with tmodel_free (also after a failed build).
static zg_status rand_model(zg_rng *rng, int trial, tmodel *t, zg_error *err) {
    int32_t N = (int32_t)zg_rng_int(rng, 1, 24), ng = (int32_t)zg_rng_int(rng, 1, 6);
    double cap = zg_rng_range(rng, 1.0, 4.0);
    if (trial % 2) {
        tgroup tg[8];
        for (int32_t g = 0; g < ng; g++) tg[g] = tgroup_rand(rng, zg_rng_int(rng, 1, 4));
        if (trial % 4 == 1)
            for (int32_t g = 1; g < ng; g++) tg[g].w = tg[0].w;  // equal breakpoints
        t->pr = tprob_make(N, cap, tg, ng, N < 8 ? N : 8, (int)zg_rng_int(rng, 0, 1));
    } else {
        t->pr = rprob_make(rng, N, ng, cap, 3 * N);
    }
    for (int32_t g = 0; g < ng; g++) t->idx[g] = ng - 1 - g;  // not the problem's order
    double bl[32], bm[32];
    int led = trial % 3;
    trand_ledgers(rng, N, led == 1, 10, cap * 0.8, bl, bm);
    zg_status st =
        zel_model_build(&t->pr, t->idx, ng, led ? bl : NULL, led ? bm : NULL, &t->m, err);
    if (!st && trial % 5 < 3) t->m.extra_area = zg_rng_range(rng, 0.0, 3.0 * N);
    if (!st && trial % 5 == 1) t->m.fill_mem = zg_rng_range(rng, 0.1, 2.0 * N * cap);
    return st;
}

ZG_TEST(zel_speedups_lower_bound_matches_plain_sweep) {
    zg_rng rng = trng(20261130);
    int finite = 0, above_fixed = 0;
    for (int trial = 0; trial < 400; trial++) {
        tmodel t;
        zg_error err;
        CHECK_OK(rand_model(&rng, trial, &t, &err), &err);
        zel_model *m = &t.m;
        double got = zel_model_lower_bound(m), want = ref_lower_bound(m);
        zel_model fixed = *m;  // the same model without groups: the fixed-load part alone
        fixed.n_grps = 0;
        double base = ref_lower_bound(&fixed);
        finite += want < INFINITY;
        above_fixed += want > base;
        int same = !memcmp(&got, &want, sizeof got) ||
                   (want < INFINITY && fabs(got - want) <= 1e-12 * fabs(want));
        CHECK_MSG(same, "trial %d (N %d, %d groups): bound %.17g, plain sweep %.17g", trial,
                  m->n_ranks, m->n_grps, got, want);
        tmodel_free(&t);
    }
    // the sweep decided most bounds (not only the fixed loads), and most models are feasible
    CHECK_MSG(finite > 300 && above_fixed > 200, "finite %d, above the fixed part %d", finite,
              above_fixed);
}

// One group of `count` units on 2 ranks: a whole option of time w on each rank and one option
// of degree 2 and time 0.6 (area 1.2). The bound's sweep starts at that option (e = 0.6) with
// area level 1.2 and passes the whole options' breakpoint w only when w < 1.2.
static zg_problem pair_problem(double w, int64_t count) {
    tgroup tg = {count, w, 0, 1};
    zg_problem pr = tprob_make(2, 10, &tg, 1, 1, 0);  // room for 3 options
    zg_group *G = &pr.groups[0];
    G->opts[G->n_opts++] = (zg_option){{1, 2, 1}, 0, 0.6, 0.6};
    return pr;
}

ZG_TEST(zel_speedups_lower_bound_hand_values) {
    // w: exact bound (two units: whole on both ranks, or both split at 1.2 each)
    static const double w[4] = {1.0, 1.1, 1.3, 1.2 - 1e-9}, want[4] = {1.0, 1.1, 1.2, 1.2 - 1e-9};
    for (int i = 0; i < 4; i++) {
        zg_problem pr = pair_problem(w[i], 2);
        int32_t idx = 0;
        zel_model m;
        zg_error err;
        CHECK_OK(zel_model_build(&pr, &idx, 1, NULL, NULL, &m, &err), &err);
        double lb = zel_model_lower_bound(&m);
        CHECK_MSG(lb == want[i], "w %.17g: bound %.17g, want %.17g", w[i], lb, want[i]);
        CHECK(ref_lower_bound(&m) == want[i]);
        // rank 1 nearly full: only rank 0's whole option fits (memory 1 + 9.5 and 0.6 + 9.5 > 10)
        double bm[2] = {0, 9.5}, bl[2] = {0, 0};
        zel_model m2;
        CHECK_OK(zel_model_build(&pr, &idx, 1, bl, bm, &m2, &err), &err);
        CHECK_MSG(zel_model_lower_bound(&m2) == w[i], "memory-tight w %.17g: %.17g", w[i],
                  zel_model_lower_bound(&m2));
        zel_model_free(&m2);
        zel_model_free(&m);
        tprob_free(&pr);
    }
}

ZG_TEST(zel_speedups_model_options_sorted_and_pareto) {
    zg_rng rng = trng(77);
    int multi = 0;  // groups with a block of several kept options (the in-block order matters)
    for (int trial = 0; trial < 200; trial++) {
        tmodel t;
        zg_error err;
        CHECK_OK(rand_model(&rng, trial, &t, &err), &err);
        zel_model *m = &t.m;
        const zg_problem *pr = &t.pr;
        for (int32_t i = 0; i < m->n_grps; i++) {
            const zel_grp *G = &m->grps[i];
            zel_opt *want = malloc(sizeof(zel_opt) * (size_t)(pr->groups[G->g].n_opts + 1));
            int32_t k = ref_model_opts(pr, G->g, want);
            CHECK_MSG(G->n_opts == k, "trial %d group %d: %d options, reference %d", trial,
                      G->g, G->n_opts, k);
            int32_t nb = 0, nw = 0;
            double ma = INFINITY;
            for (int32_t j = 0; j < k; j++) {
                const zel_opt *a = &G->opts[j], *b = &want[j];
                CHECK_MSG(a->src == b->src && a->start == b->start && a->degree == b->degree &&
                              a->split == b->split && a->time == b->time && a->mem == b->mem &&
                              a->area == b->area,
                          "trial %d group %d option %d: src %d, reference src %d", trial, G->g,
                          j, a->src, b->src);
                if (j == 0 || b->start != want[j - 1].start || b->degree != want[j - 1].degree) {
                    CHECK_MSG(nb < G->n_blocks && G->blk[nb] == j, "trial %d: block %d", trial,
                              nb);
                    nb++;
                } else {
                    multi++;
                }
                if (b->degree == 1) nw = j + 1;
                if (b->area < ma) ma = b->area;
            }
            CHECK_EQ_INT(G->n_blocks, nb);
            CHECK_EQ_INT(G->blk[nb], k);
            CHECK_EQ_INT(G->n_whole, nw);
            CHECK(G->min_area == ma);
            free(want);
        }
        tmodel_free(&t);
    }
    CHECK_MSG(multi > 200, "only %d options shared a block", multi);
}

// The greedy incumbent (incremental range maxima, skipped ladder passes, the fused objective
// with its early exit) and the 1-opt descent against the plain passes of zel_speedref.h: the
// same solution bit for bit; and zel_objective against its definition.
ZG_TEST(zel_speedups_greedy_and_descent_match_plain_passes) {
    zg_rng rng = trng(31337);
    int found = 0, moved = 0;
    for (int trial = 0; trial < 300; trial++) {
        tmodel t;
        zg_error err;
        CHECK_OK(rand_model(&rng, trial, &t, &err), &err);
        zel_model *m = &t.m;
        zel_sol a, b;
        CHECK(tsols(m, &a, &b, NULL));
        double lb = zel_model_lower_bound(m);
        int fa = zel_heuristic(m, lb, &a), fb = ref_heuristic(m, lb, &b);
        size_t nu = sizeof(int32_t) * (size_t)(m->n_units > 0 ? m->n_units : 1);
        CHECK_MSG(fa == fb, "trial %d: found %d, reference %d", trial, fa, fb);
        if (fa) {
            found++;
            CHECK_MSG(!memcmp(&a.T, &b.T, sizeof a.T) && a.K == b.K && !memcmp(a.opt, b.opt, nu),
                      "trial %d (N %d): greedy T %.17g K %lld, plain %.17g K %lld", trial,
                      m->n_ranks, a.T, (long long)a.K, b.T, (long long)b.K);
            // the descent from a random feasible start (the greedy's, units nudged up)
            for (int64_t u = 0; u < m->n_units; u++) {
                int32_t no = m->grps[m->grp_of[u]].n_opts;
                if (zg_rng_int(&rng, 0, 2) == 0) a.opt[u] = (int32_t)zg_rng_int(&rng, 0, no - 1);
            }
            zel_sol_canon(m, &a);
            if (zel_sol_eval(m, a.opt, NULL, NULL, &a.T, &a.K)) {
                zel_sol_copy(m, &b, &a);
                double t0 = a.T;
                zel_local_improve(m, &a, 50);
                ref_local_improve(m, &b, 50);
                moved += a.T < t0;
                CHECK_MSG(!memcmp(&a.T, &b.T, sizeof a.T) && a.K == b.K &&
                              !memcmp(a.opt, b.opt, nu),
                          "trial %d: descent T %.17g K %lld, plain %.17g K %lld", trial, a.T,
                          (long long)a.K, b.T, (long long)b.K);
            }
        }
        double L[24], H[24];
        for (int32_t r = 0; r < m->n_ranks; r++)
            L[r] = zg_rng_range(&rng, 0, 10), H[r] = zg_rng_range(&rng, 0, m->mem_room * 1.1);
        double o1 = zel_objective(m, L, H, NULL), o2 = ref_objective(m, L, H);
        CHECK_MSG(!memcmp(&o1, &o2, sizeof o1), "trial %d: objective %.17g, definition %.17g",
                  trial, o1, o2);
        tsols_free(&a, &b, NULL);
        tmodel_free(&t);
    }
    CHECK_MSG(found > 180 && moved > 60, "found %d, descents that moved %d", found, moved);
}

// Changes k random blocks of L, H (quantised: equal breakpoints and unchanged ranks).
static void nudge(zg_rng *rng, int32_t N, int32_t k, int quant, double *L, double *H) {
    for (int32_t q = 0; q < k; q++) {
        int32_t st = (int32_t)zg_rng_int(rng, 0, N - 1), d = (int32_t)zg_rng_int(rng, 1, 4);
        double dt = quant ? (double)zg_rng_int(rng, -1, 1) : zg_rng_range(rng, -1.5, 1.5);
        double dm = quant ? 4.0 * (double)zg_rng_int(rng, -1, 1) : zg_rng_range(rng, -2, 2);
        for (int32_t r = st; r < st + d && r < N; r++) {
            L[r] += dt, H[r] += dm;
            if (L[r] < 0) L[r] = 0;
        }
    }
}

ZG_TEST(zel_speedups_fluid_ctx_merge_matches_full_sort) {
    zg_rng rng = trng(4711);
    int64_t calls = 0, children = 0, finite = 0;
    for (int trial = 0; trial < 120; trial++) {
        int32_t N = (int32_t)zg_rng_int(&rng, 1, 40);
        zel_model m;
        memset(&m, 0, sizeof m);
        m.n_ranks = N, m.mem_room = 10;
        m.extra_area = zg_rng_range(&rng, 5, 55), m.fill_mem = zg_rng_range(&rng, 1, 21);
        double L[40], H[40], L1[40], H1[40];
        int quant = trial % 2;
        for (int32_t r = 0; r < N; r++) {
            L[r] = quant ? (double)zg_rng_int(&rng, 0, 3) : zg_rng_range(&rng, 0, 10);
            H[r] = quant ? 4.0 * (double)zg_rng_int(&rng, 0, 2) : zg_rng_range(&rng, 0, 12);
        }
        zel_fluid_ctx f;
        CHECK(zel_fluid_ctx_init(&f, &m));
        for (int step = 0; step < 40; step++) {
            int32_t k = (int32_t)zg_rng_int(&rng, 0, 3);  // few moved ranks: the merge
            if (step % 10 == 9) k = N;                    // many: the full sort
            nudge(&rng, N, k, quant, L, H);
            zel_fluid_ctx_set(&f, &m, L, H);
            calls++;
            int bad = ref_fluid_ctx_check(&f, &m, L, H);
            CHECK_MSG(!bad, "trial %d step %d (N %d): context differs from a full sort (%d)",
                      trial, step, N, bad);
            for (int c = 0; c < 3; c++) {
                int32_t d = (int32_t)zg_rng_int(&rng, 1, N < 4 ? N : 4);
                zel_opt o = {0, (int32_t)zg_rng_int(&rng, 0, N - d), d, d > 1,
                             zg_rng_range(&rng, 0, 3), zg_rng_range(&rng, 0, 3), 0};
                o.area = o.time * d;
                double more = c == 0 ? 0 : zg_rng_range(&rng, 0, 10);
                memcpy(L1, L, sizeof(double) * (size_t)N);
                memcpy(H1, H, sizeof(double) * (size_t)N);
                for (int32_t r = o.start; r < o.start + d; r++) L1[r] += o.time, H1[r] += o.mem;
                double got = zel_fluid_T_child(&f, &m, L, H, &o, more);
                double want = zel_fluid_T_more(&m, L1, H1, more);
                children++;
                finite += want < INFINITY;
                CHECK_MSG(got == want || fabs(got - want) <= 1e-9 * fabs(want),
                          "trial %d step %d: child %.17g, direct %.17g", trial, step, got, want);
            }
        }
        zel_fluid_ctx_free(&f);
    }
    CHECK(calls == 4800 && finite > children / 2);
}

// Slows every option down by its own factor in [1, 1.5) (ranks of unequal speed): the fastest
// option of a degree then depends on the tile.
static void perturb_times(zg_rng *rng, zg_problem *pr) {
    for (int32_t g = 0; g < pr->n_groups; g++)
        for (int32_t j = 0; j < pr->groups[g].n_opts; j++)
            pr->groups[g].opts[j].time *= zg_rng_range(rng, 1.0, 1.5);
}

// Two-stage runs on small random problems, compared with ref_two_stage (every stage-2
// candidate placed, the tile safety net always run): the same plan bit for bit, and never
// slower than the best disjoint-tile plan. Counts how often a later candidate or the tile plan
// won, so that the skips were put to the test.
ZG_TEST(zel_speedups_two_stage_skips_never_drop_a_winner) {
    zg_rng rng = trng(99);
    zg_plan_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.opts.anchor_nodes = zg_budget_nodes(300);
    ctx.opts.anchor_lns_nodes = zg_budget_nodes(0);
    ctx.opts.eps = 1e-3;
    int n = 0, later = 0, tile = 0, several = 0;
    for (int trial = 0; trial < 400; trial++) {
        int32_t N = (int32_t)zg_rng_int(&rng, 2, trial % 3 ? 8 : 16);
        int32_t ng = (int32_t)zg_rng_int(&rng, 2, 6);
        tgroup tg[8];
        for (int32_t g = 0; g < ng; g++) tg[g] = tgroup_rand(&rng, zg_rng_int(&rng, 1, 6));
        if (trial % 4 == 0) tg[0].w *= 8, tg[0].count = 1;  // one long anchor
        double cap = zg_rng_range(&rng, 1.5, trial % 2 ? 30.0 : 4.0);
        zg_problem pr = tprob_make(N, cap, tg, ng, N, (int)zg_rng_int(&rng, 0, 1));
        if (trial % 2) perturb_times(&rng, &pr);
        zel_result res;
        zg_error err;
        zg_status st = zel_two_stage(&ctx, &pr, NULL, NULL, &res, &err);
        int32_t *ch = calloc((size_t)pr.n_seqs + 1, sizeof(int32_t));
        double ms;
        int32_t udeg, kw, placed;
        zg_status rst = ref_two_stage(&ctx, &pr, ch, &ms, &udeg, &kw, &placed);
        CHECK_MSG(st == rst, "trial %d: status %d, reference %d", trial, (int)st, (int)rst);
        if (!st) {
            n++;
            later += udeg == 0 && kw > 0;
            tile += udeg > 0;
            several += placed > 1;
            CHECK_MSG(!memcmp(&res.makespan, &ms, sizeof ms) && res.uniform_degree == udeg,
                      "trial %d (N %d): makespan %.17g (tile degree %d), reference %.17g "
                      "(tile degree %d, candidate %d)",
                      trial, N, res.makespan, res.uniform_degree, ms, udeg, kw);
            CHECK_MSG(!memcmp(res.choice, ch, sizeof(int32_t) * (size_t)pr.n_seqs),
                      "trial %d: choices differ", trial);
            int32_t d;
            double u = zel_uniform_best(&pr, ch, &d);
            CHECK_MSG(res.makespan <= u * (1 + 1e-9), "trial %d: %.17g slower than tiles %.17g",
                      trial, res.makespan, u);
            free(res.choice);
        }
        free(ch);
        tprob_free(&pr);
    }
    fprintf(stderr, "\n  two-stage: %d plans, %d won by a later candidate, %d by the tiles, "
            "%d with several candidates placed\n", n, later, tile, several);
    CHECK(n > 250 && later > 2 && tile > 20);
}

// Two anchors (whole prices 3 and 5) and one filler (1) on 2 ranks, no split overhead: every
// two-stage plan keeps the filler whole, so its best is 5 (3 + 1 | 5), while splitting all
// three sequences over both ranks gives (3 + 5 + 1) / 2 = 4.5: the tile plan of degree 2 must
// win, so its bound must not skip it.
ZG_TEST(zel_speedups_tile_plan_wins_hand_built) {
    tgroup tg[3] = {{1, 3, 0, 1.5}, {1, 5, 0, 1}, {1, 1, 0, 0.5}};
    zg_problem pr = tprob_make(2, 4, tg, 3, 2, 1);
    zg_plan_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.opts.eps = 1e-3;
    zel_result res;
    zg_error err;
    CHECK_OK(zel_two_stage(&ctx, &pr, NULL, NULL, &res, &err), &err);
    CHECK_EQ_INT(res.n_anchor_groups, 2);
    CHECK_EQ_INT(res.uniform_degree, 2);
    CHECK(res.makespan == 4.5);
    for (int64_t q = 0; q < pr.n_seqs; q++)
        CHECK_EQ_INT(zg_option_degree(&pr.groups[pr.group_of[q]].opts[res.choice[q]]), 2);
    CHECK(zel_choice_makespan(&pr, res.choice, NULL, NULL) == 4.5);
    free(res.choice);
    tprob_free(&pr);
}

// Stage 2 (the §5.3 rule with its division-free pre-check, the split fallback, the memory-first
// retry and the repair) against ref_filler_place: the same choices and ledgers bit for bit.
// Stage 2 (zel_filler_place) and its plain restatement (ref_filler_place) from the same
// ledgers (L1 = L2 and H1 = H2 on entry), their options in c1 and c2, statuses in *s1, *s2.
static void place_both(const zg_problem *pr, const int32_t *fill, int32_t ng, double *L1,
                       double *H1, double *L2, double *H2, int32_t *c1, int32_t *c2,
                       zg_status *s1, zg_status *s2) {
    zg_error err;
    *s1 = zel_filler_place(pr, NULL, fill, ng, L1, H1, c1, &err);
    *s2 = ref_filler_place(pr, fill, ng, L2, H2, c2);
}

// 1 if two stage-2 runs left the same loads, memory and options (bit for bit).
static int same_plan(const double *L1, const double *L2, const double *H1, const double *H2,
                     const int32_t *c1, const int32_t *c2, int32_t N, int64_t n_seqs) {
    return !memcmp(L1, L2, sizeof(double) * (size_t)N) &&
           !memcmp(H1, H2, sizeof(double) * (size_t)N) &&
           !memcmp(c1, c2, sizeof(int32_t) * (size_t)n_seqs);
}

ZG_TEST(zel_speedups_filler_place_matches_plain_rule) {
    zg_rng rng = trng(2024);
    int infeasible = 0, split = 0, dense = 0;
    for (int trial = 0; trial < 300; trial++) {
        int32_t N = (int32_t)zg_rng_int(&rng, 1, 24), ng = (int32_t)zg_rng_int(&rng, 1, 8);
        tgroup tg[8];
        int32_t fill[8];
        for (int32_t g = 0; g < ng; g++) {
            tg[g] = tgroup_rand(&rng, zg_rng_int(&rng, 1, 12));
            fill[g] = ng - 1 - g;
        }
        if (trial % 3 == 0)
            for (int32_t g = 1; g < ng; g++) tg[g].w = tg[0].w;  // equal prices and scores
        double cap = zg_rng_range(&rng, 1.0, trial % 2 ? 40.0 : 6.0);
        zg_problem pr = tprob_make(N, cap, tg, ng, N < 8 ? N : 8, (int)zg_rng_int(&rng, 0, 1));
        if (trial % 4 == 3) perturb_times(&rng, &pr);
        double L1[24], H1[24], L2[24], H2[24], L0[24], H0[24];
        for (int32_t r = 0; r < N; r++) {
            L1[r] = L2[r] = trial % 5 ? zg_rng_range(&rng, 0, 20) : (double)zg_rng_int(&rng, 0, 2);
            H1[r] = H2[r] = trial % 5 ? zg_rng_range(&rng, 0, cap * 0.5) : 0;
            L0[r] = L1[r], H0[r] = H1[r];
        }
        int32_t *c1 = calloc((size_t)pr.n_seqs + 1, sizeof(int32_t));
        int32_t *c2 = calloc((size_t)pr.n_seqs + 1, sizeof(int32_t));
        zg_status s1, s2;
        place_both(&pr, fill, ng, L1, H1, L2, H2, c1, c2, &s1, &s2);
        CHECK_MSG(s1 == s2, "trial %d: status %d, reference %d", trial, (int)s1, (int)s2);
        infeasible += s1 != ZG_OK;
        if (!s1) {
            CHECK_MSG(!memcmp(L1, L2, sizeof(double) * (size_t)N) &&
                          !memcmp(H1, H2, sizeof(double) * (size_t)N),
                      "trial %d (N %d): ledgers differ", trial, N);
            for (int64_t q = 0; q < pr.n_seqs; q++) {
                CHECK_MSG(c1[q] == c2[q], "trial %d: sequence %lld option %d, reference %d",
                          trial, (long long)q, c1[q], c2[q]);
                split += zg_option_degree(&pr.groups[pr.group_of[q]].opts[c1[q]]) > 1;
            }
        }
        // stage 2 by density: its tournament tree against the plain scan, from the same ledgers
        for (int32_t r = 0; r < N; r++) L1[r] = L2[r] = L0[r], H1[r] = H2[r] = H0[r];
        zg_error err;
        zg_status d1 = zel_filler_place_dense(&pr, NULL, fill, ng, L1, H1, c1, &err);
        zg_status d2 = ref_place(&pr, fill, ng, L2, H2, c2, 2);
        CHECK_MSG(d1 == d2, "trial %d: dense status %d, reference %d", trial, (int)d1, (int)d2);
        if (!d1) {
            dense++;
            CHECK_MSG(same_plan(L1, L2, H1, H2, c1, c2, N, pr.n_seqs),
                      "trial %d (N %d): the plans by density differ", trial, N);
        }
        free(c1), free(c2);
        tprob_free(&pr);
    }
    CHECK_MSG(infeasible > 0 && infeasible < 100 && split > 0 && dense > 150,
              "infeasible %d, split %d, by density %d", infeasible, split, dense);
}

// Whole times on a small integer grid and integer loads: trades of exchange() can tie on
// their new maximum, and the sorted scans of stage2/filler.c must break those ties as the plain
// scan in type order does. Such ties are rare even here; the first two seeds give instances
// where a wrong tie rule changes the plan in each family of trades (checked by breaking each
// rule). The third thousand starts every rank at load 0 with memory apart: many ranks price
// alike (exchange() prices one of them), and an identity test that ignored memory or the
// ranks' fillers changes plans there (checked the same way).
ZG_TEST(zel_speedups_exchange_ties_match_plain_rule) {
    zg_rng rng;
    int placed = 0;
    for (int trial = 0; trial < 3000; trial++) {
        if (trial % 1000 == 0) zg_rng_init(&rng, trial == 0 ? 2 : trial == 1000 ? 77 : 5);
        int twins = trial >= 2000;
        int32_t N = (int32_t)zg_rng_int(&rng, twins ? 4 : 2, twins ? 12 : 4);
        int32_t ng = (int32_t)zg_rng_int(&rng, 2, 8);
        tgroup tg[8];
        int32_t fill[8];
        for (int32_t g = 0; g < ng; g++) {
            tg[g] = tgroup_rand(&rng, zg_rng_int(&rng, 1, 12));
            tg[g].w = (double)zg_rng_int(&rng, 1, 3);
            tg[g].mem = 0.25 * (double)zg_rng_int(&rng, 1, 6);
            fill[g] = g;
        }
        double cap = 0.25 * (double)zg_rng_int(&rng, 24, 60);
        zg_problem pr = tprob_make(N, cap, tg, ng, 1, 0);
        double L1[16], H1[16], L2[16], H2[16];
        for (int32_t r = 0; r < N; r++) {
            L1[r] = L2[r] = (double)zg_rng_int(&rng, 0, twins ? 0 : 6);
            H1[r] = H2[r] = 0.25 * (double)zg_rng_int(&rng, 0, twins ? 40 : 8);
        }
        int32_t *c1 = calloc((size_t)pr.n_seqs + 1, sizeof(int32_t));
        int32_t *c2 = calloc((size_t)pr.n_seqs + 1, sizeof(int32_t));
        zg_status s1, s2;
        place_both(&pr, fill, ng, L1, H1, L2, H2, c1, c2, &s1, &s2);
        CHECK_MSG(s1 == s2 && (s1 || same_plan(L1, L2, H1, H2, c1, c2, N, pr.n_seqs)),
                  "trial %d (N %d): status %d, reference %d, or the plans differ", trial, N,
                  (int)s1, (int)s2);
        placed += s1 == ZG_OK;
        free(c1), free(c2);
        tprob_free(&pr);
    }
    CHECK_MSG(placed > 1600, "placed %d", placed);
}

ZG_TEST_MAIN()
