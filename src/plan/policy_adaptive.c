// policy_adaptive.c — AdaptiveLoad-style compute-aware data parallelism: every sequence runs
// whole (1,1,1); sequences in descending whole-sequence price (LPT; ties: more tokens, then
// batch order) go to the memory-feasible rank with the least priced load (ties: lowest rank).
// The cost model is the context's pricer (the paper's authors fitted AdaptiveLoad's load model
// locally; we give it our prices). A sequence too big to run whole is an infeasible batch.
#include <stdlib.h>

#include "plan/plan.h"

typedef struct {
    const zg_batch *b;
    const zg_price *pr;
} ad_order_ctx;

static int cmp_price_desc(const void *pa, const void *pb, void *vctx) {
    const ad_order_ctx *c = vctx;
    int64_t a = *(const int64_t *)pa, d = *(const int64_t *)pb;
    if (c->pr[a].time != c->pr[d].time) return c->pr[a].time > c->pr[d].time ? -1 : 1;
    int64_t ta = c->b->seqs[a].tokens, td = c->b->seqs[d].tokens;
    if (ta != td) return ta > td ? -1 : 1;
    return (a > d) - (a < d);
}

static zg_status plan_adaptive(zg_planner *pl, const zg_batch *b, zg_plan *out,
                               zg_error *err) {
    const zg_plan_ctx *ctx = &pl->ctx;
    int32_t w = ctx->cluster->world_size;
    double cap = ctx->pricer->mem_cap;
    zg_status st = zg_plan_alloc(out, b->n, w, err);
    if (st) return st;
    zg_price *pr = zg_calloc((size_t)b->n, sizeof *pr, err);
    int64_t *order = zg_calloc((size_t)b->n, sizeof *order, err);
    double *load = zg_calloc((size_t)w, sizeof *load, err);
    double *mem = zg_calloc((size_t)w, sizeof *mem, err);
    if (!pr || !order || !load || !mem) {
        st = ZG_ERR_NOMEM;
        goto done;
    }
    if ((st = zg_plan_whole_prices(ctx, b, pr, err))) goto done;
    char need[32], capb[32], freeb[32];
    for (int64_t i = 0; i < b->n; i++)
        if (pr[i].mem > cap) {
            st = zg_error_set(err, ZG_ERR_INFEASIBLE,
                              "adaptive: sequence %lld (%lld tokens) runs whole and needs %s on "
                              "one rank, cap %s; adaptive never splits a sequence (try --policy "
                              "zellige or usp, or --fallback)",
                              (long long)b->seqs[i].id, (long long)b->seqs[i].tokens,
                              zg_fmt_bytes(pr[i].mem, need, sizeof need),
                              zg_fmt_bytes(cap, capb, sizeof capb));
            goto done;
        }
    for (int64_t i = 0; i < b->n; i++) order[i] = i;
    ad_order_ctx oc = {b, pr};
    if ((st = zg_sort_stable(order, (size_t)b->n, sizeof *order, cmp_price_desc, &oc, err)))
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
                              "adaptive: no rank has room for sequence %lld (%lld tokens, needs "
                              "%s whole): the emptiest rank has %s free of the %s cap",
                              (long long)b->seqs[i].id, (long long)b->seqs[i].tokens,
                              zg_fmt_bytes(pr[i].mem, need, sizeof need),
                              zg_fmt_bytes(cap - mem[roomiest], freeb, sizeof freeb),
                              zg_fmt_bytes(cap, capb, sizeof capb));
            goto done;
        }
        zg_option o = {{1, 1, 1}, best, pr[i].time, pr[i].mem};
        if ((st = zg_plan_set_option(out, i, &b->seqs[i], i, &o, err))) goto done;
        load[best] += pr[i].time;
        mem[best] += pr[i].mem;
    }
done:
    free(pr);
    free(order);
    free(load);
    free(mem);
    return st;
}

const zg_planner_vtable zg_policy_adaptive = {
    "adaptive", "AdaptiveLoad-style compute-aware DP: whole sequences, LPT on price", NULL,
    plan_adaptive, NULL};
