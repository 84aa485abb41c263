// zel_bench.h — shared setup for the Zellige planner benchmarks: the paper's settings (cluster
// preset, video length, load), the analytic pricer, batches and problems of a setting, the
// record files (--best, --lb), small statistics helpers, and the command-line options the
// benches share (a table of options per bench, parsed by zb_parse).
#ifndef ZEL_BENCH_H
#define ZEL_BENCH_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
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

// Tokens per rank for load name ld: "low", "s4096" (scaled from high load so that the step-0
// batch of mix share `share` has about 4096 sequences: high * 4096 / n(high batch)), else high.
// -1 on error.
static inline int64_t zb_load_tpr(const zb_env *e, const char *ld, double share, zg_error *err) {
    if (!strcmp(ld, "low")) return e->low;
    if (strcmp(ld, "s4096")) return e->high;
    zg_mix_spec spec = {share, e->high, e->video_seconds, e->cluster.world_size, 1};
    zg_batch b;
    zg_batch_init(&b);
    if (zg_workload_mix(&e->model, &spec, 0, &b, err)) return -1;
    int64_t tpr = (int64_t)((double)e->high * 4096.0 / (double)(b.n > 0 ? b.n : 1));
    zg_batch_free(&b);
    return tpr;
}

// Draw `step` of mix spec and its planner problem (b initialised, pr built only on success).
static inline zg_status zb_problem(const zb_env *e, const zg_mix_spec *spec, uint64_t step,
                                   zg_batch *b, zg_problem *pr, zg_error *err) {
    zg_batch_init(b);
    zg_status st = zg_workload_mix(&e->model, spec, step, b, err);
    return st ? st : zg_problem_build(&e->ctx, b, pr, err);
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

// ---- command lines ------------------------------------------------------------------------------
// Each bench lists its options in a table (zb_opt) and parses argv with zb_parse. The groups the
// benches share are macros over a struct: ZB_ARGS_OPTS (zb_args), ZB_QARGS_OPTS (zb_qargs),
// ZB_SEARCH_OPTS (zb_search), ZB_FILES_OPTS (zb_files).

// An option: `name` alone (type 'f': *(int *)dst = 1) or followed by a value: 'i' int, 'l'
// int64_t, 'd' double, 's' copied into the char[len] at dst, 'p' the argument itself
// (*(const char **)dst).
typedef struct zb_opt {
    const char *name;
    char type;
    void *dst;
    size_t len;
} zb_opt;

// Consumes argv[*i] (and its value) when it is one of o[0..n); returns 1 if it did.
static inline int zb_opt_take(const zb_opt *o, int n, int argc, char **argv, int *i) {
    const char *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    for (int j = 0; j < n; j++) {
        if (strcmp(argv[*i], o[j].name)) continue;
        if (o[j].type == 'f') {
            *(int *)o[j].dst = 1;
            return 1;
        }
        if (!v) return 0;
        if (o[j].type == 'i') *(int *)o[j].dst = atoi(v);
        else if (o[j].type == 'l') *(int64_t *)o[j].dst = atoll(v);
        else if (o[j].type == 'd') *(double *)o[j].dst = atof(v);
        else if (o[j].type == 's') snprintf(o[j].dst, o[j].len, "%s", v);
        else *(const char **)o[j].dst = v;
        (*i)++;
        return 1;
    }
    return 0;
}

// Parses argv[1..argc) with o[0..n). Returns -1 to go on, else the bench's exit status: 0 on
// --help (usage on stdout), 1 on an argument that is not an option (usage on stderr).
static inline int zb_parse(const char *prog, const char *usage, const zb_opt *o, int n,
                           int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help")) {
            fputs(usage, stdout);
            return 0;
        }
        if (!zb_opt_take(o, n, argc, argv, &i)) {
            fprintf(stderr, "%s: bad argument '%s'\n%s", prog, argv[i], usage);
            return 1;
        }
    }
    return -1;
}

#define ZB_NOPTS(o) ((int)(sizeof(o) / sizeof(o)[0]))

// The planner benches' settings: --clusters, --mixes, --loads (comma lists), --steps, --family.
typedef struct zb_args {
    char clusters[256], mixes[128], loads[32], family[16];
    int steps;
} zb_args;
#define ZB_ARGS_OPTS(a)                                      \
    {"--clusters", 's', (a).clusters, sizeof((a).clusters)}, \
        {"--mixes", 's', (a).mixes, sizeof((a).mixes)},      \
        {"--loads", 's', (a).loads, sizeof((a).loads)},      \
        {"--family", 's', (a).family, sizeof((a).family)},   \
        {"--steps", 'i', &(a).steps, 0}

// The quality benches' batch set (zb_quality_batch): --settings CLUSTER:LOAD,..., --mixes LIST,
// --batches N.
typedef struct zb_qargs {
    char settings[256], mixes[128];
    int batches;
} zb_qargs;
#define ZB_QARGS_OPTS(q)                                     \
    {"--settings", 's', (q).settings, sizeof((q).settings)}, \
        {"--mixes", 's', (q).mixes, sizeof((q).mixes)},      \
        {"--batches", 'i', &(q).batches, 0}

// Zellige's stage-1 search options: --anchor-nodes N, --lns-nodes N, --first-nodes N (budgets:
// as zb_set_budgets reads them) and --no-memory (no layouts remembered across steps);
// zb_search_apply sets them in planner options.
typedef struct zb_search {
    int64_t anchor_nodes, lns_nodes, first_nodes;
    int no_memory;
} zb_search;
#define ZB_SEARCH_OPTS(s)                                                                   \
    {"--anchor-nodes", 'l', &(s).anchor_nodes, 0}, {"--lns-nodes", 'l', &(s).lns_nodes, 0}, \
        {"--first-nodes", 'l', &(s).first_nodes, 0}, {"--no-memory", 'f', &(s).no_memory, 0}

static inline void zb_search_apply(const zb_search *s, zg_planner_opts *o) {
    zb_set_budgets(o, s->anchor_nodes, s->lns_nodes, s->first_nodes, s->no_memory);
}

// The record files: --best FILE, --best-update, --lb FILE, --lb-update (best_open, lb_open).
typedef struct zb_files {
    const char *best_path, *lb_path;
    int best_update, lb_update;
} zb_files;
#define ZB_FILES_OPTS(f)                                                             \
    {"--best", 'p', &(f).best_path, 0}, {"--best-update", 'f', &(f).best_update, 0}, \
        {"--lb", 'p', &(f).lb_path, 0}, {"--lb-update", 'f', &(f).lb_update, 0}

// The lists of a zb_args, split in place.
typedef struct zb_lists {
    char *cl[16], *mx[16], *ld[4];
    int ncl, nmx, nld;
} zb_lists;

static inline void zb_args_split(zb_args *a, zb_lists *l) {
    l->ncl = zb_split(a->clusters, l->cl, 16);
    l->nmx = zb_split(a->mixes, l->mx, 16);
    l->nld = zb_split(a->loads, l->ld, 4);
}

// zb_env_init on cluster with the rank-set family of a.
static inline int zb_env_init_args(zb_env *e, const char *cluster, const zb_args *a,
                                   zg_error *err) {
    return zb_env_init(e, cluster, err) ||
           zg_rankset_family_parse(a->family, &e->ctx.opts.family, err) != ZG_OK;
}

#endif
