// attn_cuda.c — host side of the CUDA attention path (kernels.h, "CUDA"): argument checks with
// the same messages as the CPU kernels, the per-call tile lists (which block serves which rows
// of which slice), the backward's layers of row-disjoint slices, one upload of that metadata
// per call, and the launches (attn_cuda_launch.h). Compiled by cc in every build; without
// ZG_HAVE_CUDA every entry point returns ZG_ERR_UNSUPPORTED.
#include <stdlib.h>
#include <string.h>

#include "kernels/attn_internal.h"
#include "kernels/cuda/attn_cuda_plan.h"

#ifdef ZG_HAVE_CUDA
#include <cuda_runtime.h>

_Static_assert(sizeof(zg_cu_copy2d) == sizeof(zg_copy2d), "copy2d layouts must agree");

struct zg_attn_cuda {
    int32_t device;
    cudaStream_t stream;
    int own_stream;
    char *blob; // host: the metadata of the current call, built then uploaded at once
    size_t blob_n, blob_cap;
    void *h_stage; // pinned copy of the blob the upload reads (async, without a stream sync)
    size_t h_stage_cap;
    cudaEvent_t staged; // recorded after each upload: h_stage is free again once it fired
    int staged_live;
    void *d_meta; // device copy of the blob
    size_t d_meta_cap;
    float *d_delta; // backward: delta is (rows, H), rowsum(dO * O)
    size_t delta_cap;
};

static zg_status cuda_fail(zg_error *err, cudaError_t e, const char *what) {
    return zg_error_set(err, e == cudaErrorMemoryAllocation ? ZG_ERR_NOMEM : ZG_ERR_INTERNAL,
                        "attention cuda: %s failed: %s (%s)", what, cudaGetErrorString(e),
                        cudaGetErrorName(e));
}

int zg_cuda_available(void) {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

zg_status zg_cuda_device_count(int32_t *count, char *name, size_t name_len, zg_error *err) {
    int n = 0;
    *count = 0;
    if (name && name_len) name[0] = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess)
        return zg_error_set(err, ZG_ERR_UNSUPPORTED, "cuda: no usable device: %s (%s)",
                            cudaGetErrorString(e), cudaGetErrorName(e));
    *count = n;
    if (n > 0 && name && name_len) {
        struct cudaDeviceProp prop;
        if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
            snprintf(name, name_len, "%s (sm_%d%d, %d SMs, %.1f GiB)", prop.name, prop.major,
                     prop.minor, prop.multiProcessorCount,
                     (double)prop.totalGlobalMem / (1024.0 * 1024.0 * 1024.0));
    }
    return ZG_OK;
}

zg_status zg_attn_cuda_init(zg_attn_cuda **out, int32_t device, void *stream, zg_error *err) {
    *out = NULL;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) return cuda_fail(err, e, "cudaGetDeviceCount");
    if (device < 0 || device >= n)
        return zg_error_set(err, ZG_ERR_INVALID, "attention cuda: device %d outside [0, %d)",
                            (int)device, n);
    if ((e = cudaSetDevice(device)) != cudaSuccess) return cuda_fail(err, e, "cudaSetDevice");
    zg_attn_cuda *c = zg_calloc(1, sizeof *c, err);
    if (!c) return ZG_ERR_NOMEM;
    c->device = device;
    if (stream) {
        c->stream = (cudaStream_t)stream;
    } else {
        if ((e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking)) != cudaSuccess) {
            free(c);
            return cuda_fail(err, e, "cudaStreamCreate");
        }
        c->own_stream = 1;
    }
    if ((e = cudaEventCreateWithFlags(&c->staged, cudaEventDisableTiming)) != cudaSuccess) {
        if (c->own_stream) cudaStreamDestroy(c->stream);
        free(c);
        return cuda_fail(err, e, "cudaEventCreate");
    }
    *out = c;
    return ZG_OK;
}

void zg_attn_cuda_free(zg_attn_cuda *c) {
    if (!c) return;
    cudaSetDevice(c->device);
    cudaStreamSynchronize(c->stream);
    cudaFree(c->d_meta);
    cudaFree(c->d_delta);
    cudaFreeHost(c->h_stage);
    if (c->staged) cudaEventDestroy(c->staged);
    if (c->own_stream) cudaStreamDestroy(c->stream);
    free(c->blob);
    free(c);
}

void *zg_attn_cuda_stream(const zg_attn_cuda *c) {
    return c ? (void *)c->stream : NULL;
}

zg_status zg_attn_cuda_sync(zg_attn_cuda *c, zg_error *err) {
    cudaError_t e = cudaSetDevice(c->device);
    if (e == cudaSuccess) e = cudaStreamSynchronize(c->stream);
    return e == cudaSuccess ? ZG_OK : cuda_fail(err, e, "a queued kernel");
}

// ---------------------------------------------------------------------------------------------
// Metadata blob: sections appended on the host (16-byte aligned), uploaded once per call.

static zg_status blob_reset(zg_attn_cuda *c) {
    c->blob_n = 0;
    return ZG_OK;
}

// Appends `bytes` (zero-filled), returns the section's offset in *off.
static zg_status blob_add(zg_attn_cuda *c, size_t bytes, size_t *off, zg_error *err) {
    size_t at = (c->blob_n + 15) & ~(size_t)15;
    if (at + bytes > c->blob_cap) {
        size_t cap = c->blob_cap ? c->blob_cap : 4096;
        while (cap < at + bytes)
            cap *= 2;
        char *b = realloc(c->blob, cap);
        if (!b)
            return zg_error_set(err, ZG_ERR_NOMEM, "attention cuda: %zu bytes of tile lists", cap);
        c->blob = b;
        c->blob_cap = cap;
    }
    memset(c->blob + at, 0, bytes);
    *off = at;
    c->blob_n = at + bytes;
    return ZG_OK;
}

// Grows a device buffer to at least `bytes` (waiting for the stream first: queued kernels may
// still read the old one).
static zg_status dev_reserve(zg_attn_cuda *c, void **buf, size_t *cap, size_t bytes,
                             const char *what, zg_error *err) {
    if (bytes <= *cap) return ZG_OK;
    cudaError_t e = cudaStreamSynchronize(c->stream);
    if (e != cudaSuccess) return cuda_fail(err, e, "a queued kernel");
    cudaFree(*buf);
    *buf = NULL;
    *cap = 0;
    size_t want = bytes < 65536 ? 65536 : bytes + bytes / 2;
    if ((e = cudaMalloc(buf, want)) != cudaSuccess) return cuda_fail(err, e, what);
    *cap = want;
    return ZG_OK;
}

// Uploads the blob through the pinned staging buffer (stream-ordered after earlier calls, whose
// kernels may still read the old device copy). The host waits only for the previous upload to
// have left the staging buffer, so it can build the next call while kernels run.
static zg_status blob_upload(zg_attn_cuda *c, zg_error *err) {
    zg_status st =
        dev_reserve(c, &c->d_meta, &c->d_meta_cap, c->blob_n, "cudaMalloc (tile lists)", err);
    if (st || c->blob_n == 0) return st;
    cudaError_t e = c->staged_live ? cudaEventSynchronize(c->staged) : cudaSuccess;
    if (e != cudaSuccess) return cuda_fail(err, e, "a queued kernel");
    if (c->blob_n > c->h_stage_cap) {
        cudaFreeHost(c->h_stage);
        c->h_stage = NULL;
        c->h_stage_cap = 0;
        size_t want = c->blob_n < 65536 ? 65536 : c->blob_n + c->blob_n / 2;
        if ((e = cudaMallocHost(&c->h_stage, want)) != cudaSuccess)
            return cuda_fail(err, e, "cudaMallocHost (tile lists)");
        c->h_stage_cap = want;
    }
    memcpy(c->h_stage, c->blob, c->blob_n);
    e = cudaMemcpyAsync(c->d_meta, c->h_stage, c->blob_n, cudaMemcpyHostToDevice, c->stream);
    if (e == cudaSuccess) e = cudaEventRecord(c->staged, c->stream);
    c->staged_live = e == cudaSuccess;
    return e == cudaSuccess ? ZG_OK : cuda_fail(err, e, "upload of the tile lists");
}

static const void *dev_at(const zg_attn_cuda *c, size_t off) {
    return (const char *)c->d_meta + off;
}

// ---------------------------------------------------------------------------------------------
// Checks.

static zg_status check_dtype(int32_t dt, zg_error *err) {
    if (dt == ZG_DTYPE_F32 || dt == ZG_DTYPE_BF16 || dt == ZG_DTYPE_F16) return ZG_OK;
    return zg_error_set(err, ZG_ERR_INVALID,
                        "attention cuda: dtype %d is unknown; use ZG_DTYPE_F32, _BF16 or _F16",
                        (int)dt);
}

// Every non-NULL buffer must be device (or managed) memory on the context's device.
static zg_status check_device_ptrs(const zg_attn_cuda *c, const void *const *bufs,
                                   const char *const *names, int n, zg_error *err) {
    for (int i = 0; i < n; i++) {
        if (!bufs[i]) continue;
        struct cudaPointerAttributes a;
        cudaError_t e = cudaPointerGetAttributes(&a, bufs[i]);
        if (e != cudaSuccess) {
            cudaGetLastError(); // clear the sticky-free error of a failed query
            return zg_error_set(err, ZG_ERR_INVALID,
                                "attention cuda: buffer '%s' (%p) is not CUDA memory: %s", names[i],
                                bufs[i], cudaGetErrorString(e));
        }
        if (a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "attention cuda: buffer '%s' (%p) is host memory; pass device "
                                "pointers (cudaMalloc)",
                                names[i], bufs[i]);
        if (a.type == cudaMemoryTypeDevice && a.device != c->device)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "attention cuda: buffer '%s' is on device %d, the context on %d",
                                names[i], a.device, (int)c->device);
    }
    return ZG_OK;
}

static zg_status launched(int rc, const char *what, zg_error *err) {
    return rc == 0 ? ZG_OK : cuda_fail(err, (cudaError_t)rc, what);
}

// ---------------------------------------------------------------------------------------------
// Tile lists.

// The tiles of zg_attn_cuda_plan_tiles appended to the blob at *off.
static zg_status add_tiles(zg_attn_cuda *c, const zg_attn_slice *sl, const int32_t *idx, int32_t n,
                           int by_keys, int32_t block, size_t *off, int32_t *n_tiles,
                           zg_error *err) {
    zg_cu_tile *t = NULL;
    zg_status st = zg_attn_cuda_plan_tiles(sl, idx, n, by_keys, block, &t, n_tiles, err);
    if (!st) st = blob_add(c, (size_t)*n_tiles * sizeof(zg_cu_tile), off, err);
    if (!st && *n_tiles > 0) memcpy(c->blob + *off, t, (size_t)*n_tiles * sizeof(zg_cu_tile));
    free(t);
    return st;
}

// The sub-list sl[idx[0..n)] as zg_cu_slice, and (for the simple kernels) row offsets over
// their q (or k) lengths; offsets into the blob.
static zg_status add_slices(zg_attn_cuda *c, const zg_attn_slice *sl, const int32_t *idx, int32_t n,
                            int by_keys, size_t *sl_off, size_t *row_off, int64_t *n_rows,
                            zg_error *err) {
    zg_status st = blob_add(c, (size_t)n * sizeof(zg_cu_slice), sl_off, err);
    if (!st) st = blob_add(c, ((size_t)n + 1) * sizeof(int64_t), row_off, err);
    if (st) return st;
    zg_cu_slice *s = (zg_cu_slice *)(c->blob + *sl_off);
    int64_t *ro = (int64_t *)(c->blob + *row_off), r = 0;
    for (int32_t i = 0; i < n; i++) {
        const zg_attn_slice *x = &sl[idx[i]];
        s[i] = (zg_cu_slice){x->q_start, x->q_len, x->k_start, x->k_len};
        ro[i] = r;
        r += by_keys ? x->k_len : x->q_len;
    }
    ro[n] = r;
    *n_rows = r;
    return ZG_OK;
}

// ---------------------------------------------------------------------------------------------
// Forward.

zg_status zg_attn_cuda_forward(zg_attn_cuda *c, const zg_attn_slice *slices, int32_t n_slices,
                               zg_attn_shape shape, int32_t dtype, const void *q, const void *k,
                               const void *v, float *o, float *lse, int32_t kernel, zg_error *err) {
    if (!c) return zg_error_set(err, ZG_ERR_INVALID, "attention cuda: context is NULL");
    zg_status st = zg_attn_check_shape(shape, err);
    if (!st) st = check_dtype(dtype, err);
    if (!st) st = zg_attn_check_slices(slices, n_slices, 1, err);
    const void *bufs[] = {q, k, v, o, lse};
    const char *names[] = {"q", "k", "v", "o", "lse"};
    if (!st) st = zg_attn_check_bufs(slices, n_slices, bufs, names, 5, err);
    if (!st) st = zg_attn_cuda_check_limits(slices, n_slices, shape, err);
    int tc = 0;
    if (!st)
        st = zg_attn_cuda_pick_kernel(kernel, dtype, shape.head_dim,
                                      zg_attn_cuda_tc_aligned(q, k, v, NULL, o, NULL, NULL, NULL),
                                      &tc, err);
    if (st) return st;
    cudaError_t e = cudaSetDevice(c->device);
    if (e != cudaSuccess) return cuda_fail(err, e, "cudaSetDevice");
    if ((st = check_device_ptrs(c, bufs, names, 5, err))) return st;

    int32_t *idx = zg_calloc((size_t)n_slices + 1, sizeof *idx, err), n = 0;
    if (!idx) return ZG_ERR_NOMEM;
    for (int32_t i = 0; i < n_slices; i++)
        if (slices[i].q_len > 0) idx[n++] = i;
    zg_cu_args a = {.dtype = dtype,
                    .H = shape.n_heads,
                    .D = shape.head_dim,
                    .scale = shape.scale,
                    .q = q,
                    .k = k,
                    .v = v,
                    .o = o,
                    .lse = lse};
    size_t sl_off = 0, ro_off = 0, t_off = 0;
    blob_reset(c);
    st = add_slices(c, slices, idx, n, 0, &sl_off, &ro_off, &a.n_rows, err);
    if (!st && tc) st = add_tiles(c, slices, idx, n, 0, ZG_CU_TC_BM, &t_off, &a.n_tiles, err);
    free(idx);
    if (!st && n > 0) st = blob_upload(c, err);
    if (st || n == 0) return st;
    a.slices = dev_at(c, sl_off);
    a.row_off = dev_at(c, ro_off);
    a.n_slices = n;
    a.tiles = dev_at(c, t_off);
    if (tc) return launched(zg_cu_attn_fwd_tc(&a, c->stream), "tensor-core forward launch", err);
    return launched(zg_cu_attn_fwd_simple(&a, c->stream), "simple forward launch", err);
}

// ---------------------------------------------------------------------------------------------
// Backward.

// One pass (dq or dkdv) over its layers: for each layer, the sub-list of its slices (in list
// order), their row offsets and tiles, appended to the blob; launched after the upload.
typedef struct pass_layer {
    size_t sl_off, ro_off, t_off;
    int32_t n, n_tiles;
    int64_t n_rows;
} pass_layer;

static zg_status plan_pass(zg_attn_cuda *c, const zg_attn_slice *sl, const int32_t *idx, int32_t n,
                           int by_keys, int tc, pass_layer **out, int32_t *n_out, zg_error *err) {
    int32_t *layer = zg_calloc((size_t)n + 1, sizeof *layer, err);
    int32_t *sub = zg_calloc((size_t)n + 1, sizeof *sub, err);
    int32_t nl = 0;
    zg_status st = layer && sub ? zg_attn_cuda_plan_layers(sl, idx, n, by_keys, layer, &nl, err)
                                : ZG_ERR_NOMEM;
    pass_layer *pl = st ? NULL : zg_calloc((size_t)nl + 1, sizeof *pl, err);
    if (!st && !pl) st = ZG_ERR_NOMEM;
    for (int32_t L = 0; L < nl && !st; L++) {
        int32_t m = 0;
        for (int32_t j = 0; j < n; j++)
            if (layer[j] == L) sub[m++] = idx[j];
        pl[L].n = m;
        st = add_slices(c, sl, sub, m, by_keys, &pl[L].sl_off, &pl[L].ro_off, &pl[L].n_rows, err);
        if (!st && tc)
            st = add_tiles(c, sl, sub, m, by_keys, by_keys ? ZG_CU_TC_BN : ZG_CU_TC_BM,
                           &pl[L].t_off, &pl[L].n_tiles, err);
    }
    free(layer), free(sub);
    if (st) {
        free(pl);
        return st;
    }
    *out = pl;
    *n_out = nl;
    return ZG_OK;
}

zg_status zg_attn_cuda_backward(zg_attn_cuda *c, const zg_attn_slice *slices, int32_t n_slices,
                                zg_attn_shape shape, int32_t dtype, const void *q, const void *k,
                                const void *v, const float *o, const float *lse, const void *dout,
                                float *dq, float *dk, float *dv, int32_t kernel, zg_error *err) {
    if (!c) return zg_error_set(err, ZG_ERR_INVALID, "attention cuda: context is NULL");
    zg_status st = zg_attn_check_shape(shape, err);
    if (!st) st = check_dtype(dtype, err);
    if (!st) st = zg_attn_check_slices(slices, n_slices, 0, err);
    const void *bufs[] = {q, k, v, o, lse, dout, dq, dk, dv};
    const char *names[] = {"q", "k", "v", "o", "lse", "dout", "dq", "dk", "dv"};
    if (!st) st = zg_attn_check_bufs(slices, n_slices, bufs, names, 9, err);
    if (!st) st = zg_attn_cuda_check_limits(slices, n_slices, shape, err);
    int tc = 0;
    if (!st)
        st = zg_attn_cuda_pick_kernel(kernel, dtype, shape.head_dim,
                                      zg_attn_cuda_tc_aligned(q, k, v, dout, o, dq, dk, dv), &tc,
                                      err);
    if (st) return st;
    cudaError_t e = cudaSetDevice(c->device);
    if (e != cudaSuccess) return cuda_fail(err, e, "cudaSetDevice");
    if ((st = check_device_ptrs(c, bufs, names, 9, err))) return st;

    int32_t *idx = zg_calloc((size_t)n_slices + 1, sizeof *idx, err), n = 0;
    if (!idx) return ZG_ERR_NOMEM;
    int64_t q_end = 0;
    for (int32_t i = 0; i < n_slices; i++)
        if (slices[i].q_len > 0 && slices[i].k_len > 0) {
            idx[n++] = i;
            if (slices[i].q_start + slices[i].q_len > q_end)
                q_end = slices[i].q_start + slices[i].q_len;
        }
    zg_cu_args a = {.dtype = dtype,
                    .H = shape.n_heads,
                    .D = shape.head_dim,
                    .scale = shape.scale,
                    .q = q,
                    .k = k,
                    .v = v,
                    .dout = dout,
                    .o = (float *)o,
                    .lse = (float *)lse,
                    .dq = dq,
                    .dk = dk,
                    .dv = dv};
    pass_layer *lq = NULL, *lk = NULL;
    int32_t nlq = 0, nlk = 0, n_dt = 0;
    size_t all_off = 0, all_ro = 0, dt_off = 0;
    int64_t all_rows = 0;
    blob_reset(c);
    if (n > 0) {
        // delta tiles over every slice's query rows (rows shared by slices get the same value)
        st = add_slices(c, slices, idx, n, 0, &all_off, &all_ro, &all_rows, err);
        if (!st && tc) st = add_tiles(c, slices, idx, n, 0, ZG_CU_TC_BM, &dt_off, &n_dt, err);
        if (!st) st = plan_pass(c, slices, idx, n, 1, tc, &lk, &nlk, err);
        if (!st) st = plan_pass(c, slices, idx, n, 0, tc, &lq, &nlq, err);
        if (!st && tc)
            st = dev_reserve(c, (void **)&c->d_delta, &c->delta_cap,
                             (size_t)q_end * (size_t)shape.n_heads * sizeof(float),
                             "cudaMalloc (delta)", err);
        if (!st) st = blob_upload(c, err);
    }
    free(idx);
    a.delta = c->d_delta;
    if (!st && tc && n > 0) {
        a.slices = dev_at(c, all_off);
        a.tiles = dev_at(c, dt_off);
        a.n_tiles = n_dt;
        st = launched(zg_cu_attn_bwd_delta(&a, c->stream), "backward delta launch", err);
    }
    // dK/dV layers, then dQ layers (different outputs; inside a pass, layers in order)
    for (int pass = 0; pass < 2 && !st; pass++) {
        const pass_layer *pl = pass == 0 ? lk : lq;
        int32_t nl = pass == 0 ? nlk : nlq;
        for (int32_t L = 0; L < nl && !st; L++) {
            a.slices = dev_at(c, pl[L].sl_off);
            a.row_off = dev_at(c, pl[L].ro_off);
            a.n_slices = pl[L].n;
            a.n_rows = pl[L].n_rows;
            a.tiles = dev_at(c, pl[L].t_off);
            a.n_tiles = pl[L].n_tiles;
            int rc = pass == 0 ? (tc ? zg_cu_attn_bwd_dkdv_tc(&a, c->stream)
                                     : zg_cu_attn_bwd_dkdv_simple(&a, c->stream))
                               : (tc ? zg_cu_attn_bwd_dq_tc(&a, c->stream)
                                     : zg_cu_attn_bwd_dq_simple(&a, c->stream));
            st = launched(rc, pass == 0 ? "backward dK/dV launch" : "backward dQ launch", err);
        }
    }
    free(lq), free(lk);
    return st;
}

// ---------------------------------------------------------------------------------------------
// Merge, copies, conversion.

zg_status zg_attn_cuda_merge(zg_attn_cuda *c, int64_t rows, zg_attn_shape shape, float *o1,
                             float *lse1, const float *o2, const float *lse2, zg_error *err) {
    if (!c) return zg_error_set(err, ZG_ERR_INVALID, "attention cuda: context is NULL");
    zg_status st = zg_attn_check_shape(shape, err);
    if (st) return st;
    if (rows < 0)
        return zg_error_set(err, ZG_ERR_INVALID, "attention cuda merge: rows %lld is negative",
                            (long long)rows);
    if (rows == 0) return ZG_OK;
    const void *bufs[] = {o1, lse1, o2, lse2};
    const char *names[] = {"o1", "lse1", "o2", "lse2"};
    for (int i = 0; i < 4; i++)
        if (!bufs[i])
            return zg_error_set(err, ZG_ERR_INVALID, "attention cuda merge: '%s' is NULL",
                                names[i]);
    cudaError_t e = cudaSetDevice(c->device);
    if (e != cudaSuccess) return cuda_fail(err, e, "cudaSetDevice");
    if ((st = check_device_ptrs(c, bufs, names, 4, err))) return st;
    return launched(
        zg_cu_attn_merge(rows, shape.n_heads, shape.head_dim, o1, lse1, o2, lse2, c->stream),
        "merge launch", err);
}

zg_status zg_cuda_copy2d(zg_attn_cuda *c, const zg_copy2d *descs, int32_t n, int32_t elem_bytes,
                         const void *src, void *dst, zg_error *err) {
    if (!c) return zg_error_set(err, ZG_ERR_INVALID, "cuda copy2d: context is NULL");
    if (elem_bytes != 2 && elem_bytes != 4 && elem_bytes != 8)
        return zg_error_set(err, ZG_ERR_INVALID, "cuda copy2d: elem_bytes %d is not 2, 4 or 8",
                            (int)elem_bytes);
    if (n < 0 || (n > 0 && !descs))
        return zg_error_set(err, ZG_ERR_INVALID, "cuda copy2d: %d descriptors at %p", (int)n,
                            (const void *)descs);
    int64_t max_rows = 0;
    for (int32_t i = 0; i < n; i++) {
        const zg_copy2d *d = &descs[i];
        if (d->src_off < 0 || d->dst_off < 0 || d->rows < 0 || d->width < 0 || d->src_ld < 0 ||
            d->dst_ld < 0)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "cuda copy2d: descriptor %d has a negative field (offsets %lld, "
                                "%lld; rows %lld of %lld; strides %lld, %lld)",
                                (int)i, (long long)d->src_off, (long long)d->dst_off,
                                (long long)d->rows, (long long)d->width, (long long)d->src_ld,
                                (long long)d->dst_ld);
        if (d->rows > max_rows) max_rows = d->rows;
    }
    if (n == 0 || max_rows == 0) return ZG_OK;
    const void *bufs[] = {src, dst};
    const char *names[] = {"src", "dst"};
    if (!src || !dst) return zg_error_set(err, ZG_ERR_INVALID, "cuda copy2d: src or dst is NULL");
    cudaError_t e = cudaSetDevice(c->device);
    if (e != cudaSuccess) return cuda_fail(err, e, "cudaSetDevice");
    zg_status st = check_device_ptrs(c, bufs, names, 2, err);
    size_t off = 0;
    blob_reset(c);
    if (!st) st = blob_add(c, (size_t)n * sizeof(zg_copy2d), &off, err);
    if (st) return st;
    memcpy(c->blob + off, descs, (size_t)n * sizeof(zg_copy2d));
    if ((st = blob_upload(c, err))) return st;
    return launched(zg_cu_copy2d_batch(dev_at(c, off), n,
                                       (int32_t)(max_rows > 65535 ? 65535 : max_rows), elem_bytes,
                                       src, dst, c->stream),
                    "copy2d launch", err);
}

static zg_status heads_descs(int32_t H, int32_t w, int64_t t0, int64_t n, int32_t h0, int32_t nh,
                             int64_t y_row, int to_heads, zg_copy2d *d, zg_error *err) {
    if (H < 1 || w < 1 || t0 < 0 || n < 0 || h0 < 0 || nh < 0 || h0 + nh > H || y_row < 0)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "cuda pack_heads: heads [%d, %d) of %d, width %d, tokens [%lld, "
                            "+%lld), work row %lld: out of range",
                            (int)h0, (int)(h0 + nh), (int)H, (int)w, (long long)t0, (long long)n,
                            (long long)y_row);
    for (int32_t j = 0; j < nh; j++) {
        int64_t tok = (t0 * H + h0 + j) * (int64_t)w, work = (y_row + (int64_t)j * n) * w;
        d[j] = (zg_copy2d){to_heads ? tok : work,         to_heads ? work : tok,        n, w,
                           to_heads ? (int64_t)H * w : w, to_heads ? w : (int64_t)H * w};
    }
    return ZG_OK;
}

static zg_status pack_heads(zg_attn_cuda *c, const void *src, void *dst, int32_t H, int32_t w,
                            int64_t t0, int64_t n, int32_t h0, int32_t nh, int64_t y_row,
                            int to_heads, int32_t elem_bytes, zg_error *err) {
    zg_copy2d *d = zg_calloc((size_t)(nh > 0 ? nh : 1), sizeof *d, err);
    if (!d) return ZG_ERR_NOMEM;
    zg_status st = heads_descs(H, w, t0, n, h0, nh, y_row, to_heads, d, err);
    if (!st) st = zg_cuda_copy2d(c, d, nh, elem_bytes, src, dst, err);
    free(d);
    return st;
}

zg_status zg_cuda_pack_heads(zg_attn_cuda *c, const void *x, int32_t H, int32_t w, int64_t t0,
                             int64_t n, int32_t h0, int32_t nh, void *y, int64_t y_row,
                             int32_t elem_bytes, zg_error *err) {
    return pack_heads(c, x, y, H, w, t0, n, h0, nh, y_row, 1, elem_bytes, err);
}

zg_status zg_cuda_unpack_heads(zg_attn_cuda *c, const void *y, int64_t y_row, void *x, int32_t H,
                               int32_t w, int64_t t0, int64_t n, int32_t h0, int32_t nh,
                               int32_t elem_bytes, zg_error *err) {
    return pack_heads(c, y, x, H, w, t0, n, h0, nh, y_row, 0, elem_bytes, err);
}

zg_status zg_cuda_convert(zg_attn_cuda *c, int64_t n, const void *src, int32_t src_dtype, void *dst,
                          int32_t dst_dtype, zg_error *err) {
    if (!c) return zg_error_set(err, ZG_ERR_INVALID, "cuda convert: context is NULL");
    zg_status st = check_dtype(src_dtype, err);
    if (!st) st = check_dtype(dst_dtype, err);
    if (st) return st;
    if (n < 0) return zg_error_set(err, ZG_ERR_INVALID, "cuda convert: n %lld", (long long)n);
    if (n == 0) return ZG_OK;
    if (!src || !dst) return zg_error_set(err, ZG_ERR_INVALID, "cuda convert: src or dst is NULL");
    cudaError_t e = cudaSetDevice(c->device);
    if (e != cudaSuccess) return cuda_fail(err, e, "cudaSetDevice");
    const void *bufs[] = {src, dst};
    const char *names[] = {"src", "dst"};
    if ((st = check_device_ptrs(c, bufs, names, 2, err))) return st;
    return launched(zg_cu_convert(n, src, src_dtype, dst, dst_dtype, c->stream), "convert launch",
                    err);
}

#else // no CUDA in this build: every entry point says so

static zg_status no_cuda(zg_error *err) {
    return zg_error_set(err, ZG_ERR_UNSUPPORTED,
                        "cuda: this build has no CUDA (nvcc was not found, or NO_CUDA=1); "
                        "use the CPU kernels");
}

int zg_cuda_available(void) {
    return 0;
}

zg_status zg_cuda_device_count(int32_t *count, char *name, size_t name_len, zg_error *err) {
    *count = 0;
    if (name && name_len) name[0] = 0;
    return no_cuda(err);
}

zg_status zg_attn_cuda_init(zg_attn_cuda **ctx, int32_t device, void *stream, zg_error *err) {
    *ctx = NULL;
    return no_cuda(err);
}

void zg_attn_cuda_free(zg_attn_cuda *ctx) {}

void *zg_attn_cuda_stream(const zg_attn_cuda *ctx) {
    return NULL;
}

zg_status zg_attn_cuda_sync(zg_attn_cuda *ctx, zg_error *err) {
    return no_cuda(err);
}

zg_status zg_attn_cuda_forward(zg_attn_cuda *ctx, const zg_attn_slice *slices, int32_t n_slices,
                               zg_attn_shape shape, int32_t dtype, const void *q, const void *k,
                               const void *v, float *o, float *lse, int32_t kernel, zg_error *err) {
    return no_cuda(err);
}

zg_status zg_attn_cuda_backward(zg_attn_cuda *ctx, const zg_attn_slice *slices, int32_t n_slices,
                                zg_attn_shape shape, int32_t dtype, const void *q, const void *k,
                                const void *v, const float *o, const float *lse, const void *dout,
                                float *dq, float *dk, float *dv, int32_t kernel, zg_error *err) {
    return no_cuda(err);
}

zg_status zg_attn_cuda_merge(zg_attn_cuda *ctx, int64_t rows, zg_attn_shape shape, float *o1,
                             float *lse1, const float *o2, const float *lse2, zg_error *err) {
    return no_cuda(err);
}

zg_status zg_cuda_copy2d(zg_attn_cuda *ctx, const zg_copy2d *descs, int32_t n, int32_t elem_bytes,
                         const void *src, void *dst, zg_error *err) {
    return no_cuda(err);
}

zg_status zg_cuda_pack_heads(zg_attn_cuda *ctx, const void *x, int32_t H, int32_t w, int64_t t0,
                             int64_t n, int32_t h0, int32_t nh, void *y, int64_t y_row,
                             int32_t elem_bytes, zg_error *err) {
    return no_cuda(err);
}

zg_status zg_cuda_unpack_heads(zg_attn_cuda *ctx, const void *y, int64_t y_row, void *x, int32_t H,
                               int32_t w, int64_t t0, int64_t n, int32_t h0, int32_t nh,
                               int32_t elem_bytes, zg_error *err) {
    return no_cuda(err);
}

zg_status zg_cuda_convert(zg_attn_cuda *ctx, int64_t n, const void *src, int32_t src_dtype,
                          void *dst, int32_t dst_dtype, zg_error *err) {
    return no_cuda(err);
}

#endif
