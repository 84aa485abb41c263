// policy_zellige.c — PLACEHOLDER during development: replaced by the real 'zellige' planner.
#include "plan/plan.h"

static zg_status plan_zellige(zg_planner *pl, const zg_batch *b, zg_plan *out, zg_error *err) {
    (void)pl, (void)b, (void)out;
    return zg_error_set(err, ZG_ERR_UNSUPPORTED, "policy 'zellige' is not implemented yet");
}

const zg_planner_vtable zg_policy_zellige = {"zellige", "(not implemented yet)", NULL, plan_zellige, NULL};
