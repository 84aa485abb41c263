// attn_bwd_tc.cu — tensor-core attention backward over a slice list (FlashAttention-2 recompute
// from O and LSE), bf16/fp16 inputs, fp32 accumulation, fp32 dQ/dK/dV accumulated in place.
//
// FA2 adds dQ with atomics from key-major blocks: not deterministic, and racy when slices share
// keys. Here, as in the CPU kernels' two-pass plan, every output row is owned by one block:
//   delta kernel: delta = rowsum(dO * O) per (query row, head)              (O(T H D))
//   dK/dV kernel: block = 64 keys of one slice x head; loops over the slice's queries in blocks
//                 of BQ: S^T = K Q^T, P^T = exp2(S^T - lse), dP^T = V dO^T, dS^T = P^T (dP^T -
//                 delta), dV += P^T dO, dK += dS^T Q                       (4 GEMMs per tile)
//   dQ kernel:    block = 64 queries of one slice x head; loops over the slice's keys:
//                 S = Q K^T, P, dP = dO V^T, dS, dQ += dS K                 (3 GEMMs per tile)
// Each block adds its result to dQ (or dK, dV) with a plain read-modify-write of rows it owns;
// the host launches the slices in layers with pairwise disjoint row ranges (attn_cuda.c), so
// results are deterministic and slices sharing keys or queries add up in a fixed order.
#include "kernels/cuda/cuda_common.cuh"

namespace zgcu {

constexpr int BW_NT = 128; // threads (4 warps x 16 rows)

// ---------------------------------------------------------------------------------------------
// delta[row, h] = sum_d dO[row, h, d] * O[row, h, d]; one warp per row, tiles of 64 rows.
template <typename T> __global__ void __launch_bounds__(BW_NT) attn_bwd_delta_kernel(zg_cu_args p) {
    const zg_cu_tile tile = p.tiles[blockIdx.x];
    const zg_cu_slice s = p.slices[tile.slice];
    const int h = blockIdx.y, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int rows = (int)min((int64_t)ZG_CU_TC_BM, s.q_len - tile.r0);
    const int64_t ld = (int64_t)p.H * p.D;
    for (int r = warp; r < rows; r += BW_NT / 32) {
        const int64_t row = s.q_start + tile.r0 + r;
        const T *dO = static_cast<const T *>(p.dout) + row * ld + (int64_t)h * p.D; // (D,)
        const float *O = p.o + row * ld + (int64_t)h * p.D;                         // (D,)
        float acc = 0.0f;
        for (int d = lane; d < p.D; d += 32)
            acc += to_f32(dO[d]) * O[d];
        acc = warp_sum(acc);
        if (lane == 0) p.delta[row * p.H + h] = acc;
    }
}

// log2-domain LSE of a query row for P = exp2(s * scale * log2e - lse2): +inf for rows that saw
// no keys at all (LSE = -inf: no gradient) and for rows past the tile's end, so P = 0 there.
__device__ __forceinline__ float lse2_of(const float *lse, int64_t row, int H, int h, bool ok) {
    if (!ok) return INFINITY;
    float l = lse[row * H + h];
    return l == -INFINITY ? INFINITY : l * LOG2E;
}

// x = A1 B1^T and y = A2 B2^T, N columns each, for this warp's 16 rows of the swizzled (., D)
// tiles sA1, sA2 (A-fragment row arow, column offset acol) against the N rows of sB1, sB2:
// S = Q K^T with dP = dO V^T (dQ kernel), S^T = K Q^T with dP^T = V dO^T (dK/dV kernel).
template <typename T, int D, int N>
__device__ __forceinline__ void mma_abt2(float (*x)[4], float (*y)[4], const T *sA1, const T *sA2,
                                         const T *sB1, const T *sB2, int arow, int acol, int lane) {
    for (int i = 0; i < N / 8; i++)
        for (int c = 0; c < 4; c++)
            x[i][c] = y[i][c] = 0.0f;
    for (int kk = 0; kk < D / 16; kk++) {
        uint32_t a1[4], a2[4];
        ldmatrix_x4(a1, sA1 + swz<D>(arow, kk * 16 + acol));
        ldmatrix_x4(a2, sA2 + swz<D>(arow, kk * 16 + acol));
        for (int np = 0; np < N / 16; np++) {
            uint32_t b[4];
            const int br = np * 16 + (lane & 7) + (lane >> 4) * 8;
            const int col = kk * 16 + ((lane >> 3) & 1) * 8;
            ldmatrix_x4(b, sB1 + swz<D>(br, col));
            mma16816x2<T>(x + 2 * np, a1, b);
            ldmatrix_x4(b, sB2 + swz<D>(br, col));
            mma16816x2<T>(y + 2 * np, a2, b);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// dQ: block = (64 query rows of a slice, head); K/V blocks of 64 keys double-buffered.
constexpr int DQ_BM = ZG_CU_TC_BM, DQ_BN = 64;

template <int D> constexpr int dq_smem_bytes() {
    return (2 * DQ_BM * D + 4 * DQ_BN * D) * 2; // Q, dO, 2 x (K, V)
}

template <typename T, int D>
__global__ void __launch_bounds__(BW_NT) attn_bwd_dq_kernel(zg_cu_args p) {
    extern __shared__ __align__(128) unsigned char smem_raw[];
    T *sQ = reinterpret_cast<T *>(smem_raw); // sQ is (BM, D), swizzled
    T *sdO = sQ + DQ_BM * D;                 // sdO is (BM, D)
    T *sK = sdO + DQ_BM * D;                 // sK is 2 x (BN, D)
    T *sV = sK + 2 * DQ_BN * D;              // sV is 2 x (BN, D)

    const zg_cu_tile tile = p.tiles[blockIdx.x];
    const zg_cu_slice s = p.slices[tile.slice];
    const int h = blockIdx.y;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int g = lane >> 2, t = lane & 3;
    const int64_t ld = (int64_t)p.H * D;
    const int qrows = (int)min((int64_t)DQ_BM, s.q_len - tile.r0);
    const int64_t q0 = s.q_start + tile.r0;
    if (s.k_len == 0) return; // (the host drops such slices; nothing to add)

    const T *gQ = static_cast<const T *>(p.q) + q0 * ld + (int64_t)h * D;        // (qrows, D)
    const T *gdO = static_cast<const T *>(p.dout) + q0 * ld + (int64_t)h * D;    // (qrows, D)
    const T *gK = static_cast<const T *>(p.k) + s.k_start * ld + (int64_t)h * D; // (k_len, D)
    const T *gV = static_cast<const T *>(p.v) + s.k_start * ld + (int64_t)h * D; // (k_len, D)
    float *gdQ = p.dq + q0 * ld + (int64_t)h * D; // gdQ is (qrows, D), stride ld

    load_tile_async<T, D, DQ_BM, BW_NT>(sQ, gQ, ld, qrows, tid);
    load_tile_async<T, D, DQ_BM, BW_NT>(sdO, gdO, ld, qrows, tid);
    cp_async_commit();
    const int n_kb = (int)((s.k_len + DQ_BN - 1) / DQ_BN);
    auto load_kv = [&](int buf, int kb) {
        load_pair_async<T, D, DQ_BN, BW_NT>(sK, sV, gK, gV, ld, s.k_len, buf, kb, tid);
    };
    load_kv(0, 0);
    cp_async_commit();

    // per-row constants of rows g and g + 8 of this warp
    float lse2[2], dlt[2];
    for (int hr = 0; hr < 2; hr++) {
        const int r = warp * 16 + g + hr * 8;
        const bool ok = r < qrows;
        lse2[hr] = lse2_of(p.lse, q0 + r, p.H, h, ok);
        dlt[hr] = ok ? p.delta[(q0 + r) * p.H + h] : 0.0f;
    }
    const float sl2 = p.scale * LOG2E;
    float dqacc[D / 8][4];
    for (int i = 0; i < D / 8; i++)
        dqacc[i][0] = dqacc[i][1] = dqacc[i][2] = dqacc[i][3] = 0.0f;
    const int arow = warp * 16 + (lane & 7) + ((lane >> 3) & 1) * 8; // A-fragment row address
    const int acol = (lane >> 4) * 8;

    for (int kb = 0; kb < n_kb; kb++) {
        const int buf = kb & 1;
        prefetch_next_wait(load_kv, kb, n_kb);
        const T *cK = sK + buf * DQ_BN * D; // (BN, D)
        const T *cV = sV + buf * DQ_BN * D; // (BN, D)

        // S = Q K^T and dP = dO V^T: 16 rows x 64 keys each
        float sacc[DQ_BN / 8][4], pacc[DQ_BN / 8][4];
        mma_abt2<T, D, DQ_BN>(sacc, pacc, sQ, sdO, cK, cV, arow, acol, lane);
        // P = exp2(S sl2 - lse2) (0 for keys past k_len), dS = P (dP - delta), kept in sacc
        const int64_t j0 = (int64_t)kb * DQ_BN;
        for (int nt = 0; nt < DQ_BN / 8; nt++)
            for (int c = 0; c < 4; c++) {
                const int hr = c >> 1;
                const bool key_ok = j0 + nt * 8 + 2 * t + (c & 1) < s.k_len;
                const float pr = key_ok ? exp2f(sacc[nt][c] * sl2 - lse2[hr]) : 0.0f;
                sacc[nt][c] = pr * (pacc[nt][c] - dlt[hr]);
            }
        // dQ += dS K: dS (16 x 64) from registers, K (64 x D) via ldmatrix.trans
        mma_acc_px<T, D, DQ_BN>(dqacc, sacc, cK, lane);
        __syncthreads();
    }
    // dQ += scale * acc (rows this block owns)
    for (int hr = 0; hr < 2; hr++) {
        const int row = warp * 16 + g + hr * 8;
        if (row >= qrows) continue;
        float *dst = gdQ + (int64_t)row * ld;
        for (int dn = 0; dn < D / 8; dn++) {
            float2 *d2 = reinterpret_cast<float2 *>(dst + dn * 8 + 2 * t);
            float2 v = *d2;
            v.x += p.scale * dqacc[dn][2 * hr];
            v.y += p.scale * dqacc[dn][2 * hr + 1];
            *d2 = v;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// dK/dV: block = (64 key rows of a slice, head); query blocks of BQ rows double-buffered.
// BQ = 64 at D = 64, 32 at D = 128 (two fp32 accumulators of 16 x D per warp already hold
// 2 D / 4 registers per thread).
constexpr int KV_BN = ZG_CU_TC_BN;
template <int D> struct kv_cfg { static constexpr int BQ = D <= 64 ? 64 : 32; };
template <int D> constexpr int kv_smem_bytes() {
    return (2 * KV_BN * D + 4 * kv_cfg<D>::BQ * D) * 2; // K, V, 2 x (Q, dO)
}

template <typename T, int D>
__global__ void __launch_bounds__(BW_NT) attn_bwd_dkdv_kernel(zg_cu_args p) {
    constexpr int BQ = kv_cfg<D>::BQ;
    extern __shared__ __align__(128) unsigned char smem_raw[];
    T *sK = reinterpret_cast<T *>(smem_raw); // sK is (BN, D), swizzled
    T *sV = sK + KV_BN * D;                  // sV is (BN, D)
    T *sQ = sV + KV_BN * D;                  // sQ is 2 x (BQ, D)
    T *sdO = sQ + 2 * BQ * D;                // sdO is 2 x (BQ, D)

    const zg_cu_tile tile = p.tiles[blockIdx.x];
    const zg_cu_slice s = p.slices[tile.slice];
    const int h = blockIdx.y;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int g = lane >> 2, t = lane & 3;
    const int64_t ld = (int64_t)p.H * D;
    const int krows = (int)min((int64_t)KV_BN, s.k_len - tile.r0);
    const int64_t k0 = s.k_start + tile.r0;
    if (s.q_len == 0) return;

    const T *gK = static_cast<const T *>(p.k) + k0 * ld + (int64_t)h * D;            // (krows, D)
    const T *gV = static_cast<const T *>(p.v) + k0 * ld + (int64_t)h * D;            // (krows, D)
    const T *gQ = static_cast<const T *>(p.q) + s.q_start * ld + (int64_t)h * D;     // (q_len, D)
    const T *gdO = static_cast<const T *>(p.dout) + s.q_start * ld + (int64_t)h * D; // (q_len, D)
    float *gdK = p.dk + k0 * ld + (int64_t)h * D; // gdK is (krows, D), stride ld
    float *gdV = p.dv + k0 * ld + (int64_t)h * D; // gdV is (krows, D), stride ld

    load_tile_async<T, D, KV_BN, BW_NT>(sK, gK, ld, krows, tid);
    load_tile_async<T, D, KV_BN, BW_NT>(sV, gV, ld, krows, tid);
    cp_async_commit();
    const int n_qb = (int)((s.q_len + BQ - 1) / BQ);
    auto load_q = [&](int buf, int qb) {
        load_pair_async<T, D, BQ, BW_NT>(sQ, sdO, gQ, gdO, ld, s.q_len, buf, qb, tid);
    };
    load_q(0, 0);
    cp_async_commit();

    const float sl2 = p.scale * LOG2E;
    float dkacc[D / 8][4], dvacc[D / 8][4]; // 16 keys x D each
    for (int i = 0; i < D / 8; i++)
        for (int c = 0; c < 4; c++)
            dkacc[i][c] = dvacc[i][c] = 0.0f;
    const int arow = warp * 16 + (lane & 7) + ((lane >> 3) & 1) * 8; // this warp's keys
    const int acol = (lane >> 4) * 8;

    for (int qb = 0; qb < n_qb; qb++) {
        const int buf = qb & 1;
        prefetch_next_wait(load_q, qb, n_qb);
        const T *cQ = sQ + buf * BQ * D;   // (BQ, D)
        const T *cdO = sdO + buf * BQ * D; // (BQ, D)
        const int64_t i0 = (int64_t)qb * BQ;

        // S^T = K Q^T and dP^T = V dO^T: 16 keys x BQ queries
        float sacc[BQ / 8][4], pacc[BQ / 8][4];
        mma_abt2<T, D, BQ>(sacc, pacc, sK, sV, cQ, cdO, arow, acol, lane);
        // P^T = exp2(S^T sl2 - lse2[query]); dS^T = P^T (dP^T - delta[query]). Columns are
        // queries: column nt*8 + 2t + (c & 1). Queries past q_len have lse2 = +inf (P = 0).
        for (int nt = 0; nt < BQ / 8; nt++)
            for (int e = 0; e < 2; e++) {
                const int64_t qi = i0 + nt * 8 + 2 * t + e; // query index in the slice
                const bool ok = qi < s.q_len;
                const float l2 = lse2_of(p.lse, s.q_start + qi, p.H, h, ok);
                const float dl = ok ? p.delta[(s.q_start + qi) * p.H + h] : 0.0f;
                for (int hr = 0; hr < 2; hr++) {
                    const int c = 2 * hr + e;
                    const float pr = exp2f(sacc[nt][c] * sl2 - l2);
                    sacc[nt][c] = pr;                      // P^T
                    pacc[nt][c] = pr * (pacc[nt][c] - dl); // dS^T (unscaled)
                }
            }
        // dV += P^T dO and dK += dS^T Q: A from registers (16 keys x BQ), B = dO / Q (BQ x D)
        // via ldmatrix.trans
        for (int ks = 0; ks < BQ / 16; ks++) {
            uint32_t pa[4], sa[4];
            acc_to_a<T>(pa, sacc, ks);
            acc_to_a<T>(sa, pacc, ks);
            for (int dp = 0; dp < D / 16; dp++) {
                uint32_t b[4];
                const int qr = ks * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
                const int col = dp * 16 + (lane >> 4) * 8;
                ldmatrix_x4_trans(b, cdO + swz<D>(qr, col));
                mma16816x2<T>(dvacc + 2 * dp, pa, b);
                ldmatrix_x4_trans(b, cQ + swz<D>(qr, col));
                mma16816x2<T>(dkacc + 2 * dp, sa, b);
            }
        }
        __syncthreads();
    }
    // dK += scale * dk_acc, dV += dv_acc (key rows this block owns)
    for (int hr = 0; hr < 2; hr++) {
        const int row = warp * 16 + g + hr * 8;
        if (row >= krows) continue;
        for (int dn = 0; dn < D / 8; dn++) {
            float2 *k2 = reinterpret_cast<float2 *>(gdK + (int64_t)row * ld + dn * 8 + 2 * t);
            float2 *v2 = reinterpret_cast<float2 *>(gdV + (int64_t)row * ld + dn * 8 + 2 * t);
            float2 a = *k2, b = *v2;
            a.x += p.scale * dkacc[dn][2 * hr];
            a.y += p.scale * dkacc[dn][2 * hr + 1];
            b.x += dvacc[dn][2 * hr];
            b.y += dvacc[dn][2 * hr + 1];
            *k2 = a;
            *v2 = b;
        }
    }
}

template <typename T, int D> struct launch_dq {
    static int run(const zg_cu_args *a, cudaStream_t st) {
        return launch_tiles(attn_bwd_dq_kernel<T, D>, BW_NT, dq_smem_bytes<D>(), a, st);
    }
};

template <typename T, int D> struct launch_dkdv {
    static int run(const zg_cu_args *a, cudaStream_t st) {
        return launch_tiles(attn_bwd_dkdv_kernel<T, D>, BW_NT, kv_smem_bytes<D>(), a, st);
    }
};

} // namespace zgcu

extern "C" int zg_cu_attn_bwd_delta(const zg_cu_args *a, void *stream) {
    using namespace zgcu;
    if (a->n_tiles == 0) return 0;
    return launch_by_dtype(attn_bwd_delta_kernel<float>, attn_bwd_delta_kernel<__nv_bfloat16>,
                           attn_bwd_delta_kernel<__half>,
                           dim3((unsigned)a->n_tiles, (unsigned)a->H), BW_NT, a,
                           static_cast<cudaStream_t>(stream));
}

extern "C" int zg_cu_attn_bwd_dq_tc(const zg_cu_args *a, void *stream) {
    return zgcu::dispatch_tc<zgcu::launch_dq>(a, stream);
}

extern "C" int zg_cu_attn_bwd_dkdv_tc(const zg_cu_args *a, void *stream) {
    return zgcu::dispatch_tc<zgcu::launch_dkdv>(a, stream);
}
