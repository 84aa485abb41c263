// test_zel_heur_lns.c — the large-neighbourhood improvement of the stage-1 incumbent
// (search/lns.c): legal, evaluates to what it reports, canonical, deterministic, never worse than
// the greedy start, improves it on some models; stage 1 with it stays exact (brute force) and
// gives the same optimum as without it when the search completes.
#include "zgtest.h"
#include "zel_testlib.h"
#include "zel_speedref.h"

ZG_TEST(lns_legal_deterministic_never_worse) {
    zg_rng rng = trng(7);
    int improved = 0, runs = 0;
    for (int trial = 0; trial < 60; trial++) {
        tmodel t;
        zg_error err;
        CHECK_OK(tmodel_rand(&t, &rng, 4, 16, 2, 6, 4, &err), &err);
        zel_model *m = &t.m;
        if (trial % 2) tmodel_fluid(&t, &rng);  // fill-aware, memory-aware objective
        zel_sol g0, a, b;
        CHECK(tsols(m, &g0, &a, &b));
        double lb = zel_model_lower_bound(m);
        if (zel_heuristic(m, lb, &g0)) {
            runs++;
            zel_sol_copy(m, &a, &g0);
            zel_sol_copy(m, &b, &g0);
            int64_t na = zel_lns_improve(m, &a, 2000, 200);
            int64_t nb = zel_lns_improve(m, &b, 2000, 200);
            CHECK(na >= 0 && na <= 2000 + 200);
            CHECK_EQ_INT(na, nb);  // deterministic: same nodes, same solution
            CHECK(tsol_same(m, &a, &b));
            CHECK_MSG(a.T <= g0.T, "trial %d: lns %.12g > greedy %.12g", trial, a.T, g0.T);
            CHECK(a.T >= lb * (1 - 1e-12));
            CHECK(tsol_canonical(m, &a));
            // legal, memory-feasible, and evaluates to what it reports
            CHECK_MSG(tsol_legal(m, &a), "trial %d: reported %.12g/%lld", trial, a.T,
                      (long long)a.K);
            improved += a.T < g0.T;
        }
        tsols_free(&g0, &a, &b);
        tmodel_free(&t);
    }
    CHECK(runs >= 40);
    CHECK_MSG(improved > 0, "no model improved over the greedy start (%d runs)", runs);
}

// Stage 1 with the neighbourhood search is still the exact lexicographic optimum.
ZG_TEST(anchor_solve_lns_exact_vs_brute_force) {
    zg_rng rng = trng(11);
    int checked = 0;
    for (int trial = 0; trial < 80; trial++) {
        int32_t N = (int32_t)zg_rng_int(&rng, 2, 4);
        int32_t ng = (int32_t)zg_rng_int(&rng, 2, 3);
        tmodel t;
        t.pr = trand_problem(&rng, N, ng, 2, t.idx);
        int64_t units = 0;
        int ok = 1;
        for (int32_t g = 0; g < ng; g++) units += t.pr.groups[g].count, ok &= t.pr.groups[g].n_opts > 0;
        if (!ok || units > 5) {
            tprob_free(&t.pr);
            continue;
        }
        double eps = trial % 2 ? 1e-3 : 0.05, Tb;
        int64_t Kb;
        int feas = tbrute(&t.pr, t.idx, ng, eps, &Tb, &Kb);
        zel_sol sol;
        zel_stage1 st;
        zg_error err;
        CHECK_OK(tmodel_build(&t, NULL, NULL, &err), &err);
        CHECK_OK(zel_sol_alloc(&t.m, &sol, &err), &err);
        zel_limits lim = {0, 0, 0, 0, 0};
        zg_status rc = zel_anchor_solve_lns(&t.m, eps, &lim, NULL, 500, NULL, &sol, NULL, NULL,
                                            &st, &err);
        if (!feas) {
            CHECK_EQ_INT(rc, ZG_ERR_INFEASIBLE);
        } else {
            CHECK_OK(rc, &err);
            CHECK(st.optimal);
            CHECK_MSG(fabs(st.T - Tb) <= 1e-9 * Tb, "trial %d: T %.12g vs %.12g", trial, st.T, Tb);
            CHECK_MSG(sol.K == Kb, "trial %d: K %lld vs %lld", trial, (long long)sol.K,
                      (long long)Kb);
            checked++;
        }
        zel_sol_free(&sol);
        tmodel_free(&t);
    }
    CHECK(checked >= 30);
}

// On larger models (no brute force), a completed search finds the same T* and K* with and
// without the neighbourhood search, and the node budget covers both.
ZG_TEST(anchor_solve_lns_same_optimum_when_complete) {
    zg_rng rng = trng(23);
    int both = 0;
    for (int trial = 0; trial < 24; trial++) {
        tmodel t;
        zg_error err;
        CHECK_OK(tmodel_rand(&t, &rng, 5, 8, 3, 4, 2, &err), &err);
        zel_sol s0, s1;
        zel_stage1 st0, st1;
        CHECK(tsols(&t.m, &s0, &s1, NULL));
        zel_limits lim = {200000, 0, 0, 0, 0};
        zg_status r0 = zel_anchor_solve_lns(&t.m, 1e-3, &lim, NULL, 0, NULL, &s0, NULL, NULL,
                                            &st0, &err);
        zg_status r1 = zel_anchor_solve_lns(&t.m, 1e-3, &lim, NULL, 1000, NULL, &s1, NULL, NULL,
                                            &st1, &err);
        CHECK_EQ_INT(r0, r1);
        if (!r0 && st0.optimal && st1.optimal) {
            CHECK_MSG(fabs(st0.T - st1.T) <= 1e-9 * st0.T, "trial %d: %.12g vs %.12g", trial,
                      st0.T, st1.T);
            CHECK_EQ_INT(s0.K, s1.K);
            both++;
        }
        tsols_free(&s0, &s1, NULL);
        tmodel_free(&t);
    }
    CHECK(both >= 12);
}

ZG_TEST(lns_bad_input_is_a_no_op) {
    tgroup tg[3] = {{2, 4.0, 0.1, 0.5}, {2, 3.0, 0.2, 0.5}, {1, 5.0, 0.1, 0.5}};
    tmodel t;
    zg_error err;
    CHECK_OK(tmodel_make(&t, 4, 2.0, tg, 3, 4, 1, &err), &err);
    zel_model *m = &t.m;
    zel_sol s;
    CHECK_OK(zel_sol_alloc(m, &s, &err), &err);
    CHECK_EQ_INT(zel_lns_improve(m, &s, 100, 10), 0);  // T = INFINITY: no incumbent
    CHECK(s.T == INFINITY);
    CHECK(zel_heuristic(m, zel_model_lower_bound(m), &s));
    double T = s.T;
    CHECK_EQ_INT(zel_lns_improve(m, &s, 0, 10), 0);
    CHECK_EQ_INT(zel_lns_improve(m, &s, 100, 0), 0);
    CHECK(s.T == T);
    zel_sol_free(&s);
    tmodel_free(&t);
}

// The ladder with a deadline: none (0) or a far one gives zel_heuristic's plan exactly; one
// already past finishes no pass and reports none (the caller's incumbent stands).
ZG_TEST(heuristic_until_deadline) {
    zg_rng rng = trng(11);
    int runs = 0;
    for (int trial = 0; trial < 20; trial++) {
        tmodel t;
        zg_error err;
        CHECK_OK(tmodel_rand(&t, &rng, 4, 16, 2, 6, 4, &err), &err);
        zel_model *m = &t.m;
        zel_sol a, b, c;
        CHECK(tsols(m, &a, &b, &c));
        double lb = zel_model_lower_bound(m);
        int fa = zel_heuristic(m, lb, &a);
        int fb = zel_heuristic_until(m, lb, zg_time_now() + 3600, &b);
        CHECK_EQ_INT(fa, fb);
        if (fa) {
            runs++;
            CHECK(tsol_same(m, &a, &b));
        }
        CHECK(!zel_heuristic_until(m, lb, zg_time_now() - 1, &c));
        CHECK(c.T == INFINITY);
        tsols_free(&a, &b, &c);
        tmodel_free(&t);
    }
    CHECK(runs >= 10);
}

// The heap-based breakpoint sweep of the root bound equals the fully sorted sweep (zel_speedref.h's
// ref_lower_bound, as the bound was computed before the heap) bit for bit: ledgers zero, not
// memory-aware.
ZG_TEST(lower_bound_heap_sweep_equals_sorted_sweep) {
    zg_rng rng = trng(5);
    for (int trial = 0; trial < 80; trial++) {
        int32_t N = (int32_t)zg_rng_int(&rng, 2, 16);
        int32_t ng = (int32_t)zg_rng_int(&rng, 1, 6);
        tmodel t;
        t.pr = trand_problem(&rng, N, ng, 4, t.idx);
        zg_group *G = &t.pr.groups[0];
        if (trial % 3 == 0) G->opts[0].time = G->opts[1 % G->n_opts].time;  // a tie in e
        zg_error err;
        CHECK_OK(tmodel_build(&t, NULL, NULL, &err), &err);
        if (trial % 2) t.m.extra_area = zg_rng_range(&rng, 0.0, 3.0 * N);
        double a = zel_model_lower_bound(&t.m), b = ref_lower_bound(&t.m);
        CHECK_MSG(a == b, "trial %d: %.17g vs %.17g", trial, a, b);
        tmodel_free(&t);
    }
}

ZG_TEST_MAIN()
