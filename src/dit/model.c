// model.c — Wan-style DiT forward and backward for one rank's local tokens.
//
// Block (per layer l; mod = e0[sample] + L->mod is (S, 6d): shift1 scale1 gate1 shift2 scale2
// gate2):
//   n1 = LN(x); m1 = n1*(1+scale1)+shift1; q,k,v = W m1; q,k = RMSNorm; RoPE3D(q,k)
//   x1 = x + gate1 * Wo·attn(q,k,v)
//   n3 = LN_affine(x1); x2 = x1 + Wco·crossattn(RMS(Wcq n3), RMS(Wck ctx), Wcv ctx)
//   n2 = LN(x2); m2 = n2*(1+scale2)+shift2; x3 = x2 + gate2 * W2·gelu(W1 m2)
// Head: pred = Wh·(LN(x)*(1+scale_h)+shift_h), (shift_h, scale_h) = head_mod + temb.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dit/dit.h"

typedef struct {
    zg_memtrack *mt;
    zg_error *err;
    int failed;
} allocator;

static float *falloc(allocator *a, int64_t n) {
    if (a->failed) return NULL;
    float *p = zg_memtrack_alloc(a->mt, sizeof(float) * (size_t)(n > 0 ? n : 1));
    if (!p) {
        a->failed = 1;
        zg_error_set(a->err, ZG_ERR_NOMEM, "out of memory allocating %lld activation floats",
                     (long long)n);
    }
    return p;
}

// One attention's q/k/v activations: q, k before their RMSNorm (stats rq, rk), qn, kn after it
// (self-attention: RoPE then rotates them in place), and v.
typedef struct {
    float *q, *k, *v, *rq, *rk, *qn, *kn;
} qkv_act;

// Everything block l's backward needs.
typedef struct {
    float *x, *mean1, *rstd1, *n1, *m1, *o, *y1, *x1;
    qkv_act sa; // self-attention
    float *mean3, *rstd3, *n3, *co, *clse, *x2;
    qkv_act ca; // cross-attention: q, qn, rq over the tokens; k, kn, rk, v over text rows
    float *mean2, *rstd2, *n2, *m2, *f1, *g, *y3, *lse;
} block_cache;

typedef struct {
    const zg_model *m;
    const zg_dit_params *p;
    const zg_dit_batch *b;
    const zg_dit_attn *attn;
    int64_t T, Tt;  // tokens, text rows
    int32_t S, d, F, P, H, Dh;
    float *mod;     // (n_layers, S, 6d) full modulation per layer
    float *temb, *e0, *st, *h1, *a1, *tin;  // time path (S, ...)
    float *ctx, *c1, *cg;                   // text path (Tt, d)
    zg_attn_slice *self_slices, *cross_slices;
    int32_t n_runs;
} fwd_state;

static void cache_alloc(allocator *a, block_cache *c, int64_t T, int64_t Tt, int32_t d,
                        int32_t F, int32_t H) {
    memset(c, 0, sizeof *c);
    float **td[] = {&c->x,     &c->n1, &c->m1, &c->sa.q, &c->sa.k, &c->sa.v, &c->sa.qn,
                    &c->sa.kn, &c->o,  &c->y1, &c->x1,   &c->n3,   &c->ca.q, &c->ca.qn,
                    &c->co,    &c->x2, &c->n2, &c->m2,   &c->y3};
    for (size_t i = 0; i < sizeof td / sizeof td[0]; i++) *td[i] = falloc(a, T * d);
    float **t1[] = {&c->mean1, &c->rstd1, &c->sa.rq, &c->sa.rk, &c->mean3,
                    &c->rstd3, &c->ca.rq, &c->mean2, &c->rstd2};
    for (size_t i = 0; i < sizeof t1 / sizeof t1[0]; i++) *t1[i] = falloc(a, T);
    c->clse = falloc(a, T * H);
    c->lse = falloc(a, T * H);
    c->ca.k = falloc(a, Tt * d);
    c->ca.kn = falloc(a, Tt * d);
    c->ca.v = falloc(a, Tt * d);
    c->ca.rk = falloc(a, Tt);
    c->f1 = falloc(a, T * F);
    c->g = falloc(a, T * F);
}

static void cache_free(zg_memtrack *mt, block_cache *c) {
    float **all[] = {&c->x,    &c->mean1, &c->rstd1, &c->n1,    &c->m1,    &c->sa.q,
                     &c->sa.k, &c->sa.v,  &c->sa.rq, &c->sa.rk, &c->sa.qn, &c->sa.kn,
                     &c->o,    &c->y1,    &c->x1,    &c->mean3, &c->rstd3, &c->n3,
                     &c->ca.q, &c->ca.rq, &c->ca.qn, &c->co,    &c->clse,  &c->x2,
                     &c->ca.k, &c->ca.rk, &c->ca.kn, &c->ca.v,  &c->mean2, &c->rstd2,
                     &c->n2,   &c->m2,    &c->f1,    &c->g,     &c->y3,    &c->lse};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        zg_memtrack_free(mt, *all[i]);
        *all[i] = NULL;
    }
}

static zg_status self_attn_forward(fwd_state *s, int32_t l, block_cache *c, zg_error *err) {
    zg_attn_shape sh = {s->H, s->Dh, 1.0f / sqrtf((float)s->Dh)};
    if (s->attn && s->attn->forward)
        return s->attn->forward(s->attn->ctx, l, c->sa.qn, c->sa.kn, c->sa.v, c->o, err);
    return zg_attn_forward(s->self_slices, s->n_runs, sh, c->sa.qn, c->sa.kn, c->sa.v, c->o, c->lse,
                           err);
}

// q = RMSNorm(xq Wq + bq) over Tq rows; k = RMSNorm(xkv Wk + bk), v = xkv Wv + bv over Tkv rows.
static void qkv_forward(const zg_dit_attn_params *A, int64_t Tq, const float *xq, int64_t Tkv,
                        const float *xkv, int32_t d, qkv_act *a) {
    zg_linear_forward(Tq, d, d, xq, A->wq, A->bq, a->q);
    zg_rmsnorm_forward(Tq, d, a->q, A->q_norm, a->qn, a->rq);
    zg_linear_forward(Tkv, d, d, xkv, A->wk, A->bk, a->k);
    zg_rmsnorm_forward(Tkv, d, a->k, A->k_norm, a->kn, a->rk);
    zg_linear_forward(Tkv, d, d, xkv, A->wv, A->bv, a->v);
}

// Runs block l forward from c->x (already filled), filling the cache; writes x3 to out.
static zg_status block_forward(fwd_state *s, int32_t l, block_cache *c, float *out,
                               zg_error *err) {
    const zg_dit_layer_params *L = &s->p->layers[l];
    int64_t T = s->T, Tt = s->Tt;
    int32_t d = s->d, F = s->F, S6 = 6 * d;
    const float *mod = s->mod + (int64_t)l * s->S * S6;
    const int32_t *smp = s->b->sample;
    zg_layernorm_forward(T, d, c->x, NULL, NULL, c->n1, c->mean1, c->rstd1);
    zg_modulate_forward(T, d, c->n1, smp, mod, S6, 0, d, c->m1);
    qkv_forward(&L->self, T, c->m1, T, c->m1, d, &c->sa);
    zg_rope3d_forward(T, s->H, s->Dh, s->b->pos, c->sa.qn);
    zg_rope3d_forward(T, s->H, s->Dh, s->b->pos, c->sa.kn);
    zg_status st = self_attn_forward(s, l, c, err);
    if (st) return st;
    zg_linear_forward(T, d, d, c->o, L->self.wo, L->self.bo, c->y1);
    memcpy(c->x1, c->x, sizeof(float) * (size_t)(T * d));
    zg_gate_residual_forward(T, d, c->x1, c->y1, smp, mod, S6, 2 * d);
    // cross-attention to this rank's samples' text
    zg_layernorm_forward(T, d, c->x1, L->n3_w, L->n3_b, c->n3, c->mean3, c->rstd3);
    qkv_forward(&L->cross, T, c->n3, Tt, s->ctx, d, &c->ca);
    zg_attn_shape sh = {s->H, s->Dh, 1.0f / sqrtf((float)s->Dh)};
    st = zg_attn_forward(s->cross_slices, s->n_runs, sh, c->ca.qn, c->ca.kn, c->ca.v, c->co,
                         c->clse, err);
    if (st) return st;
    memcpy(c->x2, c->x1, sizeof(float) * (size_t)(T * d));
    zg_linear_forward(T, d, d, c->co, L->cross.wo, L->cross.bo, c->y3); // y3 as scratch for y2
    for (int64_t i = 0; i < T * d; i++) c->x2[i] += c->y3[i];
    // FFN
    zg_layernorm_forward(T, d, c->x2, NULL, NULL, c->n2, c->mean2, c->rstd2);
    zg_modulate_forward(T, d, c->n2, smp, mod, S6, 3 * d, 4 * d, c->m2);
    zg_linear_forward(T, d, F, c->m2, L->w1, L->b1, c->f1);
    zg_gelu_forward(T * F, c->f1, c->g);
    zg_linear_forward(T, F, d, c->g, L->w2, L->b2, c->y3);
    memcpy(out, c->x2, sizeof(float) * (size_t)(T * d));
    zg_gate_residual_forward(T, d, out, c->y3, smp, mod, S6, 5 * d);
    (void)Tt;
    return ZG_OK;
}

static void add_into(int64_t n, float *dst, const float *src) {
    for (int64_t i = 0; i < n; i++) dst[i] += src[i];
}

// Backward of qkv_forward: dq, dk (at the normed q, k) and dv in; dxq = d xq (overwritten) and
// d xkv added into dxkv; parameter gradients into G. Scratch: tq (Tq, d), tkv and skv (Tkv, d);
// skv may be dq or dk (each is read before skv is written).
static void qkv_backward(const zg_dit_attn_params *A, zg_dit_attn_params *G, int64_t Tq,
                         const float *xq, int64_t Tkv, const float *xkv, int32_t d,
                         const qkv_act *a, const float *dq, const float *dk, const float *dv,
                         float *tq, float *tkv, float *skv, float *dxq, float *dxkv) {
    zg_rmsnorm_backward(Tq, d, a->q, A->q_norm, a->rq, dq, tq, G->q_norm);
    zg_linear_backward(Tq, d, d, xq, A->wq, tq, dxq, G->wq, G->bq);
    zg_rmsnorm_backward(Tkv, d, a->k, A->k_norm, a->rk, dk, tkv, G->k_norm);
    zg_linear_backward(Tkv, d, d, xkv, A->wk, tkv, skv, G->wk, G->bk);
    add_into(Tkv * d, dxkv, skv);
    zg_linear_backward(Tkv, d, d, xkv, A->wv, dv, skv, G->wv, G->bv);
    add_into(Tkv * d, dxkv, skv);
}

// Backward of block l. dx3 (T,d) in; dx (T,d) out (may alias dx3? no: distinct buffers).
// Accumulates into grads, dmod (S,6d) and dctx (Tt,d).
static zg_status block_backward(fwd_state *s, int32_t l, block_cache *c, const float *dx3,
                                float *dx, zg_dit_params *gr, float *dmod, float *dctx,
                                allocator *a, zg_error *err) {
    const zg_dit_layer_params *L = &s->p->layers[l];
    zg_dit_layer_params *G = &gr->layers[l];
    int64_t T = s->T, Tt = s->Tt;
    int32_t d = s->d, F = s->F, S6 = 6 * d;
    const float *mod = s->mod + (int64_t)l * s->S * S6;
    const int32_t *smp = s->b->sample;
    zg_status st = ZG_OK;
    float *dx2 = falloc(a, T * d), *dy = falloc(a, T * d), *tmp = falloc(a, T * d),
          *dF = falloc(a, T * F), *dF2 = falloc(a, T * F), *dq = falloc(a, T * d),
          *dk = falloc(a, T * d), *dv = falloc(a, T * d), *dtt = falloc(a, Tt * d),
          *dtt2 = falloc(a, Tt * d), *dtt3 = falloc(a, Tt * d);
    if (a->failed) {
        st = ZG_ERR_NOMEM;
        goto done;
    }
    // x3 = x2 + gate2*y3
    memcpy(dx2, dx3, sizeof(float) * (size_t)(T * d));
    zg_gate_residual_backward(T, d, dx3, c->y3, smp, mod, S6, 5 * d, dy, dmod);
    zg_linear_backward(T, F, d, c->g, L->w2, dy, dF, G->w2, G->b2);
    zg_gelu_backward(T * F, c->f1, dF, dF2);
    zg_linear_backward(T, d, F, c->m2, L->w1, dF2, tmp, G->w1, G->b1);
    zg_modulate_backward(T, d, c->n2, smp, mod, S6, 3 * d, 4 * d, tmp, dy, dmod);
    zg_layernorm_backward(T, d, c->x2, NULL, c->mean2, c->rstd2, dy, tmp, NULL, NULL);
    add_into(T * d, dx2, tmp);
    // x2 = x1 + Wco·co  (dx1 accumulates in dx2's buffer)
    zg_linear_backward(T, d, d, c->co, L->cross.wo, dx2, dy, G->cross.wo, G->cross.bo); // dy = d co
    memset(dq, 0, sizeof(float) * (size_t)(T * d));
    memset(dtt, 0, sizeof(float) * (size_t)(Tt * d));
    memset(dtt2, 0, sizeof(float) * (size_t)(Tt * d));
    zg_attn_shape sh = {s->H, s->Dh, 1.0f / sqrtf((float)s->Dh)};
    st = zg_attn_backward(s->cross_slices, s->n_runs, sh, c->ca.qn, c->ca.kn, c->ca.v, c->co,
                          c->clse, dy, dq, dtt, dtt2, err);
    if (st) goto done;
    qkv_backward(&L->cross, &G->cross, T, c->n3, Tt, s->ctx, d, &c->ca, dq, dtt, dtt2, tmp, dtt3,
                 dtt, dy, dctx); // dy = d n3
    zg_layernorm_backward(T, d, c->x1, L->n3_w, c->mean3, c->rstd3, dy, tmp, G->n3_w, G->n3_b);
    add_into(T * d, dx2, tmp);  // dx2 now holds d x1
    // x1 = x + gate1*y1
    memcpy(dx, dx2, sizeof(float) * (size_t)(T * d));
    zg_gate_residual_backward(T, d, dx2, c->y1, smp, mod, S6, 2 * d, dy, dmod);
    zg_linear_backward(T, d, d, c->o, L->self.wo, dy, tmp, G->self.wo, G->self.bo); // tmp = d o
    if (s->attn && s->attn->backward) {
        st = s->attn->backward(s->attn->ctx, l, c->sa.qn, c->sa.kn, c->sa.v, c->o, tmp, dq, dk, dv,
                               err);
    } else {
        memset(dq, 0, sizeof(float) * (size_t)(T * d));
        memset(dk, 0, sizeof(float) * (size_t)(T * d));
        memset(dv, 0, sizeof(float) * (size_t)(T * d));
        st = zg_attn_backward(s->self_slices, s->n_runs, sh, c->sa.qn, c->sa.kn, c->sa.v, c->o,
                              c->lse, tmp, dq, dk, dv, err);
    }
    if (st) goto done;
    zg_rope3d_backward(T, s->H, s->Dh, s->b->pos, dq);
    zg_rope3d_backward(T, s->H, s->Dh, s->b->pos, dk);
    qkv_backward(&L->self, &G->self, T, c->m1, T, c->m1, d, &c->sa, dq, dk, dv, tmp, tmp, dq, dy,
                 dy); // dy = d m1
    zg_modulate_backward(T, d, c->n1, smp, mod, S6, 0, d, dy, tmp, dmod);
    zg_layernorm_backward(T, d, c->x, NULL, c->mean1, c->rstd1, tmp, dq, NULL, NULL);
    add_into(T * d, dx, dq);
done:;
    float *bufs[] = {dx2, dy, tmp, dF, dF2, dq, dk, dv, dtt, dtt2, dtt3};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) zg_memtrack_free(a->mt, bufs[i]);
    return st;
}

static zg_status check_batch(const zg_model *m, const zg_dit_batch *b, int32_t *n_runs,
                             zg_error *err) {
    if (m->arch != ZG_ARCH_WAN)
        return zg_error_set(err, ZG_ERR_UNSUPPORTED,
                            "model '%s': the training engine implements Wan-style DiTs only",
                            m->name);
    if (b->T < 0 || b->n_samples < 0)
        return zg_error_set(err, ZG_ERR_INVALID, "negative token or sample count");
    int32_t runs = 0;
    for (int64_t t = 0; t < b->T; t++) {
        if (b->sample[t] < 0 || b->sample[t] >= b->n_samples)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "token %lld has sample index %d outside 0..%d", (long long)t,
                                b->sample[t], b->n_samples - 1);
        if (t == 0 || b->sample[t] != b->sample[t - 1]) runs++;
    }
    // each sample must be one contiguous run (runs == distinct samples present)
    char *seen = calloc((size_t)(b->n_samples ? b->n_samples : 1), 1);
    if (!seen) return zg_error_set(err, ZG_ERR_NOMEM, "out of memory");
    for (int64_t t = 0; t < b->T; t++) {
        if ((t == 0 || b->sample[t] != b->sample[t - 1]) && seen[b->sample[t]]) {
            free(seen);
            return zg_error_set(err, ZG_ERR_INVALID,
                                "tokens of sample %d are not one contiguous run", b->sample[t]);
        }
        seen[b->sample[t]] = 1;
    }
    free(seen);
    *n_runs = runs;
    return ZG_OK;
}

// Forward through the whole model; keeps caches for every layer (ckpt 0) or only the block
// inputs (ckpt 1, caches[l].x only). pred (T,P) out.
static zg_status model_forward(fwd_state *s, allocator *a, block_cache *caches, float **xs,
                               int ckpt, float *pred, float *hx, float *hmean, float *hrstd,
                               float *hn, float *hm, zg_error *err) {
    const zg_dit_params *p = s->p;
    const zg_dit_batch *b = s->b;
    int64_t T = s->T;
    int32_t d = s->d, S = s->S, P = s->P;
    const zg_model *m = s->m;
    // conditioning
    zg_timestep_embedding(S, m->freq_dim, b->t, s->tin);
    zg_linear_forward(S, m->freq_dim, d, s->tin, p->time_w1, p->time_b1, s->h1);
    zg_silu_forward((int64_t)S * d, s->h1, s->a1);
    zg_linear_forward(S, d, d, s->a1, p->time_w2, p->time_b2, s->temb);
    zg_silu_forward((int64_t)S * d, s->temb, s->st);
    zg_linear_forward(S, d, 6 * d, s->st, p->tproj_w, p->tproj_b, s->e0);
    for (int32_t l = 0; l < m->n_layers; l++)
        for (int32_t i = 0; i < S; i++)
            for (int32_t j = 0; j < 6 * d; j++)
                s->mod[((int64_t)l * S + i) * 6 * d + j] =
                    s->e0[(int64_t)i * 6 * d + j] + p->layers[l].mod[j];
    zg_linear_forward(s->Tt, m->text_dim, d, b->text, p->text_w1, p->text_b1, s->c1);
    zg_gelu_forward(s->Tt * d, s->c1, s->cg);
    zg_linear_forward(s->Tt, d, d, s->cg, p->text_w2, p->text_b2, s->ctx);
    // tokens
    float *x = xs[0];
    zg_linear_forward(T, P, d, b->x, p->patch_w, p->patch_b, x);
    for (int32_t l = 0; l < m->n_layers; l++) {
        block_cache *c = ckpt ? &caches[0] : &caches[l];
        memcpy(c->x, xs[l], sizeof(float) * (size_t)(T * d));
        zg_status st = block_forward(s, l, c, xs[l + 1], err);
        if (st) return st;
    }
    (void)a;
    // head
    memcpy(hx, xs[m->n_layers], sizeof(float) * (size_t)(T * d));
    for (int32_t i = 0; i < S; i++)
        for (int32_t j = 0; j < 2 * d; j++)
            hm[(int64_t)i * 2 * d + j] = p->head_mod[j] + s->temb[(int64_t)i * d + j % d];
    zg_layernorm_forward(T, d, hx, NULL, NULL, hn, hmean, hrstd);
    zg_modulate_forward(T, d, hn, b->sample, hm, 2 * d, 0, d, hx);  // hx = modulated
    zg_linear_forward(T, d, P, hx, p->head_w, p->head_b, pred);
    return ZG_OK;
}

static zg_status state_init(fwd_state *s, allocator *a, const zg_model *m, const zg_dit_params *p,
                            const zg_dit_batch *b, const zg_dit_attn *attn, zg_error *err) {
    memset(s, 0, sizeof *s);
    zg_status st = check_batch(m, b, &s->n_runs, err);
    if (st) return st;
    s->m = m, s->p = p, s->b = b, s->attn = attn;
    s->T = b->T, s->S = b->n_samples, s->d = m->dim, s->F = m->ffn_dim;
    s->P = zg_dit_patch_dim(m), s->H = m->n_heads, s->Dh = m->head_dim;
    s->Tt = b->n_samples ? b->text_off[b->n_samples] : 0;
    int64_t S = s->S, d = s->d;
    s->mod = falloc(a, (int64_t)m->n_layers * S * 6 * d);
    s->temb = falloc(a, S * d), s->e0 = falloc(a, S * 6 * d), s->st = falloc(a, S * d);
    s->h1 = falloc(a, S * d), s->a1 = falloc(a, S * d), s->tin = falloc(a, S * m->freq_dim);
    s->ctx = falloc(a, s->Tt * d), s->c1 = falloc(a, s->Tt * d), s->cg = falloc(a, s->Tt * d);
    s->self_slices = zg_calloc((size_t)(s->n_runs ? s->n_runs : 1), sizeof(zg_attn_slice), err);
    s->cross_slices = zg_calloc((size_t)(s->n_runs ? s->n_runs : 1), sizeof(zg_attn_slice), err);
    if (a->failed || !s->self_slices || !s->cross_slices) return ZG_ERR_NOMEM;
    int32_t r = -1;
    for (int64_t t = 0; t < b->T; t++) {
        if (t == 0 || b->sample[t] != b->sample[t - 1]) {
            r++;
            int32_t smp = b->sample[t];
            s->self_slices[r] = (zg_attn_slice){t, 0, t, 0};
            s->cross_slices[r] = (zg_attn_slice){t, 0, b->text_off[smp],
                                                 b->text_off[smp + 1] - b->text_off[smp]};
        }
        s->self_slices[r].q_len++;
        s->self_slices[r].k_len++;
        s->cross_slices[r].q_len++;
    }
    return ZG_OK;
}

static void state_free(fwd_state *s, zg_memtrack *mt) {
    float *bufs[] = {s->mod, s->temb, s->e0, s->st, s->h1, s->a1, s->tin, s->ctx, s->c1, s->cg};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) zg_memtrack_free(mt, bufs[i]);
    free(s->self_slices);
    free(s->cross_slices);
}

zg_status zg_dit_step(const zg_model *m, const zg_dit_params *p, const zg_dit_batch *b,
                      const zg_dit_attn *attn, zg_dit_opts opts, zg_dit_params *gr,
                      double *loss, int64_t *peak_bytes, zg_error *err) {
    zg_memtrack mt = {0, 0};
    allocator a = {&mt, err, 0};
    fwd_state s;
    int32_t nl = m->n_layers;
    int ckpt = opts.act_ckpt != 0;
    block_cache *caches = NULL;
    float **xs = NULL;
    zg_status st = state_init(&s, &a, m, p, b, attn, err);
    int64_t T = b->T;
    int32_t d = m->dim, P = zg_dit_patch_dim(m), S = b->n_samples;
    float *pred = NULL, *hx = NULL, *hmean = NULL, *hrstd = NULL, *hn = NULL, *hm = NULL;
    float *dx = NULL, *dx2 = NULL, *dmod = NULL, *dctx = NULL, *dhm = NULL, *dtemb = NULL,
          *dpred = NULL, *tmpS = NULL, *tmpS2 = NULL, *tmpS6 = NULL, *tmpTt = NULL;
    if (st) goto out;
    caches = zg_calloc((size_t)(ckpt ? 1 : nl), sizeof *caches, err);
    xs = zg_calloc((size_t)nl + 1, sizeof *xs, err);
    if (!caches || !xs) {
        st = ZG_ERR_NOMEM;
        goto out;
    }
    for (int32_t l = 0; l < (ckpt ? 1 : nl); l++)
        cache_alloc(&a, &caches[l], T, s.Tt, d, m->ffn_dim, m->n_heads);
    for (int32_t l = 0; l <= nl; l++) xs[l] = falloc(&a, T * d);
    pred = falloc(&a, T * P), hx = falloc(&a, T * d), hmean = falloc(&a, T);
    hrstd = falloc(&a, T), hn = falloc(&a, T * d), hm = falloc(&a, (int64_t)S * 2 * d);
    if (a.failed) {
        st = ZG_ERR_NOMEM;
        goto out;
    }
    st = model_forward(&s, &a, caches, xs, ckpt, pred, hx, hmean, hrstd, hn, hm, err);
    if (st) goto out;
    // loss
    dpred = falloc(&a, T * P);
    dx = falloc(&a, T * d), dx2 = falloc(&a, T * d), dmod = falloc(&a, (int64_t)S * 6 * d);
    dctx = falloc(&a, s.Tt * d), dhm = falloc(&a, (int64_t)S * 2 * d);
    dtemb = falloc(&a, (int64_t)S * d), tmpS = falloc(&a, (int64_t)S * d);
    tmpS2 = falloc(&a, (int64_t)S * d);
    tmpS6 = falloc(&a, (int64_t)S * 6 * d), tmpTt = falloc(&a, s.Tt * d);
    if (a.failed) {
        st = ZG_ERR_NOMEM;
        goto out;
    }
    double ls = 0;
    for (int64_t i = 0; i < T * P; i++) {
        double diff = (double)pred[i] - b->target[i];
        ls += diff * diff;
        dpred[i] = (float)(2.0 * diff / b->loss_norm);
    }
    *loss = ls / b->loss_norm;
    // head backward
    zg_linear_backward(T, d, P, hx, p->head_w, dpred, dx2, gr->head_w, gr->head_b);
    zg_modulate_backward(T, d, hn, b->sample, hm, 2 * d, 0, d, dx2, dx, dhm);
    memcpy(dx2, dx, sizeof(float) * (size_t)(T * d));
    zg_layernorm_backward(T, d, xs[nl], NULL, hmean, hrstd, dx2, dx, NULL, NULL);
    for (int32_t i = 0; i < S; i++)
        for (int32_t j = 0; j < 2 * d; j++) {
            gr->head_mod[j] += dhm[(int64_t)i * 2 * d + j];
            dtemb[(int64_t)i * d + j % d] += dhm[(int64_t)i * 2 * d + j];
        }
    // blocks, last to first
    for (int32_t l = nl - 1; l >= 0; l--) {
        block_cache *c = ckpt ? &caches[0] : &caches[l];
        if (ckpt) {  // recompute this block's activations from its saved input
            memcpy(c->x, xs[l], sizeof(float) * (size_t)(T * d));
            st = block_forward(&s, l, c, xs[l + 1], err);
            if (st) goto out;
        }
        memset(dmod, 0, sizeof(float) * (size_t)S * 6 * d);
        st = block_backward(&s, l, c, dx, dx2, gr, dmod, dctx, &a, err);
        if (st) goto out;
        memcpy(dx, dx2, sizeof(float) * (size_t)(T * d));
        for (int32_t i = 0; i < S; i++)
            for (int32_t j = 0; j < 6 * d; j++) {
                gr->layers[l].mod[j] += dmod[(int64_t)i * 6 * d + j];
                tmpS6[(int64_t)i * 6 * d + j] += dmod[(int64_t)i * 6 * d + j];  // d e0
            }
    }
    // patch embedding
    zg_linear_backward(T, P, d, b->x, p->patch_w, dx, NULL, gr->patch_w, gr->patch_b);
    // time path: e0 = tproj(silu(temb)); temb = W2 silu(W1 tin)
    zg_linear_backward(S, d, 6 * d, s.st, p->tproj_w, tmpS6, tmpS, gr->tproj_w, gr->tproj_b);
    zg_silu_backward((int64_t)S * d, s.temb, tmpS, tmpS2);
    add_into((int64_t)S * d, dtemb, tmpS2);
    zg_linear_backward(S, d, d, s.a1, p->time_w2, dtemb, tmpS, gr->time_w2, gr->time_b2);
    zg_silu_backward((int64_t)S * d, s.h1, tmpS, tmpS2);
    zg_linear_backward(S, m->freq_dim, d, s.tin, p->time_w1, tmpS2, NULL, gr->time_w1,
                       gr->time_b1);
    // text path
    zg_linear_backward(s.Tt, d, d, s.cg, p->text_w2, dctx, tmpTt, gr->text_w2, gr->text_b2);
    zg_gelu_backward(s.Tt * d, s.c1, tmpTt, dctx);
    zg_linear_backward(s.Tt, m->text_dim, d, b->text, p->text_w1, dctx, NULL, gr->text_w1,
                       gr->text_b1);
out:
    if (caches)
        for (int32_t l = 0; l < (ckpt ? 1 : nl); l++) cache_free(&mt, &caches[l]);
    if (xs)
        for (int32_t l = 0; l <= nl; l++) zg_memtrack_free(&mt, xs[l]);
    float *bufs[] = {pred, hx,   hmean, hrstd, hn,   hm,    dx,   dx2,
                     dmod, dctx, dhm,   dtemb, dpred, tmpS, tmpS2, tmpS6, tmpTt};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) zg_memtrack_free(&mt, bufs[i]);
    state_free(&s, &mt);
    free(caches);
    free(xs);
    if (peak_bytes) *peak_bytes = mt.peak;
    return st;
}

zg_status zg_dit_forward(const zg_model *m, const zg_dit_params *p, const zg_dit_batch *b,
                         const zg_dit_attn *attn, float *pred, zg_error *err) {
    zg_memtrack mt = {0, 0};
    allocator a = {&mt, err, 0};
    fwd_state s;
    int32_t nl = m->n_layers, d = m->dim;
    block_cache cache;
    memset(&cache, 0, sizeof cache);
    float **xs = NULL, *hx = NULL, *hmean = NULL, *hrstd = NULL, *hn = NULL, *hm = NULL;
    zg_status st = state_init(&s, &a, m, p, b, attn, err);
    if (st) goto out;
    xs = zg_calloc((size_t)nl + 1, sizeof *xs, err);
    if (!xs) {
        st = ZG_ERR_NOMEM;
        goto out;
    }
    cache_alloc(&a, &cache, b->T, s.Tt, d, m->ffn_dim, m->n_heads);
    for (int32_t l = 0; l <= nl; l++) xs[l] = falloc(&a, b->T * d);
    hx = falloc(&a, b->T * d), hmean = falloc(&a, b->T), hrstd = falloc(&a, b->T);
    hn = falloc(&a, b->T * d), hm = falloc(&a, (int64_t)b->n_samples * 2 * d);
    if (a.failed) {
        st = ZG_ERR_NOMEM;
        goto out;
    }
    st = model_forward(&s, &a, &cache, xs, 1, pred, hx, hmean, hrstd, hn, hm, err);
out:
    cache_free(&mt, &cache);
    if (xs)
        for (int32_t l = 0; l <= nl; l++) zg_memtrack_free(&mt, xs[l]);
    float *bufs[] = {hx, hmean, hrstd, hn, hm};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) zg_memtrack_free(&mt, bufs[i]);
    state_free(&s, &mt);
    free(xs);
    return st;
}
