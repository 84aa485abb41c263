// exact/relax.c — a lower bound on every plan's makespan (the joint optimum) from the stage-1
// model made a relaxation, solved by the branch-and-bound.
//
// The anchors stay exact (their own options, Pareto-pruned per block, which only removes
// dominated choices). The fillers become fluid work, but not the stage-1 planner's fluid: that
// one spreads the fillers' whole time at their mean density (work per byte), which a plan can
// beat on a memory-tight rank by packing it with the densest fillers, so its optimum is not a
// bound. Here filler type k (a group the cut left out) has least area a_k over its options and
// work W_k = count_k a_k; a piece of option o (degree d_o, per-rank time t_o, memory m_o) does
// a_k / d_o of work in time t_o >= a_k / d_o and memory m_o, so each unit of type k's work takes
// at least one second and 1 / rho_k bytes, rho_k = the largest (a_k / d_o) / m_o.
//
// For any density theta > 0 a rank with anchor load L and memory H has filler capacity
// c(T) = min(T - L, theta (cap - H)) under makespan T, and a unit of type k's work uses up at
// least min(1, theta / rho_k) of it (one second of the time term, or 1 / rho_k bytes = theta /
// rho_k of the memory term). So every plan with makespan T satisfies
//     sum_r min(T - L_r, theta (cap - H_r)) >= D(theta) = sum_k W_k min(1, theta / rho_k),
// and also T >= max_r L_r and T >= (sum_r L_r + sum_k W_k) / N. That is the stage-1 objective
// with extra_area = sum_k W_k, a memory-aware fluid of D(theta) at density theta (free_area =
// the rest, zel_mem_area) — and every plan's makespan is at least its minimum over anchor
// placements, which the branch-and-bound proves (or bounds from below when its budget ends).
// Weaker alternatives: theta = the largest density (D = all the work), and a variant that
// dropped the densest type from the memory term (weaker than theta = the second density, which
// still charges it theta / rho_1 per unit). With one theta per type density, on the quality
// bench's layouts the best theta gives the same value as the exact transportation bound (types
// to ranks, both resources per rank, solved as an LP in a probe) on every layout checked.
// Every theta holds for every plan at once, so the objective is the largest over them (the
// main fluid plus zel_model.n_xfl extras), one search minimises that: min over layouts of the
// max over theta, above the max over theta of each one's minimum (16xA800 high batch 18: the
// best layout for one density is worth 123.1 s for another).
//
// When a search does not finish, its bound is the root's: the depth-first search proves
// nothing until it has closed its top subtrees. So the budget left then goes to target probes:
// a search that prunes at a target tau below the incumbent proves "no placement below tau"
// when it finishes, and targets a little above the root's bound are often proven in a few
// nodes where the full search runs out (32xA6000 high batch 8: 192.77 -> 193.87 s).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zellige/internal.h"

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

// Budget of one search: what is left of lim's nodes and seconds (0 = no limit).
typedef struct budget {
    int64_t nodes;  // left (0 = no limit, < 0 = spent)
    double secs;    // left (0 = no limit, < 0 = spent)
} budget;

static int budget_spent(const budget *b) { return b->nodes < 0 || b->secs < 0; }

// A share 1/k of b as limits (rel_gap set by the caller).
static zel_limits budget_share(const budget *b, int k) {
    zel_limits l = {0, 0, 0, 0, 0};
    if (b->nodes > 0) l.max_nodes = b->nodes / k > 1 ? b->nodes / k : 1;
    if (b->secs > 0) l.time_limit_s = b->secs / k;
    return l;
}

static void budget_take(budget *b, int64_t nodes, double secs) {
    if (b->nodes > 0) b->nodes = b->nodes > nodes ? b->nodes - nodes : -1;
    if (b->secs > 0) b->secs = b->secs > secs ? b->secs - secs : -1;
}

// The relaxation's bound on model m (extra_area, free_area, fill_mem set) from incumbent sol
// (improved in place) under budget b: the exact search with half of it, then, if that does
// not finish, target probes with the rest (a quarter of what is left each).
static zg_status relax_solve(const zel_model *m, zel_sol *sol, budget *b, double *lb,
                             int *complete, int64_t *nodes, zg_error *err) {
    double root = zel_model_lower_bound(m);
    *lb = root, *complete = 0, *nodes = 0;
    zel_limits l = budget_share(b, 2);  // rel_gap 0: exact
    zel_stats s = {0};
    double t0 = zg_time_now();
    zg_status st = zel_solve_minmax(m, sol, &l, &s, err);
    if (st) return st;
    budget_take(b, s.nodes, zg_time_now() - t0);
    *nodes += s.nodes;
    if (s.complete) {
        *lb = sol->T * (1 - ZEL_REL_TOL), *complete = 1;  // INFINITY: no plan exists at all
        return ZG_OK;
    }
    if (sol->T < INFINITY && zel_cover_worth(m)) {
        double c = zel_cover_root_bound(m, *lb, sol->T);
        if (c > *lb) *lb = c;
    }
    // Probes: prune at target tg (rel_gap = 1 - tg / T: the search prunes at T (1 - gap));
    // finished = no placement below sol.T (1 - gap) (the incumbent may have improved
    // meanwhile, which only lowers that threshold). The first target is 1/16
    // of the way from the bound to the incumbent, the step doubles after a proof and halves the
    // interval after a failure.
    double lo = *lb, hi = sol->T, step = (hi - lo) / 16;
    for (int probe = 0; probe < 12 && !budget_spent(b) && hi - lo > 1e-5 * hi; probe++) {
        double tg = lo + step;
        if (tg >= hi) tg = lo + (hi - lo) / 2;
        zel_limits p = budget_share(b, 4);
        p.rel_gap = 1 - tg / sol->T;
        zel_stats ps = {0};
        double t1 = zg_time_now();
        st = zel_solve_minmax(m, sol, &p, &ps, err);
        if (st) return st;
        budget_take(b, ps.nodes, zg_time_now() - t1);
        *nodes += ps.nodes;
        if (sol->T < hi) hi = sol->T;
        if (ps.complete) {
            double got = ps.lb;  // sol.T (1 - gap): what the pruning proved
            if (got > lo) lo = got;
            step *= 2;
        } else {
            hi = tg < hi ? tg : hi;
            step = (hi - lo) / 2;
        }
    }
    if (lo > *lb) *lb = lo;
    return ZG_OK;
}

// The relaxation's parts: the stage-1 model (anchors by the cut) with extra_area = A (the
// fillers' least work), and per filler type its density rho[k] and work[k] (nt types), and the
// candidate densities th[0..n_var): each type's (distinct, finite), or one 0 (no memory term)
// when none is. rho, work, th: room for pr->n_groups + 1 each. The fluids are not set yet.
static zg_status relax_parts(const zg_plan_ctx *ctx, const zg_problem *pr, zel_model *m,
                             double *rho, double *work, double *th, int32_t *nt, int32_t *n_var,
                             zg_error *err) {
    zg_status st = zel_stage1_model(ctx, pr, m, err);  // anchors by the cut, fillers replaced
    if (st) return st;
    double A = 0;
    *nt = filler_types(pr, m, rho, work, &A, err);
    if (*nt < 0) {
        zel_model_free(m);
        return ZG_ERR_NOMEM;
    }
    *n_var = 0;
    for (int32_t k = 0; k < *nt; k++) {
        int dup = !(rho[k] < INFINITY) || rho[k] <= 0;
        for (int32_t i = 0; i < *n_var && !dup; i++) dup = th[i] == rho[k];
        if (!dup) th[(*n_var)++] = rho[k];
    }
    if (*n_var == 0) th[(*n_var)++] = 0;
    m->extra_area = A;
    return ZG_OK;
}

zg_status zel_relax_model(const zg_plan_ctx *ctx, const zg_problem *pr, zel_model *m,
                          zg_error *err) {
    size_t ng = (size_t)pr->n_groups + 1;
    double *rho = zg_calloc(3 * ng, sizeof(double), err);
    if (!rho) return ZG_ERR_NOMEM;
    int32_t nt, n_var;
    zg_status st = relax_parts(ctx, pr, m, rho, rho + ng, rho + 2 * ng, &nt, &n_var, err);
    if (!st) zel_model_set_densities(m, rho, rho + ng, nt, rho + 2 * ng, n_var);
    free(rho);
    return st;
}

zg_status zel_relax_bound(const zg_plan_ctx *ctx, const zg_problem *pr, const zel_limits *lim,
                          double pattern_s, double plan_T, double *lb, int *complete,
                          int64_t *nodes, int32_t *layout, zg_error *err) {
    *lb = 0, *complete = 0, *nodes = 0;
    if (layout)
        for (int32_t i = 0; i < pr->n_seqs; i++) layout[i] = -1;
    size_t ng = (size_t)pr->n_groups + 1;
    double *rho = zg_calloc(4 * ng, sizeof(double), err);
    if (!rho) return ZG_ERR_NOMEM;
    double *work = rho + ng, *th = rho + 2 * ng, *inc = rho + 3 * ng;
    int32_t nt, n_var;
    zel_model m;
    zg_status st = relax_parts(ctx, pr, &m, rho, work, th, &nt, &n_var, err);
    if (st) {
        free(rho);
        return st;
    }
    zel_sol *sols = zg_calloc((size_t)nt + 2, sizeof(zel_sol), err);
    if (!sols) {
        free(rho);
        zel_model_free(&m);
        return ZG_ERR_NOMEM;
    }
    // Each density alone: its incumbent (the greedy ladder; neighbourhoods on each as well took
    // time from the search: without them lbgap means 16 high 0.061 -> 0.054 %, 32 low 0.046 ->
    // 0.043 %, bench_planner_quality at 40 batches).
    // The ladders get half of the time (at 1024xH100 one takes 0.4 s); one cut short is none.
    double h_end = lim->time_limit_s > 0 ? zg_time_now() + 0.5 * lim->time_limit_s : 0;
    for (int32_t v = 0; v < n_var && !st; v++) {
        zel_model_set_densities(&m, rho, work, nt, &th[v], 1);
        st = zel_sol_alloc(&m, &sols[v], err);
        if (st) break;
        if (m.n_units == 0 ||
            !zel_heuristic_until(&m, zel_model_lower_bound(&m), h_end, &sols[v]))
            sols[v].T = INFINITY, sols[v].K = 0;
        inc[v] = sols[v].T;
    }
    // All densities at once (the objective the largest: a relaxation too, and a stronger one
    // than each alone); the one with the highest incumbent is the main fluid (it drives the
    // search's per-child keys and fluid-loss terms), up to ZEL_MAX_XFL others ride along.
    for (int32_t i = 1; i < n_var && !st; i++)  // densities by incumbent, descending
        for (int32_t j = i; j > 0 && inc[j] > inc[j - 1]; j--) {
            double t = th[j], c = inc[j];
            zel_sol q = sols[j];
            th[j] = th[j - 1], inc[j] = inc[j - 1], sols[j] = sols[j - 1];
            th[j - 1] = t, inc[j - 1] = c, sols[j - 1] = q;
        }
    if (!st) {
        zel_model_set_densities(&m, rho, work, nt, th, n_var);
        zel_sol *best = &sols[n_var];
        st = zel_sol_alloc(&m, best, err);
        best->T = INFINITY, best->K = 0;
        if (!st && m.n_units == 0) {  // nothing to place: the objective of the bare ledgers
            double *z = zg_calloc(4 * (size_t)m.n_ranks + 1, sizeof(double), err);
            if (!z) st = ZG_ERR_NOMEM;
            else *lb = zel_objective(&m, z, z + m.n_ranks, z + 2 * m.n_ranks), *complete = 1;
            free(z);
        } else if (!st) {
            // incumbent: the best of the single-density ones under the joint objective
            for (int32_t v = 0; v < n_var; v++) {
                double T;
                int64_t K;
                if (sols[v].T < INFINITY && zel_sol_eval(&m, sols[v].opt, NULL, NULL, &T, &K) &&
                    T < best->T)
                    zel_sol_copy(&m, best, &sols[v]), best->T = T, best->K = K;
            }
            if (best->T < INFINITY) zel_lns_improve(&m, best, ZEL_SIDE_LNS_NODES, ZEL_SIDE_LNS_SUB_NODES);
            budget bud = {lim->max_nodes, lim->time_limit_s};
            if (!st) st = relax_solve(&m, best, &bud, lb, complete, nodes, err);
            if (!st && layout && best->T < INFINITY) zel_sol_to_choice(&m, pr, best, layout);
            // then the pattern bound (exact/pattern.c) in its own time, from there to the better
            // of the relaxation's incumbent and the caller's plan (both above its optimum)
            double hi = best->T < plan_T ? best->T : plan_T;
            if (!st && !*complete && pattern_s >= 0 && hi > *lb) {
                zel_limits pl = {0, pattern_s, 0, 0, 0};
                double pat = *lb;
                st = zel_pattern_bound(&m, *lb, hi, &pl, &pat, err);
                if (!st && pat > *lb) *lb = pat;
            }
        }
    }
    for (int32_t v = 0; v <= n_var; v++) zel_sol_free(&sols[v]);
    free(rho), free(sols);
    zel_model_free(&m);
    return st;
}
