// dit — a Wan-style diffusion transformer in C: parameters, forward and backward of every op,
// rectified-flow loss, AdamW. Single-process math; the distributed engine plugs in through the
// self-attention callback (zg_dit_attn), so the same model runs under any placement plan.
//
// Per-token layout: a rank holds T tokens packed token-major, grouped in runs of the same sample
// (whole sequences or shards). Each token carries its sample's local index, and its latent
// position (frame, row, col) for 3D RoPE. Conditioning (timestep, text) is per sample.
//
// May include: kernels, model, core.
#ifndef ZG_DIT_H
#define ZG_DIT_H

#include "kernels/kernels.h"
#include "model/model.h"

// ---------------------------------------------------------------------------------------------
// Ops (ops.c). Every op has a forward and a backward; backward ACCUMULATES into parameter
// gradients and (unless noted) OVERWRITES the input gradient. Linear uses BLAS; the
// *_ref variant is a plain triple loop used by tests.

// y (T, out) = x (T, in) · W^T + b, W is (out, in) row-major, b (out) may be NULL.
void zg_linear_forward(int64_t T, int32_t in, int32_t out, const float *x, const float *w,
                       const float *b, float *y);
void zg_linear_forward_ref(int64_t T, int32_t in, int32_t out, const float *x, const float *w,
                           const float *b, float *y);
// dx (T, in) = dy·W (overwritten if dx != NULL); dw (out, in) += dy^T·x; db (out) += Σ dy.
void zg_linear_backward(int64_t T, int32_t in, int32_t out, const float *x, const float *w,
                        const float *dy, float *dx, float *dw, float *db);

// LayerNorm over the last dim C (eps 1e-6), optional affine (w, b may be NULL).
// Saves mean and rstd (T) for backward.
void zg_layernorm_forward(int64_t T, int32_t C, const float *x, const float *w, const float *b,
                          float *y, float *mean, float *rstd);
void zg_layernorm_backward(int64_t T, int32_t C, const float *x, const float *w,
                           const float *mean, const float *rstd, const float *dy, float *dx,
                           float *dw, float *db);
// RMSNorm over C with weight w (eps 1e-6); saves rstd (T).
void zg_rmsnorm_forward(int64_t T, int32_t C, const float *x, const float *w, float *y,
                        float *rstd);
void zg_rmsnorm_backward(int64_t T, int32_t C, const float *x, const float *w, const float *rstd,
                         const float *dy, float *dx, float *dw);

// adaLN modulation: y = x * (1 + scale[s]) + shift[s] for each token's sample s; mod rows are
// (n_samples, stride) with shift at column offset `shift_off`, scale at `scale_off` (C wide).
void zg_modulate_forward(int64_t T, int32_t C, const float *x, const int32_t *sample,
                         const float *mod, int32_t stride, int32_t shift_off, int32_t scale_off,
                         float *y);
// dx overwritten; dmod (n_samples, stride) accumulated.
void zg_modulate_backward(int64_t T, int32_t C, const float *x, const int32_t *sample,
                          const float *mod, int32_t stride, int32_t shift_off, int32_t scale_off,
                          const float *dy, float *dx, float *dmod);
// Gated residual: x += y * gate[s] (in place on x). Backward: dy = dx*gate, dgate += Σ dx*y.
void zg_gate_residual_forward(int64_t T, int32_t C, float *x, const float *y,
                              const int32_t *sample, const float *mod, int32_t stride,
                              int32_t gate_off);
void zg_gate_residual_backward(int64_t T, int32_t C, const float *dx, const float *y,
                               const int32_t *sample, const float *mod, int32_t stride,
                               int32_t gate_off, float *dy, float *dmod);

// GELU (tanh approximation) and SiLU, elementwise over n values.
void zg_gelu_forward(int64_t n, const float *x, float *y);
void zg_gelu_backward(int64_t n, const float *x, const float *dy, float *dx);
void zg_silu_forward(int64_t n, const float *x, float *y);
void zg_silu_backward(int64_t n, const float *x, const float *dy, float *dx);

// 3D RoPE on a (T, H, D) tensor in place: D splits into (frame, row, col) parts of
// D - 4*(D/6), 2*(D/6), 2*(D/6) (each even), rotated in adjacent pairs by the token's position
// with base 10000. Backward is the inverse rotation (in place on the gradient).
void zg_rope3d_forward(int64_t T, int32_t H, int32_t D, const int32_t *pos, float *x);
void zg_rope3d_backward(int64_t T, int32_t H, int32_t D, const int32_t *pos, float *dx);

// Sinusoidal timestep embedding (n, dim): [cos(t*1000*f_i), sin(t*1000*f_i)], f_i = 10000^(-i/half).
void zg_timestep_embedding(int32_t n, int32_t dim, const float *t, float *out);

// ---------------------------------------------------------------------------------------------
// Parameters: one allocation, pointer struct (llm.c style).

// One attention's parameters (self- and cross-attention alike): q = RMSNorm(x Wq + bq),
// k = RMSNorm(kv Wk + bk), v = kv Wv + bv, out = attn(q, k, v) Wo + bo.
typedef struct zg_dit_attn_params {
    float *wq, *bq, *wk, *bk, *wv, *bv, *wo, *bo; // (d,d), (d)
    float *q_norm, *k_norm;                       // (d) RMSNorm weights (qk_norm)
} zg_dit_attn_params;

typedef struct zg_dit_layer_params {
    float *mod;               // (6d) learned modulation added to the time projection
    zg_dit_attn_params self;  // self-attention
    float *n3_w, *n3_b;       // (d) cross-attn input LayerNorm (affine)
    zg_dit_attn_params cross; // cross-attention to the text (k, v from the text context)
    float *w1, *b1;           // FFN (F,d), (F)
    float *w2, *b2;           // FFN (d,F), (d)
} zg_dit_layer_params;

typedef struct zg_dit_params {
    float *patch_w, *patch_b;   // (d, P), (d)      P = in_channels * patch volume
    float *text_w1, *text_b1;   // (d, text_dim), (d)
    float *text_w2, *text_b2;   // (d, d), (d)
    float *time_w1, *time_b1;   // (d, freq_dim), (d)
    float *time_w2, *time_b2;   // (d, d), (d)
    float *tproj_w, *tproj_b;   // (6d, d), (6d)
    float *head_mod;            // (2d)
    float *head_w, *head_b;     // (P, d), (P)
    zg_dit_layer_params *layers;  // n_layers
    float *memory;              // the single allocation
    int64_t n_params;
} zg_dit_params;

// Sizes and allocation. Weights initialised deterministically from seed (small normal, zero
// biases, unit norms); adaLN-Zero would zero the gates, but tests need non-trivial gradients,
// so gates start small and non-zero (documented in docs/training.md).
int32_t zg_dit_patch_dim(const zg_model *m);
int64_t zg_dit_param_count(const zg_model *m);
zg_status zg_dit_params_alloc(zg_dit_params *p, const zg_model *m, zg_error *err);
void zg_dit_params_init(zg_dit_params *p, const zg_model *m, uint64_t seed);
void zg_dit_params_free(zg_dit_params *p);
// Points `p` into an existing flat buffer of zg_dit_param_count floats (gradients, Adam moments).
zg_status zg_dit_params_view(zg_dit_params *p, const zg_model *m, float *flat, zg_error *err);

// ---------------------------------------------------------------------------------------------
// Self-attention hook: the model calls forward with this rank's packed q, k, v (T, H, D) after
// QK-norm and RoPE, and later backward with dO; the default (NULL) runs each sample's local run
// as one whole-sequence slice through the slice-list kernels. The distributed engine supplies
// its own (dispatching shards per the plan).
typedef struct zg_dit_attn {
    void *ctx;
    zg_status (*forward)(void *ctx, int32_t layer, const float *q, const float *k,
                         const float *v, float *o, zg_error *err);
    // dq, dk, dv (T, H, D) are overwritten.
    zg_status (*backward)(void *ctx, int32_t layer, const float *q, const float *k,
                          const float *v, const float *o, const float *dout, float *dq,
                          float *dk, float *dv, zg_error *err);
} zg_dit_attn;

// One rank's local batch.
typedef struct zg_dit_batch {
    int64_t T;              // local tokens
    int32_t n_samples;      // local samples (tokens of each are one contiguous run)
    const float *x;         // (T, P) noisy latent patches x_t
    const float *target;    // (T, P) velocity target (noise - x0)
    const int32_t *pos;     // (T, 3) latent (frame, row, col)
    const int32_t *sample;  // (T) local sample index
    const float *t;         // (n_samples) timestep in [0, 1]
    const float *text;      // (text_off[n_samples], text_dim) text-encoder outputs
    const int64_t *text_off;// (n_samples + 1) row offsets into text
    double loss_norm;       // loss = Σ (pred - target)^2 / loss_norm (global T*P for the mean)
} zg_dit_batch;

typedef struct zg_dit_opts {
    int32_t act_ckpt;       // 1: keep only block inputs; recompute the block in backward
} zg_dit_opts;

// Forward + backward of the rectified-flow loss. grads are ACCUMULATED (zero them first).
// Returns this rank's loss contribution in *loss. Memory for activations is tracked in
// *peak_bytes (may be NULL): the true peak of this call's allocations.
zg_status zg_dit_step(const zg_model *m, const zg_dit_params *p, const zg_dit_batch *b,
                      const zg_dit_attn *attn, zg_dit_opts opts, zg_dit_params *grads,
                      double *loss, int64_t *peak_bytes, zg_error *err);
// Forward only: pred (T, P).
zg_status zg_dit_forward(const zg_model *m, const zg_dit_params *p, const zg_dit_batch *b,
                         const zg_dit_attn *attn, float *pred, zg_error *err);

// ---------------------------------------------------------------------------------------------
// AdamW (decoupled weight decay), over flat arrays of n values; step counts from 1.
typedef struct zg_adamw {
    float lr, beta1, beta2, eps, weight_decay;
    int64_t step;
} zg_adamw;
void zg_adamw_default(zg_adamw *o);  // lr 1e-4, betas (0.9, 0.999), eps 1e-8, wd 0.01
void zg_adamw_update(zg_adamw *o, int64_t n, float *param, const float *grad, float *m,
                     float *v);

// ---------------------------------------------------------------------------------------------
// Tracked allocator: counts live and peak bytes (per context, no globals).
typedef struct zg_memtrack {
    int64_t live, peak;
} zg_memtrack;
void *zg_memtrack_alloc(zg_memtrack *t, size_t bytes);  // zeroed
void zg_memtrack_free(zg_memtrack *t, void *ptr);

#endif
