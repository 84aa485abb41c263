// cuda_common.cuh — device helpers shared by the CUDA attention kernels: element conversions,
// the tensor-core primitives (mma.sync m16n8k16 with fp32 accumulation, ldmatrix), cp.async
// and the swizzled shared-memory tile layout. Only included by .cu files.
//
// Fragment layouts of mma.sync.m16n8k16 (PTX ISA, "Matrix fragments for mma.m16n8k16"), with
// g = lane / 4 (the group) and t = lane % 4 (the thread in the group):
//   A (16 x 16, row-major), 4 x b32, each two 16-bit elements (lower column in the low half):
//     a0 = A[g][2t..2t+1]  a1 = A[g+8][2t..2t+1]  a2 = A[g][2t+8..]  a3 = A[g+8][2t+8..]
//   B (16 x 8, "col": pairs run along k), 2 x b32:
//     b0 = B[2t..2t+1][g]  b1 = B[2t+8..2t+9][g]
//   C/D (16 x 8, fp32), 4 floats:
//     c0, c1 = C[g][2t], C[g][2t+1]    c2, c3 = C[g+8][2t], C[g+8][2t+1]
// So the C fragments of two adjacent 8-column tiles (16 columns) ARE the A fragment of a
// 16 x 16 operand once packed to 16 bits: a0 = pack(c0,c1 of tile 0), a1 = pack(c2,c3 of tile
// 0), a2 = pack(c0,c1 of tile 1), a3 = pack(c2,c3 of tile 1). FlashAttention-2 uses this to feed
// the probabilities P (an accumulator) straight into P·V without shared memory.
//
// ldmatrix.m8n8.x4 loads four 8x8 16-bit matrices; lane l gives the address of row (l % 8) of
// matrix (l / 8). Without .trans lane l receives M[l/4][2(l%4)..+1] of each matrix, with .trans
// it receives M[2(l%4)..+1][l/4] (the transposed matrix's row l/4). Both are what the A/B
// fragments above need when a tile is stored row-major in shared memory:
//   A tile rows r0..r0+15, cols c0..c0+15 (non-trans): matrix m = rows r0 + (m&1)*8, cols
//     c0 + (m>>1)*8  -> {a0, a1, a2, a3};
//   B = X^T where X is stored [n][k] (e.g. K for S = Q K^T), 16 n x 16 k (non-trans): matrix
//     m = n rows n0 + (m>>1)*8, k cols k0 + (m&1)*8 -> {b0, b1} of n-tile n0, {b0, b1} of n0+8;
//   B = X where X is stored [k][n] (e.g. V for O = P V), 16 k x 16 n (.trans): matrix m = k rows
//     k0 + (m&1)*8, n cols n0 + (m>>1)*8 -> {b0, b1} of n-tile n0, {b0, b1} of n-tile n0+8.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels/cuda/attn_cuda_launch.h"

namespace zgcu {

// ---------------------------------------------------------------------------------------------
// Element types: float, __nv_bfloat16, __half.

__device__ __forceinline__ float to_f32(float x) {
    return x;
}
__device__ __forceinline__ float to_f32(__nv_bfloat16 x) {
    return __bfloat162float(x);
}
__device__ __forceinline__ float to_f32(__half x) {
    return __half2float(x);
}

template <typename T> __device__ __forceinline__ T from_f32(float x);
template <> __device__ __forceinline__ float from_f32<float>(float x) {
    return x;
}
template <> __device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float x) {
    return __float2bfloat16_rn(x);
}
template <> __device__ __forceinline__ __half from_f32<__half>(float x) {
    return __float2half_rn(x);
}

// Two floats as one b32 register of 16-bit elements, `lo` in the low half (the lower column).
template <typename T> __device__ __forceinline__ uint32_t pack2(float lo, float hi);
template <> __device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi); // .x = lo (low 16 bits), .y = hi
    return *reinterpret_cast<uint32_t *>(&v);
}
template <> __device__ __forceinline__ uint32_t pack2<__half>(float lo, float hi) {
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
}

// ---------------------------------------------------------------------------------------------
// Tensor cores: D = A * B + D, A 16x16, B 16x8, D 16x8 fp32 (fragments as above).

template <typename T>
__device__ __forceinline__ void mma16816(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1);
template <>
__device__ __forceinline__ void mma16816<__nv_bfloat16>(float d[4], const uint32_t a[4],
                                                        uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <>
__device__ __forceinline__ void mma16816<__half>(float d[4], const uint32_t a[4], uint32_t b0,
                                                 uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// d[0] += A B0 and d[1] += A B1 for the two 8-column n-tiles of one ldmatrix_x4 B load
// (b[0..1] and b[2..3]): the accumulators of 16 columns.
template <typename T>
__device__ __forceinline__ void mma16816x2(float (*d)[4], const uint32_t a[4],
                                           const uint32_t b[4]) {
    mma16816<T>(d[0], a, b[0], b[1]);
    mma16816<T>(d[1], a, b[2], b[3]);
}

// The A fragment of a 16 x 16 operand from the fp32 accumulators of 8-column tiles 2 ks and
// 2 ks + 1 (the layouts above): P or dS fed from registers straight into the next GEMM.
template <typename T>
__device__ __forceinline__ void acc_to_a(uint32_t a[4], const float (*c)[4], int ks) {
    a[0] = pack2<T>(c[2 * ks][0], c[2 * ks][1]);
    a[1] = pack2<T>(c[2 * ks][2], c[2 * ks][3]);
    a[2] = pack2<T>(c[2 * ks + 1][0], c[2 * ks + 1][1]);
    a[3] = pack2<T>(c[2 * ks + 1][2], c[2 * ks + 1][3]);
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], const void *smem) {
    uint32_t a = (uint32_t)__cvta_generic_to_shared(smem);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a)
                 : "memory");
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t r[4], const void *smem) {
    uint32_t a = (uint32_t)__cvta_generic_to_shared(smem);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a)
                 : "memory");
}

// ---------------------------------------------------------------------------------------------
// cp.async (sm_80+): 16 bytes global -> shared, zero-filled when !valid (no global read then;
// `gmem` must still be a valid address expression, callers clamp it).

__device__ __forceinline__ void cp_async16(void *smem, const void *gmem, bool valid) {
    uint32_t s = (uint32_t)__cvta_generic_to_shared(smem);
    int n = valid ? 16 : 0;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(n)
                 : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}
// Waits until at most N of this thread's committed groups are still in flight.
template <int N> __device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// ---------------------------------------------------------------------------------------------
// Shared-memory tiles: (rows, D) 16-bit elements, row-major, with the 16-byte chunks of each
// row XOR-swizzled by (row % 8). ldmatrix reads 8 rows at the same logical chunk; unswizzled,
// rows of 128 or 256 bytes all start in bank 0 (8-way conflict); swizzled, the 8 rows' chunks
// land in 8 different bank groups. `col` is a multiple of 8 (a chunk start).
template <int D> __device__ __forceinline__ int swz(int row, int col) {
    return row * D + ((((col >> 3) ^ (row & 7))) << 3);
}

// Copies a (rows, D) tile of 16-bit elements from global memory (row r at g + r*ld elements)
// into a swizzled shared tile with cp.async; rows >= valid_rows are zero-filled. All NT
// threads of the block take part.
template <typename T, int D, int ROWS, int NT>
__device__ __forceinline__ void load_tile_async(T *s, const T *g, int64_t ld, int valid_rows,
                                                int tid) {
    constexpr int CH = D / 8; // 16-byte chunks per row
    for (int c = tid; c < ROWS * CH; c += NT) {
        int r = c / CH, ch = c % CH;
        bool ok = r < valid_rows;
        const T *src = g + (int64_t)(ok ? r : 0) * ld + ch * 8;
        cp_async16(s + swz<D>(r, ch * 8), src, ok);
    }
}

// Block blk of BN rows of two (len, D) global tensors gA, gB (row stride ld) into buffer `buf` of
// the double-buffered shared tiles sA, sB (2 x (BN, D) each), rows past len zero-filled.
template <typename T, int D, int BN, int NT>
__device__ __forceinline__ void load_pair_async(T *sA, T *sB, const T *gA, const T *gB, int64_t ld,
                                                int64_t len, int buf, int blk, int tid) {
    const int64_t j0 = (int64_t)blk * BN;
    const int valid = (int)min((int64_t)BN, len - j0);
    load_tile_async<T, D, BN, NT>(sA + buf * BN * D, gA + j0 * ld, ld, valid, tid);
    load_tile_async<T, D, BN, NT>(sB + buf * BN * D, gB + j0 * ld, ld, valid, tid);
}

// Double buffering, at the top of block blk of n_blk: starts loading block blk + 1 into the other
// buffer (load(buf, blk) issues the copies), then waits until block blk's copies have landed
// and every thread is past the previous block.
template <typename F>
__device__ __forceinline__ void prefetch_next_wait(const F &load, int blk, int n_blk) {
    if (blk + 1 < n_blk) {
        load((blk & 1) ^ 1, blk + 1);
        cp_async_commit();
        cp_async_wait<1>();
    } else {
        cp_async_wait<0>();
    }
    __syncthreads();
}

// acc (this warp's 16 rows x D, n-tiles of 8) += P X: P (16 x N) from the accumulator
// fragments p, X (N x D) a swizzled shared tile read with ldmatrix.trans (O += P V, dQ += dS K).
template <typename T, int D, int N>
__device__ __forceinline__ void mma_acc_px(float (*acc)[4], const float (*p)[4], const T *sX,
                                           int lane) {
    for (int ks = 0; ks < N / 16; ks++) {
        uint32_t a[4];
        acc_to_a<T>(a, p, ks);
        for (int dp = 0; dp < D / 16; dp++) {
            uint32_t b[4];
            const int key = ks * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
            ldmatrix_x4_trans(b, sX + swz<D>(key, dp * 16 + (lane >> 4) * 8));
            mma16816x2<T>(acc + 2 * dp, a, b);
        }
    }
}

__device__ __forceinline__ float warp_sum(float x) {
    for (int o = 16; o > 0; o >>= 1)
        x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}

// log2(e) and ln(2): softmax runs in base 2 (exp2f is one instruction).
constexpr float LOG2E = 1.4426950408889634f;
constexpr float LN2 = 0.6931471805599453f;

// ---------------------------------------------------------------------------------------------
// Host side: launches.

typedef void (*zg_cu_kernel)(zg_cu_args);

// Launches the kernel of a->dtype (f32, bf16 or f16) on `grid` x nt threads, no dynamic shared
// memory; cudaErrorInvalidValue for any other dtype.
static inline int launch_by_dtype(zg_cu_kernel f32, zg_cu_kernel bf16, zg_cu_kernel f16, dim3 grid,
                                  int nt, const zg_cu_args *a, cudaStream_t st) {
    zg_cu_kernel k = a->dtype == ZG_CU_F32    ? f32
                     : a->dtype == ZG_CU_BF16 ? bf16
                     : a->dtype == ZG_CU_F16  ? f16
                                              : nullptr;
    if (!k) return (int)cudaErrorInvalidValue;
    k<<<grid, nt, 0, st>>>(*a);
    return (int)cudaGetLastError();
}

// Launches a tensor-core kernel on grid (tiles, heads) x nt threads with `smem` bytes of dynamic
// shared memory (raising the kernel's limit to that first).
static inline int launch_tiles(zg_cu_kernel k, int nt, int smem, const zg_cu_args *a,
                               cudaStream_t st) {
    cudaError_t e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (e != cudaSuccess) return (int)e;
    k<<<dim3((unsigned)a->n_tiles, (unsigned)a->H), nt, smem, st>>>(*a);
    return (int)cudaGetLastError();
}

// The tensor-core kernels take bf16 or f16 at D = 64 or 128: runs L<T, D>::run(a, st) for
// a's dtype and head dim (nothing for no tiles), cudaErrorInvalidValue for any other.
template <template <typename, int> class L>
static int dispatch_tc(const zg_cu_args *a, void *stream) {
    cudaStream_t st = static_cast<cudaStream_t>(stream);
    if (a->n_tiles == 0) return 0;
    if (a->dtype == ZG_CU_BF16 && a->D == 64) return L<__nv_bfloat16, 64>::run(a, st);
    if (a->dtype == ZG_CU_BF16 && a->D == 128) return L<__nv_bfloat16, 128>::run(a, st);
    if (a->dtype == ZG_CU_F16 && a->D == 64) return L<__half, 64>::run(a, st);
    if (a->dtype == ZG_CU_F16 && a->D == 128) return L<__half, 128>::run(a, st);
    return (int)cudaErrorInvalidValue;
}

} // namespace zgcu
