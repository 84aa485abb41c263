// test_zellige_plan.c — `--policy zellige` and `--policy joint` end to end on the analytic
// pricer: legal plans whose per-rank loads equal the ECF counts' loads, byte-identical plans,
// degenerate and memory-infeasible batches, never worse than the baselines, joint <= zellige;
// zel_stage1_model builds the model zel_two_stage solves.
#include "zgtest.h"
#include "zel_env.h"
#include "zellige/internal.h"
#include "planner/planner.h"

static void add(zg_batch *b, int64_t id, int64_t tokens, const char *bucket) {
    zg_seq s;
    zg_seq_init(&s);
    s.id = id;
    s.tokens = tokens;
    s.kind = tokens > 20000 ? ZG_SEQ_VIDEO : ZG_SEQ_IMAGE;
    snprintf(s.bucket, sizeof s.bucket, "%s", bucket);
    zg_batch_push(b, &s, NULL);
}

// A small mixed batch: 3 videos and 40 images (8 ranks, low load).
static void small_batch(zg_batch *b, uint64_t seed) {
    zg_rng rng;
    zg_rng_init(&rng, seed);
    zg_batch_init(b);
    int64_t id = 0;
    static const int64_t vids[3] = {63960, 147600, 334560};
    static const int64_t imgs[4] = {256, 1560, 3600, 8160};
    static const char *vb[3] = {"480p-10s", "720p-10s", "1080p-10s"};
    static const char *ib[4] = {"256p-img", "480p-img", "720p-img", "1080p-img"};
    for (int i = 0; i < 3; i++) {
        int k = (int)zg_rng_int(&rng, 0, 2);
        add(b, id++, vids[k], vb[k]);
    }
    for (int i = 0; i < 40; i++) {
        int k = (int)zg_rng_int(&rng, 0, 3);
        add(b, id++, imgs[k], ib[k]);
    }
}

// zel_stage1_model (bench_planner_quality --explain) builds the model zel_two_stage solves: the
// anchor groups by the cut, the other groups' whole time and memory as fluid work, and the
// plan's anchors are options of it. (zg_failed_: the calling case's flag, for the CHECKs.)
static void check_stage1_model(int *zg_failed_, const env *e, const zg_problem *pr,
                               const zel_result *res, uint64_t seed) {
    zg_error err;
    zel_model m;
    CHECK_OK(zel_stage1_model(&e->ctx, pr, &m, &err), &err);
    CHECK_EQ_INT(m.n_grps, res->n_anchor_groups);
    CHECK_EQ_INT(m.n_units, res->n_anchors);
    double area = 0, mem = 0;
    int64_t fillers = 0;
    for (int32_t g = 0; g < pr->n_groups; g++) {
        const zg_group *G = &pr->groups[g];
        int anchor = 0;
        for (int32_t i = 0; i < m.n_grps; i++) anchor |= m.grps[i].g == g;
        int whole = 0;
        for (int32_t j = 0; j < G->n_opts; j++) whole |= zg_config_is_whole(G->opts[j].config);
        if (anchor) {
            CHECK(res->cut < 0 || G->whole_time > res->cut || !whole);
            continue;
        }
        CHECK(G->whole_time <= res->cut);
        area += (double)G->count * G->whole_time, mem += (double)G->count * G->whole_mem;
        fillers += G->count;
    }
    CHECK_EQ_INT(fillers + m.n_units, pr->n_seqs);
    CHECK_NEAR(m.extra_area, area, 0, 1e-12);
    CHECK_NEAR(m.fill_mem, mem, 0, 1e-12);
    zel_sol s;
    CHECK_OK(zel_sol_alloc(&m, &s, &err), &err);
    int all = 1;
    for (int32_t i = 0; i < m.n_grps; i++) {
        const zel_grp *G = &m.grps[i];
        for (int64_t q = 0; q < G->count; q++) {
            int32_t src = res->choice[pr->groups[G->g].members[q]], k = -1;
            for (int32_t j = 0; j < G->n_opts && k < 0; j++)
                if (G->opts[j].src == src) k = j;
            all &= k >= 0;
            s.opt[m.unit0[i] + q] = k < 0 ? 0 : k;
        }
    }
    CHECK_MSG(all, "seed %llu: an anchor's option is not in the stage-1 model",
              (unsigned long long)seed);
    CHECK(zel_sol_eval(&m, s.opt, NULL, NULL, &s.T, &s.K));
    CHECK(s.T >= zel_model_lower_bound(&m) * (1 - 1e-12));
    zel_sol_free(&s);
    zel_model_free(&m);
}

ZG_TEST(zellige_plan_legal_and_loads_match_counts) {
    env e;
    zg_error err;
    CHECK_OK(env_init(&e, "8xA800", &err), &err);
    for (uint64_t seed = 1; seed <= 4; seed++) {
        zg_batch b;
        small_batch(&b, seed);
        zg_planner pl;
        CHECK_OK(zg_planner_init(&pl, "zellige", &e.ctx, &err), &err);
        zg_plan p;
        zg_plan_init(&p);
        CHECK_OK(zg_planner_plan(&pl, &b, &p, &err), &err);  // evaluates and validates
        CHECK_STR(p.policy, "zellige");
        // loads recomputed from the ECF choice equal the evaluator's per-rank times
        zg_problem pr;
        CHECK_OK(zg_problem_build(&e.ctx, &b, &pr, &err), &err);
        zel_result res;
        CHECK_OK(zel_two_stage(&e.ctx, &pr, &b, NULL, &res, &err), &err);
        double L[8], H[8];
        double T = zel_choice_makespan(&pr, res.choice, L, H);
        CHECK_NEAR(p.makespan, T, 0, 1e-9);
        for (int r = 0; r < 8; r++) CHECK_NEAR(p.ranks[r].time, L[r], 1e-12, 1e-9);
        CHECK(res.n_anchors >= 1);
        check_stage1_model(zg_failed_, &e, &pr, &res, seed);
        if (*zg_failed_) return;
        free(res.choice);
        zg_problem_free(&pr);
        zg_plan_free(&p);
        zg_planner_free(&pl);
        zg_batch_free(&b);
    }
    zg_pricer_free(&e.pricer);
}

ZG_TEST(zellige_plans_byte_identical) {
    env e;
    zg_error err;
    CHECK_OK(env_init(&e, "16xA800", &err), &err);
    char *first[3] = {0};
    for (int run = 0; run < 2; run++) {
        zg_planner pl;
        CHECK_OK(zg_planner_init(&pl, "zellige", &e.ctx, &err), &err);
        for (int step = 0; step < 3; step++) {  // the warm start carries across steps
            zg_batch b;
            small_batch(&b, 100 + (uint64_t)step);
            zg_plan p;
            zg_plan_init(&p);
            CHECK_OK(zg_planner_plan(&pl, &b, &p, &err), &err);
            char *s = plan_text(&p);
            if (run == 0) {
                first[step] = s;
            } else {
                CHECK_STR(s, first[step]);
                free(s);
            }
            zg_plan_free(&p);
            zg_batch_free(&b);
        }
        zg_planner_free(&pl);
    }
    for (int i = 0; i < 3; i++) free(first[i]);
    zg_pricer_free(&e.pricer);
}

ZG_TEST(zellige_degenerate_batches) {
    env e;
    zg_error err;
    CHECK_OK(env_init(&e, "8xA800", &err), &err);
    for (int kind = 0; kind < 3; kind++) {
        zg_batch b;
        zg_batch_init(&b);
        if (kind == 0) add(&b, 7, 147600, "720p-10s");                  // one sequence
        if (kind == 1)
            for (int i = 0; i < 12; i++) add(&b, i, 3600, "720p-img");  // all identical
        if (kind == 2) add(&b, 0, 3, ""), add(&b, 1, 5, "");             // fewer tokens than ranks
        zg_planner pl;
        CHECK_OK(zg_planner_init(&pl, "zellige", &e.ctx, &err), &err);
        zg_plan p;
        zg_plan_init(&p);
        CHECK_OK(zg_planner_plan(&pl, &b, &p, &err), &err);
        CHECK_EQ_INT(p.n, b.n);
        if (kind == 1) {  // 12 equal images on 8 ranks: one group, all anchors, exact
            zg_price w;
            int32_t r0 = 0;
            CHECK_OK(zg_pricer_price(&e.pricer, &b.seqs[0], (zg_config){1, 1, 1}, &r0, 1, &w,
                                     &err), &err);
            CHECK(p.makespan <= 2 * w.time * (1 + 1e-12));    // 2 whole per rank is feasible
            CHECK(p.makespan >= 1.5 * w.time * (1 - 1e-12));  // area bound (whole is cheapest)
            CHECK(strstr(p.summary, "optimal") != NULL);
        }
        if (kind == 2)
            for (int64_t i = 0; i < p.n; i++) CHECK(p.p[i].n_ranks <= b.seqs[i].tokens);
        zg_plan_free(&p);
        zg_planner_free(&pl);
        zg_batch_free(&b);
    }
    zg_pricer_free(&e.pricer);
}

ZG_TEST(zellige_memory_infeasible_names_sequence) {
    env e;
    zg_error err;
    CHECK_OK(env_init(&e, "8xA800", &err), &err);
    e.ctx.opts.max_degree = 1;  // a 15 s 1080p video cannot run whole on one A800
    zg_batch b;
    zg_batch_init(&b);
    add(&b, 0, 3600, "720p-img");
    add(&b, 42, 497760, "1080p-15s");
    zg_planner pl;
    CHECK_OK(zg_planner_init(&pl, "zellige", &e.ctx, &err), &err);
    zg_plan p;
    zg_plan_init(&p);
    CHECK_EQ_INT(zg_planner_plan(&pl, &b, &p, &err), ZG_ERR_INFEASIBLE);
    CHECK(strstr(err.msg, "42") != NULL);
    CHECK(strstr(err.msg, "497760") != NULL);
    zg_plan_free(&p);
    zg_planner_free(&pl);
    zg_batch_free(&b);
    zg_pricer_free(&e.pricer);
}

ZG_TEST(zellige_not_worse_than_baselines_and_joint_not_worse) {
    env e;
    zg_error err;
    CHECK_OK(env_init(&e, "8xA800", &err), &err);
    e.ctx.opts.time_limit_s = 0.2;
    static const char *base[] = {"dp", "usp", "adaptive", "static", "knapformer"};
    for (uint64_t seed = 11; seed <= 13; seed++) {
        zg_batch b;
        small_batch(&b, seed);
        zg_planner pl;
        CHECK_OK(zg_planner_init(&pl, "zellige", &e.ctx, &err), &err);
        zg_plan z;
        zg_plan_init(&z);
        CHECK_OK(zg_planner_plan(&pl, &b, &z, &err), &err);
        zg_planner_free(&pl);
        for (size_t k = 0; k < sizeof base / sizeof *base; k++) {
            zg_planner bl;
            if (zg_planner_init(&bl, base[k], &e.ctx, &err)) continue;
            zg_plan q;
            zg_plan_init(&q);
            if (zg_planner_plan(&bl, &b, &q, &err) == ZG_OK)
                CHECK_MSG(z.makespan <= q.makespan * (1 + e.ctx.opts.eps),
                          "seed %llu: zellige %.6g > %s %.6g", (unsigned long long)seed,
                          z.makespan, base[k], q.makespan);
            zg_plan_free(&q);
            zg_planner_free(&bl);
        }
        zg_planner jl;
        CHECK_OK(zg_planner_init(&jl, "joint", &e.ctx, &err), &err);
        zg_plan j;
        zg_plan_init(&j);
        CHECK_OK(zg_planner_plan(&jl, &b, &j, &err), &err);
        CHECK(j.makespan <= z.makespan * (1 + 1e-12));
        CHECK(j.lower_bound > 0 && j.lower_bound <= j.makespan * (1 + 1e-12));
        CHECK(z.makespan >= j.lower_bound * (1 - 1e-12));
        zg_plan_free(&j);
        zg_planner_free(&jl);
        zg_plan_free(&z);
        zg_batch_free(&b);
    }
    zg_pricer_free(&e.pricer);
}

ZG_TEST_MAIN()
