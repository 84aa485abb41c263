// comm.c — backend dispatch, statistics, and the subset collectives over explicit rank lists,
// built from nonblocking point-to-point messages on the world communicator. Every collective
// posts all of its receives, then all of its sends, then waits once: it completes as soon as
// all members have entered it (see the ordering rule in comm.h).
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"

void zg_comm_free(zg_comm *c) {
    if (c && c->vt && c->vt->free) c->vt->free(c);
    if (c) c->vt = NULL;
}

const char *zg_comm_backend_name(const zg_comm *c) {
    return c && c->vt ? c->vt->name : "none";
}

zg_status zg_comm_init_auto(zg_comm *c, int *argc, char ***argv, zg_error *err) {
    const char *force = getenv("ZG_COMM");
    if (force && strcmp(force, "self") == 0) return zg_comm_self_init(c, err);
    int launched = getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
    if ((force && strcmp(force, "mpi") == 0) || (launched && zg_comm_have_mpi()))
        return zg_comm_mpi_init(c, argc, argv, err);
    if (force && force[0])
        return zg_error_set(err, ZG_ERR_INVALID, "ZG_COMM=%s: unknown backend (use self or mpi)",
                            force);
    return zg_comm_self_init(c, err);
}

zg_status zg_comm_isend(zg_comm *c, const void *buf, size_t bytes, int32_t peer, int32_t tag,
                        zg_comm_req *req, zg_error *err) {
    c->bytes_sent += bytes;
    c->msgs_sent++;
    return c->vt->isend(c, buf, bytes, peer, tag, req, err);
}

zg_status zg_comm_irecv(zg_comm *c, void *buf, size_t bytes, int32_t peer, int32_t tag,
                        zg_comm_req *req, zg_error *err) {
    return c->vt->irecv(c, buf, bytes, peer, tag, req, err);
}

zg_status zg_comm_waitall(zg_comm *c, int32_t n, zg_comm_req *reqs, zg_error *err) {
    return n > 0 ? c->vt->waitall(c, n, reqs, err) : ZG_OK;
}

zg_status zg_comm_barrier(zg_comm *c, zg_error *err) {
    return c->vt->barrier(c, err);
}

int32_t zg_comm_rank_index(const int32_t *ranks, int32_t n, int32_t rank) {
    for (int32_t i = 0; i < n; i++)
        if (ranks[i] == rank) return i;
    return -1;
}

zg_status zg_comm_check_ranks(const zg_comm *c, const int32_t *ranks, int32_t n, zg_error *err) {
    if (n < 1 || !ranks)
        return zg_error_set(err, ZG_ERR_INVALID, "comm: empty rank list (n = %d)", n);
    for (int32_t i = 0; i < n; i++) {
        if (ranks[i] < 0 || ranks[i] >= c->size)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "comm: rank list entry %d is rank %d, outside [0, %d)", i, ranks[i],
                                c->size);
        for (int32_t j = 0; j < i; j++)
            if (ranks[j] == ranks[i])
                return zg_error_set(err, ZG_ERR_INVALID,
                                    "comm: rank %d appears twice in the rank list", ranks[i]);
    }
    if (zg_comm_rank_index(ranks, n, c->rank) < 0)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "comm: rank %d called a collective over a rank list that does not "
                            "contain it",
                            c->rank);
    return ZG_OK;
}

zg_status zg_comm_world_ranks(const zg_comm *c, int32_t **ranks, zg_error *err) {
    *ranks = zg_calloc((size_t)c->size, sizeof(int32_t), err);
    if (!*ranks) return err ? err->status : ZG_ERR_NOMEM;
    for (int32_t i = 0; i < c->size; i++)
        (*ranks)[i] = i;
    return ZG_OK;
}

// The local steps of a collective, on host memory or through the backend's hooks (device
// memory for NCCL).
static zg_status local_copy(zg_comm *c, void *dst, const void *src, size_t bytes, zg_error *err) {
    if (bytes == 0 || dst == src) return ZG_OK;
    if (c->vt->copy) return c->vt->copy(c, dst, src, bytes, err);
    memmove(dst, src, bytes);
    return ZG_OK;
}

static void *scratch_alloc(zg_comm *c, size_t bytes, zg_error *err) {
    return c->vt->scratch ? c->vt->scratch(c, bytes, err) : zg_calloc(bytes, 1, err);
}

static void scratch_free(zg_comm *c, void *p) {
    if (!p) return;
    if (c->vt->scratch_free)
        c->vt->scratch_free(c, p);
    else
        free(p);
}

// Request scratch: up to 2n requests.
static zg_comm_req *reqs_alloc(int32_t n, zg_error *err) {
    return zg_calloc(2 * (size_t)n + 1, sizeof(zg_comm_req), err);
}

// What a collective over a rank list starts with: the list checked, my position in it (*me) and
// request scratch for up to 2n requests (*r, for coll_finish).
static zg_status coll_start(zg_comm *c, const int32_t *ranks, int32_t n, int32_t *me,
                            zg_comm_req **r, zg_error *err) {
    zg_status st = zg_comm_check_ranks(c, ranks, n, err);
    if (st) return st;
    *me = zg_comm_rank_index(ranks, n, c->rank);
    *r = reqs_alloc(n, err);
    return *r ? ZG_OK : err ? err->status : ZG_ERR_NOMEM;
}

// Waits for the nr requests posted (their error reported only when st is ZG_OK) and frees r;
// returns st, else the wait's status.
static zg_status coll_finish(zg_comm *c, int32_t nr, zg_comm_req *r, zg_status st, zg_error *err) {
    zg_status wst = zg_comm_waitall(c, nr, r, st ? NULL : err);
    free(r);
    return st ? st : wst;
}

zg_status zg_comm_alltoallv(zg_comm *c, const int32_t *ranks, int32_t n, const void *sendbuf,
                            const size_t *send_counts, const size_t *send_displs, void *recvbuf,
                            const size_t *recv_counts, const size_t *recv_displs, int32_t tag,
                            zg_error *err) {
    int32_t me, nr = 0;
    zg_comm_req *r;
    zg_status st = coll_start(c, ranks, n, &me, &r, err);
    if (st) return st;
    for (int32_t j = 0; j < n && !st; j++)
        if (j != me && recv_counts[j] > 0)
            st = zg_comm_irecv(c, (char *)recvbuf + recv_displs[j], recv_counts[j], ranks[j], tag,
                               &r[nr++], err);
    for (int32_t j = 0; j < n && !st; j++)
        if (j != me && send_counts[j] > 0)
            st = zg_comm_isend(c, (const char *)sendbuf + send_displs[j], send_counts[j], ranks[j],
                               tag, &r[nr++], err);
    if (!st && send_counts[me] != recv_counts[me])
        st = zg_error_set(err, ZG_ERR_INVALID,
                          "comm alltoallv: self block sends %zu bytes but receives %zu",
                          send_counts[me], recv_counts[me]);
    if (!st && send_counts[me] > 0) {
        st = local_copy(c, (char *)recvbuf + recv_displs[me],
                        (const char *)sendbuf + send_displs[me], send_counts[me], err);
        c->bytes_local += send_counts[me];
    }
    return coll_finish(c, nr, r, st, err);
}

zg_status zg_comm_allgatherv(zg_comm *c, const int32_t *ranks, int32_t n, const void *sendbuf,
                             void *recvbuf, const size_t *counts, const size_t *displs, int32_t tag,
                             zg_error *err) {
    int32_t me, nr = 0;
    zg_comm_req *r;
    zg_status st = coll_start(c, ranks, n, &me, &r, err);
    if (st) return st;
    char *own = (char *)recvbuf + displs[me];
    if (counts[me] > 0 && (const char *)sendbuf != own) {
        st = local_copy(c, own, sendbuf, counts[me], err);
        c->bytes_local += counts[me];
    }
    for (int32_t j = 0; j < n && !st; j++)
        if (j != me && counts[j] > 0)
            st = zg_comm_irecv(c, (char *)recvbuf + displs[j], counts[j], ranks[j], tag, &r[nr++],
                               err);
    for (int32_t j = 0; j < n && !st; j++)
        if (j != me && counts[me] > 0)
            st = zg_comm_isend(c, own, counts[me], ranks[j], tag, &r[nr++], err);
    return coll_finish(c, nr, r, st, err);
}

typedef enum { RED_SUM_F32, RED_SUM_F64, RED_MAX_F64 } red_kind;

static size_t red_elem(red_kind k) {
    return k == RED_SUM_F32 ? sizeof(float) : sizeof(double);
}

// acc op= x over cnt elements
static void red_apply(red_kind k, void *acc, const void *x, size_t cnt);
static zg_status red_local(zg_comm *c, red_kind k, void *acc, const void *x, size_t cnt,
                           zg_error *err) {
    if (c->vt->reduce) return c->vt->reduce(c, (int)k, acc, x, cnt, err);
    red_apply(k, acc, x, cnt);
    return ZG_OK;
}

static void red_apply(red_kind k, void *acc, const void *x, size_t cnt) {
    if (k == RED_SUM_F32) {
        float *a = acc;
        const float *b = x;
        for (size_t i = 0; i < cnt; i++)
            a[i] += b[i];
    } else if (k == RED_SUM_F64) {
        double *a = acc;
        const double *b = x;
        for (size_t i = 0; i < cnt; i++)
            a[i] += b[i];
    } else {
        double *a = acc;
        const double *b = x;
        for (size_t i = 0; i < cnt; i++)
            if (b[i] > a[i]) a[i] = b[i];
    }
}

// Generic reduce-scatter; counts/displs in elements. Sums in position order.
static zg_status reduce_scatter(zg_comm *c, const int32_t *ranks, int32_t n, red_kind kind,
                                const void *sendbuf, void *recvbuf, const size_t *counts,
                                const size_t *displs, int32_t tag, zg_error *err) {
    int32_t me, nr = 0;
    zg_comm_req *r;
    zg_status st = coll_start(c, ranks, n, &me, &r, err);
    if (st) return st;
    size_t es = red_elem(kind), mine = counts[me];
    char *tmp = NULL;
    if (mine > 0 && n > 1 && !(tmp = scratch_alloc(c, (size_t)n * mine * es, err))) {
        free(r);
        return err ? err->status : ZG_ERR_NOMEM;
    }
    for (int32_t j = 0; j < n && !st; j++)
        if (j != me && mine > 0)
            st = zg_comm_irecv(c, tmp + (size_t)j * mine * es, mine * es, ranks[j], tag, &r[nr++],
                               err);
    for (int32_t j = 0; j < n && !st; j++)
        if (j != me && counts[j] > 0)
            st = zg_comm_isend(c, (const char *)sendbuf + displs[j] * es, counts[j] * es, ranks[j],
                               tag, &r[nr++], err);
    st = coll_finish(c, nr, r, st, err);
    if (!st && mine > 0) {
        const char *own = (const char *)sendbuf + displs[me] * es;
        for (int32_t j = 0; j < n && !st; j++) {
            const char *src = j == me ? own : tmp + (size_t)j * mine * es;
            if (j == 0)
                st = local_copy(c, recvbuf, src, mine * es, err);
            else
                st = red_local(c, kind, recvbuf, src, mine, err);
        }
    }
    scratch_free(c, tmp);
    return st;
}

zg_status zg_comm_reduce_scatterv_f32(zg_comm *c, const int32_t *ranks, int32_t n,
                                      const float *sendbuf, float *recvbuf, const size_t *counts,
                                      const size_t *displs, int32_t tag, zg_error *err) {
    return reduce_scatter(c, ranks, n, RED_SUM_F32, sendbuf, recvbuf, counts, displs, tag, err);
}

// All-reduce = reduce-scatter over n near-even chunks + all-gather(v); tag and tag+1.
static zg_status allreduce(zg_comm *c, const int32_t *ranks, int32_t n, red_kind kind, void *buf,
                           size_t count, int32_t tag, zg_error *err) {
    zg_status st = zg_comm_check_ranks(c, ranks, n, err);
    if (st) return st;
    if (n == 1 || count == 0) return ZG_OK;
    size_t es = red_elem(kind);
    size_t *cnt = zg_calloc(4 * (size_t)n, sizeof(size_t), err);
    if (!cnt) return err ? err->status : ZG_ERR_NOMEM;
    size_t *dsp = cnt + n, *bcnt = cnt + 2 * n, *bdsp = cnt + 3 * n;
    size_t base = count / (size_t)n, extra = count % (size_t)n, off = 0;
    for (int32_t j = 0; j < n; j++) {
        cnt[j] = base + ((size_t)j < extra ? 1 : 0);
        dsp[j] = off;
        bcnt[j] = cnt[j] * es;
        bdsp[j] = off * es;
        off += cnt[j];
    }
    int32_t me = zg_comm_rank_index(ranks, n, c->rank);
    void *send = scratch_alloc(c, count * es, err);
    if (!send) {
        free(cnt);
        return err ? err->status : ZG_ERR_NOMEM;
    }
    st = local_copy(c, send, buf, count * es, err);
    if (!st)
        st = reduce_scatter(c, ranks, n, kind, send, (char *)buf + dsp[me] * es, cnt, dsp, tag,
                            err);
    scratch_free(c, send);
    if (!st)
        st = zg_comm_allgatherv(c, ranks, n, (char *)buf + bdsp[me], buf, bcnt, bdsp,
                                (tag + 1) % (ZG_COMM_TAG_MAX + 1), err);
    free(cnt);
    return st;
}

zg_status zg_comm_allreduce_f32(zg_comm *c, const int32_t *ranks, int32_t n, float *buf,
                                size_t count, int32_t tag, zg_error *err) {
    return allreduce(c, ranks, n, RED_SUM_F32, buf, count, tag, err);
}

zg_status zg_comm_allreduce_f64(zg_comm *c, const int32_t *ranks, int32_t n, double *buf,
                                size_t count, int32_t tag, zg_error *err) {
    return allreduce(c, ranks, n, RED_SUM_F64, buf, count, tag, err);
}

zg_status zg_comm_allreduce_max_f64(zg_comm *c, const int32_t *ranks, int32_t n, double *buf,
                                    size_t count, int32_t tag, zg_error *err) {
    return allreduce(c, ranks, n, RED_MAX_F64, buf, count, tag, err);
}

zg_status zg_comm_barrier_ranks(zg_comm *c, const int32_t *ranks, int32_t n, int32_t tag,
                                zg_error *err) {
    int32_t me, nr = 0;
    zg_comm_req *r;
    zg_status st = coll_start(c, ranks, n, &me, &r, err);
    if (st) return st;
    char dummy[1] = {0};
    char *sink = zg_calloc((size_t)n, 1, err);
    if (!sink) {
        free(r);
        return err ? err->status : ZG_ERR_NOMEM;
    }
    for (int32_t j = 0; j < n && !st; j++)
        if (j != me) st = zg_comm_irecv(c, sink + j, 0, ranks[j], tag, &r[nr++], err);
    for (int32_t j = 0; j < n && !st; j++)
        if (j != me) st = zg_comm_isend(c, dummy, 0, ranks[j], tag, &r[nr++], err);
    st = coll_finish(c, nr, r, st, err);
    free(sink);
    return st;
}

zg_status zg_comm_bcast(zg_comm *c, const int32_t *ranks, int32_t n, int32_t root, void *buf,
                        size_t bytes, int32_t tag, zg_error *err) {
    zg_status st = zg_comm_check_ranks(c, ranks, n, err);
    if (st) return st;
    if (root < 0 || root >= n)
        return zg_error_set(err, ZG_ERR_INVALID, "comm bcast: root position %d outside [0, %d)",
                            root, n);
    int32_t me = zg_comm_rank_index(ranks, n, c->rank);
    if (n == 1 || bytes == 0) return ZG_OK;
    zg_comm_req *r = reqs_alloc(n, err);
    if (!r) return err ? err->status : ZG_ERR_NOMEM;
    int32_t nr = 0;
    if (me != root) {
        st = zg_comm_irecv(c, buf, bytes, ranks[root], tag, &r[nr++], err);
    } else {
        for (int32_t j = 0; j < n && !st; j++)
            if (j != me) st = zg_comm_isend(c, buf, bytes, ranks[j], tag, &r[nr++], err);
    }
    return coll_finish(c, nr, r, st, err);
}
