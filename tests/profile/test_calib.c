// test_calib.c — prices in context without timing: NNLS against a brute-force active-set
// reference, the mixed calibration design (rank 0 critical by construction, coverage, origin
// layout) and exact recovery of prices from synthetic additive makespans.
#include <math.h>

#include "profile/profile.h"
#include "zgtest.h"

// least squares on the columns in `use` (normal equations, Gaussian elimination); returns the
// objective, or INFINITY if singular; x gets 0 outside `use`
static double ls_subset(const double *A, const double *y, int rows, int cols, unsigned use,
                        double *x) {
    double G[8][9] = {{0}};
    int idx[8], k = 0;
    for (int j = 0; j < cols; j++)
        if (use >> j & 1) idx[k++] = j;
    for (int a = 0; a < k; a++) {
        for (int b = 0; b < k; b++)
            for (int i = 0; i < rows; i++) G[a][b] += A[i * cols + idx[a]] * A[i * cols + idx[b]];
        for (int i = 0; i < rows; i++) G[a][k] += A[i * cols + idx[a]] * y[i];
    }
    for (int c = 0; c < k; c++) {
        int p = c;
        for (int r = c + 1; r < k; r++)
            if (fabs(G[r][c]) > fabs(G[p][c])) p = r;
        if (fabs(G[p][c]) < 1e-12) return INFINITY;
        for (int j = 0; j <= k; j++) {
            double t = G[c][j];
            G[c][j] = G[p][j], G[p][j] = t;
        }
        for (int r = 0; r < k; r++) {
            if (r == c) continue;
            double f = G[r][c] / G[c][c];
            for (int j = c; j <= k; j++) G[r][j] -= f * G[c][j];
        }
    }
    for (int j = 0; j < cols; j++) x[j] = 0;
    for (int a = 0; a < k; a++) x[idx[a]] = G[a][k] / G[a][a];
    double s = 0;
    for (int i = 0; i < rows; i++) {
        double f = 0;
        for (int j = 0; j < cols; j++) f += A[i * cols + j] * x[j];
        s += (f - y[i]) * (f - y[i]);
    }
    return s;
}

ZG_TEST(nnls_matches_brute_force_active_sets) {
    zg_rng r;
    zg_rng_init(&r, 7);
    enum { R = 14, C = 5 };
    for (int trial = 0; trial < 40; trial++) {
        double A[R * C], y[R], x[C], best[C], xs[C];
        for (int i = 0; i < R; i++) {
            A[i * C] = 1;  // free intercept column
            for (int j = 1; j < C; j++) A[i * C + j] = (double)zg_rng_int(&r, 0, 3);
            y[i] = 2 * zg_rng_uniform(&r) - 0.5;
        }
        uint8_t fr[C] = {1, 0, 0, 0, 0};
        CHECK(zg_profile_nnls(A, y, R, C, fr, x, NULL) == ZG_OK);
        // reference: the best feasible least-squares solution over all subsets with the
        // intercept always in
        double obj = INFINITY;
        for (unsigned use = 1; use < (1u << C); use += 2) {
            double o = ls_subset(A, y, R, C, use, xs);
            int ok = 1;
            for (int j = 1; j < C; j++) ok &= xs[j] >= -1e-12;
            if (ok && o < obj) {
                obj = o;
                for (int j = 0; j < C; j++) best[j] = xs[j];
            }
        }
        for (int j = 1; j < C; j++) CHECK(x[j] >= 0);
        for (int j = 0; j < C; j++) CHECK_NEAR(x[j], best[j], 1e-7, 1e-6);
    }
    zg_error e = {0};
    double x1;
    CHECK(zg_profile_nnls(NULL, NULL, 0, 1, NULL, &x1, &e) == ZG_ERR_INVALID);
}

// rank r's whole-sequence multiset and split participation from the plan
static int design_ok(const zg_calib *c, const zg_model *m, const zg_catalog *cat,
                     int32_t world) {
    int32_t U = c->n_unknowns;
    for (int32_t p = 0; p < c->n_plans; p++) {
        const zg_profile_item *it = &c->items[p];
        // count[r][u]: what rank r holds of unknown u
        double cnt[4][64] = {{0}};
        if (U > 64 || world > 4) return 0;
        for (int64_t j = 0; j < it->plan.n; j++) {
            const zg_placement *pp = &it->plan.p[j];
            const zg_seq *s = &it->batch.seqs[pp->seq];
            if (s->origin_rank != (int32_t)(s->id % world)) return 0;
            int32_t u = -1;
            for (int32_t k = 0; k < U; k++)
                if (zg_config_eq(c->unk_cfg[k], pp->config) &&
                    cat->buckets[c->unk_bucket[k]].tokens == s->tokens &&
                    !strcmp(cat->buckets[c->unk_bucket[k]].name, s->bucket))
                    u = k;
            if (u < 0) return 0;
            for (int32_t k = 0; k < pp->n_ranks; k++) cnt[pp->ranks[k]][u] += 1;
        }
        for (int32_t u = 0; u < U; u++) {
            if (cnt[0][u] != c->counts[(size_t)p * U + u]) return 0;  // rows = rank 0's counts
            for (int32_t r = 1; r < world; r++)
                if (cnt[r][u] > cnt[0][u]) return 0;  // sub-multiset of rank 0's work
        }
        if (zg_plan_validate(&it->plan, &it->batch, m, NULL)) return 0;
    }
    return 1;
}

ZG_TEST(calib_design_rank0_critical_and_covering) {
    zg_model m;
    zg_model_preset("tiny", &m, NULL);
    zg_catalog cat;
    CHECK(zg_profile_cpu_catalog(&m, &cat, NULL) == ZG_OK);
    for (int32_t world = 1; world <= 3; world++) {
        zg_config *cfgs = NULL;
        int32_t nc = 0;
        CHECK(zg_config_enumerate(&m, world, &cfgs, &nc, NULL) == ZG_OK);
        zg_calib_opts o;
        zg_calib_opts_default(&o);
        zg_calib c;
        CHECK(zg_calib_design(&m, world, &cat, cfgs, nc, &o, &c, NULL) == ZG_OK);
        int32_t legal = 0;
        for (int32_t b = 0; b < cat.n; b++)
            for (int32_t k = 0; k < nc; k++)
                legal += !zg_config_check(&m, world, cfgs[k], cat.buckets[b].tokens, NULL);
        CHECK_EQ_INT(c.n_unknowns, legal);
        CHECK_EQ_INT(c.n_plans, 3 * legal);
        CHECK(design_ok(&c, &m, &cat, world));
        for (int32_t u = 0; u < c.n_unknowns; u++) {  // every unknown is measured
            double seen = 0;
            for (int32_t p = 0; p < c.n_plans; p++) seen += c.counts[(size_t)p * c.n_unknowns + u];
            CHECK_MSG(seen >= 1, "world %d: unknown %d never appears", world, u);
        }
        // synthetic additive makespans (rank 0 critical): the fit recovers them exactly
        size_t np = (size_t)(c.n_plans > 0 ? c.n_plans : 1);
        size_t nu = (size_t)(c.n_unknowns > 0 ? c.n_unknowns : 1);
        double *t = calloc(np, sizeof *t), *truth = calloc(nu, sizeof *truth);
        double *fit = calloc(nu, sizeof *fit);
        for (int32_t u = 0; u < c.n_unknowns; u++)
            truth[u] = 1e-3 * (1 + (double)cat.buckets[c.unk_bucket[u]].tokens /
                                       zg_config_degree(c.unk_cfg[u]));
        for (int32_t p = 0; p < c.n_plans; p++) {
            t[p] = 0.02;
            for (int32_t u = 0; u < c.n_unknowns; u++)
                t[p] += c.counts[(size_t)p * c.n_unknowns + u] * truth[u];
        }
        double fixed = -1, rmse = -1, mr = -1;
        CHECK(zg_calib_fit(&c, t, &fixed, fit, &rmse, &mr, NULL) == ZG_OK);
        CHECK_NEAR(fixed, 0.02, 1e-9, 1e-7);
        for (int32_t u = 0; u < c.n_unknowns; u++) CHECK_NEAR(fit[u], truth[u], 1e-9, 1e-6);
        CHECK(rmse < 1e-9 && mr < 1e-7);
        // a negative true intercept: the constrained fit keeps every coefficient >= 0
        for (int32_t p = 0; p < c.n_plans; p++) t[p] -= 0.02 + 0.05;
        CHECK(zg_calib_fit(&c, t, &fixed, fit, NULL, NULL, NULL) == ZG_OK);
        CHECK(fixed >= 0);
        for (int32_t u = 0; u < c.n_unknowns; u++) CHECK(fit[u] >= 0);
        // hybrid: base prices corrected by scale 0.8 and offsets -1 ms (whole), +3 ms (split)
        for (int32_t p = 0; p < c.n_plans; p++) {
            t[p] = 0.015;
            for (int32_t u = 0; u < c.n_unknowns; u++) {
                double v = 0.8 * truth[u] + (zg_config_is_whole(c.unk_cfg[u]) ? -1e-3 : 3e-3);
                t[p] += c.counts[(size_t)p * c.n_unknowns + u] * v;
            }
        }
        double coef[3] = {0, 0, 0};
        CHECK(zg_calib_fit_hybrid(&c, t, truth, &fixed, coef, fit, &rmse, &mr, NULL) == ZG_OK);
        CHECK_NEAR(fixed, 0.015, 1e-9, 1e-6);
        CHECK_NEAR(coef[0], 0.8, 1e-9, 1e-6);
        CHECK_NEAR(coef[1], -1e-3, 1e-9, 1e-6);
        if (world > 1) CHECK_NEAR(coef[2], 3e-3, 1e-9, 1e-6);
        for (int32_t u = 0; u < c.n_unknowns; u++)
            CHECK_NEAR(fit[u], 0.8 * truth[u] + (zg_config_is_whole(c.unk_cfg[u]) ? -1e-3 : 3e-3),
                       1e-9, 1e-6);
        CHECK(rmse < 1e-9);
        // the same design is drawn again from the same seed
        zg_calib c2;
        CHECK(zg_calib_design(&m, world, &cat, cfgs, nc, &o, &c2, NULL) == ZG_OK);
        CHECK(c2.n_plans == c.n_plans &&
              !memcmp(c2.counts, c.counts, sizeof *c.counts * (size_t)c.n_plans * c.n_unknowns));
        zg_calib_free(&c2);
        free(t), free(truth), free(fit), free(cfgs);
        zg_calib_free(&c);
    }
    { // --calib-min-splits: 0 lets plans hold no split sequence, 2 makes each hold 2 or 3
        zg_config *cfgs = NULL;
        int32_t nc = 0;
        CHECK(zg_config_enumerate(&m, 2, &cfgs, &nc, NULL) == ZG_OK);
        for (int32_t lo = 0; lo <= 2; lo += 2) {
            zg_calib_opts o;
            zg_calib_opts_default(&o);
            o.min_splits = lo, o.plans = 40;
            zg_calib c;
            CHECK(zg_calib_design(&m, 2, &cat, cfgs, nc, &o, &c, NULL) == ZG_OK);
            CHECK(design_ok(&c, &m, &cat, 2));
            int32_t fewest = 1000;
            for (int32_t p = 0; p < c.n_plans; p++) {
                int32_t n = 0;
                for (int32_t u = 0; u < c.n_unknowns; u++)
                    if (!zg_config_is_whole(c.unk_cfg[u]))
                        n += (int32_t)c.counts[(size_t)p * c.n_unknowns + u];
                fewest = n < fewest ? n : fewest;
            }
            CHECK_MSG(fewest == lo, "min_splits %d: fewest splits in a plan %d", lo, fewest);
            zg_calib_free(&c);
        }
        free(cfgs);
    }
    {  // partial mirroring keeps rank 0 critical too
        zg_config *cfgs = NULL;
        int32_t nc = 0;
        CHECK(zg_config_enumerate(&m, 3, &cfgs, &nc, NULL) == ZG_OK);
        zg_calib_opts o;
        zg_calib_opts_default(&o);
        o.mirror = 0.3, o.plans = 20, o.seed = 9;
        zg_calib c;
        CHECK(zg_calib_design(&m, 3, &cat, cfgs, nc, &o, &c, NULL) == ZG_OK);
        CHECK(c.n_plans == 20 && design_ok(&c, &m, &cat, 3));
        zg_calib_free(&c);
        free(cfgs);
    }
    zg_calib_opts bad;
    zg_calib_opts_default(&bad);
    bad.mirror = 2;
    zg_calib c;
    zg_config whole = {1, 1, 1};
    zg_error e = {0};
    CHECK(zg_calib_design(&m, 2, &cat, &whole, 1, &bad, &c, &e) == ZG_ERR_INVALID);
    CHECK(strstr(e.msg, "mirror") != NULL);
    zg_catalog_free(&cat);
}

ZG_TEST(method_names) {
    zg_profile_method mm;
    CHECK(zg_profile_method_parse("single", &mm, NULL) == ZG_OK && mm == ZG_PROFILE_SINGLE);
    CHECK(zg_profile_method_parse("mixed", &mm, NULL) == ZG_OK && mm == ZG_PROFILE_MIXED);
    CHECK(zg_profile_method_parse("hybrid", &mm, NULL) == ZG_OK && mm == ZG_PROFILE_HYBRID);
    CHECK_STR(zg_profile_method_name(ZG_PROFILE_HYBRID), "hybrid");
    zg_error e = {0};
    CHECK(zg_profile_method_parse("guess", &mm, &e) == ZG_ERR_INVALID);
    CHECK_STR(zg_profile_method_name(ZG_PROFILE_MIXED), "mixed");
    zg_profile_opts o;
    zg_profile_opts_default(&o);
    CHECK(o.method == ZG_PROFILE_HYBRID && o.calib.images == 12 && o.calib.mirror == 1);
}

ZG_TEST_MAIN()
