// zel_lns.c — large-neighbourhood improvement of a stage-1 incumbent.
//
// The greedy start of the min-T search can be several percent above the optimum at 16 / 32
// ranks, and the search needs thousands of nodes to get past it (docs, eighth pass). Moving one
// unit (1-opt) or re-placing one group exactly does not close that gap: it needs moves of
// several groups at once. Here a neighbourhood frees a set of units and fixes every other unit
// where it is: the fixed units' loads and memory become the ledgers of a sub-model with the
// free units as its groups (same options, same extra_area / fill_mem), whose objective is the
// full model's objective for every completion. The exact branch-and-bound (zel_bb.c) on that
// sub-model, with the current T as its incumbent and a small node budget, either finds a
// strictly better completion (accepted) or not (nothing changes).
//
// Neighbourhoods, in this order, first improvement, repeated while a round improves:
//   * every pair of groups (when there are >= 3 groups; with fewer, a pair is the whole model);
//   * rank windows (N >= 4, q = N/4): the units whose current block meets [0, 2q), [q, 3q),
//     [2q, N), or [0, q) and [3q, N) (skipped when that frees every unit); and, N >= 16 with
//     e = N/8, the units meeting [k e, (k + 2) e), k = 0..6 (smaller sub-searches that finish).
// A small sub-model is first re-packed by the column DP (zel_column.c) over the fixed units.
// A neighbourhood that failed is not tried again until the solution changes. Deterministic
// (fixed order, node budgets only). The result is never worse than the input,
// and only ever an incumbent: the exact search that follows is unchanged.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan/zel_internal.h"

// Certified gap of a sub-search: it only looks for completions at least 0.2 % better than the
// current T (measured: 1e-4 spent the budget on small steps and left the large ones; 2e-3 and
// 5e-3 gave similar plans with fewer nodes). Incumbents only: the exact search is unaffected.
#define ZEL_LNS_GAP 2e-3

// Sub-models with at most this many count vectors (prod over groups of count + 1) try the column
// DP before the branch-and-bound (measured, bench_planner_quality 16xA800 high / 32xA6000
// high / low: max gap 1.04 / 1.19 / 0.32 % -> 0.68 / 0.75 / 0.24 %; 16 vectors: no gain; 64:
// the same plans as 32, slower).
#define ZEL_LNS_COL_STATES 32

typedef struct lns_ws {
    zel_model sub;        // shallow: grps share the parent's option arrays
    int64_t *sub_unit;    // sub unit -> parent unit
    double *L, *H;        // N each
    zel_sol cand;         // sub-model solution (capacity: twice every parent unit)
} lns_ws;

// Builds the sub-model of the free units (free[u] = 1) on top of the other units' loads.
// Returns the number of free units.
static int64_t sub_build(const zel_model *m, const zel_sol *s, const uint8_t *free_u, lns_ws *w) {
    int32_t N = m->n_ranks;
    zel_model *q = &w->sub;
    memcpy(w->L, m->base_load, sizeof(double) * (size_t)N);
    memcpy(w->H, m->base_mem, sizeof(double) * (size_t)N);
    int32_t ng = 0;
    int64_t nu = 0;
    for (int32_t g = 0; g < m->n_grps; g++) {
        int64_t cnt = 0;
        for (int64_t u = m->unit0[g]; u < m->unit0[g + 1]; u++) {
            if (free_u[u]) {
                w->sub_unit[nu + cnt] = u;
                cnt++;
                continue;
            }
            const zel_opt *o = &m->grps[g].opts[s->opt[u]];
            for (int32_t r = o->start; r < o->start + o->degree; r++)
                w->L[r] += o->time, w->H[r] += o->mem;
        }
        if (cnt == 0) continue;
        q->grps[ng] = m->grps[g];
        q->grps[ng].count = cnt;
        q->unit0[ng] = nu;
        for (int64_t k = 0; k < cnt; k++) q->grp_of[nu + k] = ng;
        nu += cnt;
        ng++;
    }
    q->n_grps = ng;
    q->n_units = nu;
    q->unit0[ng] = nu;
    return nu;
}

// Re-solves the free units exactly (budget `nodes`); on a strictly better T writes them back
// into s (canonical) and returns 1. *used += nodes spent.
static int sub_solve(const zel_model *m, zel_sol *s, const uint8_t *free_u, lns_ws *w,
                     int64_t nodes, int64_t *used) {
    int64_t nu = sub_build(m, s, free_u, w);
    if (nu == 0 || nu == m->n_units) return 0;
    for (int64_t k = 0; k < nu; k++) w->cand.opt[k] = s->opt[w->sub_unit[k]];
    w->cand.T = s->T;
    w->cand.K = 0;
    // the freed units as columns over the fixed ones first (zel_column.c): it finds the stacked
    // re-packings the node budget misses; the branch-and-bound when it does not help. Small
    // sub-models only (the DP's cost grows with prod (count + 1))
    int col = 0;
    int64_t states = 1;
    for (int32_t g = 0; g < w->sub.n_grps && states <= ZEL_LNS_COL_STATES; g++)
        states *= w->sub.grps[g].count + 1;
    if (states <= ZEL_LNS_COL_STATES) {
        zel_sol c = {w->cand.opt + nu, INFINITY, 0};
        double qlb = zel_model_lower_bound(&w->sub);
        if (zel_column_incumbent(&w->sub, qlb, s->T, &c) && c.T < s->T * (1 - 1e-12)) {
            memcpy(w->cand.opt, c.opt, sizeof(int32_t) * (size_t)nu);
            w->cand.T = c.T;
            col = 1;
        }
    }
    if (!col) {
        zel_limits lim = {nodes, 0, ZEL_LNS_GAP, 0};
        zel_stats st;
        zg_error err;
        if (zel_solve_minmax(&w->sub, &w->cand, &lim, &st, &err)) return 0;
        *used += st.nodes;
    }
    if (!(w->cand.T < s->T * (1 - 1e-12))) return 0;
    // the sub units of a group are consecutive in both numberings: write them back in order
    int32_t *keep = malloc(sizeof(int32_t) * (size_t)m->n_units);
    if (!keep) return 0;
    memcpy(keep, s->opt, sizeof(int32_t) * (size_t)m->n_units);
    for (int64_t k = 0; k < nu; k++) s->opt[w->sub_unit[k]] = w->cand.opt[k];
    zel_sol_canon(m, s);
    double T;
    int64_t K;
    if (!zel_sol_eval(m, s->opt, NULL, NULL, &T, &K) || !(T < s->T)) {
        memcpy(s->opt, keep, sizeof(int32_t) * (size_t)m->n_units);  // rounding: keep the old
        free(keep);
        return 0;
    }
    free(keep);
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

int64_t zel_lns_improve(const zel_model *m, zel_sol *s, int64_t max_nodes, int64_t sub_nodes) {
    int32_t N = m->n_ranks;
    if (m->n_units < 2 || N < 2 || s->T == INFINITY || max_nodes <= 0 || sub_nodes <= 0)
        return 0;
    lns_ws w;
    memset(&w, 0, sizeof w);
    w.sub = *m;
    w.sub.n_sym = 0;  // tile swaps need not be symmetries of the fixed ledgers
    w.sub.sym = NULL;
    memset(&w.sub.arena, 0, sizeof w.sub.arena);
    size_t nu = (size_t)m->n_units;
    w.sub.grps = malloc(sizeof(zel_grp) * (size_t)m->n_grps);
    w.sub.unit0 = malloc(sizeof(int64_t) * ((size_t)m->n_grps + 1));
    w.sub.grp_of = malloc(sizeof(int32_t) * nu);
    w.sub_unit = malloc(sizeof(int64_t) * nu);
    w.L = malloc(sizeof(double) * 2 * (size_t)N);
    w.cand.opt = malloc(sizeof(int32_t) * 2 * nu);  // second half: the column candidate
    uint8_t *free_u = malloc(nu);
    int64_t used = 0;
    if (!w.sub.grps || !w.sub.unit0 || !w.sub.grp_of || !w.sub_unit || !w.L || !w.cand.opt ||
        !free_u)
        goto done;
    w.H = w.L + N;
    w.sub.base_load = w.L;
    w.sub.base_mem = w.H;
    // a neighbourhood that failed on the current solution is not tried again until it changes
    int32_t n_pairs = m->n_grps >= 3 ? m->n_grps * (m->n_grps - 1) / 2 : 0;
    int32_t n_half = N >= 4 ? 4 : 0, n_quarter = N >= 16 ? 7 : 0;
    int32_t n_nb = n_pairs + n_half + n_quarter;
    int64_t *failed = malloc(sizeof(int64_t) * (size_t)(n_nb > 0 ? n_nb : 1));
    if (!failed) goto done;
    for (int32_t k = 0; k < n_nb; k++) failed[k] = -1;
    int64_t version = 0;
    for (int improved = 1; improved && used < max_nodes;) {
        improved = 0;
        for (int32_t k = 0; k < n_nb && used < max_nodes; k++) {
            if (failed[k] == version) continue;
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
            int64_t b = max_nodes - used < sub_nodes ? max_nodes - used : sub_nodes;
            if (sub_solve(m, s, free_u, &w, b, &used)) {
                improved = 1;
                version++;
            } else {
                failed[k] = version;
            }
        }
    }
    free(failed);
done:
    free(w.sub.grps), free(w.sub.unit0), free(w.sub.grp_of), free(w.sub_unit), free(w.L);
    free(w.cand.opt), free(free_u);
    return used;
}
