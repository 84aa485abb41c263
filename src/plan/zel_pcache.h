// zel_pcache.h — exact cross-step cache of the exact path's priced options (zel_pcache.c), used
// by zg_problem_build_cached (problem.c) and kept in `--policy zellige`'s planner state.
//
// Per price key (tokens, kind, frames, height, width, text_tokens, bucket: the fields the pricer
// may look at, see zg_batch_price_classes) it keeps what zg_options_enumerate returned and the
// whole price, so a step prices only the shapes it has not seen. A cached problem is identical
// (every byte of every group) to an uncached one, hence so are the plans.
//
// Invalidation (the whole cache resets): the model or cluster changed (by value), the pricer
// changed (address, kind, impl pointer, price function, mem_base, mem_cap), the rank-set family,
// the max degree or exact_rank_prices changed, or a hit's re-priced whole option or probe (one
// split option priced by a direct pricer call at enumeration) differs bitwise from the cached
// one (a pricer mutated in place). zel_pcache_clear does it explicitly. Memory: a byte budget;
// least recently used entries are evicted at the start of a build (never during one).
#ifndef ZG_ZEL_PCACHE_H
#define ZG_ZEL_PCACHE_H

#include "plan/plan.h"

typedef struct zel_pcache zel_pcache;

zel_pcache *zel_pcache_new(void); // NULL on out of memory
void zel_pcache_free(zel_pcache *c);
void zel_pcache_clear(zel_pcache *c);
void zel_pcache_set_budget(zel_pcache *c, size_t max_bytes);

typedef struct zel_pcache_stats {
    int64_t hits, misses, resets, evicted;
    int32_t n_entries;
    size_t bytes;
} zel_pcache_stats;
zel_pcache_stats zel_pcache_get_stats(const zel_pcache *c);

// Starts a build with ctx: resets the cache if the context changed, evicts over the budget.
zg_status zel_pcache_begin(zel_pcache *c, const zg_plan_ctx *ctx, zg_error *err);

// The options (as zg_options_enumerate) and whole price of sequence s. *opts points into the
// cache (valid until the next zel_pcache_begin / clear / free; do not free it). On a hit the
// whole option and the probe are re-priced; a difference resets the cache and prices s afresh.
zg_status zel_pcache_options(zel_pcache *c, const zg_plan_ctx *ctx, const zg_seq *s,
                             const zg_option **opts, int32_t *n_opts, zg_price *whole,
                             zg_error *err);

// zg_problem_build through the cache (cache NULL: the uncached build). Same problem, same errors.
zg_status zg_problem_build_cached(const zg_plan_ctx *ctx, const zg_batch *b, zel_pcache *cache,
                                  zg_problem *pr, zg_error *err);

#endif
