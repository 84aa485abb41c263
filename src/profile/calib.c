// calib.c — prices measured in context: the mixed calibration design (plans with many
// sequences whose critical rank is known by construction) and the non-negative least-squares
// fit  makespan = fixed + Σ_j count_j · price_j  over those plans (docs/profiler.md, "mixed").
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"

// ---- NNLS ----------------------------------------------------------------------------------------

zg_status zg_profile_nnls(const double *A, const double *y, int32_t rows, int32_t cols,
                          const uint8_t *free_col, double *x, zg_error *err) {
    if (rows < 1 || cols < 1)
        return zg_error_set(err, ZG_ERR_INVALID, "nnls: %d rows x %d columns; need >= 1 each",
                            rows, cols);
    size_t c2 = (size_t)cols * (size_t)cols;
    double *G = zg_calloc(c2, sizeof *G, err), *g = zg_calloc((size_t)cols, sizeof *g, err);
    double *sc = zg_calloc((size_t)cols, sizeof *sc, err);
    if (!G || !g || !sc) {
        free(G), free(g), free(sc);
        return ZG_ERR_NOMEM;
    }
    // column scales (so the coordinate steps are well conditioned)
    for (int32_t j = 0; j < cols; j++) {
        double s = 0;
        for (int32_t i = 0; i < rows; i++) s += A[(size_t)i * cols + j] * A[(size_t)i * cols + j];
        sc[j] = s > 0 ? 1 / sqrt(s) : 0;
    }
    // normal equations of the scaled problem: G = (AS)^T (AS), g = (AS)^T y
    for (int32_t i = 0; i < rows; i++) {
        const double *a = A + (size_t)i * cols;
        for (int32_t j = 0; j < cols; j++) {
            double aj = a[j] * sc[j];
            if (aj == 0) continue;
            g[j] += aj * y[i];
            for (int32_t k = 0; k < cols; k++) G[(size_t)j * cols + k] += aj * a[k] * sc[k];
        }
    }
    // projected coordinate descent (Gauss-Seidel with clamping at 0 for constrained columns);
    // the objective is convex, so it converges to the NNLS optimum
    for (int32_t j = 0; j < cols; j++) x[j] = 0;
    double ynorm = 0;
    for (int32_t i = 0; i < rows; i++) ynorm = fmax(ynorm, fabs(y[i]));
    double tol = 1e-13 * (ynorm > 0 ? ynorm : 1);
    for (int32_t sweep = 0; sweep < 200000; sweep++) {
        double moved = 0;
        for (int32_t j = 0; j < cols; j++) {
            double d = G[(size_t)j * cols + j];
            if (d <= 0) continue;  // an all-zero column: its coefficient stays 0
            double r = g[j];
            for (int32_t k = 0; k < cols; k++) r -= G[(size_t)j * cols + k] * x[k];
            double nx = x[j] + r / d;
            if (!(free_col && free_col[j]) && nx < 0) nx = 0;
            moved = fmax(moved, fabs(nx - x[j]));
            x[j] = nx;
        }
        if (moved <= tol) break;
    }
    for (int32_t j = 0; j < cols; j++) x[j] *= sc[j];
    free(G), free(g), free(sc);
    return ZG_OK;
}

// ---- calibration design --------------------------------------------------------------------------

void zg_calib_free(zg_calib *c) {
    if (!c) return;
    for (int32_t i = 0; c->items && i < c->n_plans; i++) {
        zg_batch_free(&c->items[i].batch);
        zg_plan_free(&c->items[i].plan);
    }
    free(c->items), free(c->counts), free(c->unk_bucket), free(c->unk_cfg);
    memset(c, 0, sizeof *c);
}

typedef struct {
    int32_t bucket;
    zg_config cfg;
    int32_t start;  // first rank
} calib_put;

static zg_status add_seq(zg_batch *b, const zg_bucket *bk, int32_t text, int32_t world,
                         zg_error *err) {
    zg_seq s;
    zg_seq_init(&s);
    s.id = b->n;
    s.tokens = bk->tokens;
    s.kind = bk->kind;
    s.frames = bk->frames, s.height = bk->height, s.width = bk->width;
    s.text_tokens = text;
    s.origin_rank = (int32_t)(b->n % world);  // round-robin loader layout, as in training
    snprintf(s.bucket, sizeof s.bucket, "%s", bk->name);
    return zg_batch_push(b, &s, err);
}

static void shuffle(int32_t *v, int32_t n, zg_rng *r) {
    for (int32_t i = n - 1; i > 0; i--) {
        int32_t j = (int32_t)zg_rng_int(r, 0, i), t = v[i];
        v[i] = v[j], v[j] = t;
    }
}

zg_status zg_calib_design(const zg_model *m, int32_t world, const zg_catalog *cat,
                          const zg_config *cfgs, int32_t nc, const zg_calib_opts *o,
                          zg_calib *out, zg_error *err) {
    memset(out, 0, sizeof *out);
    if (world < 1 || cat->n < 1 || nc < 1 || o->plans < 0 || o->images < 0 || o->splits < 0 ||
        o->min_splits < 0 || o->videos < 0 || o->mirror < 0 || o->mirror > 1)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "calibration design: %d ranks, %d buckets, %d configs, plans %d, "
                            "images %d, splits %d, videos %d, mirror %g; need ranks, buckets "
                            "and configs >= 1, counts >= 0, mirror in [0,1]",
                            world, cat->n, nc, o->plans, o->images, o->splits, o->videos,
                            o->mirror);
    int32_t text = o->text_tokens > 0 ? o->text_tokens : (m->text_len > 0 ? m->text_len : 1);
    zg_status st = ZG_OK;
    // unknowns: every legal (bucket, config) pair
    out->unk_bucket = zg_calloc((size_t)cat->n * (size_t)nc, sizeof *out->unk_bucket, err);
    out->unk_cfg = zg_calloc((size_t)cat->n * (size_t)nc, sizeof *out->unk_cfg, err);
    int32_t *split_u = zg_calloc((size_t)cat->n * (size_t)nc, sizeof *split_u, err);
    int32_t *vid_u = zg_calloc((size_t)cat->n, sizeof *vid_u, err);
    int32_t *img_u = zg_calloc((size_t)cat->n, sizeof *img_u, err);
    calib_put *put = NULL;
    if (!out->unk_bucket || !out->unk_cfg || !split_u || !vid_u || !img_u) st = ZG_ERR_NOMEM;
    int32_t n_split = 0, n_vid = 0, n_img = 0;
    for (int32_t b = 0; b < cat->n && !st; b++)
        for (int32_t c = 0; c < nc; c++) {
            if (zg_config_degree(cfgs[c]) > world ||
                zg_config_check(m, world, cfgs[c], cat->buckets[b].tokens, NULL))
                continue;
            int32_t u = out->n_unknowns++;
            out->unk_bucket[u] = b, out->unk_cfg[u] = cfgs[c];
            if (!zg_config_is_whole(cfgs[c])) split_u[n_split++] = u;
            else if (cat->buckets[b].kind == ZG_SEQ_VIDEO) vid_u[n_vid++] = u;
            else img_u[n_img++] = u;
        }
    if (!st && out->n_unknowns == 0)
        st = zg_error_set(err, ZG_ERR_INVALID, "calibration design: no legal (bucket, config)");
    int32_t U = out->n_unknowns, P = o->plans > 0 ? o->plans : 3 * U;
    if (!st) {
        out->items = zg_calloc((size_t)P, sizeof *out->items, err);
        out->counts = zg_calloc((size_t)P * (size_t)U, sizeof *out->counts, err);
        int32_t cap = o->images + o->splits + o->videos + 2;
        put = zg_calloc((size_t)cap * (size_t)world, sizeof *put, err);
        if (!out->items || !out->counts || !put) st = ZG_ERR_NOMEM;
    }
    zg_rng r;
    zg_rng_init(&r, zg_rng_derive(o->seed, 0xCA11B));
    // split and whole-video unknowns are dealt from shuffled decks, so each appears about
    // equally often and with changing neighbours; images are drawn at random
    int32_t split_at = n_split, vid_at = n_vid;
    for (int32_t p = 0; p < P && !st; p++) {
        zg_profile_item *it = &out->items[p];
        zg_batch_init(&it->batch);
        zg_plan_init(&it->plan);
        out->n_plans = p + 1;
        double *row = out->counts + (size_t)p * U;
        int32_t np = 0;
        int32_t lo = o->min_splits < o->splits ? o->min_splits : o->splits;
        int32_t ns = n_split ? (int32_t)zg_rng_int(&r, lo, o->splits) : 0;
        for (int32_t k = 0; k < ns; k++) {
            if (split_at == n_split) shuffle(split_u, n_split, &r), split_at = 0;
            int32_t u = split_u[split_at++];
            put[np++] = (calib_put){out->unk_bucket[u], out->unk_cfg[u], 0};
            row[u] += 1;
        }
        int32_t nv = n_vid ? (int32_t)zg_rng_int(&r, 0, o->videos) : 0;
        int32_t ni = n_img ? (int32_t)zg_rng_int(&r, 0, o->images) : 0;
        for (int32_t k = 0; k < nv + ni; k++) {
            int32_t u;
            if (k < nv) {
                if (vid_at == n_vid) shuffle(vid_u, n_vid, &r), vid_at = 0;
                u = vid_u[vid_at++];
            } else {
                u = img_u[zg_rng_int(&r, 0, n_img - 1)];
            }
            zg_config whole = {1, 1, 1};
            put[np++] = (calib_put){out->unk_bucket[u], whole, 0};
            row[u] += 1;
            // a copy on each other rank with probability `mirror`: every other rank holds a
            // sub-multiset of rank 0's work, so rank 0 is the critical rank by construction
            for (int32_t rr = 1; rr < world; rr++)
                if (o->mirror >= 1 || zg_rng_uniform(&r) < o->mirror)
                    put[np++] = (calib_put){out->unk_bucket[u], whole, rr};
        }
        for (int32_t k = 0; k < np && !st; k++)
            st = add_seq(&it->batch, &cat->buckets[put[k].bucket], text, world, err);
        if (!st) st = zg_plan_alloc(&it->plan, np, world, err);
        for (int32_t k = 0; k < np && !st; k++) {
            zg_option op = {put[k].cfg, put[k].start, 0, 0};
            st = zg_plan_set_option(&it->plan, k, &it->batch.seqs[k], k, &op, err);
        }
    }
    free(split_u), free(vid_u), free(img_u), free(put);
    if (st) zg_calib_free(out);
    return st;
}

zg_status zg_calib_fit(const zg_calib *c, const double *times, double *fixed, double *prices,
                       double *rmse, double *max_rel, zg_error *err) {
    int32_t U = c->n_unknowns, cols = U + 1, P = c->n_plans;
    double *A = zg_calloc((size_t)P * (size_t)cols, sizeof *A, err);
    double *x = zg_calloc((size_t)cols, sizeof *x, err);
    zg_status st = ZG_OK;
    if (!A || !x) st = ZG_ERR_NOMEM;
    for (int32_t p = 0; p < P && !st; p++) {
        A[(size_t)p * cols] = 1;
        for (int32_t u = 0; u < U; u++) A[(size_t)p * cols + 1 + u] = c->counts[(size_t)p * U + u];
    }
    // every coefficient is constrained to >= 0, the fixed per-step time too: a negative fixed
    // time cannot be stored as overhead_s, and clamping it after an unconstrained fit would
    // leave the prices fitted for another intercept
    if (!st) st = zg_profile_nnls(A, times, P, cols, NULL, x, err);
    if (!st) {
        *fixed = x[0];
        for (int32_t u = 0; u < U; u++) prices[u] = x[1 + u];
        double se = 0, mr = 0;
        for (int32_t p = 0; p < P; p++) {
            double f = 0;
            for (int32_t j = 0; j < cols; j++) f += A[(size_t)p * cols + j] * x[j];
            se += (f - times[p]) * (f - times[p]);
            if (times[p] > 0) mr = fmax(mr, fabs(f - times[p]) / times[p]);
        }
        if (rmse) *rmse = sqrt(se / P);
        if (max_rel) *max_rel = mr;
    }
    free(A), free(x);
    return st;
}

void zg_calib_opts_default(zg_calib_opts *o) {
    *o = (zg_calib_opts){
        .images = 12, .videos = 2, .splits = 3, .min_splits = 1, .mirror = 1, .seed = 1};
}

const char *zg_profile_method_name(zg_profile_method m) {
    return m == ZG_PROFILE_SINGLE ? "single" : m == ZG_PROFILE_HYBRID ? "hybrid" : "mixed";
}

zg_status zg_profile_method_parse(const char *s, zg_profile_method *m, zg_error *err) {
    if (s && !strcmp(s, "mixed")) *m = ZG_PROFILE_MIXED;
    else if (s && !strcmp(s, "single")) *m = ZG_PROFILE_SINGLE;
    else if (s && !strcmp(s, "hybrid")) *m = ZG_PROFILE_HYBRID;
    else
        return zg_error_set(err, ZG_ERR_INVALID, "method '%s': use mixed, hybrid or single",
                            s ? s : "");
    return ZG_OK;
}

zg_status zg_calib_fit_hybrid(const zg_calib *c, const double *times, const double *base,
                              double *fixed, double coef[3], double *prices, double *rmse,
                              double *max_rel, zg_error *err) {
    int32_t U = c->n_unknowns, P = c->n_plans;
    double *A = zg_calloc((size_t)P * 4, sizeof *A, err);
    if (!A) return ZG_ERR_NOMEM;
    // columns: 1 | Σ count·base | whole sequences | split sequences (rank 0's)
    for (int32_t p = 0; p < P; p++) {
        double *a = A + (size_t)p * 4;
        a[0] = 1;
        for (int32_t u = 0; u < U; u++) {
            double k = c->counts[(size_t)p * U + u];
            a[1] += k * base[u];
            a[zg_config_is_whole(c->unk_cfg[u]) ? 2 : 3] += k;
        }
    }
    uint8_t fr[4] = {0, 1, 1, 1};  // fixed >= 0; scale and offsets free
    double x[4];
    zg_status st = zg_profile_nnls(A, times, P, 4, fr, x, err);
    if (!st) {
        *fixed = x[0];
        coef[0] = x[1], coef[1] = x[2], coef[2] = x[3];
        for (int32_t u = 0; u < U; u++) {
            double v = x[1] * base[u] + (zg_config_is_whole(c->unk_cfg[u]) ? x[2] : x[3]);
            prices[u] = v > 0 ? v : 0;
        }
        // residuals of the stored table (after the clamp at 0)
        double se = 0, mr = 0;
        for (int32_t p = 0; p < P; p++) {
            double f = *fixed;
            for (int32_t u = 0; u < U; u++) f += c->counts[(size_t)p * U + u] * prices[u];
            se += (f - times[p]) * (f - times[p]);
            if (times[p] > 0) mr = fmax(mr, fabs(f - times[p]) / times[p]);
        }
        if (rmse) *rmse = sqrt(se / P);
        if (max_rel) *max_rel = mr;
    }
    free(A);
    return st;
}
