// test_attn_ops.c — the tile primitives of every ISA this CPU runs, against double math: the
// vectorized exp of col_exp (relative error, underflow end, the running sums), col_max (exact:
// same bits as the plain loop, any row count), and the property the forward's GEMM blocking
// relies on: splitting a GEMM into column chunks or accumulated key chunks gives the same bits
// as one call.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/attn_internal.h"
#include "zgtest.h"

static const int g_isas[] = {ZG_ATTN_ISA_SCALAR, ZG_ATTN_ISA_AVX2, ZG_ATTN_ISA_AVX512};

// The table for isa, or NULL when this CPU lacks it.
static const zg_attn_ops *ops_for(int isa) {
    const zg_attn_ops *ops = NULL;
    zg_error err = {0};
    if (!zg_attn_isa_supported(isa)) return NULL;
    return zg_attn_ops_pick(isa, 64, &ops, &err) == ZG_OK ? ops : NULL;
}

static float frand(uint64_t *s) { // uniform in [-1, 1)
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((double)(*s >> 40) / (double)(1ULL << 23) - 1.0);
}

ZG_TEST(col_exp_matches_double_exp) {
    enum { ROWS = 37, COLS = 24 };
    for (size_t t = 0; t < sizeof g_isas / sizeof g_isas[0]; t++) {
        const zg_attn_ops *ops = ops_for(g_isas[t]);
        if (!ops) continue;
        float s[ROWS * COLS], sub[COLS], sum[COLS];
        const float scale = 0.37f;
        uint64_t seed = 7;
        // Arguments from about -58 to +55, half of them within 6 of zero, plus the underflow end.
        for (int i = 0; i < ROWS * COLS; i++)
            s[i] = (i % 2 ? 150.0f : 15.0f) * frand(&seed);
        for (int i = 0; i < COLS; i++)
            sub[i] = 0.1f * (float)i, sum[i] = 1.0f;
        s[0] = 0.0f, s[1] = -400.0f, s[2] = -240.0f; // exp(0), 2 underflows
        float in[ROWS * COLS];
        memcpy(in, s, sizeof in);
        ops->col_exp(s, ROWS, COLS, scale, sub, sum);
        double worst = 0.0, worst_near0 = 0.0;
        for (int i = 0; i < COLS; i++) {
            double ref_sum = 1.0;
            for (int j = 0; j < ROWS; j++) {
                const double x = (double)scale * (double)in[j * COLS + i] - (double)sub[i];
                const double e = exp(x), got = s[j * COLS + i];
                ref_sum += e;
                CHECK_MSG(got >= 0.0 && isfinite(got), "%s: exp(%g) = %g", ops->isa, x, got);
                if (x > -87.0) {
                    const double rel = fabs(got - e) / e;
                    worst = rel > worst ? rel : worst;
                    if (fabs(x) <= 4.0) worst_near0 = rel > worst_near0 ? rel : worst_near0;
                } else {
                    CHECK_MSG(got < 1e-37, "%s: exp(%g) = %g, want ~0", ops->isa, x, got);
                }
            }
            CHECK_NEAR(sum[i], ref_sum, 0.0, 1e-5);
        }
        // Near 0: the polynomial and a few ulps of argument rounding. Far out, rounding the
        // argument to float (|x| * 6e-8 absolute) dominates for any exp.
        CHECK_MSG(worst_near0 < 1.5e-6, "%s: exp relative error %.3g near 0", ops->isa,
                  worst_near0);
        CHECK_MSG(worst < 2e-5, "%s: exp relative error %.3g", ops->isa, worst);
    }
}

ZG_TEST(col_max_is_exact) {
    const int cols = 40;
    for (size_t t = 0; t < sizeof g_isas / sizeof g_isas[0]; t++) {
        const zg_attn_ops *ops = ops_for(g_isas[t]);
        if (!ops) continue;
        for (int rows = 1; rows <= 11; rows++) {
            float s[11 * 40], mx[40], want[40];
            uint64_t seed = (uint64_t)rows;
            for (int i = 0; i < rows * cols; i++)
                s[i] = 5.0f * frand(&seed);
            for (int i = 0; i < cols; i++)
                mx[i] = want[i] = (i % 3 == 0) ? -INFINITY : 0.5f * frand(&seed);
            const float scale = rows % 2 ? 0.125f : -0.7f; // negative scales flip the order
            for (int j = 0; j < rows; j++)
                for (int i = 0; i < cols; i++)
                    want[i] = fmaxf(want[i], scale * s[j * cols + i]);
            ops->col_max(s, rows, cols, scale, mx);
            CHECK_MSG(memcmp(mx, want, sizeof mx) == 0, "%s: col_max differs at %d rows", ops->isa,
                      rows);
        }
    }
}

// The forward splits S^T = K Q^T into column chunks and acc += P^T V into key chunks.
ZG_TEST(gemm_chunks_are_bit_identical) {
    enum { M = 20, N = 48, K = 70 };
    for (size_t t = 0; t < sizeof g_isas / sizeof g_isas[0]; t++) {
        const zg_attn_ops *ops = ops_for(g_isas[t]);
        if (!ops) continue;
        float a[K * M], b[K * N], c1[M * N], c2[M * N];
        uint64_t seed = 99;
        for (int i = 0; i < K * M; i++)
            a[i] = frand(&seed);
        for (int i = 0; i < K * N; i++)
            b[i] = frand(&seed);
        // Columns: A read as rows (sa_k = 1, sa_m = K).
        ops->gemm(M, N, K, a, 1, K, b, N, c1, N, 0);
        for (int n0 = 0; n0 < N; n0 += 16)
            ops->gemm(M, 16, K, a, 1, K, b + n0, N, c2 + n0, N, 0);
        CHECK_MSG(memcmp(c1, c2, sizeof c1) == 0, "%s: column chunks differ", ops->isa);
        // Keys: A read as columns (sa_k = M, sa_m = 1), accumulated in chunks of 16 (last 6).
        for (int i = 0; i < M * N; i++)
            c1[i] = c2[i] = frand(&seed);
        ops->gemm(M, N, K, a, M, 1, b, N, c1, N, 1);
        for (int k0 = 0; k0 < K; k0 += 16) {
            const int kn = K - k0 < 16 ? K - k0 : 16;
            ops->gemm(M, N, kn, a + k0 * M, M, 1, b + k0 * N, N, c2, N, 1);
        }
        CHECK_MSG(memcmp(c1, c2, sizeof c1) == 0, "%s: key chunks differ", ops->isa);
    }
}

ZG_TEST_MAIN()
