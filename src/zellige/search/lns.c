// search/lns.c — large-neighbourhood improvement of a stage-1 incumbent.
//
// The greedy start of the min-T search can be several percent above the optimum at 16 / 32
// ranks, and the search needs thousands of nodes to get past it. Moving one
// unit (1-opt) or re-placing one group exactly does not close that gap: it needs moves of
// several groups at once. Here a neighbourhood frees a set of units and fixes every other unit
// where it is: the fixed units' loads and memory become the ledgers of a sub-model with the
// free units as its groups (same options, same extra_area / fill_mem), whose objective is the
// full model's objective for every completion. The exact branch-and-bound (exact/bb.c) on that
// sub-model, with the current T as its incumbent and a small node budget, either finds a
// strictly better completion (accepted) or not (nothing changes).
//
// Neighbourhoods, in this order, first improvement, repeated while a round improves:
//   * every pair of groups (when there are >= 3 groups; with fewer, a pair is the whole model);
//   * rank windows (N >= 4, q = N/4): the units whose current block meets [0, 2q), [q, 3q),
//     [2q, N), or [0, q) and [3q, N) (skipped when that frees every unit); and, N >= 16 with
//     e = N/8, the units meeting [k e, (k + 2) e), k = 0..6 (smaller sub-searches that finish;
//     they get ZEL_LNS_EIGHTH_MUL times the sub-budget).
// A small sub-model is first re-packed by the column DP (search/column.c) over the fixed units.
// A neighbourhood that failed is not tried again until the solution changes. Deterministic
// (fixed order, node budgets only). The result is never worse than the input,
// and only ever an incumbent: the exact search that follows is unchanged.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zellige/internal.h"

// Certified gap of a sub-search: it only looks for completions at least 0.07 % better than the
// current T. Measured per batch against bench/data/planner_best.json (bench_planner_quality
// --best, 16xA800 high / 32xA6000 high / low, 5 000-node budget): 2e-3 gave
// gap means 0.082 / 0.131 / 0.032 %, 7e-4 0.037 / 0.067 / 0.017 % for +20 % (32 ranks) / +36 %
// (16 ranks) instructions; 4e-4 and 1e-3 were no better; 5e-3 worse; 1e-4 spent
// the budget on small steps. Incumbents only: the exact search is unaffected.

// Sub-models with at most this many count vectors (prod over groups of count + 1) try the column
// DP before the branch-and-bound (measured, bench_planner_quality 16xA800 high / 32xA6000
// high / low: max gap 1.04 / 1.19 / 0.32 % -> 0.68 / 0.75 / 0.24 %; 16 vectors: no gain; 64:
// the same plans as 32, slower).

// The eighth-width windows free the fewest anchors; their sub-searches get this many times the
// sub-budget (bench: it reaches re-packings of a few anchors that a plain
// sub-search misses, for +10 % instructions at 32xA6000; 2x gained less, 4x for every
// neighbourhood cost +44 %).

typedef struct lns_ws {
    zel_sub sub;
    zel_sol cand;     // sub-model solution (capacity: twice every parent unit)
    uint8_t *free_u;  // n_units: the neighbourhood
    int64_t nu;       // its free units
    int64_t nodes;    // nodes the last sub_try spent
    int better;       // 1: cand beats the solution it was solved on
} lns_ws;

// Re-solves the units marked in w->free_u exactly (budget `nodes`) without touching s: w->better
// = 1 when w->cand (sub-model units) beats s->T; w->nodes = the nodes spent.
static void sub_try(const zel_model *m, const zel_sol *s, lns_ws *w, int64_t nodes) {
    w->better = 0, w->nodes = 0;
    w->nu = zel_sub_build(&w->sub, m, s, w->free_u);
    const zel_model *q = &w->sub.m;
    int64_t nu = w->nu;
    if (nu == 0 || nu == m->n_units) return;
    for (int64_t k = 0; k < nu; k++) w->cand.opt[k] = s->opt[w->sub.unit[k]];
    w->cand.T = s->T;
    w->cand.K = 0;
    // the freed units as columns over the fixed ones first (search/column.c): it finds the stacked
    // re-packings the node budget misses; the branch-and-bound when it does not help. Small
    // sub-models only (the DP's cost grows with prod (count + 1))
    int col = 0;
    int64_t states = 1;
    for (int32_t g = 0; g < q->n_grps && states <= ZEL_LNS_COL_STATES; g++)
        states *= q->grps[g].count + 1;
    if (states <= ZEL_LNS_COL_STATES) {
        zel_sol c = {w->cand.opt + nu, INFINITY, 0};
        double qlb = zel_model_lower_bound(q);
        if (zel_column_incumbent(q, qlb, s->T, &c) && c.T < s->T * (1 - ZEL_STRICT)) {
            memcpy(w->cand.opt, c.opt, sizeof(int32_t) * (size_t)nu);
            w->cand.T = c.T;
            col = 1;
        }
    }
    if (!col) {
        zel_limits lim = {nodes, 0, ZEL_LNS_GAP, 0, 1};  // only the nodes are read
        zel_stats st;
        zg_error err;
        if (zel_solve_minmax(q, &w->cand, &lim, &st, &err)) return;
        w->nodes = st.nodes;
    }
    w->better = w->cand.T < s->T * (1 - ZEL_STRICT);
}

// Writes w's better completion into s (canonical) when the full model agrees that T drops;
// returns 1 then. keep: n_units scratch.
static int sub_apply(const zel_model *m, zel_sol *s, const lns_ws *w, int32_t *keep) {
    // the sub units of a group are consecutive in both numberings: write them back in order
    memcpy(keep, s->opt, sizeof(int32_t) * (size_t)m->n_units);
    for (int64_t k = 0; k < w->nu; k++) s->opt[w->sub.unit[k]] = w->cand.opt[k];
    zel_sol_canon(m, s);
    double T;
    int64_t K;
    if (!zel_sol_eval(m, s->opt, NULL, NULL, &T, &K) || !(T < s->T)) {
        memcpy(s->opt, keep, sizeof(int32_t) * (size_t)m->n_units);  // rounding: keep the old
        return 0;
    }
    s->T = T, s->K = K;
    return 1;
}

// Marks the units whose current block meets [a, b) or [c, d).
static void mark_window(const zel_model *m, const zel_sol *s, int32_t a, int32_t b, int32_t c,
                        int32_t d, uint8_t *free_u) {
    for (int64_t u = 0; u < m->n_units; u++) {
        const zel_opt *o = &m->grps[m->grp_of[u]].opts[s->opt[u]];
        int32_t s0 = o->start, s1 = o->start + o->degree;
        free_u[u] = (uint8_t)((s0 < b && s1 > a) || (s0 < d && s1 > c));
    }
}

// Marks the units of neighbourhood k (pairs of groups, then halves, then eighths) in free_u.
static void mark_nb(const zel_model *m, const zel_sol *s, int32_t k, int32_t n_pairs,
                    int32_t n_half, uint8_t *free_u) {
    int32_t N = m->n_ranks;
    if (k < n_pairs) {
        int32_t i = 0, j, r = k;  // k-th pair (i < j) in lexicographic order
        while (r >= m->n_grps - 1 - i) r -= m->n_grps - 1 - i, i++;
        j = i + 1 + r;
        for (int64_t u = 0; u < m->n_units; u++) {
            int32_t g = m->grp_of[u];
            free_u[u] = (uint8_t)(g == i || g == j);
        }
    } else if (k >= n_pairs + n_half) {
        int32_t e = N / 8, w8 = k - n_pairs - n_half;  // [w8 e, (w8 + 2) e)
        mark_window(m, s, w8 * e, w8 == 6 ? N : (w8 + 2) * e, 0, 0, free_u);
    } else {
        int32_t q = N / 4, w4 = k - n_pairs;
        static const int32_t win[4][4] = {
            {0, 2, 0, 0}, {1, 3, 0, 0}, {2, 4, 0, 0}, {0, 1, 3, 4}};  // in quarters
        int32_t a = win[w4][0] * q, b = win[w4][1] == 4 ? N : win[w4][1] * q;
        int32_t c = win[w4][2] * q, d = win[w4][3] == 4 ? N : win[w4][3] * q;
        mark_window(m, s, a, b, c, d, free_u);
    }
}

int64_t zel_lns_improve(const zel_model *m, zel_sol *s, int64_t max_nodes, int64_t sub_nodes) {
    int32_t N = m->n_ranks;
    if (m->n_units < 2 || N < 2 || s->T == INFINITY || max_nodes <= 0 || sub_nodes <= 0)
        return 0;
    int32_t n_pairs = m->n_grps >= 3 ? m->n_grps * (m->n_grps - 1) / 2 : 0;
    int32_t n_half = N >= 4 ? 4 : 0, n_quarter = N >= 16 ? 7 : 0;
    int32_t n_nb = n_pairs + n_half + n_quarter;
    size_t nu = (size_t)m->n_units;
    lns_ws w;
    int ok = zel_sub_init(&w.sub, m);
    w.cand.opt = malloc(sizeof(int32_t) * 2 * nu);  // second half: the column candidate
    w.free_u = malloc(nu);
    // a neighbourhood that failed on the current solution is not tried again until it changes,
    // and neither is one that frees the same units as one that failed on it (28 % of the
    // sub-searches at 16 / 32 ranks, most of them cheap: 8 % fewer instructions)
    int64_t *failed = malloc(sizeof(int64_t) * (size_t)(n_nb > 0 ? n_nb : 1));
    int32_t *keep = malloc(sizeof(int32_t) * nu);
    uint8_t *fset = malloc(nu * (size_t)(n_nb > 0 ? n_nb : 1));  // failed free sets, this version
    int32_t nf = 0;
    int64_t used = 0;
    if (!ok || !w.cand.opt || !w.free_u || !failed || !keep || !fset) goto done;
    for (int32_t k = 0; k < n_nb; k++) failed[k] = -1;
    int64_t version = 0;
    for (int improved = 1; improved && used < max_nodes;) {
        improved = 0;
        for (int32_t k = 0; k < n_nb && used < max_nodes; k++) {
            if (failed[k] == version) continue;
            mark_nb(m, s, k, n_pairs, n_half, w.free_u);
            int dup = 0;
            for (int32_t q = 0; q < nf && !dup; q++)
                dup = !memcmp(fset + (size_t)q * nu, w.free_u, nu);
            if (!dup) {
                int64_t sn = k >= n_pairs + n_half ? ZEL_LNS_EIGHTH_MUL * sub_nodes : sub_nodes;
                int64_t b = max_nodes - used < sn ? max_nodes - used : sn;
                sub_try(m, s, &w, b);
                used += w.nodes;
                if (w.better && sub_apply(m, s, &w, keep)) {
                    improved = 1;
                    version++;
                    nf = 0;
                    continue;
                }
                memcpy(fset + (size_t)nf++ * nu, w.free_u, nu);
            }
            failed[k] = version;
        }
    }
done:
    zel_sub_free(&w.sub);
    free(w.cand.opt), free(w.free_u), free(failed), free(keep), free(fset);
    return used;
}
