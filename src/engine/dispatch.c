// dispatch.c — loader layout <-> plan layout in ONE all-to-all(v) over the world. A token
// travels as one row: `width` floats then, when positions are given, (frame, row, col) int32.
// Undispatch is the exact inverse (same rows, reversed roles). No padding: rows are exactly the
// shards' tokens.
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"

int64_t zg_engine_loader_tokens(const zg_engine *e, const int32_t *origin, int32_t rank) {
    int64_t n = 0;
    for (int64_t p = 0; p < e->plan->n; p++)
        if (origin[p] == rank) n += e->plan->p[p].tokens;
    return n;
}

typedef struct xfer {
    size_t *sc, *sd, *rc, *rd; // bytes per world rank
    int64_t *loff;             // loader-layout row offset per placement (origin == me), else -1
    int64_t *item;             // my item per placement, else -1
} xfer;

static void xfer_free(xfer *x) {
    free(x->sc);
    free(x->loff);
}

static zg_status xfer_build(zg_engine *e, const int32_t *origin, size_t rb, int undo, xfer *x,
                            zg_error *err) {
    const zg_plan *plan = e->plan;
    int32_t P = e->comm->size;
    memset(x, 0, sizeof *x);
    x->sc = zg_calloc(4 * (size_t)P, sizeof(size_t), err);
    x->loff = zg_calloc(2 * (size_t)plan->n + 1, sizeof(int64_t), err);
    if (!x->sc || !x->loff) {
        xfer_free(x);
        return err ? err->status : ZG_ERR_NOMEM;
    }
    x->sd = x->sc + P;
    x->rc = x->sc + 2 * P;
    x->rd = x->sc + 3 * P;
    x->item = x->loff + plan->n;
    int64_t lo = 0;
    for (int64_t p = 0; p < plan->n; p++) {
        if (origin[p] < 0 || origin[p] >= P) {
            xfer_free(x);
            return zg_error_set(err, ZG_ERR_INVALID,
                                "dispatch: placement %lld has origin rank %d outside [0, %d)",
                                (long long)p, origin[p], P);
        }
        x->loff[p] = origin[p] == e->me ? lo : -1;
        if (origin[p] == e->me) lo += plan->p[p].tokens;
        x->item[p] = -1;
    }
    for (int64_t j = 0; j < e->n_items; j++)
        x->item[e->items[j].p] = j;
    // loader side: rows of my sequences going to each shard's rank; plan side: my shards
    size_t *lsend = undo ? x->rc : x->sc, *psend = undo ? x->sc : x->rc;
    for (int64_t p = 0; p < plan->n; p++) {
        const zg_placement *pl = &plan->p[p];
        if (origin[p] == e->me)
            for (int32_t i = 0; i < pl->n_ranks; i++)
                lsend[pl->ranks[i]] += (size_t)(pl->shards[i].end - pl->shards[i].start) * rb;
        if (x->item[p] >= 0) psend[origin[p]] += (size_t)e->items[x->item[p]].cl * rb;
    }
    size_t so = 0, ro = 0;
    for (int32_t r = 0; r < P; r++) {
        x->sd[r] = so;
        x->rd[r] = ro;
        so += x->sc[r];
        ro += x->rc[r];
    }
    return ZG_OK;
}

static void row_put(char *dst, const float *xs, const int32_t *ps, int64_t row, int32_t width,
                    int has_pos) {
    memcpy(dst, xs + (size_t)row * (size_t)width, (size_t)width * 4);
    if (has_pos) memcpy(dst + (size_t)width * 4, ps + (size_t)row * 3, 12);
}

static void row_get(const char *src, float *xs, int32_t *ps, int64_t row, int32_t width,
                    int has_pos) {
    memcpy(xs + (size_t)row * (size_t)width, src, (size_t)width * 4);
    if (has_pos) memcpy(ps + (size_t)row * 3, src + (size_t)width * 4, 12);
}

// dir 0: loader -> plan (dispatch); 1: plan -> loader (undispatch).
static zg_status move(zg_engine *e, const int32_t *origin, int32_t width, int dir,
                      const float *xsrc, const int32_t *psrc, float *xdst, int32_t *pdst,
                      zg_error *err) {
    if (width < 0)
        return zg_error_set(err, ZG_ERR_INVALID, "dispatch: width %d must be >= 0", width);
    double t0 = zg_time_now();
    memset(&e->stats, 0, sizeof e->stats);
    int has_pos = psrc != NULL && pdst != NULL;
    size_t rb = (size_t)width * 4 + (has_pos ? 12 : 0);
    xfer x;
    zg_status st = xfer_build(e, origin, rb, dir, &x, err);
    if (st) return st;
    const zg_plan *plan = e->plan;
    int32_t P = e->comm->size;
    size_t so = x.sd[P - 1] + x.sc[P - 1], ro = x.rd[P - 1] + x.rc[P - 1];
    char *sbuf = zg_eng_scratch(e, 0, so, err);
    char *rbuf = sbuf ? zg_eng_scratch(e, 1, ro, err) : NULL;
    size_t *cur = zg_calloc((size_t)P, sizeof(size_t), err);
    if (!sbuf || !rbuf || !cur) {
        free(cur);
        xfer_free(&x);
        return err ? err->status : ZG_ERR_NOMEM;
    }
    // pack in plan order per destination
    for (int32_t r = 0; r < P; r++)
        cur[r] = x.sd[r];
    for (int64_t p = 0; p < plan->n; p++) {
        const zg_placement *pl = &plan->p[p];
        if (dir == 0 && origin[p] == e->me) {
            for (int32_t i = 0; i < pl->n_ranks; i++)
                for (int64_t t = pl->shards[i].start; t < pl->shards[i].end; t++) {
                    row_put(sbuf + cur[pl->ranks[i]], xsrc, psrc, x.loff[p] + t, width, has_pos);
                    cur[pl->ranks[i]] += rb;
                }
        } else if (dir == 1 && x.item[p] >= 0) {
            const zg_eitem *it = &e->items[x.item[p]];
            for (int64_t t = 0; t < it->cl; t++) {
                row_put(sbuf + cur[origin[p]], xsrc, psrc, it->tok_off + t, width, has_pos);
                cur[origin[p]] += rb;
            }
        }
    }
    int32_t *world = NULL;
    st = zg_comm_world_ranks(e->comm, &world, err);
    uint64_t before = e->comm->bytes_sent;
    if (!st)
        st = zg_comm_alltoallv(e->comm, world, P, sbuf, x.sc, x.sd, rbuf, x.rc, x.rd, 8 + dir, err);
    e->stats.bytes_dispatch = e->comm->bytes_sent - before;
    e->stats.collectives = 1;
    free(world);
    // unpack in plan order per source
    for (int32_t r = 0; r < P && !st; r++)
        cur[r] = x.rd[r];
    for (int64_t p = 0; p < plan->n && !st; p++) {
        const zg_placement *pl = &plan->p[p];
        if (dir == 0 && x.item[p] >= 0) {
            const zg_eitem *it = &e->items[x.item[p]];
            for (int64_t t = 0; t < it->cl; t++) {
                row_get(rbuf + cur[origin[p]], xdst, pdst, it->tok_off + t, width, has_pos);
                cur[origin[p]] += rb;
            }
        } else if (dir == 1 && origin[p] == e->me) {
            for (int32_t i = 0; i < pl->n_ranks; i++)
                for (int64_t t = pl->shards[i].start; t < pl->shards[i].end; t++) {
                    row_get(rbuf + cur[pl->ranks[i]], xdst, pdst, x.loff[p] + t, width, has_pos);
                    cur[pl->ranks[i]] += rb;
                }
        }
    }
    free(cur);
    xfer_free(&x);
    e->stats.t_total = zg_time_now() - t0;
    return st;
}

zg_status zg_engine_dispatch(zg_engine *e, const int32_t *origin, int32_t width,
                             const float *x_loader, const int32_t *pos_loader, float *x_plan,
                             int32_t *pos_plan, zg_error *err) {
    return move(e, origin, width, 0, x_loader, pos_loader, x_plan, pos_plan, err);
}

zg_status zg_engine_undispatch(zg_engine *e, const int32_t *origin, int32_t width,
                               const float *x_plan, const int32_t *pos_plan, float *x_loader,
                               int32_t *pos_loader, zg_error *err) {
    return move(e, origin, width, 1, x_plan, pos_plan, x_loader, pos_loader, err);
}
