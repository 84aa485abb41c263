// policy_adaptive.c — AdaptiveLoad-style compute-aware data parallelism: every sequence runs
// whole (1,1,1); sequences in descending whole-sequence price (LPT; ties: more tokens, then
// batch order) go to the memory-feasible rank with the least priced load (ties: lowest rank).
// The cost model is the context's pricer (the paper's authors fitted AdaptiveLoad's load model
// locally; we give it our prices). A sequence too big to run whole is an infeasible batch.
#include "plan/plan_internal.h"

static zg_status plan_adaptive(zg_planner *pl, const zg_batch *b, zg_plan *out,
                               zg_error *err) {
    return zg_plan_whole_lpt(pl, b, 1, "adaptive", out, err);
}

const zg_planner_vtable zg_policy_adaptive = {
    "adaptive", "AdaptiveLoad-style compute-aware DP: whole sequences, LPT on price", NULL,
    plan_adaptive, NULL, 0};
