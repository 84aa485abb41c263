// run.c — the profiler and fidelity runs behind `zellige profile` and `zellige fidelity`
// (profile.h): inputs loaded by name, options checked, the measurement, the files written.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"

void zg_profile_run_opts_default(zg_profile_run_opts *o) {
    *o = (zg_profile_run_opts){.model = "tiny", .catalog = "cpu", .warmup = 1, .reps = 6,
              .act_ckpt = 1, .seed = 1, .clock = "wall", .method = "hybrid", .stat = "median"};
    zg_calib_opts_default(&o->calib);
}

void zg_profile_run_result_free(zg_profile_run_result *r) {
    if (!r) return;
    zg_cost_table_free(&r->table);
    memset(r, 0, sizeof *r);
    zg_cost_table_init_empty(&r->table);
}

static zg_status check_profile_opts(const zg_profile_run_opts *o, zg_profile_run_result *r,
                                    zg_error *err) {
    const zg_calib_opts *c = &o->calib;
    zg_status st = zg_check_i64("--warmup", o->warmup, 0, 1000, err);
    if (!st) st = zg_check_i64("--reps", o->reps, 1, 1000, err);
    if (!st) st = zg_check_i64("--max-degree", o->max_degree, 0, INT32_MAX, err);
    if (!st) st = zg_check_i64("--text-tokens", o->text_tokens, 0, 1000000, err);
    if (!st) st = zg_check_i64("--calib-plans", c->plans, 0, 100000, err);
    if (!st) st = zg_check_i64("--calib-images", c->images, 0, 10000, err);
    if (!st) st = zg_check_i64("--calib-videos", c->videos, 0, 10000, err);
    if (!st) st = zg_check_i64("--calib-splits", c->splits, 0, 10000, err);
    if (!st) st = zg_check_i64("--calib-min-splits", c->min_splits, 0, 10000, err);
    if (!st) st = zg_check_f64("--calib-mirror", c->mirror, 0, 1, err);
    if (st) return st;
    st = zg_profile_clock_parse(o->clock, &r->clock, err);
    if (!st) st = zg_profile_method_parse(o->method, &r->method, err);
    if (!st) st = zg_profile_stat_parse(o->stat, &r->stat, err);
    return st;
}

zg_status zg_profile_run(const zg_profile_run_opts *o, zg_comm *comm, zg_profile_run_result *r,
                         zg_error *err) {
    memset(r, 0, sizeof *r);
    zg_cost_table_init_empty(&r->table);
    char cname[32];
    snprintf(cname, sizeof cname, "cpu:%d", comm->size);
    zg_catalog cat = {0};
    zg_status st = check_profile_opts(o, r, err);
    // The output is checked before the measurement (minutes), not found unwritable after it.
    if (!st && o->out && comm->rank == 0 && (st = zg_file_check_writable(o->out, err)))
        zg_error_prefix(err, "--out: ");
    if (!st) st = zg_model_load(o->model, &r->model, err);
    if (!st) st = zg_cluster_load(o->cluster ? o->cluster : cname, &r->cluster, err);
    if (!st) st = zg_profile_catalog_load(o->catalog ? o->catalog : "cpu", &r->model, &cat, err);
    zg_profile_opts po;
    zg_profile_opts_default(&po);
    po.warmup = o->warmup, po.reps = o->reps, po.max_degree = o->max_degree;
    po.text_tokens = o->text_tokens, po.act_ckpt = o->act_ckpt, po.seed = o->seed;
    po.clock = r->clock, po.method = r->method, po.stat = r->stat;
    po.calib = o->calib;
    po.calib.seed = o->seed;
    po.progress = o->progress, po.progress_ctx = o->progress_ctx;
    double t0 = zg_time_now();
    if (!st) st = zg_profile_measure(comm, &r->model, &r->cluster, &cat, &po, &r->table, err);
    if (!st && o->out && comm->rank == 0) st = zg_cost_table_write(o->out, &r->table, err);
    r->elapsed_s = zg_time_now() - t0;
    zg_catalog_free(&cat);
    return st;
}

// ---- fidelity -----------------------------------------------------------------------------------

void zg_fidelity_run_opts_default(zg_fidelity_run_opts *o) {
    *o = (zg_fidelity_run_opts){.catalog = "cpu", .warmup = 1, .reps = 7};
    zg_fidelity_opts_default(&o->design);
}

void zg_fidelity_run_result_free(zg_fidelity_run_result *r) {
    if (!r) return;
    zg_fidelity_free(r->plans, r->n);
    free(r->times);
    memset(r, 0, sizeof *r);
}

// The model (given, or the profile's model_spec) and the clock and statistic (given, or the
// profile's settings, else wall and median).
static zg_status fidelity_settings(const zg_fidelity_run_opts *o, const zg_cost_table *t,
                                   zg_fidelity_run_result *r, zg_error *err) {
    const zg_fidelity_opts *d = &o->design;
    zg_status st = zg_check_i64("--images", d->images, 0, 100000, err);
    if (!st) st = zg_check_i64("--min-mixed", d->min_mixed, 0, 10000, err);
    if (!st) st = zg_check_i64("--corners", d->corners, 0, 100, err);
    if (!st) st = zg_check_i64("--warmup", o->warmup, 0, 1000, err);
    if (!st) st = zg_check_i64("--reps", o->reps, 1, 1000, err);
    if (st) return st;
    const cJSON *spec = t->extra ? cJSON_GetObjectItemCaseSensitive(t->extra, "model_spec") : NULL;
    if (o->model)
        st = zg_model_load(o->model, &r->model, err);
    else if (spec)
        st = zg_model_from_json(spec, &r->model, err);
    else
        st = zg_error_set(err, ZG_ERR_INVALID, "%s has no model_spec; give --model", o->profile);
    const cJSON *set = t->extra ? cJSON_GetObjectItemCaseSensitive(t->extra, "settings") : NULL;
    const cJSON *pc = set ? cJSON_GetObjectItemCaseSensitive(set, "clock") : NULL;
    const cJSON *ps = set ? cJSON_GetObjectItemCaseSensitive(set, "stat") : NULL;
    r->clock = ZG_PROFILE_CLOCK_WALL, r->stat = ZG_PROFILE_STAT_MEDIAN;
    if (!st && (o->clock || cJSON_IsString(pc)))
        st = zg_profile_clock_parse(o->clock ? o->clock : pc->valuestring, &r->clock, err);
    if (!st && (o->stat || cJSON_IsString(ps)))
        st = zg_profile_stat_parse(o->stat ? o->stat : ps->valuestring, &r->stat, err);
    return st;
}

// The measured summary of every plan from its rounds.
static void fidelity_measured(zg_fidelity_run_result *r, const double *peaks) {
    for (int32_t i = 0; i < r->n; i++) {
        zg_fidelity_plan *p = &r->plans[i];
        const double *t = r->times + (int64_t)i * r->reps;
        p->meas_time = zg_profile_stat_of(t, r->reps, r->stat);
        p->meas_lo = INFINITY, p->meas_hi = 0;
        for (int32_t k = 0; k < r->reps; k++) {
            p->meas_lo = fmin(p->meas_lo, t[k]);
            p->meas_hi = fmax(p->meas_hi, t[k]);
        }
        p->meas_mem = peaks[i];
    }
    zg_fidelity_summarize(r->plans, r->n, r->overhead_s, &r->sum);
    r->repeat_pct = zg_fidelity_repeat_pct(r->times, r->n, r->reps, r->stat);
}

// Builds the design and runs its rounds (collective).
static zg_status fidelity_measure(const zg_fidelity_run_opts *o, zg_comm *comm,
                                  const zg_cost_table *t, zg_fidelity_run_result *r,
                                  zg_error *err) {
    char cname[32];
    snprintf(cname, sizeof cname, "cpu:%d", comm->size);
    zg_cluster cl;
    zg_catalog cat = {0};
    zg_pricer pr = {0};
    zg_trainer tr;
    int have_tr = 0;
    double *peaks = NULL;
    zg_profile_item *items = NULL;
    zg_status st = zg_cluster_load(o->cluster ? o->cluster : cname, &cl, err);
    if (!st && cl.world_size != comm->size)
        st = zg_error_set(err, ZG_ERR_INVALID, "cluster %s has %d ranks but the run has %d",
                          cl.name, cl.world_size, comm->size);
    if (!st && strcmp(t->model, r->model.name))
        st = zg_error_set(err, ZG_ERR_INVALID, "%s was measured for model '%s', not '%s'",
                          o->profile, t->model, r->model.name);
    if (!st) st = zg_profile_catalog_load(o->catalog ? o->catalog : "cpu", &r->model, &cat, err);
    if (!st) st = zg_cost_table_init(&pr, t, &r->model, &cl, err);
    if (!st)
        st = zg_fidelity_design(&r->model, &cl, &cat, &pr, t->overhead_s, &o->design, &r->plans,
                                &r->n, err);
    if (!st) {
        r->times = zg_calloc((size_t)r->n * (size_t)r->reps, sizeof *r->times, err);
        peaks = zg_calloc((size_t)r->n, sizeof *peaks, err);
        items = zg_calloc((size_t)r->n, sizeof *items, err);
        if (!r->times || !peaks || !items) st = ZG_ERR_NOMEM;
    }
    for (int32_t i = 0; !st && i < r->n; i++)
        items[i] = r->plans[i].item; // shallow views
    zg_train_opts to;
    zg_train_opts_default(&to);
    to.adam.lr = 0;
    const cJSON *set = t->extra ? cJSON_GetObjectItemCaseSensitive(t->extra, "settings") : NULL;
    const cJSON *ck = set ? cJSON_GetObjectItemCaseSensitive(set, "act_ckpt") : NULL;
    if (cJSON_IsNumber(ck)) to.act_ckpt = ck->valueint;
    if (!st && !(st = zg_trainer_init(&tr, &r->model, comm, &to, err))) have_tr = 1;
    double t0 = zg_time_now();
    if (!st && o->warmup == 0) st = zg_profile_prime(&tr, items, r->n, NULL, err);
    if (!st)
        st = zg_profile_run_rounds(&tr, items, r->n, o->warmup, r->reps, r->clock, r->times, peaks,
                                   o->progress, o->progress_ctx, err);
    r->elapsed_s = zg_time_now() - t0;
    if (!st) fidelity_measured(r, peaks);
    if (have_tr) zg_trainer_free(&tr);
    free(items), free(peaks);
    zg_pricer_free(&pr);
    zg_catalog_free(&cat);
    return st;
}

zg_status zg_fidelity_run(const zg_fidelity_run_opts *o, zg_comm *comm, zg_fidelity_run_result *r,
                          zg_error *err) {
    memset(r, 0, sizeof *r);
    r->world_size = comm->size;
    r->reps = o->reps;
    if (!o->profile) return zg_error_set(err, ZG_ERR_INVALID, "--profile FILE is required");
    // The output is checked before the measurement (minutes), not found unwritable after it.
    if (o->out && comm->rank == 0 && zg_file_check_writable(o->out, err))
        return zg_error_prefix(err, "--out: ");
    zg_cost_table t;
    zg_status st = zg_cost_table_load(o->profile, &t, err);
    if (st) return st;
    r->overhead_s = t.overhead_s;
    st = fidelity_settings(o, &t, r, err);
    if (!st) st = fidelity_measure(o, comm, &t, r, err);
    if (!st && o->out && comm->rank == 0) {
        cJSON *full = zg_fidelity_run_json(r, 1);
        st = full ? zg_json_write_file(o->out, full, 1, err)
                  : zg_error_set(err, ZG_ERR_NOMEM, "out of memory");
        cJSON_Delete(full);
    }
    zg_cost_table_free(&t);
    return st;
}

cJSON *zg_fidelity_run_json(const zg_fidelity_run_result *r, int per_plan) {
    cJSON *res = cJSON_CreateObject();
    if (!res) return NULL;
    const zg_fidelity_summary *s = &r->sum;
    cJSON_AddNumberToObject(res, "plans", r->n);
    cJSON_AddNumberToObject(res, "mape_time_pct", s->mape_time);
    cJSON_AddNumberToObject(res, "mape_mem_pct", s->mape_mem);
    cJSON_AddNumberToObject(res, "mae_time_s", s->mae_time);
    cJSON_AddNumberToObject(res, "mae_mem_bytes", s->mae_mem);
    cJSON_AddNumberToObject(res, "max_ape_time_pct", s->max_ape_time);
    cJSON_AddNumberToObject(res, "max_ape_mem_pct", s->max_ape_mem);
    cJSON_AddNumberToObject(res, "mape_time_net_pct", s->mape_time_net);
    cJSON_AddNumberToObject(res, "repeat_time_pct", r->repeat_pct);
    cJSON_AddNumberToObject(res, "overhead_s", r->overhead_s);
    cJSON_AddStringToObject(res, "clock", zg_profile_clock_name(r->clock));
    cJSON_AddStringToObject(res, "stat", zg_profile_stat_name(r->stat));
    cJSON_AddNumberToObject(res, "world_size", r->world_size);
    cJSON_AddNumberToObject(res, "reps", (double)r->reps);
    cJSON_AddStringToObject(res, "model", r->model.name);
    cJSON *arr = per_plan ? cJSON_AddArrayToObject(res, "per_plan") : NULL;
    for (int32_t i = 0; i < r->n && arr; i++) {
        const zg_fidelity_plan *p = &r->plans[i];
        zg_plan_stats ps;
        zg_plan_evaluate((zg_plan *)&p->item.plan, NULL, NULL, &ps, NULL); // no pricer: reads only
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", p->name);
        cJSON_AddNumberToObject(o, "sequences", (double)p->item.batch.n);
        cJSON_AddNumberToObject(o, "split", (double)ps.n_split);
        cJSON_AddNumberToObject(o, "pred_s", p->pred_time);
        cJSON_AddNumberToObject(o, "meas_s", p->meas_time);
        cJSON_AddNumberToObject(o, "meas_lo_s", p->meas_lo);
        cJSON_AddNumberToObject(o, "meas_hi_s", p->meas_hi);
        cJSON *rr = cJSON_AddArrayToObject(o, "meas_rounds_s");
        for (int32_t k = 0; rr && k < r->reps; k++)
            cJSON_AddItemToArray(rr, cJSON_CreateNumber(r->times[(int64_t)i * r->reps + k]));
        cJSON_AddNumberToObject(o, "pred_mem", p->pred_mem);
        cJSON_AddNumberToObject(o, "meas_mem", p->meas_mem);
        cJSON_AddItemToObject(o, "plan", zg_plan_to_json(&p->item.plan));
        cJSON_AddItemToArray(arr, o);
    }
    return res;
}
