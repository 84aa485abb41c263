// measure.c — the profiler: per (bucket, config) prices measured on real training steps with
// the empty-plan host overhead removed, and the memory model fitted to tracked peaks.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"

void zg_profile_opts_default(zg_profile_opts *o) {
    *o = (zg_profile_opts){.warmup = 1, .reps = 5, .act_ckpt = 1, .seed = 1,
              .method = ZG_PROFILE_HYBRID};
    zg_calib_opts_default(&o->calib);
}

// ---- memory fit ----------------------------------------------------------------------------------

// Solves the k x k system A x = b in place (partial pivoting). Returns 0 if singular.
static int solve(int k, double A[4][4], double b[4], double x[4]) {
    for (int c = 0; c < k; c++) {
        int p = c;
        for (int r = c + 1; r < k; r++)
            if (fabs(A[r][c]) > fabs(A[p][c])) p = r;
        if (fabs(A[p][c]) < 1e-12) return 0;
        for (int j = 0; j < k; j++) {
            double t = A[c][j];
            A[c][j] = A[p][j], A[p][j] = t;
        }
        double t = b[c];
        b[c] = b[p], b[p] = t;
        for (int r = c + 1; r < k; r++) {
            double f = A[r][c] / A[c][c];
            for (int j = c; j < k; j++) A[r][j] -= f * A[c][j];
            b[r] -= f * b[c];
        }
    }
    for (int c = k - 1; c >= 0; c--) {
        double s = b[c];
        for (int j = c + 1; j < k; j++) s -= A[c][j] * x[j];
        x[c] = s / A[c][c];
    }
    return 1;
}

static double feature(const zg_mem_obs *o, int f) {
    switch (f) {
    case 0: return 1;
    case 1: return o->tokens;
    case 2: return o->text_rows;
    default: return o->samples;
    }
}

zg_status zg_profile_fit_memory(const zg_mem_obs *obs, int32_t n, zg_cost_table *t,
                                zg_error *err) {
    if (n < 2)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "memory calibration needs at least 2 runs (got %d)", n);
    // features that vary across the observations (the constant always stays)
    int use[4] = {1, 0, 0, 0}, idx[4], k = 0;
    for (int f = 1; f < 4; f++)
        for (int32_t i = 1; i < n; i++)
            if (feature(&obs[i], f) != feature(&obs[0], f)) use[f] = 1;
    double scale[4] = {1, 1, 1, 1};
    for (int f = 0; f < 4; f++) {
        if (!use[f]) continue;
        double mx = 0;
        for (int32_t i = 0; i < n; i++) mx = fmax(mx, fabs(feature(&obs[i], f)));
        scale[f] = mx > 0 ? mx : 1;
        idx[k++] = f;
    }
    double coef[4] = {0, 0, 0, 0};
    // drop the last used feature while the system is singular (collinear features)
    for (;;) {
        double A[4][4] = {{0}}, b[4] = {0}, x[4] = {0};
        for (int32_t i = 0; i < n; i++)
            for (int a = 0; a < k; a++) {
                double fa = feature(&obs[i], idx[a]) / scale[idx[a]];
                b[a] += fa * obs[i].peak;
                for (int c = 0; c < k; c++) A[a][c] += fa * feature(&obs[i], idx[c]) / scale[idx[c]];
            }
        if (solve(k, A, b, x)) {
            for (int a = 0; a < k; a++) coef[idx[a]] = x[a] / scale[idx[a]];
            break;
        }
        if (k <= 1)
            return zg_error_set(err, ZG_ERR_INTERNAL, "memory calibration: singular fit");
        k--;
    }
    t->mem_base = coef[0];
    t->mem_per_token = coef[1];
    t->mem_per_text = coef[2];
    t->mem_per_sample = coef[3];
    double worst = 0;
    for (int32_t i = 0; i < n; i++) {
        double fit = 0;
        for (int f = 0; f < 4; f++) fit += coef[f] * feature(&obs[i], f);
        if (obs[i].peak > 0) worst = fmax(worst, fabs(fit - obs[i].peak) / obs[i].peak);
    }
    t->mem_fit_max_err = worst;
    return ZG_OK;
}

// ---- items ---------------------------------------------------------------------------------------

static void seq_from_bucket(const zg_bucket *b, int32_t text, int64_t id, zg_seq *s) {
    zg_seq_init(s);
    s->id = id;
    s->tokens = b->tokens;
    s->kind = b->kind;
    s->frames = b->frames;
    s->height = b->height;
    s->width = b->width;
    s->text_tokens = text;
    s->origin_rank = 0;
    snprintf(s->bucket, sizeof s->bucket, "%s", b->name);
}

static void item_free(zg_profile_item *it) {
    zg_batch_free(&it->batch);
    zg_plan_free(&it->plan);
}

// k sequences of bucket b (text rows text[j]), each with config c on ranks 0..λ-1.
static zg_status item_make(const zg_bucket *b, int32_t k, const int32_t *text, zg_config c,
                           int32_t world, zg_profile_item *it, zg_error *err) {
    zg_batch_init(&it->batch);
    zg_plan_init(&it->plan);
    zg_status st = ZG_OK;
    for (int32_t j = 0; j < k && !st; j++) {
        zg_seq s;
        seq_from_bucket(b, text[j], j, &s);
        st = zg_batch_push(&it->batch, &s, err);
    }
    if (!st) st = zg_plan_alloc(&it->plan, k, world, err);
    for (int32_t j = 0; j < k && !st; j++) {
        zg_option o = {c, 0, 0, 0};
        st = zg_plan_set_option(&it->plan, j, &it->batch.seqs[j], j, &o, err);
    }
    return st;
}

// ---- the profiler --------------------------------------------------------------------------------

// Rank 0's share of a plan (its local tokens, text rows and samples): the memory observation.
// In every profiler item rank 0 is the busiest rank.
static zg_mem_obs rank0_obs(const zg_profile_item *it, double peak) {
    zg_mem_obs o = {0, 0, 0, peak};
    const zg_plan *pl = &it->plan;
    for (int64_t j = 0; j < pl->n; j++) {
        const zg_placement *pp = &pl->p[j];
        for (int32_t k = 0; k < pp->n_ranks; k++) {
            if (pp->shards[k].rank != 0) continue;
            o.tokens += (double)(pp->shards[k].end - pp->shards[k].start);
            o.text_rows += it->batch.seqs[pp->seq].text_tokens;
            o.samples += 1;
        }
    }
    return o;
}

static void settings_json(cJSON *s, const zg_profile_opts *o, int32_t text, int32_t maxd,
                          int32_t n_mem, int32_t n_calib, double empty_s, double rmse,
                          double max_rel) {
    cJSON_AddNumberToObject(s, "warmup_rounds", o->warmup);
    cJSON_AddNumberToObject(s, "measured_rounds", o->reps);
    cJSON_AddNumberToObject(s, "act_ckpt", o->act_ckpt);
    cJSON_AddNumberToObject(s, "text_tokens", text);
    cJSON_AddNumberToObject(s, "seed", (double)o->seed);
    cJSON_AddNumberToObject(s, "max_degree", maxd);
    cJSON_AddNumberToObject(s, "calibration_runs", n_mem);
    cJSON_AddStringToObject(s, "clock", zg_profile_clock_name(o->clock));
    cJSON_AddStringToObject(s, "method", zg_profile_method_name(o->method));
    cJSON_AddStringToObject(s, "stat", zg_profile_stat_name(o->stat));
    cJSON_AddNumberToObject(s, "empty_step_s", empty_s);
    if (o->method != ZG_PROFILE_SINGLE) {
        cJSON_AddNumberToObject(s, "calib_plans", n_calib);
        cJSON_AddNumberToObject(s, "calib_images", o->calib.images);
        cJSON_AddNumberToObject(s, "calib_videos", o->calib.videos);
        cJSON_AddNumberToObject(s, "calib_splits", o->calib.splits);
        cJSON_AddNumberToObject(s, "calib_min_splits", o->calib.min_splits);
        cJSON_AddNumberToObject(s, "calib_mirror", o->calib.mirror);
        cJSON_AddNumberToObject(s, "fit_rmse_s", rmse);
        cJSON_AddNumberToObject(s, "fit_max_rel_err", max_rel);
        cJSON_AddStringToObject(
            s, "timing",
            o->method == ZG_PROFILE_HYBRID
                ? "hybrid: single-sequence prices (step minus the empty step) corrected in "
                  "context: price = max(0, hybrid_scale x single + hybrid_offset_{whole,split}), "
                  "the 4 coefficients (with overhead_s) fitted by least squares to the "
                  "makespans (`stat` over rounds) of mixed calibration plans whose critical rank "
                  "is rank 0; lo/hi = the single-sequence spread, corrected alike"
                : "prices in context: the makespan (`stat` over rounds) of mixed calibration "
                  "plans whose critical rank is rank 0, fitted as overhead_s + sum of rank 0's "
                  "counts x prices (non-negative least squares); lo/hi = min/max of the "
                  "per-round fits");
    } else {
        cJSON_AddStringToObject(s, "timing",
                                "step makespan under `clock` of one sequence on ranks "
                                "0..degree-1 minus the empty-plan makespan (median: per round, "
                                "then median; min: min minus min)");
    }
}

zg_status zg_profile_measure(zg_comm *comm, const zg_model *m, const zg_cluster *cl,
                             const zg_catalog *cat, const zg_profile_opts *o,
                             zg_cost_table *out, zg_error *err) {
    zg_cost_table_init_empty(out);
    int32_t world = comm->size;
    if (cl->world_size != world)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "cluster %s has %d ranks but the run has %d; start with mpirun -np "
                            "%d or use --cluster cpu:%d",
                            cl->name, cl->world_size, world, cl->world_size, world);
    if (o->reps < 1 || o->warmup < 0 || cat->n < 1)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "profile: need reps >= 1 (%d), warmup >= 0 (%d) and a non-empty "
                            "catalog (%d buckets)",
                            o->reps, o->warmup, cat->n);
    int32_t maxd = o->max_degree > 0 && o->max_degree < world ? o->max_degree : world;
    int32_t text = o->text_tokens > 0 ? o->text_tokens : (m->text_len > 0 ? m->text_len : 1);
    int use_single = o->method != ZG_PROFILE_MIXED, use_cal = o->method != ZG_PROFILE_SINGLE;
    int hybrid = o->method == ZG_PROFILE_HYBRID;
    zg_config *cfgs = NULL;
    int32_t nc = 0;
    zg_status st = zg_config_enumerate(m, maxd, &cfgs, &nc, err);
    if (st) return st;
    int32_t legal = 0;
    for (int32_t b = 0; b < cat->n; b++)
        for (int32_t c = 0; c < nc; c++)
            legal += !zg_config_check(m, world, cfgs[c], cat->buckets[b].tokens, NULL);
    zg_calib cal;
    memset(&cal, 0, sizeof cal);
    if (use_cal) {
        zg_calib_opts co = o->calib;
        co.text_tokens = text;
        if (hybrid && co.plans <= 0) co.plans = legal > 24 ? legal : 24;
        if ((st = zg_calib_design(m, world, cat, cfgs, nc, &co, &cal, err))) {
            free(cfgs);
            return st;
        }
    }

    // items: 0 = empty plan; [1, c0) one sequence per legal (bucket, config) pair (SINGLE,
    // HYBRID), in the calibration design's unknown order; [c0, n_priced) the calibration plans
    // (MIXED, HYBRID; views of cal's); then 2 memory-calibration runs
    int32_t cap = 1 + (use_single ? legal : 0) + cal.n_plans + 2, n = 0, n_priced = 0, c0;
    zg_profile_item *items = zg_calloc((size_t)cap, sizeof *items, err);
    int32_t *item_bucket = zg_calloc((size_t)cap, sizeof *item_bucket, err);
    zg_config *item_cfg = zg_calloc((size_t)cap, sizeof *item_cfg, err);
    double *times = NULL, *peaks = NULL, *p = NULL, *fitp = NULL, *lo = NULL, *hi = NULL;
    double *base = NULL, *y = NULL;
    zg_mem_obs *obs = NULL;
    zg_trainer tr;
    int have_tr = 0;
    double rmse = 0, max_rel = 0, coef[3] = {0, 0, 0};
    if (!items || !item_bucket || !item_cfg) {
        st = ZG_ERR_NOMEM;
        goto out;
    }
    zg_batch_init(&items[0].batch);
    zg_plan_init(&items[0].plan);
    if ((st = zg_plan_alloc(&items[0].plan, 0, world, err))) goto out;
    item_bucket[n++] = -1;
    for (int32_t b = 0; use_single && b < cat->n; b++)
        for (int32_t c = 0; c < nc; c++) {
            if (zg_config_check(m, world, cfgs[c], cat->buckets[b].tokens, NULL)) continue;
            item_bucket[n] = b;
            item_cfg[n] = cfgs[c];
            if ((st = item_make(&cat->buckets[b], 1, &text, cfgs[c], world, &items[n++], err)))
                goto out;
        }
    c0 = n;
    for (int32_t i = 0; i < cal.n_plans; i++) items[n++] = cal.items[i];  // shallow views
    n_priced = n;
    // memory calibration: several whole sequences on rank 0 with other text lengths, so
    // tokens, text rows and samples vary independently
    {
        int32_t small = 0;
        for (int32_t b = 1; b < cat->n; b++)
            if (cat->buckets[b].tokens < cat->buckets[small].tokens) small = b;
        int32_t t4[4] = {1, 2, 3, 4}, t2[2] = {text + 3, text + 5};
        zg_config whole = {1, 1, 1};
        if ((st = item_make(&cat->buckets[small], 4, t4, whole, world, &items[n++], err)) ||
            (st = item_make(&cat->buckets[small], 2, t2, whole, world, &items[n++], err)))
            goto out;
    }
    times = zg_calloc((size_t)n * (size_t)o->reps, sizeof *times, err);
    peaks = zg_calloc((size_t)n, sizeof *peaks, err);
    obs = zg_calloc((size_t)n, sizeof *obs, err);
    p = zg_calloc((size_t)n + (size_t)o->reps, sizeof *p, err);
    base = zg_calloc((size_t)legal + 1, sizeof *base, err);
    fitp = zg_calloc((size_t)legal + 1, sizeof *fitp, err);
    lo = zg_calloc((size_t)legal + 1, sizeof *lo, err);
    hi = zg_calloc((size_t)legal + 1, sizeof *hi, err);
    y = zg_calloc((size_t)cal.n_plans + 1, sizeof *y, err);
    if (!times || !peaks || !obs || !p || !base || !fitp || !lo || !hi || !y) {
        st = ZG_ERR_NOMEM;
        goto out;
    }
    zg_train_opts to;
    zg_train_opts_default(&to);
    to.act_ckpt = o->act_ckpt;
    to.seed = o->seed;
    to.adam.lr = 0;  // weights stay fixed: every round does the same arithmetic
    if ((st = zg_trainer_init(&tr, m, comm, &to, err))) goto out;
    have_tr = 1;
    // without a warm-up round, item 0 (the empty plan, subtracted from every single price)
    // would be the trainer's first, cold step
    if (o->warmup == 0 && (st = zg_profile_prime(&tr, items, n_priced, NULL, err))) goto out;
    if ((st = zg_profile_run_rounds(&tr, items, n_priced, o->warmup, o->reps, o->clock, times,
                                    peaks, o->progress, o->progress_ctx, err)))
        goto out;
    // calibration runs: memory only (one unmeasured step each)
    if ((st = zg_profile_run_rounds(&tr, items + n_priced, n - n_priced, 0, 1, o->clock, NULL,
                                    peaks + n_priced, NULL, NULL, err)))
        goto out;

    snprintf(out->model, sizeof out->model, "%s", m->name);
    snprintf(out->cluster, sizeof out->cluster, "%s", cl->name);
    out->world_size = world;
    double empty_s = zg_profile_stat_of(times, o->reps, o->stat);
    out->overhead_s = empty_s;
    // single-sequence prices (SINGLE, HYBRID): base[u], lo[u], hi[u]
    for (int32_t i = 1; i < c0; i++) {
        int32_t u = i - 1;
        lo[u] = INFINITY, hi[u] = -INFINITY;
        for (int32_t r = 0; r < o->reps; r++) {
            p[r] = times[(int64_t)i * o->reps + r] - times[r];  // same round's empty plan
            lo[u] = fmin(lo[u], p[r]);
            hi[u] = fmax(hi[u], p[r]);
        }
        // median: of the per-round differences; min: min(item) - min(empty plan)
        base[u] = o->stat == ZG_PROFILE_STAT_MIN
                      ? zg_profile_stat_of(times + (int64_t)i * o->reps, o->reps, o->stat) -
                            empty_s
                      : zg_profile_median(p, o->reps);
        if (base[u] < 0) base[u] = 0;
        fitp[u] = base[u];
    }
    if (use_cal) {
        // fit on the per-plan statistic; lo/hi (MIXED) from one fit per round
        int32_t P = cal.n_plans, U = cal.n_unknowns;
        double fixed = 0, f_r = 0;
        if (hybrid && (U != c0 - 1 || U != legal)) {
            st = zg_error_set(err, ZG_ERR_INTERNAL, "profile: %d unknowns for %d single items",
                              U, c0 - 1);
            goto out;
        }
        for (int32_t u = 0; u < U && !hybrid; u++) lo[u] = INFINITY, hi[u] = -INFINITY;
        for (int32_t r = 0; r < o->reps && !st && o->reps > 1 && !hybrid; r++) {
            for (int32_t i = 0; i < P; i++) y[i] = times[(int64_t)(c0 + i) * o->reps + r];
            if (!(st = zg_calib_fit(&cal, y, &f_r, fitp, NULL, NULL, err)))
                for (int32_t u = 0; u < U; u++)
                    lo[u] = fmin(lo[u], fitp[u]), hi[u] = fmax(hi[u], fitp[u]);
        }
        for (int32_t i = 0; i < P && !st; i++)
            y[i] = zg_profile_stat_of(times + (int64_t)(c0 + i) * o->reps, o->reps, o->stat);
        if (!st && hybrid)
            st = zg_calib_fit_hybrid(&cal, y, base, &fixed, coef, fitp, &rmse, &max_rel, err);
        else if (!st)
            st = zg_calib_fit(&cal, y, &fixed, fitp, &rmse, &max_rel, err);
        if (st) goto out;
        out->overhead_s = fixed;  // >= 0 (constrained in the fit)
        if (hybrid)  // the single-sequence spread, corrected like the prices
            for (int32_t u = 0; u < U; u++) {
                double off = zg_config_is_whole(cal.unk_cfg[u]) ? coef[1] : coef[2];
                lo[u] = fmax(0, coef[0] * lo[u] + off), hi[u] = fmax(0, coef[0] * hi[u] + off);
            }
    }
    for (int32_t u = 0; u < legal && !st; u++) {
        int32_t b_i = use_cal ? cal.unk_bucket[u] : item_bucket[1 + u];
        zg_cost_table_entry e;
        memset(&e, 0, sizeof e);
        const zg_bucket *b = &cat->buckets[b_i];
        snprintf(e.bucket, sizeof e.bucket, "%s", b->name);
        e.tokens = b->tokens;
        e.text_tokens = text;
        e.config = use_cal ? cal.unk_cfg[u] : item_cfg[1 + u];
        e.time = fitp[u];
        e.time_lo = o->reps > 1 ? fmin(lo[u], hi[u]) : fitp[u];
        e.time_hi = o->reps > 1 ? fmax(lo[u], hi[u]) : fitp[u];
        e.reps = o->reps;
        e.peak = use_single ? peaks[1 + u] : 0;  // MIXED runs no single sequence
        st = zg_cost_table_push(out, &e, err);
    }
    if (st) goto out;
    for (int32_t i = 0; i < n; i++) obs[i] = rank0_obs(&items[i], peaks[i]);
    if ((st = zg_profile_fit_memory(obs, n, out, err))) goto out;
    out->extra = cJSON_CreateObject();
    if (out->extra) {
        cJSON_AddItemToObject(out->extra, "machine", zg_profile_machine_json(world));
        cJSON *s = cJSON_AddObjectToObject(out->extra, "settings");
        if (s) {
            settings_json(s, o, text, maxd, n - n_priced, cal.n_plans, empty_s, rmse, max_rel);
            if (hybrid) {
                cJSON_AddNumberToObject(s, "hybrid_scale", coef[0]);
                cJSON_AddNumberToObject(s, "hybrid_offset_whole_s", coef[1]);
                cJSON_AddNumberToObject(s, "hybrid_offset_split_s", coef[2]);
            }
        }
        cJSON_AddItemToObject(out->extra, "model_spec", zg_model_to_json(m));
    }
out:
    if (st) zg_cost_table_free(out);
    if (have_tr) zg_trainer_free(&tr);
    for (int32_t i = 0; items && i < n; i++)
        if (i < n_priced - cal.n_plans || i >= n_priced) item_free(&items[i]);  // views: cal's
    zg_calib_free(&cal);
    free(items), free(item_bucket), free(item_cfg), free(times), free(peaks), free(obs), free(cfgs);
    free(p), free(fitp), free(lo), free(hi), free(base), free(y);
    return st;
}
