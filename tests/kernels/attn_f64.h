// attn_f64.h — float64 attention math for the kernel tests: forward (O, LSE) and backward
// (dQ, dK, dV accumulated) over a slice list, written independently of src/kernels so the
// fp32 reference and the fast kernels are both checked against plain double arithmetic.
#ifndef ZG_TEST_ATTN_F64_H
#define ZG_TEST_ATTN_F64_H

#include <math.h>
#include <stdlib.h>

#include "kernels/kernels.h"

// q is (Tq, H, D), k and v are (Tk, H, D), o is (Tq, H, D), lse is (Tq, H); all double.
static void f64_forward(const zg_attn_slice *sl, int n, int H, int D, double scale, const double *q,
                        const double *k, const double *v, double *o, double *lse) {
    for (int s = 0; s < n; s++)
        for (int64_t i = sl[s].q_start; i < sl[s].q_start + sl[s].q_len; i++)
            for (int h = 0; h < H; h++) {
                const double *qi = q + (i * H + h) * D;
                double *oi = o + (i * H + h) * D;
                double m = -INFINITY, sum = 0.0;
                for (int d = 0; d < D; d++)
                    oi[d] = 0.0;
                for (int64_t j = sl[s].k_start; j < sl[s].k_start + sl[s].k_len; j++) {
                    double x = 0.0;
                    for (int d = 0; d < D; d++)
                        x += qi[d] * k[(j * H + h) * D + d];
                    if (scale * x > m) m = scale * x;
                }
                for (int64_t j = sl[s].k_start; j < sl[s].k_start + sl[s].k_len; j++) {
                    double x = 0.0;
                    for (int d = 0; d < D; d++)
                        x += qi[d] * k[(j * H + h) * D + d];
                    double p = exp(scale * x - m);
                    sum += p;
                    for (int d = 0; d < D; d++)
                        oi[d] += p * v[(j * H + h) * D + d];
                }
                if (sl[s].k_len == 0) {
                    lse[i * H + h] = -INFINITY;
                    continue;
                }
                for (int d = 0; d < D; d++)
                    oi[d] /= sum;
                lse[i * H + h] = m + log(sum);
            }
}

// Accumulates dq, dk, dv from dout, given the final o and lse of every row.
static void f64_backward(const zg_attn_slice *sl, int n, int H, int D, double scale,
                         const double *q, const double *k, const double *v, const double *o,
                         const double *lse, const double *dout, double *dq, double *dk,
                         double *dv) {
    for (int s = 0; s < n; s++)
        for (int64_t i = sl[s].q_start; i < sl[s].q_start + sl[s].q_len; i++)
            for (int h = 0; h < H; h++) {
                const double *qi = q + (i * H + h) * D, *doi = dout + (i * H + h) * D;
                double delta = 0.0;
                for (int d = 0; d < D; d++)
                    delta += doi[d] * o[(i * H + h) * D + d];
                for (int64_t j = sl[s].k_start; j < sl[s].k_start + sl[s].k_len; j++) {
                    const double *kj = k + (j * H + h) * D, *vj = v + (j * H + h) * D;
                    double x = 0.0, dp = 0.0;
                    for (int d = 0; d < D; d++)
                        x += qi[d] * kj[d], dp += doi[d] * vj[d];
                    double p = exp(scale * x - lse[i * H + h]);
                    double ds = p * (dp - delta);
                    for (int d = 0; d < D; d++) {
                        dq[(i * H + h) * D + d] += scale * ds * kj[d];
                        dk[(j * H + h) * D + d] += scale * ds * qi[d];
                        dv[(j * H + h) * D + d] += p * doi[d];
                    }
                }
            }
}

#endif
