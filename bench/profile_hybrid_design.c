// profile_hybrid_design.c — how well the hybrid profile's correction (zg_calib_fit_hybrid) predicts
// a step, per calibration design, when its measurements are noisy: a Monte Carlo on the
// profiler's own design (zg_calib_design) for a model, catalog and world size.
//
//   build/bin/bench_profile_hybrid_design [--model M] [--catalog K] [--world N] [--trials T]
//
// Truth: a sequence's in-context price is a·single + b_class (a = 1.15, b_whole = -0.3 ms,
// b_split = -5 ms, of the size the profiler fits on this VM) over single prices that grow with
// tokens per rank, plus a fixed 7.4 ms per step. Measured: every single price and every
// calibration makespan times (1 + noise·N(0,1)). Scored: the relative error of the fitted
// prices' prediction of two steps a planner produces for a mix: "whole" (the critical rank holds
// 70 images, 4 videos' worth of whole videos: what dp and most zellige plans hold) and "split"
// (3 split sequences and 12 whole images). Designs: the calibration images per plan, and whether
// a plan may hold no split sequence (min_splits 0), which makes the fixed time identifiable.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "cost/cost.h"
#include "model/model.h"
#include "profile/profile.h"

static double gauss(zg_rng *r) {
    double u = zg_rng_uniform(r), v = zg_rng_uniform(r);
    return sqrt(-2 * log(u > 0 ? u : 1e-300)) * cos(2 * M_PI * v);
}

// the true single price of unknown u (seconds): 1 ms + per-rank token and attention terms
static double single_true(const zg_calib *c, const zg_catalog *cat, int32_t u) {
    double L = (double)cat->buckets[c->unk_bucket[u]].tokens;
    int32_t d = zg_config_degree(c->unk_cfg[u]);
    return 1e-3 + 2.5e-4 * L / d + 2.5e-7 * L * L / d + (d > 1 ? 2e-3 : 0);
}

typedef struct {
    double mae[2], worst[2];
} score;

static const double A = 1.15, B_WHOLE = -0.3e-3, B_SPLIT = -5e-3, FIXED = 7.4e-3;

static double in_context(double single, int whole) {
    double p = A * single + (whole ? B_WHOLE : B_SPLIT);
    return p > 0 ? p : 0;
}

// the scored step's rank-0 counts: k = 0 "whole", 1 "split"
static void scored_counts(const zg_calib *c, const zg_catalog *cat, int32_t k, double *n) {
    int32_t U = c->n_unknowns, n_img = 0, n_vid = 0, n_split = 0;
    for (int32_t u = 0; u < U; u++) {
        int whole = zg_config_is_whole(c->unk_cfg[u]);
        int video = cat->buckets[c->unk_bucket[u]].kind == ZG_SEQ_VIDEO;
        n_img += whole && !video, n_vid += whole && video, n_split += !whole;
    }
    for (int32_t u = 0; u < U; u++) {
        int whole = zg_config_is_whole(c->unk_cfg[u]);
        int video = cat->buckets[c->unk_bucket[u]].kind == ZG_SEQ_VIDEO;
        if (k == 0) n[u] = whole ? (video ? 4.0 / n_vid : 70.0 / n_img) : 0;
        else n[u] = whole ? (video ? 0 : 12.0 / n_img) : (n_split ? 3.0 / n_split : 0);
    }
}

static zg_status run(const zg_model *m, const zg_catalog *cat, int32_t world, const zg_config *cfgs,
                     int32_t nc, int32_t images, int32_t min_splits, double noise, int32_t trials,
                     score *out, zg_error *err) {
    zg_calib_opts o;
    zg_calib_opts_default(&o);
    // the profiler's hybrid rule: max(24, legal (bucket, config) pairs) plans
    int32_t legal = 0;
    for (int32_t b = 0; b < cat->n; b++)
        for (int32_t k = 0; k < nc; k++)
            legal += zg_config_degree(cfgs[k]) <= world &&
                     !zg_config_check(m, world, cfgs[k], cat->buckets[b].tokens, NULL);
    o.images = images, o.min_splits = min_splits, o.plans = legal > 24 ? legal : 24;
    zg_calib c;
    zg_status st = zg_calib_design(m, world, cat, cfgs, nc, &o, &c, err);
    if (st) return st;
    int32_t U = c.n_unknowns, P = c.n_plans;
    double *s = calloc((size_t)U, sizeof *s), *base = calloc((size_t)U, sizeof *base);
    double *t = calloc((size_t)P, sizeof *t), *fit = calloc((size_t)U, sizeof *fit);
    double *n = calloc((size_t)U * 2, sizeof *n);
    if (!s || !base || !t || !fit || !n) st = zg_error_set(err, ZG_ERR_NOMEM, "out of memory");
    memset(out, 0, sizeof *out);
    for (int32_t u = 0; !st && u < U; u++) s[u] = single_true(&c, cat, u);
    for (int32_t k = 0; !st && k < 2; k++) scored_counts(&c, cat, k, n + (size_t)k * U);
    zg_rng r;
    zg_rng_init(&r, 7);
    for (int32_t it = 0; !st && it < trials; it++) {
        for (int32_t u = 0; u < U; u++) base[u] = fmax(0, s[u] * (1 + noise * gauss(&r)));
        for (int32_t p = 0; p < P; p++) {
            double y = FIXED;
            for (int32_t u = 0; u < U; u++)
                y += c.counts[(size_t)p * U + u] * in_context(s[u], zg_config_is_whole(c.unk_cfg[u]));
            t[p] = y * (1 + noise * gauss(&r));
        }
        double fixed, coef[3];
        if ((st = zg_calib_fit_hybrid(&c, t, base, &fixed, coef, fit, NULL, NULL, err))) break;
        for (int32_t k = 0; k < 2; k++) {
            double truth = FIXED, pred = fixed;
            for (int32_t u = 0; u < U; u++) {
                double cnt = n[(size_t)k * U + u];
                truth += cnt * in_context(s[u], zg_config_is_whole(c.unk_cfg[u]));
                pred += cnt * fit[u];
            }
            double e = fabs(pred / truth - 1);
            out->mae[k] += e / trials;
            out->worst[k] = fmax(out->worst[k], e);
        }
    }
    free(s), free(base), free(t), free(fit), free(n);
    zg_calib_free(&c);
    return st;
}

int main(int argc, char **argv) {
    const char *model = "configs/cpu-small.json", *catalog = "mix:15:256";
    int32_t world = 2, trials = 400;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--model")) model = argv[i + 1];
        else if (!strcmp(argv[i], "--catalog")) catalog = argv[i + 1];
        else if (!strcmp(argv[i], "--world")) world = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--trials")) trials = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "usage: %s [--model M] [--catalog K] [--world N] [--trials T]\n",
                    argv[0]);
            return 2;
        }
    }
    if (argc % 2 == 0 || world < 1 || trials < 1) {
        fprintf(stderr, "usage: %s [--model M] [--catalog K] [--world N>=1] [--trials T>=1]\n",
                argv[0]);
        return 2;
    }
    zg_error err = {0};
    zg_model m;
    zg_catalog cat = {0};
    zg_config *cfgs = NULL;
    int32_t nc = 0;
    if (zg_model_load(model, &m, &err) || zg_profile_catalog_load(catalog, &m, &cat, &err) ||
        zg_config_enumerate(&m, world, &cfgs, &nc, &err))
        return zb_fail("bench_profile_hybrid_design", &err);
    printf("hybrid fit vs its calibration design: %s, catalog %s, %d ranks, max(24, pairs) "
           "plans, %d trials\n",
           m.name, catalog, world, trials);
    printf("%-6s %-8s %-6s %18s %18s\n", "noise", "images", "min_sp", "whole MAE (worst)",
           "split MAE (worst)");
    const double noises[3] = {0.05, 0.10, 0.20};
    const int32_t designs[4][2] = {{12, 1}, {12, 0}, {40, 0}, {80, 0}};
    for (int32_t a = 0; a < 3; a++)
        for (int32_t d = 0; d < 4; d++) {
            score sc;
            if (run(&m, &cat, world, cfgs, nc, designs[d][0], designs[d][1], noises[a], trials,
                    &sc, &err))
                return zb_fail("bench_profile_hybrid_design", &err);
            printf("%-6.2f %-8d %-6d %9.1f%% (%4.0f%%) %9.1f%% (%4.0f%%)\n", noises[a],
                   designs[d][0], designs[d][1], 100 * sc.mae[0], 100 * sc.worst[0],
                   100 * sc.mae[1], 100 * sc.worst[1]);
        }
    free(cfgs);
    zg_catalog_free(&cat);
    return 0;
}
