// test_zellige_exact.c — the exact anchor solver against brute force, the lexicographic split
// minimisation, the joint reference, symmetry handling, the catalog cut and the filler rule,
// all on hand-built problems (no pricer).
#include "zgtest.h"
#include "zel_testlib.h"

ZG_TEST(anchor_exact_vs_brute_force) {
    zg_rng rng;
    zg_rng_init(&rng, 42);
    for (int trial = 0; trial < 120; trial++) {
        int32_t N = (int32_t)zg_rng_int(&rng, 2, 4);
        int32_t ng = (int32_t)zg_rng_int(&rng, 1, 3);
        tgroup tg[3];
        int64_t units = 0;
        for (int32_t g = 0; g < ng; g++) {
            tg[g] = tgroup_rand(&rng, zg_rng_int(&rng, 1, ng == 1 ? 4 : 2));
            units += tg[g].count;
        }
        double cap = zg_rng_range(&rng, 1.0, 3.0);
        int sliding = (int)zg_rng_int(&rng, 0, 1);
        zg_problem pr = tprob_make(N, cap, tg, ng, N, sliding);
        int ok_opts = 1;
        for (int32_t g = 0; g < ng; g++) ok_opts &= pr.groups[g].n_opts > 0;
        if (!ok_opts || units > 5) {
            tprob_free(&pr);
            continue;
        }
        int32_t idx[3] = {0, 1, 2};
        double Tb;
        int64_t Kb;
        double eps = trial % 2 ? 1e-3 : 0.05;
        int feas = tbrute(&pr, idx, ng, eps, &Tb, &Kb);
        zel_model m;
        zel_sol sol;
        zel_stage1 st;
        zg_error err;
        CHECK_OK(zel_model_build(&pr, idx, ng, NULL, NULL, &m, &err), &err);
        CHECK_OK(zel_sol_alloc(&m, &sol, &err), &err);
        zel_limits lim = {0, 0, 0, 0, 0};
        zg_status rc = zel_anchor_solve(&m, eps, &lim, NULL, &sol, &st, &err);
        if (!feas) {
            CHECK_EQ_INT(rc, ZG_ERR_INFEASIBLE);
        } else {
            CHECK_OK(rc, &err);
            CHECK_MSG(st.optimal, "trial %d not proven optimal", trial);
            CHECK_MSG(fabs(st.T - Tb) <= 1e-9 * Tb, "trial %d: T %.12g vs brute %.12g", trial,
                      st.T, Tb);
            CHECK_MSG(sol.K == Kb, "trial %d: K %lld vs brute %lld", trial, (long long)sol.K,
                      (long long)Kb);
            double T;
            int64_t K;
            CHECK(zel_sol_eval(&m, sol.opt, NULL, NULL, &T, &K));
            CHECK(T <= (1 + eps) * Tb * (1 + 1e-12));
            CHECK_EQ_INT(K, sol.K);
        }
        zel_sol_free(&sol);
        zel_model_free(&m);
        tprob_free(&pr);
    }
}

// The same optimum with and without symmetry breaking (symmetries stripped by hand).
ZG_TEST(symmetry_breaking_keeps_optimum) {
    zg_rng rng;
    zg_rng_init(&rng, 7);
    int64_t nodes_sym = 0, nodes_plain = 0;
    for (int trial = 0; trial < 40; trial++) {
        tgroup tg[3];
        for (int g = 0; g < 3; g++) tg[g] = tgroup_rand(&rng, zg_rng_int(&rng, 1, 3));
        zg_problem pr = tprob_make(8, 4.0, tg, 3, 8, 0);
        int32_t idx[3] = {0, 1, 2};
        zg_error err;
        zel_model a, b;
        CHECK_OK(zel_model_build(&pr, idx, 3, NULL, NULL, &a, &err), &err);
        CHECK_OK(zel_model_build(&pr, idx, 3, NULL, NULL, &b, &err), &err);
        CHECK(a.n_sym > 0);
        b.n_sym = 0;
        zel_sol sa, sb;
        zel_sol_alloc(&a, &sa, &err);
        zel_sol_alloc(&b, &sb, &err);
        zel_stats x, y;
        CHECK_OK(zel_solve_minmax(&a, &sa, NULL, &x, &err), &err);
        CHECK_OK(zel_solve_minmax(&b, &sb, NULL, &y, &err), &err);
        CHECK(x.complete && y.complete);
        CHECK_MSG(fabs(sa.T - sb.T) <= 1e-9 * sb.T, "trial %d: %.12g vs %.12g", trial, sa.T, sb.T);
        nodes_sym += x.nodes, nodes_plain += y.nodes;
        zel_sol_free(&sa), zel_sol_free(&sb);
        zel_model_free(&a), zel_model_free(&b);
        tprob_free(&pr);
    }
    printf("  symmetry: %lld nodes with, %lld without\n", (long long)nodes_sym,
           (long long)nodes_plain);
}

// Joint (all groups in one exact model) is never above the two-stage plan.
ZG_TEST(joint_not_worse_than_two_stage) {
    zg_rng rng;
    zg_rng_init(&rng, 99);
    for (int trial = 0; trial < 30; trial++) {
        tgroup tg[4];
        tg[0] = tgroup_rand(&rng, zg_rng_int(&rng, 1, 3));
        tg[0].w *= 10;
        tg[1] = tgroup_rand(&rng, zg_rng_int(&rng, 1, 2));
        tg[1].w *= 6;
        tg[2] = tgroup_rand(&rng, zg_rng_int(&rng, 2, 5));
        tg[3] = tgroup_rand(&rng, zg_rng_int(&rng, 2, 5));
        tg[3].w *= 0.3;
        zg_problem pr = tprob_make(4, 8.0, tg, 4, 4, 0);
        zg_plan_ctx ctx;
        memset(&ctx, 0, sizeof ctx);
        zg_planner_opts_default(&ctx.opts);
        zg_error err;
        zel_result res;
        CHECK_OK(zel_two_stage(&ctx, &pr, NULL, NULL, &res, &err), &err);
        int32_t idx[4] = {0, 1, 2, 3};
        zel_model m;
        zel_sol sol;
        CHECK_OK(zel_model_build(&pr, idx, 4, NULL, NULL, &m, &err), &err);
        zel_sol_alloc(&m, &sol, &err);
        double lb = zel_model_lower_bound(&m);
        CHECK(zel_heuristic(&m, lb, &sol));
        zel_limits lim = {2000000, 0, 0, 0, 0};
        zel_stats st;
        CHECK_OK(zel_solve_minmax(&m, &sol, &lim, &st, &err), &err);
        CHECK(lb <= sol.T * (1 + 1e-12));
        CHECK_MSG(sol.T <= res.makespan * (1 + 1e-12), "trial %d: joint %.9g > zellige %.9g",
                  trial, sol.T, res.makespan);
        if (st.complete) {
            double Tb;
            int64_t Kb;
            if (pr.n_seqs <= 6) {
                CHECK(tbrute(&pr, idx, 4, 0, &Tb, &Kb));
                CHECK_NEAR(sol.T, Tb, 0, 1e-9);
            }
        }
        free(res.choice);
        zel_sol_free(&sol);
        zel_model_free(&m);
        tprob_free(&pr);
    }
}

ZG_TEST(lower_bound_valid_and_tight_when_balanced) {
    // 8 identical whole-only units on 4 ranks: LB = optimum = 2 w
    tgroup tg = {8, 3.0, 0.1, 0.5};
    zg_problem pr = tprob_make(4, 10.0, &tg, 1, 1, 0);
    int32_t idx = 0;
    zel_model m;
    zg_error err;
    CHECK_OK(zel_model_build(&pr, &idx, 1, NULL, NULL, &m, &err), &err);
    CHECK_NEAR(zel_model_lower_bound(&m), 6.0, 1e-12, 0);
    zel_sol sol;
    zel_sol_alloc(&m, &sol, &err);
    zel_stage1 st;
    zel_limits lim = {0, 0, 0, 0, 0};
    CHECK_OK(zel_anchor_solve(&m, 1e-3, &lim, NULL, &sol, &st, &err), &err);
    CHECK(st.optimal);
    CHECK_NEAR(st.T, 6.0, 1e-12, 0);
    CHECK_EQ_INT(st.K, 0);
    CHECK(st.nodes == 0);  // the greedy meets the bound: no search
    zel_sol_free(&sol);
    zel_model_free(&m);
    tprob_free(&pr);
}

ZG_TEST(memory_forces_split) {
    // one unit whose whole memory exceeds the cap: must split; cap 0.6 with mem 1.0 -> d >= 2
    tgroup tg = {1, 4.0, 0.1, 1.0};
    zg_problem pr = tprob_make(4, 0.6, &tg, 1, 4, 0);
    CHECK(pr.groups[0].n_opts > 0);
    int32_t idx = 0;
    zel_model m;
    zg_error err;
    CHECK_OK(zel_model_build(&pr, &idx, 1, NULL, NULL, &m, &err), &err);
    CHECK_EQ_INT(m.grps[0].n_whole, 0);
    zel_sol sol;
    zel_sol_alloc(&m, &sol, &err);
    zel_stage1 st;
    zel_limits lim = {0, 0, 0, 0, 0};
    CHECK_OK(zel_anchor_solve(&m, 0.0, &lim, NULL, &sol, &st, &err), &err);
    // degree 4: 1.0 * 1.3 = 1.3 ; degree 2: 2.0 * 1.1 = 2.2 -> optimum is degree 4
    CHECK_NEAR(st.T, 1.3, 1e-12, 1e-12);
    CHECK_EQ_INT(st.K, 1);
    zel_sol_free(&sol);
    zel_model_free(&m);
    tprob_free(&pr);
}

ZG_TEST(memory_infeasible_reports) {
    // two units each needing >half the cap on every option of 2 ranks: whole 0.7 each on cap 1.0
    // fits (one per rank); three units do not
    tgroup tg = {3, 1.0, 0.0, 0.7};
    zg_problem pr = tprob_make(2, 1.0, &tg, 1, 1, 0);
    int32_t idx = 0;
    zel_model m;
    zg_error err;
    CHECK_OK(zel_model_build(&pr, &idx, 1, NULL, NULL, &m, &err), &err);
    zel_sol sol;
    zel_sol_alloc(&m, &sol, &err);
    zel_stage1 st;
    zel_limits lim = {0, 0, 0, 0, 0};
    CHECK_EQ_INT(zel_anchor_solve(&m, 1e-3, &lim, NULL, &sol, &st, &err), ZG_ERR_INFEASIBLE);
    CHECK(strstr(err.msg, "3 anchor sequences") != NULL);
    zel_sol_free(&sol);
    zel_model_free(&m);
    tprob_free(&pr);
}

ZG_TEST(split_minimisation_within_eps) {
    // 2 ranks: one big unit w=10 and two small w=1. Min T: big split (5.5 each with comm 0.1)
    // plus smalls -> 6.5 each; whole big gives 10. With eps large (0.6), T <= 10.4 allows the
    // big one whole (10 | 2) -> K = 0.
    tgroup tg[2] = {{1, 10.0, 0.1, 0.1}, {2, 1.0, 0.1, 0.1}};
    zg_problem pr = tprob_make(2, 10.0, tg, 2, 2, 0);
    int32_t idx[2] = {0, 1};
    zg_error err;
    for (int pass = 0; pass < 2; pass++) {
        double eps = pass ? 0.6 : 1e-3;
        zel_model m;
        CHECK_OK(zel_model_build(&pr, idx, 2, NULL, NULL, &m, &err), &err);
        zel_sol sol;
        zel_sol_alloc(&m, &sol, &err);
        zel_stage1 st;
        zel_limits lim = {0, 0, 0, 0, 0};
        CHECK_OK(zel_anchor_solve(&m, eps, &lim, NULL, &sol, &st, &err), &err);
        CHECK(st.optimal);
        CHECK_NEAR(st.T, 6.5, 1e-12, 1e-12);
        CHECK_EQ_INT(st.K, pass ? 0 : 1);
        zel_sol_free(&sol);
        zel_model_free(&m);
    }
    tprob_free(&pr);
}

ZG_TEST(catalog_cut_log_kmeans) {
    // two clear clusters in log space: {1, 2, 3} and {100, 300}
    double w[5] = {1, 2, 3, 100, 300};
    CHECK_EQ_INT(zel_cut_index(w, 5), 3);
    double one[1] = {5};
    CHECK_EQ_INT(zel_cut_index(one, 1), 0);
    double same[3] = {2, 2, 2};
    CHECK_EQ_INT(zel_cut_index(same, 3), 0);
    // symmetric: {1, 10, 100}: k=1 and k=2 tie -> smallest k
    double sym[3] = {1, 10, 100};
    CHECK_EQ_INT(zel_cut_index(sym, 3), 1);
    // scale invariance
    double s2[5] = {1e-3, 2e-3, 3e-3, 0.1, 0.3};
    CHECK_EQ_INT(zel_cut_index(s2, 5), 3);
}

ZG_TEST(cut_threshold_from_batch_and_override) {
    tgroup tg[3] = {{1, 100.0, 0.1, 0.1}, {2, 2.0, 0.1, 0.1}, {3, 1.0, 0.1, 0.1}};
    zg_problem pr = tprob_make(4, 10.0, tg, 3, 4, 0);
    zg_plan_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    zg_planner_opts_default(&ctx.opts);
    zg_error err;
    double thr;
    CHECK_OK(zel_cut_threshold(&ctx, &pr, &thr, &err), &err);
    CHECK_NEAR(thr, sqrt(2.0 * 100.0), 1e-12, 1e-12);
    ctx.opts.anchor_cut_s = 1.5;
    CHECK_OK(zel_cut_threshold(&ctx, &pr, &thr, &err), &err);
    CHECK_NEAR(thr, 1.5, 0, 0);
    tprob_free(&pr);
}

ZG_TEST(filler_rule_and_repair) {
    // 2 ranks, anchors (outside this problem) put 3.0 on rank 0; fillers 2,1,1 whole:
    // F = 4/2 = 2. The 2 -> rank 1 (compute headroom 0 vs -1.5), a 1 -> rank 1 (-0.5 vs -1),
    // the last 1 ties at -1 -> lowest rank 0. Loads 4 | 3; no move or swap lowers the max.
    tgroup tg[2] = {{1, 2.0, 0.0, 0.1}, {2, 1.0, 0.0, 0.1}};
    zg_problem pr = tprob_make(2, 10.0, tg, 2, 1, 0);
    double L[2] = {3.0, 0}, H[2] = {0, 0};
    int32_t fill[2] = {1, 0};
    int32_t choice[3] = {-1, -1, -1};
    zg_error err;
    CHECK_OK(zel_filler_place(&pr, NULL, fill, 2, L, H, choice, &err), &err);
    CHECK_EQ_INT(pr.groups[0].opts[choice[0]].start, 1);
    CHECK_NEAR(L[0] + L[1], 7.0, 1e-12, 0);
    CHECK_NEAR(L[0], 4.0, 1e-12, 0);
    CHECK_NEAR(L[1], 3.0, 1e-12, 0);
    tprob_free(&pr);
}

ZG_TEST(warm_start_keeps_optimum) {
    zg_rng rng;
    zg_rng_init(&rng, 5);
    tgroup tg[2] = {tgroup_rand(&rng, 3), tgroup_rand(&rng, 2)};
    zg_problem pr = tprob_make(4, 4.0, tg, 2, 4, 0);
    int32_t idx[2] = {0, 1};
    zg_error err;
    zel_model m;
    CHECK_OK(zel_model_build(&pr, idx, 2, NULL, NULL, &m, &err), &err);
    zel_sol a, b;
    zel_sol_alloc(&m, &a, &err);
    zel_sol_alloc(&m, &b, &err);
    zel_stage1 sa, sb;
    zel_limits lim = {0, 0, 0, 0, 0};
    CHECK_OK(zel_anchor_solve(&m, 1e-3, &lim, NULL, &a, &sa, &err), &err);
    CHECK_OK(zel_anchor_solve(&m, 1e-3, &lim, a.opt, &b, &sb, &err), &err);
    CHECK_NEAR(sb.T, sa.T, 0, 1e-12);
    CHECK_EQ_INT(sb.K, sa.K);
    zel_sol_free(&a), zel_sol_free(&b);
    zel_model_free(&m);
    tprob_free(&pr);
}

ZG_TEST_MAIN()

// The memory-aware (fluid filler) objective: the exact search (gap 0) equals brute force over
// every unit's model options, with the remaining-anchor fluid-loss bound active; with a
// certified gap the result is within (1 + gap) of the optimum and says so.
ZG_TEST(fluid_objective_exact_vs_brute_force) {
    zg_rng rng;
    zg_rng_init(&rng, 7);
    int tested = 0;
    for (int trial = 0; trial < 80; trial++) {
        int32_t N = (int32_t)zg_rng_int(&rng, 2, 4);
        int32_t ng = (int32_t)zg_rng_int(&rng, 1, 2);
        tgroup tg[2];
        int64_t units = 0;
        for (int32_t g = 0; g < ng; g++) {
            tg[g] = tgroup_rand(&rng, zg_rng_int(&rng, 1, 2));
            units += tg[g].count;
        }
        double cap = zg_rng_range(&rng, 1.5, 3.0);
        zg_problem pr = tprob_make(N, cap, tg, ng, N, (int)zg_rng_int(&rng, 0, 1));
        int ok_opts = 1;
        for (int32_t g = 0; g < ng; g++) ok_opts &= pr.groups[g].n_opts > 0;
        if (!ok_opts || units > 4) {
            tprob_free(&pr);
            continue;
        }
        int32_t idx[2] = {0, 1};
        zel_model m;
        zel_sol sol, bf;
        zg_error err;
        CHECK_OK(zel_model_build(&pr, idx, ng, NULL, NULL, &m, &err), &err);
        m.extra_area = zg_rng_range(&rng, 1.0, 12.0);
        m.fill_mem = zg_rng_range(&rng, 0.2, 0.5) * cap * N;
        CHECK_OK(zel_sol_alloc(&m, &sol, &err), &err);
        CHECK_OK(zel_sol_alloc(&m, &bf, &err), &err);
        // brute force over model options
        double best = INFINITY;
        int32_t *pick = bf.opt;
        for (int64_t v = 0; v < m.n_units; v++) pick[v] = 0;
        for (;;) {
            double T;
            int64_t K;
            if (zel_sol_eval(&m, pick, NULL, NULL, &T, &K) && T < best) best = T;
            int64_t v = 0;
            while (v < m.n_units && ++pick[v] == m.grps[m.grp_of[v]].n_opts) pick[v++] = 0;
            if (v == m.n_units) break;
        }
        for (int pass = 0; pass < 2; pass++) {
            double gap = pass ? 1e-2 : 0;
            zel_limits lim = {0, 0, gap, 0, 0};
            zel_stats st;
            sol.T = INFINITY, sol.K = 0;
            CHECK_OK(zel_solve_minmax(&m, &sol, &lim, &st, &err), &err);
            CHECK(st.complete);
            if (best == INFINITY) {
                CHECK(sol.T == INFINITY);
                continue;
            }
            CHECK_MSG(sol.T <= best * (1 + gap) * (1 + 1e-9) && sol.T >= best * (1 - 1e-9),
                      "trial %d gap %g: T %.12g vs brute %.12g", trial, gap, sol.T, best);
            CHECK_MSG(st.lb <= best * (1 + 1e-9), "trial %d: lb %.12g above optimum %.12g",
                      trial, st.lb, best);
        }
        // What a certified gap proves: with an incumbent T just above (1 + gap) times the
        // optimum the search prunes at T (1 - gap), below the optimum, so it completes without
        // an improvement, and its bound is T (1 - gap) -- not T / (1 + gap), which is above
        // the optimum here (the relaxation bound's probes read this bound).
        for (int k = 0; k < 2 && best < INFINITY; k++) {
            double gap = k ? 0.2 : 0.05;
            zel_limits lim = {0, 0, gap, 0, 0};
            zel_stats st;
            sol.T = best * (1 + gap) * (1 + 1e-3), sol.K = 0;
            CHECK_OK(zel_solve_minmax(&m, &sol, &lim, &st, &err), &err);
            CHECK(st.complete);
            CHECK_MSG(st.lb <= best * (1 + 1e-9), "trial %d gap %g: lb %.12g above optimum %.12g",
                      trial, gap, st.lb, best);
        }
        tested++;
        zel_sol_free(&sol);
        zel_sol_free(&bf);
        zel_model_free(&m);
        tprob_free(&pr);
    }
    CHECK(tested >= 20);
}
