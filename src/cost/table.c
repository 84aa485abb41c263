// table.c — the measured price table (the profiler's output) and its pricer. Format and method
// in docs/profiler.md; the interpolation rule is at zg_cost_table_time in cost.h.
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost/cost.h"

void zg_cost_table_init_empty(zg_cost_table *t) {
    memset(t, 0, sizeof *t);
    t->version = 1;
}

void zg_cost_table_free(zg_cost_table *t) {
    if (!t) return;
    free(t->e);
    cJSON_Delete(t->extra);
    zg_cost_table_init_empty(t);
}

zg_status zg_cost_table_push(zg_cost_table *t, const zg_cost_table_entry *e, zg_error *err) {
    zg_cost_table_entry *ne = zg_realloc_array(t->e, (size_t)t->n + 1, sizeof *ne, err);
    if (!ne) return ZG_ERR_NOMEM;
    t->e = ne;
    t->e[t->n++] = *e;
    return ZG_OK;
}

int32_t zg_cost_table_unpriced(const zg_cost_table *t, char *note, size_t bufsz) {
    int32_t n = 0, first = -1;
    for (int32_t i = 0; i < t->n; i++)
        if (!(t->e[i].time > 0)) {
            if (first < 0) first = i;
            n++;
        }
    if (n && note && bufsz) {
        char cb[32];
        const zg_cost_table_entry *e = &t->e[first];
        snprintf(note, bufsz,
                 "%d of %d (bucket, config) pairs are priced 0 s (first: %s, %lld tokens, config "
                 "%s); a planner sees those sequences as free and may pile them on one rank. "
                 "Profile with more rounds (--reps, --warmup) on a quiet machine, or with --method "
                 "single (docs/profiler.md)",
                 n, t->n, e->bucket[0] ? e->bucket : "-", (long long)e->tokens,
                 zg_config_name(e->config, cb, sizeof cb));
    }
    return n;
}

// ---- JSON ----------------------------------------------------------------------------------------

static const char *const known_keys[] = {"version", "model", "cluster", "world_size",
                                         "overhead_s", "memory", "prices", NULL};

// The "memory" object's coefficients: key, field of zg_cost_table, required when reading.
static const struct mem_key {
    const char *key;
    size_t offset;
    int required;
} mem_keys[] = {
    {"base_bytes", offsetof(zg_cost_table, mem_base), 1},
    {"per_token_bytes", offsetof(zg_cost_table, mem_per_token), 1},
    {"per_text_row_bytes", offsetof(zg_cost_table, mem_per_text), 0},
    {"per_sample_bytes", offsetof(zg_cost_table, mem_per_sample), 0},
    {"fit_max_rel_err", offsetof(zg_cost_table, mem_fit_max_err), 0},
};
#define N_MEM_KEYS (sizeof mem_keys / sizeof *mem_keys)

cJSON *zg_cost_table_to_json(const zg_cost_table *t) {
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    cJSON_AddNumberToObject(j, "version", t->version);
    cJSON_AddStringToObject(j, "model", t->model);
    cJSON_AddStringToObject(j, "cluster", t->cluster);
    cJSON_AddNumberToObject(j, "world_size", t->world_size);
    cJSON_AddNumberToObject(j, "overhead_s", t->overhead_s);
    cJSON *m = cJSON_AddObjectToObject(j, "memory");
    for (size_t i = 0; m && i < N_MEM_KEYS; i++)
        cJSON_AddNumberToObject(m, mem_keys[i].key,
                                *(const double *)((const char *)t + mem_keys[i].offset));
    cJSON *arr = cJSON_AddArrayToObject(j, "prices");
    for (int32_t i = 0; arr && i < t->n; i++) {
        const zg_cost_table_entry *e = &t->e[i];
        cJSON *o = cJSON_CreateObject();
        if (!o) break;
        cJSON_AddStringToObject(o, "bucket", e->bucket);
        cJSON_AddNumberToObject(o, "tokens", (double)e->tokens);
        cJSON_AddNumberToObject(o, "text_tokens", e->text_tokens);
        cJSON_AddNumberToObject(o, "q", e->config.q);
        cJSON_AddNumberToObject(o, "h", e->config.h);
        cJSON_AddNumberToObject(o, "k", e->config.k);
        cJSON_AddNumberToObject(o, "time_s", e->time);
        cJSON_AddNumberToObject(o, "time_lo_s", e->time_lo);
        cJSON_AddNumberToObject(o, "time_hi_s", e->time_hi);
        cJSON_AddNumberToObject(o, "reps", e->reps);
        cJSON_AddNumberToObject(o, "peak_bytes", e->peak);
        cJSON_AddItemToArray(arr, o);
    }
    for (const cJSON *x = t->extra ? t->extra->child : NULL; x; x = x->next)
        cJSON_AddItemToObject(j, x->string, cJSON_Duplicate(x, 1));
    return j;
}

static int finite_nonneg(double x) { return isfinite(x) && x >= 0; }

static zg_status entry_from_json(const cJSON *o, int32_t i, zg_cost_table_entry *e,
                                 zg_error *err) {
    char ctx[48];
    snprintf(ctx, sizeof ctx, "prices[%d]", i);
    memset(e, 0, sizeof *e);
    int64_t tok = 0, tt = 0, q = 0, h = 0, k = 0, reps = 0;
    zg_status st;
    if ((st = zg_json_get_str(o, "bucket", 0, e->bucket, sizeof e->bucket, ctx, err)) ||
        (st = zg_json_get_int(o, "tokens", 1, &tok, ctx, err)) ||
        (st = zg_json_get_int(o, "text_tokens", 0, &tt, ctx, err)) ||
        (st = zg_json_get_int(o, "q", 1, &q, ctx, err)) ||
        (st = zg_json_get_int(o, "h", 1, &h, ctx, err)) ||
        (st = zg_json_get_int(o, "k", 1, &k, ctx, err)) ||
        (st = zg_json_get_num(o, "time_s", 1, &e->time, ctx, err)) ||
        (st = zg_json_get_num(o, "time_lo_s", 0, &e->time_lo, ctx, err)) ||
        (st = zg_json_get_num(o, "time_hi_s", 0, &e->time_hi, ctx, err)) ||
        (st = zg_json_get_int(o, "reps", 0, &reps, ctx, err)) ||
        (st = zg_json_get_num(o, "peak_bytes", 0, &e->peak, ctx, err)))
        return st;
    if (tok < 1 || tok > ZG_SEQ_MAX_TOKENS || q < 1 || h < 1 || k < 1 || q * h * k > 65536 ||
        tt < 0 || tt > INT32_MAX || !finite_nonneg(e->time) || !isfinite(e->time_lo) ||
        !isfinite(e->time_hi) || reps < 0 || reps > INT32_MAX || !isfinite(e->peak))
        return zg_error_set(err, ZG_ERR_INVALID,
                            "%s: tokens %lld, config (%lld,%lld,%lld), time %g s: need tokens "
                            ">= 1, q, h, k >= 1 and a finite time >= 0",
                            ctx, (long long)tok, (long long)q, (long long)h, (long long)k,
                            e->time);
    if (q * h * k > tok)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "%s: %lld tokens cannot be split over degree %lld", ctx,
                            (long long)tok, (long long)(q * h * k));
    e->tokens = tok;
    e->text_tokens = (int32_t)tt;
    e->config = (zg_config){(int32_t)q, (int32_t)h, (int32_t)k};
    e->reps = (int32_t)reps;
    return ZG_OK;
}

zg_status zg_cost_table_from_json(const cJSON *j, zg_cost_table *t, zg_error *err) {
    zg_cost_table_init_empty(t);
    if (!cJSON_IsObject(j)) return zg_error_set(err, ZG_ERR_PARSE, "profile: expected an object");
    int64_t ver = 1, ws = 0;
    zg_status st;
    if ((st = zg_json_get_int(j, "version", 0, &ver, "profile", err)) ||
        (st = zg_json_get_str(j, "model", 1, t->model, sizeof t->model, "profile", err)) ||
        (st = zg_json_get_str(j, "cluster", 0, t->cluster, sizeof t->cluster, "profile", err)) ||
        (st = zg_json_get_int(j, "world_size", 0, &ws, "profile", err)) ||
        (st = zg_json_get_num(j, "overhead_s", 0, &t->overhead_s, "profile", err)))
        return st;
    if (ver != 1)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "profile: version %lld is not supported (this build reads 1)",
                            (long long)ver);
    if (ws < 0 || ws > 65536 || !finite_nonneg(t->overhead_s))
        return zg_error_set(err, ZG_ERR_INVALID,
                            "profile: world_size %lld / overhead_s %g out of range", (long long)ws,
                            t->overhead_s);
    t->world_size = (int32_t)ws;
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "memory");
    if (!cJSON_IsObject(m))
        return zg_error_set(err, ZG_ERR_INVALID,
                            "profile: missing \"memory\" object (the calibrated memory model)");
    for (size_t i = 0; i < N_MEM_KEYS; i++)
        if ((st = zg_json_get_num(m, mem_keys[i].key, mem_keys[i].required,
                                  (double *)((char *)t + mem_keys[i].offset), "profile memory",
                                  err)))
            return st;
    if (!isfinite(t->mem_base) || !isfinite(t->mem_per_token) || !isfinite(t->mem_per_text) ||
        !isfinite(t->mem_per_sample))
        return zg_error_set(err, ZG_ERR_INVALID, "profile: memory coefficients must be finite");
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, "prices");
    if (!cJSON_IsArray(arr))
        return zg_error_set(err, ZG_ERR_INVALID, "profile: missing \"prices\" array");
    int32_t i = 0;
    for (const cJSON *o = arr->child; o; o = o->next, i++) {
        zg_cost_table_entry e;
        if ((st = entry_from_json(o, i, &e, err)) || (st = zg_cost_table_push(t, &e, err))) {
            zg_cost_table_free(t);
            return st;
        }
    }
    t->extra = cJSON_CreateObject();
    for (const cJSON *x = j->child; x && t->extra; x = x->next) {
        int known = 0;
        for (int k = 0; known_keys[k]; k++) known |= x->string && !strcmp(x->string, known_keys[k]);
        if (!known && x->string) cJSON_AddItemToObject(t->extra, x->string, cJSON_Duplicate(x, 1));
    }
    return ZG_OK;
}

static zg_status load_table(const char *path, const cJSON *j, void *t, zg_error *err) {
    return zg_cost_table_from_json(j, t, err);
}

zg_status zg_cost_table_load(const char *path, zg_cost_table *t, zg_error *err) {
    zg_cost_table_init_empty(t);
    return zg_json_load_file(path, load_table, t, err);
}

zg_status zg_cost_table_write(const char *path, const zg_cost_table *t, zg_error *err) {
    cJSON *j = zg_cost_table_to_json(t);
    if (!j) return zg_error_set(err, ZG_ERR_NOMEM, "profile: out of memory building JSON");
    zg_status st = zg_json_write_file(path, j, 1, err);
    cJSON_Delete(j);
    return st;
}

// ---- lookups -------------------------------------------------------------------------------------

static int32_t text_rows(const zg_model *m, const zg_seq *s) {
    int32_t n = s->text_tokens > 0 ? s->text_tokens : (m ? m->text_len : 0);
    return n > 0 ? n : 1;
}

double zg_cost_table_mem(const zg_cost_table *t, const zg_model *m, const zg_seq *s,
                         zg_config c) {
    int64_t d = zg_config_degree(c);
    int64_t chunk = d > 0 ? (s->tokens + d - 1) / d : s->tokens;
    double v = t->mem_per_token * (double)chunk + t->mem_per_text * text_rows(m, s) +
               t->mem_per_sample;
    return v > 0 ? v : 0;
}

zg_status zg_cost_table_time(const zg_cost_table *t, const zg_seq *s, zg_config c, double *time,
                             zg_error *err) {
    // exact bucket first
    int32_t n_c = 0;
    for (int32_t i = 0; i < t->n; i++) {
        const zg_cost_table_entry *e = &t->e[i];
        if (!zg_config_eq(e->config, c)) continue;
        n_c++;
        if (s->bucket[0] && !strcmp(e->bucket, s->bucket) && e->tokens == s->tokens) {
            *time = e->time;
            return ZG_OK;
        }
    }
    if (n_c == 0) {
        char nb[48], list[256] = "";
        size_t at = 0;
        for (int32_t i = 0; i < t->n && at < sizeof list - 24; i++) {
            int seen = 0;
            for (int32_t k = 0; k < i; k++) seen |= zg_config_eq(t->e[k].config, t->e[i].config);
            if (seen) continue;
            char cb[48];
            at += (size_t)snprintf(list + at, sizeof list - at, "%s%s", at ? " " : "",
                                   zg_config_name(t->e[i].config, cb, sizeof cb));
        }
        return zg_error_set(err, ZG_ERR_UNSUPPORTED,
                            "profile of model '%s' on %s has no price for config %s (measured: "
                            "%s); re-run `zellige profile` on enough ranks for degree %d, or "
                            "plan with --max-degree at most the measured degrees",
                            t->model, t->cluster[0] ? t->cluster : "?",
                            zg_config_name(c, nb, sizeof nb), list[0] ? list : "none",
                            zg_config_degree(c));
    }
    // the nearest measured token counts below (lo) and above (hi); equal counts averaged
    int64_t lo_t = -1, hi_t = -1, lo2_t = -1, hi2_t = -1;
    for (int32_t i = 0; i < t->n; i++) {
        const zg_cost_table_entry *e = &t->e[i];
        if (!zg_config_eq(e->config, c)) continue;
        if (e->tokens <= s->tokens && e->tokens > lo_t) lo_t = e->tokens;
        if (e->tokens >= s->tokens && (hi_t < 0 || e->tokens < hi_t)) hi_t = e->tokens;
    }
    // second points for extrapolation: next below lo / next above hi
    for (int32_t i = 0; i < t->n; i++) {
        const zg_cost_table_entry *e = &t->e[i];
        if (!zg_config_eq(e->config, c)) continue;
        if (hi_t >= 0 && lo_t < 0 && e->tokens > hi_t && (hi2_t < 0 || e->tokens < hi2_t))
            hi2_t = e->tokens;
        if (lo_t >= 0 && hi_t < 0 && e->tokens < lo_t && e->tokens > lo2_t) lo2_t = e->tokens;
    }
    double sum[4] = {0}, cnt[4] = {0};
    int64_t pts[4] = {lo_t, hi_t, lo2_t, hi2_t};
    for (int32_t i = 0; i < t->n; i++) {
        const zg_cost_table_entry *e = &t->e[i];
        if (!zg_config_eq(e->config, c)) continue;
        for (int k = 0; k < 4; k++)
            if (pts[k] >= 0 && e->tokens == pts[k]) sum[k] += e->time, cnt[k] += 1;
    }
    double v[4];
    for (int k = 0; k < 4; k++) v[k] = cnt[k] > 0 ? sum[k] / cnt[k] : 0;
    double L = (double)s->tokens, r;
    int64_t a_t, b_t;
    double a_v, b_v;
    if (lo_t >= 0 && hi_t >= 0) {
        if (lo_t == hi_t) {
            *time = v[0];
            return ZG_OK;
        }
        a_t = lo_t, a_v = v[0], b_t = hi_t, b_v = v[1];
    } else if (hi_t >= 0) {  // below the smallest measured count
        if (hi2_t < 0) {
            *time = v[1] * L / (double)hi_t;
            return ZG_OK;
        }
        a_t = hi_t, a_v = v[1], b_t = hi2_t, b_v = v[3];
    } else {  // above the largest
        if (lo2_t < 0) {
            *time = v[0] * L / (double)lo_t;
            return ZG_OK;
        }
        a_t = lo2_t, a_v = v[2], b_t = lo_t, b_v = v[0];
    }
    r = a_v + (b_v - a_v) * (L - (double)a_t) / (double)(b_t - a_t);
    // floor: proportional scaling from the smallest of the two points (never negative)
    int64_t small_t = a_t < b_t ? a_t : b_t;
    double small_v = a_t < b_t ? a_v : b_v;
    double floor_v = small_v * L / (double)small_t;
    if (L < (double)small_t && r < floor_v) r = floor_v;
    *time = r > 0 ? r : 0;
    return ZG_OK;
}

// ---- pricer --------------------------------------------------------------------------------------

typedef struct table_impl {
    zg_cost_table t;
    zg_model m;
    zg_pricer analytic;  // communication volumes only
} table_impl;

// Measured prices do not depend on which ranks: the list and block entries share this.
static zg_status table_price_n(const zg_pricer *p, const zg_seq *s, zg_config c, int32_t n,
                               zg_price *out, zg_error *err) {
    const table_impl *ti = p->impl;
    zg_status st = zg_config_check_priced(&ti->m, INT32_MAX, c, s->tokens, err);
    if (st) return st;
    if (n != zg_config_degree(c))
        return zg_error_set(err, ZG_ERR_INVALID, "table pricer: %d ranks for degree %d", n,
                            zg_config_degree(c));
    if ((st = zg_cost_table_time(&ti->t, s, c, &out->time, err))) return st;
    // Floor: no split runs faster per rank than perfect scaling of the whole sequence. A fitted
    // (hybrid/mixed) profile can clamp tiny split prices to 0; a planner must not see them free.
    int32_t deg = zg_config_degree(c);
    double whole;
    if (deg > 1 && zg_cost_table_time(&ti->t, s, (zg_config){1, 1, 1}, &whole, NULL) == ZG_OK &&
        out->time < whole / deg)
        out->time = whole / deg;
    out->mem = zg_cost_table_mem(&ti->t, &ti->m, s, c);
    return ZG_OK;
}

static zg_status table_price(const zg_pricer *p, const zg_seq *s, zg_config c,
                             const int32_t *ranks, int32_t n, zg_price *out, zg_error *err) {
    return table_price_n(p, s, c, n, out, err);
}

static zg_status table_price_block(const zg_pricer *p, const zg_seq *s, zg_config c,
                                   int32_t start, int32_t n, zg_price *out, zg_error *err) {
    return table_price_n(p, s, c, n, out, err);
}

static zg_comm_bytes table_comm(const zg_pricer *p, const zg_seq *s, zg_config c) {
    const table_impl *ti = p->impl;
    zg_comm_bytes z = {0, 0, 0};
    if (!ti->analytic.comm) return z;
    return ti->analytic.comm(&ti->analytic, s, c);
}

static void table_free(zg_pricer *p) {
    table_impl *ti = p->impl;
    if (!ti) return;
    zg_cost_table_free(&ti->t);
    zg_pricer_free(&ti->analytic);
    free(ti);
    p->impl = NULL;
}

zg_status zg_cost_table_init(zg_pricer *p, const zg_cost_table *t, const zg_model *m,
                             const zg_cluster *c, zg_error *err) {
    memset(p, 0, sizeof *p);
    if (t->n == 0)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "profile of model '%s' holds no prices; run `zellige profile`",
                            t->model);
    table_impl *ti = zg_calloc(1, sizeof *ti, err);
    if (!ti) return ZG_ERR_NOMEM;
    ti->m = *m;
    zg_cost_table_init_empty(&ti->t);
    ti->t = *t;
    ti->t.extra = NULL;
    ti->t.e = zg_calloc((size_t)t->n, sizeof *t->e, err);
    if (!ti->t.e) {
        free(ti);
        return ZG_ERR_NOMEM;
    }
    memcpy(ti->t.e, t->e, sizeof *t->e * (size_t)t->n);
    zg_cost_opts o;
    zg_cost_opts_default(&o);
    o.act_bytes = 4;  // the C engine runs fp32
    zg_status st = zg_cost_analytic_init(&ti->analytic, m, c, &o, err);
    if (st) {
        zg_cost_table_free(&ti->t);
        free(ti);
        return st;
    }
    p->kind = "table";
    p->impl = ti;
    p->price = table_price;
    p->price_block = table_price_block;
    p->block_for = table_price;
    p->comm = table_comm;
    p->free_impl = table_free;
    p->mem_base = t->mem_base;
    p->mem_cap = zg_cluster_mem_cap_bytes(c);
    return ZG_OK;
}

zg_status zg_cost_table_pricer_load(zg_pricer *p, const char *path, const zg_model *m,
                                    const zg_cluster *c, zg_error *err) {
    memset(p, 0, sizeof *p);
    zg_cost_table t;
    zg_status st = zg_cost_table_load(path, &t, err);
    if (st) return st;
    if (strcmp(t.model, m->name) != 0) {
        st = zg_error_set(err, ZG_ERR_INVALID,
                          "%s was measured for model '%s', not '%s'; profile this model first",
                          path, t.model, m->name);
    } else {
        st = zg_cost_table_init(p, &t, m, c, err);
        if (st) zg_error_prefix(err, "%s: ", path);
    }
    zg_cost_table_free(&t);
    return st;
}
