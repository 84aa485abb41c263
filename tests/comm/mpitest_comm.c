// MPI tests of the comm module: point-to-point of odd and > 1 MiB sizes, subset collectives over
// explicit rank lists (world, reversed, strided, overlapping), exact values, determinism.
#include <stdlib.h>
#include <string.h>

#include "zgmpitest.h"

static int32_t R(void) {
    return zgmpi_comm->rank;
}
static int32_t P(void) {
    return zgmpi_comm->size;
}

ZG_TEST(ring_send_recv_large_odd) {
    zg_error err = {0};
    size_t bytes = ((size_t)3 << 20) + 17; // 3 whole MPI blocks + remainder
    unsigned char *s = malloc(bytes), *r = malloc(bytes);
    for (size_t i = 0; i < bytes; i++)
        s[i] = (unsigned char)(i * 7 + (size_t)R());
    int32_t next = (R() + 1) % P(), prev = (R() + P() - 1) % P();
    zg_comm_req q[2];
    CHECK_OK(zg_comm_irecv(zgmpi_comm, r, bytes, prev, 5, &q[0], &err), &err);
    CHECK_OK(zg_comm_isend(zgmpi_comm, s, bytes, next, 5, &q[1], &err), &err);
    CHECK_OK(zg_comm_waitall(zgmpi_comm, 2, q, &err), &err);
    size_t bad = 0;
    for (size_t i = 0; i < bytes; i++)
        bad += r[i] != (unsigned char)(i * 7 + (size_t)prev);
    free(s);
    free(r);
    CHECK_EQ_INT(bad, 0);
}

// all-to-all(v) over a rank list; position i sends (i+1)*(j+1) % 5 ints to position j, value
// 1000*i + j*10 + element.
static void a2a_check(const int32_t *ranks, int32_t n, int32_t tag, int *zg_failed_) {
    zg_error err = {0};
    int32_t me = zg_comm_rank_index(ranks, n, R());
    if (me < 0) return;
    size_t sc[8], sd[8], rc[8], rd[8], so = 0, ro = 0;
    for (int32_t j = 0; j < n; j++) {
        sc[j] = (size_t)(((me + 1) * (j + 1)) % 5) * sizeof(int32_t);
        rc[j] = (size_t)(((j + 1) * (me + 1)) % 5) * sizeof(int32_t);
        sd[j] = so;
        rd[j] = ro;
        so += sc[j];
        ro += rc[j];
    }
    int32_t *sb = malloc(so + 4), *rb = malloc(ro + 4);
    for (int32_t j = 0; j < n; j++)
        for (size_t e = 0; e < sc[j] / 4; e++)
            sb[sd[j] / 4 + e] = 1000 * me + 10 * j + (int)e;
    CHECK_OK(zg_comm_alltoallv(zgmpi_comm, ranks, n, sb, sc, sd, rb, rc, rd, tag, &err), &err);
    int bad = 0;
    for (int32_t j = 0; j < n; j++)
        for (size_t e = 0; e < rc[j] / 4; e++)
            bad += rb[rd[j] / 4 + e] != 1000 * j + 10 * me + (int)e;
    free(sb);
    free(rb);
    CHECK_EQ_INT(bad, 0);
}

ZG_TEST(alltoallv_world_reversed_subset) {
    int32_t w[8], rev[8], odd[8], n_odd = 0;
    for (int32_t i = 0; i < P(); i++) {
        w[i] = i;
        rev[i] = P() - 1 - i;
        if (i % 2 == 1 || P() == 1) odd[n_odd++] = i;
    }
    a2a_check(w, P(), 10, zg_failed_);
    if (*zg_failed_) return;
    a2a_check(rev, P(), 11, zg_failed_);
    if (*zg_failed_) return;
    a2a_check(odd, n_odd, 12, zg_failed_);
}

// Overlapping rank sets issued in one global order (the engine's rule) never deadlock.
ZG_TEST(overlapping_sets_global_order) {
    zg_error err = {0};
    int32_t sets[6][4], ns[6], nsets = 0;
    for (int32_t s = 0; s < 6; s++) { // {s, s+1, s+2} mod P, plus pairs, distinct members
        int32_t n = 0;
        int32_t want = s < 3 ? 3 : 2;
        for (int32_t t = 0; t < want && t < P(); t++)
            sets[nsets][n++] = (s + t * (s < 3 ? 1 : 2)) % P();
        // dedupe
        int32_t m = 0;
        for (int32_t i = 0; i < n; i++) {
            int dup = 0;
            for (int32_t j = 0; j < m; j++)
                dup |= sets[nsets][j] == sets[nsets][i];
            if (!dup) sets[nsets][m++] = sets[nsets][i];
        }
        ns[nsets++] = m;
    }
    int bad = 0;
    for (int32_t s = 0; s < nsets; s++) {
        if (zg_comm_rank_index(sets[s], ns[s], R()) < 0) continue;
        double v[3] = {R() + 1.0, 0.5 * s, -R()};
        CHECK_OK(zg_comm_allreduce_f64(zgmpi_comm, sets[s], ns[s], v, 3, 100 + s, &err), &err);
        double e0 = 0, e2 = 0;
        for (int32_t i = 0; i < ns[s]; i++) {
            e0 += sets[s][i] + 1.0;
            e2 -= sets[s][i];
        }
        bad += v[0] != e0 || v[1] != 0.5 * s * ns[s] || v[2] != e2;
    }
    CHECK_EQ_INT(bad, 0);
}

ZG_TEST(allgatherv_reduce_scatter_exact) {
    zg_error err = {0};
    int32_t n = P(), w[8];
    for (int32_t i = 0; i < n; i++)
        w[i] = i;
    size_t cnt[8], dsp[8], off = 0;
    for (int32_t j = 0; j < n; j++) {
        cnt[j] = (size_t)(j % 3 + 1) * sizeof(float);
        dsp[j] = off;
        off += cnt[j];
    }
    float mine[4], all[32];
    for (size_t e = 0; e < cnt[R()] / 4; e++)
        mine[e] = 100.0f * R() + (float)e;
    CHECK_OK(zg_comm_allgatherv(zgmpi_comm, w, n, mine, all, cnt, dsp, 20, &err), &err);
    int bad = 0;
    for (int32_t j = 0; j < n; j++)
        for (size_t e = 0; e < cnt[j] / 4; e++)
            bad += all[dsp[j] / 4 + e] != 100.0f * j + (float)e;
    CHECK_EQ_INT(bad, 0);
    // reduce-scatter: block j has j+2 floats, value (rank+1)*(e+1)
    size_t rc[8], rd[8];
    off = 0;
    for (int32_t j = 0; j < n; j++) {
        rc[j] = (size_t)j + 2;
        rd[j] = off;
        off += rc[j];
    }
    float *sb = malloc(off * sizeof(float)), rb[16];
    for (int32_t j = 0; j < n; j++)
        for (size_t e = 0; e < rc[j]; e++)
            sb[rd[j] + e] = (float)((R() + 1) * (int)(e + 1));
    CHECK_OK(zg_comm_reduce_scatterv_f32(zgmpi_comm, w, n, sb, rb, rc, rd, 21, &err), &err);
    free(sb);
    float tot = (float)(n * (n + 1) / 2);
    for (size_t e = 0; e < rc[R()]; e++)
        CHECK(rb[e] == tot * (float)(e + 1));
}

ZG_TEST(allreduce_bit_identical_across_ranks) {
    zg_error err = {0};
    int32_t n = P(), w[8];
    for (int32_t i = 0; i < n; i++)
        w[i] = i;
    enum { N = 1001 };
    float *x = malloc(N * sizeof(float));
    zg_rng rng;
    zg_rng_init(&rng, 77 + (uint64_t)R());
    for (int i = 0; i < N; i++)
        x[i] = (float)zg_rng_normal(&rng) * 1e3f;
    CHECK_OK(zg_comm_allreduce_f32(zgmpi_comm, w, n, x, N, 30, &err), &err);
    // the result on rank 0, broadcast, must equal every rank's bit for bit
    float *y = malloc(N * sizeof(float));
    memcpy(y, x, N * sizeof(float));
    CHECK_OK(zg_comm_bcast(zgmpi_comm, w, n, 0, y, N * sizeof(float), 32, &err), &err);
    int same = memcmp(x, y, N * sizeof(float)) == 0;
    // reference: sum in rank order
    float ref0 = 0;
    for (int32_t r = 0; r < n; r++) {
        zg_rng g;
        zg_rng_init(&g, 77 + (uint64_t)r);
        ref0 = r == 0 ? (float)zg_rng_normal(&g) * 1e3f : ref0 + (float)zg_rng_normal(&g) * 1e3f;
    }
    float got0 = x[0];
    free(x);
    free(y);
    CHECK(same);
    CHECK(got0 == ref0);
    double m[2] = {(double)R(), -(double)R()};
    CHECK_OK(zg_comm_allreduce_max_f64(zgmpi_comm, w, n, m, 2, 34, &err), &err);
    CHECK(m[0] == n - 1 && m[1] == 0);
    CHECK_OK(zg_comm_barrier_ranks(zgmpi_comm, w, n, 36, &err), &err);
    CHECK_OK(zg_comm_barrier(zgmpi_comm, &err), &err);
}

ZG_TEST(bad_rank_lists_rejected_locally) {
    zg_error err = {0};
    int32_t other[1] = {(R() + 1) % P()}, dup[2] = {R(), R()}, out[1] = {P()};
    double v = 1;
    if (P() > 1)
        CHECK(zg_comm_allreduce_f64(zgmpi_comm, other, 1, &v, 1, 40, &err) == ZG_ERR_INVALID);
    CHECK(zg_comm_allreduce_f64(zgmpi_comm, dup, 2, &v, 1, 40, &err) == ZG_ERR_INVALID);
    CHECK(strstr(err.msg, "twice") != NULL);
    CHECK(zg_comm_barrier_ranks(zgmpi_comm, out, 1, 40, &err) == ZG_ERR_INVALID);
    zg_comm_req q;
    CHECK(zg_comm_isend(zgmpi_comm, &v, 8, P() + 3, 1, &q, &err) != ZG_OK);
}

ZG_MPITEST_MAIN()
