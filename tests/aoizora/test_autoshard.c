// test_autoshard.c — the Alpa-style auto-sharding baseline: CBC and the exact DP agree, the DP
// matches brute force on a small problem, resharding costs follow XLA's rules, memory binds,
// and the lowered program prices consistently.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aoizora/aoizora.h"
#include "zgtest.h"

// The graph of `model` at 480p, 21 frames (training, or one denoising step) on `topo`; 1 on
// success.
static int setup(const char *model, const char *topo, int training, zg_net *net, zg_aoi_graph *g,
                 zg_error *e) {
    zg_aoi_work w;
    return !(zg_net_load(topo, net, e) ||
             zg_aoi_work_init(&w, model, "480p", 21, training, 0, net->n_devices, e) ||
             zg_aoi_graph_build(&w, g, e));
}

// setup, then the auto-sharding problem on an m0 x m1 mesh.
static int setup_problem(const char *model, const char *topo, int32_t m0, int32_t m1, zg_net *net,
                         zg_aoi_graph *g, zg_aoi_as_problem *p, zg_error *e) {
    return setup(model, topo, 0, net, g, e) && zg_aoi_as_build(g, net, m0, m1, p, e) == ZG_OK;
}

// setup, then the exact-DP auto-sharding run.
static int setup_solved(const char *model, const char *topo, int training, zg_net *net,
                        zg_aoi_graph *g, zg_aoi_autoshard *as, zg_error *e) {
    return setup(model, topo, training, net, g, e) &&
           zg_aoi_autoshard_run(g, net, "dp", as, e) == ZG_OK;
}

ZG_TEST(reshard_costs_follow_xla_rules) {
    zg_error e;
    zg_net net;
    zg_aoi_graph g;
    zg_aoi_as_problem p;
    CHECK_MSG(setup_problem("wan2.1-1.3b", "v5e-8", 2, 4, &net, &g, &p, &e), "%s", e.msg);
    const int R = ZG_AS_R, B = ZG_AS_B, S = ZG_AS_S, D = ZG_AS_D;
    double bytes = 8e6, a1 = p.alpha[1], b1 = p.beta[1], a0 = p.alpha[0], b0 = p.beta[0];
    CHECK_NEAR(zg_aoi_as_reshard_s(&p, R + 4 * R, S + 4 * D, bytes), 0, 0, 0);  // slicing is free
    CHECK_NEAR(zg_aoi_as_reshard_s(&p, B + 4 * S, B + 4 * S, bytes), 0, 0, 0);
    // S on dim 1 (4 devices) -> replicated: all-gather of the result (bytes / 2 left sharded on dim 0)
    CHECK_NEAR(zg_aoi_as_reshard_s(&p, B + 4 * S, B + 4 * R, bytes), a1 + b1 * 0.75 * bytes / 2, 0, 1e-12);
    // S -> D on a 2-D mesh: all-gather (all-to-all only on an effectively 1-D mesh)
    CHECK_NEAR(zg_aoi_as_reshard_s(&p, R + 4 * S, R + 4 * D, bytes), a1 + b1 * 0.75 * bytes, 0, 1e-12);
    CHECK_NEAR(zg_aoi_as_reshard_s(&p, S + 4 * R, R + 4 * R, bytes), a0 + b0 * 0.5 * bytes, 0, 1e-12);
    zg_aoi_as_free(&p);
    CHECK_OK(zg_aoi_as_build(&g, &net, 1, 8, &p, &e), &e);
    // 1-D mesh: S -> D is one all-to-all, XLA formula alpha + beta (n-1)/n/n bytes n/2
    CHECK_NEAR(zg_aoi_as_reshard_s(&p, R + 4 * S, R + 4 * D, bytes),
               p.alpha[1] + p.beta[1] * 7.0 / 8 / 8 * (bytes / 8) * 4, 0, 1e-12);
    zg_aoi_as_free(&p);
}

// Brute force over every assignment of a small problem (Wan2.1-1.3B training on a 1x4 mesh has
// few strategies per op once the mesh is 1-D... so restrict to the single-block tiny preset).
static void brute(const zg_aoi_as_problem *p, int b, int j, int32_t pick[2][ZG_AOI_MAX_NODES],
                  double *best, int64_t *n) {
    if (j == p->blocks[b].n_ops) {
        double c, m;
        zg_aoi_as_eval(p, (const int32_t(*)[ZG_AOI_MAX_NODES])pick, &c, &m);
        (*n)++;
        if (m <= p->mem_cap && c < *best) *best = c;
        return;
    }
    for (int k = 0; k < p->blocks[b].ops[j].n_strat; k++) {
        pick[b][j] = k;
        brute(p, b, j + 1, pick, best, n);
    }
}

ZG_TEST(dp_matches_brute_force_on_a_small_problem) {
    zg_error e;
    zg_net net;
    zg_aoi_graph g;
    zg_aoi_as_problem p;
    CHECK_MSG(setup_problem("wan2.1-1.3b", "v5e-4", 1, 4, &net, &g, &p, &e), "%s", e.msg);
    // keep the brute force small: the first 3 strategies of every op
    int32_t keep[ZG_AOI_MAX_NODES];
    for (int j = 0; j < p.blocks[0].n_ops; j++) {
        keep[j] = p.blocks[0].ops[j].n_strat;
        if (p.blocks[0].ops[j].n_strat > 3) p.blocks[0].ops[j].n_strat = 3;
    }
    for (int pass = 0; pass < 2; pass++) {
        // pass 1: a memory cap that binds (between the cheapest and the unconstrained optimum)
        zg_aoi_as_solution s;
        CHECK_OK(zg_aoi_as_solve_dp(&p, &s, &e), &e);
        CHECK(s.feasible);
        int32_t pick[2][ZG_AOI_MAX_NODES];
        memset(pick, 0, sizeof pick);
        double best = INFINITY;
        int64_t n = 0;
        brute(&p, 0, 0, pick, &best, &n);
        CHECK(n > 1000);
        CHECK_NEAR(s.cost_s, best, 0, 1e-12);
        if (pass == 0) p.mem_cap = s.mem * (1 - 1e-6);
    }
    for (int j = 0; j < p.blocks[0].n_ops; j++) p.blocks[0].ops[j].n_strat = keep[j];
    zg_aoi_as_free(&p);
}

ZG_TEST(autoshard_cbc_and_dp_agree) {
    if (!zg_aoi_as_have_cbc()) {
        printf("  (built without CBC: skipped)\n");
        return;
    }
    zg_error e;
    const struct {
        const char *model, *topo;
        int tr;
    } cases[] = {
        {"wan2.1-1.3b", "v5e-8", 0},
        {"wan2.1-14b", "v5e-4", 0},       // memory binds
        {"hunyuanvideo-13b", "v5e-8", 0}, // two block kinds
        {"wan2.1-1.3b", "v5p-8", 1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        zg_net net;
        zg_aoi_graph g;
        CHECK_MSG(setup(cases[c].model, cases[c].topo, cases[c].tr, &net, &g, &e), "%s", e.msg);
        int32_t N = net.n_devices;
        for (int32_t m0 = 1; m0 * m0 <= N; m0++) {
            if (N % m0) continue;
            zg_aoi_as_problem p;
            CHECK_OK(zg_aoi_as_build(&g, &net, m0, N / m0, &p, &e), &e);
            zg_aoi_as_solution a, b;
            CHECK_OK(zg_aoi_as_solve_cbc(&p, &a, &e), &e);
            CHECK_OK(zg_aoi_as_solve_dp(&p, &b, &e), &e);
            CHECK_MSG(a.feasible == b.feasible, "%s %s mesh %dx%d: cbc feasible %d, dp %d", cases[c].model,
                      cases[c].topo, m0, N / m0, a.feasible, b.feasible);
            if (a.feasible) {
                CHECK_MSG(fabs(a.cost_s - b.cost_s) <= 1e-7 * b.cost_s, "%s %s mesh %dx%d: cbc %.9g dp %.9g",
                          cases[c].model, cases[c].topo, m0, N / m0, a.cost_s, b.cost_s);
                CHECK(a.mem <= p.mem_cap && b.mem <= p.mem_cap);
            }
            zg_aoi_as_free(&p);
        }
    }
}

ZG_TEST(memory_cap_forces_weight_sharding) {
    zg_error e;
    zg_net net;
    zg_aoi_graph g;
    zg_aoi_autoshard as;
    // Wan2.1-14B (26.6 GiB of bf16 weights) on 4 v5e chips (16 GB each): weights must be split
    CHECK_MSG(setup_solved("wan2.1-14b", "v5e-4", 0, &net, &g, &as, &e), "%s", e.msg);
    CHECK(as.found);
    CHECK(as.sol.mem <= net.hbm_bytes * net.hbm_usable_frac);
    CHECK(as.sol.mem > 2.0 * g.params / 4 * 0.9);  // at least a quarter of the weights each
    // a 1-chip "slice" cannot hold it: infeasible, not an error
    zg_net one;
    CHECK_OK(zg_net_load("v5e:1x1", &one, &e), &e);
    zg_aoi_graph g1 = g;
    CHECK_OK(zg_aoi_autoshard_run(&g1, &one, "dp", &as, &e), &e);
    CHECK(!as.found);
    CHECK(zg_aoi_autoshard_run(&g, &net, "simplex", &as, &e) == ZG_ERR_INVALID);
    CHECK(strstr(e.msg, "simplex") != NULL);
}

ZG_TEST(lowered_solution_prices_and_is_deterministic) {
    zg_error e;
    zg_net net;
    zg_aoi_graph g;
    zg_aoi_autoshard as;
    CHECK_MSG(setup_solved("wan2.1-1.3b", "v5p-8", 1, &net, &g, &as, &e), "%s", e.msg);
    CHECK(as.found);
    zg_aoi_as_problem p;
    CHECK_OK(zg_aoi_as_build(&g, &net, as.mesh[0], as.mesh[1], &p, &e), &e);
    zg_aoi_evidence ev, ev2;
    CHECK_OK(zg_aoi_as_lower(&p, &as.sol, &ev, &e), &e);
    CHECK_OK(zg_aoi_as_lower(&p, &as.sol, &ev2, &e), &e);
    cJSON *j1 = zg_aoi_evidence_to_json(&ev), *j2 = zg_aoi_evidence_to_json(&ev2);
    char *s1 = cJSON_PrintUnformatted(j1), *s2 = cJSON_PrintUnformatted(j2);
    CHECK_STR(s1, s2);
    free(s1), free(s2), cJSON_Delete(j1), cJSON_Delete(j2);
    zg_aoi_price pr;
    CHECK_OK(zg_aoi_price_placement(&ev, &net, NULL, NULL, &pr, &e), &e);
    CHECK(pr.total_s > 0 && isfinite(pr.total_s));
    CHECK(pr.compute_s > 0);
    // compute in the evidence = the ILP's compute (same roofline), up to embed/head/optimizer
    char lab[256];
    zg_aoi_as_label(&p, &as.sol, lab, sizeof lab);
    CHECK(!strncmp(lab, "ilp mesh ", 9));
    zg_aoi_evidence_free(&ev), zg_aoi_evidence_free(&ev2);
    zg_aoi_as_free(&p);
}

ZG_TEST_MAIN()
