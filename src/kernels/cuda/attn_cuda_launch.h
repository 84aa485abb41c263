// attn_cuda_launch.h — the boundary between the C host code (attn_cuda.c: argument checks,
// tile lists, layering, errors) and the CUDA kernels (*.cu). Plain C types only, so both cc and
// nvcc read it; every launcher is asynchronous on `stream` (a cudaStream_t) and returns the
// cudaError_t of the launch as an int (0 = success). Not part of the public API.
#ifndef ZG_ATTN_CUDA_LAUNCH_H
#define ZG_ATTN_CUDA_LAUNCH_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// A slice as the kernels read it (same fields and layout as zg_attn_slice).
typedef struct zg_cu_slice {
    int64_t q_start, q_len;
    int64_t k_start, k_len;
} zg_cu_slice;

// One thread block's work: rows [r0, r0 + block) of slice `slice` (query rows for the forward
// and dQ kernels, key rows for the dK/dV kernel); the head is blockIdx.y.
typedef struct zg_cu_tile {
    int32_t slice;
    int32_t r0;
} zg_cu_tile;

// Rows per tile of the tensor-core kernels (the host builds tile lists with these).
#define ZG_CU_TC_BM 64 // forward and dQ: query rows per block (4 warps x 16)
#define ZG_CU_TC_BN 64 // dK/dV: key rows per block (4 warps x 16)
// Rows per block of the simple kernels (one warp per row).
#define ZG_CU_SIMPLE_ROWS 4

// dtypes (same values as zg_dtype in kernels.h)
#define ZG_CU_F32 0
#define ZG_CU_BF16 1
#define ZG_CU_F16 2

typedef struct zg_cu_args {
    int32_t dtype;    // of q, k, v, dout
    int32_t H, D;     // heads, head dim
    float scale;      // softmax scale (natural base)
    const void *q;    // q is (Tq, H, D), dtype
    const void *k;    // k is (Tk, H, D), dtype
    const void *v;    // v is (Tk, H, D), dtype
    const void *dout; // dout is (Tq, H, D), dtype (backward)
    float *o;         // o is (Tq, H, D) fp32: forward output, backward input
    float *lse;       // lse is (Tq, H) fp32, natural log: forward output, backward input
    float *dq;        // dq is (Tq, H, D) fp32, accumulated (backward)
    float *dk, *dv;   // dk, dv are (Tk, H, D) fp32, accumulated (backward)
    float *delta;     // delta is (Tq, H) fp32 scratch: rowsum(dO * O) (tensor-core backward)
    const zg_cu_slice *slices; // device: the slice list
    const zg_cu_tile *tiles;   // device: tiles of this launch
    int32_t n_tiles;
    // simple kernels: rows of slices [0, n_slices) numbered consecutively; row_off[i] is the
    // first row of slice i (query rows, or key rows for dK/dV), row_off[n_slices] the total
    const int64_t *row_off; // device, n_slices + 1
    int32_t n_slices;
    int64_t n_rows;
} zg_cu_args;

// Tensor-core kernels: dtype bf16 or f16, D 64 or 128, 16-byte aligned q/k/v/dout.
int zg_cu_attn_fwd_tc(const zg_cu_args *a, void *stream);
int zg_cu_attn_bwd_delta(const zg_cu_args *a, void *stream); // tiles as for dQ
int zg_cu_attn_bwd_dq_tc(const zg_cu_args *a, void *stream);
int zg_cu_attn_bwd_dkdv_tc(const zg_cu_args *a, void *stream);
// Simple kernels (one warp per row, fp32 math): any dtype, D 1..256.
int zg_cu_attn_fwd_simple(const zg_cu_args *a, void *stream);
int zg_cu_attn_bwd_dq_simple(const zg_cu_args *a, void *stream);
int zg_cu_attn_bwd_dkdv_simple(const zg_cu_args *a, void *stream);

// (o1, lse1) <- merge with (o2, lse2) for rows*H rows of D floats (zg_attn_merge's math).
int zg_cu_attn_merge(int64_t rows, int32_t H, int32_t D, float *o1, float *lse1, const float *o2,
                     const float *lse2, void *stream);

// Batched strided copies (descriptors in device memory; see zg_cuda_copy2d).
typedef struct zg_cu_copy2d {
    int64_t src_off, dst_off; // elements
    int64_t rows, width;      // rows of `width` elements
    int64_t src_ld, dst_ld;   // elements between rows
} zg_cu_copy2d;
int zg_cu_copy2d_batch(const zg_cu_copy2d *descs, int32_t n, int32_t max_rows, int32_t elem_bytes,
                       const void *src, void *dst, void *stream);

// n elements converted between dtypes (ZG_CU_*).
int zg_cu_convert(int64_t n, const void *src, int32_t src_dtype, void *dst, int32_t dst_dtype,
                  void *stream);

// Device name / count helpers live in attn_cuda.c (runtime API only).

#ifdef __cplusplus
}
#endif

#endif
