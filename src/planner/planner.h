// planner — every placement policy by name: the registry (registry.c), planning a batch with
// timing, evaluation, validation and --fallback (planner.c), and planning on a background thread
// (async.c). This is the entry point the CLIs, the simulator and the Python package use.
//
// May include: zellige, plan, cost, topo, workload, model, core.
#ifndef ZG_PLANNER_H
#define ZG_PLANNER_H

#include "plan/plan.h"

// Policies: zellige, joint, dp, adaptive, usp, static, knapformer, megatron.
const zg_planner_vtable *const *zg_planner_policies(void);  // NULL-terminated
zg_status zg_planner_init(zg_planner *pl, const char *policy, const zg_plan_ctx *ctx,
                          zg_error *err);
// Plans a batch: runs the policy, sets plan_time_ms, evaluates and validates the result; on
// ZG_ERR_INFEASIBLE with opts.fallback set, runs the fallback policy and marks the plan
// (policy = the fallback, fallback_from = the policy that failed). out must be initialized
// (zg_plan_init) or hold a previous plan. A plan that fails validation is ZG_ERR_INTERNAL.
zg_status zg_planner_plan(zg_planner *pl, const zg_batch *b, zg_plan *out, zg_error *err);
void zg_planner_free(zg_planner *pl);

// Planning the next batch while the current one runs: a thread-based wrapper around
// zg_planner_plan for any planner (intended for `zellige`; `joint` works too).
//
//   zg_planner_async *h;
//   zg_planner_plan_async(&pl, &next_batch, &h, &err);   // returns at once
//   ... run the current step ...
//   zg_planner_plan_wait(h, &plan, &err);                  // joins; plan = the next step's
//
// The planner runs on one background thread exactly as zg_planner_plan would run it, so the
// plan is byte-identical to the synchronous call (the planners make no timing-based decisions;
// only plan_time_ms differs). Rules: the planner and the batch must stay alive and untouched
// until the wait returns; one plan in flight per planner (its warm-start state is sequential:
// wait for step k before starting step k+1). Every handle must be waited on exactly once (the
// wait frees it). Plans are deterministic, so every rank can plan locally, or rank 0 plans and
// broadcasts.

typedef struct zg_planner_async zg_planner_async;

// Starts planning b with pl on a new thread; *out gets the handle. Fails (nothing started) on
// bad arguments or when the thread cannot be created.
zg_status zg_planner_plan_async(zg_planner *pl, const zg_batch *b, zg_planner_async **out,
                                zg_error *err);
// Waits for the plan: out (initialized with zg_plan_init or holding a plan, which is freed)
// receives it; returns the planner's status and error. Frees the handle.
zg_status zg_planner_plan_wait(zg_planner_async *h, zg_plan *out, zg_error *err);
// 1 when the plan is ready (the wait will not block), 0 otherwise.
int zg_planner_plan_ready(const zg_planner_async *h);

#endif
