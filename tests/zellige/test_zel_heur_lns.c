// test_zel_heur_lns.c — the large-neighbourhood improvement of the stage-1 incumbent
// (search/lns.c): legal, evaluates to what it reports, canonical, deterministic, never worse than
// the greedy start, improves it on some models; stage 1 with it stays exact (brute force) and
// gives the same optimum as without it when the search completes.
#include "zgtest.h"
#include "zel_testlib.h"

ZG_TEST(lns_legal_deterministic_never_worse) {
    zg_rng rng;
    zg_rng_init(&rng, 7);
    int improved = 0, runs = 0;
    for (int trial = 0; trial < 60; trial++) {
        int32_t N = (int32_t)zg_rng_int(&rng, 4, 16);
        int32_t ng = (int32_t)zg_rng_int(&rng, 2, 6);
        int32_t idx[8];
        zg_problem pr = trand_problem(&rng, N, ng, 4, idx);
        zel_model m;
        zg_error err;
        CHECK_OK(zel_model_build(&pr, idx, ng, NULL, NULL, &m, &err), &err);
        if (trial % 2) {  // fill-aware, memory-aware objective
            m.extra_area = zg_rng_range(&rng, 0.0, 4.0 * N);
            m.fill_mem = m.extra_area > 0 ? zg_rng_range(&rng, 0.2, 0.5) * N * pr.mem_cap : 0;
        }
        zel_sol g0, a, b;
        CHECK_OK(zel_sol_alloc(&m, &g0, &err), &err);
        CHECK_OK(zel_sol_alloc(&m, &a, &err), &err);
        CHECK_OK(zel_sol_alloc(&m, &b, &err), &err);
        double lb = zel_model_lower_bound(&m);
        if (!zel_heuristic(&m, lb, &g0)) {
            zel_sol_free(&g0), zel_sol_free(&a), zel_sol_free(&b);
            zel_model_free(&m);
            tprob_free(&pr);
            continue;
        }
        runs++;
        zel_sol_copy(&m, &a, &g0);
        zel_sol_copy(&m, &b, &g0);
        int64_t na = zel_lns_improve(&m, &a, 2000, 200);
        int64_t nb = zel_lns_improve(&m, &b, 2000, 200);
        CHECK(na >= 0 && na <= 2000 + 200);
        CHECK_EQ_INT(na, nb);  // deterministic: same nodes, same solution
        CHECK(a.T == b.T && a.K == b.K);
        CHECK(!memcmp(a.opt, b.opt, sizeof(int32_t) * (size_t)m.n_units));
        CHECK_MSG(a.T <= g0.T, "trial %d: lns %.12g > greedy %.12g", trial, a.T, g0.T);
        CHECK(a.T >= lb * (1 - 1e-12));
        for (int64_t u = 0; u < m.n_units; u++)
            CHECK(a.opt[u] >= 0 && a.opt[u] < m.grps[m.grp_of[u]].n_opts);
        CHECK(tsol_canonical(&m, &a));
        double T;
        int64_t K;
        CHECK(zel_sol_eval(&m, a.opt, NULL, NULL, &T, &K));  // memory-feasible
        CHECK_MSG(T == a.T && K == a.K, "trial %d: reported %.12g/%lld, evaluates to %.12g/%lld",
                  trial, a.T, (long long)a.K, T, (long long)K);
        improved += a.T < g0.T;
        zel_sol_free(&g0), zel_sol_free(&a), zel_sol_free(&b);
        zel_model_free(&m);
        tprob_free(&pr);
    }
    CHECK(runs >= 40);
    CHECK_MSG(improved > 0, "no model improved over the greedy start (%d runs)", runs);
}

// Stage 1 with the neighbourhood search is still the exact lexicographic optimum.
ZG_TEST(anchor_solve_lns_exact_vs_brute_force) {
    zg_rng rng;
    zg_rng_init(&rng, 11);
    int checked = 0;
    for (int trial = 0; trial < 80; trial++) {
        int32_t N = (int32_t)zg_rng_int(&rng, 2, 4);
        int32_t ng = (int32_t)zg_rng_int(&rng, 2, 3);
        int32_t idx[8];
        zg_problem pr = trand_problem(&rng, N, ng, 2, idx);
        int64_t units = 0;
        int ok = 1;
        for (int32_t g = 0; g < ng; g++) units += pr.groups[g].count, ok &= pr.groups[g].n_opts > 0;
        if (!ok || units > 5) {
            tprob_free(&pr);
            continue;
        }
        double eps = trial % 2 ? 1e-3 : 0.05, Tb;
        int64_t Kb;
        int feas = tbrute(&pr, idx, ng, eps, &Tb, &Kb);
        zel_model m;
        zel_sol sol;
        zel_stage1 st;
        zg_error err;
        CHECK_OK(zel_model_build(&pr, idx, ng, NULL, NULL, &m, &err), &err);
        CHECK_OK(zel_sol_alloc(&m, &sol, &err), &err);
        zel_limits lim = {0, 0, 0, 0, 0};
        zg_status rc = zel_anchor_solve_lns(&m, eps, &lim, NULL, 500, NULL, &sol, NULL, NULL, &st,
                                            &err);
        if (!feas) {
            CHECK_EQ_INT(rc, ZG_ERR_INFEASIBLE);
        } else {
            CHECK_OK(rc, &err);
            CHECK(st.optimal);
            CHECK_MSG(fabs(st.T - Tb) <= 1e-9 * Tb, "trial %d: T %.12g vs %.12g", trial, st.T, Tb);
            CHECK_MSG(sol.K == Kb, "trial %d: K %lld vs %lld", trial, (long long)sol.K,
                      (long long)Kb);
            checked++;
        }
        zel_sol_free(&sol);
        zel_model_free(&m);
        tprob_free(&pr);
    }
    CHECK(checked >= 30);
}

// On larger models (no brute force), a completed search finds the same T* and K* with and
// without the neighbourhood search, and the node budget covers both.
ZG_TEST(anchor_solve_lns_same_optimum_when_complete) {
    zg_rng rng;
    zg_rng_init(&rng, 23);
    int both = 0;
    for (int trial = 0; trial < 24; trial++) {
        int32_t N = (int32_t)zg_rng_int(&rng, 5, 8);
        int32_t ng = (int32_t)zg_rng_int(&rng, 3, 4);
        int32_t idx[8];
        zg_problem pr = trand_problem(&rng, N, ng, 2, idx);
        zel_model m;
        zg_error err;
        CHECK_OK(zel_model_build(&pr, idx, ng, NULL, NULL, &m, &err), &err);
        zel_sol s0, s1;
        zel_stage1 st0, st1;
        CHECK_OK(zel_sol_alloc(&m, &s0, &err), &err);
        CHECK_OK(zel_sol_alloc(&m, &s1, &err), &err);
        zel_limits lim = {200000, 0, 0, 0, 0};
        zg_status r0 = zel_anchor_solve_lns(&m, 1e-3, &lim, NULL, 0, NULL, &s0, NULL, NULL, &st0,
                                            &err);
        zg_status r1 = zel_anchor_solve_lns(&m, 1e-3, &lim, NULL, 1000, NULL, &s1, NULL, NULL,
                                            &st1, &err);
        CHECK_EQ_INT(r0, r1);
        if (!r0 && st0.optimal && st1.optimal) {
            CHECK_MSG(fabs(st0.T - st1.T) <= 1e-9 * st0.T, "trial %d: %.12g vs %.12g", trial,
                      st0.T, st1.T);
            CHECK_EQ_INT(s0.K, s1.K);
            both++;
        }
        zel_sol_free(&s0), zel_sol_free(&s1);
        zel_model_free(&m);
        tprob_free(&pr);
    }
    CHECK(both >= 12);
}

ZG_TEST(lns_bad_input_is_a_no_op) {
    tgroup tg[3] = {{2, 4.0, 0.1, 0.5}, {2, 3.0, 0.2, 0.5}, {1, 5.0, 0.1, 0.5}};
    zg_problem pr = tprob_make(4, 2.0, tg, 3, 4, 1);
    int32_t idx[3] = {0, 1, 2};
    zel_model m;
    zg_error err;
    CHECK_OK(zel_model_build(&pr, idx, 3, NULL, NULL, &m, &err), &err);
    zel_sol s;
    CHECK_OK(zel_sol_alloc(&m, &s, &err), &err);
    CHECK_EQ_INT(zel_lns_improve(&m, &s, 100, 10), 0);  // T = INFINITY: no incumbent
    CHECK(s.T == INFINITY);
    CHECK(zel_heuristic(&m, zel_model_lower_bound(&m), &s));
    double T = s.T;
    CHECK_EQ_INT(zel_lns_improve(&m, &s, 0, 10), 0);
    CHECK_EQ_INT(zel_lns_improve(&m, &s, 100, 0), 0);
    CHECK(s.T == T);
    zel_sol_free(&s);
    zel_model_free(&m);
    tprob_free(&pr);
}

// The ladder with a deadline: none (0) or a far one gives zel_heuristic's plan exactly; one
// already past finishes no pass and reports none (the caller's incumbent stands).
ZG_TEST(heuristic_until_deadline) {
    zg_rng rng;
    zg_rng_init(&rng, 11);
    int runs = 0;
    for (int trial = 0; trial < 20; trial++) {
        int32_t N = (int32_t)zg_rng_int(&rng, 4, 16), ng = (int32_t)zg_rng_int(&rng, 2, 6);
        int32_t idx[8];
        zg_problem pr = trand_problem(&rng, N, ng, 4, idx);
        zel_model m;
        zg_error err;
        CHECK_OK(zel_model_build(&pr, idx, ng, NULL, NULL, &m, &err), &err);
        zel_sol a, b, c;
        CHECK_OK(zel_sol_alloc(&m, &a, &err), &err);
        CHECK_OK(zel_sol_alloc(&m, &b, &err), &err);
        CHECK_OK(zel_sol_alloc(&m, &c, &err), &err);
        double lb = zel_model_lower_bound(&m);
        int fa = zel_heuristic(&m, lb, &a);
        int fb = zel_heuristic_until(&m, lb, zg_time_now() + 3600, &b);
        CHECK_EQ_INT(fa, fb);
        if (fa) {
            runs++;
            CHECK(a.T == b.T && a.K == b.K);
            CHECK(!memcmp(a.opt, b.opt, sizeof(int32_t) * (size_t)m.n_units));
        }
        CHECK(!zel_heuristic_until(&m, lb, zg_time_now() - 1, &c));
        CHECK(c.T == INFINITY);
        zel_sol_free(&a), zel_sol_free(&b), zel_sol_free(&c);
        zel_model_free(&m);
        tprob_free(&pr);
    }
    CHECK(runs >= 10);
}

// Reference for zel_model_lower_bound (ledgers zero, not memory-aware): the breakpoint sweep
// over a fully sorted list, as the bound was computed before the heap.
typedef struct rbp {
    double e, area;
    int32_t g;
} rbp;
static int rbp_cmp(const void *pa, const void *pb) {
    const rbp *a = pa, *b = pb;
    if (a->e != b->e) return a->e < b->e ? -1 : 1;
    return (a->g > b->g) - (a->g < b->g);
}
static double ref_lower_bound(const zel_model *m) {
    int32_t N = m->n_ranks;
    size_t k = 0, n = 0;
    for (int32_t g = 0; g < m->n_grps; g++) n += (size_t)m->grps[g].n_opts;
    rbp *p = malloc(sizeof(rbp) * (n + 1));
    double *ga = malloc(sizeof(double) * (size_t)m->n_grps);
    for (int32_t g = 0; g < m->n_grps; g++) {
        ga[g] = INFINITY;
        for (int32_t j = 0; j < m->grps[g].n_opts; j++) {
            const zel_opt *o = &m->grps[g].opts[j];
            if (o->mem <= m->mem_cap) p[k++] = (rbp){o->time, o->area, g};
        }
    }
    qsort(p, k, sizeof *p, rbp_cmp);
    int32_t covered = 0;
    double res = INFINITY;
    for (size_t i = 0; i < k;) {
        double e = p[i].e;
        for (; i < k && p[i].e == e; i++) {
            if (ga[p[i].g] == INFINITY) covered++;
            if (p[i].area < ga[p[i].g]) ga[p[i].g] = p[i].area;
        }
        if (covered < m->n_grps) continue;
        double f = m->extra_area;
        for (int32_t g = 0; g < m->n_grps; g++) f += (double)m->grps[g].count * ga[g];
        double t = f / N > e ? f / N : e;
        if (i == k || t < p[i].e) {
            res = t;
            break;
        }
    }
    free(p), free(ga);
    double lb = m->extra_area / N;
    return res > lb ? res : lb;
}

// The heap-based breakpoint sweep of the root bound equals the sorted sweep bit for bit.
ZG_TEST(lower_bound_heap_sweep_equals_sorted_sweep) {
    zg_rng rng;
    zg_rng_init(&rng, 5);
    for (int trial = 0; trial < 80; trial++) {
        int32_t N = (int32_t)zg_rng_int(&rng, 2, 16);
        int32_t ng = (int32_t)zg_rng_int(&rng, 1, 6);
        int32_t idx[8];
        zg_problem pr = trand_problem(&rng, N, ng, 4, idx);
        if (trial % 3 == 0)  // a tie in e
            pr.groups[0].opts[0].time = pr.groups[0].opts[1 % pr.groups[0].n_opts].time;
        zel_model m;
        zg_error err;
        CHECK_OK(zel_model_build(&pr, idx, ng, NULL, NULL, &m, &err), &err);
        if (trial % 2) m.extra_area = zg_rng_range(&rng, 0.0, 3.0 * N);
        double a = zel_model_lower_bound(&m), b = ref_lower_bound(&m);
        CHECK_MSG(a == b, "trial %d: %.17g vs %.17g", trial, a, b);
        zel_model_free(&m);
        tprob_free(&pr);
    }
}

ZG_TEST_MAIN()
