// zel_bench.h — shared setup for the Zellige planner benchmarks: the paper's settings (cluster
// preset, video length, load), the analytic pricer, and small statistics helpers.
#ifndef ZEL_BENCH_H
#define ZEL_BENCH_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost/cost.h"
#include "plan/plan.h"
#include "zellige/internal.h"

typedef struct zb_env {
    zg_model model;
    zg_cluster cluster;
    zg_pricer pricer;
    zg_catalog catalog;
    zg_plan_ctx ctx;
    int32_t video_seconds;
    int64_t high, low;  // tokens per rank
} zb_env;

// 8xA800: 10 s videos, 350K / 125K; 32xA6000: 15 s, 175K / 125K; others: 15 s, 350K / 125K.
static inline int zb_env_init(zb_env *e, const char *cluster, zg_error *err) {
    memset(e, 0, sizeof *e);
    if (zg_model_preset("wan2.1-1.3b", &e->model, err)) return 1;
    if (zg_cluster_preset(cluster, &e->cluster, err)) return 1;
    zg_cost_opts co;
    zg_cost_opts_default(&co);
    if (zg_cost_analytic_init(&e->pricer, &e->model, &e->cluster, &co, err)) return 1;
    if (zg_catalog_default(&e->model, &e->catalog, err)) return 1;
    e->ctx.model = &e->model;
    e->ctx.cluster = &e->cluster;
    e->ctx.pricer = &e->pricer;
    e->ctx.catalog = &e->catalog;
    zg_planner_opts_default(&e->ctx.opts);
    e->video_seconds = e->cluster.world_size == 8 ? 10 : 15;
    e->high = strstr(cluster, "A6000") ? 175000 : 350000;
    e->low = 125000;
    return 0;
}

// The benches' budget flags (--anchor-nodes, --lns-nodes, --first-nodes: 0 = the built-in rule,
// -1 = off for --lns-nodes and the ordinary budget for --first-nodes; --no-memory) into opts.
static inline void zb_set_budgets(zg_planner_opts *o, int64_t anchor, int64_t lns, int64_t first,
                                  int no_memory) {
    o->anchor_nodes = (zg_budget){anchor > 0, anchor > 0 ? anchor : 0};
    o->anchor_lns_nodes = (zg_budget){lns != 0, lns > 0 ? lns : 0};
    o->anchor_first_nodes = (zg_budget){first > 0, first > 0 ? first : 0};
    o->deeper_first_visit = first >= 0;
    o->remember_layouts = !no_memory;
}

// A setting "CLUSTER[:LOAD]" into name[64] (the cluster) and its load ("high" when absent).
static inline const char *zb_setting(const char *setting, char name[64]) {
    snprintf(name, 64, "%s", setting);
    char *colon = strchr(name, ':');
    if (!colon) return "high";
    *colon = '\0';
    return colon + 1;
}

// Batch k of a quality-bench setting (tokens per rank tpr; the mixes mx[0..nmx) alternate, each
// mix's draws seeded k / nmx): bench_planner_quality and bench_planner_stage1 plan the same ones.
static inline int zb_quality_batch(const zb_env *e, int64_t tpr, char **mx, int nmx, int k,
                                   zg_batch *b, zg_error *err) {
    zg_mix_spec spec = {zg_mix_share_from_name(mx[k % nmx]), tpr, e->video_seconds,
                        e->cluster.world_size, 3};
    zg_batch_init(b);
    return zg_workload_mix(&e->model, &spec, k / nmx, b, err) != ZG_OK;
}

// --best FILE: {"mixes": "V35,...", "settings": {"16xA800:high": [makespan per batch], ...}};
// --lb FILE the same with proven lower bounds (flag: the option's name, for messages; note: what
// a new file's numbers are). Opens it (a missing file is an empty one when it will be written);
// NULL (printed) on error.
static inline cJSON *best_open_as(const char *path, const char *mixes, int update,
                                  const char *flag, const char *note) {
    if (!path) return NULL;
    zg_error err;
    cJSON *j = NULL;
    FILE *f = fopen(path, "r");
    if (f) {
        fclose(f);
        if (zg_json_read_file(path, &j, &err)) {
            fprintf(stderr, "bench_planner: %s: %s\n", flag, err.msg);
            return NULL;
        }
        const cJSON *m = cJSON_GetObjectItem(j, "mixes");
        if (!cJSON_IsString(m) || strcmp(m->valuestring, mixes) ||
            !cJSON_IsObject(cJSON_GetObjectItem(j, "settings"))) {
            fprintf(stderr, "bench_planner: %s: %s holds batches of mixes '%s', "
                            "this run draws '%s' (use --mixes %s, or another file)\n",
                    flag, path, cJSON_IsString(m) ? m->valuestring : "?", mixes,
                    cJSON_IsString(m) ? m->valuestring : "...");
            cJSON_Delete(j);
            return NULL;
        }
        return j;
    }
    if (!update) {
        fprintf(stderr, "bench_planner: %s: cannot open %s (add %s-update to create it)\n",
                flag, path, flag);
        return NULL;
    }
    j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "mixes", mixes);
    cJSON_AddStringToObject(j, "note", note);
    cJSON_AddItemToObject(j, "settings", cJSON_CreateObject());
    return j;
}

static inline cJSON *best_open(const char *path, const char *mixes, int update) {
    return best_open_as(path, mixes, update, "--best",
                        "best plan makespan (s) recorded per batch index by "
                        "bench_planner_quality --best-update");
}

static inline cJSON *lb_open(const char *path, const char *mixes, int update) {
    return best_open_as(path, mixes, update, "--lb",
                        "proven lower bound (s) on every plan's makespan per batch index: SCIP's "
                        "dual bound on joint's relaxation model (bench_planner_stage1 --relax)");
}

// The row of setting `name` (CLUSTER:LOAD), padded to n entries (0 = none recorded yet).
static inline cJSON *best_row(cJSON *best, const char *name, int n) {
    cJSON *set = cJSON_GetObjectItem(best, "settings");
    cJSON *row = cJSON_GetObjectItem(set, name);
    if (!cJSON_IsArray(row)) {
        cJSON_DeleteItemFromObject(set, name);
        row = cJSON_AddArrayToObject(set, name);
    }
    while (cJSON_GetArraySize(row) < n) cJSON_AddItemToArray(row, cJSON_CreateNumber(0));
    return row;
}


static inline void zb_env_free(zb_env *e) {
    zg_pricer_free(&e->pricer);
    zg_catalog_free(&e->catalog);
}

static inline int zb_dcmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

// Quantile q in [0,1] of v[0..n) (sorts v), nearest-rank.
static inline double zb_quantile(double *v, int n, double q) {
    if (n == 0) return 0;
    qsort(v, (size_t)n, sizeof *v, zb_dcmp);
    int k = (int)(q * n + 0.999999) - 1;
    if (k < 0) k = 0;
    if (k >= n) k = n - 1;
    return v[k];
}

// Splits a comma list in place into at most max items.
static inline int zb_split(char *s, char **items, int max) {
    int n = 0;
    for (char *t = strtok(s, ","); t && n < max; t = strtok(NULL, ",")) items[n++] = t;
    return n;
}

// The options the planner benches share. zb_args_take consumes argv[*i] (and its value) when
// it is one of them: --clusters, --mixes, --loads, --steps, --family. Returns 1 if it did.
typedef struct zb_args {
    char clusters[256], mixes[128], loads[32], family[16];
    int steps;
} zb_args;

static inline int zb_args_take(zb_args *a, int argc, char **argv, int *i) {
    const char *k = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    if (!v) return 0;
    if (!strcmp(k, "--clusters")) snprintf(a->clusters, sizeof a->clusters, "%s", v);
    else if (!strcmp(k, "--mixes")) snprintf(a->mixes, sizeof a->mixes, "%s", v);
    else if (!strcmp(k, "--loads")) snprintf(a->loads, sizeof a->loads, "%s", v);
    else if (!strcmp(k, "--family")) snprintf(a->family, sizeof a->family, "%s", v);
    else if (!strcmp(k, "--steps")) a->steps = atoi(v);
    else return 0;
    (*i)++;
    return 1;
}

#endif
