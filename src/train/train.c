// train.c — distributed training step, single-process reference step, synthetic data.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "train/train.h"

#define TAG_GRAD 31001
#define TAG_STATS 31002

void zg_train_opts_default(zg_train_opts *o) {
    memset(o, 0, sizeof *o);
    o->act_ckpt = 1;
    o->seed = 1;
    zg_adamw_default(&o->adam);
}

void zg_train_seq_grid(const zg_model *m, const zg_seq *s, int32_t grid[3]) {
    if (s->frames > 0 && s->height > 0 && s->width > 0) {
        int64_t f = zg_model_latent_frames(m, s->frames);
        int64_t r = (s->height + m->vae_stride[1] * m->patch[1] - 1) / (m->vae_stride[1] * m->patch[1]);
        int64_t c = (s->width + m->vae_stride[2] * m->patch[2] - 1) / (m->vae_stride[2] * m->patch[2]);
        if (f * r * c == s->tokens) {
            grid[0] = (int32_t)f, grid[1] = (int32_t)r, grid[2] = (int32_t)c;
            return;
        }
    }
    grid[0] = 1, grid[1] = 1, grid[2] = (int32_t)s->tokens;
}

// ---- synthetic sample data ---------------------------------------------------------------------

static uint64_t sample_seed(uint64_t seed, int64_t step, int64_t id) {
    return zg_rng_derive(zg_rng_derive(seed, (uint64_t)step), (uint64_t)id);
}

static float sample_t(uint64_t sseed) {
    zg_rng r;
    zg_rng_init(&r, zg_rng_derive(sseed, 0x7171));
    return (float)zg_rng_range(&r, 0.02, 0.98);
}

static int32_t sample_text_rows(const zg_model *m, const zg_seq *s) {
    int32_t n = s->text_tokens > 0 ? s->text_tokens : m->text_len;
    return n > 0 ? n : 1;
}

static void sample_text(const zg_model *m, uint64_t sseed, int32_t rows, float *out) {
    zg_rng r;
    zg_rng_init(&r, zg_rng_derive(sseed, 0x7e47));
    for (int64_t i = 0; i < (int64_t)rows * m->text_dim; i++) out[i] = (float)zg_rng_normal(&r);
}

// Token j of a sample: x_t and the velocity target (P each), and its latent position.
static void sample_token(int32_t P, uint64_t sseed, float t, const int32_t grid[3], int64_t j,
                         float *xt, float *target, int32_t pos[3]) {
    zg_rng r;
    zg_rng_init(&r, zg_rng_derive(sseed, 1000 + (uint64_t)j));
    for (int32_t i = 0; i < P; i++) {
        float x0 = (float)zg_rng_normal(&r), noise = (float)zg_rng_normal(&r);
        xt[i] = (1.0f - t) * x0 + t * noise;
        target[i] = noise - x0;
    }
    int64_t plane = (int64_t)grid[1] * grid[2];
    pos[0] = (int32_t)(j / plane);
    pos[1] = (int32_t)((j / grid[2]) % grid[1]);
    pos[2] = (int32_t)(j % grid[2]);
}

// ---- trainer ------------------------------------------------------------------------------------

zg_status zg_trainer_init(zg_trainer *tr, const zg_model *m, zg_comm *comm,
                          const zg_train_opts *opts, zg_error *err) {
    memset(tr, 0, sizeof *tr);
    tr->model = *m;
    tr->opts = *opts;
    tr->comm = comm;
    int64_t n = zg_dit_param_count(m);
    tr->flat = zg_calloc((size_t)n * 4, sizeof(float), err);
    if (!tr->flat) return ZG_ERR_NOMEM;
    zg_status st;
    if ((st = zg_dit_params_view(&tr->params, m, tr->flat, err)) ||
        (st = zg_dit_params_view(&tr->grads, m, tr->flat + n, err)) ||
        (st = zg_dit_params_view(&tr->adam_m, m, tr->flat + 2 * n, err)) ||
        (st = zg_dit_params_view(&tr->adam_v, m, tr->flat + 3 * n, err))) {
        zg_trainer_free(tr);
        return st;
    }
    tr->params.memory = tr->flat;  // zg_dit_params_init writes through memory
    zg_dit_params_init(&tr->params, m, opts->seed);
    tr->params.memory = NULL;      // the trainer owns `flat`, not the views
    return ZG_OK;
}

void zg_trainer_free(zg_trainer *tr) {
    free(tr->params.layers);
    free(tr->grads.layers);
    free(tr->adam_m.layers);
    free(tr->adam_v.layers);
    free(tr->flat);
    memset(tr, 0, sizeof *tr);
}

static void apply_update(zg_trainer *tr) {
    int64_t n = tr->params.n_params;
    zg_adamw_update(&tr->opts.adam, n, tr->flat, tr->flat + n, tr->flat + 2 * n, tr->flat + 3 * n);
    tr->step++;
}

// Attention through the engine; the forward's LSE per layer is kept for backward.
typedef struct {
    zg_engine *e;
    float *lse;  // (n_layers, T, H)
    int64_t T;
    int32_t H;
    int32_t use_saved;  // act_ckpt: each block's forward is re-run right before its backward, so
                        // the engine's saved forward state belongs to that block
    double seconds;
} engine_attn;

static zg_status ea_forward(void *ctx, int32_t layer, const float *q, const float *k,
                            const float *v, float *o, zg_error *err) {
    engine_attn *a = ctx;
    double t0 = zg_time_now();
    zg_status st = zg_engine_attn_forward(a->e, q, k, v, o, a->lse + (int64_t)layer * a->T * a->H, err);
    a->seconds += zg_time_now() - t0;
    return st;
}

static zg_status ea_backward(void *ctx, int32_t layer, const float *q, const float *k,
                             const float *v, const float *o, const float *dout, float *dq,
                             float *dk, float *dv, zg_error *err) {
    engine_attn *a = ctx;
    double t0 = zg_time_now();
    // The saved variant reuses the forward's gathered K/V (only dO travels); without
    // checkpointing the last forward belongs to another layer, so recompute is stateless.
    zg_status st =
        a->use_saved
            ? zg_engine_attn_backward_saved(a->e, dout, dq, dk, dv, err)
            : zg_engine_attn_backward(a->e, q, k, v, o, a->lse + (int64_t)layer * a->T * a->H,
                                      dout, dq, dk, dv, err);
    a->seconds += zg_time_now() - t0;
    return st;
}

// Local DiT batch from tokens already in place: runs[i] = (sequence, token count), in order.
typedef struct {
    float *x, *target, *t, *text;
    int32_t *pos, *sample;
    int64_t *text_off;
} local_data;

static void local_free(local_data *d) {
    free(d->x), free(d->target), free(d->t), free(d->text);
    free(d->pos), free(d->sample), free(d->text_off);
    memset(d, 0, sizeof *d);
}

// Fills per-sample conditioning for n_runs runs of sequences seqs[run_seq[i]].
static zg_status local_conditioning(const zg_trainer *tr, const zg_batch *b, int64_t step,
                                    int32_t n_runs, const int64_t *run_seq, local_data *d,
                                    zg_error *err) {
    const zg_model *m = &tr->model;
    d->t = zg_calloc((size_t)n_runs + 1, sizeof(float), err);
    d->text_off = zg_calloc((size_t)n_runs + 1, sizeof(int64_t), err);
    if (!d->t || !d->text_off) return ZG_ERR_NOMEM;
    for (int32_t i = 0; i < n_runs; i++)
        d->text_off[i + 1] = d->text_off[i] + sample_text_rows(m, &b->seqs[run_seq[i]]);
    d->text = zg_calloc((size_t)d->text_off[n_runs] + 1, sizeof(float) * (size_t)m->text_dim, err);
    if (!d->text) return ZG_ERR_NOMEM;
    for (int32_t i = 0; i < n_runs; i++) {
        const zg_seq *s = &b->seqs[run_seq[i]];
        uint64_t ss = sample_seed(tr->opts.seed, step, s->id);
        d->t[i] = sample_t(ss);
        sample_text(m, ss, (int32_t)(d->text_off[i + 1] - d->text_off[i]),
                    d->text + d->text_off[i] * m->text_dim);
    }
    return ZG_OK;
}

static zg_status reduce_stats(zg_trainer *tr, zg_train_stats *st, int64_t local_peak,
                              zg_error *err) {
    zg_comm *c = tr->comm;
    int32_t *ranks = NULL;
    zg_status s = zg_comm_world_ranks(c, &ranks, err);
    if (s) return s;
    double mx[3] = {st->step_s, -st->step_s, (double)local_peak};
    s = zg_comm_allreduce_max_f64(c, ranks, c->size, mx, 3, TAG_STATS, err);
    free(ranks);
    if (s) return s;
    st->slowest_s = mx[0];
    st->fastest_s = -mx[1];
    st->peak_bytes = (int64_t)mx[2];
    return ZG_OK;
}

zg_status zg_trainer_step(zg_trainer *tr, const zg_batch *b, const zg_plan *plan,
                          zg_train_stats *st, zg_error *err) {
    memset(st, 0, sizeof *st);
    double t0 = zg_time_now();
    const zg_model *m = &tr->model;
    zg_comm *c = tr->comm;
    int32_t P = zg_dit_patch_dim(m), W = 2 * P, me = c->rank, world = c->size;
    if (plan->world_size != world || plan->n != b->n)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "plan for %d ranks and %lld sequences does not match the run (%d "
                            "ranks, batch of %lld)",
                            plan->world_size, (long long)plan->n, world, (long long)b->n);
    uint64_t sent0 = c->bytes_sent;
    zg_attn_shape shape = {m->n_heads, m->head_dim, 1.0f / sqrtf((float)m->head_dim)};
    zg_engine_opts eo;
    zg_engine_opts_default(&eo);
    eo.use_ref = tr->opts.use_ref_kernels;
    zg_engine *e = NULL;
    zg_status s = zg_engine_init(&e, c, plan, shape, &eo, err);
    if (s) return s;
    int32_t *origin = NULL, *pos_l = NULL, *pos_p = NULL;
    float *xl = NULL, *xp = NULL;
    local_data d;
    memset(&d, 0, sizeof d);
    engine_attn ea = {e, NULL, 0, m->n_heads, tr->opts.act_ckpt != 0, 0};
    int64_t *run_seq = NULL;
    origin = zg_calloc((size_t)plan->n + 1, sizeof *origin, err);
    if (!origin) {
        s = ZG_ERR_NOMEM;
        goto out;
    }
    for (int64_t i = 0; i < plan->n; i++) {
        int32_t o = b->seqs[plan->p[i].seq].origin_rank;
        origin[i] = o >= 0 && o < world ? o : (int32_t)(plan->p[i].seq % world);
    }
    // loader layout: this rank's sequences, plan order, whole
    int64_t Tl = zg_engine_loader_tokens(e, origin, me), T = zg_engine_local_tokens(e);
    xl = zg_calloc((size_t)Tl + 1, sizeof(float) * (size_t)W, err);
    pos_l = zg_calloc((size_t)Tl + 1, sizeof(int32_t) * 3, err);
    xp = zg_calloc((size_t)T + 1, sizeof(float) * (size_t)W, err);
    pos_p = zg_calloc((size_t)T + 1, sizeof(int32_t) * 3, err);
    if (!xl || !pos_l || !xp || !pos_p) {
        s = ZG_ERR_NOMEM;
        goto out;
    }
    int64_t at = 0;
    for (int64_t i = 0; i < plan->n; i++) {
        if (origin[i] != me) continue;
        const zg_seq *sq = &b->seqs[plan->p[i].seq];
        uint64_t ss = sample_seed(tr->opts.seed, tr->step, sq->id);
        float t = sample_t(ss);
        int32_t grid[3];
        zg_train_seq_grid(m, sq, grid);
        for (int64_t j = 0; j < sq->tokens; j++, at++)
            sample_token(P, ss, t, grid, j, xl + at * W, xl + at * W + P, pos_l + at * 3);
    }
    if ((s = zg_engine_dispatch(e, origin, W, xl, pos_l, xp, pos_p, err))) goto out;
    // plan layout -> DiT batch
    int64_t n_sh = 0;
    const int64_t *sh_pl = NULL;
    const zg_shard *shards = NULL;
    zg_engine_local_shards(e, &n_sh, &sh_pl, &shards);
    run_seq = zg_calloc((size_t)n_sh + 1, sizeof *run_seq, err);
    d.x = zg_calloc((size_t)T + 1, sizeof(float) * (size_t)P, err);
    d.target = zg_calloc((size_t)T + 1, sizeof(float) * (size_t)P, err);
    d.sample = zg_calloc((size_t)T + 1, sizeof(int32_t), err);
    if (!run_seq || !d.x || !d.target || !d.sample) {
        s = ZG_ERR_NOMEM;
        goto out;
    }
    at = 0;
    for (int64_t r = 0; r < n_sh; r++) {
        run_seq[r] = plan->p[sh_pl[r]].seq;
        for (int64_t j = shards[r].start; j < shards[r].end; j++, at++) d.sample[at] = (int32_t)r;
    }
    for (int64_t i = 0; i < T; i++) {
        memcpy(d.x + i * P, xp + i * W, sizeof(float) * (size_t)P);
        memcpy(d.target + i * P, xp + i * W + P, sizeof(float) * (size_t)P);
    }
    if ((s = local_conditioning(tr, b, tr->step, (int32_t)n_sh, run_seq, &d, err))) goto out;
    ea.T = T;
    ea.lse = zg_calloc((size_t)m->n_layers * (size_t)(T + 1) * (size_t)m->n_heads, sizeof(float), err);
    if (!ea.lse) {
        s = ZG_ERR_NOMEM;
        goto out;
    }
    zg_dit_batch db = {T, (int32_t)n_sh, d.x, d.target, pos_p, d.sample, d.t, d.text,
                       d.text_off, (double)zg_batch_total_tokens(b) * P};
    zg_dit_attn hook = {&ea, ea_forward, ea_backward};
    zg_dit_opts dopts = {tr->opts.act_ckpt};
    memset(tr->flat + tr->params.n_params, 0, sizeof(float) * (size_t)tr->params.n_params);
    double loss = 0;
    int64_t peak = 0;
    if ((s = zg_dit_step(m, &tr->params, &db, &hook, dopts, &tr->grads, &loss, &peak, err)))
        goto out;
    // gradient and loss all-reduce over the world, fixed order
    int32_t *ranks = NULL;
    if ((s = zg_comm_world_ranks(c, &ranks, err))) goto out;
    s = zg_comm_allreduce_f32(c, ranks, world, tr->flat + tr->params.n_params,
                              (size_t)tr->params.n_params, TAG_GRAD, err);
    if (!s) s = zg_comm_allreduce_f64(c, ranks, world, &loss, 1, TAG_GRAD + 1, err);
    free(ranks);
    if (s) goto out;
    apply_update(tr);
    st->loss = loss;
    st->local_tokens = T;
    st->attn_s = ea.seconds;
    st->bytes_sent = c->bytes_sent - sent0;
    st->step_s = zg_time_now() - t0;
    int64_t local_peak = peak + (int64_t)sizeof(float) * 4 * tr->params.n_params +
                         (int64_t)sizeof(float) * (m->n_layers * T * m->n_heads + T * (W + P * 2));
    s = reduce_stats(tr, st, local_peak, err);
out:
    free(origin), free(pos_l), free(pos_p), free(xl), free(xp), free(run_seq), free(ea.lse);
    local_free(&d);
    zg_engine_free(e);
    return s;
}

zg_status zg_trainer_step_local(zg_trainer *tr, const zg_batch *b, zg_train_stats *st,
                                zg_error *err) {
    memset(st, 0, sizeof *st);
    double t0 = zg_time_now();
    const zg_model *m = &tr->model;
    int32_t P = zg_dit_patch_dim(m);
    int64_t T = zg_batch_total_tokens(b);
    local_data d;
    memset(&d, 0, sizeof d);
    int64_t *run_seq = zg_calloc((size_t)b->n + 1, sizeof *run_seq, err);
    d.x = zg_calloc((size_t)T + 1, sizeof(float) * (size_t)P, err);
    d.target = zg_calloc((size_t)T + 1, sizeof(float) * (size_t)P, err);
    d.pos = zg_calloc((size_t)T + 1, sizeof(int32_t) * 3, err);
    d.sample = zg_calloc((size_t)T + 1, sizeof(int32_t), err);
    zg_status s = ZG_OK;
    if (!run_seq || !d.x || !d.target || !d.pos || !d.sample) {
        s = ZG_ERR_NOMEM;
        goto out;
    }
    int64_t at = 0;
    for (int64_t i = 0; i < b->n; i++) {
        const zg_seq *sq = &b->seqs[i];
        run_seq[i] = i;
        uint64_t ss = sample_seed(tr->opts.seed, tr->step, sq->id);
        float t = sample_t(ss);
        int32_t grid[3];
        zg_train_seq_grid(m, sq, grid);
        for (int64_t j = 0; j < sq->tokens; j++, at++) {
            sample_token(P, ss, t, grid, j, d.x + at * P, d.target + at * P, d.pos + at * 3);
            d.sample[at] = (int32_t)i;
        }
    }
    if ((s = local_conditioning(tr, b, tr->step, (int32_t)b->n, run_seq, &d, err))) goto out;
    zg_dit_batch db = {T, (int32_t)b->n, d.x, d.target, d.pos, d.sample, d.t, d.text, d.text_off,
                       (double)T * P};
    zg_dit_opts dopts = {tr->opts.act_ckpt};
    memset(tr->flat + tr->params.n_params, 0, sizeof(float) * (size_t)tr->params.n_params);
    double loss = 0;
    int64_t peak = 0;
    if ((s = zg_dit_step(m, &tr->params, &db, NULL, dopts, &tr->grads, &loss, &peak, err)))
        goto out;
    apply_update(tr);
    st->loss = loss;
    st->local_tokens = T;
    st->step_s = st->slowest_s = st->fastest_s = zg_time_now() - t0;
    st->peak_bytes = peak + (int64_t)sizeof(float) * 4 * tr->params.n_params;
out:
    free(run_seq);
    local_free(&d);
    return s;
}
