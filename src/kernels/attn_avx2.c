// attn_avx2.c — AVX2+FMA tile primitives: a 6x16 register-blocked GEMM micro-kernel (12 ymm
// accumulators, 2 loads + 6 broadcasts per 12 FMAs; attn_simd_gemm.h), a vectorized exp (computed
// as 2^x: rounding by a magic-number add, degree-5 polynomial, |rel err| < 3e-7), and row helpers.
// Compiled with per-function target attributes so the rest of the build stays plain -O2; used
// only after __builtin_cpu_supports("avx2") and ("fma") say yes (attn_ops.c).
#include <math.h>

#include "kernels/attn_internal.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define ZG_AVX2 __attribute__((target("avx2,fma")))

// kernel_6x16: C (6x16, stride ldc) (+)= sum_k A[k*sa_k + r*sa_m] * B[k*ldb + 0..15]
#define ZG_SIMD_KERNEL kernel_6x16
#define ZG_SIMD_ATTR ZG_AVX2
#define ZG_SIMD_VEC __m256
#define ZG_SIMD_W 8
#define ZG_SIMD_LOAD(p) _mm256_loadu_ps(p)
#define ZG_SIMD_STORE(p, x) _mm256_storeu_ps(p, x)
#define ZG_SIMD_ZERO() _mm256_setzero_ps()
#define ZG_SIMD_BCAST(p) _mm256_broadcast_ss(p)
#define ZG_SIMD_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#include "kernels/attn_simd_gemm.h"

// Edge tiles: mr <= 6 rows, nv (1 or 2) vectors of 8 columns.
ZG_AVX2 static void kernel_edge(int64_t mr, int nv, int64_t K, const float *A, int64_t sa_k,
                                int64_t sa_m, const float *B, int64_t ldb, float *C, int64_t ldc,
                                int acc) {
    __m256 c[6][2];
    for (int64_t r = 0; r < mr; r++)
        for (int v = 0; v < nv; v++)
            c[r][v] = acc ? _mm256_loadu_ps(C + r * ldc + 8 * v) : _mm256_setzero_ps();
    for (int64_t k = 0; k < K; k++) {
        __m256 b[2];
        for (int v = 0; v < nv; v++)
            b[v] = _mm256_loadu_ps(B + k * ldb + 8 * v);
        for (int64_t r = 0; r < mr; r++) {
            __m256 a = _mm256_broadcast_ss(A + k * sa_k + r * sa_m);
            for (int v = 0; v < nv; v++)
                c[r][v] = _mm256_fmadd_ps(a, b[v], c[r][v]);
        }
    }
    for (int64_t r = 0; r < mr; r++)
        for (int v = 0; v < nv; v++)
            _mm256_storeu_ps(C + r * ldc + 8 * v, c[r][v]);
}

ZG_AVX2 static void gemm_avx2(int64_t M, int64_t N, int64_t K, const float *A, int64_t sa_k,
                              int64_t sa_m, const float *B, int64_t ldb, float *C, int64_t ldc,
                              int acc) {
    // Rows outer: the 6 rows of A stay in L1 while all column strips of B pass by.
    for (int64_t m = 0; m < M; m += 6) {
        const int64_t mr = M - m < 6 ? M - m : 6;
        const float *a = A + m * sa_m;
        float *c = C + m * ldc;
        int64_t n = 0;
        for (; n + 16 <= N; n += 16) {
            if (mr == 6)
                kernel_6x16(K, a, sa_k, sa_m, B + n, ldb, c + n, ldc, acc);
            else
                kernel_edge(mr, 2, K, a, sa_k, sa_m, B + n, ldb, c + n, ldc, acc);
        }
        for (; n < N; n += 8)
            kernel_edge(mr, 1, K, a, sa_k, sa_m, B + n, ldb, c + n, ldc, acc);
    }
}

// 2^x for x in [-126, 127] (clamped outside; x <= -126 gives 2^-126, not 0). n = round(x) comes
// from adding 1.5*2^23 + 127: the float's low mantissa bits are then n + 127, which shifted into
// the exponent field give 2^n with no round/convert instructions. 2^(x-n), |x-n| <= 1/2, is a
// degree-5 polynomial (Chebyshev fit, |rel err| < 3e-7 in float arithmetic).
ZG_AVX2 static inline __m256 exp2_8(__m256 x) {
    const __m256 magic = _mm256_set1_ps(12583039.0f); // 1.5*2^23 + 127
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-126.0f)), _mm256_set1_ps(127.0f));
    const __m256 t = _mm256_add_ps(x, magic);
    const __m256 r = _mm256_sub_ps(x, _mm256_sub_ps(t, magic));
    __m256 p = _mm256_set1_ps(1.34004327e-3f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(9.67603736e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.55032715e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(2.40221068e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(6.93147182e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.00000012f));
    const __m256i e = _mm256_slli_epi32(_mm256_castps_si256(t), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

ZG_AVX2 static inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

ZG_AVX2 static void col_max_avx2(const float *s, int64_t rows, int64_t cols, float scale,
                                 float *mx) {
    // max is exact, so any grouping gives the same bits: 4 rows per pass over mx, the running
    // maxima in memory touched a quarter as often.
    const __m256 sc = _mm256_set1_ps(scale);
    int64_t j = 0;
    for (; j + 4 <= rows; j += 4) {
        const float *s0 = s + j * cols;
        for (int64_t i = 0; i < cols; i += 8) {
            __m256 a = _mm256_max_ps(_mm256_mul_ps(sc, _mm256_loadu_ps(s0 + i)),
                                     _mm256_mul_ps(sc, _mm256_loadu_ps(s0 + cols + i)));
            __m256 b = _mm256_max_ps(_mm256_mul_ps(sc, _mm256_loadu_ps(s0 + 2 * cols + i)),
                                     _mm256_mul_ps(sc, _mm256_loadu_ps(s0 + 3 * cols + i)));
            _mm256_storeu_ps(mx + i, _mm256_max_ps(_mm256_loadu_ps(mx + i), _mm256_max_ps(a, b)));
        }
    }
    for (; j < rows; j++)
        for (int64_t i = 0; i < cols; i += 8)
            _mm256_storeu_ps(mx + i,
                             _mm256_max_ps(_mm256_loadu_ps(mx + i),
                                           _mm256_mul_ps(sc, _mm256_loadu_ps(s + j * cols + i))));
}

ZG_AVX2 static void col_exp_avx2(float *s, int64_t rows, int64_t cols, float scale,
                                 const float *sub, float *sum) {
    // exp(x) = 2^(x*log2(e)) with x = scale*s - sub rounded once (an FMA), so a score next to
    // the running max keeps full precision (folding log2(e) into the FMA would round
    // sub*log2(e) first: up to 1e-6 relative error exactly where probabilities are largest).
    const __m256 sc = _mm256_set1_ps(scale), log2e = _mm256_set1_ps(1.44269504f);
    for (int64_t i = 0; i < cols; i += 8) { // 8 columns at a time, all rows
        const __m256 b = _mm256_sub_ps(_mm256_setzero_ps(), _mm256_loadu_ps(sub + i));
        __m256 acc = _mm256_loadu_ps(sum + i);
        for (int64_t j = 0; j < rows; j++) {
            const __m256 x = _mm256_fmadd_ps(_mm256_loadu_ps(s + j * cols + i), sc, b);
            const __m256 e = exp2_8(_mm256_mul_ps(x, log2e));
            _mm256_storeu_ps(s + j * cols + i, e);
            acc = _mm256_add_ps(acc, e);
        }
        _mm256_storeu_ps(sum + i, acc);
    }
}

ZG_AVX2 static void col_ds_avx2(const float *p, float *ds, int64_t rows, int64_t cols,
                                const float *delta, float scale) {
    const __m256 sc = _mm256_set1_ps(scale);
    for (int64_t j = 0; j < rows; j++)
        for (int64_t i = 0; i < cols; i += 8) {
            __m256 x =
                _mm256_sub_ps(_mm256_loadu_ps(ds + j * cols + i), _mm256_loadu_ps(delta + i));
            __m256 sp = _mm256_mul_ps(sc, _mm256_loadu_ps(p + j * cols + i));
            _mm256_storeu_ps(ds + j * cols + i, _mm256_mul_ps(sp, x));
        }
}

ZG_AVX2 static void row_scale_avx2(float *x, int64_t n, float a) {
    __m256 s = _mm256_set1_ps(a);
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        _mm256_storeu_ps(x + j, _mm256_mul_ps(s, _mm256_loadu_ps(x + j)));
    for (; j < n; j++)
        x[j] *= a;
}

ZG_AVX2 static float dot_avx2(const float *a, const float *b, int64_t n) {
    __m256 acc = _mm256_setzero_ps();
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + j), _mm256_loadu_ps(b + j), acc);
    float s = hsum8(acc);
    for (; j < n; j++)
        s += a[j] * b[j];
    return s;
}

const zg_attn_ops zg_attn_ops_avx2 = {"avx2",      gemm_avx2,      col_max_avx2, col_exp_avx2,
                                      col_ds_avx2, row_scale_avx2, dot_avx2};
#else
const zg_attn_ops zg_attn_ops_avx2 = {NULL, NULL, NULL, NULL, NULL, NULL, NULL};
#endif
