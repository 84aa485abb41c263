// attn_scalar.c — plain C tile primitives (the fallback on CPUs without AVX2/FMA, and for head
// dims that are not a multiple of 8). Same contracts as the AVX2 table.
#include <math.h>

#include "kernels/attn_internal.h"

static void gemm_scalar(int64_t M, int64_t N, int64_t K, const float *A, int64_t sa_k, int64_t sa_m,
                        const float *B, int64_t ldb, float *C, int64_t ldc, int acc) {
    for (int64_t m = 0; m < M; m++) {
        float *c = C + m * ldc; // c is (N,)
        if (!acc)
            for (int64_t n = 0; n < N; n++)
                c[n] = 0.0f;
        for (int64_t k = 0; k < K; k++) {
            float a = A[k * sa_k + m * sa_m];
            const float *b = B + k * ldb; // b is (N,)
            for (int64_t n = 0; n < N; n++)
                c[n] += a * b[n];
        }
    }
}

static void col_max_scalar(const float *s, int64_t rows, int64_t cols, float scale, float *mx) {
    for (int64_t j = 0; j < rows; j++)
        for (int64_t i = 0; i < cols; i++)
            if (scale * s[j * cols + i] > mx[i]) mx[i] = scale * s[j * cols + i];
}

static void col_exp_scalar(float *s, int64_t rows, int64_t cols, float scale, const float *sub,
                           float *sum) {
    for (int64_t j = 0; j < rows; j++)
        for (int64_t i = 0; i < cols; i++)
            sum[i] += s[j * cols + i] = expf(scale * s[j * cols + i] - sub[i]);
}

static void col_ds_scalar(const float *p, float *ds, int64_t rows, int64_t cols, const float *delta,
                          float scale) {
    for (int64_t j = 0; j < rows; j++)
        for (int64_t i = 0; i < cols; i++)
            ds[j * cols + i] = scale * p[j * cols + i] * (ds[j * cols + i] - delta[i]);
}

static void row_scale_scalar(float *x, int64_t n, float a) {
    for (int64_t j = 0; j < n; j++)
        x[j] *= a;
}

static float dot_scalar(const float *a, const float *b, int64_t n) {
    float s = 0.0f;
    for (int64_t j = 0; j < n; j++)
        s += a[j] * b[j];
    return s;
}

const zg_attn_ops zg_attn_ops_scalar = {"scalar",       gemm_scalar,   col_max_scalar,
                                        col_exp_scalar, col_ds_scalar, row_scale_scalar,
                                        dot_scalar};
