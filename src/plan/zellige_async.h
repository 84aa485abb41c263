// zellige_async.h — plan the next batch while the current one runs: a thread-based wrapper
// around zg_planner_plan for any planner (intended for `zellige`; `joint` works too).
//
//   zg_zellige_async *h;
//   zg_zellige_plan_async(&pl, &next_batch, &h, &err);   // returns at once
//   ... run the current step ...
//   zg_zellige_plan_wait(h, &plan, &err);                  // joins; plan = the next step's
//
// The planner runs on one background thread exactly as zg_planner_plan would run it, so the
// plan is byte-identical to the synchronous call (the planners make no timing-based decisions;
// only plan_time_ms differs). Rules: the planner and the batch must stay alive and untouched
// until the wait returns; one plan in flight per planner (its warm-start state is sequential:
// wait for step k before starting step k+1). Every handle must be waited on exactly once (the
// wait frees it). Plans are deterministic, so every rank can plan locally, or rank 0 plans and
// broadcasts.
#ifndef ZG_ZELLIGE_ASYNC_H
#define ZG_ZELLIGE_ASYNC_H

#include "plan/plan.h"

typedef struct zg_zellige_async zg_zellige_async;

// Starts planning b with pl on a new thread; *out gets the handle. Fails (nothing started) on
// bad arguments or when the thread cannot be created.
zg_status zg_zellige_plan_async(zg_planner *pl, const zg_batch *b, zg_zellige_async **out,
                                zg_error *err);
// Waits for the plan: out (initialized with zg_plan_init or holding a plan, which is freed)
// receives it; returns the planner's status and error. Frees the handle.
zg_status zg_zellige_plan_wait(zg_zellige_async *h, zg_plan *out, zg_error *err);
// 1 when the plan is ready (the wait will not block), 0 otherwise.
int zg_zellige_plan_ready(const zg_zellige_async *h);

#endif
