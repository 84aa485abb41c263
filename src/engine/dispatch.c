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

// dir 0: loader -> plan (dispatch); 1: plan -> loader (undispatch). The rows each rank sends
// and receives, in order, come from zg_eng_dispatch_rows (sched.c), which the schedule export
// hands to other runtimes too.
static zg_status move(zg_engine *e, const int32_t *origin, int32_t width, int dir,
                      const float *xsrc, const int32_t *psrc, float *xdst, int32_t *pdst,
                      zg_error *err) {
    if (width < 0)
        return zg_error_set(err, ZG_ERR_INVALID, "dispatch: width %d must be >= 0", width);
    double t0 = zg_time_now();
    memset(&e->stats, 0, sizeof e->stats);
    int has_pos = psrc != NULL && pdst != NULL;
    size_t rb = (size_t)width * 4 + (has_pos ? 12 : 0);
    int64_t *loff, *lrows, *poff, *prows;
    zg_status st = zg_eng_dispatch_rows(e, origin, &loff, &lrows, &poff, &prows, err);
    if (st) return st;
    // dispatch sends loader rows and receives plan rows; undispatch the opposite
    const int64_t *soff = dir ? poff : loff, *srows = dir ? prows : lrows;
    const int64_t *roff = dir ? loff : poff, *rrows = dir ? lrows : prows;
    int32_t P = e->comm->size;
    size_t *cnt = zg_calloc(4 * (size_t)P, sizeof(size_t), err);
    if (!cnt) {
        free(loff);
        return err ? err->status : ZG_ERR_NOMEM;
    }
    size_t *sc = cnt, *sd = cnt + P, *rc = cnt + 2 * P, *rd = cnt + 3 * P;
    for (int32_t r = 0; r < P; r++) {
        sc[r] = (size_t)(soff[r + 1] - soff[r]) * rb;
        rc[r] = (size_t)(roff[r + 1] - roff[r]) * rb;
        sd[r] = (size_t)soff[r] * rb;
        rd[r] = (size_t)roff[r] * rb;
    }
    char *sbuf = zg_eng_scratch(e, 0, (size_t)soff[P] * rb, err);
    char *rbuf = sbuf ? zg_eng_scratch(e, 1, (size_t)roff[P] * rb, err) : NULL;
    if (!sbuf || !rbuf) {
        free(cnt);
        free(loff);
        return err ? err->status : ZG_ERR_NOMEM;
    }
    for (int64_t i = 0; i < soff[P]; i++)
        row_put(sbuf + (size_t)i * rb, xsrc, psrc, srows[i], width, has_pos);
    int32_t *world = NULL;
    st = zg_comm_world_ranks(e->comm, &world, err);
    uint64_t before = e->comm->bytes_sent;
    if (!st) st = zg_comm_alltoallv(e->comm, world, P, sbuf, sc, sd, rbuf, rc, rd, 8 + dir, err);
    e->stats.bytes_dispatch = e->comm->bytes_sent - before;
    e->stats.collectives = 1;
    free(world);
    for (int64_t i = 0; i < roff[P] && !st; i++)
        row_get(rbuf + (size_t)i * rb, xdst, pdst, rrows[i], width, has_pos);
    free(cnt);
    free(loff);
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
