// policy_usp.c — USP (xDiT's Ulysses x ring): every sequence is split over all ranks with the
// (1,h,k) factorization of the world size (h divides the head count) whose price is lowest and
// whose memory fits on every rank. A sequence with fewer tokens than ranks uses the largest
// legal degree d <= tokens, on the aligned block of d ranks (start % d == 0) whose busiest rank
// is least loaded (ties: lowest start). Sequences are placed in batch order. Ignores
// opts.max_degree and the rank-set family: USP always spans the world.
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"

typedef struct usp_state {
    int32_t world;
    double cap;
    double *load, *mem;  // per rank
    int32_t *ranks;      // scratch, world entries
    // prices over all ranks, per price class (zg_batch_price_classes) and (1,h,k) of degree
    // world: cache[cls * n_full + j]; legal[] 0 where zg_config_check rejects it
    zg_config *full;
    int32_t n_full;
    zg_price *cache;
    unsigned char *cached, *legal;
} usp_state;

// Lowest-priced legal (1,h,k) of degree d on ranks [start, start+d) that fits the memory left.
// *best_any gets the smallest memory any factorization needs (to explain a failure).
static zg_status best_factorization(const zg_plan_ctx *ctx, const zg_seq *s, int32_t cls,
                                    usp_state *u, const zg_config *cfgs, int32_t nc, int32_t d,
                                    int32_t start, zg_option *best, int *found,
                                    double *best_any, zg_error *err) {
    *found = 0;
    *best_any = -1;
    for (int32_t i = 0; i < d; i++) u->ranks[i] = start + i;
    double used = 0;
    for (int32_t i = 0; i < d; i++)
        if (u->mem[start + i] > used) used = u->mem[start + i];
    int full = d == u->world;
    if (full && !u->cached[cls]) {  // price the class over all ranks once
        for (int32_t j = 0; j < u->n_full; j++) {
            zg_config c = u->full[j];
            u->legal[(size_t)cls * u->n_full + j] =
                zg_config_check(ctx->model, u->world, c, s->tokens, NULL) == ZG_OK;
            if (!u->legal[(size_t)cls * u->n_full + j]) continue;
            zg_status st = zg_pricer_price(ctx->pricer, s, c, u->ranks, d,
                                           &u->cache[(size_t)cls * u->n_full + j], err);
            if (st) return st;
        }
        u->cached[cls] = 1;
    }
    int32_t n_try = full ? u->n_full : nc;
    for (int32_t ci = 0; ci < n_try; ci++) {
        zg_config c = full ? u->full[ci] : cfgs[ci];
        zg_price p;
        if (full) {
            if (!u->legal[(size_t)cls * u->n_full + ci]) continue;
            p = u->cache[(size_t)cls * u->n_full + ci];
        } else {
            if (c.q != 1 || zg_config_degree(c) != d) continue;
            if (zg_config_check(ctx->model, u->world, c, s->tokens, NULL) != ZG_OK) continue;
            zg_status st = zg_pricer_price(ctx->pricer, s, c, u->ranks, d, &p, err);
            if (st) return st;
        }
        if (*best_any < 0 || p.mem < *best_any) *best_any = p.mem;
        if (used + p.mem > u->cap) continue;
        if (!*found || p.time < best->time) {
            *best = (zg_option){c, start, p.time, p.mem};
            *found = 1;
        }
    }
    return ZG_OK;
}

// Aligned block of degree d whose busiest rank is least loaded.
static int32_t pick_block(const usp_state *u, int32_t d) {
    int32_t best = 0;
    double best_max = -1;
    for (int32_t s = 0; s + d <= u->world; s += d) {
        double mx = 0;
        for (int32_t i = 0; i < d; i++)
            if (u->load[s + i] > mx) mx = u->load[s + i];
        if (best_max < 0 || mx < best_max) {
            best_max = mx;
            best = s;
        }
    }
    return best;
}

static zg_status plan_usp(zg_planner *pl, const zg_batch *b, zg_plan *out, zg_error *err) {
    const zg_plan_ctx *ctx = &pl->ctx;
    usp_state u;
    memset(&u, 0, sizeof u);
    u.world = ctx->cluster->world_size;
    u.cap = zg_pricer_mem_room(ctx->pricer);  // for the placements (base apart)
    zg_status st = zg_plan_alloc(out, b->n, u.world, err);
    if (st) return st;
    zg_config *cfgs = NULL;
    int32_t nc = 0;
    if ((st = zg_config_enumerate(ctx->model, u.world, &cfgs, &nc, err))) return st;
    // largest degree with a legal (1,h,k), for each degree <= world (the ring k is free, so it
    // is d itself unless the model's rules say otherwise)
    int32_t *legal_d = zg_calloc((size_t)u.world + 1, sizeof *legal_d, err);
    u.load = zg_calloc((size_t)u.world, sizeof *u.load, err);
    u.mem = zg_calloc((size_t)u.world, sizeof *u.mem, err);
    u.ranks = zg_calloc((size_t)u.world, sizeof *u.ranks, err);
    u.full = zg_calloc((size_t)nc, sizeof *u.full, err);
    int32_t *cls = zg_calloc((size_t)b->n, sizeof *cls, err), n_cls = 0;
    if (!legal_d || !u.load || !u.mem || !u.ranks || !u.full || !cls) {
        st = ZG_ERR_NOMEM;
        goto done;
    }
    for (int32_t ci = 0; ci < nc; ci++)
        if (cfgs[ci].q == 1) {
            legal_d[zg_config_degree(cfgs[ci])] = 1;
            if (zg_config_degree(cfgs[ci]) == u.world) u.full[u.n_full++] = cfgs[ci];
        }
    if ((st = zg_batch_price_classes(b, cls, &n_cls, err))) goto done;
    u.cache = zg_calloc((size_t)n_cls * (size_t)(u.n_full ? u.n_full : 1), sizeof *u.cache, err);
    u.legal = zg_calloc((size_t)n_cls * (size_t)(u.n_full ? u.n_full : 1), 1, err);
    u.cached = zg_calloc((size_t)n_cls, 1, err);
    if (!u.cache || !u.legal || !u.cached) {
        st = ZG_ERR_NOMEM;
        goto done;
    }
    char need[80], capb[32];
    zg_fmt_bytes(ctx->pricer->mem_cap, capb, sizeof capb);
    for (int64_t i = 0; i < b->n; i++) {
        const zg_seq *s = &b->seqs[i];
        int64_t dmax = s->tokens < u.world ? s->tokens : u.world;
        int32_t d = (int32_t)dmax;
        while (d > 1 && !legal_d[d]) d--;
        int32_t start = d == u.world ? 0 : pick_block(&u, d);
        zg_option o;
        int found = 0;
        double best_any = -1;
        st = best_factorization(ctx, s, cls[i], &u, cfgs, nc, d, start, &o, &found, &best_any,
                                err);
        if (st) goto done;
        if (!found) {
            if (best_any < 0 || best_any > u.cap)
                st = zg_error_set(err, ZG_ERR_INFEASIBLE,
                                  "usp: sequence %lld (%lld tokens) fits no (1,h,k) split over "
                                  "%d ranks: needs %s per rank at best, cap %s (use more ranks "
                                  "or --fallback)",
                                  (long long)s->id, (long long)s->tokens, d,
                                  zg_plan_fmt_need(ctx->pricer, best_any, need, sizeof need), capb);
            else
                st = zg_error_set(err, ZG_ERR_INFEASIBLE,
                                  "usp: ranks %d..%d run out of memory at sequence %lld (%lld "
                                  "tokens, needs %s more per rank): the batch does not fit under "
                                  "the %s cap when every sequence spans the ranks",
                                  start, start + d - 1, (long long)s->id, (long long)s->tokens,
                                  zg_fmt_bytes(best_any, need, sizeof need), capb);
            goto done;
        }
        if ((st = zg_plan_set_option(out, i, s, i, &o, err))) goto done;
        for (int32_t r = start; r < start + d; r++) {
            u.load[r] += o.time;
            u.mem[r] += o.mem;
        }
    }
done:
    free(cfgs);
    free(legal_d);
    free(u.load);
    free(u.mem);
    free(u.ranks);
    free(u.full);
    free(u.cache);
    free(u.legal);
    free(u.cached);
    free(cls);
    return st;
}

const zg_planner_vtable zg_policy_usp = {
    "usp", "USP: every sequence over all ranks, best legal Ulysses x ring factorization", NULL,
    plan_usp, NULL, 0};
