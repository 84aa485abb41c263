// policy_dp.c — naive data parallelism, token-balanced: every sequence runs whole (1,1,1) on one
// rank; sequences in descending token order (LPT) go to the memory-feasible rank holding the
// fewest tokens (ties: lowest rank). Honest about memory (see whole_lpt.c).
#include "plan/plan_internal.h"

static zg_status plan_dp(zg_planner *pl, const zg_batch *b, zg_plan *out, zg_error *err) {
    return zg_plan_whole_lpt(pl, b, 0, "dp", out, err);
}

const zg_planner_vtable zg_policy_dp = {
    "dp", "data parallel, token-balanced: whole sequences, LPT on tokens", NULL, plan_dp, NULL, 0};
