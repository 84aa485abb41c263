// policy_knapformer.c — the 'knapformer' placement policy: KnapFormer's plan_routing
// (knapformer.h, bit-faithful) on every balance group of the batch. Each sequence goes to its
// bag's ranks in order, cut into G chunks (remainder chunk at seq_id mod G, chunk k on the bag's
// k-th rank), config Ulysses (1,G,1). The decision uses only KnapFormer's w(L); placements are
// then priced with ctx.pricer (our model prices the Ulysses communication). docs/knapformer.md.
#include <stdlib.h>
#include <string.h>

#include "plan/knapformer.h"
#include "plan/plan.h"

#define KNAP_BAGS_HELP                                                                             \
    "knapformer needs a bag layout (--bags): '+'-separated terms g{G}n{N} (N bags of G "           \
    "consecutive ranks, distinct G, sum G*N dividing the world size), e.g. g1n32, g4n8, "          \
    "g1n2+g2n1+g4n1"

typedef struct knap_state {
    zg_knap_layout layout;
    int32_t world;
    int32_t replicas;
    int64_t d;
    double gamma;
    zg_knap_balancer *bal; // (replicas) one SequenceBalancer per balance group: persistent
} knap_state;

static void knap_free(zg_planner *pl) {
    knap_state *st = pl->state;
    if (!st) return;
    if (st->bal)
        for (int32_t r = 0; r < st->replicas; r++)
            zg_knap_balancer_free(&st->bal[r]);
    free(st->bal);
    zg_knap_layout_free(&st->layout);
    free(st);
    pl->state = NULL;
}

static zg_status knap_init(zg_planner *pl, zg_error *err) {
    const zg_plan_ctx *ctx = &pl->ctx;
    const zg_planner_opts *o = &ctx->opts;
    if (!o->bags[0]) return zg_error_set(err, ZG_ERR_INVALID, KNAP_BAGS_HELP);
    int32_t world = o->world_size > 0 ? o->world_size : ctx->cluster ? ctx->cluster->world_size : 0;
    if (world < 1)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "knapformer: no world size (set opts.world_size or give a cluster)");
    if (ctx->pricer && ctx->cluster && world > ctx->cluster->world_size)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "knapformer: world size %d exceeds cluster %s's %d ranks", world,
                            ctx->cluster->name, ctx->cluster->world_size);
    int64_t d = o->d_model > 0 ? o->d_model : ctx->model ? ctx->model->dim : 0;
    if (d < 1)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "knapformer: no model width for w(L) (set opts.d_model or give a "
                            "model)");
    knap_state *st = zg_calloc(1, sizeof *st, err);
    if (!st) return ZG_ERR_NOMEM;
    pl->state = st;
    st->world = world;
    st->d = d;
    st->gamma = o->gamma;
    zg_status s = zg_knap_layout_parse(o->bags, &st->layout, err);
    if (s) {
        knap_free(pl);
        return zg_error_prefix(err, "knapformer: ");
    }
    if ((s = zg_knap_layout_replicas(&st->layout, world, &st->replicas, err))) {
        knap_free(pl);
        return zg_error_prefix(err, "knapformer: ");
    }
    st->bal = zg_calloc((size_t)st->replicas, sizeof *st->bal, err);
    if (!st->bal) {
        knap_free(pl);
        return ZG_ERR_NOMEM;
    }
    for (int32_t r = 0; r < st->replicas; r++)
        if ((s = zg_knap_balancer_init(&st->bal[r], &st->layout, d, o->gamma, ZG_KNAP_COST_FLOPS,
                                       err))) {
            knap_free(pl);
            return s;
        }
    return ZG_OK;
}

// KnapFormer's global ids: sequences in (origin rank, local index) order, ids 0, 1, 2, ...
static zg_status check_batch(const knap_state *st, const zg_batch *b, zg_error *err) {
    for (int64_t i = 0; i < b->n; i++) {
        const zg_seq *s = &b->seqs[i];
        if (s->id != i)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "knapformer: sequence at index %lld has id %lld; KnapFormer's "
                                "global ids are 0,1,2,... in (origin rank, local index) order",
                                (long long)i, (long long)s->id);
        if (s->origin_rank < 0 || s->origin_rank >= st->world)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "knapformer: sequence %lld has origin rank %d; every sequence "
                                "needs its data rank in 0..%d",
                                (long long)i, s->origin_rank, st->world - 1);
        if (i > 0 && s->origin_rank < b->seqs[i - 1].origin_rank)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "knapformer: sequence %lld (origin rank %d) follows one of rank "
                                "%d; sequences must be in (origin rank, local index) order",
                                (long long)i, s->origin_rank, b->seqs[i - 1].origin_rank);
    }
    return ZG_OK;
}

// Writes the placements of balance group `rep` (batch indices first .. first+r->n-1).
static zg_status place_group(const zg_planner *pl, const knap_state *st, int32_t rep,
                             const zg_batch *b, int64_t first, const zg_knap_routing *r,
                             zg_plan *out, zg_error *err) {
    const zg_knap_layout *l = &st->layout;
    const zg_model *m = pl->ctx.model;
    int32_t *rk = zg_calloc((size_t)l->size[l->n_sizes - 1], sizeof *rk, err);
    if (!rk) return ZG_ERR_NOMEM;
    zg_status s = ZG_OK;
    for (int64_t j = 0; j < r->n && !s; j++) {
        int64_t i = first + j;
        const zg_seq *q = &b->seqs[i];
        int32_t bag = r->assign[j], G = l->bag_size[bag];
        const int64_t *lens = &r->chunk_len[r->chunk_off[j]];
        if (G > 1 && m && m->n_heads % G != 0) {
            s = zg_error_set(err, ZG_ERR_INVALID,
                             "knapformer: sequence %lld went to a %d-GPU bag but %s has %d "
                             "heads, not divisible by %d (Ulysses inside a bag splits heads; "
                             "KnapFormer fails here at run time); use bag sizes dividing %d",
                             (long long)q->id, G, m->name, m->n_heads, G, m->n_heads);
            break;
        }
        // A sequence shorter than its bag (it fell back there) keeps KnapFormer's zero-length
        // chunks: the plan allows them for this policy (zg_plan_shard_may_be_empty).
        for (int32_t k = 0; k < G; k++)
            rk[k] = rep * l->group + l->bag_first[bag] + k;
        zg_config c = {1, G, 1};
        if ((s = zg_plan_set_ranks(out, i, q, i, c, rk, lens, G, err))) break;
        if (pl->ctx.pricer) {
            zg_price pr;
            if ((s = zg_pricer_price(pl->ctx.pricer, q, c, rk, G, &pr, err))) {
                zg_error_prefix(err, "knapformer: pricing sequence %lld: ", (long long)q->id);
                break;
            }
            out->p[i].time = pr.time;
            out->p[i].mem = pr.mem;
        }
    }
    free(rk);
    return s;
}

static zg_status knap_plan(zg_planner *pl, const zg_batch *b, zg_plan *out, zg_error *err) {
    knap_state *st = pl->state;
    if (!st) return zg_error_set(err, ZG_ERR_INVALID, "knapformer: planner is not initialised");
    zg_status s = check_batch(st, b, err);
    if (s) return s;
    const zg_knap_layout *l = &st->layout;
    int64_t *len = zg_calloc((size_t)b->n, sizeof *len, err);
    int32_t *gpu = zg_calloc((size_t)b->n, sizeof *gpu, err);
    if (!len || !gpu) {
        free(len);
        free(gpu);
        return ZG_ERR_NOMEM;
    }
    for (int64_t i = 0; i < b->n; i++) {
        len[i] = b->seqs[i].tokens;
        gpu[i] = b->seqs[i].origin_rank % l->group;
    }
    if ((s = zg_plan_alloc(out, b->n, st->world, err))) goto done;
    snprintf(out->policy, sizeof out->policy, "knapformer");
    double worst_orig = 0, worst_bal = 0;
    int64_t first = 0;
    for (int32_t rep = 0; rep < st->replicas && !s; rep++) {
        int64_t end = first;
        while (end < b->n && b->seqs[end].origin_rank < (rep + 1) * l->group)
            end++;
        zg_knap_routing r;
        s = zg_knap_plan_routing(&st->bal[rep], len + first, gpu + first, end - first, &r, err);
        if (s) {
            if (st->replicas > 1)
                zg_error_prefix(err, "balance group %d (ranks %d..%d): ", rep, rep * l->group,
                                (rep + 1) * l->group - 1);
            break;
        }
        if (r.orig_ratio > worst_orig) worst_orig = r.orig_ratio;
        if (r.bal_ratio > worst_bal) worst_bal = r.bal_ratio;
        s = place_group(pl, st, rep, b, first, &r, out, err);
        zg_knap_routing_free(&r);
        first = end;
    }
    if (!s) {
        char name[96];
        snprintf(out->summary, sizeof out->summary,
                 "bags %s x %d groups, gamma %g, d %lld: modelled max/min %.4f -> %.4f",
                 zg_knap_layout_name(l, name, sizeof name), st->replicas, st->gamma,
                 (long long)st->d, worst_orig, worst_bal);
    }
done:
    free(len);
    free(gpu);
    return s;
}

const zg_planner_vtable zg_policy_knapformer = {"knapformer",
                                                "KnapFormer's greedy bag balancer (bit-faithful "
                                                "port; fixed bag layout --bags, Ulysses in bags)",
                                                knap_init, knap_plan, knap_free,
                                                1};  // ignores memory (docs/planners.md)
