// test_zel_column.c — the column-structured incumbents of stage 1 (search/column.c): the DP's plan
// is within its bisection tolerance of the best column structure (brute force over every column
// structure, ledgers included), legal, evaluated, canonical and deterministic; the layer moves
// never make a plan worse and improve some, and so do the leftover layouts; the nested columns
// (zel_column_nested) are legal and deterministic, reach nests no column structure has, and
// beat the plain columns on some random models; out-of-range models are declined.
#include "zgtest.h"
#include "zel_testlib.h"

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
    zg_rng rng = trng(5);
    int checked = 0, found_all = 1;
    for (int trial = 0; trial < 240; trial++) {
        int32_t N = (int32_t)zg_rng_int(&rng, 2, 6);
        int32_t ng = (int32_t)zg_rng_int(&rng, 1, 3);
        tmodel t;
        t.pr = trand_problem(&rng, N, ng, 3, t.idx);
        double base[8], bmem[8];
        for (int32_t r = 0; r < N; r++) {  // ledgers on half the trials (the layer moves)
            base[r] = trial % 2 ? zg_rng_range(&rng, 0.0, 3.0) : 0;
            bmem[r] = trial % 2 ? zg_rng_range(&rng, 0.0, 0.3) * t.pr.mem_room : 0;
        }
        zg_error err;
        CHECK_OK(tmodel_build(&t, base, bmem, &err), &err);
        zel_model *m = &t.m;
        m->extra_area = trial % 3 ? zg_rng_range(&rng, 0.0, 3.0 * N) : 0;
        double best = brute_column_best(m);
        zel_sol s, h;
        CHECK(tsols(m, &s, &h, NULL));
        double lb = zel_model_lower_bound(m), ub = INFINITY;
        if (trial % 4 && zel_heuristic(m, lb, &h)) ub = h.T;  // as stage 1 calls it
        int got = zel_column_incumbent(m, lb, ub, &s);
        if (got) {
            CHECK(tsol_legal(m, &s));
            CHECK(tsol_canonical(m, &s));
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
        tsols_free(&s, &h, NULL);
        tmodel_free(&t);
    }
    CHECK(found_all);
    CHECK_MSG(checked >= 90, "checked %d", checked);
}

// A random model on 6..24 ranks with 2..max_groups groups of up to max_count units; odd trials
// add the memory-aware fluid (extra_area, fill_mem). Three solutions: g0, the greedy ladder's
// plan (has_g0: it found one), and a, b to fill. Free with colcase_free.
typedef struct colcase {
    tmodel t;
    zel_model *m;
    zel_sol g0, a, b;
    double lb;
    int has_g0;
} colcase;

static zg_status colcase_rand(colcase *c, zg_rng *rng, int trial, int32_t max_groups,
                              int64_t max_count, zg_error *err) {
    zg_status st = tmodel_rand(&c->t, rng, 6, 24, 2, max_groups, max_count, err);
    if (st) return st;
    c->m = &c->t.m;
    if (trial % 2) tmodel_fluid(&c->t, rng);
    if (!tsols(c->m, &c->g0, &c->a, &c->b)) return zg_error_set(err, ZG_ERR_NOMEM, "no memory");
    c->lb = zel_model_lower_bound(c->m);
    c->has_g0 = zel_heuristic(c->m, c->lb, &c->g0);
    return ZG_OK;
}

static void colcase_free(colcase *c) {
    tsols_free(&c->g0, &c->a, &c->b);
    tmodel_free(&c->t);
}

// Memory-aware fluid (fill_mem > 0), larger models: legal, evaluated, canonical, deterministic,
// never above the incumbent it was given when it returns a plan; the layer moves never worse.
ZG_TEST(column_incumbent_and_layers_legal_deterministic) {
    zg_rng rng = trng(9);
    int runs = 0, dp_better = 0, layers_better = 0;
    for (int trial = 0; trial < 60; trial++) {
        colcase c;
        zg_error err;
        CHECK_OK(colcase_rand(&c, &rng, trial, 4, 5, &err), &err);
        const zel_model *m = c.m;
        zel_sol *g0 = &c.g0, *a = &c.a, *b = &c.b;
        if (c.has_g0) {
            runs++;
            int ga = zel_column_incumbent(m, c.lb, g0->T, a);
            int gb = zel_column_incumbent(m, c.lb, g0->T, b);
            CHECK_EQ_INT(ga, gb);
            if (ga) {
                CHECK(tsol_same(m, a, b));
                CHECK(tsol_legal(m, a));
                CHECK(tsol_canonical(m, a));
                CHECK(a->T >= c.lb * (1 - 1e-12));
                dp_better += a->T < g0->T * (1 - 1e-9);
            }
            zel_sol_copy(m, a, g0);
            zel_sol_copy(m, b, g0);
            int ia = zel_column_improve(m, c.lb, a);
            int ib = zel_column_improve(m, c.lb, b);
            CHECK_EQ_INT(ia, ib);
            CHECK(tsol_same(m, a, b));
            CHECK_MSG(a->T <= g0->T, "trial %d: layers %.12g > start %.12g", trial, a->T, g0->T);
            CHECK(ia == (a->T < g0->T));
            CHECK(tsol_legal(m, a));
            CHECK(tsol_canonical(m, a));
            layers_better += ia;
        }
        colcase_free(&c);
    }
    CHECK(runs >= 40);
    CHECK_MSG(dp_better > 0 && layers_better > 0, "dp better on %d, layers on %d of %d", dp_better,
              layers_better, runs);
}

// Leftovers (zel_column_leftover): deterministic, never worse, legal and canonical, improves
// some plans — also some that the per-group layers left as they were.
ZG_TEST(column_leftovers_legal_deterministic_and_useful) {
    zg_rng rng = trng(11);
    int runs = 0, better = 0, better_after_layers = 0;
    for (int trial = 0; trial < 80; trial++) {
        colcase c;
        zg_error err;
        CHECK_OK(colcase_rand(&c, &rng, trial, 3, 6, &err), &err);
        const zel_model *m = c.m;
        zel_sol *a = &c.a, *b = &c.b;
        if (c.has_g0) {
            runs++;
            for (int after_layers = 0; after_layers < 2; after_layers++) {
                zel_sol_copy(m, a, &c.g0);
                if (after_layers) zel_column_improve(m, c.lb, a);
                zel_sol_copy(m, b, a);
                double t0 = a->T;
                int ia = zel_column_leftover(m, c.lb, a);
                int ib = zel_column_leftover(m, c.lb, b);
                CHECK_EQ_INT(ia, ib);
                CHECK(tsol_same(m, a, b));
                CHECK_MSG(a->T <= t0, "trial %d: leftovers %.12g > start %.12g", trial, a->T, t0);
                CHECK(ia == (a->T < t0));
                CHECK(tsol_legal(m, a));
                CHECK(tsol_canonical(m, a));
                CHECK(a->T >= c.lb * (1 - 1e-12));
                if (after_layers) better_after_layers += ia;
                else better += ia;
            }
        }
        colcase_free(&c);
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
        tmodel t;
        t.pr = nest_problem(cases[c].top, cases[c].inner, cases[c].deg);
        zg_error err;
        CHECK_OK(tmodel_build(&t, NULL, NULL, &err), &err);
        zel_sol s;
        CHECK_OK(zel_sol_alloc(&t.m, &s, &err), &err);
        double lb = zel_model_lower_bound(&t.m);
        CHECK_EQ_INT(zel_column_incumbent(&t.m, lb, 8.0, &s), 0);
        CHECK(zel_column_nested(&t.m, lb, 8.0, &s));
        CHECK_MSG(s.T == cases[c].T && tsol_legal(&t.m, &s), "case %d: nested T %.12g", c, s.T);
        zel_sol_free(&s);
        tmodel_free(&t);
    }
}

// Random models, with and without the memory-aware fluid (effective loads): legal, evaluated,
// canonical, deterministic, above the root bound; better than the plain columns on some.
ZG_TEST(column_nests_legal_deterministic_and_useful) {
    zg_rng rng = trng(13);
    int runs = 0, better = 0;
    for (int trial = 0; trial < 80; trial++) {
        colcase c;
        zg_error err;
        CHECK_OK(colcase_rand(&c, &rng, trial, 3, 8, &err), &err);
        const zel_model *m = c.m;
        zel_sol *a = &c.a, *b = &c.b;
        if (c.has_g0) {
            int ga = zel_column_nested(m, c.lb, c.g0.T, a);
            int gb = zel_column_nested(m, c.lb, c.g0.T, b);
            CHECK_EQ_INT(ga, gb);
            if (ga) {
                runs++;
                CHECK(tsol_same(m, a, b));
                CHECK_MSG(tsol_legal(m, a), "trial %d", trial);
                CHECK(tsol_canonical(m, a));
                CHECK(a->T >= c.lb * (1 - 1e-12));
                if (!zel_column_incumbent(m, c.lb, c.g0.T, b) || a->T < b->T * (1 - 1e-9)) better++;
            }
        }
        colcase_free(&c);
    }
    CHECK_MSG(runs >= 20 && better > 0, "nests ran on %d models, better on %d", runs, better);
}

// Models outside the DP's limits are declined, not approximated: more than 64 ranks, more than
// 8 groups; and an empty model.
ZG_TEST(column_declines_out_of_range_models) {
    tgroup tg[9];
    for (int g = 0; g < 9; g++) tg[g] = (tgroup){1, 2.0 + g, 0.1, 0.5};
    zg_error err;
    struct {
        int32_t N, ng;
        double lb;  // (the empty model: given, not its bound)
    } cases[] = {{65, 2, -1}, {16, 9, -1}, {4, 0, 1.0}};
    for (int c = 0; c < 3; c++) {
        tmodel t;
        CHECK_OK(tmodel_make(&t, cases[c].N, 10.0, tg, cases[c].ng, 4, 0, &err), &err);
        zel_sol s;
        CHECK_OK(zel_sol_alloc(&t.m, &s, &err), &err);
        double lb = cases[c].lb < 0 ? zel_model_lower_bound(&t.m) : cases[c].lb;
        CHECK_EQ_INT(zel_column_incumbent(&t.m, lb, INFINITY, &s), 0);
        CHECK(s.T == INFINITY);
        zel_sol_free(&s);
        tmodel_free(&t);
    }
}

ZG_TEST_MAIN()
