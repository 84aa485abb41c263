// _capi.c — the flat C entry points the Python package calls through ctypes.
//
// A thin shim over the library (src/planner, src/plan, src/cost, src/workload, and the
// engine's schedule export src/engine/sched.c for zellige.torch): it turns strings,
// flat arrays and one options JSON object into the structs `zellige plan` builds
// (tools/zellige/cmd_plan.c), calls zg_planner_plan, and hands the plan back as flat arrays (and
// as the library's plan JSON on request). No planning logic lives here. Every function returns a
// zg_status (0 = ok) and writes a one-line message into err[errsz] on failure; nothing here
// exits or aborts. Only the zgpy_* symbols are exported from the shared library.
//
// Thread safety: a planner handle plans one batch at a time (the Python Planner holds a lock);
// results, batches and strings are independent objects and may be used from any thread.
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine.h"
#include "planner/planner.h"

#define ZGPY_API __attribute__((visibility("default")))
// Bumped when a signature or struct below changes; the Python loader checks it.
#define ZGPY_ABI 3

// ---------------------------------------------------------------------------------------------
// Types shared with python/zellige/_lib.py (keep the field order in step).

// One batch as columns of n entries. tokens is required; every other pointer may be NULL
// ("unknown": ids 0..n-1, origin -1, kind other, zeros, no bucket). buckets: n NUL-terminated
// names one after another.
typedef struct zgpy_batch_in {
    int64_t n;
    const int64_t *tokens;
    const int64_t *ids;
    const int32_t *origin;
    const int32_t *kind; // zg_seq_kind: 0 other, 1 image, 2 video
    const int32_t *frames, *height, *width, *text_tokens;
    const char *buckets;
} zgpy_batch_in;

// A plan as flat arrays (owned by the result; valid until zgpy_result_free).
typedef struct zgpy_plan_view {
    int32_t world_size;
    int32_t optimal;
    int64_t n;        // sequences, in batch order
    int64_t n_shards; // sum of degrees
    double makespan, plan_time_ms, lower_bound, mem_base, mem_cap;
    const char *policy, *fallback_from, *summary;
    const int64_t *seq_id, *seq_tokens;     // [n]
    const int32_t *config;                  // [n][3]: q, h, k
    const int64_t *offset;                  // [n + 1]: sequence i's shards are offset[i]..
    const int32_t *shard_rank;              // [n_shards], position order (= the rank list)
    const int64_t *shard_start, *shard_end; // [n_shards], half-open token ranges
    const double *seq_time, *seq_mem;       // [n]: per participating rank
    const double *rank_time, *rank_mem;     // [world_size]
    const int64_t *rank_tokens;             // [world_size]
    const int32_t *seq_round;               // [n]: microbatch round (0 unless megatron)
    int32_t n_rounds;                       // 1 + the largest round (0 for an empty plan)
    int32_t n_over_cap;                     // marked over-cap plan: ranks over mem_cap; else 0
    const int32_t *over_cap_ranks;          // [n_over_cap], ascending
    const char *over_cap_note;              // zg_plan_over_cap_describe's line ("" if none)
    const void *block; // every array above lies in [block, block + block_bytes)
    int64_t block_bytes;
} zgpy_plan_view;

typedef struct zgpy_planner {
    zg_model model;
    zg_cluster cluster;
    zg_pricer pricer;
    zg_catalog catalog;
    int have_catalog;    // catalog holds the model's default catalog
    int catalog_mode;    // 0 auto (cmd_plan without --catalog), 1 default, 2 none
    int32_t batch_world; // world size a batch is checked against
    int32_t unpriced;    // the profile's pairs priced 0 s (zg_cost_table_unpriced)
    char unpriced_note[512];
    zg_planner planner;
} zgpy_planner;

typedef struct zgpy_result {
    zg_plan plan;
    zgpy_plan_view view;
    void *block; // one allocation for every flat array
    char over_cap_note[256];
} zgpy_result;

// ---------------------------------------------------------------------------------------------
// Helpers.

static int fail(char *err, size_t errsz, const zg_error *e) {
    if (err && errsz) snprintf(err, errsz, "%s", e->msg[0] ? e->msg : zg_status_name(e->status));
    return e->status ? (int)e->status : (int)ZG_ERR_INTERNAL;
}

static int starts_json(const char *s) {
    while (*s && isspace((unsigned char)*s))
        s++;
    return *s == '{';
}

// A model or cluster from a preset name, a JSON file path or JSON text (an object): by_name
// takes the name or path, by_json the parsed object; `what` names it in messages.
typedef zg_status (*by_name_fn)(const char *spec, void *out, zg_error *err);
typedef zg_status (*by_json_fn)(const cJSON *j, void *out, zg_error *err);
static zg_status load_spec(const char *spec, const char *what, by_name_fn by_name,
                           by_json_fn by_json, void *out, zg_error *err) {
    if (!spec || !*spec)
        return zg_error_set(err, ZG_ERR_INVALID, "%s: give a preset name, a JSON file or a dict",
                            what);
    if (!starts_json(spec)) return by_name(spec, out, err);
    cJSON *j = NULL;
    zg_status st = zg_json_parse(spec, what, &j, err);
    if (!st) st = by_json(j, out, err);
    cJSON_Delete(j);
    return st ? zg_error_prefix(err, "%s: ", what) : ZG_OK;
}

static zg_status model_by_name(const char *s, void *m, zg_error *e) { return zg_model_load(s, m, e); }
static zg_status model_by_json(const cJSON *j, void *m, zg_error *e) {
    return zg_model_from_json(j, m, e);
}
static zg_status cluster_by_name(const char *s, void *c, zg_error *e) {
    return zg_cluster_load(s, c, e);
}
static zg_status cluster_by_json(const cJSON *j, void *c, zg_error *e) {
    return zg_cluster_from_json(j, c, e);
}
static zg_status load_model(const char *spec, zg_model *m, zg_error *err) {
    return load_spec(spec, "model", model_by_name, model_by_json, m, err);
}
static zg_status load_cluster(const char *spec, zg_cluster *c, zg_error *err) {
    return load_spec(spec, "cluster", cluster_by_name, cluster_by_json, c, err);
}

// An integer option: a JSON number that is a whole number in [lo, hi].
static zg_status opt_int(const cJSON *v, const char *key, int64_t lo, int64_t hi, int64_t *out,
                         zg_error *err) {
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!(d >= (double)lo && d <= (double)hi) || d != floor(d))
        return zg_error_set(err, ZG_ERR_INVALID, "option %s: expected a whole number in %lld..%lld",
                            key, (long long)lo, (long long)hi);
    *out = (int64_t)d;
    return ZG_OK;
}

static zg_status opt_num(const cJSON *v, const char *key, double lo, int open_lo, double *out,
                         zg_error *err) {
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!isfinite(d) || d < lo || (open_lo && d == lo))
        return zg_error_set(err, ZG_ERR_INVALID, "option %s: expected a finite number %s %g", key,
                            open_lo ? ">" : ">=", lo);
    *out = d;
    return ZG_OK;
}

static zg_status opt_str(const cJSON *v, const char *key, char *dst, size_t sz, zg_error *err) {
    if (!cJSON_IsString(v))
        return zg_error_set(err, ZG_ERR_INVALID, "option %s: expected a string", key);
    if (strlen(v->valuestring) >= sz)
        return zg_error_set(err, ZG_ERR_INVALID, "option %s: '%s' is too long (max %zu chars)", key,
                            v->valuestring, sz - 1);
    snprintf(dst, sz, "%s", v->valuestring);
    return ZG_OK;
}

static zg_status opt_bool(const cJSON *v, const char *key, int32_t *out, zg_error *err) {
    if (!cJSON_IsBool(v))
        return zg_error_set(err, ZG_ERR_INVALID, "option %s: expected true or false", key);
    *out = cJSON_IsTrue(v) ? 1 : 0;
    return ZG_OK;
}

static const char *const option_names =
    "family, max_degree, fallback, eps, time_limit, anchor_cut, anchor_nodes, lns_nodes, "
    "first_nodes, catalog, seed, exact_rank_prices, remember_layouts, bags, gamma, d_model, "
    "world_size, max_seqlen_per_rank, device_row";

// The options of `zellige plan` (same names with '_' for '-', same checks) into ctx->opts.
// device_row (4096 bytes) gets the option device_row: a measured device row file.
static zg_status parse_options(const char *json, zg_planner_opts *o, int *catalog_mode,
                               char *device_row, zg_error *err) {
    if (!json || !*json) return ZG_OK;
    cJSON *root = NULL;
    zg_status st = zg_json_parse(json, "options", &root, err);
    if (st) return st;
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return zg_error_set(err, ZG_ERR_INVALID, "options: expected an object");
    }
    const int32_t i32 = INT32_MAX;
    int64_t v = 0;
    for (const cJSON *it = root->child; it && !st; it = it->next) {
        const char *k = it->string;
        if (!strcmp(k, "family")) {
            st = cJSON_IsString(it)
                     ? zg_rankset_family_parse(it->valuestring, &o->family, err)
                     : zg_error_set(err, ZG_ERR_INVALID,
                                    "option family: expected node, aligned or sliding");
        } else if (!strcmp(k, "max_degree")) {
            if (!(st = opt_int(it, k, 0, i32, &v, err))) o->max_degree = (int32_t)v;
        } else if (!strcmp(k, "max_seqlen_per_rank")) { // megatron's knob (--max-seqlen-per-rank)
            if (!(st = opt_int(it, k, 1, INT64_MAX / 2, &v, err)))
                o->max_seqlen_per_rank = zg_opt_tokens_of(v);
        } else if (!strcmp(k, "d_model")) {
            if (!(st = opt_int(it, k, 0, i32, &v, err))) o->d_model = (int32_t)v;
        } else if (!strcmp(k, "world_size")) {
            if (!(st = opt_int(it, k, 0, i32, &v, err))) o->world_size = (int32_t)v;
        } else if (!strcmp(k, "seed")) {
            if (!(st = opt_int(it, k, 0, INT64_MAX / 2, &v, err))) o->seed = (uint64_t)v;
        } else if (!strcmp(k, "anchor_nodes")) {
            if (!(st = opt_int(it, k, 1, INT64_MAX / 2, &v, err)))
                o->anchor_nodes = zg_budget_nodes(v);
        } else if (!strcmp(k, "lns_nodes")) {
            if (!(st = opt_int(it, k, 0, INT64_MAX / 2, &v, err)))
                o->anchor_lns_nodes = zg_budget_nodes(v);
        } else if (!strcmp(k, "first_nodes")) {
            if (cJSON_IsString(it) && !strcmp(it->valuestring, "ordinary"))
                o->deeper_first_visit = 0;
            else if (cJSON_IsNumber(it)) {
                if (!(st = opt_int(it, k, 1, INT64_MAX / 2, &v, err)))
                    o->anchor_first_nodes = zg_budget_nodes(v);
            } else
                st = zg_error_set(err, ZG_ERR_INVALID,
                                  "option first_nodes: give a node budget >= 1, or 'ordinary' "
                                  "for the budgets of every other step");
        } else if (!strcmp(k, "eps")) {
            st = opt_num(it, k, 0, 0, &o->eps, err);
        } else if (!strcmp(k, "gamma")) {
            st = opt_num(it, k, 0, 0, &o->gamma, err);
        } else if (!strcmp(k, "anchor_cut")) {
            st = opt_num(it, k, 0, 0, &o->anchor_cut_s, err);
        } else if (!strcmp(k, "time_limit")) {
            st = opt_num(it, k, 0, 1, &o->time_limit_s, err);
            if (!st && !(o->time_limit_s < 1e9))
                st = zg_error_set(err, ZG_ERR_INVALID,
                                  "option time_limit %g: give a positive number of seconds "
                                  "(default 60)",
                                  o->time_limit_s);
        } else if (!strcmp(k, "fallback")) {
            st = opt_str(it, k, o->fallback, sizeof o->fallback, err);
        } else if (!strcmp(k, "bags")) {
            st = opt_str(it, k, o->bags, sizeof o->bags, err);
        } else if (!strcmp(k, "device_row")) {  // --device-row: analytic prices, measured row
            st = opt_str(it, k, device_row, 4096, err);
        } else if (!strcmp(k, "exact_rank_prices")) {
            st = opt_bool(it, k, &o->exact_rank_prices, err);
        } else if (!strcmp(k, "remember_layouts")) {
            st = opt_bool(it, k, &o->remember_layouts, err);
        } else if (!strcmp(k, "catalog")) {
            const char *s = cJSON_IsString(it) ? it->valuestring : "";
            if (!strcmp(s, "auto"))
                *catalog_mode = 0;
            else if (!strcmp(s, "default"))
                *catalog_mode = 1;
            else if (!strcmp(s, "none"))
                *catalog_mode = 2;
            else
                st = zg_error_set(err, ZG_ERR_INVALID,
                                  "option catalog: expected auto, default or none");
        } else {
            st = zg_error_set(err, ZG_ERR_INVALID, "unknown option '%s' (options: %s)", k,
                              option_names);
        }
    }
    cJSON_Delete(root);
    return st;
}

static int batch_in_catalog(const zg_batch *b, const zg_catalog *c) {
    if (b->n == 0) return 0;
    for (int64_t i = 0; i < b->n; i++)
        if (!b->seqs[i].bucket[0] || !zg_catalog_find(c, b->seqs[i].bucket)) return 0;
    return 1;
}

static zg_status batch_from_columns(const zgpy_batch_in *in, int32_t world, zg_batch *b,
                                    zg_error *err) {
    zg_batch_init(b);
    if (!in || in->n < 0 || in->n > ZG_BATCH_MAX_SEQS || (in->n > 0 && !in->tokens))
        return zg_error_set(err, ZG_ERR_INVALID, "batch: bad sequence count %lld",
                            in ? (long long)in->n : -1LL);
    if (in->n > 0) {
        b->seqs = zg_calloc((size_t)in->n, sizeof *b->seqs, err);
        if (!b->seqs) return ZG_ERR_NOMEM;
        b->n = b->cap = in->n;
    }
    const char *bucket = in->buckets;
    for (int64_t i = 0; i < in->n; i++) {
        zg_seq *s = &b->seqs[i];
        zg_seq_init(s);
        s->id = in->ids ? in->ids[i] : i;
        s->tokens = in->tokens[i];
        if (in->origin) s->origin_rank = in->origin[i];
        if (in->kind) s->kind = (zg_seq_kind)in->kind[i];
        if (in->frames) s->frames = in->frames[i];
        if (in->height) s->height = in->height[i];
        if (in->width) s->width = in->width[i];
        if (in->text_tokens) s->text_tokens = in->text_tokens[i];
        if (bucket) {
            size_t len = strlen(bucket);
            if (len >= sizeof s->bucket) {
                zg_batch_free(b);
                return zg_error_set(err, ZG_ERR_INVALID,
                                    "sequence %lld: bucket name '%s' is too long (max %d chars)",
                                    (long long)i, bucket, ZG_BUCKET_NAME_MAX - 1);
            }
            memcpy(s->bucket, bucket, len + 1);
            bucket += len + 1;
        }
    }
    zg_status st = zg_batch_validate(b, world, err);
    if (st) zg_batch_free(b);
    return st;
}

// Copies a plan into one block of flat arrays.
static zg_status flatten(zgpy_result *r, zg_error *err) {
    const zg_plan *p = &r->plan;
    zgpy_plan_view *v = &r->view;
    int64_t n = p->n, ns = 0, w = p->world_size;
    for (int64_t i = 0; i < n; i++)
        ns += p->p[i].n_ranks;
    size_t bytes = (size_t)n * (2 * 8 + 3 * 4 + 2 * 8) + (size_t)(n + 1) * 8 +
                   (size_t)ns * (4 + 2 * 8) + (size_t)w * (2 * 8 + 8 + 4) + (size_t)n * 4 + 64;
    char *blk = malloc(bytes);
    if (!blk) return zg_error_set(err, ZG_ERR_NOMEM, "out of memory copying the plan");
    r->block = blk;
    // 8-byte arrays first, then the 4-byte ones: every array stays aligned
    int64_t *seq_id = (int64_t *)blk, *seq_tokens = seq_id + n, *offset = seq_tokens + n;
    int64_t *sh_start = offset + n + 1, *sh_end = sh_start + ns;
    double *seq_time = (double *)(sh_end + ns), *seq_mem = seq_time + n;
    double *rank_time = seq_mem + n, *rank_mem = rank_time + w;
    int64_t *rank_tokens = (int64_t *)(rank_mem + w);
    int32_t *config = (int32_t *)(rank_tokens + w), *sh_rank = config + 3 * n;
    int32_t *seq_round = sh_rank + ns, *over = seq_round + n;
    int32_t n_rounds = 0;
    int64_t at = 0;
    for (int64_t i = 0; i < n; i++) {
        const zg_placement *pl = &p->p[i];
        seq_id[i] = pl->id;
        seq_tokens[i] = pl->tokens;
        config[3 * i] = pl->config.q;
        config[3 * i + 1] = pl->config.h;
        config[3 * i + 2] = pl->config.k;
        seq_time[i] = pl->time;
        seq_mem[i] = pl->mem;
        seq_round[i] = pl->round;
        if (pl->round + 1 > n_rounds) n_rounds = pl->round + 1;
        offset[i] = at;
        for (int32_t k = 0; k < pl->n_ranks; k++, at++) {
            sh_rank[at] = pl->shards[k].rank;
            sh_start[at] = pl->shards[k].start;
            sh_end[at] = pl->shards[k].end;
        }
    }
    offset[n] = at;
    for (int64_t k = 0; k < w; k++) {
        rank_time[k] = p->ranks ? p->ranks[k].time : 0;
        rank_mem[k] = p->ranks ? p->ranks[k].mem : 0;
        rank_tokens[k] = p->ranks ? p->ranks[k].tokens : 0;
    }
    // the mark and its ranks: what `zellige plan` warns about (exit status 5)
    int32_t n_over = p->over_cap ? zg_plan_over_cap_ranks(p, over, (int32_t)w) : 0;
    r->over_cap_note[0] = 0;
    if (n_over) zg_plan_over_cap_describe(p, r->over_cap_note, sizeof r->over_cap_note);
    *v = (zgpy_plan_view){.world_size = p->world_size,
                          .optimal = p->optimal,
                          .n = n,
                          .n_shards = ns,
                          .makespan = p->makespan,
                          .plan_time_ms = p->plan_time_ms,
                          .lower_bound = p->lower_bound,
                          .mem_base = p->mem_base,
                          .mem_cap = p->mem_cap,
                          .policy = p->policy,
                          .fallback_from = p->fallback_from,
                          .summary = p->summary,
                          .seq_id = seq_id,
                          .seq_tokens = seq_tokens,
                          .config = config,
                          .offset = offset,
                          .shard_rank = sh_rank,
                          .shard_start = sh_start,
                          .shard_end = sh_end,
                          .seq_time = seq_time,
                          .seq_mem = seq_mem,
                          .rank_time = rank_time,
                          .rank_mem = rank_mem,
                          .rank_tokens = rank_tokens,
                          .seq_round = seq_round,
                          .n_rounds = n_rounds,
                          .n_over_cap = n_over,
                          .over_cap_ranks = over,
                          .over_cap_note = r->over_cap_note,
                          .block = blk,
                          .block_bytes = (int64_t)((char *)(over + w) - blk)};
    return ZG_OK;
}

static int json_out(cJSON *j, char **out, char *err, size_t errsz) {
    char *s = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    if (!s) {
        zg_error e;
        zg_error_set(&e, ZG_ERR_NOMEM, "out of memory printing JSON");
        return fail(err, errsz, &e);
    }
    *out = s;
    return 0;
}

// ---------------------------------------------------------------------------------------------
// Exported entry points.

ZGPY_API int zgpy_abi_version(void) {
    return ZGPY_ABI;
}

// Frees a string returned by this library.
ZGPY_API void zgpy_free(void *p) {
    cJSON_free(p);
}

// "zellige,joint,..." (static storage).
ZGPY_API const char *zgpy_policies(void) {
    static char list[256];
    if (!list[0]) {
        size_t at = 0;
        for (const zg_planner_vtable *const *v = zg_planner_policies(); *v; v++)
            at += (size_t)snprintf(list + at, sizeof list - at, "%s%s", at ? "," : "", (*v)->name);
    }
    return list;
}

// A planner: model and cluster are a preset name, a JSON file path or JSON text; profile is a
// measured price table (`zellige profile`) or NULL/"" for the analytic model; options is a JSON
// object of `zellige plan`'s options (names with '_'), or NULL.
ZGPY_API int zgpy_planner_new(const char *model, const char *cluster, const char *profile,
                              const char *policy, const char *options, zgpy_planner **out,
                              char *err, size_t errsz) {
    zg_error e;
    zg_error_clear(&e);
    *out = NULL;
    zgpy_planner *h = zg_calloc(1, sizeof *h, &e);
    if (!h) return fail(err, errsz, &e);
    zg_plan_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    zg_planner_opts_default(&ctx.opts);
    zg_cost_opts copts;
    zg_cost_opts_default(&copts);
    zg_status st = load_model(model, &h->model, &e);
    if (!st) st = load_cluster(cluster, &h->cluster, &e);
    char device_row[4096] = "";
    if (!st) st = parse_options(options, &ctx.opts, &h->catalog_mode, device_row, &e);
    if (!st && device_row[0] && profile && *profile)
        st = zg_error_set(&e, ZG_ERR_INVALID,
                          "option device_row prices the analytic model, which profile's measured "
                          "table replaces: give one of them");
    if (!st && device_row[0]) {
        st = zg_cost_device_row_load(device_row, h->cluster.device, &copts.dev, &e);
        if (st) zg_error_prefix(&e, "device_row: ");
    }
    if (!st) {
        if (profile && *profile) {
            st = zg_cost_table_pricer_load(&h->pricer, profile, &h->model, &h->cluster, &e);
            if (st) zg_error_prefix(&e, "profile: ");
            zg_cost_table t; // the pricer keeps no table: read it again for its 0-s pairs
            zg_cost_table_init_empty(&t);
            if (!st && !zg_cost_table_load(profile, &t, NULL))
                h->unpriced = zg_cost_table_unpriced(&t, h->unpriced_note, sizeof h->unpriced_note);
            zg_cost_table_free(&t);
        } else {
            st = zg_cost_analytic_init(&h->pricer, &h->model, &h->cluster, &copts, &e);
        }
    }
    if (!st && h->catalog_mode != 2) {
        st = zg_catalog_default(&h->model, &h->catalog, &e);
        h->have_catalog = !st;
    }
    if (!st) {
        ctx.model = &h->model;
        ctx.cluster = &h->cluster;
        ctx.pricer = &h->pricer;
        ctx.catalog = h->catalog_mode == 1 ? &h->catalog : NULL;
        h->batch_world = ctx.opts.world_size > 0 ? ctx.opts.world_size : h->cluster.world_size;
        st = zg_planner_init(&h->planner, policy ? policy : "zellige", &ctx, &e);
    }
    if (st) {
        if (h->pricer.free_impl) zg_pricer_free(&h->pricer);
        zg_catalog_free(&h->catalog);
        free(h);
        return fail(err, errsz, &e);
    }
    *out = h;
    return 0;
}

ZGPY_API void zgpy_planner_free(zgpy_planner *h) {
    if (!h) return;
    zg_planner_free(&h->planner);
    if (h->pricer.free_impl) zg_pricer_free(&h->pricer);
    zg_catalog_free(&h->catalog);
    free(h);
}

// What the planner was made with, as JSON: policy, model, cluster, pricer, memory, and the
// profile's pairs priced 0 s.
ZGPY_API int zgpy_planner_info(const zgpy_planner *h, char **out, char *err, size_t errsz) {
    cJSON *j = cJSON_CreateObject();
    if (j) {
        cJSON_AddStringToObject(j, "policy", h->planner.vt->name);
        cJSON_AddItemToObject(j, "model", zg_model_to_json(&h->model));
        cJSON_AddItemToObject(j, "cluster", zg_cluster_to_json(&h->cluster));
        cJSON_AddStringToObject(j, "pricer", h->pricer.kind);
        cJSON_AddNumberToObject(j, "world_size", h->cluster.world_size);
        cJSON_AddNumberToObject(j, "mem_base", h->pricer.mem_base);
        cJSON_AddNumberToObject(j, "mem_cap", h->pricer.mem_cap);
        cJSON_AddStringToObject(j, "family", zg_rankset_family_name(h->planner.ctx.opts.family));
        cJSON_AddNumberToObject(j, "max_degree", zg_plan_ctx_max_degree(&h->planner.ctx));
        cJSON_AddNumberToObject(j, "unpriced_pairs", h->unpriced);
        if (h->unpriced) cJSON_AddStringToObject(j, "unpriced_note", h->unpriced_note);
    }
    return json_out(j, out, err, errsz);
}

// Plans one batch with the planner's warm state (as zg_planner_plan; the catalog rule of
// `zellige plan`). *out gets a result to read with zgpy_result_view and free with
// zgpy_result_free.
ZGPY_API int zgpy_plan(zgpy_planner *h, const zgpy_batch_in *in, zgpy_result **out, char *err,
                       size_t errsz) {
    zg_error e;
    zg_error_clear(&e);
    *out = NULL;
    zg_batch b;
    zg_status st = batch_from_columns(in, h->batch_world, &b, &e);
    if (st) return fail(err, errsz, &e);
    zgpy_result *r = zg_calloc(1, sizeof *r, &e);
    if (!r) {
        zg_batch_free(&b);
        return fail(err, errsz, &e);
    }
    zg_plan_init(&r->plan);
    if (h->catalog_mode == 0)
        h->planner.ctx.catalog =
            h->have_catalog && batch_in_catalog(&b, &h->catalog) ? &h->catalog : NULL;
    st = zg_planner_plan(&h->planner, &b, &r->plan, &e);
    if (!st) st = flatten(r, &e);
    zg_batch_free(&b);
    if (st) {
        zg_plan_free(&r->plan);
        free(r->block);
        free(r);
        return fail(err, errsz, &e);
    }
    *out = r;
    return 0;
}

ZGPY_API const zgpy_plan_view *zgpy_result_view(const zgpy_result *r) {
    return &r->view;
}

// The plan JSON of docs/formats.md, byte for byte what `zellige plan --json` writes
// (zg_plan_write_file: numbers round-trip exactly, one sequence per line). The library writes
// plans only to files, so this goes through a private temporary folder.
ZGPY_API int zgpy_result_json(const zgpy_result *r, char **out, char *err, size_t errsz) {
    zg_error e;
    zg_error_clear(&e);
    const char *tmp = getenv("TMPDIR");
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/zellige-plan-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        zg_error_set(&e, ZG_ERR_IO, "cannot make a temporary folder in %s",
                     tmp && *tmp ? tmp : "/tmp");
        return fail(err, errsz, &e);
    }
    snprintf(path, sizeof path, "%s/plan.json", dir);
    char *text = NULL;
    size_t len = 0;
    zg_status st = zg_plan_write_file(path, &r->plan, &e);
    if (!st) st = zg_file_read(path, &text, &len, &e);
    unlink(path);
    rmdir(dir);
    if (st) return fail(err, errsz, &e);
    *out = text;
    return 0;
}

// Writes the plan JSON to path (atomically, as `zellige plan --json`).
ZGPY_API int zgpy_result_write(const zgpy_result *r, const char *path, char *err, size_t errsz) {
    zg_error e;
    zg_error_clear(&e);
    if (zg_plan_write_file(path, &r->plan, &e)) return fail(err, errsz, &e);
    return 0;
}

ZGPY_API void zgpy_result_free(zgpy_result *r) {
    if (!r) return;
    zg_plan_free(&r->plan);
    free(r->block);
    free(r);
}

// A batch file (.json or .jsonl; is_path != 0) or batch text, read with the library's reader
// (tokens from frames/height/width with `model`), as batch JSON with every known field.
ZGPY_API int zgpy_batch_read(const char *model, const char *src, int is_path, char **out, char *err,
                             size_t errsz) {
    zg_error e;
    zg_error_clear(&e);
    zg_model m;
    zg_batch b;
    zg_batch_init(&b);
    zg_status st = load_model(model, &m, &e);
    if (!st)
        st = is_path ? zg_batch_read_file(src, &m, &b, &e)
                     : zg_batch_parse(src, "batch", &m, &b, &e);
    if (st) return fail(err, errsz, &e);
    cJSON *j = zg_batch_to_json(&b);
    zg_batch_free(&b);
    return json_out(j, out, err, errsz);
}

// One step of a paper mix (zg_workload_mix; `zellige workload mix`), as batch JSON.
ZGPY_API int zgpy_workload_mix(const char *model, const char *mix, int64_t tokens_per_rank,
                               int32_t world_size, int32_t video_seconds, uint64_t seed,
                               int64_t step, char **out, char *err, size_t errsz) {
    zg_error e;
    zg_error_clear(&e);
    zg_model m;
    zg_batch b;
    zg_batch_init(&b);
    zg_status st = load_model(model, &m, &e);
    zg_mix_spec spec = {0};
    if (!st) {
        spec.video_share = zg_mix_share_from_name(mix ? mix : "");
        if (spec.video_share < 0)
            st = zg_error_set(&e, ZG_ERR_INVALID, "mix '%s': expected V0..V100 (e.g. V50)",
                              mix ? mix : "");
    }
    if (!st) {
        spec.tokens_per_rank = tokens_per_rank;
        spec.video_seconds = video_seconds;
        spec.world_size = world_size;
        spec.seed = seed;
        st = zg_workload_mix(&m, &spec, step, &b, &e);
    }
    if (st) return fail(err, errsz, &e);
    cJSON *j = zg_batch_to_json(&b);
    zg_batch_free(&b);
    return json_out(j, out, err, errsz);
}

// ---------------------------------------------------------------------------------------------
// The engine's schedule for zellige.torch (src/engine/sched.c): the plan as flat arrays (the
// plan view's layout), the loader rank of each sequence, this rank and the attention shape ->
// zg_engine_sched (every array the Python executor runs). Collective-free, like zg_engine_init.

typedef struct zgpy_sched {
    zg_plan plan;
    zg_engine *engine;
    zg_engine_sched sched;
} zgpy_sched;

ZGPY_API void zgpy_sched_free(zgpy_sched *s) {
    if (!s) return;
    zg_engine_sched_free(&s->sched);
    zg_engine_free(s->engine);
    zg_plan_free(&s->plan);
    free(s);
}

ZGPY_API int zgpy_sched_new(int32_t world, int64_t n, const int64_t *ids, const int64_t *tokens,
                            const int32_t *config, const int64_t *offset, const int32_t *shard_rank,
                            const int64_t *shard_start, const int64_t *shard_end,
                            const int32_t *origin, int32_t rank, int32_t n_heads, int32_t head_dim,
                            zgpy_sched **out, char *err, size_t errsz) {
    zg_error e;
    zg_error_clear(&e);
    *out = NULL;
    zgpy_sched *h = zg_calloc(1, sizeof *h, &e);
    if (!h) return fail(err, errsz, &e);
    zg_plan_init(&h->plan);
    zg_status st = ZG_OK;
    if (world < 1 || rank < 0 || rank >= world)
        st = zg_error_set(&e, ZG_ERR_INVALID, "schedule: rank %d outside a world of %d ranks", rank,
                          world);
    if (!st) st = zg_plan_alloc(&h->plan, n, world, &e);
    int64_t *lens = NULL;
    for (int64_t i = 0; i < n && !st; i++) {
        int64_t a = offset[i], b = offset[i + 1];
        zg_config c = {config[3 * i], config[3 * i + 1], config[3 * i + 2]};
        if (b - a < 1 || b - a > 1 << 20) {
            st = zg_error_set(&e, ZG_ERR_INVALID, "sequence %lld: %lld shards", (long long)ids[i],
                              (long long)(b - a));
            break;
        }
        free(lens);
        lens = zg_calloc((size_t)(b - a), sizeof *lens, &e);
        int32_t *ranks = lens ? zg_calloc((size_t)(b - a), sizeof *ranks, &e) : NULL;
        if (!ranks) {
            st = ZG_ERR_NOMEM;
            break;
        }
        int64_t at = 0;
        for (int64_t k = a; k < b && !st; k++) {
            if (shard_start[k] != at)
                st = zg_error_set(&e, ZG_ERR_INVALID,
                                  "sequence %lld: shard %lld starts at token %lld, expected %lld "
                                  "(shards must cover the sequence in position order)",
                                  (long long)ids[i], (long long)(k - a), (long long)shard_start[k],
                                  (long long)at);
            lens[k - a] = shard_end[k] - shard_start[k];
            ranks[k - a] = shard_rank[k];
            at = shard_end[k];
        }
        if (!st && at != tokens[i])
            st = zg_error_set(&e, ZG_ERR_INVALID, "sequence %lld: shards cover %lld of %lld tokens",
                              (long long)ids[i], (long long)at, (long long)tokens[i]);
        zg_seq s;
        zg_seq_init(&s);
        s.id = ids[i];
        s.tokens = tokens[i];
        if (!st) st = zg_plan_set_ranks(&h->plan, i, &s, i, c, ranks, lens, (int32_t)(b - a), &e);
        free(ranks);
        if (st) zg_error_prefix(&e, "plan: ");
    }
    free(lens);
    zg_comm fake; // the schedule is built without messages: only rank and size are read
    memset(&fake, 0, sizeof fake);
    fake.rank = rank;
    fake.size = world;
    zg_attn_shape shape = {n_heads, head_dim, head_dim > 0 ? 1.0f / sqrtf((float)head_dim) : 1};
    if (!st) st = zg_engine_init(&h->engine, &fake, &h->plan, shape, NULL, &e);
    if (!st) st = zg_engine_sched_export(h->engine, origin, &h->sched, &e);
    if (st) {
        zgpy_sched_free(h);
        return fail(err, errsz, &e);
    }
    *out = h;
    return 0;
}

ZGPY_API const zg_engine_sched *zgpy_sched_view(const zgpy_sched *s) {
    return &s->sched;
}

// The analytic cost model's communication bytes (zg_comm_bytes: all-gather, all-to-all, ring;
// per participating rank, forward + backward) of one sequence of `tokens` under (q, h, k), for
// one attention layer of n_heads x head_dim in fp32 without recompute (zg_cost_attn_layer_init,
// the pricer bench_engine_comm compares the C engine with).
ZGPY_API int zgpy_comm_model(int32_t n_heads, int32_t head_dim, int64_t tokens, int32_t q,
                             int32_t h, int32_t k, double *out3, char *err, size_t errsz) {
    zg_error e;
    zg_error_clear(&e);
    zg_pricer pr;
    if (zg_cost_attn_layer_init(&pr, n_heads, head_dim, &e)) return fail(err, errsz, &e);
    zg_seq s;
    zg_seq_init(&s);
    s.tokens = tokens;
    zg_comm_bytes b = pr.comm(&pr, &s, (zg_config){q, h, k});
    out3[0] = b.allgather;
    out3[1] = b.alltoall;
    out3[2] = b.ring;
    if (pr.free_impl) zg_pricer_free(&pr);
    return 0;
}
