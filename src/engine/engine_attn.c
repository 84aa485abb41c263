// engine_attn.c — the coalesced attention executor, forward and backward.
//
// Forward on each rank: Ulysses all-to-alls (batches in global order) move Q/K/V of every shard
// group into the head-major work space; all-gathers complete K/V blocks for q > 1; then ONE
// kernel call (step 0) covers every whole sequence, Ulysses group, all-gather block and the own
// ring block of every ring sequence, while ring step 1's K/V passes are in flight; each ring
// step s >= 1 is ONE kernel call over every ring sequence still running, merged in fp32 through
// the log-sum-exp; inverse all-to-alls bring O and LSE back to the plan layout.
// Backward mirrors it: dK/dV accumulators travel the ring behind K/V and arrive home after k
// passes; all-gather backward is a reduce-scatter; Ulysses backward the inverse all-to-alls.
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"

enum {
    TAG_U_FWD = 1,
    TAG_G_FWD = 2,
    TAG_U_INV = 3,
    TAG_U_BWD = 4,
    TAG_G_BWD = 5,
    TAG_G_RED = 6,
    TAG_U_DINV = 7,
    TAG_RING = 100
};

static int32_t ring_tag(int32_t s, int kind) {
    return TAG_RING + 4 * (s % 64) + kind;
}

// Slice list for step s (zg_eng_step_slices) into the engine's growing buffers.
static zg_status build_slices(zg_engine *e, int32_t s, int32_t *n_out, zg_error *err) {
    int64_t n = zg_eng_step_slices(e, s, NULL, NULL);
    if (n > e->cap_slices) {
        zg_attn_slice *sl = zg_realloc_array(e->slices, (size_t)n, sizeof *sl, err);
        if (!sl) return err ? err->status : ZG_ERR_NOMEM;
        e->slices = sl;
        int64_t *si = zg_realloc_array(e->slice_item, (size_t)n, sizeof *si, err);
        if (!si) return err ? err->status : ZG_ERR_NOMEM;
        e->slice_item = si;
        e->cap_slices = n;
    }
    if (n > INT32_MAX)
        return zg_error_set(err, ZG_ERR_UNSUPPORTED, "engine: %lld slices in one step",
                            (long long)n);
    zg_eng_step_slices(e, s, e->slices, e->slice_item);
    *n_out = (int32_t)n;
    return ZG_OK;
}

static zg_attn_shape work_shape(const zg_engine *e) {
    zg_attn_shape s = e->shape;
    s.n_heads = 1;
    return s;
}

// One kernel call over the slice list, or, when not coalescing, one call per sequence shard
// (the slices of one item are consecutive), each on pointers rebased to the item's own rows so
// a call costs what a standalone per-sequence call would.
typedef struct kargs {
    const float *k, *v;
    float *o, *lse; // forward outputs (or backward's O/LSE inputs, read only)
    float *dk, *dv; // backward
} kargs;

static int32_t group_end(const zg_engine *e, int32_t a, int32_t ns) {
    if (e->opts.coalesce) return ns;
    int32_t b = a + 1;
    while (b < ns && e->slice_item[b] == e->slice_item[a])
        b++;
    return b;
}

static zg_status run_kernel(zg_engine *e, int bwd, int32_t ns, const kargs *ka, zg_error *err) {
    zg_attn_shape sh = work_shape(e);
    size_t D = (size_t)e->shape.head_dim;
    double t0 = zg_time_now();
    zg_status st = ZG_OK;
    zg_attn_slice local[4096];
    for (int32_t a = 0; a < ns && !st;) {
        int32_t b = group_end(e, a, ns);
        const zg_attn_slice *sl = e->slices + a;
        int64_t q0 = 0, k0 = 0;
        if (!e->opts.coalesce && b - a <= 4096) { // rebase to the item's rows
            q0 = sl[0].q_start;
            k0 = sl[0].k_start;
            for (int32_t i = 0; i < b - a; i++) {
                if (sl[i].q_start < q0) q0 = sl[i].q_start;
                if (sl[i].k_start < k0) k0 = sl[i].k_start;
            }
            for (int32_t i = 0; i < b - a; i++)
                local[i] = (zg_attn_slice){sl[i].q_start - q0, sl[i].q_len, sl[i].k_start - k0,
                                           sl[i].k_len};
            sl = local;
        }
        size_t qo = (size_t)q0 * D, ko = (size_t)k0 * D;
        if (!bwd)
            st = e->opts.use_ref ? zg_attn_forward_ref(sl, b - a, sh, e->qw + qo, ka->k + ko,
                                                       ka->v + ko, ka->o + qo, ka->lse + q0, err)
                                 : zg_attn_forward(sl, b - a, sh, e->qw + qo, ka->k + ko,
                                                   ka->v + ko, ka->o + qo, ka->lse + q0, err);
        else
            st = e->opts.use_ref
                     ? zg_attn_backward_ref(sl, b - a, sh, e->qw + qo, ka->k + ko, ka->v + ko,
                                            e->ow + qo, e->lsew + q0, e->dow + qo, e->dqw + qo,
                                            ka->dk + ko, ka->dv + ko, err)
                     : zg_attn_backward(sl, b - a, sh, e->qw + qo, ka->k + ko, ka->v + ko,
                                        e->ow + qo, e->lsew + q0, e->dow + qo, e->dqw + qo,
                                        ka->dk + ko, ka->dv + ko, err);
        e->stats.kernel_calls++;
        a = b;
    }
    e->stats.t_kernel += zg_time_now() - t0;
    return st;
}

static zg_status run_fwd(zg_engine *e, int32_t ns, const float *k, const float *v, float *o,
                         float *lse, zg_error *err) {
    kargs ka = {k, v, o, lse, NULL, NULL};
    return run_kernel(e, 0, ns, &ka, err);
}

static zg_status run_bwd(zg_engine *e, int32_t ns, const float *k, const float *v, float *dk,
                         float *dv, zg_error *err) {
    kargs ka = {k, v, NULL, NULL, dk, dv};
    return run_kernel(e, 1, ns, &ka, err);
}

typedef struct reqs {
    zg_comm_req *r;
    int32_t n, cap;
} reqs;

static zg_status post(zg_engine *e, reqs *q, int send, float *buf, int64_t rows, int32_t peer,
                      int32_t tag, zg_error *err) {
    if (q->n == q->cap) return zg_error_set(err, ZG_ERR_INTERNAL, "engine: request overflow");
    size_t bytes = (size_t)rows * (size_t)e->shape.head_dim * 4;
    uint64_t before = e->comm->bytes_sent;
    zg_status st = send ? zg_comm_isend(e->comm, buf, bytes, peer, tag, &q->r[q->n++], err)
                        : zg_comm_irecv(e->comm, buf, bytes, peer, tag, &q->r[q->n++], err);
    e->stats.bytes_ring += e->comm->bytes_sent - before;
    return st;
}

static zg_status wait_phase(zg_engine *e, reqs *q, zg_error *err) {
    if (q->n == 0) return ZG_OK;
    double t0 = zg_time_now();
    zg_status st = zg_comm_waitall(e->comm, q->n, q->r, err);
    q->n = 0;
    e->stats.collectives++;
    e->stats.t_comm += zg_time_now() - t0;
    return st;
}

// Ring phase s, K/V part: receive the block held at step s from prev; forward the block held
// at step s-1 (own block from the work space when s == 1) to next. Items with k > s.
static zg_status post_kv(zg_engine *e, reqs *q, int32_t s, zg_error *err) {
    size_t D = (size_t)e->shape.head_dim;
    zg_status st = ZG_OK;
    for (int64_t j = 0; j < e->n_items && !st; j++) {
        const zg_eitem *it = &e->items[j];
        if (it->c.k <= s) continue;
        int64_t rr = zg_eng_blk_rows(e, it, s), ro = zg_eng_roff(e, s, j);
        st = post(e, q, 0, e->rk[s % 2] + (size_t)ro * D, rr, it->prev, ring_tag(s, 0), err);
        if (!st)
            st = post(e, q, 0, e->rv[s % 2] + (size_t)ro * D, rr, it->prev, ring_tag(s, 1), err);
    }
    for (int64_t j = 0; j < e->n_items && !st; j++) {
        const zg_eitem *it = &e->items[j];
        if (it->c.k <= s) continue;
        int64_t sr = zg_eng_blk_rows(e, it, s - 1);
        float *k = s == 1 ? e->kw + (size_t)it->kvrow * D
                          : e->rk[(s - 1) % 2] + (size_t)zg_eng_roff(e, s - 1, j) * D;
        float *v = s == 1 ? e->vw + (size_t)it->kvrow * D
                          : e->rv[(s - 1) % 2] + (size_t)zg_eng_roff(e, s - 1, j) * D;
        st = post(e, q, 1, k, sr, it->next, ring_tag(s, 0), err);
        if (!st) st = post(e, q, 1, v, sr, it->next, ring_tag(s, 1), err);
    }
    return st;
}

// Ring phase s, dK/dV accumulator part (backward, 2 <= s <= k): receive the accumulator of the
// block held at step s (own block when s == k); send the one of the block held at step s-1.
static zg_status post_acc(zg_engine *e, reqs *q, int32_t s, int recv, zg_error *err) {
    size_t D = (size_t)e->shape.head_dim;
    zg_status st = ZG_OK;
    for (int64_t j = 0; j < e->n_items && !st; j++) {
        const zg_eitem *it = &e->items[j];
        if (it->c.k < s || s < 2) continue;
        int32_t ss = recv ? s : s - 1;
        int64_t rr = zg_eng_blk_rows(e, it, ss), ro = zg_eng_roff(e, ss, j);
        int32_t peer = recv ? it->prev : it->next;
        st = post(e, q, !recv, e->rdk[ss % 2] + (size_t)ro * D, rr, peer, ring_tag(s, 2), err);
        if (!st)
            st = post(e, q, !recv, e->rdv[ss % 2] + (size_t)ro * D, rr, peer, ring_tag(s, 3), err);
    }
    return st;
}

static zg_status begin(zg_engine *e, reqs *q, zg_error *err) {
    memset(&e->stats, 0, sizeof e->stats);
    e->stats.t_total = zg_time_now();
    zg_status st = zg_eng_alloc_work(e, 1, err);
    if (st) return st;
    q->cap = (int32_t)(8 * e->n_items + 8);
    q->n = 0;
    q->r = zg_calloc((size_t)q->cap, sizeof(zg_comm_req), err);
    return q->r ? ZG_OK : (err ? err->status : ZG_ERR_NOMEM);
}

static zg_status finish(zg_engine *e, reqs *q, zg_status st, zg_error *err) {
    if (st && q->r && q->n) zg_comm_waitall(e->comm, q->n, q->r, NULL); // drain on error
    free(q->r);
    e->stats.t_total = zg_time_now() - e->stats.t_total;
    return st;
}

// ---- rounds -------------------------------------------------------------------------------------
// Plans with microbatch rounds (megatron's groups, zg_placement.round): the rounds run one after
// another. Each round is a plan on its own (the validator checks it so): per round the engine
// keeps a sub-plan (that round's placements, in plan order, round 0) and a sub-engine, built on
// the first attention call (collective-free, like zg_engine_init); attention gathers the round's
// rows from the plan layout, runs the round's forward/backward (collective: every rank calls
// every round, in ascending order), and scatters the results back. A rank's shards of one round
// are a subsequence of its plan-layout shards in the same order, so the gather is a list of
// contiguous row ranges.

static zg_status rounds_init(zg_engine *e, zg_error *err) {
    const zg_plan *p = e->plan;
    int32_t nr = e->n_rounds;
    e->rplans = zg_calloc((size_t)nr, sizeof *e->rplans, err);
    e->rsub = e->rplans ? zg_calloc((size_t)nr, sizeof *e->rsub, err) : NULL;
    if (!e->rsub) {
        free(e->rplans);
        e->rplans = NULL;
        return ZG_ERR_NOMEM;
    }
    zg_status st = ZG_OK;
    for (int32_t r = 0; r < nr && !st; r++) {
        zg_plan *sp = &e->rplans[r];
        sp->version = p->version;
        sp->world_size = p->world_size;
        int64_t n = 0;
        for (int64_t i = 0; i < p->n; i++)
            n += p->p[i].round == r;
        sp->p = zg_calloc((size_t)(n ? n : 1), sizeof *sp->p, err);
        if (!sp->p) {
            st = ZG_ERR_NOMEM;
            break;
        }
        for (int64_t i = 0; i < p->n; i++)
            if (p->p[i].round == r) {
                sp->p[sp->n] = p->p[i]; // shallow: ranks and shards stay the plan's
                sp->p[sp->n++].round = 0;
            }
        st = zg_engine_init(&e->rsub[r], e->comm, sp, e->shape, &e->opts, err);
        if (st) zg_error_prefix(err, "round %d: ", r);
    }
    if (st) zg_eng_rounds_release(e);
    return st;
}

// Copies the rows of round r between the plan layout (full, w floats per token) and the
// round's layout (sub): to_sub 1 gathers, 0 scatters.
static void move_rows(const zg_engine *e, int32_t r, int to_sub, float *full, float *sub,
                      size_t w) {
    int64_t off = 0, soff = 0;
    for (int64_t i = 0; i < e->n_items; i++) {
        int64_t len = e->item_shard[i].end - e->item_shard[i].start;
        if (e->plan->p[e->item_p[i]].round == r) {
            if (to_sub)
                memcpy(sub + (size_t)soff * w, full + (size_t)off * w, (size_t)len * w * 4);
            else
                memcpy(full + (size_t)off * w, sub + (size_t)soff * w, (size_t)len * w * 4);
            soff += len;
        }
        off += len;
    }
}

static void add_stats(zg_engine_stats *a, const zg_engine_stats *b) {
    a->kernel_calls += b->kernel_calls, a->collectives += b->collectives;
    a->bytes_alltoall += b->bytes_alltoall, a->bytes_allgather += b->bytes_allgather;
    a->bytes_ring += b->bytes_ring, a->bytes_dispatch += b->bytes_dispatch;
    a->t_total += b->t_total, a->t_kernel += b->t_kernel, a->t_comm += b->t_comm;
    a->t_copy += b->t_copy;
}

// mode 0: forward (in: q k v; out: o lse). 1: backward (in: q k v o lse dout; out: dq dk dv).
// 2: backward_saved (in: dout; out: dq dk dv).
static zg_status rounds_run(zg_engine *e, int mode, const float *const *in, float *const *out,
                            zg_error *err) {
    const size_t HD = (size_t)e->shape.n_heads * (size_t)e->shape.head_dim,
                 H = (size_t)e->shape.n_heads;
    // widths of the tensors in and out, per mode
    static const int n_in[3] = {3, 6, 1}, n_out[3] = {2, 3, 3};
    size_t w_in[6], w_out[3];
    for (int j = 0; j < 6; j++)
        w_in[j] = HD;
    if (mode == 1) w_in[4] = H; // lse
    for (int j = 0; j < 3; j++)
        w_out[j] = HD;
    if (mode == 0) w_out[1] = H;
    zg_status st = e->rsub ? ZG_OK : rounds_init(e, err);
    zg_engine_stats total;
    memset(&total, 0, sizeof total);
    for (int32_t r = 0; r < e->n_rounds && !st; r++) {
        zg_engine *s = e->rsub[r];
        size_t T = (size_t)zg_engine_local_tokens(s), nf = 0;
        for (int j = 0; j < n_in[mode]; j++)
            nf += T * w_in[j];
        for (int j = 0; j < n_out[mode]; j++)
            nf += T * w_out[j];
        float *buf = zg_calloc(nf ? nf : 1, sizeof *buf, err), *bi[6], *bo[3];
        if (!buf) {
            st = ZG_ERR_NOMEM;
            break;
        }
        float *at = buf;
        for (int j = 0; j < n_in[mode]; j++) {
            bi[j] = at, at += T * w_in[j];
            move_rows(e, r, 1, (float *)in[j], bi[j], w_in[j]);
        }
        for (int j = 0; j < n_out[mode]; j++)
            bo[j] = at, at += T * w_out[j];
        if (mode == 0)
            st = zg_engine_attn_forward(s, bi[0], bi[1], bi[2], bo[0], bo[1], err);
        else if (mode == 1)
            st = zg_engine_attn_backward(s, bi[0], bi[1], bi[2], bi[3], bi[4], bi[5], bo[0], bo[1],
                                         bo[2], err);
        else
            st = zg_engine_attn_backward_saved(s, bi[0], bo[0], bo[1], bo[2], err);
        if (st) zg_error_prefix(err, "round %d: ", r);
        for (int j = 0; j < n_out[mode] && !st; j++)
            move_rows(e, r, 0, out[j], bo[j], w_out[j]);
        add_stats(&total, zg_engine_last_stats(s));
        free(buf);
    }
    e->stats = total;
    return st;
}

zg_status zg_engine_attn_forward(zg_engine *e, const float *q, const float *k, const float *v,
                                 float *o, float *lse, zg_error *err) {
    if (e->n_rounds > 1) {
        const float *in[] = {q, k, v};
        float *out[] = {o, lse};
        zg_status st = rounds_run(e, 0, in, out, err);
        e->fwd_valid = !st;
        return st;
    }
    reqs rq = {0};
    zg_status st = begin(e, &rq, err);
    if (st) return finish(e, &rq, st, err);
    size_t D = (size_t)e->shape.head_dim;
    zg_efield in[3] = {{(float *)q, e->qw, (int32_t)D, 0},
                       {(float *)k, e->kw, (int32_t)D, 1},
                       {(float *)v, e->vw, (int32_t)D, 1}};
    for (int32_t b = 0; b < e->n_ub && !st; b++)
        st = zg_eng_u_exchange(e, &e->ub[b], in, 3, 0, TAG_U_FWD, err);
    for (int32_t b = 0; b < e->n_gb && !st; b++)
        st = zg_eng_g_gather(e, &e->gb[b], e->kw, e->vw, TAG_G_FWD, err);
    if (!st && e->k_max > 1) st = post_kv(e, &rq, 1, err);
    int32_t ns = 0;
    if (!st) st = build_slices(e, 0, &ns, err);
    if (!st && ns) st = run_fwd(e, ns, e->kw, e->vw, e->ow, e->lsew, err);
    zg_attn_shape sh = work_shape(e);
    for (int32_t s = 1; s < e->k_max && !st; s++) {
        st = wait_phase(e, &rq, err);
        if (!st && s + 1 < e->k_max) st = post_kv(e, &rq, s + 1, err);
        if (!st) st = build_slices(e, s, &ns, err);
        if (!st && ns) st = run_fwd(e, ns, e->rk[s % 2], e->rv[s % 2], e->otmp, e->lsetmp, err);
        for (int64_t j = 0; j < e->n_items && !st; j++) {
            const zg_eitem *it = &e->items[j];
            if (it->c.k <= s) continue;
            int64_t rows = (int64_t)it->hs * it->lq;
            zg_attn_merge(rows, sh, e->ow + (size_t)it->qrow * D, e->lsew + it->qrow,
                          e->otmp + (size_t)it->qrow * D, e->lsetmp + it->qrow);
        }
    }
    zg_efield out[2] = {{o, e->ow, (int32_t)D, 0}, {lse, e->lsew, 1, 0}};
    for (int32_t b = 0; b < e->n_ub && !st; b++)
        st = zg_eng_u_exchange(e, &e->ub[b], out, 2, 1, TAG_U_INV, err);
    e->fwd_valid = st == ZG_OK;
    return finish(e, &rq, st, err);
}

// saved: the work space still holds the last forward's Q, K/V blocks, O and LSE, so only dO
// travels in (Ulysses) and no all-gather is repeated.
static zg_status backward(zg_engine *e, int saved, const float *q, const float *k, const float *v,
                          const float *o, const float *lse, const float *dout, float *dq, float *dk,
                          float *dv, zg_error *err) {
    reqs rq = {0};
    zg_status st = begin(e, &rq, err);
    if (st) return finish(e, &rq, st, err);
    size_t D = (size_t)e->shape.head_dim;
    zg_efield in[6] = {{(float *)dout, e->dow, (int32_t)D, 0}, {(float *)q, e->qw, (int32_t)D, 0},
                       {(float *)k, e->kw, (int32_t)D, 1},     {(float *)v, e->vw, (int32_t)D, 1},
                       {(float *)o, e->ow, (int32_t)D, 0},     {(float *)lse, e->lsew, 1, 0}};
    for (int32_t b = 0; b < e->n_ub && !st; b++)
        st = zg_eng_u_exchange(e, &e->ub[b], in, saved ? 1 : 6, 0, TAG_U_BWD, err);
    for (int32_t b = 0; b < e->n_gb && !st && !saved; b++)
        st = zg_eng_g_gather(e, &e->gb[b], e->kw, e->vw, TAG_G_BWD, err);
    if (!st) {
        memset(e->dqw, 0, (size_t)e->q_rows * D * 4);
        memset(e->dkw, 0, (size_t)e->kv_rows * D * 4);
        memset(e->dvw, 0, (size_t)e->kv_rows * D * 4);
    }
    if (!st && e->k_max > 1) st = post_kv(e, &rq, 1, err);
    int32_t ns = 0;
    if (!st) st = build_slices(e, 0, &ns, err);
    if (!st && ns) st = run_bwd(e, ns, e->kw, e->vw, e->dkw, e->dvw, err);
    for (int32_t s = 1; s <= e->k_max && e->k_max > 1 && !st; s++) {
        st = wait_phase(e, &rq, err);
        if (!st && s + 1 <= e->k_max) {
            st = post_acc(e, &rq, s + 1, 1, err);
            if (!st) st = post_kv(e, &rq, s + 1, err);
        }
        if (!st && s < e->k_max) {
            if (s == 1) {
                memset(e->rdk[1], 0, (size_t)e->ring_rows * D * 4);
                memset(e->rdv[1], 0, (size_t)e->ring_rows * D * 4);
            }
            st = build_slices(e, s, &ns, err);
            if (!st && ns)
                st = run_bwd(e, ns, e->rk[s % 2], e->rv[s % 2], e->rdk[s % 2], e->rdv[s % 2], err);
            if (!st && s + 1 <= e->k_max) st = post_acc(e, &rq, s + 1, 0, err);
        }
        // accumulators that came home in phase s (items with k == s)
        for (int64_t j = 0; j < e->n_items && !st; j++) {
            const zg_eitem *it = &e->items[j];
            if (it->c.k < 2 || it->c.k != s) continue;
            size_t n = (size_t)it->hs * (size_t)it->lkv * D;
            float *dk0 = e->dkw + (size_t)it->kvrow * D, *dv0 = e->dvw + (size_t)it->kvrow * D;
            const float *ak = e->rdk[s % 2] + (size_t)zg_eng_roff(e, s, j) * D;
            const float *av = e->rdv[s % 2] + (size_t)zg_eng_roff(e, s, j) * D;
            for (size_t x = 0; x < n; x++) {
                dk0[x] += ak[x];
                dv0[x] += av[x];
            }
        }
    }
    for (int32_t b = 0; b < e->n_gb && !st; b++)
        st = zg_eng_g_reduce(e, &e->gb[b], e->dkw, e->dvw, TAG_G_RED, err);
    zg_efield out[3] = {
        {dq, e->dqw, (int32_t)D, 0}, {dk, e->dkw, (int32_t)D, 1}, {dv, e->dvw, (int32_t)D, 1}};
    for (int32_t b = 0; b < e->n_ub && !st; b++)
        st = zg_eng_u_exchange(e, &e->ub[b], out, 3, 1, TAG_U_DINV, err);
    e->fwd_valid = 0;
    return finish(e, &rq, st, err);
}

zg_status zg_engine_attn_backward(zg_engine *e, const float *q, const float *k, const float *v,
                                  const float *o, const float *lse, const float *dout, float *dq,
                                  float *dk, float *dv, zg_error *err) {
    if (e->n_rounds > 1) {
        const float *in[] = {q, k, v, o, lse, dout};
        float *out[] = {dq, dk, dv};
        e->fwd_valid = 0;
        return rounds_run(e, 1, in, out, err);
    }
    return backward(e, 0, q, k, v, o, lse, dout, dq, dk, dv, err);
}

zg_status zg_engine_attn_backward_saved(zg_engine *e, const float *dout, float *dq, float *dk,
                                        float *dv, zg_error *err) {
    if (!e->fwd_valid)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "engine: backward_saved needs the forward's work space: call "
                            "zg_engine_attn_forward first (once per backward)");
    if (e->n_rounds > 1) {
        const float *in[] = {dout};
        float *out[] = {dq, dk, dv};
        e->fwd_valid = 0;
        return rounds_run(e, 2, in, out, err);
    }
    return backward(e, 1, NULL, NULL, NULL, NULL, NULL, dout, dq, dk, dv, err);
}
