// test_comm_nccl_cuda.c — the NCCL backend with one rank on device 0: the collectives over a
// rank list (all-to-all(v), all-gather(v), reduce-scatter, all-reduce sum/max, bcast, barriers)
// and point-to-point to self, on device buffers, against the values the host backend gives; the
// device hooks the collectives of >= 2 ranks use (reduction kernel, copy, scratch); host buffers
// are refused with a message. (NCCL refuses two ranks on one GPU, so a multi-rank world needs a
// machine with several.) Built only with CUDA (Makefile: *_cuda.c); without
// NCCL in the build, or without a visible GPU, it prints one PASS line saying it was skipped.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "zgtest.h"

static zg_comm g_c;

static void *dev_of(const void *h, size_t bytes) {
    void *d = NULL;
    if (cudaMalloc(&d, bytes) != cudaSuccess) return NULL;
    cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice);
    return d;
}

static void host_of(void *h, const void *d, size_t bytes) {
    cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost);
}

ZG_TEST(backend_is_nccl_with_one_world_comm) {
    CHECK_STR(zg_comm_backend_name(&g_c), "nccl");
    CHECK_EQ_INT(g_c.rank, 0);
    CHECK_EQ_INT(g_c.size, 1);
    CHECK(zg_comm_nccl_stream(&g_c) != NULL);
}

ZG_TEST(collectives_on_device_buffers) {
    zg_error err = {0};
    int32_t w[1] = {0};
    float hs[3] = {1, 2, 3}, hr[3] = {0};
    float *s = dev_of(hs, sizeof hs), *r = dev_of(hr, sizeof hr);
    size_t cnt[1] = {sizeof hs}, dsp[1] = {0};
    CHECK_OK(zg_comm_alltoallv(&g_c, w, 1, s, cnt, dsp, r, cnt, dsp, 0, &err), &err);
    host_of(hr, r, sizeof hr);
    CHECK(hr[0] == 1 && hr[1] == 2 && hr[2] == 3);
    cudaMemset(r, 0, sizeof hr);
    cudaDeviceSynchronize();
    CHECK_OK(zg_comm_allgatherv(&g_c, w, 1, s, r, cnt, dsp, 1, &err), &err);
    host_of(hr, r, sizeof hr);
    CHECK(hr[2] == 3);
    size_t fc[1] = {3};
    float *o = dev_of(hr, sizeof hr);
    cudaMemset(o, 0, sizeof hr);
    cudaDeviceSynchronize();
    CHECK_OK(zg_comm_reduce_scatterv_f32(&g_c, w, 1, s, o, fc, dsp, 2, &err), &err);
    host_of(hr, o, sizeof hr);
    CHECK(hr[0] == 1 && hr[2] == 3);
    CHECK_OK(zg_comm_allreduce_f32(&g_c, w, 1, s, 3, 3, &err), &err);
    double hd[2] = {1.5, -2.0};
    double *d = dev_of(hd, sizeof hd);
    CHECK_OK(zg_comm_allreduce_f64(&g_c, w, 1, d, 2, 5, &err), &err);
    CHECK_OK(zg_comm_allreduce_max_f64(&g_c, w, 1, d, 2, 7, &err), &err);
    host_of(hd, d, sizeof hd);
    CHECK(hd[0] == 1.5 && hd[1] == -2.0);
    CHECK_OK(zg_comm_bcast(&g_c, w, 1, 0, s, sizeof hs, 9, &err), &err);
    CHECK_OK(zg_comm_barrier_ranks(&g_c, w, 1, 10, &err), &err);
    CHECK_OK(zg_comm_barrier(&g_c, &err), &err);
    int32_t bad[1] = {1};
    CHECK(zg_comm_allreduce_f32(&g_c, bad, 1, s, 3, 0, &err) == ZG_ERR_INVALID);
    CHECK(strstr(err.msg, "rank 1") != NULL);
    cudaFree(s), cudaFree(r), cudaFree(o), cudaFree(d);
}

ZG_TEST(send_recv_to_self_in_one_group) {
    zg_error err = {0};
    const size_t n = 1 << 20; // 4 MiB
    float *h = malloc(n * sizeof(float)), *g = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        h[i] = (float)i;
    float *a = dev_of(h, n * sizeof(float)), *b = NULL;
    cudaMalloc((void **)&b, n * sizeof(float));
    cudaMemset(b, 0, n * sizeof(float));
    cudaDeviceSynchronize();
    zg_comm_req q[4];
    CHECK_OK(zg_comm_irecv(&g_c, b, n * sizeof(float), 0, 4, &q[0], &err), &err);
    CHECK_OK(zg_comm_isend(&g_c, a, n * sizeof(float), 0, 4, &q[1], &err), &err);
    char *z = NULL; // zero-byte messages (as barriers send) need no buffer
    CHECK_OK(zg_comm_irecv(&g_c, z, 0, 0, 5, &q[2], &err), &err);
    CHECK_OK(zg_comm_isend(&g_c, z, 0, 0, 5, &q[3], &err), &err);
    CHECK_OK(zg_comm_waitall(&g_c, 4, q, &err), &err);
    host_of(g, b, n * sizeof(float));
    int same = memcmp(g, h, n * sizeof(float)) == 0;
    cudaFree(a), cudaFree(b), free(h), free(g);
    CHECK(same);
}

// The local steps a collective of >= 2 ranks runs on the device (a 1-rank world never reaches
// them): the reduction kernel (float sum, double sum, double max), device copy and scratch,
// against the host loop's values, over a length that is not a multiple of the block.
ZG_TEST(device_reduce_copy_and_scratch_hooks) {
    zg_error err = {0};
    const size_t n = 100003;
    float *fa = malloc(n * 4), *fb = malloc(n * 4), *fg = malloc(n * 4);
    double *da = malloc(n * 8), *db = malloc(n * 8), *dg = malloc(n * 8);
    for (size_t i = 0; i < n; i++) {
        fa[i] = (float)(i % 97) * 0.25f, fb[i] = (float)(i % 13) - 6.0f;
        da[i] = (double)(i % 89) * 0.5 - 20.0, db[i] = (double)(i % 7) * 3.0 - 9.0;
    }
    float *dfa = dev_of(fa, n * 4), *dfb = dev_of(fb, n * 4);
    double *dda = dev_of(da, n * 8), *ddb = dev_of(db, n * 8), *ddm = dev_of(da, n * 8);
    CHECK_OK(g_c.vt->reduce(&g_c, 0, dfa, dfb, n, &err), &err);
    CHECK_OK(g_c.vt->reduce(&g_c, 1, dda, ddb, n, &err), &err);
    CHECK_OK(g_c.vt->reduce(&g_c, 2, ddm, ddb, n, &err), &err);
    host_of(fg, dfa, n * 4);
    int bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += fg[i] != fa[i] + fb[i];
    host_of(dg, dda, n * 8);
    for (size_t i = 0; i < n; i++)
        bad += dg[i] != da[i] + db[i];
    host_of(dg, ddm, n * 8);
    for (size_t i = 0; i < n; i++)
        bad += dg[i] != (db[i] > da[i] ? db[i] : da[i]);
    CHECK_EQ_INT(bad, 0);
    CHECK(g_c.vt->reduce(&g_c, 3, dfa, dfb, n, &err) != ZG_OK); // unknown kind
    // scratch + copy: a device round trip
    void *tmp = g_c.vt->scratch(&g_c, n * 4, &err);
    CHECK(tmp != NULL);
    if (tmp) {
        CHECK_OK(g_c.vt->copy(&g_c, tmp, dfb, n * 4, &err), &err);
        CHECK_OK(g_c.vt->copy(&g_c, dfa, tmp, n * 4, &err), &err);
        g_c.vt->scratch_free(&g_c, tmp);
        cudaStreamSynchronize((cudaStream_t)zg_comm_nccl_stream(&g_c));
        host_of(fg, dfa, n * 4);
        CHECK(memcmp(fg, fb, n * 4) == 0);
    }
    cudaFree(dfa), cudaFree(dfb), cudaFree(dda), cudaFree(ddb), cudaFree(ddm);
    free(fa), free(fb), free(fg), free(da), free(db), free(dg);
}

ZG_TEST(host_buffers_are_refused) {
    zg_error err = {0};
    float host[4] = {0};
    zg_comm_req q;
    CHECK(zg_comm_isend(&g_c, host, sizeof host, 0, 1, &q, &err) == ZG_ERR_INVALID);
    CHECK(strstr(err.msg, "host memory") != NULL);
    CHECK(zg_comm_isend(&g_c, host, sizeof host, 3, 1, &q, &err) == ZG_ERR_INVALID);
}

int main(int argc, char **argv) {
    zg_error err = {0};
    int nd = 0;
    if (!zg_comm_have_nccl()) {
        printf("PASS comm_nccl (skipped: this build has no NCCL)\n");
        return 0;
    }
    cudaError_t e = cudaGetDeviceCount(&nd);
    if (e != cudaSuccess || nd == 0) {
        printf("PASS comm_nccl (skipped: no GPU: %s)\n",
               e != cudaSuccess ? cudaGetErrorString(e) : "the runtime sees 0 devices");
        return 0;
    }
    uint8_t id[ZG_COMM_NCCL_ID_BYTES];
    zg_status st = zg_comm_nccl_unique_id(id, &err);
    if (!st) st = zg_comm_nccl_init(&g_c, 0, 1, id, 0, &err);
    if (st) {
        printf("FAIL comm_nccl_init\n  %s\n", err.msg);
        return 1;
    }
    int failed = zgtest_run_all(argc, argv);
    zg_comm_free(&g_c);
    return failed ? 1 : 0;
}
