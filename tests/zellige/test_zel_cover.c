// test_zel_cover.c — the cover bound of the memory-aware stage-1 model (exact/bound_cover.c) and
// the reflection symmetry: both checked against brute force on small hand-built models.
#include <math.h>
#include <stdio.h>

#include "zgtest.h"
#include "zel_testlib.h"

// Random memory-aware model on 2-4 ranks with 1-2 groups of 1-2 units, up to max_units units
// (tsmall_model); 0 when not used.
static int cov_model(zg_rng *rng, tmodel *t, int64_t max_units) {
    return tsmall_model(rng, (tsmall){2, 2, 2, 1.5, max_units, TSMALL_MEM}, t);
}

// The bound never exceeds what a completion needs: at every node (a random prefix of units),
// for T = the best completion's objective, sum L + A + bound <= N T (uniform lambda and with
// per-rank multipliers). Also checks it is not vacuous: it must beat the plain area term and
// prove some T below the optimum infeasible.
ZG_TEST(cover_bound_never_exceeds_brute_force) {
    zg_rng rng = trng(11);
    int tested = 0, stronger = 0, proves = 0;
    for (int trial = 0; trial < 300; trial++) {
        tmodel t;
        if (!cov_model(&rng, &t, 4)) continue;
        const zel_model *m = &t.m;
        int32_t N = m->n_ranks;
        int32_t *opt = calloc((size_t)m->n_units + 1, sizeof(int32_t));
        double *scr = malloc(sizeof(double) * zel_cover_scratch(m));
        double *L = calloc((size_t)N, sizeof(double)), *H = calloc((size_t)N, sizeof(double));
        for (int rep = 0; rep < 4; rep++) {
            // random prefix of k units, group order, non-decreasing options inside a group
            tnode nd = tnode_rand(&rng, m, opt, L, H);
            if (nd.Tc == INFINITY) continue;
            for (int it = 0; it < 2; it++) {
                int32_t n_iter = it ? 30 : 0;
                for (int s = 0; s < 2; s++) {
                    double T = nd.Tc * (s ? 1.01 : 1.0);
                    double need =
                        zel_cover_bound(m, L, H, T, nd.gi, nd.rem, nd.lo, INFINITY, n_iter, scr);
                    CHECK_MSG(nd.sumL + m->extra_area + need <= (double)N * T * (1 + 1e-9),
                              "trial %d k %lld iter %d: %.12g + %.12g + %.12g > %d x %.12g",
                              trial, (long long)nd.k, n_iter, nd.sumL, m->extra_area, need, N, T);
                    if (need > nd.area * (1 + 1e-9)) stronger++;
                }
                double T = nd.Tc * (1 - 1e-3);
                double need =
                    zel_cover_bound(m, L, H, T, nd.gi, nd.rem, nd.lo, INFINITY, n_iter, scr);
                if (nd.sumL + m->extra_area + need > (double)N * T) proves++;
            }
            tested++;
        }
        if (m->n_units > 0) {
            double Tstar = tbest_completion(m, opt, 0, 0, 0);
            if (Tstar < INFINITY) {
                double rb = zel_cover_root_bound(m, 0, Tstar);
                CHECK_MSG(rb <= Tstar * (1 + 1e-9), "trial %d: root %.12g > optimum %.12g",
                          trial, rb, Tstar);
            }
        }
        free(opt), free(scr), free(L), free(H);
        tmodel_free(&t);
    }
    printf("  cover bound: %d nodes, stronger than area %d, proves T*(1-1e-3) infeasible %d\n",
           tested, stronger, proves);
    CHECK(tested >= 200);
    CHECK(stronger > 0);
    CHECK(proves > 0);
}

// The exact search (gap 0) on memory-aware models equals brute force. (no_cover = 0 and 1 run
// the same search since the ninth pass — the cover bound is no longer used per node — so the
// two passes are one check twice; the node counts printed show it.)
ZG_TEST(search_with_cover_bound_exact) {
    zg_rng rng = trng(23);
    int tested = 0;
    int64_t nodes_on = 0, nodes_off = 0;
    for (int trial = 0; trial < 200; trial++) {
        tmodel t;
        if (!cov_model(&rng, &t, 5)) continue;
        double best;
        int64_t best_k;
        tbrute_lex(&t.m, 0, &best, &best_k);
        zg_error err;
        for (int off = 0; off < 2; off++) {
            zel_sol sol;
            zel_limits lim = {0, 0, 0, off, 0};
            zel_stats st;
            CHECK_OK(tminmax(&t.m, &lim, &sol, &st, &err), &err);
            CHECK(st.complete);
            if (best == INFINITY)
                CHECK(sol.T == INFINITY);
            else
                CHECK_MSG(fabs(sol.T - best) <= 1e-9 * best, "trial %d off %d: %.12g vs %.12g",
                          trial, off, sol.T, best);
            if (off)
                nodes_off += st.nodes;
            else
                nodes_on += st.nodes;
            zel_sol_free(&sol);
        }
        tested++;
        tmodel_free(&t);
    }
    printf("  search: %d models, %lld nodes with the cover bound, %lld without\n", tested,
           (long long)nodes_on, (long long)nodes_off);
    CHECK(tested >= 40);
}

// Sliding blocks break every tile swap but not the reflection r -> N-1-r: it is detected, and
// the search with it finds the same optimum (plain and memory-aware objectives) as without.
ZG_TEST(reflection_symmetry_keeps_optimum) {
    zg_rng rng = trng(5);
    int64_t nodes[2] = {0, 0};  // with, without
    for (int trial = 0; trial < 30; trial++) {
        tgroup tg[3];
        for (int g = 0; g < 3; g++) tg[g] = tgroup_rand(&rng, zg_rng_int(&rng, 1, 2));
        int32_t N = (int32_t)zg_rng_int(&rng, 5, 7);
        zg_problem pr = tprob_make(N, 4.0, tg, 3, 4, 1);
        double extra = 0, fill = 0;
        if (trial % 2) {
            extra = zg_rng_range(&rng, 2.0, 20.0);
            fill = zg_rng_range(&rng, 0.2, 0.5) * 4.0 * N;
        }
        tsym_check(zg_failed_, &pr, extra, fill, 1, trial, nodes);
        tprob_free(&pr);
        if (*zg_failed_) return;
    }
    printf("  reflection: %lld nodes with, %lld without\n", (long long)nodes[0],
           (long long)nodes[1]);
    CHECK(nodes[0] < nodes[1]);
}

// Lexicographic stage 1 on memory-aware models (min objective, then min splits within
// (1 + eps)): both phases equal brute force. Phase 2 uses static area / fluid terms and scans
// only the whole blocks for its split bound; this checks that it stays exact.
ZG_TEST(lexicographic_fluid_exact_vs_brute_force) {
    zg_rng rng = trng(31);
    int tested = 0, with_splits = 0;
    for (int trial = 0; trial < 200; trial++) {
        tmodel t;
        if (!cov_model(&rng, &t, 5)) continue;
        double eps = trial % 3 == 0 ? 0.0 : zg_rng_range(&rng, 0.0, 0.05);
        double best;
        int64_t bestK;
        tbrute_lex(&t.m, eps, &best, &bestK);
        zg_error err;
        zel_sol sol;
        CHECK_OK(zel_sol_alloc(&t.m, &sol, &err), &err);
        zel_limits lim = {0, 0, 0, 0, 0};
        zel_stage1 st;
        zg_status rc = zel_anchor_solve(&t.m, eps, &lim, NULL, &sol, &st, &err);
        if (best == INFINITY) {
            CHECK(rc == ZG_ERR_INFEASIBLE);
        } else {
            CHECK_OK(rc, &err);
            CHECK(st.optimal);
            double T;
            int64_t K;
            CHECK(zel_sol_eval(&t.m, sol.opt, NULL, NULL, &T, &K));
            CHECK_MSG(T <= (1 + eps) * best * (1 + 1e-9), "trial %d: T %.12g vs %.12g", trial,
                      T, best);
            CHECK_MSG(K == bestK, "trial %d: K %lld vs brute %lld", trial, (long long)K,
                      (long long)bestK);
            with_splits += bestK > 0;
            tested++;
        }
        zel_sol_free(&sol);
        tmodel_free(&t);
    }
    printf("  lexicographic: %d models, %d with splits at the optimum\n", tested, with_splits);
    CHECK(tested >= 40);
    CHECK(with_splits >= 5);
}

// The children's fluid bound computed incrementally (exact/bound_fluid.c) equals the direct
// zel_fluid_T_more on the child's ledgers, including infeasible (INFINITY) children.
ZG_TEST(child_fluid_bound_equals_direct) {
    zg_rng rng = trng(77);
    int compared = 0, infinite = 0;
    for (int trial = 0; trial < 200; trial++) {
        tmodel t;
        if (!cov_model(&rng, &t, 8)) continue;
        const zel_model *m = &t.m;
        int32_t N = m->n_ranks;
        double *L = calloc((size_t)N, sizeof(double)), *H = calloc((size_t)N, sizeof(double));
        for (int32_t r = 0; r < N; r++) {
            L[r] = zg_rng_range(&rng, 0.0, 8.0);
            H[r] = zg_rng_range(&rng, 0.0, trial % 3 ? 0.5 : 1.1) * m->mem_room;
        }
        zel_fluid_ctx f;
        CHECK(zel_fluid_ctx_init(&f, m));
        zel_fluid_ctx_set(&f, m, L, H);
        double more = trial % 2 ? zg_rng_range(&rng, 0.0, 5.0) : 0;
        for (int32_t g = 0; g < m->n_grps; g++)
            for (int32_t j = 0; j < m->grps[g].n_opts; j++) {
                const zel_opt *o = &m->grps[g].opts[j];
                double a = zel_fluid_T_child(&f, m, L, H, o, more);
                for (int32_t r = o->start; r < o->start + o->degree; r++)
                    L[r] += o->time, H[r] += o->mem;
                double b = zel_fluid_T_more(m, L, H, more);
                for (int32_t r = o->start; r < o->start + o->degree; r++)
                    L[r] -= o->time, H[r] -= o->mem;
                if (b == INFINITY) {
                    CHECK(a == INFINITY);
                    infinite++;
                } else {
                    CHECK_MSG(fabs(a - b) <= 1e-12 * fabs(b) + 1e-12,
                              "trial %d g %d o %d: %.17g vs %.17g", trial, g, j, a, b);
                }
                compared++;
            }
        zel_fluid_ctx_free(&f);
        free(L), free(H);
        tmodel_free(&t);
    }
    printf("  child fluid bound: %d options compared, %d infeasible\n", compared, infinite);
    CHECK(compared > 1000);
    CHECK(infinite > 0 && infinite < compared);
}

ZG_TEST_MAIN()
