// fast/fast.h — the Zellige planner for large worlds (world size >= ZEL_FAST_MIN_RANKS) without
// materialising one option per (config, start): per price class, config templates priced once
// per (degree, start offset within a node) and Pareto-pruned on (time, memory); legal starts are
// enumerated on the fly (fast/tmpl.c); the fronts are kept in an exact cross-step cache
// (fast/cache.c). Anchors: greedy over O(1) block max-load queries (sparse tables) + local
// search; fillers: §5.3 rule with a heap, O(S log N) (fast/fast.c). The plan is certified
// against a lower bound (max of the per-sequence fastest time and the area bound).
// Private to src/zellige; docs/planner-zellige.md ("The fast path") explains it.
#ifndef ZG_ZEL_FAST_H
#define ZG_ZEL_FAST_H

#include "plan/plan.h"
#include "zellige/tuning.h"

// World sizes from which `--policy zellige` takes the fast path (below: the exact stage 1).

typedef struct zel_tpl {
    zg_config cfg;
    double time, mem;  // per participating rank
} zel_tpl;

// One degree of the cluster: its legal starts and their offsets (start % ranks_per_node).
typedef struct zel_tdeg {
    int32_t d;
    int32_t n_starts;
    int32_t *starts;   // ascending
    int32_t n_offs;
    int32_t *offs;     // distinct offsets, ascending
    int32_t *off_start;  // n_offs: the first legal start of each offset (where it is priced)
} zel_tdeg;

// Templates of one price class: for degree di and offset oi, the Pareto front
// tpl[front[di][oi] .. front[di][oi + 1]) (time ascending, memory strictly descending, every
// memory <= cap). front[di] == NULL: no legal config of that degree for the class.
typedef struct zel_tclass {
    int64_t rep;           // batch index of the first member
    int64_t count;
    int64_t *members;      // ascending batch indices
    double whole_time, whole_mem;
    int32_t has_whole;     // a memory-fitting (1,1,1) template exists
    int32_t **front;       // n_degs arrays of n_offs + 1 indices
    zel_tpl *tpl;
    int32_t n_tpl;
    double min_time;       // fastest template (any degree, offset)
    double min_area;       // least time * degree
    int64_t n_priced;      // pricer calls made for this class (0: taken from the cache)
    const double *fastest; // n_degs: fastest template of each degree (INFINITY: none)
    // The area staircase: the templates in (time, area) order that lower the running least
    // area, as (time, area) pairs; what the height-cut lower bound needs (fast/fast.c).
    const double *stair;   // 2 * n_stair
    int32_t n_stair;
} zel_tclass;

typedef struct zel_tset {
    int32_t N, rpn;
    double mem_cap, mem_room, mem_base;  // the cap (total), cap - base, the base
    int32_t n_degs;
    zel_tdeg *degs;        // ascending degree
    int32_t n_classes;
    zel_tclass *cls;       // sorted by whole_time descending, ties by rep
    int32_t *class_of;     // n_seqs: class index (into cls) of every batch index
    int64_t n_seqs;
    int64_t n_priced;      // pricer calls in total
    zg_arena arena;
    struct zel_cache *own; // the private cache of an uncached build (freed with the set)
} zel_tset;

// Exact cross-step cache of compact options (fast/cache.c): the context's configs and legal
// starts, and per price key (tokens, kind, frames, height, width, text_tokens, bucket) the
// class's priced Pareto fronts. A planner keeps one across steps (the model, cluster and pricer
// are the same every step, the catalog buckets recur): a hit costs two pricer calls (the whole
// option and one split probe, compared bitwise) instead of ~25 000 at 1024 ranks. Results are
// identical with and without it. It resets itself when the model or cluster (by value), the
// pricer (address, functions, impl, mem_base, mem_room), the family, the max degree or
// exact_rank_prices change, or a probe differs (a pricer changed in place); zel_cache_clear
// resets it explicitly. Entries over the byte budget (default 64 MiB) are evicted least
// recently used first (~0.2 MiB per shape at 1024 ranks). One cache per planner; not
// thread-safe.
typedef struct zel_cache zel_cache;
zel_cache *zel_cache_new(void);  // NULL on out of memory
void zel_cache_free(zel_cache *c);
void zel_cache_clear(zel_cache *c);
void zel_cache_set_budget(zel_cache *c, size_t max_bytes);
typedef zg_memo_stats zel_cache_stats;
zel_cache_stats zel_cache_get_stats(const zel_cache *c);

// Builds the template set of batch b under ctx (NODE/ALIGNED/SLIDING families; prices reused
// across whole-node shifts, i.e. requires !ctx->opts.exact_rank_prices). A class with no
// memory-fitting option fails with ZG_ERR_INFEASIBLE naming its first sequence.
zg_status zel_tset_build(const zg_plan_ctx *ctx, const zg_batch *b, zel_tset *ts,
                         zg_error *err);
// The same through cache (NULL = a private one): ts then points into the cache and is valid
// until the next build with that cache, zel_cache_clear or zel_cache_free.
zg_status zel_tset_build_cached(const zg_plan_ctx *ctx, const zg_batch *b, zel_cache *cache,
                                zel_tset *ts, zg_error *err);
void zel_tset_free(zel_tset *ts);
// Internal (fast/tmpl.c -> fast/cache.c): fills ts->degs and the template fields of ts's classes
// (rep, count, members set), pricing the classes the cache does not hold.
zg_status zel_cache_fill(zel_cache *c, const zg_plan_ctx *ctx, const zg_batch *b, zel_tset *ts,
                         zg_error *err);

// Index of the offset `start % rpn` in degree di's offset list (-1: not a legal offset).
int32_t zel_tset_off(const zel_tset *ts, int32_t di, int32_t start);

// Fastest template of class c on degree di, offset oi whose memory is <= room; NULL if none.
const zel_tpl *zel_tset_fit(const zel_tset *ts, const zel_tclass *c, int32_t di, int32_t oi,
                            double room);

typedef struct zel_fast_stats {
    double build_ms, anchor_ms, filler_ms, ls_ms;
    double lower_bound;     // max(fastest time of any sequence, area bound); ignores memory
    double makespan;
    double cut;
    int64_t n_anchors, n_split;
    int64_t ls_moves;
    int64_t n_priced;
    int32_t memory_first;   // 1: the filler rule ran out of memory and was redone memory-first
    int32_t cache_hits, cache_misses;  // price classes found in / added to the cache
} zel_fast_stats;

// The fast two-stage planner: templates, catalog cut, greedy anchors, heap fillers, local
// search, decode. Deterministic. out gets the plan (policy "zellige").
zg_status zel_fast_plan(const zg_plan_ctx *ctx, const zg_batch *b, zg_plan *out,
                        zel_fast_stats *stats, zg_error *err);
// The same with a cross-step template cache (NULL = none); the plan is identical.
zg_status zel_fast_plan_cached(const zg_plan_ctx *ctx, const zg_batch *b, zel_cache *cache,
                               zg_plan *out, zel_fast_stats *stats, zg_error *err);

#endif
