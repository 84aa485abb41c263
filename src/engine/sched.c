// sched.c — the schedule as data: the slice list of each step, the dispatch row lists, and the
// export of a rank's whole schedule as flat arrays (zg_engine_sched) for runtimes that run the
// plan with their own collectives and kernels (python/zellige/torch). The engine's own code
// (engine_attn.c, dispatch.c) uses the same functions, so there is one source of truth.
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"

int64_t zg_eng_step_slices(const zg_engine *e, int32_t s, zg_attn_slice *out, int64_t *item) {
    int64_t x = 0;
    for (int64_t j = 0; j < e->n_items; j++) {
        const zg_eitem *it = &e->items[j];
        if (s > 0 && it->c.k <= s) continue;
        if (!out) {
            x += it->hs;
            continue;
        }
        int64_t kl = s == 0 ? it->lkv : zg_eng_blk_rows(e, it, s) / it->hs;
        int64_t kb = s == 0 ? it->kvrow : zg_eng_roff(e, s, j);
        for (int32_t jj = 0; jj < it->hs; jj++, x++) {
            if (item) item[x] = j;
            out[x] =
                (zg_attn_slice){it->qrow + (int64_t)jj * it->lq, it->lq, kb + (int64_t)jj * kl, kl};
        }
    }
    return x;
}

zg_status zg_eng_dispatch_rows(const zg_engine *e, const int32_t *origin, int64_t **loff_out,
                               int64_t **lrows_out, int64_t **poff_out, int64_t **prows_out,
                               zg_error *err) {
    const zg_plan *plan = e->plan;
    int32_t P = plan->world_size;
    int64_t nl = 0;
    for (int64_t p = 0; p < plan->n; p++) {
        if (origin[p] < 0 || origin[p] >= P)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "dispatch: placement %lld (sequence %lld) has origin rank %d "
                                "outside [0, %d)",
                                (long long)p, (long long)plan->p[p].id, origin[p], P);
        if (origin[p] == e->me) nl += plan->p[p].tokens;
    }
    // layout: loff (P+1), poff (P+1), per-placement loader offset and item (n each), lrows
    // (nl), prows (t_local)
    size_t n = (size_t)plan->n;
    int64_t *blk = zg_calloc(2 * ((size_t)P + 1) + 2 * n + (size_t)nl + (size_t)e->t_local + 1,
                             sizeof(int64_t), err);
    if (!blk) return err ? err->status : ZG_ERR_NOMEM;
    int64_t *loff = blk, *poff = loff + P + 1, *lo = poff + P + 1, *item = lo + n,
            *lrows = item + n, *prows = lrows + nl;
    int64_t at = 0;
    for (int64_t p = 0; p < plan->n; p++) {
        lo[p] = origin[p] == e->me ? at : -1;
        if (origin[p] == e->me) at += plan->p[p].tokens;
        item[p] = -1;
    }
    for (int64_t j = 0; j < e->n_items; j++)
        item[e->items[j].p] = j;
    // counts per rank, then offsets
    for (int64_t p = 0; p < plan->n; p++) {
        const zg_placement *pl = &plan->p[p];
        if (lo[p] >= 0)
            for (int32_t i = 0; i < pl->n_ranks; i++)
                loff[pl->ranks[i] + 1] += pl->shards[i].end - pl->shards[i].start;
        if (item[p] >= 0) poff[origin[p] + 1] += e->items[item[p]].cl;
    }
    for (int32_t r = 0; r < P; r++) {
        loff[r + 1] += loff[r];
        poff[r + 1] += poff[r];
    }
    // rows in plan order per rank (each placement has at most one shard on a rank)
    for (int32_t r = 0; r < P; r++) {
        int64_t lx = loff[r], px = poff[r];
        for (int64_t p = 0; p < plan->n; p++) {
            const zg_placement *pl = &plan->p[p];
            if (lo[p] >= 0) {
                int32_t i = zg_comm_rank_index(pl->ranks, pl->n_ranks, r);
                if (i >= 0)
                    for (int64_t t = pl->shards[i].start; t < pl->shards[i].end; t++)
                        lrows[lx++] = lo[p] + t;
            }
            if (item[p] >= 0 && origin[p] == r) {
                const zg_eitem *it = &e->items[item[p]];
                for (int64_t t = 0; t < it->cl; t++)
                    prows[px++] = it->tok_off + t;
            }
        }
    }
    *loff_out = loff;
    *poff_out = poff;
    *lrows_out = lrows;
    *prows_out = prows;
    return ZG_OK;
}

// ---- export ------------------------------------------------------------------------------------

// A growing int64 array.
typedef struct ivec {
    int64_t *v;
    int64_t n, cap;
    zg_status st;
} ivec;

static void push(ivec *a, int64_t x, zg_error *err) {
    if (a->st) return;
    if (a->n == a->cap) {
        int64_t cap = a->cap ? 2 * a->cap : 64;
        int64_t *v = zg_realloc_array(a->v, (size_t)cap, sizeof *v, err);
        if (!v) {
            a->st = err ? err->status : ZG_ERR_NOMEM;
            return;
        }
        a->v = v, a->cap = cap;
    }
    a->v[a->n++] = x;
}

// Ulysses member j of batch b: the three index lists (engine_xchg.c's transfer(), dir 0).
static void ulysses_member(const zg_engine *e, const zg_ebatch *b, int32_t j, ivec *idx, ivec *ioff,
                           zg_error *err) {
    int32_t H = e->shape.n_heads;
    for (int f = 0; f < 3; f++) {
        for (int32_t x = 0; x < b->n_items; x++) {
            const zg_eitem *it = &e->items[b->items[x]];
            const zg_placement *pl = &e->plan->p[it->p];
            const zg_shard *sj = &pl->shards[(it->pos / it->c.h) * it->c.h + j];
            int64_t off = sj->start - it->g_start, len = sj->end - sj->start;
            for (int32_t jj = 0; jj < it->hs; jj++) {
                if (f == 0) // my chunk, member j's heads, token-major plan layout
                    for (int64_t t = 0; t < it->cl; t++)
                        push(idx, (it->tok_off + t) * H + (int64_t)j * it->hs + jj, err);
                else if (f == 1)
                    for (int64_t t = 0; t < len; t++)
                        push(idx, it->qrow + (int64_t)jj * it->lq + off + t, err);
                else
                    for (int64_t t = 0; t < len; t++)
                        push(idx, it->kvrow + (int64_t)jj * it->lkv + it->secoff + off + t, err);
            }
        }
        push(ioff, idx->n, err);
    }
}

// All-gather member j of batch b: K/V work rows of section j of every item (engine_xchg.c).
static void gather_member(const zg_engine *e, const zg_ebatch *b, int32_t j, ivec *idx, ivec *ioff,
                          zg_error *err) {
    for (int32_t x = 0; x < b->n_items; x++) {
        const zg_eitem *it = &e->items[b->items[x]];
        const zg_placement *pl = &e->plan->p[it->p];
        int64_t off = zg_eng_section_off(pl, it->ik, j);
        int64_t len = zg_eng_group_len(pl, j * it->c.k + it->ik);
        for (int32_t jj = 0; jj < it->hs; jj++)
            for (int64_t t = 0; t < len; t++)
                push(idx, it->kvrow + (int64_t)jj * it->lkv + off + t, err);
    }
    push(ioff, idx->n, err);
    push(ioff, idx->n, err);
    push(ioff, idx->n, err);
}

static void ring_op(ivec *r, int64_t phase, int64_t kind, int64_t peer, int64_t buf, int64_t row,
                    int64_t rows, int64_t dst, zg_error *err) {
    const int64_t v[ZG_SCHED_RING_FIELDS] = {phase, kind, peer, buf, row, rows, dst};
    for (int i = 0; i < ZG_SCHED_RING_FIELDS; i++)
        push(r, v[i], err);
}

// engine_attn.c's post_kv(s): receives first, then sends; items with k > s.
static void ring_kv(const zg_engine *e, int32_t s, ivec *r, zg_error *err) {
    for (int64_t j = 0; j < e->n_items; j++) {
        const zg_eitem *it = &e->items[j];
        if (it->c.k > s)
            ring_op(r, s, ZG_SCHED_KV_RECV, it->prev, s, zg_eng_roff(e, s, j),
                    zg_eng_blk_rows(e, it, s), 0, err);
    }
    for (int64_t j = 0; j < e->n_items; j++) {
        const zg_eitem *it = &e->items[j];
        if (it->c.k <= s) continue;
        int64_t row = s == 1 ? it->kvrow : zg_eng_roff(e, s - 1, j);
        ring_op(r, s, ZG_SCHED_KV_SEND, it->next, s - 1, row, zg_eng_blk_rows(e, it, s - 1), 0,
                err);
    }
}

// engine_attn.c's post_acc(s, recv): items with k >= s, s >= 2.
static void ring_acc(const zg_engine *e, int32_t s, int recv, ivec *r, zg_error *err) {
    for (int64_t j = 0; j < e->n_items && s >= 2; j++) {
        const zg_eitem *it = &e->items[j];
        if (it->c.k < s) continue;
        int32_t ss = recv ? s : s - 1;
        ring_op(r, s, recv ? ZG_SCHED_ACC_RECV : ZG_SCHED_ACC_SEND, recv ? it->prev : it->next, ss,
                zg_eng_roff(e, ss, j), zg_eng_blk_rows(e, it, ss), 0, err);
    }
}

void zg_engine_sched_free(zg_engine_sched *s) {
    if (!s) return;
    free(s->d_loff); // one block with lrows, poff, prows
    free(s->x_kind);
    free(s->x_me);
    free(s->x_moff);
    free(s->m_rank);
    free(s->m_ioff);
    free(s->idx);
    free(s->sl_off);
    free(s->sl);
    free(s->ring);
    memset(s, 0, sizeof *s);
}

zg_status zg_engine_sched_export(const zg_engine *e, const int32_t *origin, zg_engine_sched *out,
                                 zg_error *err) {
    memset(out, 0, sizeof *out);
    if (e->n_rounds > 1)
        return zg_error_set(err, ZG_ERR_UNSUPPORTED,
                            "schedule export: the plan has %d microbatch rounds; export one "
                            "plan per round (rounds run one after another)",
                            e->n_rounds);
    out->rank = e->me;
    out->world_size = e->plan->world_size;
    out->n_heads = e->shape.n_heads;
    out->head_dim = e->shape.head_dim;
    out->k_max = e->k_max;
    out->t_local = e->t_local;
    out->q_rows = e->q_rows;
    out->kv_rows = e->kv_rows;
    out->ring_rows = e->ring_rows;
    zg_status st = ZG_OK;
    if (origin) {
        st = zg_eng_dispatch_rows(e, origin, &out->d_loff, &out->d_lrows, &out->d_poff,
                                  &out->d_prows, err);
        if (st) return st;
        out->loader_tokens = out->d_loff[out->world_size];
    }
    ivec kind = {0}, me = {0}, moff = {0}, mrank = {0}, ioff = {0}, idx = {0}, sl = {0},
         sloff = {0}, ring = {0};
    push(&moff, 0, err);
    push(&ioff, 0, err);
    for (int32_t x = 0; x < e->n_ub + e->n_gb; x++) {
        int gather = x >= e->n_ub;
        const zg_ebatch *b = gather ? &e->gb[x - e->n_ub] : &e->ub[x];
        push(&kind, gather ? ZG_SCHED_GATHER : ZG_SCHED_ULYSSES, err);
        push(&me, b->me, err);
        for (int32_t j = 0; j < b->n; j++) {
            push(&mrank, b->ranks[j], err);
            if (gather)
                gather_member(e, b, j, &idx, &ioff, err);
            else
                ulysses_member(e, b, j, &idx, &ioff, err);
        }
        push(&moff, mrank.n, err);
    }
    // slices per step
    push(&sloff, 0, err);
    zg_attn_slice *tmp = NULL;
    for (int32_t s = 0; s < e->k_max && !sl.st; s++) {
        int64_t n = zg_eng_step_slices(e, s, NULL, NULL);
        zg_attn_slice *t2 = zg_realloc_array(tmp, (size_t)n + 1, sizeof *tmp, err);
        if (!t2) {
            sl.st = err ? err->status : ZG_ERR_NOMEM;
            break;
        }
        tmp = t2;
        zg_eng_step_slices(e, s, tmp, NULL);
        for (int64_t i = 0; i < n; i++) {
            push(&sl, tmp[i].q_start, err);
            push(&sl, tmp[i].q_len, err);
            push(&sl, tmp[i].k_start, err);
            push(&sl, tmp[i].k_len, err);
        }
        push(&sloff, sl.n / 4, err);
    }
    free(tmp);
    // ring postings: phases 1 .. k_max (backward's order; forward uses the K/V ones < k_max)
    for (int32_t s = 1; s <= e->k_max && e->k_max > 1; s++) {
        ring_acc(e, s, 1, &ring, err);
        if (s < e->k_max) ring_kv(e, s, &ring, err);
        ring_acc(e, s, 0, &ring, err);
        for (int64_t j = 0; j < e->n_items; j++) {
            const zg_eitem *it = &e->items[j];
            if (it->c.k >= 2 && it->c.k == s)
                ring_op(&ring, s, ZG_SCHED_ACC_HOME, e->me, s, zg_eng_roff(e, s, j),
                        (int64_t)it->hs * it->lkv, it->kvrow, err);
        }
    }
    ivec *all[] = {&kind, &me, &moff, &mrank, &ioff, &idx, &sl, &sloff, &ring};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (all[i]->st) st = all[i]->st;
    out->n_x = kind.n;
    out->n_members = mrank.n;
    out->x_kind = kind.v, out->x_me = me.v, out->x_moff = moff.v, out->m_rank = mrank.v;
    out->m_ioff = ioff.v, out->idx = idx.v, out->sl = sl.v, out->sl_off = sloff.v;
    out->n_ring = ring.n / ZG_SCHED_RING_FIELDS;
    out->ring = ring.v;
    if (st) zg_engine_sched_free(out);
    return st;
}
