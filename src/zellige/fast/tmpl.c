// fast/tmpl.c — compact options for large worlds: per price class, every legal config priced
// once per (degree, start offset within a node), Pareto-pruned on (time, memory); legal starts
// are kept once per degree for the whole cluster (fast/fast.h). The pricing and the fronts live
// in the cross-step cache (fast/cache.c); an uncached build uses a private cache.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zellige/fast/fast.h"

static int cmp_class(const void *pa, const void *pb) {
    const zel_tclass *a = pa, *b = pb;
    if (a->whole_time != b->whole_time) return a->whole_time > b->whole_time ? -1 : 1;
    return (a->rep > b->rep) - (a->rep < b->rep);
}

void zel_tset_free(zel_tset *ts) {
    zg_arena_free(&ts->arena);
    zel_cache_free(ts->own);
    memset(ts, 0, sizeof *ts);
}

int32_t zel_tset_off(const zel_tset *ts, int32_t di, int32_t start) {
    const zel_tdeg *D = &ts->degs[di];
    int32_t o = start % ts->rpn;
    for (int32_t i = 0; i < D->n_offs; i++)
        if (D->offs[i] == o) return i;
    return -1;
}

const zel_tpl *zel_tset_fit(const zel_tset *ts, const zel_tclass *c, int32_t di, int32_t oi,
                            double room) {
    if (!c->front[di]) return NULL;
    int32_t lo = c->front[di][oi], hi = c->front[di][oi + 1];
    // memory strictly descends along the front: the first entry with mem <= room
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (c->tpl[mid].mem <= room) hi = mid;
        else lo = mid + 1;
    }
    return lo < c->front[di][oi + 1] ? &c->tpl[lo] : NULL;
}

zg_status zel_tset_build(const zg_plan_ctx *ctx, const zg_batch *b, zel_tset *ts,
                         zg_error *err) {
    return zel_tset_build_cached(ctx, b, NULL, ts, err);
}

zg_status zel_tset_build_cached(const zg_plan_ctx *ctx, const zg_batch *b, zel_cache *cache,
                                zel_tset *ts, zg_error *err) {
    memset(ts, 0, sizeof *ts);
    zg_arena_init(&ts->arena, 1 << 16);
    const zg_cluster *cl = ctx->cluster;
    ts->N = cl->world_size;
    ts->rpn = cl->ranks_per_node > 0 && cl->ranks_per_node <= ts->N ? cl->ranks_per_node : ts->N;
    ts->mem_cap = ctx->pricer->mem_cap;
    ts->mem_room = zg_pricer_mem_room(ctx->pricer);
    ts->mem_base = ctx->pricer->mem_base;
    ts->n_seqs = b->n;
    int32_t *cnt = NULL;
    zg_status st = ZG_OK;
    if (!cache) {
        cache = ts->own = zel_cache_new();
        if (!cache) {
            st = zg_error_set(err, ZG_ERR_NOMEM, "zellige: out of memory (templates)");
            goto done;
        }
    }
    ts->class_of = zg_arena_alloc(&ts->arena, sizeof(int32_t) * (size_t)(b->n + 1));
    if (!ts->class_of) {
        st = zg_error_set(err, ZG_ERR_NOMEM, "zellige: out of memory (templates)");
        goto done;
    }
    if ((st = zg_batch_price_classes(b, ts->class_of, &ts->n_classes, err))) goto done;
    ts->cls = zg_arena_alloc(&ts->arena, sizeof(zel_tclass) * (size_t)(ts->n_classes + 1));
    cnt = zg_calloc((size_t)ts->n_classes + 1, sizeof(int32_t), err);
    if (!ts->cls || !cnt) {
        st = ZG_ERR_NOMEM;
        goto done;
    }
    memset(ts->cls, 0, sizeof(zel_tclass) * (size_t)ts->n_classes);
    for (int64_t i = 0; i < b->n; i++) ts->cls[ts->class_of[i]].count++;
    for (int32_t k = 0; k < ts->n_classes; k++) {
        ts->cls[k].members = zg_arena_alloc(&ts->arena, sizeof(int64_t) * (size_t)ts->cls[k].count);
        ts->cls[k].rep = -1;
        if (!ts->cls[k].members) {
            st = ZG_ERR_NOMEM;
            goto done;
        }
    }
    for (int64_t i = 0; i < b->n; i++) {
        zel_tclass *c = &ts->cls[ts->class_of[i]];
        if (c->rep < 0) c->rep = i;
        c->members[cnt[ts->class_of[i]]++] = i;
    }
    // templates: from the cache, pricing the classes it does not hold (fast/cache.c)
    if ((st = zel_cache_fill(cache, ctx, b, ts, err))) goto done;
    // the first sequence (batch order) of a class without options names the failure
    int64_t bad = -1;
    for (int32_t k = 0; k < ts->n_classes; k++)
        if (ts->cls[k].n_tpl == 0 && (bad < 0 || ts->cls[k].rep < bad)) bad = ts->cls[k].rep;
    if (bad >= 0) {
        st = zg_options_infeasible(ctx, &b->seqs[bad], NULL, err);
        goto done;
    }
    qsort(ts->cls, (size_t)ts->n_classes, sizeof(zel_tclass), cmp_class);
    for (int32_t k = 0; k < ts->n_classes; k++)
        for (int64_t m = 0; m < ts->cls[k].count; m++) ts->class_of[ts->cls[k].members[m]] = k;
done:
    free(cnt);
    if (st) zel_tset_free(ts);
    return st;
}
