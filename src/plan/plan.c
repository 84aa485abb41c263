// plan.c — the plan object: allocation and setting one placement (contiguous option or an
// explicit rank list with chunk lengths).
#include <stdlib.h>
#include <string.h>

#include "plan/plan_internal.h"

void zg_plan_init(zg_plan *p) {
    memset(p, 0, sizeof *p);
    p->version = 1;
    zg_arena_init(&p->arena, 1 << 16);
}

void zg_plan_free(zg_plan *p) {
    if (!p) return;
    zg_arena_free(&p->arena);
    memset(p, 0, sizeof *p);
    p->version = 1;
}

zg_status zg_plan_alloc(zg_plan *p, int64_t n, int32_t world_size, zg_error *err) {
    zg_plan_free(p);
    zg_plan_init(p);
    if (n < 0)
        return zg_error_set(err, ZG_ERR_INVALID, "plan: %lld placements; need >= 0",
                            (long long)n);
    if (world_size < 1)
        return zg_error_set(err, ZG_ERR_INVALID, "plan: world size %d; need at least 1 rank",
                            world_size);
    if ((uint64_t)n > SIZE_MAX / sizeof(zg_placement) / 2)
        return zg_error_set(err, ZG_ERR_NOMEM, "plan: %lld placements is too many",
                            (long long)n);
    p->n = n;
    p->world_size = world_size;
    p->p = zg_arena_alloc(&p->arena, (size_t)(n ? n : 1) * sizeof *p->p);
    p->ranks = zg_arena_alloc(&p->arena, (size_t)world_size * sizeof *p->ranks);
    if (!p->p || !p->ranks) {
        zg_plan_free(p);
        return zg_error_set(err, ZG_ERR_NOMEM, "plan: out of memory for %lld placements",
                            (long long)n);
    }
    for (int64_t i = 0; i < n; i++) p->p[i].seq = i;
    return ZG_OK;
}

// Allocates placement i's rank and shard arrays for n ranks and fills the identity fields.
// A sequence shorter than its n ranks only when allow_short (explicit chunks of a Ulysses split:
// zero-length ones, see zg_plan_shard_may_be_empty).
static zg_status placement_prepare(zg_plan *p, int64_t i, const zg_seq *s, int64_t seq_index,
                                   zg_config c, int32_t n, int allow_short, zg_error *err) {
    if (i < 0 || i >= p->n)
        return zg_error_set(err, ZG_ERR_INVALID, "plan: placement %lld out of range (0..%lld)",
                            (long long)i, (long long)p->n - 1);
    if (n < 1 || n > p->world_size)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "plan: sequence %lld placed on %d ranks; need 1..%d", (long long)s->id,
                            n, p->world_size);
    if (s->tokens < n && !allow_short)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "plan: sequence %lld (%lld tokens) cannot be split over %d ranks",
                            (long long)s->id, (long long)s->tokens, n);
    zg_placement *pl = &p->p[i];
    if (!pl->ranks || pl->n_ranks < n) {
        pl->ranks = zg_arena_alloc(&p->arena, (size_t)n * sizeof *pl->ranks);
        pl->shards = zg_arena_alloc(&p->arena, (size_t)n * sizeof *pl->shards);
        if (!pl->ranks || !pl->shards)
            return zg_error_set(err, ZG_ERR_NOMEM, "plan: out of memory");
    }
    pl->seq = seq_index;
    pl->id = s->id;
    pl->tokens = s->tokens;
    pl->round = 0;
    pl->config = c;
    pl->n_ranks = n;
    return ZG_OK;
}

zg_status zg_plan_set_option(zg_plan *p, int64_t i, const zg_seq *s, int64_t seq_index,
                             const zg_option *o, zg_error *err) {
    int32_t d = zg_option_degree(o);
    if (o->start < 0 || o->start + (int64_t)d > p->world_size)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "plan: option ranks %d..%d out of range for %d ranks", o->start,
                            o->start + d - 1, p->world_size);
    zg_status st = placement_prepare(p, i, s, seq_index, o->config, d, 0, err);
    if (st) return st;
    zg_placement *pl = &p->p[i];
    int64_t base = s->tokens / d, extra = s->tokens % d, at = 0;
    for (int32_t r = 0; r < d; r++) {
        int64_t len = base + (r < extra ? 1 : 0);
        pl->ranks[r] = o->start + r;
        pl->shards[r] = (zg_shard){o->start + r, at, at + len};
        at += len;
    }
    pl->time = o->time;
    pl->mem = o->mem;
    return ZG_OK;
}

zg_status zg_plan_set_ranks(zg_plan *p, int64_t i, const zg_seq *s, int64_t seq_index,
                            zg_config c, const int32_t *ranks, const int64_t *chunk_lens,
                            int32_t n, zg_error *err) {
    if (zg_config_degree(c) != n)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "plan: sequence %lld has config (%d,%d,%d) of degree %d but %d ranks",
                            (long long)s->id, c.q, c.h, c.k, zg_config_degree(c), n);
    zg_status st = placement_prepare(p, i, s, seq_index, c, n, zg_config_is_ulysses(c), err);
    if (st) return st;
    zg_placement *pl = &p->p[i];
    int64_t at = 0;
    for (int32_t r = 0; r < n; r++) {
        if (chunk_lens[r] < 0 || (chunk_lens[r] == 0 && s->tokens >= n))
            return zg_error_set(err, ZG_ERR_INVALID,
                                "plan: sequence %lld (%lld tokens) chunk %d has %lld tokens; need "
                                ">= 1 (0 only when the sequence has fewer tokens than its %d "
                                "ranks)",
                                (long long)s->id, (long long)s->tokens, r,
                                (long long)chunk_lens[r], n);
        pl->ranks[r] = ranks[r];
        pl->shards[r] = (zg_shard){ranks[r], at, at + chunk_lens[r]};
        at += chunk_lens[r];
    }
    if (at != s->tokens)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "plan: sequence %lld chunks sum to %lld tokens, not %lld",
                            (long long)s->id, (long long)at, (long long)s->tokens);
    pl->time = 0;
    pl->mem = 0;
    return ZG_OK;
}

int zg_plan_shard_may_be_empty(const zg_plan *p, const zg_placement *pl) {
    return p && pl && !strcmp(p->policy, "knapformer") && zg_config_is_ulysses(pl->config) &&
           pl->tokens < (int64_t)zg_config_degree(pl->config);
}

zg_status zg_plan_rounds_check(const zg_plan *p, int32_t *n_rounds, const char *who,
                               zg_error *err) {
    *n_rounds = 1;
    for (int64_t i = 0; i < p->n; i++) {
        int32_t rd = p->p[i].round;
        if (rd < 0 || rd >= p->n)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "%ssequence %lld is in round %d; rounds are 0..%lld (one per "
                                "sequence at most)",
                                who ? who : "", (long long)p->p[i].id, rd, (long long)p->n - 1);
        if (rd >= *n_rounds) *n_rounds = rd + 1;
    }
    return ZG_OK;
}

static int cmp_round(const void *pa, const void *pb, void *vctx) {
    const zg_plan *p = vctx;
    int32_t a = p->p[*(const int64_t *)pa].round, b = p->p[*(const int64_t *)pb].round;
    return (a > b) - (a < b);
}

zg_status zg_plan_round_order(const zg_plan *p, int64_t **order, zg_error *err) {
    *order = zg_calloc((size_t)(p->n ? p->n : 1), sizeof **order, err);
    if (!*order) return ZG_ERR_NOMEM;
    for (int64_t i = 0; i < p->n; i++) (*order)[i] = i;
    zg_status st = zg_sort_stable(*order, (size_t)p->n, sizeof **order, cmp_round, (void *)p, err);
    if (st) {
        free(*order);
        *order = NULL;
    }
    return st;
}
