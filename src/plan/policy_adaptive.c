// policy_adaptive.c — PLACEHOLDER during development: replaced by the real 'adaptive' planner.
#include "plan/plan.h"

static zg_status plan_adaptive(zg_planner *pl, const zg_batch *b, zg_plan *out, zg_error *err) {
    (void)pl, (void)b, (void)out;
    return zg_error_set(err, ZG_ERR_UNSUPPORTED, "policy 'adaptive' is not implemented yet");
}

const zg_planner_vtable zg_policy_adaptive = {"adaptive", "(not implemented yet)", NULL, plan_adaptive, NULL};
