// engine_xchg.c — the coalesced exchanges of the executor: Ulysses all-to-all between the plan
// layout and the head-major work space (one all-to-all(v) per batch = per rank list, carrying
// every field of every sequence that shares it), and the all-gather / reduce-scatter of K/V
// blocks over all-gather peers. Pack order inside a message: item, field, head, token.
#include <string.h>

#include "engine/engine_internal.h"

static inline float *work_row(const zg_efield *f, const zg_eitem *it, int32_t jj, int64_t t) {
    int64_t row = f->kv ? it->kvrow + (int64_t)jj * it->lkv + it->secoff + t
                        : it->qrow + (int64_t)jj * it->lq + t;
    return f->work + row * f->w;
}

static inline float *tok_at(const zg_efield *f, int32_t H, const zg_eitem *it, int64_t t,
                            int32_t head) {
    return f->tok + ((it->tok_off + t) * H + head) * f->w;
}

// Token range of the member at position j of the item's Ulysses group.
static inline void member_chunk(const zg_engine *e, const zg_eitem *it, int32_t j, int64_t *off,
                                int64_t *len) {
    const zg_placement *pl = &e->plan->p[it->p];
    const zg_shard *s = &pl->shards[(it->pos / it->c.h) * it->c.h + j];
    *off = s->start - it->g_start;
    *len = s->end - s->start;
}

// memcpy of n floats between the message buffer and a layout: into buf when packing, out of it
// when unpacking.
static inline void move(int packing, float *buf, float *layout, size_t n) {
    if (packing)
        memcpy(buf, layout, n * sizeof(float));
    else
        memcpy(layout, buf, n * sizeof(float));
}

// The message block of member j, in pack order, between buf and the layouts: packing fills buf
// (dir 0: my chunk's heads of member j, from the token layout; dir 1: member j's chunk of my
// heads, from the work space); unpacking is the mirror (dir 0: member j's chunk into the work
// space; dir 1: my chunk's heads of member j into the token layout).
static void transfer(const zg_engine *e, const zg_ebatch *b, const zg_efield *f, int32_t nf,
                     int dir, int32_t j, float *buf, int packing) {
    int32_t H = e->shape.n_heads;
    const int token_side = (dir == 0) == (packing != 0);
    for (int32_t x = 0; x < b->n_items; x++) {
        const zg_eitem *it = &e->items[b->items[x]];
        int64_t off, len;
        member_chunk(e, it, j, &off, &len);
        for (int32_t a = 0; a < nf; a++) {
            int32_t w = f[a].w;
            for (int32_t jj = 0; jj < it->hs; jj++) {
                if (token_side) {
                    for (int64_t t = 0; t < it->cl; t++, buf += w)
                        move(packing, buf, tok_at(&f[a], H, it, t, j * it->hs + jj), (size_t)w);
                } else {
                    move(packing, buf, work_row(&f[a], it, jj, off), (size_t)(len * w));
                    buf += len * w;
                }
            }
        }
    }
}

// Floats exchanged with member j (sent when `sending`, else received) for direction dir.
static size_t count_with(const zg_engine *e, const zg_ebatch *b, const zg_efield *f, int32_t nf,
                         int dir, int sending, int32_t j) {
    size_t W = 0, n = 0;
    for (int32_t a = 0; a < nf; a++)
        W += (size_t)f[a].w;
    for (int32_t x = 0; x < b->n_items; x++) {
        const zg_eitem *it = &e->items[b->items[x]];
        int64_t off, len;
        member_chunk(e, it, j, &off, &len);
        // dir 0 sends my chunk, receives theirs; dir 1 the opposite
        int64_t l = (dir == 0) == (sending != 0) ? it->cl : len;
        n += (size_t)it->hs * (size_t)l * W;
    }
    return n;
}

zg_status zg_eng_u_exchange(zg_engine *e, const zg_ebatch *b, const zg_efield *f, int32_t nf,
                            int dir, int32_t tag, zg_error *err) {
    int32_t n = b->n;
    size_t sc[1024], sd[1024], rc[1024], rd[1024], so = 0, ro = 0;
    if (n > 1024)
        return zg_error_set(err, ZG_ERR_UNSUPPORTED, "engine: Ulysses degree %d above 1024", n);
    for (int32_t j = 0; j < n; j++) {
        sc[j] = count_with(e, b, f, nf, dir, 1, j) * 4;
        rc[j] = count_with(e, b, f, nf, dir, 0, j) * 4;
        sd[j] = so;
        rd[j] = ro;
        so += sc[j];
        ro += rc[j];
    }
    double t0 = zg_time_now();
    float *sbuf = zg_eng_scratch(e, 0, so, err);
    if (!sbuf) return err ? err->status : ZG_ERR_NOMEM;
    for (int32_t j = 0; j < n; j++)
        transfer(e, b, f, nf, dir, j, sbuf + sd[j] / 4, 1);
    if (n == 1) { // local (h = 1): no message, unpack the packed block directly
        transfer(e, b, f, nf, dir, 0, sbuf, 0);
        e->stats.t_copy += zg_time_now() - t0;
        return ZG_OK;
    }
    float *rbuf = zg_eng_scratch(e, 1, ro, err);
    if (!rbuf) return err ? err->status : ZG_ERR_NOMEM;
    double t1 = zg_time_now();
    uint64_t before = e->comm->bytes_sent;
    zg_status st = zg_comm_alltoallv(e->comm, b->ranks, n, sbuf, sc, sd, rbuf, rc, rd, tag, err);
    e->stats.bytes_alltoall += e->comm->bytes_sent - before;
    e->stats.collectives++;
    double t2 = zg_time_now();
    if (st) return st;
    for (int32_t j = 0; j < n; j++)
        transfer(e, b, f, nf, dir, j, rbuf + rd[j] / 4, 0);
    e->stats.t_comm += t2 - t1;
    e->stats.t_copy += (t1 - t0) + (zg_time_now() - t2);
    return ZG_OK;
}

// K/V section of all-gather peer j of the item, per head: rows kvrow + jj*lkv + off_j + t.
static inline void section(const zg_engine *e, const zg_eitem *it, int32_t j, int64_t *off,
                           int64_t *len) {
    const zg_placement *pl = &e->plan->p[it->p];
    *off = zg_eng_section_off(pl, it->ik, j);
    *len = zg_eng_group_len(pl, j * it->c.k + it->ik);
}

static size_t sec_count(const zg_engine *e, const zg_ebatch *b, int32_t j) {
    size_t n = 0;
    for (int32_t x = 0; x < b->n_items; x++) {
        const zg_eitem *it = &e->items[b->items[x]];
        int64_t off, len;
        section(e, it, j, &off, &len);
        n += 2 * (size_t)it->hs * (size_t)len * (size_t)e->shape.head_dim;
    }
    return n;
}

// dir 0: work -> buffer, 1: buffer -> work, for section j of every item (K then V per item).
static void sec_copy(const zg_engine *e, const zg_ebatch *b, int32_t j, float *kw, float *vw,
                     float *buf, int dir) {
    size_t D = (size_t)e->shape.head_dim;
    for (int32_t x = 0; x < b->n_items; x++) {
        const zg_eitem *it = &e->items[b->items[x]];
        int64_t off, len;
        section(e, it, j, &off, &len);
        float *w2[2] = {kw, vw};
        for (int a = 0; a < 2; a++)
            for (int32_t jj = 0; jj < it->hs; jj++) {
                float *row = w2[a] + (size_t)(it->kvrow + (int64_t)jj * it->lkv + off) * D;
                move(dir == 0, buf, row, (size_t)len * D);
                buf += (size_t)len * D;
            }
    }
}

zg_status zg_eng_g_gather(zg_engine *e, const zg_ebatch *b, float *kw, float *vw, int32_t tag,
                          zg_error *err) {
    int32_t n = b->n;
    size_t c[1024], d[1024], tot = 0;
    for (int32_t j = 0; j < n; j++) {
        c[j] = sec_count(e, b, j) * 4;
        d[j] = tot;
        tot += c[j];
    }
    double t0 = zg_time_now();
    float *buf = zg_eng_scratch(e, 1, tot, err);
    if (!buf) return err ? err->status : ZG_ERR_NOMEM;
    sec_copy(e, b, b->me, kw, vw, buf + d[b->me] / 4, 0);
    double t1 = zg_time_now();
    uint64_t before = e->comm->bytes_sent;
    zg_status st =
        zg_comm_allgatherv(e->comm, b->ranks, n, buf + d[b->me] / 4, buf, c, d, tag, err);
    e->stats.bytes_allgather += e->comm->bytes_sent - before;
    e->stats.collectives++;
    double t2 = zg_time_now();
    if (st) return st;
    for (int32_t j = 0; j < n; j++)
        if (j != b->me) sec_copy(e, b, j, kw, vw, buf + d[j] / 4, 1);
    e->stats.t_comm += t2 - t1;
    e->stats.t_copy += (t1 - t0) + (zg_time_now() - t2);
    return ZG_OK;
}

zg_status zg_eng_g_reduce(zg_engine *e, const zg_ebatch *b, float *dkw, float *dvw, int32_t tag,
                          zg_error *err) {
    int32_t n = b->n;
    size_t c[1024], d[1024], tot = 0;
    for (int32_t j = 0; j < n; j++) {
        c[j] = sec_count(e, b, j);
        d[j] = tot;
        tot += c[j];
    }
    double t0 = zg_time_now();
    float *sbuf = zg_eng_scratch(e, 0, tot * 4, err);
    float *rbuf = sbuf ? zg_eng_scratch(e, 1, c[b->me] * 4, err) : NULL;
    if (!sbuf || !rbuf) return err ? err->status : ZG_ERR_NOMEM;
    for (int32_t j = 0; j < n; j++)
        sec_copy(e, b, j, dkw, dvw, sbuf + d[j], 0);
    double t1 = zg_time_now();
    uint64_t before = e->comm->bytes_sent;
    zg_status st = zg_comm_reduce_scatterv_f32(e->comm, b->ranks, n, sbuf, rbuf, c, d, tag, err);
    e->stats.bytes_allgather += e->comm->bytes_sent - before;
    e->stats.collectives++;
    double t2 = zg_time_now();
    if (st) return st;
    sec_copy(e, b, b->me, dkw, dvw, rbuf, 1);
    e->stats.t_comm += t2 - t1;
    e->stats.t_copy += (t1 - t0) + (zg_time_now() - t2);
    return ZG_OK;
}
