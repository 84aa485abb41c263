// plan_internal.h — helpers shared by the plan module's policies (not part of the contract).
#ifndef ZG_PLAN_INTERNAL_H
#define ZG_PLAN_INTERNAL_H

#include "plan/plan.h"

// Whole-sequence LPT (dp: by_price 0, key = tokens; adaptive: by_price 1, key = whole price).
// `name` prefixes error messages. See whole_lpt.c.
zg_status zg_plan_whole_lpt(const zg_planner *pl, const zg_batch *b, int by_price,
                            const char *name, zg_plan *out, zg_error *err);

// Rounds: every placement's round is in 0..n-1 (0 when n is 0); *n_rounds gets 1 + the largest.
// `who` prefixes the message ("evaluate: ").
zg_status zg_plan_rounds_check(const zg_plan *p, int32_t *n_rounds, const char *who, zg_error *err);
// The placement indices sorted by round, stable (batch order inside a round); caller frees.
zg_status zg_plan_round_order(const zg_plan *p, int64_t **order, zg_error *err);

#endif
