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

#endif
