// zellige/policy_joint.c — `--policy joint`: the exact joint-placement reference. The same min-max model
// as the anchor stage, over every sequence, solved by the ECF branch-and-bound (exact/bb.c) from
// the two-stage plan as incumbent, under opts.time_limit_s (default 60 s; must be > 0). The plan reports the
// proven lower bound (plan.lower_bound: the larger of the search's and the relaxation bound of
// exact/relax.c, which gets the first half of the time) and plan.optimal; when the limit stops the
// search the summary gives the gap.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zellige/internal.h"

// Node cap of the relaxation bound (exact/relax.c; it also gets half the time limit, both split
// between its densities): on 16xA800 high-load batches of the quality bench the one-density
// variant finished in 2 900-272 000 nodes; at 32xA6000 some do not finish in 2 000 000.

static zg_status plan_joint(zg_planner *pl, const zg_batch *b, zg_plan *out, zg_error *err) {
    zg_problem pr;
    zg_status st = zg_problem_build(&pl->ctx, b, &pr, err);
    if (st) return st;
    zel_result res;
    memset(&res, 0, sizeof res);
    zel_model m;
    memset(&m, 0, sizeof m);
    zel_sol sol = {0};
    int32_t *all = zg_calloc((size_t)pr.n_groups + 1, sizeof(int32_t), err);
    if (!all) st = ZG_ERR_NOMEM;
    for (int32_t g = 0; !st && g < pr.n_groups; g++) all[g] = g;
    if (!st) st = zel_model_build(&pr, all, pr.n_groups, NULL, NULL, &m, err);
    if (!st) st = zel_sol_alloc(&m, &sol, err);
    double limit = pl->ctx.opts.time_limit_s;
    double t0 = zg_time_now();
    zel_stats stats = {0};
    double relax_lb = 0;
    int64_t relax_nodes = 0;
    if (!st) {
        // incumbent: the two-stage plan (when it exists) and the greedy ladder, which wins ties
        double lb = zel_model_lower_bound(&m);
        sol.T = INFINITY;
        zg_error e2;
        if (zel_two_stage(&pl->ctx, &pr, b, NULL, &res, &e2) == ZG_OK) {
            // group-wise units of the two-stage choice, canonical order
            for (int32_t i = 0; i < m.n_grps; i++) {
                const zel_grp *G = &m.grps[i];
                const zg_group *pg = &pr.groups[G->g];
                for (int64_t j = 0; j < G->count; j++) {
                    int32_t src = res.choice[pg->members[j]], k = -1;
                    const zg_option *o = &pg->opts[src];
                    for (int32_t q = 0; q < G->n_opts && k < 0; q++)  // same or dominating
                        if (G->opts[q].start == o->start &&
                            G->opts[q].degree == zg_option_degree(o) &&
                            G->opts[q].time <= o->time && G->opts[q].mem <= o->mem)
                            k = q;
                    sol.opt[m.unit0[i] + j] = k < 0 ? 0 : k;
                }
            }
            zel_sol_canon(&m, &sol);
            if (!zel_sol_eval(&m, sol.opt, NULL, NULL, &sol.T, &sol.K)) sol.T = INFINITY;
        }
        // The greedy ladder scans every option of every unit per pass: ~4.5e9 option looks
        // per pass at 1024xH100 with ~30 000 sequences (44 s in all). With a two-stage plan in
        // hand it gets a quarter of the limit; without one it runs to the end.
        zel_sol h = {0};
        if (!st) st = zel_sol_alloc(&m, &h, err);
        double h_end = sol.T < INFINITY ? t0 + 0.25 * limit : 0;
        if (!st && zel_heuristic_until(&m, lb, h_end, &h) &&
            (h.T < sol.T || (h.T == sol.T && h.K <= sol.K)))
            zel_sol_copy(&m, &sol, &h);
        zel_sol_free(&h);
        // the relaxation bound (exact/relax.c) first, with half of the time left: 0.1-0.3 % above
        // the full model's root bound, which the search over every sequence seldom moves, on
        // 16xA800 high-load batches (bench_planner_quality lbgap means 0.26-0.64 -> 0.06-0.38 %)
        if (sol.T < INFINITY && sol.T > lb * (1 + ZEL_REL_TOL)) {
            zel_limits rl = {ZEL_RELAX_NODES, 0.5 * (limit - (zg_time_now() - t0)), 0, 0, 0};
            if (rl.time_limit_s <= 0) rl.time_limit_s = 1e-3;
            int relax_done = 0;
            // the pattern bound after it: a quarter of the limit, taken from the search below
            // (which seldom proves anything where the relaxation did not finish)
            st = zel_relax_bound(&pl->ctx, &pr, &rl, 0.25 * limit, sol.T, &relax_lb,
                                 &relax_done, &relax_nodes, NULL, err);
            if (!st && relax_lb > lb) lb = relax_lb < sol.T ? relax_lb : sol.T;
        }
        zel_limits lim = {0, limit - (zg_time_now() - t0), 0, 0, 0};
        if (lim.time_limit_s <= 0) lim.time_limit_s = 1e-3;
        if (!st && sol.T <= lb * (1 + 2 * ZEL_REL_TOL)) {
            stats.complete = 1;  // the incumbent meets a proven bound
            stats.lb = sol.T;
        } else if (!st) {
            st = zel_solve_minmax(&m, &sol, &lim, &stats, err);
        }
        if (!st && sol.T == INFINITY)
            st = zg_error_set(err, ZG_ERR_INFEASIBLE,
                              "joint: no placement of the %lld sequences fits the memory cap "
                              "(%s)", (long long)pr.n_seqs,
                              stats.complete ? "proven" : "none found within the time limit");
        if (!st && !stats.complete && stats.lb < lb) stats.lb = lb;
    }
    if (!st) {
        int32_t *choice = zg_calloc((size_t)pr.n_seqs + 1, sizeof(int32_t), err);
        if (!choice) st = ZG_ERR_NOMEM;
        if (!st) {
            zel_sol_to_choice(&m, &pr, &sol, choice);
            st = zel_decode(&pr, b, choice, "joint", out, err);
        }
        free(choice);
    }
    if (!st) {
        out->lower_bound = stats.complete ? sol.T : stats.lb;
        out->optimal = stats.complete;
        double gap = out->lower_bound > 0 ? sol.T / out->lower_bound - 1 : 0;
        snprintf(out->summary, sizeof out->summary,
                 "%s: makespan %.6g s, lower bound %.6g s (gap %.4f%%; relaxation bound %.6g s, "
                 "%lld nodes), %lld nodes in %.3f s",
                 stats.complete ? "optimal" : "time limit", sol.T, out->lower_bound, gap * 100,
                 relax_lb, (long long)relax_nodes, (long long)stats.nodes, zg_time_now() - t0);
    }
    free(res.choice);
    free(all);
    zel_sol_free(&sol);
    zel_model_free(&m);
    zg_problem_free(&pr);
    return st;
}

const zg_planner_vtable zg_policy_joint = {
    "joint", "exact joint placement of every sequence (ECF branch-and-bound, --time-limit)",
    NULL, plan_joint, NULL, 0};
