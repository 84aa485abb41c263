// test_baselines.c — the baseline planners dp, adaptive, usp, static: exact placements on small
// hand-checked instances (local test pricer), honest infeasibility, degenerate batches,
// determinism, and validity under the analytic pricer on the paper's settings.
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"
#include "planner/planner.h"
#include "zgtest.h"

// ---- test pricer: time = a*L^2/λ + b*L/λ + comm (Ulysses < ring < all-gather), mem = c*L/λ ----
typedef struct tp {
    double a, b, c, comm, lat;  // lat: fixed seconds per split (collective start-up)
} tp;

static zg_status tp_price(const zg_pricer *p, const zg_seq *s, zg_config c, const int32_t *ranks,
                          int32_t n, zg_price *out, zg_error *err) {
    (void)ranks, (void)err;
    const tp *t = p->impl;
    double L = (double)s->tokens, lam = n;
    double comm = 0;
    if (c.h > 1) comm += t->comm * L / lam;
    if (c.k > 1) comm += 2 * t->comm * L / lam;
    if (c.q > 1) comm += 3 * t->comm * L / lam;
    if (n > 1) comm += t->lat;
    out->time = t->a * L * L / lam + t->b * L / lam + comm;
    out->mem = t->c * L / lam + (c.q > 1 ? t->c * L / 2 : 0);
    return ZG_OK;
}

static zg_comm_bytes tp_comm(const zg_pricer *p, const zg_seq *s, zg_config c) {
    (void)p;
    zg_comm_bytes b = {0, 0, 0};
    if (c.h > 1) b.alltoall = 10.0 * (double)s->tokens;
    if (c.k > 1) b.ring = 20.0 * (double)s->tokens;
    return b;
}

static tp g_tp = {1e-6, 1e-3, 1.0, 1e-4, 0};

typedef struct fixture {
    zg_model m;
    zg_cluster c;
    zg_pricer p;
    zg_plan_ctx ctx;
    zg_batch b;
} fixture;

static void fx_init(fixture *f, int32_t world, double cap) {
    zg_error err;
    memset(f, 0, sizeof *f);
    zg_model_preset("tiny", &f->m, &err);  // 4 heads
    snprintf(f->c.name, sizeof f->c.name, "test%d", world);
    f->c.world_size = world;
    f->c.ranks_per_node = world;
    f->c.mem_bytes = 1e12;
    f->c.mem_usable_frac = 1;
    f->p.kind = "test";
    f->p.impl = &g_tp;
    f->p.price = tp_price;
    f->p.comm = tp_comm;
    f->p.mem_cap = cap;
    f->ctx.model = &f->m;
    f->ctx.cluster = &f->c;
    f->ctx.pricer = &f->p;
    zg_planner_opts_default(&f->ctx.opts);
    zg_batch_init(&f->b);
}

static void fx_push(fixture *f, int64_t tokens) {
    zg_seq s;
    zg_seq_init(&s);
    s.id = f->b.n;
    s.tokens = tokens;
    zg_error err;
    zg_batch_push(&f->b, &s, &err);
}

static zg_status run(fixture *f, const char *policy, zg_plan *p, zg_error *err) {
    zg_planner pl;
    zg_plan_init(p);
    zg_status st = zg_planner_init(&pl, policy, &f->ctx, err);
    if (st) return st;
    st = zg_planner_plan(&pl, &f->b, p, err);
    zg_planner_free(&pl);
    return st;
}

static char *plan_text(zg_plan *p) {
    p->plan_time_ms = 0;  // the only field that is not a function of the inputs
    cJSON *j = zg_plan_to_json(p);
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return s;
}

static const char *const baselines[] = {"dp", "adaptive", "usp", "static"};

// ---------------------------------------------------------------------------------------------

ZG_TEST(dp_token_lpt_exact) {
    fixture f;
    fx_init(&f, 2, 1e9);
    int64_t tok[] = {100, 60, 50, 40, 30, 20};
    for (int i = 0; i < 6; i++) fx_push(&f, tok[i]);
    zg_plan p;
    zg_error err;
    CHECK_OK(run(&f, "dp", &p, &err), &err);
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
    zg_batch_free(&f.b);
}

ZG_TEST(dp_memory_checked_and_infeasible) {
    fixture f;
    fx_init(&f, 2, 150);  // mem = tokens bytes
    int64_t tok[] = {100, 60, 50, 40, 30, 20};
    for (int i = 0; i < 6; i++) fx_push(&f, tok[i]);
    zg_plan p;
    zg_error err;
    // ... 30 -> r1 (140 B); 20 fits neither rank (140 + 20 > 150)
    CHECK(run(&f, "dp", &p, &err) == ZG_ERR_INFEASIBLE);
    CHECK_MSG(strstr(err.msg, "dp: no rank has room for sequence 5 (20 tokens") != NULL, "%s",
              err.msg);
    CHECK_MSG(strstr(err.msg, "10 B free of the 150 B cap") != NULL, "%s", err.msg);
    zg_plan_free(&p);
    f.b.seqs[5].tokens = 10;  // now fits exactly: 140 + 10 = 150
    CHECK_OK(run(&f, "dp", &p, &err), &err);
    CHECK_EQ_INT(p.p[5].ranks[0], 0);
    zg_plan_free(&p);
    f.b.seqs[2].tokens = 151;  // does not fit whole anywhere
    CHECK(run(&f, "dp", &p, &err) == ZG_ERR_INFEASIBLE);
    CHECK_MSG(strstr(err.msg, "dp: sequence 2 (151 tokens) runs whole and needs 151 B") != NULL,
              "%s", err.msg);
    zg_plan_free(&p);
    zg_batch_free(&f.b);
}

ZG_TEST(adaptive_price_lpt_exact) {
    fixture f;
    fx_init(&f, 2, 1e9);
    int64_t tok[] = {300, 1000, 500, 500};
    for (int i = 0; i < 4; i++) fx_push(&f, tok[i]);
    zg_plan p, d;
    zg_error err;
    // prices: 1000 -> 2.0 s, 500 -> 0.75 s, 300 -> 0.39 s. Adaptive: 1000->r0, 500,500,300->r1
    CHECK_OK(run(&f, "adaptive", &p, &err), &err);
    CHECK_EQ_INT(p.p[1].ranks[0], 0);
    CHECK_EQ_INT(p.p[2].ranks[0], 1);
    CHECK_EQ_INT(p.p[3].ranks[0], 1);
    CHECK_EQ_INT(p.p[0].ranks[0], 1);
    CHECK_NEAR(p.makespan, 2.0, 0, 1e-12);
    CHECK_NEAR(p.ranks[1].time, 0.75 + 0.75 + 0.39, 0, 1e-12);
    // dp balances tokens instead: 300 goes to r0 (1000 vs 1000 tokens, lowest rank) -> slower
    CHECK_OK(run(&f, "dp", &d, &err), &err);
    CHECK_EQ_INT(d.p[0].ranks[0], 0);
    CHECK_NEAR(d.makespan, 2.39, 0, 1e-12);
    zg_plan_free(&p);
    zg_plan_free(&d);
    f.p.mem_cap = 999;
    CHECK(run(&f, "adaptive", &p, &err) == ZG_ERR_INFEASIBLE);
    CHECK_MSG(strstr(err.msg, "adaptive: sequence 1 (1000 tokens) runs whole") != NULL, "%s",
              err.msg);
    zg_plan_free(&p);
    zg_batch_free(&f.b);
}

ZG_TEST(usp_best_factorization_and_short_sequences) {
    fixture f;
    fx_init(&f, 4, 1e9);
    fx_push(&f, 1000);  // (1,4,1) is cheapest: Ulysses comm < ring
    fx_push(&f, 2);     // degree 2 on the least-loaded aligned block
    fx_push(&f, 3);     // degree 3: h = 3 does not divide 4 heads -> ring (1,1,3)
    fx_push(&f, 1);     // one token: whole, on the least-loaded rank
    zg_plan p;
    zg_error err;
    CHECK_OK(run(&f, "usp", &p, &err), &err);
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
    f.p.mem_cap = 200;
    CHECK(run(&f, "usp", &p, &err) == ZG_ERR_INFEASIBLE);
    CHECK_MSG(strstr(err.msg, "usp: sequence 0 (1000 tokens) fits no (1,h,k) split over 4 "
                              "ranks: needs 250 B per rank at best, cap 200 B") != NULL,
              "%s", err.msg);
    zg_plan_free(&p);
    // each fits alone, but not all together: 4 x 300/4 = 300 > 250
    f.p.mem_cap = 250;
    zg_batch_free(&f.b);
    zg_batch_init(&f.b);
    for (int i = 0; i < 4; i++) fx_push(&f, 300);
    CHECK(run(&f, "usp", &p, &err) == ZG_ERR_INFEASIBLE);
    CHECK_MSG(strstr(err.msg, "at sequence 3 (300 tokens") != NULL, "%s", err.msg);
    zg_plan_free(&p);
    zg_batch_free(&f.b);
}

ZG_TEST(static_two_ranks_exact_layout) {
    fixture f;
    fx_init(&f, 2, 800);
    fx_push(&f, 1000);  // 1000 B whole > 800: needs a group of 2
    for (int i = 0; i < 4; i++) fx_push(&f, 100);
    zg_plan p;
    zg_error err;
    CHECK_OK(run(&f, "static", &p, &err), &err);
    // layouts tried: g1n2(1,1,1) (infeasible), g2n1 x {(1,2,1), (1,1,2), (2,1,1)}
    CHECK_STR(p.summary, "layout g2n1(1,2,1) (best of 4 layouts)");
    for (int i = 0; i < 5; i++) CHECK(zg_config_eq(p.p[i].config, (zg_config){1, 2, 1}));
    zg_plan_free(&p);
    f.p.mem_cap = 400;  // 1000/2 = 500 > 400 even split: no layout
    CHECK(run(&f, "static", &p, &err) == ZG_ERR_INFEASIBLE);
    CHECK_MSG(strstr(err.msg, "static: no layout of disjoint groups holds the batch (4 tried)") !=
                  NULL,
              "%s", err.msg);
    CHECK_MSG(strstr(err.msg, "sequence 0 (1000 tokens, needs at least 500 B") != NULL, "%s",
              err.msg);
    zg_plan_free(&p);
    zg_batch_free(&f.b);
}

ZG_TEST(static_mixed_layout_beats_uniform_ones) {
    fixture f;
    fx_init(&f, 4, 900);
    tp lat = {1e-6, 1e-3, 1.0, 1e-4, 0.05};  // splitting costs 50 ms: small ones stay whole
    f.p.impl = &lat;
    fx_push(&f, 1000);  // must split (1000 B > 900)
    for (int i = 0; i < 20; i++) fx_push(&f, 100);
    zg_plan s, u, a;
    zg_error err;
    CHECK_OK(run(&f, "static", &s, &err), &err);
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
    CHECK_OK(run(&f, "usp", &u, &err), &err);
    CHECK_NEAR(u.makespan, 2.175, 0, 1e-12);
    CHECK(run(&f, "adaptive", &a, &err) == ZG_ERR_INFEASIBLE);
    zg_plan_free(&a);
    zg_plan_free(&s);
    // with loose memory, static searched adaptive's layout too: never worse
    f.p.mem_cap = 1e9;
    CHECK_OK(run(&f, "static", &s, &err), &err);
    CHECK_OK(run(&f, "adaptive", &a, &err), &err);
    CHECK(s.makespan <= a.makespan * (1 + 1e-12));
    zg_plan_free(&s);
    zg_plan_free(&u);
    zg_plan_free(&a);
    zg_batch_free(&f.b);
}

ZG_TEST(degenerate_batches) {
    fixture f;
    fx_init(&f, 4, 1e9);
    zg_error err;
    for (int k = 0; k < 4; k++) {  // empty batch
        zg_plan p;
        CHECK_OK(run(&f, baselines[k], &p, &err), &err);
        CHECK_EQ_INT(p.n, 0);
        CHECK_NEAR(p.makespan, 0, 0, 0);
        zg_plan_free(&p);
    }
    fx_push(&f, 1);  // one 1-token sequence on 4 ranks
    for (int k = 0; k < 4; k++) {
        zg_plan p;
        CHECK_OK(run(&f, baselines[k], &p, &err), &err);
        CHECK_EQ_INT(p.p[0].n_ranks, 1);
        zg_plan_free(&p);
    }
    for (int i = 0; i < 7; i++) fx_push(&f, 64);  // identical sequences
    for (int k = 0; k < 4; k++) {
        zg_plan p;
        CHECK_OK(run(&f, baselines[k], &p, &err), &err);
        CHECK_EQ_INT(p.n, 8);
        zg_plan_free(&p);
    }
    zg_batch_free(&f.b);
}

ZG_TEST(baselines_are_deterministic) {
    fixture f;
    fx_init(&f, 8, 1e9);
    zg_rng rng;
    zg_rng_init(&rng, 42);
    for (int i = 0; i < 60; i++) fx_push(&f, zg_rng_int(&rng, 1, 3000));
    zg_error err;
    for (int k = 0; k < 4; k++) {
        zg_plan p, q;
        CHECK_OK(run(&f, baselines[k], &p, &err), &err);
        CHECK_OK(run(&f, baselines[k], &q, &err), &err);
        char *a = plan_text(&p), *b = plan_text(&q);
        CHECK_MSG(strcmp(a, b) == 0, "policy %s: plans differ", baselines[k]);
        free(a);
        free(b);
        zg_plan_free(&p);
        zg_plan_free(&q);
    }
    zg_batch_free(&f.b);
}

// The paper's setting under the analytic pricer: every baseline gives a valid plan or an honest
// ZG_ERR_INFEASIBLE that names a sequence.
ZG_TEST(baselines_on_analytic_pricer) {
    zg_model m;
    zg_cluster c;
    zg_pricer pr;
    zg_error err;
    CHECK_OK(zg_model_preset("wan2.1-1.3b", &m, &err), &err);
    CHECK_OK(zg_cluster_preset("8xA800", &c, &err), &err);
    zg_cost_opts co;
    zg_cost_opts_default(&co);
    CHECK_OK(zg_cost_analytic_init(&pr, &m, &c, &co, &err), &err);
    zg_mix_spec spec = {0.5, 125000, 10, 8, 7};
    zg_batch b;
    CHECK_OK(zg_workload_mix(&m, &spec, 0, &b, &err), &err);
    zg_plan_ctx ctx = {&m, &c, &pr, NULL, {0}};
    zg_planner_opts_default(&ctx.opts);
    int ok = 0;
    for (int k = 0; k < 4; k++) {
        zg_planner pl;
        zg_plan p;
        zg_plan_init(&p);
        CHECK_OK(zg_planner_init(&pl, baselines[k], &ctx, &err), &err);
        zg_status st = zg_planner_plan(&pl, &b, &p, &err);
        CHECK_MSG(st == ZG_OK || st == ZG_ERR_INFEASIBLE, "%s: %s", baselines[k], err.msg);
        if (st == ZG_ERR_INFEASIBLE) {
            CHECK_MSG(strstr(err.msg, "sequence") != NULL, "%s: %s", baselines[k], err.msg);
            printf("  %-8s infeasible: %s\n", baselines[k], err.msg);
        }
        else {
            ok++;
            zg_plan_stats stats;
            CHECK_OK(zg_plan_evaluate(&p, &b, &pr, &stats, &err), &err);
            CHECK_MSG(stats.balance >= 1.0 - 1e-12 && stats.makespan > 0, "%s: balance %.17g",
                      baselines[k], stats.balance);
            CHECK(stats.peak_mem <= pr.mem_base + pr.mem_cap * (1 + 1e-9));
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
    zg_pricer_free(&pr);
}

ZG_TEST_MAIN()
