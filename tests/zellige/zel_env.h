// zel_env.h — the planner test environment shared by the Zellige end-to-end tests: Wan2.1-1.3B,
// a cluster preset, the analytic pricer and a default planning context (plan_testlib.h's env,
// with plan_text for byte-identity checks); and a pricer whose prices a test scales in place.
#ifndef ZEL_ENV_H
#define ZEL_ENV_H

#include "../plan/plan_testlib.h"

// Wan2.1-1.3B on cluster preset `cluster` (plan_testlib.h's env).
static inline int env_init(env *e, const char *cluster, zg_error *err) {
    return env_init_model(e, "wan2.1-1.3b", cluster, err);
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
