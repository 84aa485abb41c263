// test_baselines.c — the baseline planners dp, adaptive, usp, static: exact placements on small
// hand-checked instances (local test pricer), honest infeasibility, degenerate batches,
// determinism, and validity under the analytic pricer on the paper's settings.
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"
#include "plan_testlib.h"
#include "planner/planner.h"
#include "zgtest.h"

// The test pricer's prices below: time = 1e-6 L^2/λ + 1e-3 L/λ + comm, mem = L/λ bytes.

static zg_status run(fixture *f, const char *policy, zg_plan *p, zg_error *err) {
    return plan_policy(&f->ctx, policy, &f->b, p, err);
}

static const char *const baselines[] = {"dp", "adaptive", "usp", "static"};

// ---------------------------------------------------------------------------------------------

FX_TEST(dp_token_lpt_exact, 2, 1e9) {
    int64_t tok[] = {100, 60, 50, 40, 30, 20};
    for (int i = 0; i < 6; i++) fx_push(f, tok[i], NULL);
    zg_plan p;
    zg_error err;
    CHECK_OK(run(f, "dp", &p, &err), &err);
    // LPT on tokens: 100->r0, 60->r1, 50->r1, 40->r0, 30->r1, 20->r0 (tie 140/140: lowest rank)
    int want[] = {0, 1, 1, 0, 1, 0};
    for (int i = 0; i < 6; i++) {
        CHECK_EQ_INT(p.p[i].n_ranks, 1);
        CHECK(zg_config_is_whole(p.p[i].config));
        CHECK_EQ_INT(p.p[i].ranks[0], want[i]);
    }
    CHECK_EQ_INT(p.ranks[0].tokens, 160);
    CHECK_EQ_INT(p.ranks[1].tokens, 140);
    CHECK_STR(p.policy, "dp");
    zg_plan_free(&p);
}

FX_TEST(dp_memory_checked_and_infeasible, 2, 150) {  // mem = tokens bytes
    int64_t tok[] = {100, 60, 50, 40, 30, 20};
    for (int i = 0; i < 6; i++) fx_push(f, tok[i], NULL);
    zg_plan p;
    zg_error err;
    // ... 30 -> r1 (140 B); 20 fits neither rank (140 + 20 > 150)
    CHECK(run(f, "dp", &p, &err) == ZG_ERR_INFEASIBLE);
    CHECK_MSG(strstr(err.msg, "dp: no rank has room for sequence 5 (20 tokens") != NULL, "%s",
              err.msg);
    CHECK_MSG(strstr(err.msg, "needs 20 B whole") != NULL, "%s", err.msg);
    CHECK_MSG(strstr(err.msg, "10 B free of the 250 B cap") != NULL, "%s", err.msg);
    zg_plan_free(&p);
    f->b.seqs[5].tokens = 10;  // now fits exactly: 140 + 10 = 150
    CHECK_OK(run(f, "dp", &p, &err), &err);
    CHECK_EQ_INT(p.p[5].ranks[0], 0);
    zg_plan_free(&p);
    f->b.seqs[2].tokens = 151;  // does not fit whole anywhere
    CHECK(run(f, "dp", &p, &err) == ZG_ERR_INFEASIBLE);
    CHECK_MSG(strstr(err.msg, "dp: sequence 2 (151 tokens) runs whole and needs 251 B (151 B "
                              "+ base 100 B) on one rank, cap 250 B") != NULL,
              "%s", err.msg);
    zg_plan_free(&p);
}

FX_TEST(adaptive_price_lpt_exact, 2, 1e9) {
    int64_t tok[] = {300, 1000, 500, 500};
    for (int i = 0; i < 4; i++) fx_push(f, tok[i], NULL);
    zg_plan p, d;
    zg_error err;
    // prices: 1000 -> 2.0 s, 500 -> 0.75 s, 300 -> 0.39 s. Adaptive: 1000->r0, 500,500,300->r1
    CHECK_OK(run(f, "adaptive", &p, &err), &err);
    CHECK_EQ_INT(p.p[1].ranks[0], 0);
    CHECK_EQ_INT(p.p[2].ranks[0], 1);
    CHECK_EQ_INT(p.p[3].ranks[0], 1);
    CHECK_EQ_INT(p.p[0].ranks[0], 1);
    CHECK_NEAR(p.makespan, 2.0, 0, 1e-12);
    CHECK_NEAR(p.ranks[1].time, 0.75 + 0.75 + 0.39, 0, 1e-12);
    // dp balances tokens instead: 300 goes to r0 (1000 vs 1000 tokens, lowest rank) -> slower
    CHECK_OK(run(f, "dp", &d, &err), &err);
    CHECK_EQ_INT(d.p[0].ranks[0], 0);
    CHECK_NEAR(d.makespan, 2.39, 0, 1e-12);
    zg_plan_free(&p);
    zg_plan_free(&d);
    fx_set_room(f, 999);
    CHECK(run(f, "adaptive", &p, &err) == ZG_ERR_INFEASIBLE);
    CHECK_MSG(strstr(err.msg, "adaptive: sequence 1 (1000 tokens) runs whole") != NULL, "%s",
              err.msg);
    zg_plan_free(&p);
}

FX_TEST(usp_best_factorization_and_short_sequences, 4, 1e9) {
    fx_push(f, 1000, NULL);  // (1,4,1) is cheapest: Ulysses comm < ring
    fx_push(f, 2, NULL);     // degree 2 on the least-loaded aligned block
    fx_push(f, 3, NULL);     // degree 3: h = 3 does not divide 4 heads -> ring (1,1,3)
    fx_push(f, 1, NULL);     // one token: whole, on the least-loaded rank
    zg_plan p;
    zg_error err;
    CHECK_OK(run(f, "usp", &p, &err), &err);
    CHECK(zg_config_eq(p.p[0].config, (zg_config){1, 4, 1}));
    CHECK_EQ_INT(p.p[0].ranks[0], 0);
    CHECK_EQ_INT(p.p[0].ranks[3], 3);
    CHECK_EQ_INT(p.p[0].shards[0].end, 250);
    CHECK(zg_config_eq(p.p[1].config, (zg_config){1, 2, 1}));
    CHECK_EQ_INT(p.p[1].ranks[0], 0);
    CHECK(zg_config_eq(p.p[2].config, (zg_config){1, 1, 3}));
    CHECK_EQ_INT(p.p[2].ranks[0], 0);
    CHECK(zg_config_is_whole(p.p[3].config));
    CHECK_EQ_INT(p.p[3].ranks[0], 3);  // ranks 0-2 carry more
    CHECK_NEAR(p.p[0].time, 0.25 + 0.25 + 0.025, 0, 1e-12);
    zg_plan_free(&p);
    // a sequence that needs more than the cap even over all ranks
    fx_set_room(f, 200);
    CHECK(run(f, "usp", &p, &err) == ZG_ERR_INFEASIBLE);
    CHECK_MSG(strstr(err.msg, "usp: sequence 0 (1000 tokens) fits no (1,h,k) split over 4 "
                              "ranks: needs 350 B (250 B + base 100 B) per rank at best, "
                              "cap 300 B") != NULL,
              "%s", err.msg);
    zg_plan_free(&p);
    // each fits alone, but not all together: 4 x 300/4 = 300 > 250
    fx_set_room(f, 250);
    zg_batch_free(&f->b);
    zg_batch_init(&f->b);
    for (int i = 0; i < 4; i++) fx_push(f, 300, NULL);
    CHECK(run(f, "usp", &p, &err) == ZG_ERR_INFEASIBLE);
    CHECK_MSG(strstr(err.msg, "at sequence 3 (300 tokens") != NULL, "%s", err.msg);
    zg_plan_free(&p);
}

FX_TEST(static_two_ranks_exact_layout, 2, 800) {
    fx_push(f, 1000, NULL);  // 1000 B whole > 800: needs a group of 2
    for (int i = 0; i < 4; i++) fx_push(f, 100, NULL);
    zg_plan p;
    zg_error err;
    CHECK_OK(run(f, "static", &p, &err), &err);
    // layouts tried: g1n2(1,1,1) (infeasible), g2n1 x {(1,2,1), (1,1,2), (2,1,1)}
    CHECK_STR(p.summary, "layout g2n1(1,2,1) (best of 4 layouts)");
    for (int i = 0; i < 5; i++) CHECK(zg_config_eq(p.p[i].config, (zg_config){1, 2, 1}));
    zg_plan_free(&p);
    fx_set_room(f, 400);  // 1000/2 = 500 > 400 even split: no layout
    CHECK(run(f, "static", &p, &err) == ZG_ERR_INFEASIBLE);
    CHECK_MSG(strstr(err.msg, "static: no layout of disjoint groups holds the batch (4 tried)") !=
                  NULL,
              "%s", err.msg);
    CHECK_MSG(strstr(err.msg, "sequence 0 (1000 tokens, needs at least 600 B (500 B + base "
                              "100 B) per rank in any group; cap 500 B)") != NULL, "%s",
              err.msg);
    zg_plan_free(&p);
}

FX_TEST(static_mixed_layout_beats_uniform_ones, 4, 900) {
    f->t.lat = 0.05;  // splitting costs 50 ms: small ones stay whole
    fx_push(f, 1000, NULL);  // must split (1000 B > 900)
    for (int i = 0; i < 20; i++) fx_push(f, 100, NULL);
    zg_plan s, u, a;
    zg_error err;
    CHECK_OK(run(f, "static", &s, &err), &err);
    // 10 uniform layouts (one per config of degree 1, 2, 4) + the mix g1n2+g2n1. The mix: the
    // big one on the pair (1.1 s), 9 small ones per single rank (memory 900 B: 0.99 s), the two
    // left on the pair (+0.11 s each) -> 1.32 s; g2n2(1,2,1) gives 1.65 s, g4n1(1,4,1) 2.175 s.
    CHECK_STR(s.summary, "layout g1n2(1,1,1)+g2n1(1,2,1) (best of 11 layouts)");
    CHECK_NEAR(s.makespan, 1.32, 0, 1e-12);
    CHECK_EQ_INT(s.p[0].ranks[0], 2);
    CHECK_EQ_INT(s.p[0].ranks[1], 3);
    CHECK(zg_config_is_whole(s.p[1].config));
    CHECK_EQ_INT(s.ranks[0].tokens, 900);
    // USP is the layout g4n1(1,4,1) here; adaptive would be g1n4 (infeasible)
    CHECK_OK(run(f, "usp", &u, &err), &err);
    CHECK_NEAR(u.makespan, 2.175, 0, 1e-12);
    CHECK(run(f, "adaptive", &a, &err) == ZG_ERR_INFEASIBLE);
    zg_plan_free(&a);
    zg_plan_free(&s);
    // with loose memory, static searched adaptive's layout too: never worse
    fx_set_room(f, 1e9);
    CHECK_OK(run(f, "static", &s, &err), &err);
    CHECK_OK(run(f, "adaptive", &a, &err), &err);
    CHECK(s.makespan <= a.makespan * (1 + 1e-12));
    zg_plan_free(&s);
    zg_plan_free(&u);
    zg_plan_free(&a);
}

FX_TEST(degenerate_batches, 4, 1e9) {
    zg_error err;
    for (int k = 0; k < 4; k++) {  // empty batch
        zg_plan p;
        CHECK_OK(run(f, baselines[k], &p, &err), &err);
        CHECK_EQ_INT(p.n, 0);
        CHECK_NEAR(p.makespan, 0, 0, 0);
        zg_plan_free(&p);
    }
    fx_push(f, 1, NULL);  // one 1-token sequence on 4 ranks
    for (int k = 0; k < 4; k++) {
        zg_plan p;
        CHECK_OK(run(f, baselines[k], &p, &err), &err);
        CHECK_EQ_INT(p.p[0].n_ranks, 1);
        zg_plan_free(&p);
    }
    for (int i = 0; i < 7; i++) fx_push(f, 64, NULL);  // identical sequences
    for (int k = 0; k < 4; k++) {
        zg_plan p;
        CHECK_OK(run(f, baselines[k], &p, &err), &err);
        CHECK_EQ_INT(p.n, 8);
        zg_plan_free(&p);
    }
}

FX_TEST(baselines_are_deterministic, 8, 1e9) {
    zg_rng rng;
    zg_rng_init(&rng, 42);
    for (int i = 0; i < 60; i++) fx_push(f, zg_rng_int(&rng, 1, 3000), NULL);
    zg_error err;
    for (int k = 0; k < 4; k++) {
        zg_plan p, q;
        CHECK_OK(run(f, baselines[k], &p, &err), &err);
        CHECK_OK(run(f, baselines[k], &q, &err), &err);
        char *a = plan_text(&p), *b = plan_text(&q);
        CHECK_MSG(strcmp(a, b) == 0, "policy %s: plans differ", baselines[k]);
        free(a);
        free(b);
        zg_plan_free(&p);
        zg_plan_free(&q);
    }
}

// The paper's setting under the analytic pricer: every baseline gives a valid plan or an honest
// ZG_ERR_INFEASIBLE that names a sequence.
ZG_TEST(baselines_on_analytic_pricer) {
    env e;
    zg_error err;
    CHECK_OK(env_init_model(&e, "wan2.1-1.3b", "8xA800", &err), &err);
    const zg_pricer *pr = &e.pricer;
    zg_mix_spec spec = {0.5, 125000, 10, 8, 7};
    zg_batch b;
    CHECK_OK(zg_workload_mix(&e.model, &spec, 0, &b, &err), &err);
    int ok = 0;
    for (int k = 0; k < 4; k++) {
        zg_planner pl;
        zg_plan p;
        zg_plan_init(&p);
        CHECK_OK(zg_planner_init(&pl, baselines[k], &e.ctx, &err), &err);
        zg_status st = zg_planner_plan(&pl, &b, &p, &err);
        CHECK_MSG(st == ZG_OK || st == ZG_ERR_INFEASIBLE, "%s: %s", baselines[k], err.msg);
        if (st == ZG_ERR_INFEASIBLE) {
            CHECK_MSG(strstr(err.msg, "sequence") != NULL, "%s: %s", baselines[k], err.msg);
            printf("  %-8s infeasible: %s\n", baselines[k], err.msg);
        }
        else {
            ok++;
            zg_plan_stats stats;
            CHECK_OK(zg_plan_evaluate(&p, &b, pr, &stats, &err), &err);
            CHECK_MSG(stats.balance >= 1.0 - 1e-12 && stats.makespan > 0, "%s: balance %.17g",
                      baselines[k], stats.balance);
            CHECK(stats.peak_mem <= pr->mem_cap * (1 + 1e-9));
            if (!strcmp(baselines[k], "usp")) CHECK(stats.comm.alltoall + stats.comm.ring > 0);
            if (!strcmp(baselines[k], "dp")) CHECK_EQ_INT(stats.n_split, 0);
            printf("  %-8s makespan %.3f s  balance %.4f  split %lld  %s\n", baselines[k],
                   stats.makespan, stats.balance, (long long)stats.n_split, p.summary);
        }
        zg_planner_free(&pl);
        zg_plan_free(&p);
    }
    CHECK(ok >= 2);  // usp and static always fit this low-load mix
    zg_batch_free(&b);
    zg_pricer_free(&e.pricer);
}

ZG_TEST_MAIN()
