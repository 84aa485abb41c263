// engine_init.c — checks a plan against the world and builds this rank's schedule: the shards
// it serves (items), their work-space rows, the coalesced exchanges (batches) in the global
// order, and the ring-buffer offsets per step. Pure function of (plan, rank): no messages.
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"

void zg_engine_opts_default(zg_engine_opts *o) {
    memset(o, 0, sizeof *o);
    o->coalesce = 1;
}

int64_t zg_eng_group_len(const zg_placement *pl, int32_t g) {
    int32_t h = pl->config.h;
    return pl->shards[g * h + h - 1].end - pl->shards[g * h].start;
}

int64_t zg_eng_group_start(const zg_placement *pl, int32_t g) {
    return pl->shards[g * pl->config.h].start;
}

int64_t zg_eng_block_len(const zg_placement *pl, int32_t b) {
    int64_t n = 0;
    for (int32_t j = 0; j < pl->config.q; j++)
        n += zg_eng_group_len(pl, j * pl->config.k + b);
    return n;
}

int64_t zg_eng_section_off(const zg_placement *pl, int32_t b, int32_t j) {
    int64_t n = 0;
    for (int32_t i = 0; i < j; i++)
        n += zg_eng_group_len(pl, i * pl->config.k + b);
    return n;
}

static zg_status check_placement(const zg_plan *plan, int64_t i, int32_t n_heads, zg_error *err) {
    const zg_placement *pl = &plan->p[i];
    zg_config c = pl->config;
    long long id = (long long)pl->id;
    if (c.q < 1 || c.h < 1 || c.k < 1)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "engine: sequence %lld has config (%d,%d,%d); factors must be >= 1", id,
                            c.q, c.h, c.k);
    if (n_heads % c.h != 0)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "engine: sequence %lld: Ulysses degree %d does not divide %d heads", id,
                            c.h, n_heads);
    if (pl->n_ranks != zg_config_degree(c) || !pl->ranks || !pl->shards)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "engine: sequence %lld has %d ranks for config (%d,%d,%d) of degree "
                            "%d",
                            id, pl->n_ranks, c.q, c.h, c.k, zg_config_degree(c));
    int64_t at = 0;
    for (int32_t r = 0; r < pl->n_ranks; r++) {
        int32_t rk = pl->ranks[r];
        if (rk < 0 || rk >= plan->world_size)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "engine: sequence %lld position %d is rank %d, outside [0, %d)", id,
                                r, rk, plan->world_size);
        for (int32_t j = 0; j < r; j++)
            if (pl->ranks[j] == rk)
                return zg_error_set(err, ZG_ERR_INVALID, "engine: sequence %lld uses rank %d twice",
                                    id, rk);
        const zg_shard *s = &pl->shards[r];
        // >= 1 token, or 0 where the plan format allows it (KnapFormer's zero-length chunks: a
        // Ulysses rank computes its heads over the group's tokens all the same)
        int64_t least = zg_plan_shard_may_be_empty(plan, pl) ? 0 : 1;
        if (s->rank != rk || s->start != at || s->end - s->start < least)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "engine: sequence %lld shard %d (rank %d, [%lld, %lld)) must be "
                                "on rank %d, start at %lld and hold >= 1 token",
                                id, r, s->rank, (long long)s->start, (long long)s->end, rk,
                                (long long)at);
        at = s->end;
    }
    if (at != pl->tokens)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "engine: sequence %lld shards cover %lld of %lld tokens", id,
                            (long long)at, (long long)pl->tokens);
    return ZG_OK;
}

// Finds or appends the batch with this rank list; adds item `it`.
static zg_status batch_add(zg_ebatch **bs, int32_t *nb, const int32_t *ranks, int32_t n, int32_t me,
                           int64_t p, int32_t g, int64_t it, zg_error *err) {
    zg_ebatch *b = NULL;
    for (int32_t i = 0; i < *nb && !b; i++)
        if ((*bs)[i].n == n && memcmp((*bs)[i].ranks, ranks, (size_t)n * sizeof(int32_t)) == 0)
            b = &(*bs)[i];
    if (!b) {
        zg_ebatch *nbs = zg_realloc_array(*bs, (size_t)*nb + 1, sizeof(zg_ebatch), err);
        if (!nbs) return err ? err->status : ZG_ERR_NOMEM;
        *bs = nbs;
        b = &nbs[(*nb)++];
        memset(b, 0, sizeof *b);
        int32_t *rk = zg_calloc((size_t)n, sizeof(int32_t), err);
        if (!rk) return err ? err->status : ZG_ERR_NOMEM;
        memcpy(rk, ranks, (size_t)n * sizeof(int32_t));
        b->ranks = rk;
        b->n = n;
        b->me = me;
        b->key_p = p;
        b->key_g = g;
    }
    int64_t *items = zg_realloc_array(b->items, (size_t)b->n_items + 1, sizeof(int64_t), err);
    if (!items) return err ? err->status : ZG_ERR_NOMEM;
    b->items = items;
    b->items[b->n_items++] = it;
    return ZG_OK;
}

// The global order: larger groups first, then placement order, then group index.
static int batch_cmp(const void *a, const void *b) {
    const zg_ebatch *x = a, *y = b;
    if (x->n != y->n) return x->n > y->n ? -1 : 1;
    if (x->key_p != y->key_p) return x->key_p < y->key_p ? -1 : 1;
    return (x->key_g > y->key_g) - (x->key_g < y->key_g);
}

static zg_status build_items(zg_engine *e, zg_error *err) {
    const zg_plan *plan = e->plan;
    int32_t H = e->shape.n_heads;
    int64_t n = 0;
    for (int64_t i = 0; i < plan->n; i++)
        if (zg_comm_rank_index(plan->p[i].ranks, plan->p[i].n_ranks, e->me) >= 0) n++;
    e->n_items = n;
    e->items = zg_calloc((size_t)n + 1, sizeof(zg_eitem), err);
    e->item_p = zg_calloc((size_t)n + 1, sizeof(int64_t), err);
    e->item_shard = zg_calloc((size_t)n + 1, sizeof(zg_shard), err);
    if (!e->items || !e->item_p || !e->item_shard) return err ? err->status : ZG_ERR_NOMEM;
    int64_t at = 0, qrow = 0, kvrow = 0, x = 0;
    e->k_max = 1;
    for (int64_t i = 0; i < plan->n; i++) {
        const zg_placement *pl = &plan->p[i];
        int32_t pos = zg_comm_rank_index(pl->ranks, pl->n_ranks, e->me);
        if (pos < 0) continue;
        zg_config c = pl->config;
        zg_eitem *it = &e->items[x];
        it->p = i;
        it->c = c;
        it->pos = pos;
        it->ih = pos % c.h;
        it->ik = (pos / c.h) % c.k;
        it->iq = pos / (c.h * c.k);
        it->hs = H / c.h;
        it->tok_off = at;
        it->cl = pl->shards[pos].end - pl->shards[pos].start;
        int32_t g = pos / c.h;
        it->g_start = zg_eng_group_start(pl, g);
        it->lq = zg_eng_group_len(pl, g);
        it->lkv = zg_eng_block_len(pl, it->ik);
        it->kvrow = kvrow;
        it->secoff = zg_eng_section_off(pl, it->ik, it->iq);
        if (c.k > 1) {
            int32_t nx = (it->iq * c.k + (it->ik + 1) % c.k) * c.h + it->ih;
            int32_t pv = (it->iq * c.k + (it->ik + c.k - 1) % c.k) * c.h + it->ih;
            it->next = pl->ranks[nx];
            it->prev = pl->ranks[pv];
            if (c.k > e->k_max) e->k_max = c.k;
        }
        e->item_p[x] = i;
        e->item_shard[x] = pl->shards[pos];
        at += it->cl;
        kvrow += (int64_t)it->hs * it->lkv;
        x++;
    }
    // Query rows: ring items first, by descending k (plan order among equals), so the rows a
    // ring step touches (items with k > s) are a prefix of the work space and a step's kernel
    // call spans only them; then everything else.
    for (int32_t kk = e->k_max; kk >= 1; kk--)
        for (int64_t j = 0; j < n; j++)
            if (e->items[j].c.k == kk) {
                e->items[j].qrow = qrow;
                qrow += (int64_t)e->items[j].hs * e->items[j].lq;
            }
    e->t_local = at;
    e->q_rows = qrow;
    e->kv_rows = kvrow;
    // ring offsets per step 0..k_max
    e->roff = zg_calloc((size_t)(e->k_max + 1) * (size_t)(n + 1), sizeof(int64_t), err);
    if (!e->roff) return err ? err->status : ZG_ERR_NOMEM;
    e->ring_rows = 0;
    for (int32_t s = 0; s <= e->k_max; s++) {
        int64_t off = 0;
        for (int64_t j = 0; j < n; j++) {
            const zg_eitem *it = &e->items[j];
            e->roff[(size_t)s * (size_t)n + (size_t)j] = off;
            if (it->c.k > 1)
                off +=
                    (int64_t)it->hs * zg_eng_block_len(&plan->p[it->p], zg_eng_ring_block(it, s));
        }
        if (off > e->ring_rows) e->ring_rows = off;
    }
    return ZG_OK;
}

static zg_status build_batches(zg_engine *e, zg_error *err) {
    int32_t peers[1024];
    for (int64_t j = 0; j < e->n_items; j++) {
        const zg_eitem *it = &e->items[j];
        const zg_placement *pl = &e->plan->p[it->p];
        int32_t g = it->pos / it->c.h;
        zg_status st = batch_add(&e->ub, &e->n_ub, pl->ranks + (size_t)g * it->c.h, it->c.h, it->ih,
                                 it->p, g, j, err);
        if (st) return st;
        if (it->c.q > 1) {
            if (it->c.q > 1024)
                return zg_error_set(err, ZG_ERR_UNSUPPORTED,
                                    "engine: all-gather degree %d above 1024", it->c.q);
            for (int32_t a = 0; a < it->c.q; a++)
                peers[a] = pl->ranks[(a * it->c.k + it->ik) * it->c.h + it->ih];
            st = batch_add(&e->gb, &e->n_gb, peers, it->c.q, it->iq, it->p,
                           it->ik * it->c.h + it->ih, j, err);
            if (st) return st;
        }
    }
    if (e->n_ub > 1) qsort(e->ub, (size_t)e->n_ub, sizeof(zg_ebatch), batch_cmp);
    if (e->n_gb > 1) qsort(e->gb, (size_t)e->n_gb, sizeof(zg_ebatch), batch_cmp);
    return ZG_OK;
}

zg_status zg_engine_init(zg_engine **out, zg_comm *comm, const zg_plan *plan, zg_attn_shape shape,
                         const zg_engine_opts *opts, zg_error *err) {
    *out = NULL;
    if (!comm || !plan)
        return zg_error_set(err, ZG_ERR_INVALID, "engine: comm and plan are required");
    if (shape.n_heads < 1 || shape.head_dim < 1)
        return zg_error_set(err, ZG_ERR_INVALID, "engine: bad attention shape H=%d D=%d",
                            shape.n_heads, shape.head_dim);
    for (int64_t i = 0; i < plan->n; i++) {
        zg_status st = check_placement(plan, i, shape.n_heads, err);
        if (st) return st;
    }
    if (plan->world_size != comm->size)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "engine: plan is for %d ranks but the world has %d (run with "
                            "mpirun -np %d)",
                            plan->world_size, comm->size, plan->world_size);
    zg_engine *e = zg_calloc(1, sizeof *e, err);
    if (!e) return err ? err->status : ZG_ERR_NOMEM;
    e->comm = comm;
    e->plan = plan;
    e->shape = shape;
    if (opts)
        e->opts = *opts;
    else
        zg_engine_opts_default(&e->opts);
    e->me = comm->rank;
    zg_status st = build_items(e, err);
    if (!st) st = build_batches(e, err);
    e->n_rounds = 1;
    for (int64_t i = 0; i < plan->n && !st; i++) {
        if (plan->p[i].round < 0)
            st = zg_error_set(err, ZG_ERR_INVALID, "engine: sequence %lld has round %d",
                              (long long)plan->p[i].id, plan->p[i].round);
        else if (plan->p[i].round + 1 > e->n_rounds)
            e->n_rounds = plan->p[i].round + 1;
    }
    if (st) {
        zg_engine_free(e);
        return st;
    }
    *out = e;
    return ZG_OK;
}

static void free_batches(zg_ebatch *b, int32_t n) {
    for (int32_t i = 0; i < n; i++) {
        free((void *)b[i].ranks);
        free(b[i].items);
    }
    free(b);
}

void zg_eng_rounds_release(zg_engine *e) {
    for (int32_t r = 0; e->rsub && r < e->n_rounds; r++) {
        zg_engine_free(e->rsub[r]);
        free(e->rplans[r].p);
    }
    free(e->rsub);
    free(e->rplans);
    e->rsub = NULL, e->rplans = NULL;
}

void zg_engine_free(zg_engine *e) {
    if (!e) return;
    zg_eng_rounds_release(e);
    free(e->items);
    free(e->item_p);
    free(e->item_shard);
    free(e->roff);
    free_batches(e->ub, e->n_ub);
    free_batches(e->gb, e->n_gb);
    free(e->mem);
    free(e->slices);
    free(e->slice_item);
    free(e->scratch[0]);
    free(e->scratch[1]);
    free(e);
}

int64_t zg_engine_local_tokens(const zg_engine *e) {
    return e->t_local;
}

void zg_engine_local_shards(const zg_engine *e, int64_t *n, const int64_t **placement,
                            const zg_shard **shards) {
    *n = e->n_items;
    *placement = e->item_p;
    *shards = e->item_shard;
}

const zg_engine_stats *zg_engine_last_stats(const zg_engine *e) {
    return &e->stats;
}

void *zg_eng_scratch(zg_engine *e, int which, size_t bytes, zg_error *err) {
    if (bytes > e->scratch_cap[which] || !e->scratch[which]) {
        free(e->scratch[which]);
        e->scratch[which] = zg_calloc(bytes + 64, 1, err);
        e->scratch_cap[which] = e->scratch[which] ? bytes : 0;
    }
    return e->scratch[which];
}

zg_status zg_eng_alloc_work(zg_engine *e, int backward, zg_error *err) {
    if (e->mem) return ZG_OK;
    size_t D = (size_t)e->shape.head_dim, qr = (size_t)e->q_rows, kr = (size_t)e->kv_rows,
           rr = (size_t)e->ring_rows;
    // One allocation carved into the work buffers, in this order (16 floats of slack).
    const struct {
        float **p;
        size_t n;
    } parts[] = {
        {&e->qw, qr * D},    {&e->ow, qr * D},     {&e->otmp, qr * D},   {&e->dow, qr * D},
        {&e->dqw, qr * D},   {&e->lsew, qr},       {&e->lsetmp, qr},     {&e->kw, kr * D},
        {&e->vw, kr * D},    {&e->dkw, kr * D},    {&e->dvw, kr * D},    {&e->rk[0], rr * D},
        {&e->rv[0], rr * D}, {&e->rdk[0], rr * D}, {&e->rdv[0], rr * D}, {&e->rk[1], rr * D},
        {&e->rv[1], rr * D}, {&e->rdk[1], rr * D}, {&e->rdv[1], rr * D},
    };
    const size_t n_parts = sizeof parts / sizeof *parts;
    size_t total = 16;
    for (size_t i = 0; i < n_parts; i++)
        total += parts[i].n;
    e->mem = zg_calloc(total, sizeof(float), err);
    if (!e->mem) return err ? err->status : ZG_ERR_NOMEM;
    float *m = e->mem;
    for (size_t i = 0; i < n_parts; i++) {
        *parts[i].p = m;
        m += parts[i].n;
    }
    (void)backward;
    return ZG_OK;
}
