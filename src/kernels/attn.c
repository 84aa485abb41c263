// attn.c — the public attention entry points with default options (fast kernels).
#include "kernels/attn_internal.h"

zg_status zg_attn_forward(const zg_attn_slice *slices, int32_t n_slices, zg_attn_shape shape,
                          const float *q, const float *k, const float *v, float *o, float *lse,
                          zg_error *err) {
    return zg_attn_forward_opts(slices, n_slices, shape, q, k, v, o, lse, NULL, err);
}

zg_status zg_attn_backward(const zg_attn_slice *slices, int32_t n_slices, zg_attn_shape shape,
                           const float *q, const float *k, const float *v, const float *o,
                           const float *lse, const float *dout, float *dq, float *dk, float *dv,
                           zg_error *err) {
    return zg_attn_backward_opts(slices, n_slices, shape, q, k, v, o, lse, dout, dq, dk, dv, NULL,
                                 err);
}
