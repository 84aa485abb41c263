// test_plan_golden.c — every policy's plans, byte for byte (by digest), against a golden file.
//
// The golden file (tests/fixtures/plans_golden.jsonl) was written before the planner's code was
// reorganised; any change of layout, cache or tuning code that changes a plan fails here. Each
// line is one plan: {"setting","policy","step","makespan","sequences","summary","json_bytes",
// "json_digest"}, the digest taken over the plan's JSON text with plan_time_ms removed (the only
// field that depends on the clock). The zellige stream plans every batch of a setting
// through one planner, as a training loop does, so the warm-start and cache paths are covered.
//
// Regenerate (only when a plan change is intended, and say why in the commit):
//   build/tests/plan_test_plan_golden --write tests/fixtures/plans_golden.jsonl
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"
#include "planner/planner.h"
#include "zgtest.h"

#define GOLDEN "tests/fixtures/plans_golden.jsonl"

static const char *const clusters[] = {"8xA800", "16xA800", "32xA6000", "64xH100"};
static const char *const knap_bags[] = {"g4n2", "g4n1+g12n1", "g8n4", "g8n8"};
static const char *const mixes[] = {"V35", "V40", "V45", "V50", "V55", "V60"};
static const char *const baselines[] = {"knapformer", "usp", "static", "adaptive", "dp"};
enum { N_CLUSTERS = 4, N_MIXES = 6, STEPS_PER_LOAD = 12, N_BASELINES = 5 };

typedef struct env {
    zg_model model;
    zg_cluster cluster;
    zg_pricer pricer;
    zg_catalog catalog;
    zg_plan_ctx ctx;
} env;

static int env_init(env *e, const char *cluster, zg_error *err) {
    memset(e, 0, sizeof *e);
    zg_cost_opts co;
    zg_cost_opts_default(&co);
    if (zg_model_preset("wan2.1-1.3b", &e->model, err) ||
        zg_cluster_preset(cluster, &e->cluster, err) ||
        zg_cost_analytic_init(&e->pricer, &e->model, &e->cluster, &co, err) ||
        zg_catalog_default(&e->model, &e->catalog, err))
        return 1;
    e->ctx = (zg_plan_ctx){&e->model, &e->cluster, &e->pricer, &e->catalog, {0}};
    zg_planner_opts_default(&e->ctx.opts);
    return 0;
}

static void env_free(env *e) {
    zg_pricer_free(&e->pricer);
    zg_catalog_free(&e->catalog);
}

// Batch `step` of a setting: the mixes alternate, loads high (steps < STEPS_PER_LOAD) then low.
static int setting_batch(const env *e, int step, zg_batch *b, zg_error *err) {
    int high = step < STEPS_PER_LOAD;
    int k = step % STEPS_PER_LOAD;
    int a6000 = strstr(e->cluster.name, "A6000") != NULL;
    zg_mix_spec spec = {zg_mix_share_from_name(mixes[k % N_MIXES]),
                        high ? (a6000 ? 175000 : 350000) : 125000,
                        e->cluster.world_size == 8 ? 10 : 15, e->cluster.world_size, 7};
    zg_batch_init(b);
    return zg_workload_mix(&e->model, &spec, k / N_MIXES, b, err) != ZG_OK;
}

// Two independent 64-bit hashes of the plan's JSON text (FNV-1a and a multiply-rotate hash):
// equal digests mean equal bytes for any change a refactor can make, at 60 bytes a plan instead
// of the megabytes a 32-rank USP plan's text takes.
static void digest(const char *s, size_t n, char out[40]) {
    uint64_t a = 1469598103934665603ULL, b = 0x9E3779B97F4A7C15ULL;
    for (size_t i = 0; i < n; i++) {
        a = (a ^ (unsigned char)s[i]) * 1099511628211ULL;
        b = ((b ^ (unsigned char)s[i]) * 0xff51afd7ed558ccdULL);
        b = (b << 31) | (b >> 33);
    }
    snprintf(out, 40, "%016llx%016llx", (unsigned long long)a, (unsigned long long)b);
}

// One golden line for plan p (NULL: the planner failed with err), malloc'd: the plan's
// makespan, summary, size and the digest of its JSON text (plan_time_ms removed).
static char *golden_line(const char *cluster, const char *policy, int step, const zg_plan *p,
                         const zg_error *err) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "setting", cluster);
    cJSON_AddStringToObject(o, "policy", policy);
    cJSON_AddNumberToObject(o, "step", step);
    if (p) {
        cJSON *j = zg_plan_to_json(p);
        cJSON_DeleteItemFromObject(j, "plan_time_ms");
        char *text = cJSON_PrintUnformatted(j);
        cJSON_Delete(j);
        char d[40];
        digest(text, strlen(text), d);
        cJSON_AddNumberToObject(o, "makespan", p->makespan);
        cJSON_AddNumberToObject(o, "sequences", (double)p->n);
        cJSON_AddStringToObject(o, "summary", p->summary);
        cJSON_AddNumberToObject(o, "json_bytes", (double)strlen(text));
        cJSON_AddStringToObject(o, "json_digest", d);
        free(text);
    } else {
        cJSON_AddStringToObject(o, "error", err->msg);
    }
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

// Appends the lines of every plan to out (one per line), or stops at the first failure.
static int all_lines(FILE *out, zg_error *err) {
    for (int c = 0; c < N_CLUSTERS; c++) {
        env e;
        if (env_init(&e, clusters[c], err)) return 1;
        snprintf(e.ctx.opts.bags, sizeof e.ctx.opts.bags, "%s", knap_bags[c]);
        zg_planner zl;
        if (zg_planner_init(&zl, "zellige", &e.ctx, err)) return 1;
        // the fast path (64 ranks and more) on a few steps: its batches are large
        int steps = e.cluster.world_size >= 64 ? 8 : 2 * STEPS_PER_LOAD;
        for (int step = 0; step < steps; step++) {
            zg_batch b;
            if (setting_batch(&e, step, &b, err)) return 1;
            zg_plan p;
            zg_plan_init(&p);
            zg_error perr = {0};
            int ok = zg_planner_plan(&zl, &b, &p, &perr) == ZG_OK;
            char *line = golden_line(clusters[c], "zellige", step, ok ? &p : NULL, &perr);
            fprintf(out, "%s\n", line);
            free(line);
            zg_plan_free(&p);
            // the baselines on every third batch (they keep little state)
            for (int k = 0; k < N_BASELINES && step % 3 == 0 && e.cluster.world_size < 64; k++) {
                zg_planner bl;
                if (zg_planner_init(&bl, baselines[k], &e.ctx, err)) return 1;
                zg_plan_init(&p);
                ok = zg_planner_plan(&bl, &b, &p, &perr) == ZG_OK;
                line = golden_line(clusters[c], baselines[k], step, ok ? &p : NULL, &perr);
                fprintf(out, "%s\n", line);
                free(line);
                zg_plan_free(&p);
                zg_planner_free(&bl);
            }
            zg_batch_free(&b);
        }
        zg_planner_free(&zl);
        env_free(&e);
    }
    return 0;
}

ZG_TEST(plans_match_golden_file) {
    zg_error err = {0};
    char *got = NULL;
    size_t got_len = 0;
    FILE *f = open_memstream(&got, &got_len);
    CHECK(f);
    int bad = all_lines(f, &err);
    fclose(f);
    CHECK_MSG(!bad, "planning failed: %s", err.msg);
    FILE *g = fopen(GOLDEN, "r");
    CHECK_MSG(g, "cannot open %s (run from the repository root)", GOLDEN);
    // compare line by line so a failure names the first plan that changed
    char *want = NULL;
    size_t cap = 0;
    ssize_t n;
    const char *at = got;
    int line = 0, diff = 0;
    while ((n = getline(&want, &cap, g)) > 0) {
        line++;
        const char *nl = strchr(at, '\n');
        size_t len = nl ? (size_t)(nl - at + 1) : strlen(at);
        if (len != (size_t)n || memcmp(at, want, len)) {
            if (!diff) fprintf(stderr, "  first changed plan: line %d: %.160s\n", line, want);
            diff++;
        }
        at += len;
    }
    fclose(g);
    free(want);
    int extra = *at != '\0';
    free(got);
    CHECK_MSG(!diff && !extra && line > 0, "%d of %d plans differ from %s%s", diff, line, GOLDEN,
              extra ? " (and the planners wrote more plans than it holds)" : "");
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "--write")) {
        zg_error err = {0};
        FILE *f = fopen(argv[2], "w");
        if (!f || all_lines(f, &err)) {
            fprintf(stderr, "test_plan_golden: %s\n", f ? err.msg : "cannot write the file");
            return 1;
        }
        return fclose(f) != 0;
    }
    int failed = 0;
    zgtest_plans_match_golden_file(&failed);
    printf("%s plans_match_golden_file\n", failed ? "FAIL" : "PASS");
    return failed;
}
