// policy_dp.c — naive data parallelism, token-balanced: every sequence runs whole (1,1,1) on one
// rank; sequences in descending token order (LPT) go to the memory-feasible rank holding the
// fewest tokens (ties: lowest rank). Honest about memory: a sequence that does not fit whole on
// one rank, or finds no rank with room left, is an infeasible batch (named in the error).
#include <stdlib.h>

#include "plan/plan.h"

typedef struct {
    const zg_batch *b;
} dp_order_ctx;

static int cmp_tokens_desc(const void *pa, const void *pb, void *ctx) {
    const zg_batch *b = ((const dp_order_ctx *)ctx)->b;
    int64_t a = *(const int64_t *)pa, c = *(const int64_t *)pb;
    int64_t ta = b->seqs[a].tokens, tc = b->seqs[c].tokens;
    if (ta != tc) return ta > tc ? -1 : 1;
    return (a > c) - (a < c);
}

static zg_status plan_dp(zg_planner *pl, const zg_batch *b, zg_plan *out, zg_error *err) {
    const zg_plan_ctx *ctx = &pl->ctx;
    int32_t w = ctx->cluster->world_size;
    double cap = ctx->pricer->mem_cap;
    zg_status st = zg_plan_alloc(out, b->n, w, err);
    if (st) return st;
    zg_price *pr = zg_calloc((size_t)b->n, sizeof *pr, err);
    int64_t *order = zg_calloc((size_t)b->n, sizeof *order, err);
    int64_t *tok = zg_calloc((size_t)w, sizeof *tok, err);
    double *mem = zg_calloc((size_t)w, sizeof *mem, err);
    if (!pr || !order || !tok || !mem) {
        st = ZG_ERR_NOMEM;
        goto done;
    }
    if ((st = zg_plan_whole_prices(ctx, b, pr, err))) goto done;
    char need[32], capb[32], freeb[32];
    for (int64_t i = 0; i < b->n; i++)
        if (pr[i].mem > cap) {
            st = zg_error_set(err, ZG_ERR_INFEASIBLE,
                              "dp: sequence %lld (%lld tokens) runs whole and needs %s on one "
                              "rank, cap %s; dp never splits a sequence (try --policy zellige "
                              "or usp, or --fallback)",
                              (long long)b->seqs[i].id, (long long)b->seqs[i].tokens,
                              zg_fmt_bytes(pr[i].mem, need, sizeof need),
                              zg_fmt_bytes(cap, capb, sizeof capb));
            goto done;
        }
    for (int64_t i = 0; i < b->n; i++) order[i] = i;
    dp_order_ctx oc = {b};
    if ((st = zg_sort_stable(order, (size_t)b->n, sizeof *order, cmp_tokens_desc, &oc, err)))
        goto done;
    for (int64_t k = 0; k < b->n; k++) {
        int64_t i = order[k];
        int32_t best = -1, roomiest = 0;
        for (int32_t r = 0; r < w; r++) {
            if (mem[r] < mem[roomiest]) roomiest = r;
            if (mem[r] + pr[i].mem > cap) continue;
            if (best < 0 || tok[r] < tok[best]) best = r;
        }
        if (best < 0) {
            st = zg_error_set(err, ZG_ERR_INFEASIBLE,
                              "dp: no rank has room for sequence %lld (%lld tokens, needs %s "
                              "whole): the emptiest rank has %s free of the %s cap",
                              (long long)b->seqs[i].id, (long long)b->seqs[i].tokens,
                              zg_fmt_bytes(pr[i].mem, need, sizeof need),
                              zg_fmt_bytes(cap - mem[roomiest], freeb, sizeof freeb),
                              zg_fmt_bytes(cap, capb, sizeof capb));
            goto done;
        }
        zg_option o = {{1, 1, 1}, best, pr[i].time, pr[i].mem};
        if ((st = zg_plan_set_option(out, i, &b->seqs[i], i, &o, err))) goto done;
        tok[best] += b->seqs[i].tokens;
        mem[best] += pr[i].mem;
    }
done:
    free(pr);
    free(order);
    free(tok);
    free(mem);
    return st;
}

const zg_planner_vtable zg_policy_dp = {
    "dp", "data parallel, token-balanced: whole sequences, LPT on tokens", NULL, plan_dp, NULL};
