// test_zel_cover.c — the cover bound of the memory-aware stage-1 model (exact/bound_cover.c) and
// the reflection symmetry: both checked against brute force on small hand-built models.
#include <math.h>
#include <stdio.h>

#include "zgtest.h"
#include "zel_testlib.h"

// Random memory-aware model on 2-4 ranks; returns 0 (and frees) when unusable.
static int cov_model(zg_rng *rng, zg_problem *pr, zel_model *m, int64_t max_units) {
    int32_t N = (int32_t)zg_rng_int(rng, 2, 4);
    int32_t ng = (int32_t)zg_rng_int(rng, 1, 2);
    tgroup tg[2];
    int64_t units = 0;
    for (int32_t g = 0; g < ng; g++) {
        tg[g] = tgroup_rand(rng, zg_rng_int(rng, 1, 2));
        units += tg[g].count;
    }
    double cap = zg_rng_range(rng, 1.5, 3.0);
    *pr = tprob_make(N, cap, tg, ng, N, (int)zg_rng_int(rng, 0, 1));
    int ok = units <= max_units;
    for (int32_t g = 0; g < ng; g++) ok &= pr->groups[g].n_opts > 0;
    int32_t idx[2] = {0, 1};
    zg_error err;
    if (!ok || zel_model_build(pr, idx, ng, NULL, NULL, m, &err)) {
        tprob_free(pr);
        return 0;
    }
    m->extra_area = zg_rng_range(rng, 1.0, 12.0);
    m->fill_mem = zg_rng_range(rng, 0.2, 0.5) * cap * N;
    return 1;
}

// The bound never exceeds what a completion needs: at every node (a random prefix of units),
// for T = the best completion's objective, sum L + A + bound <= N T (uniform lambda and with
// per-rank multipliers). Also checks it is not vacuous: it must beat the plain area term and
// prove some T below the optimum infeasible.
ZG_TEST(cover_bound_never_exceeds_brute_force) {
    zg_rng rng;
    zg_rng_init(&rng, 11);
    int tested = 0, stronger = 0, proves = 0;
    for (int trial = 0; trial < 300; trial++) {
        zg_problem pr;
        zel_model m;
        if (!cov_model(&rng, &pr, &m, 4)) continue;
        int32_t N = m.n_ranks;
        int32_t *opt = calloc((size_t)m.n_units + 1, sizeof(int32_t));
        double *scr = malloc(sizeof(double) * zel_cover_scratch(&m));
        double *L = calloc((size_t)N, sizeof(double)), *H = calloc((size_t)N, sizeof(double));
        for (int rep = 0; rep < 4; rep++) {
            // random prefix of k units, group order, non-decreasing options inside a group
            int64_t k = zg_rng_int(&rng, 0, m.n_units - 1);
            double sumL = trand_prefix(&rng, &m, k, opt, L, H);
            int32_t gi = m.grp_of[k];
            int32_t lo = k > 0 && m.grp_of[k - 1] == gi ? opt[k - 1] : 0;
            int64_t rem = m.unit0[gi + 1] - k;
            int32_t *tmp = malloc(sizeof(int32_t) * (size_t)m.n_units);
            memcpy(tmp, opt, sizeof(int32_t) * (size_t)m.n_units);
            double Tc = tbest_completion(&m, tmp, k, gi, lo);
            free(tmp);
            if (Tc == INFINITY) continue;
            double area = 0;  // the plain area term of the remaining units
            for (int32_t g = gi; g < m.n_grps; g++) {
                double mn = INFINITY;
                for (int32_t j = g == gi ? lo : 0; j < m.grps[g].n_opts; j++)
                    if (m.grps[g].opts[j].area < mn) mn = m.grps[g].opts[j].area;
                area += (double)(g == gi ? rem : m.grps[g].count) * mn;
            }
            for (int it = 0; it < 2; it++) {
                int32_t n_iter = it ? 30 : 0;
                for (int s = 0; s < 2; s++) {
                    double T = Tc * (s ? 1.01 : 1.0);
                    double need = zel_cover_bound(&m, L, H, T, gi, rem, lo, INFINITY, n_iter, scr);
                    CHECK_MSG(sumL + m.extra_area + need <= (double)N * T * (1 + 1e-9),
                              "trial %d k %lld iter %d: %.12g + %.12g + %.12g > %d x %.12g",
                              trial, (long long)k, n_iter, sumL, m.extra_area, need, N, T);
                    if (need > area * (1 + 1e-9)) stronger++;
                }
                double T = Tc * (1 - 1e-3);
                double need = zel_cover_bound(&m, L, H, T, gi, rem, lo, INFINITY, n_iter, scr);
                if (sumL + m.extra_area + need > (double)N * T) proves++;
            }
            tested++;
        }
        if (m.n_units > 0) {
            double Tstar = tbest_completion(&m, opt, 0, 0, 0);
            if (Tstar < INFINITY) {
                double rb = zel_cover_root_bound(&m, 0, Tstar);
                CHECK_MSG(rb <= Tstar * (1 + 1e-9), "trial %d: root %.12g > optimum %.12g",
                          trial, rb, Tstar);
            }
        }
        free(opt), free(scr), free(L), free(H);
        zel_model_free(&m);
        tprob_free(&pr);
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
    zg_rng rng;
    zg_rng_init(&rng, 23);
    int tested = 0;
    int64_t nodes_on = 0, nodes_off = 0;
    for (int trial = 0; trial < 200; trial++) {
        zg_problem pr;
        zel_model m;
        if (!cov_model(&rng, &pr, &m, 5)) continue;
        int32_t *opt = calloc((size_t)m.n_units + 1, sizeof(int32_t));
        double best = tbest_completion(&m, opt, 0, 0, 0);
        free(opt);
        zg_error err;
        for (int off = 0; off < 2; off++) {
            zel_sol sol;
            CHECK_OK(zel_sol_alloc(&m, &sol, &err), &err);
            sol.T = INFINITY, sol.K = 0;
            zel_limits lim = {0, 0, 0, off, 0};
            zel_stats st;
            CHECK_OK(zel_solve_minmax(&m, &sol, &lim, &st, &err), &err);
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
        zel_model_free(&m);
        tprob_free(&pr);
    }
    printf("  search: %d models, %lld nodes with the cover bound, %lld without\n", tested,
           (long long)nodes_on, (long long)nodes_off);
    CHECK(tested >= 40);
}

// Sliding blocks break every tile swap but not the reflection r -> N-1-r: it is detected, and
// the search with it finds the same optimum (plain and memory-aware objectives) as without.
ZG_TEST(reflection_symmetry_keeps_optimum) {
    zg_rng rng;
    zg_rng_init(&rng, 5);
    int64_t nodes_sym = 0, nodes_plain = 0;
    for (int trial = 0; trial < 30; trial++) {
        tgroup tg[3];
        for (int g = 0; g < 3; g++) tg[g] = tgroup_rand(&rng, zg_rng_int(&rng, 1, 2));
        int32_t N = (int32_t)zg_rng_int(&rng, 5, 7);
        zg_problem pr = tprob_make(N, 4.0, tg, 3, 4, 1);
        int32_t idx[3] = {0, 1, 2};
        zg_error err;
        zel_model a, b;
        CHECK_OK(zel_model_build(&pr, idx, 3, NULL, NULL, &a, &err), &err);
        CHECK_OK(zel_model_build(&pr, idx, 3, NULL, NULL, &b, &err), &err);
        int has_rev = 0;
        for (int32_t k = 0; k < a.n_sym; k++) has_rev |= a.sym[k].rev;
        CHECK(has_rev);
        b.n_sym = 0;
        if (trial % 2) {
            a.extra_area = b.extra_area = zg_rng_range(&rng, 2.0, 20.0);
            a.fill_mem = b.fill_mem = zg_rng_range(&rng, 0.2, 0.5) * 4.0 * N;
        }
        zel_sol sa, sb;
        zel_sol_alloc(&a, &sa, &err);
        zel_sol_alloc(&b, &sb, &err);
        sa.T = sb.T = INFINITY, sa.K = sb.K = 0;
        zel_stats x, y;
        CHECK_OK(zel_solve_minmax(&a, &sa, NULL, &x, &err), &err);
        CHECK_OK(zel_solve_minmax(&b, &sb, NULL, &y, &err), &err);
        CHECK(x.complete && y.complete);
        CHECK_MSG(fabs(sa.T - sb.T) <= 1e-9 * sb.T, "trial %d: %.12g vs %.12g", trial, sa.T,
                  sb.T);
        nodes_sym += x.nodes, nodes_plain += y.nodes;
        zel_sol_free(&sa), zel_sol_free(&sb);
        zel_model_free(&a), zel_model_free(&b);
        tprob_free(&pr);
    }
    printf("  reflection: %lld nodes with, %lld without\n", (long long)nodes_sym,
           (long long)nodes_plain);
    CHECK(nodes_sym < nodes_plain);
}

// Lexicographic stage 1 on memory-aware models (min objective, then min splits within
// (1 + eps)): both phases equal brute force. Phase 2 uses static area / fluid terms and scans
// only the whole blocks for its split bound; this checks that it stays exact.
ZG_TEST(lexicographic_fluid_exact_vs_brute_force) {
    zg_rng rng;
    zg_rng_init(&rng, 31);
    int tested = 0, with_splits = 0;
    for (int trial = 0; trial < 200; trial++) {
        zg_problem pr;
        zel_model m;
        if (!cov_model(&rng, &pr, &m, 5)) continue;
        double eps = trial % 3 == 0 ? 0.0 : zg_rng_range(&rng, 0.0, 0.05);
        int32_t *opt = calloc((size_t)m.n_units + 1, sizeof(int32_t));
        double best = INFINITY;
        int64_t bestK = INT64_MAX;
        for (int pass = 0; pass < 2; pass++) {
            for (int64_t v = 0; v < m.n_units; v++) opt[v] = 0;
            for (;;) {
                double T;
                int64_t K;
                if (zel_sol_eval(&m, opt, NULL, NULL, &T, &K)) {
                    if (pass == 0 && T < best) best = T;
                    if (pass == 1 && T <= (1 + eps) * best * (1 + 1e-12) && K < bestK) bestK = K;
                }
                int64_t v = 0;
                while (v < m.n_units && ++opt[v] == m.grps[m.grp_of[v]].n_opts) opt[v++] = 0;
                if (v == m.n_units) break;
            }
        }
        free(opt);
        zg_error err;
        zel_sol sol;
        CHECK_OK(zel_sol_alloc(&m, &sol, &err), &err);
        zel_limits lim = {0, 0, 0, 0, 0};
        zel_stage1 st;
        zg_status rc = zel_anchor_solve(&m, eps, &lim, NULL, &sol, &st, &err);
        if (best == INFINITY) {
            CHECK(rc == ZG_ERR_INFEASIBLE);
        } else {
            CHECK_OK(rc, &err);
            CHECK(st.optimal);
            double T;
            int64_t K;
            CHECK(zel_sol_eval(&m, sol.opt, NULL, NULL, &T, &K));
            CHECK_MSG(T <= (1 + eps) * best * (1 + 1e-9), "trial %d: T %.12g vs %.12g", trial,
                      T, best);
            CHECK_MSG(K == bestK, "trial %d: K %lld vs brute %lld", trial, (long long)K,
                      (long long)bestK);
            with_splits += bestK > 0;
            tested++;
        }
        zel_sol_free(&sol);
        zel_model_free(&m);
        tprob_free(&pr);
    }
    printf("  lexicographic: %d models, %d with splits at the optimum\n", tested, with_splits);
    CHECK(tested >= 40);
    CHECK(with_splits >= 5);
}

// The children's fluid bound computed incrementally (exact/bound_fluid.c) equals the direct
// zel_fluid_T_more on the child's ledgers, including infeasible (INFINITY) children.
ZG_TEST(child_fluid_bound_equals_direct) {
    zg_rng rng;
    zg_rng_init(&rng, 77);
    int compared = 0, infinite = 0;
    for (int trial = 0; trial < 200; trial++) {
        zg_problem pr;
        zel_model m;
        if (!cov_model(&rng, &pr, &m, 8)) continue;
        int32_t N = m.n_ranks;
        double *L = calloc((size_t)N, sizeof(double)), *H = calloc((size_t)N, sizeof(double));
        for (int32_t r = 0; r < N; r++) {
            L[r] = zg_rng_range(&rng, 0.0, 8.0);
            H[r] = zg_rng_range(&rng, 0.0, trial % 3 ? 0.5 : 1.1) * m.mem_cap;
        }
        zel_fluid_ctx f;
        CHECK(zel_fluid_ctx_init(&f, &m));
        zel_fluid_ctx_set(&f, &m, L, H);
        double more = trial % 2 ? zg_rng_range(&rng, 0.0, 5.0) : 0;
        for (int32_t g = 0; g < m.n_grps; g++)
            for (int32_t j = 0; j < m.grps[g].n_opts; j++) {
                const zel_opt *o = &m.grps[g].opts[j];
                double a = zel_fluid_T_child(&f, &m, L, H, o, more);
                for (int32_t r = o->start; r < o->start + o->degree; r++)
                    L[r] += o->time, H[r] += o->mem;
                double b = zel_fluid_T_more(&m, L, H, more);
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
        zel_model_free(&m);
        tprob_free(&pr);
    }
    printf("  child fluid bound: %d options compared, %d infeasible\n", compared, infinite);
    CHECK(compared > 1000);
    CHECK(infinite > 0 && infinite < compared);
}

ZG_TEST_MAIN()
