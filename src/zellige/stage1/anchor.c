// stage1/anchor.c — stage 1 of the Zellige planner: exact, lexicographic anchor placement.
//   (1) T* = min over ECF placements of the max anchor load, memory caps respected;
//   (2) K* = min number of split anchors subject to every load <= (1 + eps) T*.
// Both solves are the branch-and-bound of exact/bb.c, started from the best of a greedy ladder
// and the warm-start candidate (the previous step's choice, completed greedily). The root
// bound is the area/fluid bound; when the node budget ends the search, the reported bound is
// raised by the cover bound (exact/bound_cover.c, bisection on T) where it pays.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zellige/internal.h"
#include "zellige/rmq.h"

// Completes a partial assignment (-1 = unset) greedily (lowest resulting block max) and
// evaluates it. Returns 1 if feasible.
static int complete_warm(const zel_model *m, const int32_t *warm, zel_sol *out) {
    int32_t N = m->n_ranks;
    double *L = malloc(sizeof(double) * 2 * (size_t)N);
    if (!L) return 0;
    double *H = L + N;
    memcpy(L, m->base_load, sizeof(double) * (size_t)N);
    memcpy(H, m->base_mem, sizeof(double) * (size_t)N);
    int ok = 1;
    for (int64_t u = 0; u < m->n_units && ok; u++) {  // fixed units first
        int32_t j = warm[u];
        const zel_grp *G = &m->grps[m->grp_of[u]];
        if (j < 0) continue;
        if (j >= G->n_opts) {
            ok = 0;
            break;
        }
        const zel_opt *o = &G->opts[j];
        for (int32_t r = o->start; r < o->start + o->degree; r++) L[r] += o->time, H[r] += o->mem;
        out->opt[u] = j;
    }
    for (int64_t u = 0; u < m->n_units && ok; u++) {
        if (warm[u] >= 0) continue;
        const zel_grp *G = &m->grps[m->grp_of[u]];
        int32_t best = -1;
        double be = INFINITY;
        for (int32_t j = 0; j < G->n_opts; j++) {
            const zel_opt *o = &G->opts[j];
            double e, h;
            zel_block_max(o, L, H, &e, &h);
            if (h + o->mem > m->mem_room) continue;
            if (e + o->time < be) be = e + o->time, best = j;
        }
        if (best < 0) {
            ok = 0;
            break;
        }
        const zel_opt *o = &G->opts[best];
        for (int32_t r = o->start; r < o->start + o->degree; r++) L[r] += o->time, H[r] += o->mem;
        out->opt[u] = best;
    }
    free(L);
    if (!ok) return 0;
    zel_sol_canon(m, out);
    return zel_sol_eval(m, out->opt, NULL, NULL, &out->T, &out->K);
}

// Tuning (tuning.h). ZEL_LNS_SUB_MIN: least node budget of one neighbourhood sub-search.
// ZEL_LNS_DEEP: neighbourhood budgets from this size on (a multiset's first visit in
// two_stage.c: 20 000 nodes at 16 and 32 ranks; or a user's --lns-nodes) also run
// zel_column_leftover after the search: on bench_planner_quality it lowered 32-rank batches by
// up to 0.9 % and made none worse; after the search, not before, because a better start sent
// the search elsewhere (4 of 100 32-high batches ended 0.1-0.2 % worse).
// ZEL_BEAM_*: the beam on deep searches (search/beam.c): the first 2 units, 4 prefixes kept.
// On bench_planner_quality 32xA6000 high: widths 4 and 8 give the same plans, 2 loses batch 9
// (0.52 %); 3 levels chose worse prefixes by their raw completions on batch 9 (a probe).
// Skipped within 0.5 % of the root bound: the latency bench's plans unchanged at 16 and 32
// ranks (200 and 20 steps), quality bench 32 high bestgap mean 0.0194 -> 0.0197 % (max the
// same), its first-visit-heavy p50 there 16.8 -> 11.1 ms.

// Phase 1 by rising caps. From the greedy incumbent the search spends most of its nodes before
// it meets the optimum (measured: from the optimum it needs 2-25x fewer on 8xA800 high load).
// So first search below caps c = lb (1 + s), s = 0.5 %, 2 % (root gaps are 0.2-1 %; finer or
// more steps cost more nodes on the latency bench), each a full branch-and-bound whose
// incumbent is the cap: one that finds a solution finishes as an ordinary search (its result is
// optimal when it completes); one that completes without a solution proves every solution is
// >= c (1 - gap), and the next cap is tried. When the caps reach the incumbent, the ordinary
// search from the incumbent runs with the nodes left. One node budget for all of it.
static zg_status minmax_caps(const zel_model *m, zel_sol *sol, const zel_limits *lim, double lb,
                             zel_stats *out, zg_error *err) {
    static const double steps[] = {5e-3, 2e-2};
    double gap = lim && lim->rel_gap > ZEL_REL_TOL ? lim->rel_gap : 0;
    int64_t budget = lim ? lim->max_nodes : 0, used = 0;
    zel_limits l = {0, 0, 0, 0, 0};
    if (lim) l = *lim;
    zel_sol tmp;
    zg_status rc = zel_sol_alloc(m, &tmp, err);
    if (rc) return rc;
    double proven = 0;
    memset(out, 0, sizeof *out);
    size_t ns = sizeof steps / sizeof *steps;
    for (size_t i = 0; i < ns && lb > 0 && sol->T < INFINITY; i++) {
        double c = lb * (1 + steps[i]);
        if (!(c < sol->T * (1 - gap))) break;  // the incumbent is as tight: ordinary search
        if (budget > 0 && budget - used < 1) break;
        l.max_nodes = budget > 0 ? budget - used : 0;
        tmp.T = c, tmp.K = 0;
        zel_stats s;
        if ((rc = zel_solve_minmax(m, &tmp, &l, &s, err))) break;
        used += s.nodes;
        int found = tmp.T < c;
        if (found) {
            zel_sol_copy(m, sol, &tmp);
            sol->T = tmp.T, sol->K = tmp.K;
        }
        if (!s.complete || found) {
            out->nodes = used;
            out->complete = s.complete;
            out->lb = s.complete ? sol->T * (1 - gap) : (proven > lb ? proven : lb);
            zel_sol_free(&tmp);
            return ZG_OK;
        }
        proven = c * (1 - gap);  // no solution below this
    }
    zel_sol_free(&tmp);
    if (rc) return rc;
    zel_stats s = {0};
    if (budget > 0 && budget - used < 1) {
        s.complete = 0;  // the caps used the whole budget
    } else {
        l.max_nodes = budget > 0 ? budget - used : 0;
        if ((rc = zel_solve_minmax(m, sol, &l, &s, err))) return rc;
    }
    *out = s;
    out->nodes = used + s.nodes;
    if (!s.complete && proven > out->lb) out->lb = proven;
    return ZG_OK;
}

zg_status zel_anchor_solve(const zel_model *m, double eps, const zel_limits *lim,
                           const int32_t *warm, zel_sol *sol, zel_stage1 *st, zg_error *err) {
    return zel_anchor_solve_alts(m, eps, lim, warm, sol, NULL, NULL, st, err);
}

zg_status zel_anchor_solve_alts(const zel_model *m, double eps, const zel_limits *lim,
                                const int32_t *warm, zel_sol *sol, zel_sol *alt0, zel_sol *alt1,
                                zel_stage1 *st, zg_error *err) {
    return zel_anchor_solve_split(m, eps, lim, NULL, warm, sol, alt0, alt1, st, err);
}

zg_status zel_anchor_solve_split(const zel_model *m, double eps, const zel_limits *lim,
                                 const zel_limits *lim_split, const int32_t *warm, zel_sol *sol,
                                 zel_sol *alt0, zel_sol *alt1, zel_stage1 *st, zg_error *err) {
    return zel_anchor_solve_lns(m, eps, lim, lim_split, 0, warm, sol, alt0, alt1, st, err);
}

zg_status zel_anchor_solve_lns(const zel_model *m, double eps, const zel_limits *lim,
                               const zel_limits *lim_split, int64_t lns_nodes,
                               const int32_t *warm, zel_sol *sol, zel_sol *alt0, zel_sol *alt1,
                               zel_stage1 *st, zg_error *err) {
    double t0 = zg_time_now();
    if (alt0) alt0->T = INFINITY;
    if (alt1) alt1->T = INFINITY;
    memset(st, 0, sizeof *st);
    zg_status rc;
    double lb = zel_model_lower_bound(m);
    if (!zel_heuristic(m, lb, sol)) sol->T = INFINITY, sol->K = 0;
    zel_sol w = {0};
    int have_w = 0;
    if (warm) {
        if ((rc = zel_sol_alloc(m, &w, err))) return rc;
        have_w = complete_warm(m, warm, &w);
    }
    int w_better = have_w && (w.T < sol->T || (w.T == sol->T && w.K < sol->K));
    if (alt0) {  // the better start: the incumbent of the search without the neighbourhoods
        if (w_better) zel_sol_copy(m, alt0, &w);
        else if (sol->T < INFINITY) zel_sol_copy(m, alt0, sol);
    }
    zel_stats s1 = {0}, s2 = {0};
    int done1 = 0;
    int64_t lns_used = 0;
    if (w_better) zel_sol_copy(m, sol, &w);
    if (lns_nodes > 0 && sol->T > lb * (1 + ZEL_REL_TOL)) {
        // column-structured incumbents first (search/column.c): the whole model, then layers of
        // groups over the others; the neighbourhood search then refines the best
        zel_sol c;
        if ((rc = zel_sol_alloc(m, &c, err))) {
            if (warm) zel_sol_free(&w);
            return rc;
        }
        if (zel_column_incumbent(m, lb, sol->T, &c) &&
            (sol->T == INFINITY || c.T < sol->T * (1 - ZEL_REL_TOL) ||
             (c.T <= sol->T && c.K < sol->K)))
            zel_sol_copy(m, sol, &c);
        zel_sol_free(&c);
        zel_column_improve(m, lb, sol);
    }
    if (lns_nodes > 0 && sol->T < INFINITY && sol->T > lb * (1 + ZEL_REL_TOL)) {
        // a better incumbent first (search/lns.c): several groups re-solved exactly at once
        int64_t sub = lns_nodes / 8 > ZEL_LNS_SUB_MIN ? lns_nodes / 8 : ZEL_LNS_SUB_MIN;
        lns_used = zel_lns_improve(m, sol, lns_nodes, sub);
        // a deep search also tries the leftover layouts (search/column.c) on what it ended on, and
        // polishes an improvement with an eighth of its budget
        if (lns_nodes >= ZEL_LNS_DEEP && zel_column_leftover(m, lb, sol))
            lns_used += zel_lns_improve(m, sol, lns_nodes / 8, sub);
        // then the nested columns (search/column.c), polished the same way when they are better
        // (bench_planner_quality 32xA6000 high: bestgap mean 0.0197 -> 0.0063 %, max 0.25 ->
        // 0.11 %, 9 batches better; 16 high 2 batches +0.001 / -0.004 %, 32 low the same plans)
        if (lns_nodes >= ZEL_LNS_DEEP && sol->T > lb * (1 + ZEL_REL_TOL)) {
            zel_sol nm;
            if ((rc = zel_sol_alloc(m, &nm, err))) {
                if (warm) zel_sol_free(&w);
                return rc;
            }
            if (zel_column_nested(m, lb, sol->T, &nm) && nm.T < sol->T * (1 - ZEL_REL_TOL)) {
                lns_used += zel_lns_improve(m, &nm, lns_nodes / 8, lns_nodes / 64);
                zel_sol_copy(m, sol, &nm);
            }
            zel_sol_free(&nm);
        }
        // and the beam over the largest anchors' options (search/beam.c), polished the same way,
        // where the incumbent is still ZEL_BEAM_GAP above the root bound
        if (lns_nodes >= ZEL_LNS_DEEP && sol->T > lb * (1 + ZEL_BEAM_GAP)) {
            zel_sol bm;
            if ((rc = zel_sol_alloc(m, &bm, err))) {
                if (warm) zel_sol_free(&w);
                return rc;
            }
            if (zel_beam_incumbent(m, lb, ZEL_BEAM_LEVELS, ZEL_BEAM_WIDTH, &bm)) {
                lns_used += zel_lns_improve(m, &bm, lns_nodes / 8, lns_nodes / 64);
                if (bm.T < sol->T * (1 - ZEL_REL_TOL) || (bm.T <= sol->T && bm.K < sol->K))
                    zel_sol_copy(m, sol, &bm);
            }
            zel_sol_free(&bm);
        }
    }
    if (warm) zel_sol_free(&w);
    if (sol->T <= lb * (1 + ZEL_REL_TOL) && sol->T < INFINITY) {
        done1 = 1;  // the incumbent meets the lower bound: optimal
        s1.complete = 1;
        s1.lb = sol->T;
    } else {
        if ((rc = minmax_caps(m, sol, lim, lb, &s1, err))) return rc;
        done1 = s1.complete;
    }
    if (sol->T == INFINITY)
        return zg_error_set(err, ZG_ERR_INFEASIBLE,
                            "zellige: the %lld anchor sequences fit no joint placement under the "
                            "memory cap (every option combination overloads a rank); lower the "
                            "load or allow larger degrees",
                            (long long)m->n_units);
    if (!done1 && !(lim && lim->no_cover) && zel_cover_worth(m))
        lb = zel_cover_root_bound(m, lb, sol->T);  // budget ended: the cover bound on T*
    st->T = sol->T;
    st->lb = s1.lb > lb ? s1.lb : lb;  // (done1: T itself, or T (1 - gap) after a search)
    if (st->lb > sol->T) st->lb = sol->T;
    int done2 = 1;
    if (alt1) zel_sol_copy(m, alt1, sol);  // min T before the split minimisation
    if (sol->K > 0) {
        double tcap = (1 + eps) * sol->T;
        if ((rc = zel_solve_minsplit(m, tcap, sol, lim_split ? lim_split : lim, &s2, err)))
            return rc;
        done2 = s2.complete;
    }
    st->K = sol->K;
    st->optimal = done1 && done2;
    st->nodes = lns_used + s1.nodes + s2.nodes;
    st->seconds = zg_time_now() - t0;
    return ZG_OK;
}

void zel_anchor_replay(const zel_model *m, double lb, const zel_sol *from, zel_sol *sol,
                       zel_sol *alt0, zel_sol *alt1, zel_stage1 *st) {
    double t0 = zg_time_now();
    memset(st, 0, sizeof *st);
    zel_sol_copy(m, sol, from);
    if (alt0) zel_sol_copy(m, alt0, from);
    zel_local_improve(m, sol, 1);
    if (alt1) zel_sol_copy(m, alt1, sol);
    st->T = sol->T;
    st->K = sol->K;
    st->lb = lb;
    st->optimal = 0;  // nothing proven (K not minimised here)
    st->replayed = 1;
    st->seconds = zg_time_now() - t0;
}
