// test_zellige_cbc.c — cross-checks the exact joint optimum of the ECF branch-and-bound against
// COIN-OR CBC (an independent MIP solver, through its C interface) on small instances. The MIP
// is the ECF model itself: integer counts u_{g,o} in [0, n_g], sum_o u_{g,o} = n_g, per-rank
// load sum p_o u_{g,o} <= T and memory sum m_o u_{g,o} <= cap, minimise T. Built only when the
// Makefile found CBC (ZG_HAVE_CBC); otherwise the case reports that it was skipped.
#include "zgtest.h"
#include "zel_testlib.h"

#ifdef ZG_HAVE_CBC
#include <Cbc_C_Interface.h>

// Optimal makespan of pr by CBC (ECF MIP). Returns -1 if CBC did not prove optimality.
static double cbc_optimum(const zg_problem *pr) {
    Cbc_Model *m = Cbc_newModel();
    Cbc_setLogLevel(m, 0);
    int32_t N = pr->world_size;
    int ncol = 1;
    Cbc_addCol(m, "T", 0, 1e30, 1.0, 0, 0, NULL, NULL);
    int *first = calloc((size_t)pr->n_groups + 1, sizeof(int));
    for (int32_t g = 0; g < pr->n_groups; g++) {
        first[g] = ncol;
        for (int32_t j = 0; j < pr->groups[g].n_opts; j++, ncol++)
            Cbc_addCol(m, "", 0, (double)pr->groups[g].count, 0.0, 1, 0, NULL, NULL);
    }
    int *cols = calloc((size_t)ncol, sizeof(int));
    double *coef = calloc((size_t)ncol, sizeof(double));
    for (int32_t g = 0; g < pr->n_groups; g++) {  // every unit placed
        int nz = 0;
        for (int32_t j = 0; j < pr->groups[g].n_opts; j++) cols[nz] = first[g] + j, coef[nz++] = 1;
        Cbc_addRow(m, "", nz, cols, coef, 'E', (double)pr->groups[g].count);
    }
    for (int32_t r = 0; r < N; r++) {
        for (int pass = 0; pass < 2; pass++) {  // time then memory
            int nz = 0;
            if (pass == 0) cols[nz] = 0, coef[nz++] = -1;
            for (int32_t g = 0; g < pr->n_groups; g++)
                for (int32_t j = 0; j < pr->groups[g].n_opts; j++) {
                    const zg_option *o = &pr->groups[g].opts[j];
                    if (r < o->start || r >= o->start + zg_option_degree(o)) continue;
                    cols[nz] = first[g] + j, coef[nz++] = pass == 0 ? o->time : o->mem;
                }
            Cbc_addRow(m, "", nz, cols, coef, 'L', pass == 0 ? 0 : pr->mem_room);
        }
    }
    Cbc_setAllowableGap(m, 0);
    Cbc_setAllowableFractionGap(m, 0);
    Cbc_solve(m);
    double v = Cbc_isProvenOptimal(m) ? Cbc_getObjValue(m) : -1;
    Cbc_deleteModel(m);
    free(first), free(cols), free(coef);
    return v;
}

ZG_TEST(joint_optimum_matches_cbc) {
    zg_rng rng = trng(2024);
    int checked = 0;
    for (int trial = 0; trial < 16; trial++) {
        int32_t N = (int32_t)zg_rng_int(&rng, 2, 8);
        int32_t ng = (int32_t)zg_rng_int(&rng, 1, 3);
        tgroup tg[3];
        for (int32_t g = 0; g < ng; g++) {
            tg[g].count = zg_rng_int(&rng, 1, 4);
            tg[g].w = zg_rng_range(&rng, 1.0, 10.0);
            tg[g].comm = zg_rng_range(&rng, 0.0, 0.3);
            tg[g].mem = zg_rng_range(&rng, 0.3, 2.0);
        }
        zg_problem pr = tprob_make(N, zg_rng_range(&rng, 2.0, 5.0), tg, ng, N,
                                   (int)zg_rng_int(&rng, 0, 1));
        int ok = 1;
        for (int32_t g = 0; g < ng; g++) ok &= pr.groups[g].n_opts > 0;
        if (!ok) {
            tprob_free(&pr);
            continue;
        }
        int32_t idx[3] = {0, 1, 2};
        zg_error err;
        zel_model m;
        CHECK_OK(zel_model_build(&pr, idx, ng, NULL, NULL, &m, &err), &err);
        zel_sol s;
        zel_sol_alloc(&m, &s, &err);
        zel_stats st;
        CHECK_OK(zel_solve_minmax(&m, &s, NULL, &st, &err), &err);
        CHECK(st.complete);
        double ref = cbc_optimum(&pr);
        if (s.T == INFINITY) {
            CHECK(ref < 0 || ref > 1e29);  // CBC: infeasible (not proven optimal)
        } else {
            CHECK(ref >= 0);
            CHECK_MSG(fabs(s.T - ref) <= 1e-6 * ref, "trial %d: ours %.9g, CBC %.9g", trial,
                      s.T, ref);
            checked++;
        }
        zel_sol_free(&s);
        zel_model_free(&m);
        tprob_free(&pr);
    }
    CHECK(checked >= 6);
}
#else
ZG_TEST(joint_optimum_matches_cbc) { printf("  skipped: built without CBC (ZG_HAVE_CBC)\n"); }
#endif

ZG_TEST_MAIN()
