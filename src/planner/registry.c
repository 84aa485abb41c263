// registry.c — the list of placement policies, in --help order.
#include "planner/planner.h"
#include "zellige/zellige.h"

static const zg_planner_vtable *const policies[] = {
    &zg_policy_zellige, &zg_policy_joint,  &zg_policy_knapformer, &zg_policy_usp,
    &zg_policy_adaptive, &zg_policy_dp,   &zg_policy_static,      &zg_policy_megatron, NULL};

const zg_planner_vtable *const *zg_planner_policies(void) { return policies; }
