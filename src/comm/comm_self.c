// comm_self.c — the one-process backend. Messages to self are matched by tag in posting order
// (like MPI's non-overtaking rule) and copied when both sides are posted.
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"

typedef struct self_msg {
    const void *sbuf;
    void *rbuf;
    size_t bytes;
    int32_t tag;
    int is_send;
    int done;
    int64_t id;
} self_msg;

typedef struct self_impl {
    self_msg *q; // pending (unmatched) posts
    int32_t n, cap;
    int64_t next_id;
    int64_t *done; // ids completed but not yet waited
    int32_t n_done, cap_done;
} self_impl;

static zg_status self_mark_done(self_impl *s, int64_t id, zg_error *err) {
    int64_t *d = zg_grow_array(s->done, s->n_done, &s->cap_done, 16, sizeof *d, err);
    if (!d) return err ? err->status : ZG_ERR_NOMEM;
    s->done = d;
    s->done[s->n_done++] = id;
    return ZG_OK;
}

static zg_status self_post(zg_comm *c, const void *sbuf, void *rbuf, size_t bytes, int32_t peer,
                           int32_t tag, int is_send, zg_comm_req *req, zg_error *err) {
    self_impl *s = c->impl;
    if (peer != 0)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "comm self: peer rank %d does not exist (world size 1)", peer);
    int64_t id = ++s->next_id;
    memset(req, 0, sizeof *req);
    req->opaque[0] = (uint64_t)id;
    // match the oldest opposite post with the same tag
    for (int32_t i = 0; i < s->n; i++) {
        self_msg *m = &s->q[i];
        if (m->is_send == is_send || m->tag != tag) continue;
        size_t sb = is_send ? bytes : m->bytes, rb = is_send ? m->bytes : bytes;
        if (sb != rb)
            return zg_error_set(err, ZG_ERR_COMM,
                                "comm self: tag %d send of %zu bytes met a receive of %zu bytes",
                                tag, sb, rb);
        if (sb) memcpy(is_send ? m->rbuf : rbuf, is_send ? sbuf : m->sbuf, sb);
        zg_status st = self_mark_done(s, m->id, err);
        if (st == ZG_OK) st = self_mark_done(s, id, err);
        memmove(&s->q[i], &s->q[i + 1], (size_t)(s->n - i - 1) * sizeof(self_msg));
        s->n--;
        return st;
    }
    self_msg *q = zg_grow_array(s->q, s->n, &s->cap, 16, sizeof *q, err);
    if (!q) return err ? err->status : ZG_ERR_NOMEM;
    s->q = q;
    s->q[s->n++] = (self_msg){sbuf, rbuf, bytes, tag, is_send, 0, id};
    return ZG_OK;
}

static zg_status self_isend(zg_comm *c, const void *buf, size_t bytes, int32_t peer, int32_t tag,
                            zg_comm_req *req, zg_error *err) {
    return self_post(c, buf, NULL, bytes, peer, tag, 1, req, err);
}

static zg_status self_irecv(zg_comm *c, void *buf, size_t bytes, int32_t peer, int32_t tag,
                            zg_comm_req *req, zg_error *err) {
    return self_post(c, NULL, buf, bytes, peer, tag, 0, req, err);
}

static zg_status self_waitall(zg_comm *c, int32_t n, zg_comm_req *reqs, zg_error *err) {
    self_impl *s = c->impl;
    for (int32_t i = 0; i < n; i++) {
        int64_t id = (int64_t)reqs[i].opaque[0];
        if (id == 0) continue;
        int32_t j = 0;
        while (j < s->n_done && s->done[j] != id)
            j++;
        if (j == s->n_done)
            return zg_error_set(err, ZG_ERR_COMM,
                                "comm self: request %lld has no matching send/receive in this "
                                "process (would deadlock)",
                                (long long)id);
        s->done[j] = s->done[--s->n_done];
        reqs[i].opaque[0] = 0;
    }
    return ZG_OK;
}

static zg_status self_barrier(zg_comm *c, zg_error *err) {
    return ZG_OK;
}

static void self_free(zg_comm *c) {
    self_impl *s = c->impl;
    if (s) {
        free(s->q);
        free(s->done);
        free(s);
    }
    c->impl = NULL;
}

static const zg_comm_vtable self_vt = {.name = "self",
                                       .isend = self_isend,
                                       .irecv = self_irecv,
                                       .waitall = self_waitall,
                                       .barrier = self_barrier,
                                       .free = self_free};

zg_status zg_comm_self_init(zg_comm *c, zg_error *err) {
    memset(c, 0, sizeof *c);
    self_impl *s = zg_calloc(1, sizeof *s, err);
    if (!s) return err ? err->status : ZG_ERR_NOMEM;
    c->vt = &self_vt;
    c->impl = s;
    c->rank = 0;
    c->size = 1;
    return ZG_OK;
}
