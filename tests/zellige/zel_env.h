// zel_env.h — the planner test environment shared by the Zellige end-to-end tests: Wan2.1-1.3B,
// a cluster preset, the analytic pricer and a default planning context; plus the plan's JSON
// text without its wall-time field (for byte-identity checks).
#ifndef ZEL_ENV_H
#define ZEL_ENV_H

#include <string.h>

#include "plan/plan.h"

typedef struct env {
    zg_model model;
    zg_cluster cluster;
    zg_pricer pricer;
    zg_plan_ctx ctx;
} env;

static inline int env_init(env *e, const char *cluster, zg_error *err) {
    memset(e, 0, sizeof *e);
    if (zg_model_preset("wan2.1-1.3b", &e->model, err)) return 1;
    if (zg_cluster_preset(cluster, &e->cluster, err)) return 1;
    zg_cost_opts co;
    zg_cost_opts_default(&co);
    if (zg_cost_analytic_init(&e->pricer, &e->model, &e->cluster, &co, err)) return 1;
    e->ctx.model = &e->model;
    e->ctx.cluster = &e->cluster;
    e->ctx.pricer = &e->pricer;
    zg_planner_opts_default(&e->ctx.opts);
    return 0;
}

// Caller frees with cJSON_free. plan_time_ms is zeroed: it is the only field timing can change.
static inline char *plan_text(zg_plan *p) {
    p->plan_time_ms = 0;
    cJSON *j = zg_plan_to_json(p);
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return s;
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
