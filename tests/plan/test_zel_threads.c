// test_zel_threads.c — stage 1 with worker threads (zel_model.threads, zg_planner_opts.threads)
// gives the same result as with one: the neighbourhood search (speculative batches), the column
// DP (states of a rank split over the workers) and the whole planner, byte for byte, node
// counts included. Without OpenMP every count runs on one thread and the test still holds.
#include "plan/zel_internal.h"
#include "zel_env.h"
#include "zel_testlib.h"
#include "zgtest.h"

#include "workload/workload.h"

static int same_sol(const zel_model *m, const zel_sol *a, const zel_sol *b) {
    return a->T == b->T && a->K == b->K &&
           !memcmp(a->opt, b->opt, sizeof(int32_t) * (size_t)m->n_units);
}

// Random models: stage 1 with the neighbourhood search (small budgets, so that the budget also
// ends some searches) and with the column DP, at 1, 2 and 4 threads.
ZG_TEST(stage1_same_result_for_every_thread_count) {
    zg_rng rng;
    zg_rng_init(&rng, 21);
    int runs = 0, improved = 0;
    for (int trial = 0; trial < 24; trial++) {
        int32_t N = (int32_t)zg_rng_int(&rng, 10, 32);
        int32_t ng = (int32_t)zg_rng_int(&rng, 2, 4);
        int32_t idx[8];
        zg_problem pr = trand_problem(&rng, N, ng, 6, idx);
        zel_model m;
        zg_error err;
        CHECK_OK(zel_model_build(&pr, idx, ng, NULL, NULL, &m, &err), &err);
        if (trial % 2) {
            m.extra_area = zg_rng_range(&rng, 0.0, 4.0 * N);
            m.fill_mem = m.extra_area > 0 ? zg_rng_range(&rng, 0.2, 0.5) * N * pr.mem_cap : 0;
        }
        int64_t lns = trial % 3 == 0 ? 300 : 3000;  // 300: the budget ends the search
        zel_limits lim = {200, 0, ZEL_SEARCH_GAP, 0, 0}, lim2 = {50, 0, ZEL_SEARCH_GAP, 0, 0};
        zel_sol s[3];
        zel_stage1 st[3];
        zg_status rc[3];
        static const int32_t threads[3] = {1, 2, 4};
        for (int t = 0; t < 3; t++) {
            CHECK_OK(zel_sol_alloc(&m, &s[t], &err), &err);
            m.threads = threads[t];
            rc[t] = zel_anchor_solve_lns(&m, 1e-3, &lim, &lim2, lns, NULL, &s[t], NULL, NULL,
                                         &st[t], &err);
        }
        for (int t = 1; t < 3; t++) {
            CHECK_EQ_INT(rc[t], rc[0]);
            if (rc[0]) continue;
            CHECK_MSG(same_sol(&m, &s[t], &s[0]), "trial %d: %d threads T %.12g K %lld, one "
                      "thread T %.12g K %lld", trial, threads[t], s[t].T, (long long)s[t].K,
                      s[0].T, (long long)s[0].K);
            CHECK_EQ_INT(st[t].nodes, st[0].nodes);
            CHECK(st[t].lb == st[0].lb && st[t].optimal == st[0].optimal);
        }
        if (!rc[0]) {
            runs++;
            // the neighbourhood search alone, from the greedy start
            zel_sol g[2];
            int64_t used[2];
            double lb = zel_model_lower_bound(&m);
            for (int t = 0; t < 2; t++) {
                CHECK_OK(zel_sol_alloc(&m, &g[t], &err), &err);
                m.threads = t ? 3 : 1;
                if (!zel_heuristic(&m, lb, &g[t])) g[t].T = INFINITY;
                double T0 = g[t].T;
                used[t] = g[t].T < INFINITY ? zel_lns_improve(&m, &g[t], lns, lns / 8 + 20) : 0;
                if (t == 0) improved += g[t].T < T0;
            }
            CHECK(same_sol(&m, &g[0], &g[1]));
            CHECK_EQ_INT(used[0], used[1]);
            zel_sol_free(&g[0]), zel_sol_free(&g[1]);
        }
        for (int t = 0; t < 3; t++) zel_sol_free(&s[t]);
        zel_model_free(&m);
        tprob_free(&pr);
    }
    CHECK(runs >= 20);
    CHECK_MSG(improved > 0, "the neighbourhood search improved no start (%d runs)", runs);
}

// Column DPs large enough to run on the workers (work >= ZEL_COL_PAR_WORK).
ZG_TEST(column_dp_same_result_for_every_thread_count) {
    zg_rng rng;
    zg_rng_init(&rng, 5);
    int runs = 0;
    for (int trial = 0; trial < 8; trial++) {
        int32_t N = (int32_t)zg_rng_int(&rng, 20, 32), idx[3] = {0, 1, 2};
        tgroup tg[3];
        for (int g = 0; g < 3; g++) tg[g] = tgroup_rand(&rng, g < 2 ? 6 : 3);  // work ~2.6e5
        zg_problem pr = tprob_make(N, 3.0, tg, 3, 8, trial % 2);
        zel_model m;
        zg_error err;
        CHECK_OK(zel_model_build(&pr, idx, 3, NULL, NULL, &m, &err), &err);
        zel_sol a, b;
        CHECK_OK(zel_sol_alloc(&m, &a, &err), &err);
        CHECK_OK(zel_sol_alloc(&m, &b, &err), &err);
        double lb = zel_model_lower_bound(&m);
        double ub = trial % 2 ? INFINITY : 1.05 * lb;  // doubling from the bound; bisection
        m.threads = 1;
        int fa = zel_column_incumbent(&m, lb, ub, &a);
        m.threads = 3;
        int fb = zel_column_incumbent(&m, lb, ub, &b);
        CHECK_EQ_INT(fa, fb);
        if (fa) {
            runs++;
            CHECK(same_sol(&m, &a, &b));
        }
        zel_sol_free(&a), zel_sol_free(&b);
        zel_model_free(&m);
        tprob_free(&pr);
    }
    CHECK_MSG(runs >= 4, "the DP found a plan on %d of 8 models", runs);
}

// The planner: the same plan JSON at 1 and 3 threads on paper-like batches (16 and 32 ranks,
// where stage 1 runs the column DP and the neighbourhood search).
ZG_TEST(planner_same_plan_for_every_thread_count) {
    static const char *clusters[2] = {"16xA800", "32xA6000"};
    for (int c = 0; c < 2; c++) {
        env e;
        zg_error err;
        CHECK(env_init(&e, clusters[c], &err) == 0);
        for (int k = 0; k < 3; k++) {
            zg_mix_spec spec = {0.35 + 0.1 * k, 175000, 15, e.cluster.world_size, 3};
            zg_batch b;
            zg_batch_init(&b);
            CHECK_OK(zg_workload_mix(&e.model, &spec, k, &b, &err), &err);
            char *text[2] = {NULL, NULL};
            for (int t = 0; t < 2; t++) {
                zg_planner pl;
                zg_plan_ctx ctx = e.ctx;
                ctx.opts.threads = t ? 3 : 1;
                CHECK_OK(zg_planner_init(&pl, "zellige", &ctx, &err), &err);
                zg_plan p;
                zg_plan_init(&p);
                CHECK_OK(zg_planner_plan(&pl, &b, &p, &err), &err);
                text[t] = plan_text(&p);
                zg_plan_free(&p);
                zg_planner_free(&pl);
            }
            CHECK_MSG(text[0] && text[1] && !strcmp(text[0], text[1]),
                      "%s batch %d: the plan differs at 3 threads", clusters[c], k);
            cJSON_free(text[0]), cJSON_free(text[1]);
            zg_batch_free(&b);
        }
        zg_pricer_free(&e.pricer);
    }
}

ZG_TEST_MAIN()
