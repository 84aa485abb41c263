// attn_cuda_plan.h — the host-side planning of the CUDA attention calls, in plain C with no CUDA
// (compiled in every build, unit-tested on machines without a GPU: tests/kernels/
// test_attn_cuda_plan.c): argument checks that decide the kernels, the tile lists (which thread
// block serves which rows of which slice) and the backward's layers of row-disjoint slices.
// attn_cuda.c uploads and launches what these return. Not part of the public API.
#ifndef ZG_ATTN_CUDA_PLAN_H
#define ZG_ATTN_CUDA_PLAN_H

#include "kernels/cuda/attn_cuda_launch.h"
#include "kernels/kernels.h"

_Static_assert(sizeof(zg_cu_slice) == sizeof(zg_attn_slice), "slice layouts must agree");

// 1 when the tensor-core kernels may take these pointers: q, k, v, dout 16-byte aligned (cp.async
// of 16 bytes; every row offset is a multiple of 16 bytes at D = 64/128 in 16-bit types) and o, dq,
// dk, dv 8-byte aligned (float2 stores). NULL pointers count as aligned.
int zg_attn_cuda_tc_aligned(const void *q, const void *k, const void *v, const void *dout,
                            const void *o, const void *dq, const void *dk, const void *dv);

// Which kernels run for a zg_attn_cuda_kernel choice: *tc = 1 for the tensor-core kernels (bf16
// or f16, D 64 or 128, aligned). ZG_ATTN_CUDA_TC where they cannot run: ZG_ERR_UNSUPPORTED with
// the reason; an unknown choice: ZG_ERR_INVALID.
zg_status zg_attn_cuda_pick_kernel(int32_t kernel, int32_t dtype, int32_t head_dim, int aligned,
                                   int *tc, zg_error *err);

// The launch geometry's limits: heads are grid.y (<= 65535); rows and tile offsets are int32.
zg_status zg_attn_cuda_check_limits(const zg_attn_slice *slices, int32_t n_slices,
                                    zg_attn_shape shape, zg_error *err);

// Tiles over the slices idx[0..n) of sl: rows [r0, r0 + block) of the q range (by_keys = 0:
// forward, delta, dQ) or the k range (by_keys = 1: dK/dV), tile.slice = the position in idx (the
// uploaded sub-list). Every row of every listed slice is in exactly one tile; empty ranges give
// none. Sorted by the other range's length, longest first (ties: slice, r0), so long blocks
// start first; a deterministic function of the list. *tiles is malloc'd (free it), NULL when
// *n_tiles is 0. ZG_ERR_UNSUPPORTED past INT32_MAX tiles.
zg_status zg_attn_cuda_plan_tiles(const zg_attn_slice *sl, const int32_t *idx, int32_t n,
                                  int by_keys, int32_t block, zg_cu_tile **tiles, int32_t *n_tiles,
                                  zg_error *err);

// Layers of pairwise disjoint ranges (q ranges, or k ranges when by_keys) over the slices
// idx[0..n): first fit over the slices sorted by (start, position), which uses as few layers as
// the deepest overlap. layer[j] receives the layer of idx[j]; *n_layers the count (0 for n = 0).
zg_status zg_attn_cuda_plan_layers(const zg_attn_slice *sl, const int32_t *idx, int32_t n,
                                   int by_keys, int32_t *layer, int32_t *n_layers, zg_error *err);

#endif
