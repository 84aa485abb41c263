// attn_avx512.c — AVX-512F tile primitives, the AVX2 ones (attn_avx2.c) at 16 floats per
// vector: a 6x32 register-blocked GEMM micro-kernel (the AVX2 one's template,
// attn_simd_gemm.h, at 16 floats), an exp polynomial (2^n applied with vscalefps), and row
// helpers. Column counts only need to be multiples of 8 (the callers pad to 8, as for AVX2):
// a last partial vector uses masked loads/stores (_mm512_maskz_loadu_ps /
// _mm512_mask_storeu_ps), which never touch the masked-off lanes' memory, so no alignment or
// padding beyond the N columns is assumed; all loads/stores are unaligned. Compiled with
// per-function target attributes (the rest of the build stays plain -O2) and used only after
// __builtin_cpu_supports("avx512f") says yes (attn_ops.c).
#include <math.h>

#include "kernels/attn_internal.h"

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define ZG_AVX512 __attribute__((target("avx512f")))

// Lanes [0, n) set, for 1 <= n <= 16.
static inline __mmask16 lanes(int64_t n) {
    return (__mmask16)(n >= 16 ? 0xFFFFu : (1u << n) - 1u);
}

// kernel_6x32: C (6x32, stride ldc) (+)= sum_k A[k*sa_k + r*sa_m] * B[k*ldb + 0..31]
#define ZG_SIMD_KERNEL kernel_6x32
#define ZG_SIMD_ATTR ZG_AVX512
#define ZG_SIMD_VEC __m512
#define ZG_SIMD_W 16
#define ZG_SIMD_LOAD(p) _mm512_loadu_ps(p)
#define ZG_SIMD_STORE(p, x) _mm512_storeu_ps(p, x)
#define ZG_SIMD_ZERO() _mm512_setzero_ps()
#define ZG_SIMD_BCAST(p) _mm512_set1_ps(*(p))
#define ZG_SIMD_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#include "kernels/attn_simd_gemm.h"

// C (6 x nc, nc <= 16 columns, lanes m) (+)= ...: one (masked) vector per row.
ZG_AVX512 static void kernel_6x16m(int64_t K, const float *A, int64_t sa_k, int64_t sa_m,
                                   const float *B, int64_t ldb, float *C, int64_t ldc, int acc,
                                   __mmask16 m) {
    __m512 c0, c1, c2, c3, c4, c5;
    if (acc) {
        c0 = _mm512_maskz_loadu_ps(m, C + 0 * ldc), c1 = _mm512_maskz_loadu_ps(m, C + 1 * ldc);
        c2 = _mm512_maskz_loadu_ps(m, C + 2 * ldc), c3 = _mm512_maskz_loadu_ps(m, C + 3 * ldc);
        c4 = _mm512_maskz_loadu_ps(m, C + 4 * ldc), c5 = _mm512_maskz_loadu_ps(m, C + 5 * ldc);
    } else {
        c0 = c1 = c2 = c3 = c4 = c5 = _mm512_setzero_ps();
    }
    const float *a0 = A, *a1 = A + sa_m, *a2 = A + 2 * sa_m, *a3 = A + 3 * sa_m, *a4 = A + 4 * sa_m,
                *a5 = A + 5 * sa_m;
    for (int64_t k = 0; k < K; k++) {
        const int64_t o = k * sa_k;
        const __m512 b = _mm512_maskz_loadu_ps(m, B + k * ldb);
        c0 = _mm512_fmadd_ps(_mm512_set1_ps(a0[o]), b, c0);
        c1 = _mm512_fmadd_ps(_mm512_set1_ps(a1[o]), b, c1);
        c2 = _mm512_fmadd_ps(_mm512_set1_ps(a2[o]), b, c2);
        c3 = _mm512_fmadd_ps(_mm512_set1_ps(a3[o]), b, c3);
        c4 = _mm512_fmadd_ps(_mm512_set1_ps(a4[o]), b, c4);
        c5 = _mm512_fmadd_ps(_mm512_set1_ps(a5[o]), b, c5);
    }
    _mm512_mask_storeu_ps(C + 0 * ldc, m, c0), _mm512_mask_storeu_ps(C + 1 * ldc, m, c1);
    _mm512_mask_storeu_ps(C + 2 * ldc, m, c2), _mm512_mask_storeu_ps(C + 3 * ldc, m, c3);
    _mm512_mask_storeu_ps(C + 4 * ldc, m, c4), _mm512_mask_storeu_ps(C + 5 * ldc, m, c5);
}

// Edge tiles: mr <= 6 rows, nv (1 or 2) vectors of 16 columns, the last one with lanes `last`
// (the first, when nv == 2, is full).
ZG_AVX512 static void kernel_edge(int64_t mr, int nv, __mmask16 last, int64_t K, const float *A,
                                  int64_t sa_k, int64_t sa_m, const float *B, int64_t ldb,
                                  float *C, int64_t ldc, int acc) {
    __m512 c[6][2];
    const __mmask16 mk[2] = {nv == 2 ? (__mmask16)0xFFFFu : last, last};
    for (int64_t r = 0; r < mr; r++)
        for (int v = 0; v < nv; v++)
            c[r][v] =
                acc ? _mm512_maskz_loadu_ps(mk[v], C + r * ldc + 16 * v) : _mm512_setzero_ps();
    for (int64_t k = 0; k < K; k++) {
        __m512 b[2];
        for (int v = 0; v < nv; v++)
            b[v] = _mm512_maskz_loadu_ps(mk[v], B + k * ldb + 16 * v);
        for (int64_t r = 0; r < mr; r++) {
            __m512 a = _mm512_set1_ps(A[k * sa_k + r * sa_m]);
            for (int v = 0; v < nv; v++)
                c[r][v] = _mm512_fmadd_ps(a, b[v], c[r][v]);
        }
    }
    for (int64_t r = 0; r < mr; r++)
        for (int v = 0; v < nv; v++)
            _mm512_mask_storeu_ps(C + r * ldc + 16 * v, mk[v], c[r][v]);
}

ZG_AVX512 static void gemm_avx512(int64_t M, int64_t N, int64_t K, const float *A, int64_t sa_k,
                                  int64_t sa_m, const float *B, int64_t ldb, float *C,
                                  int64_t ldc, int acc) {
    // Rows outer: the 6 rows of A stay in L1 while all column strips of B pass by.
    for (int64_t m = 0; m < M; m += 6) {
        const int64_t mr = M - m < 6 ? M - m : 6;
        const float *a = A + m * sa_m;
        float *c = C + m * ldc;
        int64_t n = 0;
        for (; n + 32 <= N; n += 32) {
            if (mr == 6)
                kernel_6x32(K, a, sa_k, sa_m, B + n, ldb, c + n, ldc, acc);
            else
                kernel_edge(mr, 2, 0xFFFF, K, a, sa_k, sa_m, B + n, ldb, c + n, ldc, acc);
        }
        const int64_t rest = N - n; // 0..31 columns left
        if (rest > 16) {
            kernel_edge(mr, 2, lanes(rest - 16), K, a, sa_k, sa_m, B + n, ldb, c + n, ldc, acc);
        } else if (rest > 0) {
            if (mr == 6)
                kernel_6x16m(K, a, sa_k, sa_m, B + n, ldb, c + n, ldc, acc, lanes(rest));
            else
                kernel_edge(mr, 1, lanes(rest), K, a, sa_k, sa_m, B + n, ldb, c + n, ldc, acc);
        }
    }
}

// exp(x) for x in [-87.3, 88.7] (clamped outside); x <= -87.3 gives ~1e-38, not 0. n =
// round(x log2 e), r = x - n ln2 (ln2 in two parts), a degree-6 Taylor polynomial in r, and
// p * 2^n via vscalefps. (attn_avx2.c computes 2^x with its own polynomial, so the two paths'
// probabilities can differ in the last bits.)
ZG_AVX512 static inline __m512 exp16(__m512 x) {
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.3f)), _mm512_set1_ps(88.7f));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145752f), x); // ln2 high part
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860677e-6f), r);      // ln2 low part
    __m512 p = _mm512_set1_ps(1.0f / 720.0f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}

ZG_AVX512 static void col_max_avx512(const float *s, int64_t rows, int64_t cols, float scale,
                                     float *mx) {
    const __m512 sc = _mm512_set1_ps(scale);
    for (int64_t j = 0; j < rows; j++)
        for (int64_t i = 0; i < cols; i += 16) {
            const __mmask16 m = lanes(cols - i);
            const __m512 x = _mm512_mul_ps(sc, _mm512_maskz_loadu_ps(m, s + j * cols + i));
            _mm512_mask_storeu_ps(mx + i, m, _mm512_max_ps(_mm512_maskz_loadu_ps(m, mx + i), x));
        }
}

ZG_AVX512 static void col_exp_avx512(float *s, int64_t rows, int64_t cols, float scale,
                                     const float *sub, float *sum) {
    const __m512 sc = _mm512_set1_ps(scale);
    for (int64_t i = 0; i < cols; i += 16) { // 16 columns at a time, all rows
        const __mmask16 m = lanes(cols - i);
        const __m512 b = _mm512_sub_ps(_mm512_setzero_ps(), _mm512_maskz_loadu_ps(m, sub + i));
        __m512 acc = _mm512_maskz_loadu_ps(m, sum + i);
        for (int64_t j = 0; j < rows; j++) {
            __m512 e = exp16(_mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, s + j * cols + i), sc, b));
            _mm512_mask_storeu_ps(s + j * cols + i, m, e);
            acc = _mm512_add_ps(acc, e);
        }
        _mm512_mask_storeu_ps(sum + i, m, acc);
    }
}

ZG_AVX512 static void col_ds_avx512(const float *p, float *ds, int64_t rows, int64_t cols,
                                    const float *delta, float scale) {
    const __m512 sc = _mm512_set1_ps(scale);
    for (int64_t j = 0; j < rows; j++)
        for (int64_t i = 0; i < cols; i += 16) {
            const __mmask16 m = lanes(cols - i);
            __m512 x = _mm512_sub_ps(_mm512_maskz_loadu_ps(m, ds + j * cols + i),
                                     _mm512_maskz_loadu_ps(m, delta + i));
            __m512 sp = _mm512_mul_ps(sc, _mm512_maskz_loadu_ps(m, p + j * cols + i));
            _mm512_mask_storeu_ps(ds + j * cols + i, m, _mm512_mul_ps(sp, x));
        }
}

ZG_AVX512 static void row_scale_avx512(float *x, int64_t n, float a) {
    const __m512 s = _mm512_set1_ps(a);
    for (int64_t j = 0; j < n; j += 16) {
        const __mmask16 m = lanes(n - j);
        _mm512_mask_storeu_ps(x + j, m, _mm512_mul_ps(s, _mm512_maskz_loadu_ps(m, x + j)));
    }
}

ZG_AVX512 static float dot_avx512(const float *a, const float *b, int64_t n) {
    __m512 acc = _mm512_setzero_ps();
    for (int64_t j = 0; j < n; j += 16) {
        const __mmask16 m = lanes(n - j); // masked-off lanes load 0 and add 0
        acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + j), _mm512_maskz_loadu_ps(m, b + j),
                              acc);
    }
    return _mm512_reduce_add_ps(acc);
}

const zg_attn_ops zg_attn_ops_avx512 = {"avx512",      gemm_avx512,      col_max_avx512,
                                        col_exp_avx512, col_ds_avx512,   row_scale_avx512,
                                        dot_avx512};

#else
const zg_attn_ops zg_attn_ops_avx512 = {NULL, NULL, NULL, NULL, NULL, NULL, NULL};
#endif
