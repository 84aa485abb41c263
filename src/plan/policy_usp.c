// policy_usp.c — PLACEHOLDER during development: replaced by the real 'usp' planner.
#include "plan/plan.h"

static zg_status plan_usp(zg_planner *pl, const zg_batch *b, zg_plan *out, zg_error *err) {
    (void)pl, (void)b, (void)out;
    return zg_error_set(err, ZG_ERR_UNSUPPORTED, "policy 'usp' is not implemented yet");
}

const zg_planner_vtable zg_policy_usp = {"usp", "(not implemented yet)", NULL, plan_usp, NULL};
