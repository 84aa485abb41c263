// attn_ref.c — the plain reference attention over slice lists (llm.c style): one query row at a
// time, scores and sums in double, no tiling, no SIMD, no threads. Slow but obviously right;
// the fast kernels (attn_fwd.c, attn_bwd.c) are tested against it and it against float64 math.
#include <math.h>
#include <stdlib.h>

#include "kernels/attn_internal.h"

static double dot_f(const float *a, const float *b, int64_t n) {
    double s = 0.0;
    for (int64_t i = 0; i < n; i++)
        s += (double)a[i] * (double)b[i];
    return s;
}

static int64_t max_k_len(const zg_attn_slice *slices, int32_t n_slices) {
    int64_t m = 1;
    for (int32_t i = 0; i < n_slices; i++)
        if (slices[i].k_len > m) m = slices[i].k_len;
    return m;
}

zg_status zg_attn_forward_ref(const zg_attn_slice *slices, int32_t n_slices, zg_attn_shape shape,
                              const float *q, const float *k, const float *v, float *o, float *lse,
                              zg_error *err) {
    zg_status st = zg_attn_check_shape(shape, err);
    if (!st) st = zg_attn_check_slices(slices, n_slices, 1, err);
    const void *bufs[] = {q, k, v, o, lse};
    const char *names[] = {"q", "k", "v", "o", "lse"};
    if (!st) st = zg_attn_check_bufs(slices, n_slices, bufs, names, 5, err);
    if (st) return st;
    const int64_t H = shape.n_heads, D = shape.head_dim, ld = H * D;
    double *score = zg_calloc((size_t)max_k_len(slices, n_slices), sizeof *score, err);
    double *acc = zg_calloc((size_t)D, sizeof *acc, err);
    if (!score || !acc) {
        free(score), free(acc);
        return ZG_ERR_NOMEM;
    }
    for (int32_t si = 0; si < n_slices; si++) {
        const zg_attn_slice s = slices[si];
        for (int64_t i = s.q_start; i < s.q_start + s.q_len; i++) {
            for (int64_t h = 0; h < H; h++) {
                const float *qi = q + i * ld + h * D; // qi is (D,)
                float *oi = o + i * ld + h * D;       // oi is (D,)
                if (s.k_len == 0) {
                    for (int64_t d = 0; d < D; d++)
                        oi[d] = 0.0f;
                    lse[i * H + h] = -INFINITY;
                    continue;
                }
                double m = -INFINITY;
                for (int64_t j = 0; j < s.k_len; j++) {
                    const float *kj = k + (s.k_start + j) * ld + h * D; // kj is (D,)
                    score[j] = shape.scale * dot_f(qi, kj, D);
                    if (score[j] > m) m = score[j];
                }
                double sum = 0.0;
                for (int64_t d = 0; d < D; d++)
                    acc[d] = 0.0;
                for (int64_t j = 0; j < s.k_len; j++) {
                    const float *vj = v + (s.k_start + j) * ld + h * D; // vj is (D,)
                    double p = exp(score[j] - m);
                    sum += p;
                    for (int64_t d = 0; d < D; d++)
                        acc[d] += p * vj[d];
                }
                for (int64_t d = 0; d < D; d++)
                    oi[d] = (float)(acc[d] / sum);
                lse[i * H + h] = (float)(m + log(sum));
            }
        }
    }
    free(score), free(acc);
    return ZG_OK;
}

zg_status zg_attn_backward_ref(const zg_attn_slice *slices, int32_t n_slices, zg_attn_shape shape,
                               const float *q, const float *k, const float *v, const float *o,
                               const float *lse, const float *dout, float *dq, float *dk, float *dv,
                               zg_error *err) {
    zg_status st = zg_attn_check_shape(shape, err);
    if (!st) st = zg_attn_check_slices(slices, n_slices, 0, err);
    const void *bufs[] = {q, k, v, o, lse, dout, dq, dk, dv};
    const char *names[] = {"q", "k", "v", "o", "lse", "dout", "dq", "dk", "dv"};
    if (!st) st = zg_attn_check_bufs(slices, n_slices, bufs, names, 9, err);
    if (st) return st;
    const int64_t H = shape.n_heads, D = shape.head_dim, ld = H * D;
    const int64_t kmax = max_k_len(slices, n_slices);
    // Per (slice, head) accumulators in double: dK and dV are (k_len, D), dQ is (D,).
    double *dk_acc = zg_calloc((size_t)(kmax * D), sizeof(double), err);
    double *dv_acc = zg_calloc((size_t)(kmax * D), sizeof(double), err);
    double *dq_acc = zg_calloc((size_t)D, sizeof(double), err);
    if (!dk_acc || !dv_acc || !dq_acc) {
        free(dk_acc), free(dv_acc), free(dq_acc);
        return ZG_ERR_NOMEM;
    }
    for (int32_t si = 0; si < n_slices; si++) {
        const zg_attn_slice s = slices[si];
        if (s.q_len == 0 || s.k_len == 0) continue;
        for (int64_t h = 0; h < H; h++) {
            for (int64_t x = 0; x < s.k_len * D; x++)
                dk_acc[x] = dv_acc[x] = 0.0;
            for (int64_t i = s.q_start; i < s.q_start + s.q_len; i++) {
                const float *qi = q + i * ld + h * D;     // qi is (D,)
                const float *oi = o + i * ld + h * D;     // oi is (D,)
                const float *doi = dout + i * ld + h * D; // doi is (D,)
                const double l = lse[i * H + h];
                if (l == -INFINITY) continue;           // row saw no keys anywhere: no gradient
                const double delta = dot_f(doi, oi, D); // rowsum(dO * O)
                for (int64_t d = 0; d < D; d++)
                    dq_acc[d] = 0.0;
                for (int64_t j = 0; j < s.k_len; j++) {
                    const float *kj = k + (s.k_start + j) * ld + h * D; // kj is (D,)
                    const float *vj = v + (s.k_start + j) * ld + h * D; // vj is (D,)
                    double p = exp(shape.scale * dot_f(qi, kj, D) - l);
                    double ds = p * (dot_f(doi, vj, D) - delta); // dL/dscore
                    for (int64_t d = 0; d < D; d++) {
                        dq_acc[d] += ds * kj[d];
                        dk_acc[j * D + d] += ds * qi[d];
                        dv_acc[j * D + d] += p * doi[d];
                    }
                }
                float *dqi = dq + i * ld + h * D; // dqi is (D,)
                for (int64_t d = 0; d < D; d++)
                    dqi[d] += (float)(shape.scale * dq_acc[d]);
            }
            for (int64_t j = 0; j < s.k_len; j++) {
                float *dkj = dk + (s.k_start + j) * ld + h * D; // dkj is (D,)
                float *dvj = dv + (s.k_start + j) * ld + h * D; // dvj is (D,)
                for (int64_t d = 0; d < D; d++) {
                    dkj[d] += (float)(shape.scale * dk_acc[j * D + d]);
                    dvj[d] += (float)dv_acc[j * D + d];
                }
            }
        }
    }
    free(dk_acc), free(dv_acc), free(dq_acc);
    return ZG_OK;
}
