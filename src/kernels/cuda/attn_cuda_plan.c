// attn_cuda_plan.c — host-side planning of the CUDA attention calls (attn_cuda_plan.h): plain C,
// no CUDA, in every build.
#include "kernels/cuda/attn_cuda_plan.h"

#include <stdlib.h>

int zg_attn_cuda_tc_aligned(const void *q, const void *k, const void *v, const void *dout,
                            const void *o, const void *dq, const void *dk, const void *dv) {
    uintptr_t in = (uintptr_t)q | (uintptr_t)k | (uintptr_t)v | (uintptr_t)dout;
    uintptr_t out = (uintptr_t)o | (uintptr_t)dq | (uintptr_t)dk | (uintptr_t)dv;
    return (in & 15u) == 0 && (out & 7u) == 0;
}

static const char *dtype_name(int32_t dt) {
    return dt == ZG_DTYPE_F32    ? "f32"
           : dt == ZG_DTYPE_BF16 ? "bf16"
           : dt == ZG_DTYPE_F16  ? "f16"
                                 : "?";
}

zg_status zg_attn_cuda_pick_kernel(int32_t kernel, int32_t dtype, int32_t head_dim, int aligned,
                                   int *tc, zg_error *err) {
    const int dt_ok = dtype == ZG_DTYPE_BF16 || dtype == ZG_DTYPE_F16;
    const int d_ok = head_dim == 64 || head_dim == 128;
    *tc = 0;
    switch (kernel) {
    case ZG_ATTN_CUDA_AUTO: *tc = dt_ok && d_ok && aligned; return ZG_OK;
    case ZG_ATTN_CUDA_SIMPLE: return ZG_OK;
    case ZG_ATTN_CUDA_TC:
        if (!dt_ok)
            return zg_error_set(err, ZG_ERR_UNSUPPORTED,
                                "attention cuda: the tensor-core kernels take bf16 or f16, got %s; "
                                "use ZG_ATTN_CUDA_AUTO or _SIMPLE",
                                dtype_name(dtype));
        if (!d_ok)
            return zg_error_set(err, ZG_ERR_UNSUPPORTED,
                                "attention cuda: the tensor-core kernels take head_dim 64 or 128, "
                                "got %d; use ZG_ATTN_CUDA_AUTO or _SIMPLE",
                                (int)head_dim);
        if (!aligned)
            return zg_error_set(err, ZG_ERR_UNSUPPORTED,
                                "attention cuda: the tensor-core kernels need 16-byte aligned "
                                "q, k, v, dout and 8-byte aligned o, dq, dk, dv; use "
                                "ZG_ATTN_CUDA_AUTO or _SIMPLE");
        *tc = 1;
        return ZG_OK;
    default:
        return zg_error_set(err, ZG_ERR_INVALID,
                            "attention cuda: kernel choice %d is unknown; use ZG_ATTN_CUDA_AUTO, "
                            "_TC or _SIMPLE",
                            (int)kernel);
    }
}

zg_status zg_attn_cuda_check_limits(const zg_attn_slice *sl, int32_t n, zg_attn_shape shape,
                                    zg_error *err) {
    if (shape.n_heads > 65535)
        return zg_error_set(err, ZG_ERR_UNSUPPORTED,
                            "attention cuda: %d heads; at most 65535 per call (split the heads)",
                            (int)shape.n_heads);
    for (int32_t i = 0; i < n; i++)
        if (sl[i].q_len > INT32_MAX - 256 || sl[i].k_len > INT32_MAX - 256)
            return zg_error_set(err, ZG_ERR_UNSUPPORTED,
                                "attention cuda: slice %d has %lld queries and %lld keys; at "
                                "most 2^31 - 257 each",
                                (int)i, (long long)sl[i].q_len, (long long)sl[i].k_len);
    return ZG_OK;
}

typedef struct tile_sort {
    zg_cu_tile t;
    int64_t cost;
} tile_sort;

static int cmp_tile_cost(const void *a, const void *b) {
    const tile_sort *x = a, *y = b;
    if (x->cost != y->cost) return x->cost > y->cost ? -1 : 1;
    if (x->t.slice != y->t.slice) return x->t.slice < y->t.slice ? -1 : 1;
    return (x->t.r0 > y->t.r0) - (x->t.r0 < y->t.r0);
}

zg_status zg_attn_cuda_plan_tiles(const zg_attn_slice *sl, const int32_t *idx, int32_t n,
                                  int by_keys, int32_t block, zg_cu_tile **tiles, int32_t *n_tiles,
                                  zg_error *err) {
    *tiles = NULL;
    *n_tiles = 0;
    if (block < 1)
        return zg_error_set(err, ZG_ERR_INVALID, "attention cuda: tile block %d", (int)block);
    int64_t nt = 0;
    for (int32_t i = 0; i < n; i++) {
        int64_t len = by_keys ? sl[idx[i]].k_len : sl[idx[i]].q_len;
        nt += (len + block - 1) / block;
    }
    if (nt > INT32_MAX)
        return zg_error_set(err, ZG_ERR_UNSUPPORTED,
                            "attention cuda: %lld tiles in one launch (at most 2^31 - 1)",
                            (long long)nt);
    if (nt == 0) return ZG_OK;
    tile_sort *ts = zg_calloc((size_t)nt, sizeof *ts, err);
    zg_cu_tile *out = ts ? zg_calloc((size_t)nt, sizeof *out, err) : NULL;
    if (!out) {
        free(ts);
        return ZG_ERR_NOMEM;
    }
    int64_t x = 0;
    for (int32_t i = 0; i < n; i++) {
        const zg_attn_slice *s = &sl[idx[i]];
        int64_t len = by_keys ? s->k_len : s->q_len, other = by_keys ? s->q_len : s->k_len;
        for (int64_t r = 0; r < len; r += block)
            ts[x++] = (tile_sort){{i, (int32_t)r}, other};
    }
    qsort(ts, (size_t)nt, sizeof *ts, cmp_tile_cost);
    for (int64_t i = 0; i < nt; i++)
        out[i] = ts[i].t;
    free(ts);
    *tiles = out;
    *n_tiles = (int32_t)nt;
    return ZG_OK;
}

typedef struct range_key {
    int64_t start;
    int32_t i;
} range_key;

static int cmp_range(const void *a, const void *b) {
    const range_key *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

zg_status zg_attn_cuda_plan_layers(const zg_attn_slice *sl, const int32_t *idx, int32_t n,
                                   int by_keys, int32_t *layer, int32_t *n_layers, zg_error *err) {
    *n_layers = 0;
    range_key *rk = zg_calloc((size_t)n + 1, sizeof *rk, err);
    int64_t *end = rk ? zg_calloc((size_t)n + 1, sizeof *end, err) : NULL; // per layer: last end
    if (!end) {
        free(rk);
        return ZG_ERR_NOMEM;
    }
    for (int32_t j = 0; j < n; j++)
        rk[j] = (range_key){by_keys ? sl[idx[j]].k_start : sl[idx[j]].q_start, j};
    qsort(rk, (size_t)n, sizeof *rk, cmp_range);
    int32_t nl = 0;
    for (int32_t x = 0; x < n; x++) {
        const zg_attn_slice *s = &sl[idx[rk[x].i]];
        int64_t a = rk[x].start, b = a + (by_keys ? s->k_len : s->q_len);
        int32_t L = 0;
        while (L < nl && end[L] > a)
            L++;
        if (L == nl) nl++;
        end[L] = b;
        layer[rk[x].i] = L;
    }
    free(rk), free(end);
    *n_layers = nl;
    return ZG_OK;
}
