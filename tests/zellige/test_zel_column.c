// test_zel_column.c — the column-structured incumbents of stage 1 (search/column.c): the DP's plan
// is within its bisection tolerance of the best column structure (brute force over every column
// structure, ledgers included), legal, evaluated, canonical and deterministic; the layer moves
// never make a plan worse and improve some, and so do the leftover layouts; the nested columns
// (zel_column_nested) are legal and deterministic, reach nests no column structure has, and
// beat the plain columns on some random models; out-of-range models are declined.
#include "zgtest.h"
#include "zel_testlib.h"

static int legal(const zel_model *m, const zel_sol *s) {
    for (int64_t u = 0; u < m->n_units; u++)
        if (s->opt[u] < 0 || s->opt[u] >= m->grps[m->grp_of[u]].n_opts) return 0;
    double T;
    int64_t K;
    return zel_sol_eval(m, s->opt, NULL, NULL, &T, &K) && T == s->T && K == s->K;
}

// Brute force over column structures: from rank p with rem[g] units left, leave rank p empty or
// open a column [p, p + w) holding j[g] <= rem[g] units of every group, each on an option of
// exactly that block (any of the block's options, the same for a group's units of the column).
typedef struct brute {
    const zel_model *m;
    int32_t *opt;
    int64_t next[8];
    double best;
} brute;

static void brute_cols(brute *b, int32_t p, int64_t *rem);

static void brute_fill(brute *b, int32_t p, int32_t w, int64_t *rem, int32_t g) {
    const zel_model *m = b->m;
    if (g == m->n_grps) {
        brute_cols(b, p + w, rem);  // (an empty column is a skip of w ranks: same minimum)
        return;
    }
    brute_fill(b, p, w, rem, g + 1);  // none of group g in this column
    const zel_grp *G = &m->grps[g];
    int64_t save = b->next[g], r0 = rem[g];
    for (int32_t o = 0; o < G->n_opts; o++) {
        if (G->opts[o].start != p || G->opts[o].degree != w) continue;
        for (int64_t n = 1; n <= r0; n++) {
            b->opt[save + n - 1] = o;
            b->next[g] = save + n;
            rem[g] = r0 - n;
            brute_fill(b, p, w, rem, g + 1);
        }
        b->next[g] = save, rem[g] = r0;
    }
}

static void brute_cols(brute *b, int32_t p, int64_t *rem) {
    const zel_model *m = b->m;
    int64_t left = 0;
    for (int32_t g = 0; g < m->n_grps; g++) left += rem[g];
    if (left == 0) {
        double T;
        int64_t K;
        if (zel_sol_eval(m, b->opt, NULL, NULL, &T, &K) && T < b->best) b->best = T;
        return;
    }
    if (p >= m->n_ranks) return;
    brute_cols(b, p + 1, rem);
    for (int32_t w = 1; p + w <= m->n_ranks; w++) brute_fill(b, p, w, rem, 0);
}

static double brute_column_best(const zel_model *m) {
    brute b = {m, calloc((size_t)m->n_units + 1, sizeof(int32_t)), {0}, INFINITY};
    int64_t rem[8];
    for (int32_t g = 0; g < m->n_grps; g++) rem[g] = m->grps[g].count, b.next[g] = m->unit0[g];
    brute_cols(&b, 0, rem);
    free(b.opt);
    return b.best;
}

// With the plain fluid objective (fill_mem = 0) and areas growing with the degree (as in every
// test problem), the DP's plan is the best column structure up to its bisection tolerance (with
// and without an incumbent's T as the upper end).
ZG_TEST(column_dp_vs_brute_force_over_columns) {
    zg_rng rng;
    zg_rng_init(&rng, 5);
    int checked = 0, found_all = 1;
    for (int trial = 0; trial < 240; trial++) {
        int32_t N = (int32_t)zg_rng_int(&rng, 2, 6);
        int32_t ng = (int32_t)zg_rng_int(&rng, 1, 3);
        int32_t idx[8];
        zg_problem pr = trand_problem(&rng, N, ng, 3, idx);
        double base[8], bmem[8];
        for (int32_t r = 0; r < N; r++) {  // ledgers on half the trials (the layer moves)
            base[r] = trial % 2 ? zg_rng_range(&rng, 0.0, 3.0) : 0;
            bmem[r] = trial % 2 ? zg_rng_range(&rng, 0.0, 0.3) * pr.mem_cap : 0;
        }
        zel_model m;
        zg_error err;
        CHECK_OK(zel_model_build(&pr, idx, ng, base, bmem, &m, &err), &err);
        m.extra_area = trial % 3 ? zg_rng_range(&rng, 0.0, 3.0 * N) : 0;
        double best = brute_column_best(&m);
        zel_sol s;
        CHECK_OK(zel_sol_alloc(&m, &s, &err), &err);
        double lb = zel_model_lower_bound(&m), ub = INFINITY;
        zel_sol h;
        CHECK_OK(zel_sol_alloc(&m, &h, &err), &err);
        if (trial % 4 && zel_heuristic(&m, lb, &h)) ub = h.T;  // as stage 1 calls it
        zel_sol_free(&h);
        int got = zel_column_incumbent(&m, lb, ub, &s);
        if (got) {
            CHECK(legal(&m, &s));
            CHECK(tsol_canonical(&m, &s));
            CHECK(s.T >= best * (1 - 1e-9));  // a column plan: never below the best one
        }
        if (best < INFINITY) {
            // the bisection ends within 3e-3 relative or after 5 halvings of its bracket
            // [lb, ub] (no incumbent: [h, 2h] around the best, so 2h - h <= best); it looks
            // below ub only (a column plan at ub is no better than the caller's incumbent)
            double bracket = ub < INFINITY ? ub - lb : best;
            double slack = fmax(3e-3 * best, bracket / 32) + 1e-9 * best;
            if (best + slack < ub) {
                found_all &= got;
                CHECK_MSG(got && s.T <= best + slack,
                          "trial %d: dp %.12g (found %d), best column plan %.12g (lb %.12g, ub "
                          "%.12g)", trial, s.T, got, best, lb, ub);
                checked++;
            }
        }
        zel_sol_free(&s);
        zel_model_free(&m);
        tprob_free(&pr);
    }
    CHECK(found_all);
    CHECK_MSG(checked >= 90, "checked %d", checked);
}

// A random model on 6..24 ranks with 2..max_groups groups of up to max_count units; odd trials
// add the memory-aware fluid (extra_area, fill_mem). Free with zel_model_free and tprob_free.
static zg_status rand_model(zg_rng *rng, int trial, int32_t max_groups, int64_t max_count,
                            zg_problem *pr, zel_model *m, zg_error *err) {
    int32_t N = (int32_t)zg_rng_int(rng, 6, 24);
    int32_t ng = (int32_t)zg_rng_int(rng, 2, max_groups);
    int32_t idx[8];
    *pr = trand_problem(rng, N, ng, max_count, idx);
    zg_status st = zel_model_build(pr, idx, ng, NULL, NULL, m, err);
    if (!st && trial % 2) {
        m->extra_area = zg_rng_range(rng, 0.0, 4.0 * N);
        m->fill_mem = m->extra_area > 0 ? zg_rng_range(rng, 0.2, 0.5) * N * pr->mem_cap : 0;
    }
    return st;
}

// Memory-aware fluid (fill_mem > 0), larger models: legal, evaluated, canonical, deterministic,
// never above the incumbent it was given when it returns a plan; the layer moves never worse.
ZG_TEST(column_incumbent_and_layers_legal_deterministic) {
    zg_rng rng;
    zg_rng_init(&rng, 9);
    int runs = 0, dp_better = 0, layers_better = 0;
    for (int trial = 0; trial < 60; trial++) {
        zg_problem pr;
        zel_model m;
        zg_error err;
        CHECK_OK(rand_model(&rng, trial, 4, 5, &pr, &m, &err), &err);
        zel_sol g0, a, b;
        CHECK_OK(zel_sol_alloc(&m, &g0, &err), &err);
        CHECK_OK(zel_sol_alloc(&m, &a, &err), &err);
        CHECK_OK(zel_sol_alloc(&m, &b, &err), &err);
        double lb = zel_model_lower_bound(&m);
        if (zel_heuristic(&m, lb, &g0)) {
            runs++;
            int ga = zel_column_incumbent(&m, lb, g0.T, &a);
            int gb = zel_column_incumbent(&m, lb, g0.T, &b);
            CHECK_EQ_INT(ga, gb);
            if (ga) {
                CHECK(a.T == b.T && !memcmp(a.opt, b.opt, sizeof(int32_t) * (size_t)m.n_units));
                CHECK(legal(&m, &a));
                CHECK(tsol_canonical(&m, &a));
                CHECK(a.T >= lb * (1 - 1e-12));
                dp_better += a.T < g0.T * (1 - 1e-9);
            }
            zel_sol_copy(&m, &a, &g0);
            zel_sol_copy(&m, &b, &g0);
            int ia = zel_column_improve(&m, lb, &a);
            int ib = zel_column_improve(&m, lb, &b);
            CHECK_EQ_INT(ia, ib);
            CHECK(a.T == b.T && !memcmp(a.opt, b.opt, sizeof(int32_t) * (size_t)m.n_units));
            CHECK_MSG(a.T <= g0.T, "trial %d: layers %.12g > start %.12g", trial, a.T, g0.T);
            CHECK(ia == (a.T < g0.T));
            CHECK(legal(&m, &a));
            CHECK(tsol_canonical(&m, &a));
            layers_better += ia;
        }
        zel_sol_free(&g0), zel_sol_free(&a), zel_sol_free(&b);
        zel_model_free(&m);
        tprob_free(&pr);
    }
    CHECK(runs >= 40);
    CHECK_MSG(dp_better > 0 && layers_better > 0, "dp better on %d, layers on %d of %d", dp_better,
              layers_better, runs);
}

// Leftovers (zel_column_leftover): deterministic, never worse, legal and canonical, improves
// some plans — also some that the per-group layers left as they were.
ZG_TEST(column_leftovers_legal_deterministic_and_useful) {
    zg_rng rng;
    zg_rng_init(&rng, 11);
    int runs = 0, better = 0, better_after_layers = 0;
    for (int trial = 0; trial < 80; trial++) {
        zg_problem pr;
        zel_model m;
        zg_error err;
        CHECK_OK(rand_model(&rng, trial, 3, 6, &pr, &m, &err), &err);
        zel_sol g0, a, b;
        CHECK_OK(zel_sol_alloc(&m, &g0, &err), &err);
        CHECK_OK(zel_sol_alloc(&m, &a, &err), &err);
        CHECK_OK(zel_sol_alloc(&m, &b, &err), &err);
        double lb = zel_model_lower_bound(&m);
        if (zel_heuristic(&m, lb, &g0)) {
            runs++;
            for (int after_layers = 0; after_layers < 2; after_layers++) {
                zel_sol_copy(&m, &a, &g0);
                if (after_layers) zel_column_improve(&m, lb, &a);
                zel_sol_copy(&m, &b, &a);
                double t0 = a.T;
                int ia = zel_column_leftover(&m, lb, &a);
                int ib = zel_column_leftover(&m, lb, &b);
                CHECK_EQ_INT(ia, ib);
                CHECK(a.T == b.T && !memcmp(a.opt, b.opt, sizeof(int32_t) * (size_t)m.n_units));
                CHECK_MSG(a.T <= t0, "trial %d: leftovers %.12g > start %.12g", trial, a.T, t0);
                CHECK(ia == (a.T < t0));
                CHECK(legal(&m, &a));
                CHECK(tsol_canonical(&m, &a));
                CHECK(a.T >= lb * (1 - 1e-12));
                if (after_layers) better_after_layers += ia;
                else better += ia;
            }
        }
        zel_sol_free(&g0), zel_sol_free(&a), zel_sol_free(&b);
        zel_model_free(&m);
        tprob_free(&pr);
    }
    CHECK(runs >= 50);
    CHECK_MSG(better > 0 && better_after_layers > 0, "better on %d, after layers on %d of %d",
              better, better_after_layers, runs);
}

// Nests on 4 ranks where no column structure exists (the inner group has no option on the top's
// block [0, 4), the top group no other): each case's nest is the optimum.
//   top count 1 over 4 wholes (1 s each): T = 2;  top count 1 over 2 units of degree 2 on
//   [0, 2) and [2, 4): T = 2;  two top units over 4 wholes: T = 3.
static zg_problem nest_problem(int64_t top, int64_t inner, int32_t deg) {
    int64_t cnt[2] = {top, inner};
    zg_problem pr = tprob_shell(4, 10.0, 2, cnt, 'n');
    pr.groups[0].opts = calloc(1, sizeof(zg_option));
    pr.groups[0].opts[0] = (zg_option){.config = {1, 4, 1}, .start = 0, .time = 1, .mem = 1};
    pr.groups[0].n_opts = 1;
    pr.groups[1].opts = calloc(4, sizeof(zg_option));
    for (int32_t r = 0; r + deg <= 4; r += deg)
        pr.groups[1].opts[pr.groups[1].n_opts++] =
            (zg_option){.config = {1, deg, 1}, .start = r, .time = 1, .mem = 1};
    pr.groups[0].whole_time = 4, pr.groups[1].whole_time = deg;
    pr.groups[0].whole_mem = pr.groups[1].whole_mem = 1;
    return pr;
}

ZG_TEST(column_nests_reach_layouts_no_column_has) {
    struct {
        int64_t top, inner;
        int32_t deg;
        double T;
    } cases[] = {{1, 4, 1, 2.0}, {1, 2, 2, 2.0}, {2, 4, 1, 3.0}};
    for (int c = 0; c < 3; c++) {
        zg_problem pr = nest_problem(cases[c].top, cases[c].inner, cases[c].deg);
        int32_t idx[2] = {0, 1};
        zel_model m;
        zg_error err;
        CHECK_OK(zel_model_build(&pr, idx, 2, NULL, NULL, &m, &err), &err);
        zel_sol s;
        CHECK_OK(zel_sol_alloc(&m, &s, &err), &err);
        double lb = zel_model_lower_bound(&m);
        CHECK_EQ_INT(zel_column_incumbent(&m, lb, 8.0, &s), 0);
        CHECK(zel_column_nested(&m, lb, 8.0, &s));
        CHECK_MSG(s.T == cases[c].T && legal(&m, &s), "case %d: nested T %.12g", c, s.T);
        zel_sol_free(&s);
        zel_model_free(&m);
        tprob_free(&pr);
    }
}

// Random models, with and without the memory-aware fluid (effective loads): legal, evaluated,
// canonical, deterministic, above the root bound; better than the plain columns on some.
ZG_TEST(column_nests_legal_deterministic_and_useful) {
    zg_rng rng;
    zg_rng_init(&rng, 13);
    int runs = 0, better = 0;
    for (int trial = 0; trial < 80; trial++) {
        zg_problem pr;
        zel_model m;
        zg_error err;
        CHECK_OK(rand_model(&rng, trial, 3, 8, &pr, &m, &err), &err);
        zel_sol g0, a, b;
        CHECK_OK(zel_sol_alloc(&m, &g0, &err), &err);
        CHECK_OK(zel_sol_alloc(&m, &a, &err), &err);
        CHECK_OK(zel_sol_alloc(&m, &b, &err), &err);
        double lb = zel_model_lower_bound(&m);
        if (zel_heuristic(&m, lb, &g0)) {
            int ga = zel_column_nested(&m, lb, g0.T, &a);
            int gb = zel_column_nested(&m, lb, g0.T, &b);
            CHECK_EQ_INT(ga, gb);
            if (ga) {
                runs++;
                CHECK(a.T == b.T && !memcmp(a.opt, b.opt, sizeof(int32_t) * (size_t)m.n_units));
                CHECK_MSG(legal(&m, &a), "trial %d", trial);
                CHECK(tsol_canonical(&m, &a));
                CHECK(a.T >= lb * (1 - 1e-12));
                if (!zel_column_incumbent(&m, lb, g0.T, &b) || a.T < b.T * (1 - 1e-9)) better++;
            }
        }
        zel_sol_free(&g0), zel_sol_free(&a), zel_sol_free(&b);
        zel_model_free(&m);
        tprob_free(&pr);
    }
    CHECK_MSG(runs >= 20 && better > 0, "nests ran on %d models, better on %d", runs, better);
}

// Models outside the DP's limits are declined, not approximated: more than 64 ranks, more than
// 8 groups; and an empty model.
ZG_TEST(column_declines_out_of_range_models) {
    tgroup tg[9];
    for (int g = 0; g < 9; g++) tg[g] = (tgroup){1, 2.0 + g, 0.1, 0.5};
    int32_t idx[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
    zg_error err;
    struct {
        int32_t N, ng;
    } cases[] = {{65, 2}, {16, 9}};
    for (int c = 0; c < 2; c++) {
        zg_problem pr = tprob_make(cases[c].N, 10.0, tg, cases[c].ng, 4, 0);
        zel_model m;
        CHECK_OK(zel_model_build(&pr, idx, cases[c].ng, NULL, NULL, &m, &err), &err);
        zel_sol s;
        CHECK_OK(zel_sol_alloc(&m, &s, &err), &err);
        CHECK_EQ_INT(zel_column_incumbent(&m, zel_model_lower_bound(&m), INFINITY, &s), 0);
        CHECK(s.T == INFINITY);
        zel_sol_free(&s);
        zel_model_free(&m);
        tprob_free(&pr);
    }
    zg_problem pr = tprob_make(4, 10.0, tg, 0, 4, 0);
    zel_model m;
    CHECK_OK(zel_model_build(&pr, idx, 0, NULL, NULL, &m, &err), &err);
    zel_sol s;
    CHECK_OK(zel_sol_alloc(&m, &s, &err), &err);
    CHECK_EQ_INT(zel_column_incumbent(&m, 1.0, INFINITY, &s), 0);
    zel_sol_free(&s);
    zel_model_free(&m);
    tprob_free(&pr);
}

ZG_TEST_MAIN()
