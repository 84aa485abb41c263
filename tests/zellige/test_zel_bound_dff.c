// test_zel_bound_dff.c — the packing (dual-feasible-function) bound of exact/bound_dff.c and the
// search's child pre-filter (exact/bb.c skip_child), both against brute force on small models.
#include <math.h>
#include <stdio.h>

#include "zgtest.h"
#include "zel_testlib.h"

// Brute force of the lexicographic stage 1: T* and the least split count within tcap(T*).
static void brute_lex(const zel_model *m, double eps, double *Tstar, int64_t *Kstar) {
    int32_t *opt = calloc((size_t)m->n_units + 1, sizeof(int32_t));
    *Tstar = tbest_completion(m, opt, 0, 0, 0);
    *Kstar = -1;
    if (*Tstar == INFINITY) {
        free(opt);
        return;
    }
    double tcap = (1 + eps) * *Tstar * (1 + 1e-12);
    for (int64_t v = 0; v < m->n_units; v++) opt[v] = 0;
    for (;;) {
        double T;
        int64_t K;
        if (zel_sol_eval(m, opt, NULL, NULL, &T, &K) && T <= tcap && (*Kstar < 0 || K < *Kstar))
            *Kstar = K;
        int64_t v = 0;
        while (v < m->n_units) {
            if (++opt[v] < m->grps[m->grp_of[v]].n_opts) break;
            opt[v++] = 0;
        }
        if (v == m->n_units) break;
    }
    free(opt);
}

// Every solution with T <= tcap: the least and the most splits (-1: none), and one with the
// most (worst) in worst[].
static void brute_k_range(const zel_model *m, double tcap, int64_t *kmin, int64_t *kmax,
                          int32_t *worst) {
    int32_t *opt = calloc((size_t)m->n_units + 1, sizeof(int32_t));
    *kmin = *kmax = -1;
    for (;;) {
        double T;
        int64_t K;
        if (zel_sol_eval(m, opt, NULL, NULL, &T, &K) && T <= tcap) {
            if (*kmin < 0 || K < *kmin) *kmin = K;
            if (K > *kmax) {
                *kmax = K;
                memcpy(worst, opt, sizeof(int32_t) * (size_t)m->n_units);
            }
        }
        int64_t v = 0;
        while (v < m->n_units) {
            if (++opt[v] < m->grps[m->grp_of[v]].n_opts) break;
            opt[v++] = 0;
        }
        if (v == m->n_units) break;
    }
    free(opt);
}

// Random model on 2-4 ranks with up to max_units units in 1-3 groups. kind 0: memory-aware
// (fillers as a fluid with memory), 1: fill-aware without memory, 2: the paper's bare max load.
static int rnd_model(zg_rng *rng, zg_problem *pr, zel_model *m, int64_t max_units, int kind) {
    int32_t N = (int32_t)zg_rng_int(rng, 2, 4);
    int32_t ng = (int32_t)zg_rng_int(rng, 1, 3);
    tgroup tg[3];
    int64_t units = 0;
    for (int32_t g = 0; g < ng; g++) {
        tg[g].count = zg_rng_int(rng, 1, 3);
        tg[g].w = zg_rng_range(rng, 1.0, 10.0);
        tg[g].comm = zg_rng_range(rng, 0.0, 0.4);
        tg[g].mem = zg_rng_range(rng, 0.2, 1.5);
        units += tg[g].count;
    }
    double cap = zg_rng_range(rng, 1.5, 3.0);
    *pr = tprob_make(N, cap, tg, ng, N, (int)zg_rng_int(rng, 0, 1));
    int ok = units <= max_units;
    for (int32_t g = 0; g < ng; g++) ok &= pr->groups[g].n_opts > 0;
    int32_t idx[3] = {0, 1, 2};
    zg_error err;
    if (!ok || zel_model_build(pr, idx, ng, NULL, NULL, m, &err)) {
        tprob_free(pr);
        return 0;
    }
    if (kind < 2) m->extra_area = zg_rng_range(rng, 1.0, 12.0);
    if (kind == 0) m->fill_mem = zg_rng_range(rng, 0.2, 0.5) * cap * N;
    return 1;
}

// Hand case: 2 ranks, three units of 1 s whole (0.6 s per rank on both ranks split). The area
// bound is 1.5; the optimum is 1.6 (one whole unit per rank plus one split). At T < 1.6 each
// whole piece is more than half of a rank's room, so at most two go whole and the third pays
// the split overhead (area 3.2 > 2T): the packing bound proves T* = 1.6 at the root.
ZG_TEST(dff_bound_hand_case) {
    tgroup tg = {3, 1.0, 0.2, 0.1};
    zg_problem pr = tprob_make(2, 10.0, &tg, 1, 2, 0);
    int32_t idx = 0;
    zel_model m;
    zg_error err;
    CHECK_OK(zel_model_build(&pr, &idx, 1, NULL, NULL, &m, &err), &err);
    double lb = zel_model_lower_bound(&m);
    CHECK_NEAR(lb, 1.5, 1e-12, 0);
    double *scr = malloc(sizeof(double) * zel_dff_scratch(&m));
    double zero[2] = {0, 0};
    // at T = 1.55 two whole pieces + one split piece = area 3.2 > 2 x 1.55
    CHECK_NEAR(zel_dff_bound(&m, zero, zero, 1.55, 0, 3, 0, INFINITY, scr), 3.2, 1e-9, 0);
    // at T = 1.6 the same placement fits exactly (area 3.2 = 2T): not provably infeasible
    CHECK(zel_dff_bound(&m, zero, zero, 1.6, 0, 3, 0, INFINITY, scr) <= 3.2 * (1 + 1e-12));
    double rb = zel_dff_root_bound(&m, lb, 2.0);
    CHECK_MSG(rb > 1.6 * (1 - 1e-6) && rb <= 1.6, "root bound %.12g", rb);
    zel_sol sol;
    CHECK_OK(zel_sol_alloc(&m, &sol, &err), &err);
    sol.T = INFINITY, sol.K = 0;
    zel_limits lim = {0, 0, 0, 0, 0};
    zel_stats st;
    CHECK_OK(zel_solve_minmax(&m, &sol, &lim, &st, &err), &err);
    CHECK(st.complete);
    CHECK_NEAR(sol.T, 1.6, 1e-12, 0);
    zel_sol_free(&sol);
    free(scr);
    zel_model_free(&m);
    tprob_free(&pr);
}

// The bound never exceeds what the best completion needs: at random nodes (a prefix of units),
// for T = that completion's objective (and 1 % above), sum L + A + bound <= N T. Not vacuous:
// it beats the plain area term and proves T (1 - 1e-3) infeasible at some nodes; the root
// bisection never exceeds T*.
ZG_TEST(dff_bound_never_exceeds_brute_force) {
    zg_rng rng;
    zg_rng_init(&rng, 31);
    int tested = 0, stronger = 0, proves = 0;
    for (int trial = 0; trial < 360; trial++) {
        zg_problem pr;
        zel_model m;
        int kind = trial % 3;
        if (!rnd_model(&rng, &pr, &m, 5, kind)) continue;
        int32_t N = m.n_ranks;
        int32_t *opt = calloc((size_t)m.n_units + 1, sizeof(int32_t));
        int32_t *tmp = calloc((size_t)m.n_units + 1, sizeof(int32_t));
        double *scr = malloc(sizeof(double) * zel_dff_scratch(&m));
        double *L = calloc((size_t)N, sizeof(double)), *H = calloc((size_t)N, sizeof(double));
        for (int rep = 0; rep < 4; rep++) {
            int64_t k = zg_rng_int(&rng, 0, m.n_units - 1);
            double sumL = trand_prefix(&rng, &m, k, opt, L, H);
            int32_t gi = m.grp_of[k];
            int32_t lo = k > 0 && m.grp_of[k - 1] == gi ? opt[k - 1] : 0;
            int64_t rem = m.unit0[gi + 1] - k;
            memcpy(tmp, opt, sizeof(int32_t) * (size_t)m.n_units);
            double Tc = tbest_completion(&m, tmp, k, gi, lo);
            if (Tc == INFINITY) continue;
            double area = 0;
            for (int32_t g = gi; g < m.n_grps; g++) {
                double mn = INFINITY;
                for (int32_t j = g == gi ? lo : 0; j < m.grps[g].n_opts; j++)
                    if (m.grps[g].opts[j].area < mn) mn = m.grps[g].opts[j].area;
                area += (double)(g == gi ? rem : m.grps[g].count) * mn;
            }
            for (int s = 0; s < 2; s++) {
                double T = Tc * (s ? 1.01 : 1.0);
                double need = zel_dff_bound(&m, L, H, T, gi, rem, lo, INFINITY, scr);
                CHECK_MSG(sumL + m.extra_area + need <= (double)N * T * (1 + 1e-9),
                          "trial %d kind %d k %lld: %.12g + %.12g + %.12g > %d x %.12g", trial,
                          kind, (long long)k, sumL, m.extra_area, need, N, T);
                if (need > area * (1 + 1e-9)) stronger++;
            }
            double T = Tc * (1 - 1e-3);
            double need = zel_dff_bound(&m, L, H, T, gi, rem, lo, INFINITY, scr);
            if (sumL + m.extra_area + need > (double)N * T) proves++;
            tested++;
        }
        double Tstar = tbest_completion(&m, opt, 0, 0, 0);
        if (Tstar < INFINITY) {
            double rb = zel_dff_root_bound(&m, 0, Tstar);
            CHECK_MSG(rb <= Tstar * (1 + 1e-9), "trial %d: root %.12g > optimum %.12g", trial,
                      rb, Tstar);
        }
        free(opt), free(tmp), free(scr), free(L), free(H);
        zel_model_free(&m);
        tprob_free(&pr);
    }
    printf("  dff bound: %d nodes, stronger than area %d, proves T*(1-1e-3) infeasible %d\n",
           tested, stronger, proves);
    CHECK(tested >= 300);
    CHECK(stronger > 0);
    CHECK(proves > 0);
}

// The search with its child pre-filter (area / split-count terms checked before a child is
// entered, exact/bb.c) is still exact: min T (gap 0) and the lexicographic stage 1 (min splits
// within (1 + eps) T*) equal brute force on memory-aware, fill-aware and bare models with up to
// 6 units.
ZG_TEST(search_with_child_filter_exact) {
    zg_rng rng;
    zg_rng_init(&rng, 47);
    int tested = 0, with_splits = 0, split_runs = 0;
    for (int trial = 0; trial < 240; trial++) {
        zg_problem pr;
        zel_model m;
        int kind = trial % 3;
        if (!rnd_model(&rng, &pr, &m, 6, kind)) continue;
        double Tb;
        int64_t Kb;
        brute_lex(&m, 1e-3, &Tb, &Kb);
        zg_error err;
        zel_sol sol;
        CHECK_OK(zel_sol_alloc(&m, &sol, &err), &err);
        sol.T = INFINITY, sol.K = 0;
        zel_limits lim = {0, 0, 0, 0, 0};
        zel_stats st;
        CHECK_OK(zel_solve_minmax(&m, &sol, &lim, &st, &err), &err);
        CHECK(st.complete);
        if (Tb == INFINITY) {
            CHECK(sol.T == INFINITY);
        } else {
            CHECK_MSG(fabs(sol.T - Tb) <= 1e-9 * Tb, "trial %d kind %d: %.12g vs %.12g", trial,
                      kind, sol.T, Tb);
            zel_stage1 s1;
            zel_sol lex;
            CHECK_OK(zel_sol_alloc(&m, &lex, &err), &err);
            CHECK_OK(zel_anchor_solve(&m, 1e-3, &lim, NULL, &lex, &s1, &err), &err);
            CHECK(s1.optimal);
            CHECK_MSG(fabs(s1.T - Tb) <= 1e-9 * Tb, "trial %d lex T %.12g vs %.12g", trial, s1.T,
                      Tb);
            CHECK_MSG(s1.K == Kb, "trial %d kind %d: K %lld vs %lld", trial, kind,
                      (long long)s1.K, (long long)Kb);
            if (Kb > 0) with_splits++;
            zel_sol_free(&lex);
            // the split phase alone from the worst incumbent, under a tight and a loose cap
            for (int cp = 0; cp < 2; cp++) {
                double tcap = (cp ? 1.05 : 1.001) * Tb;
                int64_t kmin, kmax;
                zel_sol w;
                CHECK_OK(zel_sol_alloc(&m, &w, &err), &err);
                brute_k_range(&m, tcap, &kmin, &kmax, w.opt);
                if (kmax > kmin) {
                    zel_sol_canon(&m, &w);
                    CHECK(zel_sol_eval(&m, w.opt, NULL, NULL, &w.T, &w.K));
                    CHECK_OK(zel_solve_minsplit(&m, tcap, &w, &lim, &st, &err), &err);
                    CHECK(st.complete);
                    CHECK_MSG(w.K == kmin, "trial %d kind %d cap %d: K %lld vs %lld (from %lld)",
                              trial, kind, cp, (long long)w.K, (long long)kmin, (long long)kmax);
                    split_runs++;
                }
                zel_sol_free(&w);
            }
        }
        zel_sol_free(&sol);
        tested++;
        zel_model_free(&m);
        tprob_free(&pr);
    }
    printf("  child filter: %d models, %d with splits at the optimum, %d split-phase runs\n",
           tested, with_splits, split_runs);
    CHECK(tested >= 100);
    CHECK(with_splits > 10);
    CHECK(split_runs > 30);
}

ZG_TEST(dff_bound_no_option_fits) {
    // T below every option's time: no completion, the bound says INFINITY
    tgroup tg = {2, 4.0, 0.1, 0.5};
    zg_problem pr = tprob_make(2, 10.0, &tg, 1, 2, 1);
    int32_t idx = 0;
    zel_model m;
    zg_error err;
    CHECK_OK(zel_model_build(&pr, &idx, 1, NULL, NULL, &m, &err), &err);
    double *scr = malloc(sizeof(double) * zel_dff_scratch(&m));
    double zero[2] = {0, 0};
    CHECK(zel_dff_bound(&m, zero, zero, 1.0, 0, 2, 0, INFINITY, scr) == INFINITY);
    CHECK(zel_dff_bound(&m, zero, zero, 100.0, 1, 0, 0, INFINITY, scr) == 0);  // no group left
    CHECK(zel_dff_root_bound(&m, 3.0, 3.0) == 3.0);          // empty interval
    CHECK(zel_dff_root_bound(&m, 3.0, INFINITY) == 3.0);     // no incumbent
    free(scr);
    zel_model_free(&m);
    tprob_free(&pr);
}

ZG_TEST_MAIN()
