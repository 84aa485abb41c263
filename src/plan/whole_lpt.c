// whole_lpt.c — the shared core of the whole-sequence baselines `dp` and `adaptive`: every
// sequence runs whole (1,1,1) on one rank; sequences in descending key order (LPT; ties: more
// tokens, then batch order) go to the memory-feasible rank with the least accumulated key (ties:
// lowest rank). dp's key is tokens (naive token balance), adaptive's the whole-sequence price
// (compute-aware, AdaptiveLoad-style). Honest about memory: a sequence that cannot run whole on
// one rank, or finds no rank with room left, makes the batch infeasible (named in the error).
#include <stdlib.h>

#include "plan/plan_internal.h"

typedef struct {
    const zg_batch *b;
    const double *key;
} lpt_ctx;

static int cmp_key_desc(const void *pa, const void *pb, void *vctx) {
    const lpt_ctx *c = vctx;
    int64_t a = *(const int64_t *)pa, d = *(const int64_t *)pb;
    if (c->key[a] != c->key[d]) return c->key[a] > c->key[d] ? -1 : 1;
    int64_t ta = c->b->seqs[a].tokens, td = c->b->seqs[d].tokens;
    if (ta != td) return ta > td ? -1 : 1;
    return (a > d) - (a < d);
}

zg_status zg_plan_whole_lpt(const zg_planner *pl, const zg_batch *b, int by_price,
                            const char *name, zg_plan *out, zg_error *err) {
    const zg_plan_ctx *ctx = &pl->ctx;
    int32_t w = ctx->cluster->world_size;
    double cap = zg_pricer_mem_room(ctx->pricer);  // for the placements (base apart)
    zg_status st = zg_plan_alloc(out, b->n, w, err);
    if (st) return st;
    zg_price *pr = zg_calloc((size_t)b->n, sizeof *pr, err);
    int64_t *order = zg_calloc((size_t)b->n, sizeof *order, err);
    double *key = zg_calloc((size_t)b->n, sizeof *key, err);
    double *load = zg_calloc((size_t)w, sizeof *load, err);
    double *mem = zg_calloc((size_t)w, sizeof *mem, err);
    if (!pr || !order || !key || !load || !mem) {
        st = ZG_ERR_NOMEM;
        goto done;
    }
    if ((st = zg_plan_whole_prices(ctx, b, pr, err))) goto done;
    char need[80], capb[32], freeb[32];
    zg_fmt_bytes(ctx->pricer->mem_cap, capb, sizeof capb);
    for (int64_t i = 0; i < b->n; i++) {
        if (pr[i].mem > cap) {
            st = zg_error_set(err, ZG_ERR_INFEASIBLE,
                              "%s: sequence %lld (%lld tokens) runs whole and needs %s on one "
                              "rank, cap %s; %s never splits a sequence (try --policy zellige "
                              "or usp, or --fallback)",
                              name, (long long)b->seqs[i].id, (long long)b->seqs[i].tokens,
                              zg_plan_fmt_need(ctx->pricer, pr[i].mem, need, sizeof need),
                              capb, name);
            goto done;
        }
        order[i] = i;
        key[i] = by_price ? pr[i].time : (double)b->seqs[i].tokens;
    }
    lpt_ctx oc = {b, key};
    if ((st = zg_sort_stable(order, (size_t)b->n, sizeof *order, cmp_key_desc, &oc, err)))
        goto done;
    for (int64_t k = 0; k < b->n; k++) {
        int64_t i = order[k];
        int32_t best = -1, roomiest = 0;
        for (int32_t r = 0; r < w; r++) {
            if (mem[r] < mem[roomiest]) roomiest = r;
            if (mem[r] + pr[i].mem > cap) continue;
            if (best < 0 || load[r] < load[best]) best = r;
        }
        if (best < 0) {
            st = zg_error_set(err, ZG_ERR_INFEASIBLE,
                              "%s: no rank has room for sequence %lld (%lld tokens, needs %s "
                              "whole): the emptiest rank has %s free of the %s cap",
                              name, (long long)b->seqs[i].id, (long long)b->seqs[i].tokens,
                              zg_fmt_bytes(pr[i].mem, need, sizeof need),
                              zg_fmt_bytes(cap - mem[roomiest], freeb, sizeof freeb), capb);
            goto done;
        }
        zg_option o = {{1, 1, 1}, best, pr[i].time, pr[i].mem};
        if ((st = zg_plan_set_option(out, i, &b->seqs[i], i, &o, err))) goto done;
        load[best] += key[i];
        mem[best] += pr[i].mem;
    }
done:
    free(pr);
    free(order);
    free(key);
    free(load);
    free(mem);
    return st;
}
