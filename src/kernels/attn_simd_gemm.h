// attn_simd_gemm.h — the 6-row x 2-vector register-blocked GEMM micro-kernel, written once for
// every SIMD width. Included by attn_avx2.c and attn_avx512.c (not a public header), each after
// defining, for its instruction set:
//   ZG_SIMD_KERNEL          the function's name
//   ZG_SIMD_ATTR            its target attribute
//   ZG_SIMD_VEC, ZG_SIMD_W  the vector type and its width in floats
//   ZG_SIMD_LOAD(p), ZG_SIMD_STORE(p, x), ZG_SIMD_ZERO()   unaligned load/store, zero vector
//   ZG_SIMD_BCAST(p)        *p in every lane
//   ZG_SIMD_FMA(a, b, c)    a * b + c, fused
// 12 accumulators (6 rows x 2 vectors), 2 loads + 6 broadcasts per 12 FMAs. The loops over
// rows and vectors are fully unrolled, so the accumulators live in registers, and the kernel is
// always inlined into its GEMM driver; each C element accumulates over k in order, one FMA per k.

// C (6 x 2W, stride ldc) (+)= sum_k A[k*sa_k + r*sa_m] * B[k*ldb + 0..2W-1]
ZG_SIMD_ATTR __attribute__((always_inline)) static inline void
ZG_SIMD_KERNEL(int64_t K, const float *A, int64_t sa_k, int64_t sa_m, const float *B, int64_t ldb,
               float *C, int64_t ldc, int acc) {
    ZG_SIMD_VEC c[6][2];
#pragma GCC unroll 6
    for (int r = 0; r < 6; r++)
#pragma GCC unroll 2
        for (int v = 0; v < 2; v++)
            c[r][v] = acc ? ZG_SIMD_LOAD(C + r * ldc + v * ZG_SIMD_W) : ZG_SIMD_ZERO();
    for (int64_t k = 0; k < K; k++) {
        const float *a = A + k * sa_k, *b = B + k * ldb;
        const ZG_SIMD_VEC b0 = ZG_SIMD_LOAD(b), b1 = ZG_SIMD_LOAD(b + ZG_SIMD_W);
#pragma GCC unroll 6
        for (int r = 0; r < 6; r++) {
            const ZG_SIMD_VEC x = ZG_SIMD_BCAST(a + r * sa_m);
            c[r][0] = ZG_SIMD_FMA(x, b0, c[r][0]), c[r][1] = ZG_SIMD_FMA(x, b1, c[r][1]);
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < 6; r++)
#pragma GCC unroll 2
        for (int v = 0; v < 2; v++)
            ZG_SIMD_STORE(C + r * ldc + v * ZG_SIMD_W, c[r][v]);
}

#undef ZG_SIMD_KERNEL
#undef ZG_SIMD_ATTR
#undef ZG_SIMD_VEC
#undef ZG_SIMD_W
#undef ZG_SIMD_LOAD
#undef ZG_SIMD_STORE
#undef ZG_SIMD_ZERO
#undef ZG_SIMD_BCAST
#undef ZG_SIMD_FMA
