// planner_opts.c — planner option defaults and the rank-set family names.
#include <string.h>

#include "plan/plan.h"

void zg_planner_opts_default(zg_planner_opts *o) {
    *o = (zg_planner_opts){.family = ZG_RANKSETS_NODE, .max_degree = 0, .eps = 1e-3,
              .time_limit_s = 60, .deeper_first_visit = 1, .remember_layouts = 1,
              .anchor_cut_s = 0, .gamma = 1.0, .seed = 0};
}

static const char *const family_names[] = {"aligned", "node", "sliding"};

const char *zg_rankset_family_name(zg_rankset_family f) {
    return (unsigned)f < 3 ? family_names[f] : "?";
}

zg_status zg_rankset_family_parse(const char *s, zg_rankset_family *f, zg_error *err) {
    for (int i = 0; i < 3; i++)
        if (s && !strcmp(s, family_names[i])) {
            *f = (zg_rankset_family)i;
            return ZG_OK;
        }
    return zg_error_set(err, ZG_ERR_INVALID,
                        "unknown rank-set family '%s' (use node, aligned or sliding)",
                        s ? s : "(null)");
}
