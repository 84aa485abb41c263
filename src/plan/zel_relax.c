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
// the branch-and-bound proves (or bounds from below when its budget ends). One density for all
// is loose when the densest type is a small part of the work (256-token images: 1.5x the mean
// density, ~8 % of the work at 16xA800 high load), so a second variant keeps the densest type
// out of the memory term (free_area: it still takes time and counts in the mean term) and
// bounds the rest at the next density; the larger of the two bounds is returned.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan/zel_internal.h"

// Per filler group (the groups model m does not hold: stage 1's cut) its work count * a_k and
// its densest work per byte (INFINITY: a piece with no memory). Returns the number of groups
// (types), -1 on out of memory; *A = their total work.
static int32_t filler_types(const zg_problem *pr, const zel_model *m, double *rho, double *work,
                            double *A, zg_error *err) {
    *A = 0;
    uint8_t *anchor = zg_calloc((size_t)pr->n_groups + 1, 1, err);
    if (!anchor) return -1;
    for (int32_t i = 0; i < m->n_grps; i++) anchor[m->grps[i].g] = 1;
    int32_t n = 0;
    for (int32_t g = 0; g < pr->n_groups; g++) {
        const zg_group *G = &pr->groups[g];
        if (anchor[g]) continue;
        double a = INFINITY, r = 0;
        for (int32_t j = 0; j < G->n_opts; j++) {
            double area = G->opts[j].time * zg_option_degree(&G->opts[j]);
            if (area < a) a = area;
        }
        if (!(a < INFINITY)) continue;  // no option: the problem build rejects such batches
        for (int32_t j = 0; j < G->n_opts; j++) {
            const zg_option *o = &G->opts[j];
            double w = a / zg_option_degree(o);
            double x = o->mem > 0 ? w / o->mem : INFINITY;
            if (x > r) r = x;
        }
        rho[n] = r, work[n] = (double)G->count * a;
        *A += work[n++];
    }
    free(anchor);
    return n;
}

// The relaxation's bound on model m (extra_area, free_area, fill_mem set) under lim.
static zg_status relax_solve(const zel_model *m, const zel_limits *lim, double *lb,
                             int *complete, int64_t *nodes, zg_error *err) {
    *lb = 0, *complete = 0, *nodes = 0;
    double root = zel_model_lower_bound(m);
    if (m->n_units == 0) {
        double *z = zg_calloc(4 * (size_t)m->n_ranks + 1, sizeof(double), err);
        if (!z) return ZG_ERR_NOMEM;
        *lb = zel_objective(m, z, z + m->n_ranks, z + 2 * m->n_ranks), *complete = 1;
        free(z);
        return ZG_OK;
    }
    zel_sol sol = {0};
    zg_status st = zel_sol_alloc(m, &sol, err);
    if (st) return st;
    // an incumbent prunes the search: the greedy ladder, refined by the neighbourhoods
    if (!zel_heuristic(m, root, &sol)) sol.T = INFINITY, sol.K = 0;
    if (sol.T < INFINITY) zel_lns_improve(m, &sol, 2500, 312);
    zel_limits l = *lim;
    l.rel_gap = 0;  // exact: complete means no placement below (1 - ZEL_REL_TOL) sol.T
    zel_stats s = {0};
    st = zel_solve_minmax(m, &sol, &l, &s, err);
    if (!st) {
        *nodes = s.nodes;
        *complete = s.complete;
        if (s.complete) {
            *lb = sol.T * (1 - ZEL_REL_TOL);  // INFINITY: no plan exists at all
        } else {
            *lb = s.lb > root ? s.lb : root;
            if (sol.T < INFINITY && zel_cover_worth(m)) {
                double c = zel_cover_root_bound(m, *lb, sol.T);
                if (c > *lb) *lb = c;
            }
        }
    }
    zel_sol_free(&sol);
    return st;
}

zg_status zel_relax_bound(const zg_plan_ctx *ctx, const zg_problem *pr, const zel_limits *lim,
                          double *lb, int *complete, int64_t *nodes, zg_error *err) {
    *lb = 0, *complete = 0, *nodes = 0;
    zel_model m;
    zg_status st = zel_stage1_model(ctx, pr, &m, err);  // anchors by the cut, fillers replaced
    if (st) return st;
    double *rho = zg_calloc(2 * ((size_t)pr->n_groups + 1), sizeof(double), err);
    double *work = rho ? rho + pr->n_groups + 1 : NULL, A = 0;
    int32_t nt = rho ? filler_types(pr, &m, rho, work, &A, err) : -1;
    if (nt < 0) {
        free(rho);
        zel_model_free(&m);
        return ZG_ERR_NOMEM;
    }
    // Variant v: the types denser than the (v + 1)-th largest density are free work (memory
    // left out, time and the mean term kept: still a relaxation), the others a fluid at that
    // density. v = 0: one density for all; v = 1: the densest type(s) apart, which on the
    // quality bench raised the bound on some batches by up to 0.4 % (32xA6000 high batch 60)
    // and lowered it on none that finished. Each gets half the limits; the larger bound wins.
    double thr[2] = {0, 0};
    for (int32_t k = 0; k < nt; k++)
        if (rho[k] > thr[0]) thr[0] = rho[k];
    for (int32_t k = 0; k < nt; k++)
        if (rho[k] < thr[0] && rho[k] > thr[1]) thr[1] = rho[k];
    int32_t n_var = thr[1] > 0 && thr[0] < INFINITY ? 2 : 1;
    zel_limits half = *lim;
    if (n_var == 2) {
        if (half.max_nodes > 0) half.max_nodes = (half.max_nodes + 1) / 2;
        if (half.time_limit_s > 0) half.time_limit_s *= 0.5;
    }
    for (int32_t v = 0; v < n_var && !st; v++) {
        double free_area = 0;
        for (int32_t k = 0; k < nt; k++)
            if (rho[k] > thr[v]) free_area += work[k];
        m.extra_area = A;
        m.free_area = free_area;
        double mem_area = A - free_area;
        m.fill_mem = mem_area > 0 && thr[v] < INFINITY && thr[v] > 0 ? mem_area / thr[v] : 0;
        double b;
        int c;
        int64_t nd;
        st = relax_solve(&m, &half, &b, &c, &nd, err);
        *nodes += nd;
        if (!st && (v == 0 || b > *lb)) *lb = b, *complete = c;
    }
    free(rho);
    zel_model_free(&m);
    return st;
}
