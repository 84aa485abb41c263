// test_zellige_fast.c — the large-world fast path (fast/fast.c, fast/tmpl.c) on 64xH100 batches:
// legal plans whose evaluated makespan equals the planner's, >= its certified lower bound,
// byte-identical across runs, no worse than any baseline plan (static, usp, dp, adaptive) that
// fits the memory cap under the same prices by more than 1e-3, and the compact templates
// reproduce zg_options_enumerate's fastest fitting option.
#include "zgtest.h"
#include "zel_env.h"
#include "zellige/fast/fast.h"
#include "planner/planner.h"

ENV_TEST(fast_path_legal_bounded_deterministic, "64xH100") {
    zg_error err;
    for (int k = 0; k < 2; k++) {
        zg_batch b;
        double share = zg_mix_share_from_name(k ? "V60" : "V35");
        CHECK_OK(env_batch(e, share, k ? 125000 : 350000, 15, 1, 0, &b, &err), &err);
        zg_plan p1, p2;
        zg_plan_init(&p1), zg_plan_init(&p2);
        zel_fast_stats fs;
        CHECK_OK(zel_fast_plan(&e->ctx, &b, &p1, &fs, &err), &err);
        CHECK_OK(zel_fast_plan(&e->ctx, &b, &p2, NULL, &err), &err);
        CHECK(plan_texts_equal(&p1, &p2));
        CHECK_OK(zg_plan_validate(&p1, &b, &e->model, &err), &err);
        double ms = p1.makespan;
        zg_plan_stats ps;
        CHECK_OK(zg_plan_evaluate(&p1, &b, &e->pricer, &ps, &err), &err);
        CHECK(fabs(ps.makespan - ms) <= 1e-9 * ms);
        CHECK(ps.peak_mem <= e->pricer.mem_cap + 1);
        CHECK(fs.lower_bound > 0 && fs.lower_bound <= ms * (1 + 1e-12));
        // never worse than the disjoint-layout baselines under the same prices
        static const char *base[] = {"static", "usp", "dp", "adaptive"};
        for (int q = 0; q < 4; q++) {
            zg_planner pl;
            zg_plan bp;
            zg_plan_init(&bp);
            CHECK_OK(zg_planner_init(&pl, base[q], &e->ctx, &err), &err);
            if (zg_planner_plan(&pl, &b, &bp, &err) == ZG_OK) {
                zg_plan_stats bs;
                CHECK_OK(zg_plan_evaluate(&bp, &b, &e->pricer, &bs, &err), &err);
                if (bs.peak_mem <= e->pricer.mem_cap)
                    CHECK(ms <= bs.makespan * (1 + 1e-3));
            }
            zg_plan_free(&bp);
            zg_planner_free(&pl);
        }
        zg_plan_free(&p1), zg_plan_free(&p2);
        zg_batch_free(&b);
    }
}

ENV_TEST(templates_match_enumerated_options, "64xH100") {
    zg_error err;
    zg_batch b;
    CHECK_OK(env_batch(e, zg_mix_share_from_name("V50"), 125000, 15, 1, 0, &b, &err), &err);
    zel_tset ts;
    CHECK_OK(zel_tset_build(&e->ctx, &b, &ts, &err), &err);
    for (int32_t k = 0; k < ts.n_classes; k++) {
        const zel_tclass *c = &ts.cls[k];
        zg_option *o = NULL;
        int32_t n = 0;
        CHECK_OK(zg_options_enumerate(&e->ctx, &b.seqs[c->rep], &o, &n, &err), &err);
        for (int32_t i = 0; i < n; i += 7) {  // every option's block: the template is as fast
            int32_t d = zg_option_degree(&o[i]), di = -1;
            for (int32_t q = 0; q < ts.n_degs; q++)
                if (ts.degs[q].d == d) di = q;
            CHECK(di >= 0);
            int32_t oi = zel_tset_off(&ts, di, o[i].start);
            CHECK(oi >= 0);
            const zel_tpl *t = zel_tset_fit(&ts, c, di, oi, o[i].mem);
            CHECK(t && t->time <= o[i].time && t->mem <= o[i].mem);
        }
        free(o);
    }
    zel_tset_free(&ts);
    zg_batch_free(&b);
}

ENV_TEST(fast_path_infeasible_names_sequence, "64xH100") {
    zg_error err;
    zg_batch b;
    CHECK_OK(env_batch(e, zg_mix_share_from_name("V35"), 125000, 15, 1, 0, &b, &err), &err);
    e->pricer.mem_cap = 1;  // nothing fits
    zg_plan p;
    zg_plan_init(&p);
    CHECK(zel_fast_plan(&e->ctx, &b, &p, NULL, &err) == ZG_ERR_INFEASIBLE);
    CHECK(strstr(err.msg, "sequence") != NULL);
    zg_plan_free(&p);
    zg_batch_free(&b);
}

ZG_TEST_MAIN()
