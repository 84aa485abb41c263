// zel_relax.c — a lower bound on every plan's makespan (the joint optimum) from the stage-1
// model made a relaxation, solved by the branch-and-bound (thirteenth pass).
//
// The anchors stay exact (their own options, Pareto-pruned per block, which only removes
// dominated choices). The fillers become fluid work, but not the stage-1 planner's fluid: that
// one spreads the fillers' whole time at their mean density (seconds per byte), which a plan
// can beat on a memory-tight rank by packing it with the densest fillers, so its optimum is
// not a bound. Here filler group k has least area a_k (over all its options) and its work is
// counted in those units: a piece of option o (degree d_o, per-rank time t_o, memory m_o) does
// a_k / d_o of work in time t_o >= a_k / d_o and memory m_o. With rho = the largest
// (a_k / d_o) / m_o over every filler option, a rank with anchor load L and memory H fits at
// most min(T - L, rho (cap - H)) of filler work under makespan T, and the fillers' work adds up
// to A = sum_k count_k a_k. So every plan's makespan is at least
//     max(max_r L_r, (sum_r L_r + A) / N, min{T : sum_r min(T - L_r, rho (cap - H_r)) >= A})
// for its anchors' ledgers L, H — the stage-1 objective with extra_area = A and fill_mem =
// A / rho (zel_fluid_T) — and at least that objective's minimum over anchor placements, which
// the branch-and-bound proves (or bounds from below when its budget ends).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan/zel_internal.h"

// A of the fillers (the groups model m does not hold: stage 1's cut) and their densest work per
// byte (INFINITY: a piece with no memory, so the memory term is dropped). 0: out of memory.
static int filler_fluid(const zg_problem *pr, const zel_model *m, double *A, double *rho,
                        zg_error *err) {
    *A = 0, *rho = 0;
    uint8_t *anchor = zg_calloc((size_t)pr->n_groups + 1, 1, err);
    if (!anchor) return 0;
    for (int32_t i = 0; i < m->n_grps; i++) anchor[m->grps[i].g] = 1;
    for (int32_t g = 0; g < pr->n_groups; g++) {
        const zg_group *G = &pr->groups[g];
        if (anchor[g]) continue;
        double a = INFINITY;
        for (int32_t j = 0; j < G->n_opts; j++) {
            double area = G->opts[j].time * zg_option_degree(&G->opts[j]);
            if (area < a) a = area;
        }
        if (!(a < INFINITY)) continue;  // no option: the problem build rejects such batches
        *A += (double)G->count * a;
        for (int32_t j = 0; j < G->n_opts; j++) {
            const zg_option *o = &G->opts[j];
            double w = a / zg_option_degree(o);
            double r = o->mem > 0 ? w / o->mem : INFINITY;
            if (r > *rho) *rho = r;
        }
    }
    free(anchor);
    return 1;
}

zg_status zel_relax_bound(const zg_plan_ctx *ctx, const zg_problem *pr, const zel_limits *lim,
                          double *lb, int *complete, int64_t *nodes, zg_error *err) {
    *lb = 0, *complete = 0, *nodes = 0;
    zel_model m;
    zg_status st = zel_stage1_model(ctx, pr, &m, err);  // anchors by the cut, fillers replaced
    if (st) return st;
    double A, rho;
    if (!filler_fluid(pr, &m, &A, &rho, err)) {
        zel_model_free(&m);
        return ZG_ERR_NOMEM;
    }
    m.extra_area = A;
    m.fill_mem = A > 0 && rho < INFINITY && rho > 0 ? A / rho : 0;
    zel_sol sol = {0};
    if ((st = zel_sol_alloc(&m, &sol, err))) {
        zel_model_free(&m);
        return st;
    }
    double root = zel_model_lower_bound(&m);
    if (m.n_units == 0) {
        double *z = zg_calloc(4 * (size_t)m.n_ranks + 1, sizeof(double), err);
        if (!z) st = ZG_ERR_NOMEM;
        else *lb = zel_objective(&m, z, z + m.n_ranks, z + 2 * m.n_ranks), *complete = 1;
        free(z);
    } else {
        // an incumbent prunes the search: the greedy ladder, refined by the neighbourhoods
        if (!zel_heuristic(&m, root, &sol)) sol.T = INFINITY, sol.K = 0;
        if (sol.T < INFINITY) zel_lns_improve(&m, &sol, 2500, 312);
        zel_limits l = *lim;
        l.rel_gap = 0;  // exact: complete means no placement below (1 - ZEL_REL_TOL) sol.T
        zel_stats s = {0};
        st = zel_solve_minmax(&m, &sol, &l, &s, err);
        if (!st) {
            *nodes = s.nodes;
            *complete = s.complete;
            if (s.complete) {
                *lb = sol.T * (1 - ZEL_REL_TOL);  // INFINITY: no plan exists at all
            } else {
                *lb = s.lb > root ? s.lb : root;
                if (sol.T < INFINITY && zel_cover_worth(&m)) {
                    double c = zel_cover_root_bound(&m, *lb, sol.T);
                    if (c > *lb) *lb = c;
                }
            }
        }
    }
    zel_sol_free(&sol);
    zel_model_free(&m);
    return st;
}
