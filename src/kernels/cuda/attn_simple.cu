// attn_simple.cu — the plain CUDA kernels: attention forward/backward with one warp per row and
// fp32 math (any dtype in, any head dim 1..256; the GPU's readable reference and the fallback
// for shapes the tensor-core kernels do not take), the partial-result merge, the batched
// strided copies the engine's pack/unpack lowers to, and dtype conversion.
#include "kernels/cuda/cuda_common.cuh"

namespace zgcu {

constexpr int SIMPLE_NT = ZG_CU_SIMPLE_ROWS * 32; // one warp per row
constexpr int SIMPLE_PER_LANE = 8;                // D <= 256: element d = lane + 32 i, i < 8

// The slice holding row r of the numbered rows: the largest i with row_off[i] <= r.
__device__ __forceinline__ int find_slice(const int64_t *row_off, int n, int64_t r) {
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) >> 1;
        if (row_off[mid] <= r)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

// This warp's row of the numbered rows (ZG_CU_SIMPLE_ROWS a block): the slice holding it and
// its offset in the slice (a query row of the forward and dQ kernels, a key row of dK/dV);
// false past the last row.
__device__ __forceinline__ bool warp_row(const zg_cu_args &p, zg_cu_slice *s, int64_t *off) {
    const int64_t r = (int64_t)blockIdx.x * ZG_CU_SIMPLE_ROWS + (threadIdx.x >> 5);
    if (r >= p.n_rows) return false;
    const int si = find_slice(p.row_off, p.n_slices, r);
    *s = p.slices[si];
    *off = r - p.row_off[si];
    return true;
}

// Loads this lane's elements of a D-vector (d = lane + 32 i) as fp32, zero past D.
template <typename T>
__device__ __forceinline__ void load_lane(float x[SIMPLE_PER_LANE], const T *v, int D, int lane) {
#pragma unroll
    for (int i = 0; i < SIMPLE_PER_LANE; i++) {
        int d = lane + 32 * i;
        x[i] = d < D ? to_f32(v[d]) : 0.0f;
    }
}

template <typename T>
__device__ __forceinline__ float dot_lane(const float x[SIMPLE_PER_LANE], const T *v, int D,
                                          int lane) {
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < SIMPLE_PER_LANE; i++) {
        int d = lane + 32 * i;
        if (d < D) s += x[i] * to_f32(v[d]);
    }
    return warp_sum(s);
}

// Forward: one warp per query row (of one head), online softmax over the slice's keys.
template <typename T> __global__ void __launch_bounds__(SIMPLE_NT) attn_fwd_simple(zg_cu_args p) {
    const int lane = threadIdx.x & 31, h = blockIdx.y, D = p.D;
    zg_cu_slice s;
    int64_t off;
    if (!warp_row(p, &s, &off)) return;
    const int64_t row = s.q_start + off;
    const int64_t ld = (int64_t)p.H * D;
    const T *K = static_cast<const T *>(p.k) + s.k_start * ld + (int64_t)h * D; // (k_len, D)
    const T *V = static_cast<const T *>(p.v) + s.k_start * ld + (int64_t)h * D; // (k_len, D)
    float qv[SIMPLE_PER_LANE], acc[SIMPLE_PER_LANE];
    load_lane(qv, static_cast<const T *>(p.q) + row * ld + (int64_t)h * D, D, lane);
    for (int i = 0; i < SIMPLE_PER_LANE; i++)
        acc[i] = 0.0f;
    float m = -INFINITY, l = 0.0f;
    for (int64_t j = 0; j < s.k_len; j++) {
        const float sc = p.scale * dot_lane(qv, K + j * ld, D, lane);
        const float mn = fmaxf(m, sc);
        const float a = expf(m - mn), pj = expf(sc - mn); // a = 0 on the first key
        l = l * a + pj;
        const T *vj = V + j * ld; // (D,)
#pragma unroll
        for (int i = 0; i < SIMPLE_PER_LANE; i++) {
            int d = lane + 32 * i;
            acc[i] = acc[i] * a + (d < D ? pj * to_f32(vj[d]) : 0.0f);
        }
        m = mn;
    }
    float *o = p.o + row * ld + (int64_t)h * D; // (D,)
    const bool empty = s.k_len == 0;
#pragma unroll
    for (int i = 0; i < SIMPLE_PER_LANE; i++) {
        int d = lane + 32 * i;
        if (d < D) o[d] = empty ? 0.0f : acc[i] / l;
    }
    if (lane == 0) p.lse[row * p.H + h] = empty ? -INFINITY : m + logf(l);
}

// dQ: one warp per query row; dQ += scale * sum_j P_ij (dP_ij - delta_i) K_j.
template <typename T> __global__ void __launch_bounds__(SIMPLE_NT) attn_dq_simple(zg_cu_args p) {
    const int lane = threadIdx.x & 31, h = blockIdx.y, D = p.D;
    zg_cu_slice s;
    int64_t off;
    if (!warp_row(p, &s, &off)) return;
    const int64_t row = s.q_start + off;
    const int64_t ld = (int64_t)p.H * D, base = row * ld + (int64_t)h * D;
    const float lse = p.lse[row * p.H + h];
    if (lse == -INFINITY) return; // the row saw no keys: no gradient
    const T *K = static_cast<const T *>(p.k) + s.k_start * ld + (int64_t)h * D; // (k_len, D)
    const T *V = static_cast<const T *>(p.v) + s.k_start * ld + (int64_t)h * D; // (k_len, D)
    float qv[SIMPLE_PER_LANE], dov[SIMPLE_PER_LANE], acc[SIMPLE_PER_LANE];
    load_lane(qv, static_cast<const T *>(p.q) + base, D, lane);
    load_lane(dov, static_cast<const T *>(p.dout) + base, D, lane);
    const float delta = dot_lane(dov, p.o + base, D, lane);
    for (int i = 0; i < SIMPLE_PER_LANE; i++)
        acc[i] = 0.0f;
    for (int64_t j = 0; j < s.k_len; j++) {
        const T *kj = K + j * ld; // (D,)
        const float pj = expf(p.scale * dot_lane(qv, kj, D, lane) - lse);
        const float ds = pj * (dot_lane(dov, V + j * ld, D, lane) - delta);
#pragma unroll
        for (int i = 0; i < SIMPLE_PER_LANE; i++) {
            int d = lane + 32 * i;
            if (d < D) acc[i] += ds * to_f32(kj[d]);
        }
    }
    float *dq = p.dq + base; // (D,)
#pragma unroll
    for (int i = 0; i < SIMPLE_PER_LANE; i++) {
        int d = lane + 32 * i;
        if (d < D) dq[d] += p.scale * acc[i];
    }
}

// dK/dV: one warp per key row of a slice; loops over the slice's queries (recomputing delta).
template <typename T> __global__ void __launch_bounds__(SIMPLE_NT) attn_dkdv_simple(zg_cu_args p) {
    const int lane = threadIdx.x & 31, h = blockIdx.y, D = p.D;
    zg_cu_slice s;
    int64_t off;
    if (!warp_row(p, &s, &off)) return;
    const int64_t key = s.k_start + off;
    const int64_t ld = (int64_t)p.H * D, kbase = key * ld + (int64_t)h * D;
    float kv[SIMPLE_PER_LANE], vv[SIMPLE_PER_LANE], dk[SIMPLE_PER_LANE], dv[SIMPLE_PER_LANE];
    load_lane(kv, static_cast<const T *>(p.k) + kbase, D, lane);
    load_lane(vv, static_cast<const T *>(p.v) + kbase, D, lane);
    for (int i = 0; i < SIMPLE_PER_LANE; i++)
        dk[i] = dv[i] = 0.0f;
    for (int64_t i = s.q_start; i < s.q_start + s.q_len; i++) {
        const float lse = p.lse[i * p.H + h];
        if (lse == -INFINITY) continue;
        const int64_t qb = i * ld + (int64_t)h * D;
        const T *qi = static_cast<const T *>(p.q) + qb;     // (D,)
        const T *doi = static_cast<const T *>(p.dout) + qb; // (D,)
        const float pr = expf(p.scale * dot_lane(kv, qi, D, lane) - lse);
        const float dp = dot_lane(vv, doi, D, lane);
        float od = 0.0f; // delta_i = dO_i . O_i
        for (int x = 0; x < SIMPLE_PER_LANE; x++) {
            int d = lane + 32 * x;
            if (d < D) od += to_f32(doi[d]) * p.o[qb + d];
        }
        const float ds = pr * (dp - warp_sum(od));
#pragma unroll
        for (int x = 0; x < SIMPLE_PER_LANE; x++) {
            int d = lane + 32 * x;
            if (d < D) {
                dv[x] += pr * to_f32(doi[d]);
                dk[x] += ds * to_f32(qi[d]);
            }
        }
    }
#pragma unroll
    for (int x = 0; x < SIMPLE_PER_LANE; x++) {
        int d = lane + 32 * x;
        if (d < D) {
            p.dk[kbase + d] += p.scale * dk[x];
            p.dv[kbase + d] += dv[x];
        }
    }
}

// Merge: one warp per (row, head); weights in double like zg_attn_merge.
__global__ void attn_merge_kernel(int64_t n, int D, float *o1, float *lse1, const float *o2,
                                  const float *lse2) {
    const int64_t r = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    const int lane = threadIdx.x & 31;
    if (r >= n) return;
    float *a = o1 + r * D;       // (D,)
    const float *b = o2 + r * D; // (D,)
    const float l1 = lse1[r], l2 = lse2[r];
    if (l2 == -INFINITY) return;
    if (l1 == -INFINITY) {
        for (int d = lane; d < D; d += 32)
            a[d] = b[d];
        if (lane == 0) lse1[r] = l2;
        return;
    }
    const double m = l1 > l2 ? l1 : l2;
    const double lse = m + log(exp((double)l1 - m) + exp((double)l2 - m));
    const double w1 = exp((double)l1 - lse), w2 = exp((double)l2 - lse);
    for (int d = lane; d < D; d += 32)
        a[d] = (float)(w1 * a[d] + w2 * b[d]);
    __syncwarp();
    if (lane == 0) lse1[r] = (float)lse;
}

// Batched strided copies: block (desc, row group); rows strided by gridDim.y.
template <typename E>
__global__ void copy2d_kernel(const zg_cu_copy2d *descs, const E *src, E *dst) {
    const zg_cu_copy2d c = descs[blockIdx.x];
    for (int64_t r = blockIdx.y; r < c.rows; r += gridDim.y) {
        const E *s = src + c.src_off + r * c.src_ld; // (width,)
        E *d = dst + c.dst_off + r * c.dst_ld;       // (width,)
        for (int64_t e = threadIdx.x; e < c.width; e += blockDim.x)
            d[e] = s[e];
    }
}

template <typename S, typename D> __global__ void convert_kernel(int64_t n, const S *s, D *d) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        d[i] = from_f32<D>(to_f32(s[i]));
}

template <typename S>
static int convert_from(int64_t n, const S *s, void *d, int ddt, cudaStream_t st) {
    const int blocks = (int)min((int64_t)4096, (n + 255) / 256);
    switch (ddt) {
    case ZG_CU_F32: convert_kernel<<<blocks, 256, 0, st>>>(n, s, static_cast<float *>(d)); break;
    case ZG_CU_BF16:
        convert_kernel<<<blocks, 256, 0, st>>>(n, s, static_cast<__nv_bfloat16 *>(d));
        break;
    case ZG_CU_F16: convert_kernel<<<blocks, 256, 0, st>>>(n, s, static_cast<__half *>(d)); break;
    default: return (int)cudaErrorInvalidValue;
    }
    return (int)cudaGetLastError();
}

} // namespace zgcu

using namespace zgcu;

// grid: (row groups, heads); the x dimension allows 2^31 - 1 groups of 4 rows
static dim3 simple_grid(const zg_cu_args *a) {
    return dim3((unsigned)((a->n_rows + ZG_CU_SIMPLE_ROWS - 1) / ZG_CU_SIMPLE_ROWS),
                (unsigned)a->H);
}

extern "C" int zg_cu_attn_fwd_simple(const zg_cu_args *a, void *stream) {
    if (a->n_rows == 0) return 0;
    return launch_by_dtype(attn_fwd_simple<float>, attn_fwd_simple<__nv_bfloat16>,
                           attn_fwd_simple<__half>, simple_grid(a), SIMPLE_NT, a,
                           static_cast<cudaStream_t>(stream));
}

extern "C" int zg_cu_attn_bwd_dq_simple(const zg_cu_args *a, void *stream) {
    if (a->n_rows == 0) return 0;
    return launch_by_dtype(attn_dq_simple<float>, attn_dq_simple<__nv_bfloat16>,
                           attn_dq_simple<__half>, simple_grid(a), SIMPLE_NT, a,
                           static_cast<cudaStream_t>(stream));
}

extern "C" int zg_cu_attn_bwd_dkdv_simple(const zg_cu_args *a, void *stream) {
    if (a->n_rows == 0) return 0;
    return launch_by_dtype(attn_dkdv_simple<float>, attn_dkdv_simple<__nv_bfloat16>,
                           attn_dkdv_simple<__half>, simple_grid(a), SIMPLE_NT, a,
                           static_cast<cudaStream_t>(stream));
}

extern "C" int zg_cu_attn_merge(int64_t rows, int32_t H, int32_t D, float *o1, float *lse1,
                                const float *o2, const float *lse2, void *stream) {
    const int64_t n = rows * H;
    if (n == 0) return 0;
    const int warps = 8;
    attn_merge_kernel<<<(unsigned)((n + warps - 1) / warps), warps * 32, 0,
                        static_cast<cudaStream_t>(stream)>>>(n, D, o1, lse1, o2, lse2);
    return (int)cudaGetLastError();
}

extern "C" int zg_cu_copy2d_batch(const zg_cu_copy2d *descs, int32_t n, int32_t max_rows,
                                  int32_t elem_bytes, const void *src, void *dst, void *stream) {
    cudaStream_t st = static_cast<cudaStream_t>(stream);
    if (n == 0) return 0;
    dim3 grid((unsigned)n, (unsigned)(max_rows < 1 ? 1 : max_rows > 65535 ? 65535 : max_rows));
    switch (elem_bytes) {
    case 2:
        copy2d_kernel<<<grid, 128, 0, st>>>(descs, static_cast<const uint16_t *>(src),
                                            static_cast<uint16_t *>(dst));
        break;
    case 4:
        copy2d_kernel<<<grid, 128, 0, st>>>(descs, static_cast<const uint32_t *>(src),
                                            static_cast<uint32_t *>(dst));
        break;
    case 8:
        copy2d_kernel<<<grid, 128, 0, st>>>(descs, static_cast<const uint64_t *>(src),
                                            static_cast<uint64_t *>(dst));
        break;
    default: return (int)cudaErrorInvalidValue;
    }
    return (int)cudaGetLastError();
}

extern "C" int zg_cu_convert(int64_t n, const void *src, int32_t src_dtype, void *dst,
                             int32_t dst_dtype, void *stream) {
    cudaStream_t st = static_cast<cudaStream_t>(stream);
    if (n == 0) return 0;
    switch (src_dtype) {
    case ZG_CU_F32: return convert_from(n, static_cast<const float *>(src), dst, dst_dtype, st);
    case ZG_CU_BF16:
        return convert_from(n, static_cast<const __nv_bfloat16 *>(src), dst, dst_dtype, st);
    case ZG_CU_F16: return convert_from(n, static_cast<const __half *>(src), dst, dst_dtype, st);
    default: return (int)cudaErrorInvalidValue;
    }
}
