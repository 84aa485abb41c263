// attn_fwd_tc.cu — tensor-core attention forward over a slice list (FlashAttention-2 style):
// bf16/fp16 Q, K, V; fp32 accumulation, fp32 O and LSE (so partials merge exactly).
//
// One thread block = one tile (64 query rows of one slice) x one head; 4 warps, each owning 16
// query rows for the whole key loop. Per block of 64 keys:
//   S = Q K^T        (mma.sync m16n8k16, Q fragments kept in registers, K via ldmatrix)
//   online softmax   (base 2; running max m and per-thread partial row sums l, in registers)
//   O_acc += P V     (P's accumulator fragments reused as A fragments, V via ldmatrix.trans)
// K/V blocks are double-buffered in shared memory with cp.async, so the next block loads
// while this one computes. Tails: rows past the slice's q_len are computed on zero Q rows and
// not stored; keys past k_len are zero-filled and masked to -inf. Slices of any lengths, many
// sequences and shards in one launch: the tile list says which slice each block serves.
#include "kernels/cuda/cuda_common.cuh"

namespace zgcu {

constexpr int FWD_BM = ZG_CU_TC_BM; // query rows per block
constexpr int FWD_BN = 64;          // keys per block
constexpr int FWD_NT = 128;         // threads (4 warps x 16 rows)

template <int D> constexpr int fwd_smem_bytes() {
    return (FWD_BM * D + 4 * FWD_BN * D) * 2; // Q + 2 x (K, V), 16-bit elements
}

template <typename T, int D>
__global__ void __launch_bounds__(FWD_NT) attn_fwd_tc_kernel(zg_cu_args p) {
    extern __shared__ __align__(128) unsigned char smem_raw[];
    T *sQ = reinterpret_cast<T *>(smem_raw); // sQ is (BM, D), swizzled
    T *sK = sQ + FWD_BM * D;                 // sK is 2 x (BN, D): double buffer
    T *sV = sK + 2 * FWD_BN * D;             // sV is 2 x (BN, D)

    const zg_cu_tile tile = p.tiles[blockIdx.x];
    const zg_cu_slice s = p.slices[tile.slice];
    const int h = blockIdx.y;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int g = lane >> 2, t = lane & 3; // fragment group / thread in group
    const int64_t ld = (int64_t)p.H * D;   // elements between consecutive tokens
    const int qrows = (int)min((int64_t)FWD_BM, s.q_len - tile.r0);
    const int64_t q0 = s.q_start + tile.r0; // first query row of the tile

    const T *gQ = static_cast<const T *>(p.q) + q0 * ld + (int64_t)h * D;        // (qrows, D)
    const T *gK = static_cast<const T *>(p.k) + s.k_start * ld + (int64_t)h * D; // (k_len, D)
    const T *gV = static_cast<const T *>(p.v) + s.k_start * ld + (int64_t)h * D; // (k_len, D)
    float *gO = p.o + q0 * ld + (int64_t)h * D; // gO is (qrows, D), stride ld, fp32
    float *gL = p.lse + q0 * p.H + h;           // gL is (qrows,), stride H

    if (s.k_len == 0) { // no keys: O = 0, LSE = -inf (the contract for an empty key range)
        for (int i = tid; i < qrows * D; i += FWD_NT)
            gO[(int64_t)(i / D) * ld + i % D] = 0.0f;
        for (int i = tid; i < qrows; i += FWD_NT)
            gL[(int64_t)i * p.H] = -INFINITY;
        return;
    }
    const int n_kb = (int)((s.k_len + FWD_BN - 1) / FWD_BN);

    load_tile_async<T, D, FWD_BM, FWD_NT>(sQ, gQ, ld, qrows, tid);
    cp_async_commit();
    auto load_kv = [&](int buf, int kb) {
        load_pair_async<T, D, FWD_BN, FWD_NT>(sK, sV, gK, gV, ld, s.k_len, buf, kb, tid);
    };
    load_kv(0, 0);
    cp_async_commit();

    uint32_t qf[D / 16][4];                  // Q fragments of this warp's 16 rows, all of D
    float oacc[D / 8][4];                    // O accumulator: 16 rows x D (n-tiles of 8 columns)
    float m_run[2] = {-INFINITY, -INFINITY}; // running max (base-2 scaled) of rows g, g+8
    float l_run[2] = {0.0f, 0.0f};           // this thread's partial row sums
    for (int i = 0; i < D / 8; i++)
        oacc[i][0] = oacc[i][1] = oacc[i][2] = oacc[i][3] = 0.0f;
    const float sl2 = p.scale * LOG2E;

    for (int kb = 0; kb < n_kb; kb++) {
        const int buf = kb & 1;
        prefetch_next_wait(load_kv, kb, n_kb); // the next block into the other buffer
        if (kb == 0) {                         // Q fragments, once
            const int r = warp * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
            for (int kk = 0; kk < D / 16; kk++)
                ldmatrix_x4(qf[kk], sQ + swz<D>(r, kk * 16 + (lane >> 4) * 8));
        }
        const T *cK = sK + buf * FWD_BN * D; // (BN, D)
        const T *cV = sV + buf * FWD_BN * D; // (BN, D)

        // S = Q K^T: this warp's 16 rows x 64 keys
        float sacc[FWD_BN / 8][4];
        for (int i = 0; i < FWD_BN / 8; i++)
            sacc[i][0] = sacc[i][1] = sacc[i][2] = sacc[i][3] = 0.0f;
        for (int kk = 0; kk < D / 16; kk++) {
            for (int np = 0; np < FWD_BN / 16; np++) {
                uint32_t b[4];
                const int key = np * 16 + (lane & 7) + (lane >> 4) * 8;
                ldmatrix_x4(b, cK + swz<D>(key, kk * 16 + ((lane >> 3) & 1) * 8));
                mma16816x2<T>(sacc + 2 * np, qf[kk], b);
            }
        }
        // scale to base 2, mask keys past k_len
        const int64_t j0 = (int64_t)kb * FWD_BN;
        const bool tail = j0 + FWD_BN > s.k_len;
        for (int nt = 0; nt < FWD_BN / 8; nt++)
            for (int c = 0; c < 4; c++) {
                float x = sacc[nt][c] * sl2;
                if (tail && j0 + nt * 8 + 2 * t + (c & 1) >= s.k_len) x = -INFINITY;
                sacc[nt][c] = x;
            }
        // online softmax, rows g (c = 0, 1) and g + 8 (c = 2, 3)
        for (int hr = 0; hr < 2; hr++) {
            float mx = m_run[hr];
            for (int nt = 0; nt < FWD_BN / 8; nt++)
                mx = fmaxf(mx, fmaxf(sacc[nt][2 * hr], sacc[nt][2 * hr + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            // mx is finite: every key block holds at least one key < k_len
            const float alpha = exp2f(m_run[hr] - mx); // 0 on the first block (-inf)
            m_run[hr] = mx;
            float sum = 0.0f;
            for (int nt = 0; nt < FWD_BN / 8; nt++) {
                float p0 = exp2f(sacc[nt][2 * hr] - mx), p1 = exp2f(sacc[nt][2 * hr + 1] - mx);
                sacc[nt][2 * hr] = p0;
                sacc[nt][2 * hr + 1] = p1;
                sum += p0 + p1;
            }
            l_run[hr] = l_run[hr] * alpha + sum;
            for (int dn = 0; dn < D / 8; dn++) {
                oacc[dn][2 * hr] *= alpha;
                oacc[dn][2 * hr + 1] *= alpha;
            }
        }
        // O_acc += P V: P (16 x 64) from registers, V (64 x D) via ldmatrix.trans
        mma_acc_px<T, D, FWD_BN>(oacc, sacc, cV, lane);
        __syncthreads(); // everyone is done with `buf` before it is refilled
    }

    // finish: full row sums across the 4 threads of a group, O = O_acc / l, LSE = ln2 (m + log2 l)
    for (int hr = 0; hr < 2; hr++) {
        float l = l_run[hr];
        l += __shfl_xor_sync(0xffffffffu, l, 1);
        l += __shfl_xor_sync(0xffffffffu, l, 2);
        const int row = warp * 16 + g + hr * 8;
        if (row >= qrows) continue;
        const float inv = 1.0f / l; // l >= 1: the max term contributes exp2(0)
        float *orow = gO + (int64_t)row * ld;
        for (int dn = 0; dn < D / 8; dn++) {
            float2 v2 = make_float2(oacc[dn][2 * hr] * inv, oacc[dn][2 * hr + 1] * inv);
            *reinterpret_cast<float2 *>(orow + dn * 8 + 2 * t) = v2;
        }
        if (t == 0) gL[(int64_t)row * p.H] = (m_run[hr] + log2f(l)) * LN2;
    }
}

template <typename T, int D> struct launch_fwd {
    static int run(const zg_cu_args *a, cudaStream_t st) {
        return launch_tiles(attn_fwd_tc_kernel<T, D>, FWD_NT, fwd_smem_bytes<D>(), a, st);
    }
};

} // namespace zgcu

extern "C" int zg_cu_attn_fwd_tc(const zg_cu_args *a, void *stream) {
    return zgcu::dispatch_tc<zgcu::launch_fwd>(a, stream);
}
