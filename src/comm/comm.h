// comm — one communication interface for the engine: nonblocking point-to-point send/recv +
// wait, and collectives over EXPLICIT RANK LISTS (all-to-all(v), all-gather(v), all-reduce,
// reduce-scatter, barrier). Backends: `self` (one process), `mpi` (OpenMPI, built when
// ZG_HAVE_MPI is defined) and `nccl` (device buffers; built when ZG_HAVE_NCCL is defined).
//
// Rank sets of a plan are DATA, not communicators: there is one world communicator, and every
// subset collective is a set of point-to-point messages on it, with a caller-chosen
// deterministic tag. A collective over ranks[0..n) must be entered by exactly the ranks in the
// list, with the same list (same order), counts and tag; the calling rank must be in the list.
//
// Ordering rule (deadlock freedom, see docs/engine.md): callers issue and wait on collectives in
// ONE global order that every rank derives from shared data (the plan). Inside one collective
// every receive and send is posted before any wait, so a collective completes as soon as all of
// its members have entered it.
//
// Determinism: reductions sum contributions in rank-list order (position 0 first), independent
// of message arrival order, so results are bit-identical across runs and across members.
//
// May include: core.
#ifndef ZG_COMM_H
#define ZG_COMM_H

#include "core/core.h"

// Tags: 0 .. ZG_COMM_TAG_MAX (MPI guarantees at least 32767).
#define ZG_COMM_TAG_MAX 32767

// A pending nonblocking operation (opaque backend storage; zero-initialised = no operation).
typedef struct zg_comm_req {
    uint64_t opaque[4];
} zg_comm_req;

typedef struct zg_comm zg_comm;

typedef struct zg_comm_vtable {
    const char *name;
    // Posts a nonblocking send/receive of `bytes` bytes (any size) to/from world rank `peer`.
    // The buffer must stay valid and untouched until the request completes.
    zg_status (*isend)(zg_comm *c, const void *buf, size_t bytes, int32_t peer, int32_t tag,
                       zg_comm_req *req, zg_error *err);
    zg_status (*irecv)(zg_comm *c, void *buf, size_t bytes, int32_t peer, int32_t tag,
                       zg_comm_req *req, zg_error *err);
    // Waits for all n requests (entries that were never posted are skipped).
    zg_status (*waitall)(zg_comm *c, int32_t n, zg_comm_req *reqs, zg_error *err);
    zg_status (*barrier)(zg_comm *c, zg_error *err); // world barrier
    void (*free)(zg_comm *c);
    // For backends whose buffers are device memory (NCCL); NULL means host memory (memmove,
    // calloc/free, a host loop). The collectives below use them for their local steps.
    zg_status (*copy)(zg_comm *c, void *dst, const void *src, size_t bytes, zg_error *err);
    void *(*scratch)(zg_comm *c, size_t bytes, zg_error *err); // temporary buffer
    void (*scratch_free)(zg_comm *c, void *p);
    // acc[i] op= x[i], i < count; kind 0: float sum, 1: double sum, 2: double max
    zg_status (*reduce)(zg_comm *c, int kind, void *acc, const void *x, size_t count,
                        zg_error *err);
} zg_comm_vtable;

struct zg_comm {
    const zg_comm_vtable *vt;
    int32_t rank, size;
    void *impl;
    // Statistics (this rank): bytes and messages sent to other ranks, local copies.
    uint64_t bytes_sent, msgs_sent, bytes_local;
};

// Backends.
zg_status zg_comm_self_init(zg_comm *c, zg_error *err);
// Initialises MPI if needed (MPI_Init_thread, FUNNELED) and uses MPI_COMM_WORLD. Returns
// ZG_ERR_UNSUPPORTED when the build has no MPI. Finalises MPI in zg_comm_free only if this
// call initialised it.
zg_status zg_comm_mpi_init(zg_comm *c, int *argc, char ***argv, zg_error *err);
// MPI when built with it and the process was started by mpirun (or ZG_COMM=mpi); else self.
// ZG_COMM=self forces the self backend.
zg_status zg_comm_init_auto(zg_comm *c, int *argc, char ***argv, zg_error *err);

// NCCL (built when the build finds CUDA and NCCL: ZG_HAVE_NCCL; otherwise these return
// ZG_ERR_UNSUPPORTED). ONE world communicator (ncclCommInitRank over all ranks), never one per
// rank set: every operation above works over explicit rank lists as on MPI. Buffers are device
// memory on `device`. Posted sends and receives are queued; a wait issues everything queued in
// one ncclGroupStart/End (each collective is one grouped send/recv) on the backend's stream
// and synchronises it, so on return the data is in place. Tags are checked but NCCL matches
// messages between two ranks by posting order; the engine's global ordering rule (every rank
// posts its collectives in one order derived from the plan) is what keeps that unambiguous.
#define ZG_COMM_NCCL_ID_BYTES 128
// A unique id for a new world (rank 0 makes it, every rank passes the same bytes to init).
zg_status zg_comm_nccl_unique_id(uint8_t id[ZG_COMM_NCCL_ID_BYTES], zg_error *err);
zg_status zg_comm_nccl_init(zg_comm *c, int32_t rank, int32_t size,
                            const uint8_t id[ZG_COMM_NCCL_ID_BYTES], int32_t device,
                            zg_error *err);
// The same with the id made on rank 0 of `boot` (e.g. the MPI backend) and broadcast over it;
// rank and size are boot's.
zg_status zg_comm_nccl_init_boot(zg_comm *c, zg_comm *boot, int32_t device, zg_error *err);
// The cudaStream_t the NCCL backend runs on (NULL for other backends).
void *zg_comm_nccl_stream(const zg_comm *c);
int zg_comm_have_nccl(void);
void zg_comm_free(zg_comm *c);
const char *zg_comm_backend_name(const zg_comm *c);
int zg_comm_have_mpi(void);

// Point-to-point (thin wrappers over the vtable; keep statistics).
zg_status zg_comm_isend(zg_comm *c, const void *buf, size_t bytes, int32_t peer, int32_t tag,
                        zg_comm_req *req, zg_error *err);
zg_status zg_comm_irecv(zg_comm *c, void *buf, size_t bytes, int32_t peer, int32_t tag,
                        zg_comm_req *req, zg_error *err);
zg_status zg_comm_waitall(zg_comm *c, int32_t n, zg_comm_req *reqs, zg_error *err);
zg_status zg_comm_barrier(zg_comm *c, zg_error *err);

// Position of `rank` in ranks[0..n), or -1.
int32_t zg_comm_rank_index(const int32_t *ranks, int32_t n, int32_t rank);
// Checks a rank list: n >= 1, ranks distinct and in [0, size), and the caller is in it.
zg_status zg_comm_check_ranks(const zg_comm *c, const int32_t *ranks, int32_t n, zg_error *err);

// ---------------------------------------------------------------------------------------------
// Subset collectives over ranks[0..n) (byte counts; `me` = position of the caller in the list).

// All-to-all(v): block j of sendbuf (send_counts[j] bytes at send_displs[j]) goes to position j;
// the block from position j lands at recvbuf + recv_displs[j] (recv_counts[j] bytes). Counts
// must agree pairwise (send_counts[j] on i == recv_counts[i] on j). The self block is copied.
zg_status zg_comm_alltoallv(zg_comm *c, const int32_t *ranks, int32_t n, const void *sendbuf,
                            const size_t *send_counts, const size_t *send_displs, void *recvbuf,
                            const size_t *recv_counts, const size_t *recv_displs, int32_t tag,
                            zg_error *err);
// All-gather(v): each position contributes counts[me] bytes from sendbuf; recvbuf receives
// position j's block at displs[j] (counts[j] bytes). sendbuf may alias recvbuf + displs[me].
zg_status zg_comm_allgatherv(zg_comm *c, const int32_t *ranks, int32_t n, const void *sendbuf,
                             void *recvbuf, const size_t *counts, const size_t *displs, int32_t tag,
                             zg_error *err);
// Reduce-scatter (float sum): sendbuf holds n blocks (block j: counts[j] floats at displs[j]);
// position j receives the sum over all positions of their block j, in recvbuf (counts[me]
// floats). Summation order is position 0, 1, ..., n-1 (deterministic).
zg_status zg_comm_reduce_scatterv_f32(zg_comm *c, const int32_t *ranks, int32_t n,
                                      const float *sendbuf, float *recvbuf, const size_t *counts,
                                      const size_t *displs, int32_t tag, zg_error *err);
// All-reduce (sum) of `count` floats or doubles in place; reduce-scatter + all-gather, summing
// in position order, so every member gets the bit-identical result.
zg_status zg_comm_allreduce_f32(zg_comm *c, const int32_t *ranks, int32_t n, float *buf,
                                size_t count, int32_t tag, zg_error *err);
zg_status zg_comm_allreduce_f64(zg_comm *c, const int32_t *ranks, int32_t n, double *buf,
                                size_t count, int32_t tag, zg_error *err);
// All-reduce max of doubles in place (every member gets the same values).
zg_status zg_comm_allreduce_max_f64(zg_comm *c, const int32_t *ranks, int32_t n, double *buf,
                                    size_t count, int32_t tag, zg_error *err);
// Barrier over the rank list (zero-byte messages).
zg_status zg_comm_barrier_ranks(zg_comm *c, const int32_t *ranks, int32_t n, int32_t tag,
                                zg_error *err);
// Broadcast `bytes` bytes from position `root` of the list.
zg_status zg_comm_bcast(zg_comm *c, const int32_t *ranks, int32_t n, int32_t root, void *buf,
                        size_t bytes, int32_t tag, zg_error *err);

// World helpers: the list 0..size-1 (caller frees *ranks).
zg_status zg_comm_world_ranks(const zg_comm *c, int32_t **ranks, zg_error *err);

#endif
