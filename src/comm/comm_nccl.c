// comm_nccl.c — NCCL backend: ONE world communicator, device buffers. Point-to-point posts are
// queued; a wait issues every queued send and receive inside one ncclGroupStart/ncclGroupEnd
// on the backend's stream and synchronises it. Every subset collective in comm.c posts all its
// receives and sends and then waits once, so each collective becomes one grouped send/recv over
// its rank list on the world communicator: no communicator per rank set is ever created. The
// collectives' local steps (self-block copies, partial sums, scratch) run on the same stream
// through the vtable hooks (device memcpy, a small reduction kernel in comm_reduce.cu).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"

#ifdef ZG_HAVE_NCCL
#include <cuda_runtime.h>
#include <nccl.h>

// comm_reduce.cu: acc[i] op= x[i] on `stream` (kind as the vtable's reduce); a cudaError_t.
int zg_cu_comm_reduce(int kind, void *acc, const void *x, size_t count, void *stream);

_Static_assert(sizeof(ncclUniqueId) == ZG_COMM_NCCL_ID_BYTES, "NCCL unique id size");

typedef struct nccl_op {
    void *buf;
    size_t bytes;
    int32_t peer;
    int is_send;
} nccl_op;

typedef struct nccl_impl {
    ncclComm_t comm;
    cudaStream_t stream;
    int32_t device;
    nccl_op *ops; // posted, not yet issued
    int32_t n_ops, cap_ops;
    uint64_t next_id; // request ids: a request is complete once issued (id <= issued)
    uint64_t issued;
    char *dummy; // 2 device bytes: zero-byte messages travel as one byte (send [0], recv [1])
} nccl_impl;

#define NCCL_REQ_MAGIC 0x6e63636cu // "nccl"

static zg_status nccl_fail(zg_error *err, ncclResult_t r, const char *what) {
    return zg_error_set(err, ZG_ERR_COMM, "comm nccl: %s failed: %s", what, ncclGetErrorString(r));
}

static zg_status cuda_fail(zg_error *err, cudaError_t e, const char *what) {
    return zg_error_set(err, ZG_ERR_COMM, "comm nccl: %s failed: %s", what, cudaGetErrorString(e));
}

// The buffer must be device (or managed) memory: NCCL cannot read host pointers.
static zg_status check_dev(void *buf, const char *what, zg_error *err) {
    struct cudaPointerAttributes a;
    cudaError_t e = cudaPointerGetAttributes(&a, buf);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return zg_error_set(err, ZG_ERR_INVALID, "comm nccl: %s buffer %p: %s", what, buf,
                            cudaGetErrorString(e));
    }
    if (a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "comm nccl: %s buffer %p is host memory; the NCCL backend moves "
                            "device buffers",
                            what, buf);
    return ZG_OK;
}

static zg_status nccl_post(zg_comm *c, void *buf, size_t bytes, int32_t peer, int32_t tag,
                           int is_send, zg_comm_req *req, zg_error *err) {
    nccl_impl *m = c->impl;
    memset(req, 0, sizeof *req);
    if (peer < 0 || peer >= c->size)
        return zg_error_set(err, ZG_ERR_INVALID, "comm nccl: peer rank %d out of range [0, %d)",
                            peer, c->size);
    if (tag < 0 || tag > ZG_COMM_TAG_MAX)
        return zg_error_set(err, ZG_ERR_INVALID, "comm nccl: tag %d out of range [0, %d]", tag,
                            ZG_COMM_TAG_MAX);
    if (bytes == 0) { // a zero-byte message still synchronises its pair (barriers use them)
        buf = m->dummy + (is_send ? 0 : 1);
        bytes = 1;
    } else {
        zg_status st = check_dev(buf, is_send ? "send" : "receive", err);
        if (st) return st;
    }
    nccl_op *ops = zg_grow_array(m->ops, m->n_ops, &m->cap_ops, 32, sizeof *ops, err);
    if (!ops) return err ? err->status : ZG_ERR_NOMEM;
    m->ops = ops;
    m->ops[m->n_ops++] = (nccl_op){buf, bytes, peer, is_send};
    req->opaque[0] = ++m->next_id;
    req->opaque[1] = NCCL_REQ_MAGIC;
    return ZG_OK;
}

static zg_status nccl_isend(zg_comm *c, const void *buf, size_t bytes, int32_t peer, int32_t tag,
                            zg_comm_req *req, zg_error *err) {
    return nccl_post(c, (void *)buf, bytes, peer, tag, 1, req, err);
}

static zg_status nccl_irecv(zg_comm *c, void *buf, size_t bytes, int32_t peer, int32_t tag,
                            zg_comm_req *req, zg_error *err) {
    return nccl_post(c, buf, bytes, peer, tag, 0, req, err);
}

// Issues every queued op as one group and waits for the stream.
static zg_status nccl_flush(zg_comm *c, zg_error *err) {
    nccl_impl *m = c->impl;
    if (m->n_ops == 0) return ZG_OK;
    ncclResult_t r = ncclGroupStart();
    for (int32_t i = 0; i < m->n_ops && r == ncclSuccess; i++) {
        const nccl_op *o = &m->ops[i];
        r = o->is_send ? ncclSend(o->buf, o->bytes, ncclUint8, o->peer, m->comm, m->stream)
                       : ncclRecv(o->buf, o->bytes, ncclUint8, o->peer, m->comm, m->stream);
    }
    ncclResult_t r2 = ncclGroupEnd();
    m->n_ops = 0;
    m->issued = m->next_id;
    if (r != ncclSuccess) return nccl_fail(err, r, "grouped send/recv");
    if (r2 != ncclSuccess) return nccl_fail(err, r2, "ncclGroupEnd");
    cudaError_t e = cudaStreamSynchronize(m->stream);
    if (e != cudaSuccess) return cuda_fail(err, e, "waiting for the grouped send/recv");
    ncclResult_t ae = ncclSuccess;
    ncclCommGetAsyncError(m->comm, &ae);
    return ae == ncclSuccess ? ZG_OK : nccl_fail(err, ae, "the communicator");
}

static zg_status nccl_waitall(zg_comm *c, int32_t n, zg_comm_req *reqs, zg_error *err) {
    nccl_impl *m = c->impl;
    int pending = 0;
    for (int32_t i = 0; i < n; i++)
        if (reqs[i].opaque[1] == NCCL_REQ_MAGIC && reqs[i].opaque[0] > m->issued) pending = 1;
    zg_status st = pending ? nccl_flush(c, err) : ZG_OK;
    for (int32_t i = 0; i < n; i++)
        memset(&reqs[i], 0, sizeof reqs[i]);
    return st;
}

static zg_status nccl_barrier(zg_comm *c, zg_error *err) {
    nccl_impl *m = c->impl;
    zg_status st = nccl_flush(c, err);
    if (st) return st;
    ncclResult_t r = ncclAllReduce(m->dummy, m->dummy, 1, ncclUint8, ncclMax, m->comm, m->stream);
    if (r != ncclSuccess) return nccl_fail(err, r, "barrier all-reduce");
    cudaError_t e = cudaStreamSynchronize(m->stream);
    return e == cudaSuccess ? ZG_OK : cuda_fail(err, e, "barrier");
}

// Local steps run on the stream and are waited for, so a collective's result is in place when
// it returns (the same contract as the host backends).
static zg_status nccl_copy(zg_comm *c, void *dst, const void *src, size_t bytes, zg_error *err) {
    nccl_impl *m = c->impl;
    cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, m->stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(m->stream);
    return e == cudaSuccess ? ZG_OK : cuda_fail(err, e, "device copy");
}

static void *nccl_scratch(zg_comm *c, size_t bytes, zg_error *err) {
    nccl_impl *m = c->impl;
    void *p = NULL;
    cudaError_t e = cudaMallocAsync(&p, bytes ? bytes : 1, m->stream);
    if (e != cudaSuccess) {
        zg_error_set(err, ZG_ERR_NOMEM, "comm nccl: %zu bytes of device scratch: %s", bytes,
                     cudaGetErrorString(e));
        return NULL;
    }
    return p;
}

static void nccl_scratch_free(zg_comm *c, void *p) {
    nccl_impl *m = c->impl;
    cudaFreeAsync(p, m->stream);
}

static zg_status nccl_reduce(zg_comm *c, int kind, void *acc, const void *x, size_t count,
                             zg_error *err) {
    nccl_impl *m = c->impl;
    cudaError_t e = (cudaError_t)zg_cu_comm_reduce(kind, acc, x, count, m->stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(m->stream);
    return e == cudaSuccess ? ZG_OK : cuda_fail(err, e, "device reduction");
}

static void nccl_free(zg_comm *c) {
    nccl_impl *m = c->impl;
    if (!m) return;
    cudaSetDevice(m->device);
    if (m->comm) ncclCommDestroy(m->comm);
    cudaStreamSynchronize(m->stream);
    cudaFree(m->dummy);
    cudaStreamDestroy(m->stream);
    free(m->ops);
    free(m);
    c->impl = NULL;
}

static const zg_comm_vtable nccl_vt = {.name = "nccl",
                                       .isend = nccl_isend,
                                       .irecv = nccl_irecv,
                                       .waitall = nccl_waitall,
                                       .barrier = nccl_barrier,
                                       .free = nccl_free,
                                       .copy = nccl_copy,
                                       .scratch = nccl_scratch,
                                       .scratch_free = nccl_scratch_free,
                                       .reduce = nccl_reduce};

zg_status zg_comm_nccl_unique_id(uint8_t id[ZG_COMM_NCCL_ID_BYTES], zg_error *err) {
    ncclUniqueId u;
    ncclResult_t r = ncclGetUniqueId(&u);
    if (r != ncclSuccess) return nccl_fail(err, r, "ncclGetUniqueId");
    memcpy(id, &u, sizeof u);
    return ZG_OK;
}

zg_status zg_comm_nccl_init(zg_comm *c, int32_t rank, int32_t size,
                            const uint8_t id[ZG_COMM_NCCL_ID_BYTES], int32_t device,
                            zg_error *err) {
    memset(c, 0, sizeof *c);
    if (size < 1 || rank < 0 || rank >= size)
        return zg_error_set(err, ZG_ERR_INVALID, "comm nccl: rank %d of world size %d", rank, size);
    int nd = 0;
    cudaError_t e = cudaGetDeviceCount(&nd);
    if (e != cudaSuccess) return cuda_fail(err, e, "cudaGetDeviceCount");
    if (device < 0 || device >= nd)
        return zg_error_set(err, ZG_ERR_INVALID, "comm nccl: device %d outside [0, %d)", device,
                            nd);
    if ((e = cudaSetDevice(device)) != cudaSuccess) return cuda_fail(err, e, "cudaSetDevice");
    nccl_impl *m = zg_calloc(1, sizeof *m, err);
    if (!m) return ZG_ERR_NOMEM;
    m->device = device;
    if ((e = cudaStreamCreateWithFlags(&m->stream, cudaStreamNonBlocking)) != cudaSuccess) {
        free(m);
        return cuda_fail(err, e, "cudaStreamCreate");
    }
    if ((e = cudaMalloc((void **)&m->dummy, 16)) != cudaSuccess ||
        (e = cudaMemset(m->dummy, 0, 16)) != cudaSuccess) {
        cudaStreamDestroy(m->stream);
        free(m);
        return cuda_fail(err, e, "cudaMalloc");
    }
    ncclUniqueId u;
    memcpy(&u, id, sizeof u);
    ncclResult_t r = ncclCommInitRank(&m->comm, size, u, rank);
    if (r != ncclSuccess) {
        m->comm = NULL;
        c->impl = m;
        nccl_free(c);
        return nccl_fail(err, r, "ncclCommInitRank");
    }
    c->vt = &nccl_vt;
    c->impl = m;
    c->rank = rank;
    c->size = size;
    return ZG_OK;
}

zg_status zg_comm_nccl_init_boot(zg_comm *c, zg_comm *boot, int32_t device, zg_error *err) {
    uint8_t id[ZG_COMM_NCCL_ID_BYTES] = {0};
    int32_t *world = NULL;
    zg_status st = boot->rank == 0 ? zg_comm_nccl_unique_id(id, err) : ZG_OK;
    // every rank takes part in the broadcast, so a failure on rank 0 sends zeros rather than
    // leaving the others waiting; they then fail in ncclCommInitRank
    zg_status bst = zg_comm_world_ranks(boot, &world, err);
    if (!bst) bst = zg_comm_bcast(boot, world, boot->size, 0, id, sizeof id, 0, err);
    free(world);
    if (st) return st;
    if (bst) return bst;
    return zg_comm_nccl_init(c, boot->rank, boot->size, id, device, err);
}

void *zg_comm_nccl_stream(const zg_comm *c) {
    return c && c->vt == &nccl_vt ? (void *)((nccl_impl *)c->impl)->stream : NULL;
}

int zg_comm_have_nccl(void) {
    return 1;
}

#else // no NCCL in this build

static zg_status no_nccl(zg_error *err) {
    return zg_error_set(err, ZG_ERR_UNSUPPORTED,
                        "comm: this build has no NCCL backend (it needs CUDA and NCCL: nvcc, "
                        "nccl.h and libnccl found by the Makefile, and no NO_CUDA/NO_NCCL)");
}

zg_status zg_comm_nccl_unique_id(uint8_t id[ZG_COMM_NCCL_ID_BYTES], zg_error *err) {
    return no_nccl(err);
}

zg_status zg_comm_nccl_init(zg_comm *c, int32_t rank, int32_t size,
                            const uint8_t id[ZG_COMM_NCCL_ID_BYTES], int32_t device,
                            zg_error *err) {
    memset(c, 0, sizeof *c);
    return no_nccl(err);
}

zg_status zg_comm_nccl_init_boot(zg_comm *c, zg_comm *boot, int32_t device, zg_error *err) {
    memset(c, 0, sizeof *c);
    return no_nccl(err);
}

void *zg_comm_nccl_stream(const zg_comm *c) {
    return NULL;
}

int zg_comm_have_nccl(void) {
    return 0;
}

#endif
