// nccl_mem_cuda.c — GPU memory that NCCL communicators take: ONE world communicator (what
// zellige creates: rank sets are data, comm.h) vs one communicator per rank set as other systems
// create them (e.g. one per aligned power-of-two block of ranks: a rank of a W-rank world sits
// in log2(W) blocks of sizes 2..W, the largest being the world itself).
//
// Measured on ONE GPU with cudaMemGetInfo: before/after ncclCommInitRank of a 1-rank world,
// after its first collective (NCCL sets up channels and buffers lazily), and the same for each
// of `splits` communicators made with ncclCommSplit. A 1-rank communicator has no peers, so
// this is the fixed per-communicator cost; on several GPUs each connected peer adds its channel
// buffers on top (not measurable on one GPU). The table extrapolates per rank: extra memory of
// log2(W) - 1 more communicators for W = 8..1024.
//
// Run: build/bin/bench_nccl_mem_cuda [--splits N] [--json FILE]
// Built only with CUDA (Makefile: *_cuda.c); says so and exits 2 without NCCL or a GPU.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"

#ifdef ZG_HAVE_NCCL
#include <nccl.h>

// Returns 1 from the calling function, saying which call failed and why, when x (of type T)
// is not `ok`.
#define CHECK_RC(T, ok, why, x)                                                                    \
    do {                                                                                           \
        T r_ = (x);                                                                                \
        if (r_ != (ok)) {                                                                          \
            fprintf(stderr, "bench_nccl_mem: %s: %s\n", #x, why(r_));                              \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)
#define CU(x) CHECK_RC(cudaError_t, cudaSuccess, cudaGetErrorString, x)
#define NC(x) CHECK_RC(ncclResult_t, ncclSuccess, ncclGetErrorString, x)

static double used_mib(void) {
    size_t fr = 0, tot = 0;
    cudaDeviceSynchronize();
    cudaMemGetInfo(&fr, &tot);
    return (double)(tot - fr) / (1024.0 * 1024.0);
}

// One small all-reduce and a send/recv to self on `comm`: the first use sets up its channels.
static int first_use(ncclComm_t comm, float *buf, cudaStream_t st) {
    NC(ncclAllReduce(buf, buf, 1024, ncclFloat, ncclSum, comm, st));
    NC(ncclGroupStart());
    NC(ncclSend(buf, 256, ncclFloat, 0, comm, st));
    NC(ncclRecv(buf + 512, 256, ncclFloat, 0, comm, st));
    NC(ncclGroupEnd());
    CU(cudaStreamSynchronize(st));
    return 0;
}

int main(int argc, char **argv) {
    int splits = 6;
    const char *json = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--splits") && i + 1 < argc)
            splits = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json = argv[++i];
        else {
            fprintf(stderr, "usage: bench_nccl_mem_cuda [--splits N] [--json FILE]\n");
            return 1;
        }
    }
    if (splits < 1 || splits > 64) splits = 6;
    int nd = 0;
    if (cudaGetDeviceCount(&nd) != cudaSuccess || nd == 0) {
        fprintf(stderr, "bench_nccl_mem: no GPU\n");
        return 2;
    }
    CU(cudaSetDevice(0));
    CU(cudaFree(0)); // create the context first: its memory is not NCCL's
    int ver = 0;
    ncclGetVersion(&ver);
    cudaStream_t st;
    CU(cudaStreamCreate(&st));
    float *buf = NULL;
    CU(cudaMalloc((void **)&buf, 1 << 20));
    const double base = used_mib();

    ncclUniqueId id;
    NC(ncclGetUniqueId(&id));
    ncclComm_t world;
    NC(ncclCommInitRank(&world, 1, id, 0));
    const double w_init = used_mib() - base;
    if (first_use(world, buf, st)) return 1;
    const double w_used = used_mib() - base;

    ncclComm_t *sub = calloc((size_t)splits, sizeof *sub);
    double s_init = 0, s_used = 0, before = used_mib();
    for (int i = 0; i < splits; i++)
        NC(ncclCommSplit(world, 0, 0, &sub[i], NULL));
    s_init = (used_mib() - before) / splits;
    before = used_mib();
    for (int i = 0; i < splits; i++)
        if (first_use(sub[i], buf, st)) return 1;
    s_used = s_init + (used_mib() - before) / splits;

    // the zellige backend: one world communicator (+ its stream and 16 bytes)
    for (int i = 0; i < splits; i++)
        ncclCommDestroy(sub[i]);
    ncclCommDestroy(world);
    const double base2 = used_mib();
    zg_comm zc;
    zg_error err = {0};
    uint8_t zid[ZG_COMM_NCCL_ID_BYTES];
    double z_used = -1;
    if (!zg_comm_nccl_unique_id(zid, &err) && !zg_comm_nccl_init(&zc, 0, 1, zid, 0, &err)) {
        int32_t w0[1] = {0};
        zg_comm_allreduce_f32(&zc, w0, 1, buf, 1024, 0, &err);
        zg_comm_barrier(&zc, &err);
        z_used = used_mib() - base2;
        zg_comm_free(&zc);
    }

    printf("NCCL %d.%d.%d communicator memory on one GPU (cudaMemGetInfo; 1-rank communicators: "
           "the fixed cost, no peer buffers)\n",
           ver / 10000, ver / 100 % 100, ver % 100);
    printf("  world communicator (ncclCommInitRank): %.1f MiB after init, %.1f MiB after first "
           "use\n",
           w_init, w_used);
    printf("  each ncclCommSplit communicator (mean of %d): %.1f MiB after init, %.1f MiB after "
           "first use\n",
           splits, s_init, s_used);
    printf("  zellige comm (zg_comm_nccl_init, one world comm) after a collective: %.1f MiB\n",
           z_used);
    printf("%8s %12s %14s %18s\n", "world W", "blocks/rank", "ours (MiB)", "per-block (MiB)");
    const int Ws[] = {8, 16, 32, 64, 128, 256, 512, 1024};
    for (size_t i = 0; i < sizeof Ws / sizeof Ws[0]; i++) {
        int lg = 0;
        while ((1 << lg) < Ws[i])
            lg++;
        printf("%8d %12d %14.1f %18.1f\n", Ws[i], lg, w_used, w_used + (lg - 1) * s_used);
    }
    if (json) {
        FILE *f = fopen(json, "w");
        if (f) {
            fprintf(f,
                    "{\"bench\":\"nccl_mem\",\"nccl_version\":%d,\"world_init_mib\":%.2f,"
                    "\"world_used_mib\":%.2f,\"split_init_mib\":%.2f,\"split_used_mib\":%.2f,"
                    "\"splits\":%d,\"zellige_comm_mib\":%.2f,\"per_rank\":[",
                    ver, w_init, w_used, s_init, s_used, splits, z_used);
            for (size_t i = 0; i < sizeof Ws / sizeof Ws[0]; i++) {
                int lg = 0;
                while ((1 << lg) < Ws[i])
                    lg++;
                fprintf(f, "%s{\"world\":%d,\"blocks\":%d,\"ours_mib\":%.2f,\"blocks_mib\":%.2f}",
                        i ? "," : "", Ws[i], lg, w_used, w_used + (lg - 1) * s_used);
            }
            fprintf(f, "]}\n");
            fclose(f);
        }
    }
    cudaFree(buf);
    free(sub);
    return 0;
}

#else

int main(void) {
    fprintf(stderr, "bench_nccl_mem: this build has no NCCL\n");
    return 2;
}

#endif
