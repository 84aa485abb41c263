// plan_internal.h — helpers shared by the plan module's policies (not part of the contract).
#ifndef ZG_PLAN_INTERNAL_H
#define ZG_PLAN_INTERNAL_H

#include "plan/plan.h"

// Whole-sequence LPT (dp: by_price 0, key = tokens; adaptive: by_price 1, key = whole price).
// `name` prefixes error messages. See whole_lpt.c.
zg_status zg_plan_whole_lpt(const zg_planner *pl, const zg_batch *b, int by_price,
                            const char *name, zg_plan *out, zg_error *err);

#endif
