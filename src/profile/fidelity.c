// fidelity.c — the fidelity design: rotation plans (mixed) and corner plans (everything whole),
// predicted with the measured table; and the error summary. Running them is
// zg_profile_run_rounds (the same rounds as the profiler).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"

void zg_fidelity_opts_default(zg_fidelity_opts *o) {
    *o = (zg_fidelity_opts){.images = 12, .min_mixed = 18, .corners = 3, .seed = 1};
}

void zg_fidelity_free(zg_fidelity_plan *plans, int32_t n) {
    for (int32_t i = 0; plans && i < n; i++) {
        zg_batch_free(&plans[i].item.batch);
        zg_plan_free(&plans[i].item.plan);
    }
    free(plans);
}

static zg_status push_bucket(zg_batch *b, const zg_bucket *bk, const zg_model *m, int32_t world,
                             zg_error *err) {
    zg_seq s;
    zg_seq_init(&s);
    s.id = b->n;
    s.tokens = bk->tokens;
    s.kind = bk->kind;
    s.frames = bk->frames, s.height = bk->height, s.width = bk->width;
    s.text_tokens = m->text_len > 0 ? m->text_len : 1;
    s.origin_rank = (int32_t)(b->n % world);
    snprintf(s.bucket, sizeof s.bucket, "%s", bk->name);
    return zg_batch_push(b, &s, err);
}

// Places sequence i with config c on the contiguous block whose busiest rank is least loaded
// (ties: lowest start); load[] gets the price.
static zg_status place(const zg_pricer *pr, zg_plan *p, const zg_batch *b, int64_t i,
                       zg_config c, double *load, int32_t world, zg_error *err) {
    int32_t d = zg_config_degree(c), best = -1;
    double best_v = INFINITY;
    for (int32_t s = 0; s + d <= world; s++) {
        double v = 0;
        for (int32_t r = s; r < s + d; r++) v = fmax(v, load[r]);
        if (v < best_v) best_v = v, best = s;
    }
    int32_t *ranks = zg_calloc((size_t)d, sizeof *ranks, err);
    if (!ranks) return ZG_ERR_NOMEM;
    for (int32_t r = 0; r < d; r++) ranks[r] = best + r;
    zg_price price;
    zg_status st = zg_pricer_price(pr, &b->seqs[i], c, ranks, d, &price, err);
    free(ranks);
    if (st) return st;
    zg_option o = {c, best, price.time, price.mem};
    if ((st = zg_plan_set_option(p, i, &b->seqs[i], i, &o, err))) return st;
    for (int32_t r = best; r < best + d; r++) load[r] += price.time;
    return ZG_OK;
}

typedef struct {
    const zg_batch *b;
    const double *whole;
} order_ctx;

static int cmp_whole_desc(const void *pa, const void *pb, void *ctx) {
    const order_ctx *o = ctx;
    int64_t a = *(const int64_t *)pa, c = *(const int64_t *)pb;
    if (o->whole[a] != o->whole[c]) return o->whole[a] > o->whole[c] ? -1 : 1;
    return (a > c) - (a < c);
}

// Builds the plan of batch b: sequence i < n_fixed gets cfg[i] (placed in order), the rest run
// whole, largest whole price first onto the least-loaded rank. Then predicts.
static zg_status build_plan(const zg_pricer *pr, const zg_cluster *cl, double overhead,
                            zg_fidelity_plan *fp, const zg_config *cfg, int64_t n_fixed,
                            zg_error *err) {
    zg_batch *b = &fp->item.batch;
    zg_plan *p = &fp->item.plan;
    int32_t world = cl->world_size;
    zg_status st = zg_plan_alloc(p, b->n, world, err);
    if (st) return st;
    double *load = zg_calloc((size_t)world, sizeof *load, err);
    double *whole = zg_calloc((size_t)b->n + 1, sizeof *whole, err);
    int64_t *order = zg_calloc((size_t)b->n + 1, sizeof *order, err);
    if (!load || !whole || !order) st = ZG_ERR_NOMEM;
    for (int64_t i = 0; i < n_fixed && !st; i++) st = place(pr, p, b, i, cfg[i], load, world, err);
    int64_t n_rest = 0;
    for (int64_t i = n_fixed; i < b->n && !st; i++) {
        int32_t r0 = 0;
        zg_price price;
        st = zg_pricer_price(pr, &b->seqs[i], (zg_config){1, 1, 1}, &r0, 1, &price, err);
        whole[i] = price.time;
        order[n_rest++] = i;
    }
    order_ctx oc = {b, whole};
    if (!st) st = zg_sort_stable(order, (size_t)n_rest, sizeof *order, cmp_whole_desc, &oc, err);
    for (int64_t j = 0; j < n_rest && !st; j++)
        st = place(pr, p, b, order[j], (zg_config){1, 1, 1}, load, world, err);
    free(load), free(whole), free(order);
    if (st) return st;
    zg_plan_stats stats;
    if ((st = zg_plan_evaluate(p, b, pr, &stats, err))) return st;
    fp->pred_time = p->makespan + overhead;
    fp->pred_mem = stats.peak_mem;
    return ZG_OK;
}

static zg_status draw_images(const zg_model *m, const zg_catalog *cat, const int32_t *img,
                             int32_t n_img, int32_t count, uint64_t seed, int32_t world,
                             zg_batch *b, zg_error *err) {
    zg_rng r;
    zg_rng_init(&r, seed);
    zg_status st = ZG_OK;
    for (int32_t i = 0; i < count && !st; i++)
        st = push_bucket(b, &cat->buckets[img[zg_rng_int(&r, 0, n_img - 1)]], m, world, err);
    return st;
}

zg_status zg_fidelity_design(const zg_model *m, const zg_cluster *cl, const zg_catalog *cat,
                             const zg_pricer *table, double overhead_s,
                             const zg_fidelity_opts *o, zg_fidelity_plan **plans, int32_t *n,
                             zg_error *err) {
    *plans = NULL;
    *n = 0;
    int32_t world = cl->world_size;
    // image buckets; video buckets grouped by frames (one block per duration), by tokens
    int32_t *img = zg_calloc((size_t)cat->n, sizeof *img, err);
    int32_t *vid = zg_calloc((size_t)cat->n, sizeof *vid, err);
    int32_t *frames = zg_calloc((size_t)cat->n, sizeof *frames, err);
    zg_config *cfgs = NULL, *usable = NULL;
    int32_t n_img = 0, n_vid = 0, n_fr = 0, nc = 0, n_use = 0;
    zg_status st = ZG_OK;
    if (!img || !vid || !frames) st = ZG_ERR_NOMEM;
    for (int32_t i = 0; i < cat->n && !st; i++) {
        const zg_bucket *b = &cat->buckets[i];
        if (b->kind == ZG_SEQ_VIDEO) {
            vid[n_vid++] = i;
            int seen = 0;
            for (int32_t k = 0; k < n_fr; k++) seen |= frames[k] == b->frames;
            if (!seen) frames[n_fr++] = b->frames;
        } else {
            img[n_img++] = i;
        }
    }
    if (!st && (n_img == 0 || n_vid == 0 || o->images < 0 || o->min_mixed < 0 || o->corners < 0))
        st = zg_error_set(err, ZG_ERR_INVALID,
                          "fidelity design needs image and video buckets (catalog has %d and "
                          "%d) and non-negative counts",
                          n_img, n_vid);
    // configurations the table prices for the smallest video
    if (!st) st = zg_config_enumerate(m, world, &cfgs, &nc, err);
    if (!st) usable = zg_calloc((size_t)nc + 1, sizeof *usable, err);
    if (!st && !usable) st = ZG_ERR_NOMEM;
    int32_t vmin = n_vid ? vid[0] : 0;
    for (int32_t k = 0; k < n_vid; k++)
        if (cat->buckets[vid[k]].tokens < cat->buckets[vmin].tokens) vmin = vid[k];
    for (int32_t c = 0; c < nc && !st; c++) {
        zg_seq s;
        zg_seq_init(&s);
        s.tokens = cat->buckets[vmin].tokens;
        int32_t *ranks = zg_calloc((size_t)zg_config_degree(cfgs[c]), sizeof *ranks, NULL);
        zg_price pr;
        if (!ranks) continue;
        for (int32_t r = 0; r < zg_config_degree(cfgs[c]); r++) ranks[r] = r;
        if (!zg_config_check(m, world, cfgs[c], s.tokens, NULL) &&
            !zg_pricer_price(table, &s, cfgs[c], ranks, zg_config_degree(cfgs[c]), &pr, NULL))
            usable[n_use++] = cfgs[c];
        free(ranks);
    }
    if (!st && n_use == 0)
        st = zg_error_set(err, ZG_ERR_INVALID, "fidelity: the profile prices no configuration");
    int32_t n_blocks = n_use ? (o->min_mixed + n_use - 1) / n_use : 0;
    int32_t total = n_blocks * n_use + o->corners;
    zg_fidelity_plan *fp = st ? NULL : zg_calloc((size_t)total + 1, sizeof *fp, err);
    if (!st && !fp) st = ZG_ERR_NOMEM;
    int32_t made = 0;
    zg_config *vc = zg_calloc((size_t)cat->n + 1, sizeof *vc, err);
    if (!st && !vc) st = ZG_ERR_NOMEM;
    for (int32_t bl = 0; bl < n_blocks && !st; bl++) {
        int32_t fr = frames[bl % n_fr];
        for (int32_t j = 0; j < n_use && !st; j++) {
            zg_fidelity_plan *p = &fp[made++];
            zg_batch_init(&p->item.batch);
            zg_plan_init(&p->item.plan);
            snprintf(p->name, sizeof p->name, "mixed-%02d", made);
            int32_t nv = 0;
            for (int32_t k = 0; k < n_vid && !st; k++) {
                if (cat->buckets[vid[k]].frames != fr) continue;
                vc[nv] = usable[(nv + j) % n_use];  // rotation: video nv gets config nv + j
                nv++;
                st = push_bucket(&p->item.batch, &cat->buckets[vid[k]], m, world, err);
            }
            if (!st)
                st = draw_images(m, cat, img, n_img, o->images,
                                 zg_rng_derive(o->seed, (uint64_t)bl), world, &p->item.batch, err);
            if (!st) st = build_plan(table, cl, overhead_s, p, vc, nv, err);
        }
    }
    for (int32_t c = 0; c < o->corners && !st; c++) {
        zg_fidelity_plan *p = &fp[made++];
        zg_batch_init(&p->item.batch);
        zg_plan_init(&p->item.plan);
        snprintf(p->name, sizeof p->name, "corner-whole-%d", c + 1);
        // corner c: the videos of one duration (c < durations) or none, and images
        int32_t fr = c < n_fr ? frames[c] : -1;
        for (int32_t k = 0; k < n_vid && !st; k++)
            if (cat->buckets[vid[k]].frames == fr)
                st = push_bucket(&p->item.batch, &cat->buckets[vid[k]], m, world, err);
        int32_t extra = fr < 0 ? 3 * o->images : o->images;
        if (!st)
            st = draw_images(m, cat, img, n_img, extra, zg_rng_derive(o->seed, 1000 + (uint64_t)c),
                             world, &p->item.batch, err);
        if (!st) st = build_plan(table, cl, overhead_s, p, NULL, 0, err);
    }
    free(img), free(vid), free(frames), free(cfgs), free(usable), free(vc);
    if (st) {
        zg_fidelity_free(fp, made);
        return st;
    }
    *plans = fp;
    *n = made;
    return ZG_OK;
}

void zg_fidelity_summarize(const zg_fidelity_plan *plans, int32_t n, double overhead_s,
                           zg_fidelity_summary *s) {
    memset(s, 0, sizeof *s);
    s->plans = n;
    if (n <= 0) return;
    for (int32_t i = 0; i < n; i++) {
        const zg_fidelity_plan *p = &plans[i];
        double et = fabs(p->pred_time - p->meas_time), em = fabs(p->pred_mem - p->meas_mem);
        double at = p->meas_time > 0 ? 100 * et / p->meas_time : 0;
        double am = p->meas_mem > 0 ? 100 * em / p->meas_mem : 0;
        double net = p->meas_time - overhead_s;
        s->mae_time += et;
        s->mape_time += at;
        s->max_ape_time = fmax(s->max_ape_time, at);
        s->mape_time_net += net > 0 ? 100 * et / net : 0;
        s->mae_mem += em;
        s->mape_mem += am;
        s->max_ape_mem = fmax(s->max_ape_mem, am);
    }
    s->mae_time /= n, s->mape_time /= n, s->mape_time_net /= n;
    s->mae_mem /= n, s->mape_mem /= n;
}

double zg_fidelity_repeat_pct(const double *times, int32_t n, int32_t reps, zg_profile_stat st) {
    if (n <= 0 || reps < 2) return 0;
    double *odd = malloc(sizeof *odd * (size_t)reps), *even = malloc(sizeof *even * (size_t)reps);
    double sum = 0;
    for (int32_t i = 0; odd && even && i < n; i++) {
        const double *t = times + (int64_t)i * reps;
        int32_t no = 0, ne = 0;
        for (int32_t r = 0; r < reps; r++) {
            if (r % 2) odd[no++] = t[r];
            else even[ne++] = t[r];
        }
        double all = zg_profile_stat_of(t, reps, st);
        if (all > 0)
            sum += 100 * fabs(zg_profile_stat_of(odd, no, st) - zg_profile_stat_of(even, ne, st)) /
                   all;
    }
    free(odd), free(even);
    return sum / n;
}
