// comm_mpi.c — MPI backend: one world communicator (MPI_COMM_WORLD), nonblocking point-to-point
// only; every subset collective is built from these in comm.c. Messages of any size: a message
// is sent as whole 1 MiB blocks (a contiguous datatype, so counts fit an int up to 2^51 bytes)
// followed by the remainder bytes, both with the same tag (MPI keeps their order).
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"

#ifdef ZG_HAVE_MPI
#include <mpi.h>

#define ZG_MPI_BLOCK ((size_t)1 << 20)

typedef struct mpi_impl {
    MPI_Datatype block; // ZG_MPI_BLOCK contiguous bytes
    int we_initialised;
} mpi_impl;

// zg_comm_req layout: opaque[0..1] two MPI_Request values, opaque[3] bit mask of which are live.
_Static_assert(sizeof(MPI_Request) <= sizeof(uint64_t), "MPI_Request must fit 8 bytes");

static zg_status mpi_fail(zg_error *err, int rc, const char *what, int peer, int tag) {
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, s, &len);
    return zg_error_set(err, ZG_ERR_COMM, "MPI %s (peer %d, tag %d) failed: %s", what, peer, tag,
                        s);
}

static zg_status mpi_post(zg_comm *c, void *buf, size_t bytes, int32_t peer, int32_t tag,
                          int is_send, zg_comm_req *req, zg_error *err) {
    mpi_impl *m = c->impl;
    memset(req, 0, sizeof *req);
    if (peer < 0 || peer >= c->size)
        return zg_error_set(err, ZG_ERR_INVALID, "comm mpi: peer rank %d out of range [0, %d)",
                            peer, c->size);
    if (tag < 0 || tag > ZG_COMM_TAG_MAX)
        return zg_error_set(err, ZG_ERR_INVALID, "comm mpi: tag %d out of range [0, %d]", tag,
                            ZG_COMM_TAG_MAX);
    size_t nblk = bytes / ZG_MPI_BLOCK, rest = bytes % ZG_MPI_BLOCK;
    MPI_Request r[2];
    int live = 0;
    char *p = buf;
    if (nblk > 0) {
        int rc = is_send ? MPI_Isend(p, (int)nblk, m->block, peer, tag, MPI_COMM_WORLD, &r[0])
                         : MPI_Irecv(p, (int)nblk, m->block, peer, tag, MPI_COMM_WORLD, &r[0]);
        if (rc != MPI_SUCCESS) return mpi_fail(err, rc, is_send ? "Isend" : "Irecv", peer, tag);
        live |= 1;
    }
    if (rest > 0 || nblk == 0) {
        p += nblk * ZG_MPI_BLOCK;
        int rc = is_send ? MPI_Isend(p, (int)rest, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &r[1])
                         : MPI_Irecv(p, (int)rest, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &r[1]);
        if (rc != MPI_SUCCESS) return mpi_fail(err, rc, is_send ? "Isend" : "Irecv", peer, tag);
        live |= 2;
    }
    for (int i = 0; i < 2; i++)
        if (live & (1 << i)) memcpy(&req->opaque[i], &r[i], sizeof(MPI_Request));
    req->opaque[3] = (uint64_t)live;
    return ZG_OK;
}

static zg_status mpi_isend(zg_comm *c, const void *buf, size_t bytes, int32_t peer, int32_t tag,
                           zg_comm_req *req, zg_error *err) {
    return mpi_post(c, (void *)buf, bytes, peer, tag, 1, req, err);
}

static zg_status mpi_irecv(zg_comm *c, void *buf, size_t bytes, int32_t peer, int32_t tag,
                           zg_comm_req *req, zg_error *err) {
    return mpi_post(c, buf, bytes, peer, tag, 0, req, err);
}

static zg_status mpi_waitall(zg_comm *c, int32_t n, zg_comm_req *reqs, zg_error *err) {
    MPI_Request small[64];
    MPI_Request *r = small;
    if (2 * (size_t)n > sizeof small / sizeof small[0]) {
        r = zg_calloc(2 * (size_t)n, sizeof(MPI_Request), err);
        if (!r) return err ? err->status : ZG_ERR_NOMEM;
    }
    int cnt = 0;
    for (int32_t i = 0; i < n; i++) {
        uint64_t live = reqs[i].opaque[3];
        for (int j = 0; j < 2; j++)
            if (live & (1u << j)) memcpy(&r[cnt++], &reqs[i].opaque[j], sizeof(MPI_Request));
        memset(&reqs[i], 0, sizeof reqs[i]);
    }
    int rc = cnt ? MPI_Waitall(cnt, r, MPI_STATUSES_IGNORE) : MPI_SUCCESS;
    if (r != small) free(r);
    if (rc != MPI_SUCCESS) return mpi_fail(err, rc, "Waitall", -1, -1);
    return ZG_OK;
}

static zg_status mpi_barrier(zg_comm *c, zg_error *err) {
    int rc = MPI_Barrier(MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? ZG_OK : mpi_fail(err, rc, "Barrier", -1, -1);
}

static void mpi_free(zg_comm *c) {
    mpi_impl *m = c->impl;
    if (!m) return;
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin) {
        MPI_Type_free(&m->block);
        if (m->we_initialised) MPI_Finalize();
    }
    free(m);
    c->impl = NULL;
}

static const zg_comm_vtable mpi_vt = {.name = "mpi",
                                      .isend = mpi_isend,
                                      .irecv = mpi_irecv,
                                      .waitall = mpi_waitall,
                                      .barrier = mpi_barrier,
                                      .free = mpi_free};

zg_status zg_comm_mpi_init(zg_comm *c, int *argc, char ***argv, zg_error *err) {
    memset(c, 0, sizeof *c);
    mpi_impl *m = zg_calloc(1, sizeof *m, err);
    if (!m) return err ? err->status : ZG_ERR_NOMEM;
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) {
        int provided = 0;
        int rc = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
        if (rc != MPI_SUCCESS) {
            free(m);
            return mpi_fail(err, rc, "Init_thread", -1, -1);
        }
        m->we_initialised = 1;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Type_contiguous((int)ZG_MPI_BLOCK, MPI_BYTE, &m->block);
    MPI_Type_commit(&m->block);
    c->vt = &mpi_vt;
    c->impl = m;
    c->rank = rank;
    c->size = size;
    return ZG_OK;
}

int zg_comm_have_mpi(void) {
    return 1;
}

#else

zg_status zg_comm_mpi_init(zg_comm *c, int *argc, char ***argv, zg_error *err) {
    memset(c, 0, sizeof *c);
    return zg_error_set(err, ZG_ERR_UNSUPPORTED,
                        "comm: this build has no MPI backend (install libopenmpi-dev and rebuild "
                        "without NO_MPI=1)");
}

int zg_comm_have_mpi(void) {
    return 0;
}

#endif
