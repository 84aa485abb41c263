// validate.c — checks that a plan is executable: every sequence placed once, its tokens covered
// exactly once by consecutive chunks, configs legal, rank lists sane, rounds in range, memory
// within the cap in every round.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan_internal.h"

// Says why shards that are not consecutive fail: a gap, an overlap, or just the wrong order.
static zg_status explain_ranges(const zg_placement *pl, zg_error *err) {
    int32_t n = pl->n_ranks;
    zg_shard *s = malloc((size_t)n * sizeof *s);
    if (!s) return zg_error_set(err, ZG_ERR_NOMEM, "validate: out of memory");
    memcpy(s, pl->shards, (size_t)n * sizeof *s);
    for (int32_t i = 1; i < n; i++) {  // insertion sort by start (n is small)
        zg_shard t = s[i];
        int32_t j = i - 1;
        while (j >= 0 && s[j].start > t.start) {
            s[j + 1] = s[j];
            j--;
        }
        s[j + 1] = t;
    }
    int64_t at = 0;
    zg_status st = ZG_OK;
    for (int32_t i = 0; i < n && !st; i++) {
        if (s[i].start > at)
            st = zg_error_set(err, ZG_ERR_INVALID,
                              "sequence %lld: tokens %lld..%lld are not covered by any shard",
                              (long long)pl->id, (long long)at, (long long)s[i].start);
        else if (s[i].start < at)
            st = zg_error_set(err, ZG_ERR_INVALID,
                              "sequence %lld: tokens %lld..%lld are covered twice (shard on "
                              "rank %d starts at %lld)",
                              (long long)pl->id, (long long)s[i].start,
                              (long long)(at < s[i].end ? at : s[i].end), s[i].rank,
                              (long long)s[i].start);
        if (s[i].end > at) at = s[i].end;
    }
    if (!st && at < pl->tokens)
        st = zg_error_set(err, ZG_ERR_INVALID,
                          "sequence %lld: tokens %lld..%lld are not covered by any shard",
                          (long long)pl->id, (long long)at, (long long)pl->tokens);
    if (!st)
        st = zg_error_set(err, ZG_ERR_INVALID,
                          "sequence %lld: shards are out of order (shard i must hold the i-th "
                          "consecutive chunk)",
                          (long long)pl->id);
    free(s);
    return st;
}

static zg_status check_placement(const zg_plan *p, int64_t i, const zg_batch *b,
                                 const zg_model *m, unsigned char *seen, zg_error *err) {
    const zg_placement *pl = &p->p[i];
    const zg_seq *s = &b->seqs[i];
    if (pl->seq != i || pl->id != s->id)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "placement %lld is for sequence index %lld id %lld, but batch "
                            "sequence %lld has id %lld (placements must follow batch order)",
                            (long long)i, (long long)pl->seq, (long long)pl->id, (long long)i,
                            (long long)s->id);
    if (pl->tokens != s->tokens)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "sequence %lld: plan says %lld tokens, batch says %lld",
                            (long long)s->id, (long long)pl->tokens, (long long)s->tokens);
    zg_config c = pl->config;
    char cb[32];
    if (c.q < 1 || c.h < 1 || c.k < 1 || (int64_t)c.q * c.h * c.k > p->world_size)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "sequence %lld: config (%d,%d,%d) is not legal on %d ranks",
                            (long long)s->id, c.q, c.h, c.k, p->world_size);
    zg_error cerr;
    int empty_ok = zg_plan_shard_may_be_empty(p, pl);  // KnapFormer's zero-length chunks
    if ((empty_ok ? zg_config_check_priced(m, p->world_size, c, s->tokens, &cerr)
                  : zg_config_check(m, p->world_size, c, s->tokens, &cerr)) != ZG_OK)
        return zg_error_set(err, ZG_ERR_INVALID, "sequence %lld (%lld tokens): %s",
                            (long long)s->id, (long long)s->tokens, cerr.msg);
    if (pl->n_ranks != zg_config_degree(c) || !pl->ranks || !pl->shards)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "sequence %lld: %d ranks listed for config %s of degree %d",
                            (long long)s->id, pl->n_ranks, zg_config_name(c, cb, sizeof cb),
                            zg_config_degree(c));
    for (int32_t r = 0; r < pl->n_ranks; r++) {
        int32_t rk = pl->ranks[r];
        if (rk < 0 || rk >= p->world_size)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "sequence %lld: rank %d out of range (world size %d)",
                                (long long)s->id, rk, p->world_size);
        if (seen[rk])
            return zg_error_set(err, ZG_ERR_INVALID, "sequence %lld: rank %d listed twice",
                                (long long)s->id, rk);
        seen[rk] = 1;
    }
    zg_status st = ZG_OK;
    for (int32_t r = 0; r < pl->n_ranks && !st; r++)
        if (pl->shards[r].rank != pl->ranks[r]) {
            int in_list = pl->shards[r].rank >= 0 && pl->shards[r].rank < p->world_size &&
                          seen[pl->shards[r].rank];
            st = zg_error_set(err, ZG_ERR_INVALID,
                              in_list ? "sequence %lld: shard %d is on rank %d but position %d "
                                        "of the rank list is rank %d"
                                      : "sequence %lld: shard %d is on rank %d, which is not "
                                        "in its rank list (position %d is rank %d)",
                              (long long)s->id, r, pl->shards[r].rank, r, pl->ranks[r]);
        }
    for (int32_t r = 0; r < pl->n_ranks; r++) seen[pl->ranks[r]] = 0;
    if (st) return st;
    int64_t at = 0;
    for (int32_t r = 0; r < pl->n_ranks; r++) {
        const zg_shard *sh = &pl->shards[r];
        int bad_len = sh->end < sh->start || (sh->end == sh->start && !empty_ok);
        if (sh->start != at || bad_len || sh->end > s->tokens) {
            if (bad_len)
                return zg_error_set(err, ZG_ERR_INVALID,
                                    "sequence %lld: shard %d on rank %d is empty or reversed "
                                    "(%lld..%lld); every rank of a split needs >= 1 token (only "
                                    "a knapformer plan's Ulysses split of a sequence shorter "
                                    "than its ranks may leave shards empty)",
                                    (long long)s->id, r, sh->rank, (long long)sh->start,
                                    (long long)sh->end);
            if (sh->start < 0 || sh->end > s->tokens)
                return zg_error_set(err, ZG_ERR_INVALID,
                                    "sequence %lld: shard %d (%lld..%lld) lies outside its %lld "
                                    "tokens",
                                    (long long)s->id, r, (long long)sh->start,
                                    (long long)sh->end, (long long)s->tokens);
            return explain_ranges(pl, err);
        }
        at = sh->end;
    }
    if (at != s->tokens) return explain_ranges(pl, err);
    if (!isfinite(pl->time) || !isfinite(pl->mem) || pl->time < 0 || pl->mem < 0)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "sequence %lld: price time %g s, memory %g B is not finite and "
                            "non-negative",
                            (long long)s->id, pl->time, pl->mem);
    return ZG_OK;
}

// Several rounds: each round's memory per rank (its placements of that round) within the cap;
// names the lowest rank over the cap in the first such round. mem[] (world size) is all 0 and
// is left so.
static zg_status check_round_memory(const zg_plan *p, double *mem, zg_error *err) {
    double room = p->mem_cap - p->mem_base;  // what placements may use (zg_pricer_mem_room)
    int64_t *order = NULL;
    zg_status st = zg_plan_round_order(p, &order, err);
    for (int64_t a = 0, b; !st && a < p->n; a = b) {
        int32_t round = p->p[order[a]].round;
        for (b = a; b < p->n && p->p[order[b]].round == round; b++)
            for (int32_t k = 0; k < p->p[order[b]].n_ranks; k++)
                mem[p->p[order[b]].ranks[k]] += p->p[order[b]].mem;
        int32_t over = -1;
        for (int64_t x = a; x < b; x++)
            for (int32_t k = 0; k < p->p[order[x]].n_ranks; k++) {
                int32_t r = p->p[order[x]].ranks[k];
                if (mem[r] > room * (1 + 1e-12) && (over < 0 || r < over)) over = r;
            }
        if (over >= 0) {
            char a_[32], b_[32], c_[32];
            int64_t big = -1;  // the largest contributor of the round
            for (int64_t y = a; y < b; y++)
                for (int32_t j = 0; j < p->p[order[y]].n_ranks; j++)
                    if (p->p[order[y]].ranks[j] == over &&
                        (big < 0 || p->p[order[y]].mem > p->p[big].mem))
                        big = order[y];
            st = zg_error_set(err, ZG_ERR_INVALID,
                              "rank %d needs %s in round %d (base %s + its placements), over "
                              "the memory cap of %s (largest: sequence %lld)",
                              over, zg_fmt_bytes(p->mem_base + mem[over], a_, sizeof a_), round,
                              zg_fmt_bytes(p->mem_base, b_, sizeof b_),
                              zg_fmt_bytes(p->mem_cap, c_, sizeof c_),
                              big >= 0 ? (long long)p->p[big].id : -1LL);
        }
        for (int64_t x = a; x < b; x++)
            for (int32_t k = 0; k < p->p[order[x]].n_ranks; k++) mem[p->p[order[x]].ranks[k]] = 0;
    }
    free(order);
    return st;
}

zg_status zg_plan_validate(const zg_plan *p, const zg_batch *b, const zg_model *m,
                           zg_error *err) {
    if (!p || !b || !m) return zg_error_set(err, ZG_ERR_INVALID, "validate: missing argument");
    if (p->world_size < 1)
        return zg_error_set(err, ZG_ERR_INVALID, "plan has world size %d; need at least 1",
                            p->world_size);
    if (p->n != b->n)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "plan places %lld sequences but the batch has %lld", (long long)p->n,
                            (long long)b->n);
    unsigned char *seen = zg_calloc((size_t)p->world_size, 1, err);
    double *mem = zg_calloc((size_t)p->world_size, sizeof *mem, err);
    zg_status st = (!seen || !mem) ? ZG_ERR_NOMEM : ZG_OK;
    for (int64_t i = 0; i < p->n && !st; i++) st = check_placement(p, i, b, m, seen, err);
    int32_t n_rounds = 1;
    if (!st) st = zg_plan_rounds_check(p, &n_rounds, "", err);
    // An over-cap plan of a policy that ignores memory (p->over_cap, set by zg_planner_plan) is
    // what its real counterpart would run; its memory is reported, not refused (docs/planners.md).
    int check_mem = p->mem_cap > 0 && !p->over_cap;
    double room = p->mem_cap - p->mem_base;
    if (!st && check_mem && n_rounds > 1) st = check_round_memory(p, mem, err);
    if (!st && n_rounds == 1)
        for (int64_t i = 0; i < p->n; i++)
            for (int32_t r = 0; r < p->p[i].n_ranks; r++) mem[p->p[i].ranks[r]] += p->p[i].mem;
    if (!st && check_mem && n_rounds == 1) {
        for (int32_t r = 0; r < p->world_size && !st; r++)
            if (mem[r] > room * (1 + 1e-12)) {
                char a[32], bb[32], c[32];
                // name the largest contributor so the user knows what to move
                int64_t big = -1;
                for (int64_t i = 0; i < p->n; i++)
                    for (int32_t k = 0; k < p->p[i].n_ranks; k++)
                        if (p->p[i].ranks[k] == r && (big < 0 || p->p[i].mem > p->p[big].mem))
                            big = i;
                st = zg_error_set(err, ZG_ERR_INVALID,
                                  "rank %d needs %s (base %s + its placements), over the "
                                  "memory cap of %s (largest: sequence %lld)",
                                  r, zg_fmt_bytes(p->mem_base + mem[r], a, sizeof a),
                                  zg_fmt_bytes(p->mem_base, bb, sizeof bb),
                                  zg_fmt_bytes(p->mem_cap, c, sizeof c),
                                  big >= 0 ? (long long)p->p[big].id : -1LL);
            }
    }
    free(seen);
    free(mem);
    return st;
}
