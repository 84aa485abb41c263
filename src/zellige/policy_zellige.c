// zellige/policy_zellige.c — `--policy zellige`: the two-stage Anchor/Filler planner (reference §5):
// catalog cut, exact lexicographic anchor placement over ECF counts (stage1/anchor.c, exact/bb.c),
// greedy filler packing (stage2/filler.c). The planner state keeps the previous step's anchor
// choices as a warm start and the priced options of every sequence shape seen so far: for the
// exact path (zg_option_cache.c) and for the fast path (large worlds, fast/cache.c); both exact,
// reset when anything that affects a price changes. docs/planner-zellige.md describes the
// method and its results.
#include <stdlib.h>

#include "zellige/fast/fast.h"
#include "zellige/internal.h"
#include "plan/plan.h"

typedef struct zstate {
    zel_warm *warm;    // previous step's anchor choices (exact path)
    zel_cache *cache;  // priced templates per sequence shape (fast path)
    zg_option_cache *opts;  // priced options per sequence shape (exact path)
} zstate;

static void zellige_free(zg_planner *pl) {
    zstate *z = pl->state;
    if (z) {
        zel_warm_free(z->warm);
        zel_cache_free(z->cache);
        zg_option_cache_free(z->opts);
        free(z);
    }
    pl->state = NULL;
}

static zg_status zellige_init(zg_planner *pl, zg_error *err) {
    zstate *z = calloc(1, sizeof *z);
    pl->state = z;
    if (z) z->warm = zel_warm_new();
    if (z && z->warm) z->cache = zel_cache_new();
    if (z && z->cache) z->opts = zg_option_cache_new();
    if (!z || !z->warm || !z->cache || !z->opts) {
        zellige_free(pl);
        return zg_error_set(err, ZG_ERR_NOMEM, "zellige: out of memory");
    }
    return ZG_OK;
}

static zg_status plan_zellige(zg_planner *pl, const zg_batch *b, zg_plan *out, zg_error *err) {
    zstate *z = pl->state;
    // large worlds: compact options, greedy + local search, certified gap (fast/fast.c)
    if (pl->ctx.cluster && pl->ctx.cluster->world_size >= ZEL_FAST_MIN_RANKS &&
        !pl->ctx.opts.exact_rank_prices && b && b->n > 0)
        return zel_fast_plan_cached(&pl->ctx, b, z->cache, out, NULL, err);
    zg_problem pr;
    zg_status st = zg_problem_build_cached(&pl->ctx, b, z->opts, &pr, err);
    if (st) return st;
    zel_result res;
    st = zel_two_stage(&pl->ctx, &pr, b, z->warm, &res, err);
    if (!st) st = zel_decode(&pr, b, res.choice, "zellige", out, err);
    if (!st) {
        out->lower_bound = 0;
        out->optimal = 0;
        snprintf(out->summary, sizeof out->summary,
                 "cut %.4g s: %lld anchors in %d groups, %lld split; anchor stage %s "
                 "(T*=%.6g s, lower bound %.6g s, %lld nodes)%s",
                 res.cut, (long long)res.n_anchors, res.n_anchor_groups, (long long)res.st1.K,
                 res.st1.optimal    ? "optimal"
                 : res.st1.replayed ? "replayed a layout remembered from an earlier step"
                                    : "node limit",
                 res.st1.T, res.st1.lb,
                 (long long)res.st1.nodes,
                 res.uniform_degree ? "; a disjoint-tile plan was better and is used" : "");
    }
    free(res.choice);
    zg_problem_free(&pr);
    return st;
}

const zg_planner_vtable zg_policy_zellige = {
    "zellige", "two-stage: exact anchor placement (ECF branch-and-bound), greedy fillers",
    zellige_init, plan_zellige, zellige_free, 0};
