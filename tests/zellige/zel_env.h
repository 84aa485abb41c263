// zel_env.h — the planner test environment shared by the Zellige end-to-end tests: Wan2.1-1.3B,
// a cluster preset, the analytic pricer and a default planning context (plan_testlib.h's env,
// with plan_text for byte-identity checks); and a pricer whose prices a test scales in place.
#ifndef ZEL_ENV_H
#define ZEL_ENV_H

#include "../plan/plan_testlib.h"
#include "zgtest.h"

// Wan2.1-1.3B on cluster preset `cluster` (plan_testlib.h's env).
static inline int env_init(env *e, const char *cluster, zg_error *err) {
    return env_init_model(e, "wan2.1-1.3b", cluster, err);
}

// ENV_TEST(name, cluster) { body }: a case on env e (a pointer in the body) on cluster preset
// `cluster`; the pricer is freed after the body, also when a check fails. Needs zgtest.h.
#define ENV_TEST(name, cluster)                                \
    static void name##_on(env *e, int *zg_failed_);            \
    ZG_TEST(name) {                                            \
        env e_;                                                \
        zg_error err_;                                         \
        CHECK_OK(env_init(&e_, cluster, &err_), &err_);        \
        name##_on(&e_, zg_failed_);                            \
        zg_pricer_free(&e_.pricer);                            \
    }                                                          \
    static void name##_on(env *e, int *zg_failed_)

// Draw `draw` of the mix of video share `share` (zg_mix_share_from_name) at tpr tokens per rank,
// `secs`-second videos and sample seed `seed` on e's cluster (b initialised also on failure).
static inline zg_status env_batch(const env *e, double share, int64_t tpr, int32_t secs,
                                  uint64_t seed, uint64_t draw, zg_batch *b, zg_error *err) {
    zg_mix_spec spec = {share, tpr, secs, e->cluster.world_size, seed};
    zg_batch_init(b);
    return zg_workload_mix(&e->model, &spec, draw, b, err);
}

// A fresh `zellige` planner's makespan on the quality bench's batch (bench_planner_quality's
// draws: mix, tokens per rank tpr, secs-second videos, draw, seed 3) on cluster preset
// `cluster`, its plan validated: in (lo, hi), else the case fails.
static inline void check_bench_makespan(int *zg_failed_, const char *cluster, const char *mix,
                                        int64_t tpr, int32_t secs, int draw, double lo,
                                        double hi) {
    env e;
    zg_error err;
    double ms = -1;
    CHECK_OK(env_init(&e, cluster, &err), &err);
    zg_batch b;
    zg_plan z;
    zg_plan_init(&z);
    if (env_batch(&e, zg_mix_share_from_name(mix), tpr, secs, 3, (uint64_t)draw, &b, &err) ==
            ZG_OK &&
        plan_policy(&e.ctx, "zellige", &b, &z, &err) == ZG_OK &&
        zg_plan_validate(&z, &b, &e.model, &err) == ZG_OK)
        ms = z.makespan;
    zg_plan_free(&z);
    zg_batch_free(&b);
    zg_pricer_free(&e.pricer);
    CHECK_MSG(ms > 0, "%s %s draw %d: %s", cluster, mix, draw, err.msg);
    printf("  makespan %.6f\n", ms);
    CHECK_MSG(ms < hi && ms > lo, "makespan %.6f s, not in (%g, %g)", ms, lo, hi);
}

// A copy of pricer p whose prices come from price (impl: its state) and that owns nothing: a
// wrapper (the same kind, caps and block entry, which then no longer matches its price).
static inline zg_pricer wrap_pricer(const zg_pricer *p, void *impl, zg_price_fn price) {
    zg_pricer w = *p;
    w.impl = impl;
    w.price = price;
    w.free_impl = NULL;
    return w;
}

// A pricer wrapping another with scales a test changes in place (same object, same functions,
// same impl pointer): only a cache's re-priced probes can see the change.
typedef struct scaled {
    const zg_pricer *inner;
    double time_scale, mem_scale, split_scale;  // split_scale: degree > 1 times only
} scaled;
static inline zg_status scaled_price(const zg_pricer *p, const zg_seq *s, zg_config c,
                                     const int32_t *ranks, int32_t n, zg_price *out,
                                     zg_error *err) {
    const scaled *x = p->impl;
    zg_status st = zg_pricer_price(x->inner, s, c, ranks, n, out, err);
    out->time *= x->time_scale * (zg_config_degree(c) > 1 ? x->split_scale : 1.0);
    out->mem *= x->mem_scale;
    return st;
}

#endif
