// ops.c — the DiT's elementwise/normalisation ops and linear layers, forward and backward.
// Plain loops (llm.c style), OpenMP over tokens where it pays; GEMMs through OpenBLAS.
#include <cblas.h>  // defines: cblas_sgemm
#include <math.h>
#include <string.h>

#include "dit/dit.h"

// ---- linear -----------------------------------------------------------------------------------

void zg_linear_forward(int64_t T, int32_t in, int32_t out, const float *x, const float *w,
                       const float *b, float *y) {
    if (T <= 0) return;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)T, out, in, 1.0f, x, in, w, in,
                0.0f, y, out);
    if (b)
        for (int64_t t = 0; t < T; t++)
            for (int32_t o = 0; o < out; o++) y[t * out + o] += b[o];
}

void zg_linear_forward_ref(int64_t T, int32_t in, int32_t out, const float *x, const float *w,
                           const float *b, float *y) {
    for (int64_t t = 0; t < T; t++)
        for (int32_t o = 0; o < out; o++) {
            double acc = b ? b[o] : 0.0;
            for (int32_t i = 0; i < in; i++) acc += (double)x[t * in + i] * w[(int64_t)o * in + i];
            y[t * out + o] = (float)acc;
        }
}

void zg_linear_backward(int64_t T, int32_t in, int32_t out, const float *x, const float *w,
                        const float *dy, float *dx, float *dw, float *db) {
    if (T <= 0) {
        return;
    }
    if (dx)  // dx (T,in) = dy (T,out) · W (out,in)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)T, in, out, 1.0f, dy, out, w,
                    in, 0.0f, dx, in);
    if (dw)  // dW (out,in) += dy^T (out,T) · x (T,in)
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in, (int)T, 1.0f, dy, out, x,
                    in, 1.0f, dw, in);
    if (db)
        for (int64_t t = 0; t < T; t++)
            for (int32_t o = 0; o < out; o++) db[o] += dy[t * out + o];
}

// ---- norms ------------------------------------------------------------------------------------

void zg_layernorm_forward(int64_t T, int32_t C, const float *x, const float *w, const float *b,
                          float *y, float *mean, float *rstd) {
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < T; t++) {
        const float *xt = x + t * C;
        double m = 0, v = 0;
        for (int32_t i = 0; i < C; i++) m += xt[i];
        m /= C;
        for (int32_t i = 0; i < C; i++) v += (xt[i] - m) * (xt[i] - m);
        v /= C;
        float rs = (float)(1.0 / sqrt(v + 1e-6));
        mean[t] = (float)m;
        rstd[t] = rs;
        for (int32_t i = 0; i < C; i++) {
            float n = (xt[i] - (float)m) * rs;
            y[t * C + i] = n * (w ? w[i] : 1.0f) + (b ? b[i] : 0.0f);
        }
    }
}

void zg_layernorm_backward(int64_t T, int32_t C, const float *x, const float *w,
                           const float *mean, const float *rstd, const float *dy, float *dx,
                           float *dw, float *db) {
    // dw/db accumulate over tokens in a fixed order (serial) for determinism
    for (int64_t t = 0; t < T; t++) {
        const float *xt = x + t * C, *g = dy + t * C;
        double dsum = 0, dxsum = 0;
        for (int32_t i = 0; i < C; i++) {
            float n = (xt[i] - mean[t]) * rstd[t];
            float gn = g[i] * (w ? w[i] : 1.0f);
            dsum += gn;
            dxsum += gn * n;
            if (dw) dw[i] += g[i] * n;
            if (db) db[i] += g[i];
        }
        dsum /= C;
        dxsum /= C;
        for (int32_t i = 0; i < C; i++) {
            float n = (xt[i] - mean[t]) * rstd[t];
            float gn = g[i] * (w ? w[i] : 1.0f);
            dx[t * C + i] = (float)((gn - dsum - n * dxsum) * rstd[t]);
        }
    }
}

void zg_rmsnorm_forward(int64_t T, int32_t C, const float *x, const float *w, float *y,
                        float *rstd) {
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < T; t++) {
        const float *xt = x + t * C;
        double ss = 0;
        for (int32_t i = 0; i < C; i++) ss += (double)xt[i] * xt[i];
        float rs = (float)(1.0 / sqrt(ss / C + 1e-6));
        rstd[t] = rs;
        for (int32_t i = 0; i < C; i++) y[t * C + i] = xt[i] * rs * w[i];
    }
}

void zg_rmsnorm_backward(int64_t T, int32_t C, const float *x, const float *w, const float *rstd,
                         const float *dy, float *dx, float *dw) {
    for (int64_t t = 0; t < T; t++) {
        const float *xt = x + t * C, *g = dy + t * C;
        double dot = 0;
        for (int32_t i = 0; i < C; i++) {
            dot += (double)g[i] * w[i] * xt[i];
            if (dw) dw[i] += g[i] * xt[i] * rstd[t];
        }
        double r = rstd[t], c = dot * r * r * r / C;
        for (int32_t i = 0; i < C; i++) dx[t * C + i] = (float)(g[i] * w[i] * r - xt[i] * c);
    }
}

// ---- modulation -------------------------------------------------------------------------------

void zg_modulate_forward(int64_t T, int32_t C, const float *x, const int32_t *sample,
                         const float *mod, int32_t stride, int32_t shift_off, int32_t scale_off,
                         float *y) {
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < T; t++) {
        const float *m = mod + (int64_t)sample[t] * stride;
        for (int32_t i = 0; i < C; i++)
            y[t * C + i] = x[t * C + i] * (1.0f + m[scale_off + i]) + m[shift_off + i];
    }
}

void zg_modulate_backward(int64_t T, int32_t C, const float *x, const int32_t *sample,
                          const float *mod, int32_t stride, int32_t shift_off, int32_t scale_off,
                          const float *dy, float *dx, float *dmod) {
    for (int64_t t = 0; t < T; t++) {
        const float *m = mod + (int64_t)sample[t] * stride;
        float *dm = dmod + (int64_t)sample[t] * stride;
        for (int32_t i = 0; i < C; i++) {
            float g = dy[t * C + i];
            dx[t * C + i] = g * (1.0f + m[scale_off + i]);
            dm[scale_off + i] += g * x[t * C + i];
            dm[shift_off + i] += g;
        }
    }
}

void zg_gate_residual_forward(int64_t T, int32_t C, float *x, const float *y,
                              const int32_t *sample, const float *mod, int32_t stride,
                              int32_t gate_off) {
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < T; t++) {
        const float *g = mod + (int64_t)sample[t] * stride + gate_off;
        for (int32_t i = 0; i < C; i++) x[t * C + i] += y[t * C + i] * g[i];
    }
}

void zg_gate_residual_backward(int64_t T, int32_t C, const float *dx, const float *y,
                               const int32_t *sample, const float *mod, int32_t stride,
                               int32_t gate_off, float *dy, float *dmod) {
    for (int64_t t = 0; t < T; t++) {
        const float *g = mod + (int64_t)sample[t] * stride + gate_off;
        float *dg = dmod + (int64_t)sample[t] * stride + gate_off;
        for (int32_t i = 0; i < C; i++) {
            dy[t * C + i] = dx[t * C + i] * g[i];
            dg[i] += dx[t * C + i] * y[t * C + i];
        }
    }
}

// ---- activations ------------------------------------------------------------------------------

#define GELU_K 0.7978845608028654f  // sqrt(2/pi)

void zg_gelu_forward(int64_t n, const float *x, float *y) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        float v = x[i];
        y[i] = 0.5f * v * (1.0f + tanhf(GELU_K * (v + 0.044715f * v * v * v)));
    }
}

void zg_gelu_backward(int64_t n, const float *x, const float *dy, float *dx) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        float v = x[i];
        float u = GELU_K * (v + 0.044715f * v * v * v);
        float th = tanhf(u);
        float du = GELU_K * (1.0f + 3.0f * 0.044715f * v * v);
        dx[i] = dy[i] * (0.5f * (1.0f + th) + 0.5f * v * (1.0f - th * th) * du);
    }
}

void zg_silu_forward(int64_t n, const float *x, float *y) {
    for (int64_t i = 0; i < n; i++) y[i] = x[i] / (1.0f + expf(-x[i]));
}

void zg_silu_backward(int64_t n, const float *x, const float *dy, float *dx) {
    for (int64_t i = 0; i < n; i++) {
        float s = 1.0f / (1.0f + expf(-x[i]));
        dx[i] = dy[i] * s * (1.0f + x[i] * (1.0f - s));
    }
}

// ---- RoPE -------------------------------------------------------------------------------------

// Rotates pairs (2j, 2j+1) of each axis part by angle pos_axis * base^(-2j/part).
static void rope3d_apply(int64_t T, int32_t H, int32_t D, const int32_t *pos, float *x,
                         float sign) {
    int32_t s = D / 6;
    int32_t parts[3] = {D - 4 * s, 2 * s, 2 * s};
    if (parts[0] % 2) parts[0]--;  // odd D: the last element stays unrotated
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < T; t++) {
        for (int32_t h = 0; h < H; h++) {
            float *v = x + (t * H + h) * D;
            int32_t off = 0;
            for (int a = 0; a < 3; a++) {
                int32_t n = parts[a];
                for (int32_t j = 0; j + 1 < n; j += 2) {
                    double freq = pow(10000.0, -(double)j / n);
                    double ang = (double)pos[t * 3 + a] * freq;
                    float c = (float)cos(ang), sn = sign * (float)sin(ang);
                    float x0 = v[off + j], x1 = v[off + j + 1];
                    v[off + j] = x0 * c - x1 * sn;
                    v[off + j + 1] = x0 * sn + x1 * c;
                }
                off += n;
            }
        }
    }
}

void zg_rope3d_forward(int64_t T, int32_t H, int32_t D, const int32_t *pos, float *x) {
    rope3d_apply(T, H, D, pos, x, 1.0f);
}

void zg_rope3d_backward(int64_t T, int32_t H, int32_t D, const int32_t *pos, float *dx) {
    rope3d_apply(T, H, D, pos, dx, -1.0f);  // rotation is orthogonal: gradient rotates back
}

void zg_timestep_embedding(int32_t n, int32_t dim, const float *t, float *out) {
    int32_t half = dim / 2;
    for (int32_t s = 0; s < n; s++) {
        for (int32_t i = 0; i < half; i++) {
            double f = pow(10000.0, -(double)i / half);
            double a = (double)t[s] * 1000.0 * f;
            out[(int64_t)s * dim + i] = (float)cos(a);
            out[(int64_t)s * dim + half + i] = (float)sin(a);
        }
        if (dim % 2) out[(int64_t)s * dim + dim - 1] = 0.0f;
    }
}
