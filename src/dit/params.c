// params.c — the DiT's parameter layout (one flat buffer + pointer struct), init, AdamW, and
// the tracked allocator.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dit/dit.h"

int32_t zg_dit_patch_dim(const zg_model *m) {
    return m->in_channels * m->patch[0] * m->patch[1] * m->patch[2];
}

// The layout walk: hands out consecutive ranges of base (NULL: only counts).
typedef struct cursor {
    float *base;
    int64_t off;
} cursor;

static float *take(cursor *c, int64_t n) {
    float *p = c->base ? c->base + c->off : NULL;
    c->off += n;
    return p;
}

// A linear layer's weight (out, in) then bias (out).
static void take_linear(cursor *c, float **w, float **b, int64_t out, int64_t in) {
    *w = take(c, out * in);
    *b = take(c, out);
}

static void take_attn(cursor *c, zg_dit_attn_params *a, int64_t d) {
    take_linear(c, &a->wq, &a->bq, d, d);
    take_linear(c, &a->wk, &a->bk, d, d);
    take_linear(c, &a->wv, &a->bv, d, d);
    take_linear(c, &a->wo, &a->bo, d, d);
    a->q_norm = take(c, d);
    a->k_norm = take(c, d);
}

// Walks the layout in a fixed order; with base == NULL it only counts.
static int64_t layout(zg_dit_params *p, const zg_model *m, float *base) {
    int64_t d = m->dim, F = m->ffn_dim, P = zg_dit_patch_dim(m);
    cursor c = {base, 0};
    take_linear(&c, &p->patch_w, &p->patch_b, d, P);
    take_linear(&c, &p->text_w1, &p->text_b1, d, m->text_dim);
    take_linear(&c, &p->text_w2, &p->text_b2, d, d);
    take_linear(&c, &p->time_w1, &p->time_b1, d, m->freq_dim);
    take_linear(&c, &p->time_w2, &p->time_b2, d, d);
    take_linear(&c, &p->tproj_w, &p->tproj_b, 6 * d, d);
    p->head_mod = take(&c, 2 * d);
    take_linear(&c, &p->head_w, &p->head_b, P, d);
    for (int32_t l = 0; l < m->n_layers; l++) {
        zg_dit_layer_params tmp, *L = base ? &p->layers[l] : &tmp;
        L->mod = take(&c, 6 * d);
        take_attn(&c, &L->self, d);
        L->n3_w = take(&c, d);
        L->n3_b = take(&c, d);
        take_attn(&c, &L->cross, d);
        take_linear(&c, &L->w1, &L->b1, F, d);
        take_linear(&c, &L->w2, &L->b2, d, F);
    }
    return c.off;
}

int64_t zg_dit_param_count(const zg_model *m) {
    zg_dit_params tmp;
    memset(&tmp, 0, sizeof tmp);
    return layout(&tmp, m, NULL);
}

zg_status zg_dit_params_view(zg_dit_params *p, const zg_model *m, float *flat, zg_error *err) {
    memset(p, 0, sizeof *p);
    if (m->arch != ZG_ARCH_WAN)
        return zg_error_set(err, ZG_ERR_UNSUPPORTED,
                            "model '%s': the C training engine implements Wan-style DiTs "
                            "(arch wan); '%s' is not supported yet",
                            m->name, zg_arch_name(m->arch));
    p->layers = zg_calloc((size_t)m->n_layers, sizeof *p->layers, err);
    if (!p->layers) return ZG_ERR_NOMEM;
    p->n_params = layout(p, m, flat);
    return ZG_OK;
}

zg_status zg_dit_params_alloc(zg_dit_params *p, const zg_model *m, zg_error *err) {
    int64_t n = zg_dit_param_count(m);
    float *flat = zg_calloc((size_t)n, sizeof(float), err);
    if (!flat) return ZG_ERR_NOMEM;
    zg_status st = zg_dit_params_view(p, m, flat, err);
    if (st) {
        free(flat);
        return st;
    }
    p->memory = flat;
    return ZG_OK;
}

void zg_dit_params_free(zg_dit_params *p) {
    free(p->memory);
    free(p->layers);
    memset(p, 0, sizeof *p);
}

static void fill_normal(zg_rng *r, float *x, int64_t n, float std) {
    for (int64_t i = 0; i < n; i++) x[i] = (float)(zg_rng_normal(r) * std);
}
static void fill_const(float *x, int64_t n, float v) {
    for (int64_t i = 0; i < n; i++) x[i] = v;
}

// Weights normal(0, sd) in the order wq, wk, wv, wo; unit norms; zero biases (left as they are).
static void init_attn(zg_rng *r, zg_dit_attn_params *a, int64_t d, float sd) {
    float *w[] = {a->wq, a->wk, a->wv, a->wo};
    for (int i = 0; i < 4; i++)
        fill_normal(r, w[i], d * d, sd);
    fill_const(a->q_norm, d, 1.0f);
    fill_const(a->k_norm, d, 1.0f);
}

void zg_dit_params_init(zg_dit_params *p, const zg_model *m, uint64_t seed) {
    zg_rng r;
    zg_rng_init(&r, seed);
    int64_t d = m->dim, F = m->ffn_dim, P = zg_dit_patch_dim(m);
    memset(p->memory, 0, sizeof(float) * (size_t)p->n_params);
    float sd = (float)(1.0 / sqrt((double)d));
    fill_normal(&r, p->patch_w, d * P, (float)(1.0 / sqrt((double)P)));
    fill_normal(&r, p->text_w1, d * m->text_dim, (float)(1.0 / sqrt((double)m->text_dim)));
    fill_normal(&r, p->text_w2, d * d, sd);
    fill_normal(&r, p->time_w1, d * m->freq_dim, (float)(1.0 / sqrt((double)m->freq_dim)));
    fill_normal(&r, p->time_w2, d * d, sd);
    fill_normal(&r, p->tproj_w, 6 * d * d, 0.1f * sd);
    fill_normal(&r, p->head_mod, 2 * d, 0.02f);
    fill_normal(&r, p->head_w, P * d, sd);
    for (int32_t l = 0; l < m->n_layers; l++) {
        zg_dit_layer_params *L = &p->layers[l];
        // gates (offsets 2d and 5d) start small but non-zero so every path carries gradient
        fill_normal(&r, L->mod, 6 * d, 0.02f);
        for (int64_t i = 0; i < d; i++) L->mod[2 * d + i] += 0.1f, L->mod[5 * d + i] += 0.1f;
        init_attn(&r, &L->self, d, sd);
        fill_const(L->n3_w, d, 1.0f);
        init_attn(&r, &L->cross, d, sd);
        fill_normal(&r, L->w1, F * d, sd);
        fill_normal(&r, L->w2, d * F, (float)(1.0 / sqrt((double)F)));
    }
}

// ---- AdamW ------------------------------------------------------------------------------------

void zg_adamw_default(zg_adamw *o) {
    o->lr = 1e-4f;
    o->beta1 = 0.9f;
    o->beta2 = 0.999f;
    o->eps = 1e-8f;
    o->weight_decay = 0.01f;
    o->step = 0;
}

void zg_adamw_update(zg_adamw *o, int64_t n, float *param, const float *grad, float *m,
                     float *v) {
    o->step++;
    double bc1 = 1.0 - pow(o->beta1, (double)o->step), bc2 = 1.0 - pow(o->beta2, (double)o->step);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        float g = grad[i];
        m[i] = o->beta1 * m[i] + (1.0f - o->beta1) * g;
        v[i] = o->beta2 * v[i] + (1.0f - o->beta2) * g * g;
        float mh = (float)(m[i] / bc1), vh = (float)(v[i] / bc2);
        param[i] -= o->lr * (mh / (sqrtf(vh) + o->eps) + o->weight_decay * param[i]);
    }
}

// ---- tracked allocator ------------------------------------------------------------------------

void *zg_memtrack_alloc(zg_memtrack *t, size_t bytes) {
    size_t *p = calloc(1, bytes + 16);
    if (!p) return NULL;
    p[0] = bytes;
    t->live += (int64_t)bytes;
    if (t->live > t->peak) t->peak = t->live;
    return (char *)p + 16;
}

void zg_memtrack_free(zg_memtrack *t, void *ptr) {
    if (!ptr) return;
    size_t *p = (size_t *)((char *)ptr - 16);
    t->live -= (int64_t)p[0];
    free(p);
}
