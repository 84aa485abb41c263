// exact/bound_cover.c — the "cover" lower bound of the memory-aware stage-1 model.
//
// With fillers as a fluid of density tau (zel_fluid_T), a rank with load L and memory H can take
// min(T - L, tau (cap - H)) seconds of fillers at makespan T, so the objective is <= T only if
//     N T >= sum_r L_r + A + sum_r max(0, T - L_r - tau (cap - H_r))            (*)
// (area + the time a rank cannot fill for lack of memory: its "excess"). A piece (t, m) placed
// on rank r lowers that rank's excess by q = t - tau m at most. At a node with ledgers L, H and
// residual R_r = max(0, T - L_r - tau (cap - H_r)), a completion's final excess on r is
//     max(0, R_r - sum_p q_p) >= R_r - sum_p min(max(q_p, 0), R_r)
// (min(., R) is subadditive on nonnegative numbers). So with cover c_o = sum over o's block of
// min(max(q_o, 0), R_r) and area a_o, every completion with objective <= T satisfies
//     sum_units a_o + max(0, sum_r R_r - sum_units c_o) <= N T - A - sum_r L_r,
// and for every lambda in [0, 1] the left side is >= lambda sum_r R_r + sum_units (a_o -
// lambda c_o) >= phi(lambda) := lambda sum_r R + sum_groups count_g min_{o fits} (a_o - lambda c_o)
// (the Lagrangian dual of the LP relaxation of the covering problem). phi is concave and
// piecewise linear; we maximise it by bisection on its slope. Options that cannot be in a
// completion with objective <= T (block load + time > T, block memory + mem > cap) are skipped.
// The bound sees what the aggregated fluid bound cannot: a long anchor piece fills its rank's
// time but covers at most the rank's residual, so stacking or spreading anchors is charged.
// Monotone in T (the check at T implies it at every T' <= T: N T grows at slope N, lambda
// sum_r R at slope <= lambda N, and the option sets and covers only shrink as T drops), so a
// node may be pruned when (*) fails at the incumbent, and the root bound can bisect on T.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zellige/internal.h"

// Subgradient steps are taken only when the uniform bound is within this share of the budget.

// Cost gate: the bound costs O(sum of option degrees) per node. Measured on the latency bench
// (8xA800 / 16xA800 / 32xA6000, V35..V60): it pays on 8 ranks (fewer nodes, less time, more
// proofs within the budget) but not on the node-budget-limited 16 / 32-rank searches, where it
// cost 20-30 % more time for the same nodes.

int zel_cover_worth(const zel_model *m) {
    if (m->fill_mem <= 0 || zel_mem_area(m) <= 0) return 0;
    int64_t inc = 0;
    for (int32_t g = 0; g < m->n_grps; g++)
        for (int32_t j = 0; j < m->grps[g].n_opts; j++) inc += m->grps[g].opts[j].degree;
    return inc <= ZEL_COVER_MAX_INCIDENCE;
}

size_t zel_cover_scratch(const zel_model *m) {
    size_t n = 0;
    for (int32_t g = 0; g < m->n_grps; g++) n += (size_t)m->grps[g].n_opts;
    return 3 * n + 2 * (size_t)m->n_grps + 3 * (size_t)m->n_ranks + 4;
}

// phi(lambda) and its slope; a, c: the fitting options (k_g per group, count_g units each).
static double phi_eval(int32_t ng, const int32_t *kg, const double *cnt, const double *a,
                       const double *c, double sumR, double lam, double *slope) {
    double v = lam * sumR, s = sumR;
    size_t p = 0;
    for (int32_t g = 0; g < ng; g++) {
        double best = INFINITY, bc = 0;
        for (int32_t j = 0; j < kg[g]; j++, p++) {
            double x = a[p] - lam * c[p];
            if (x < best || (x == best && c[p] > bc)) best = x, bc = c[p];
        }
        v += cnt[g] * best;
        s -= cnt[g] * bc;
    }
    *slope = s;
    return v;
}

double zel_cover_bound(const zel_model *m, const double *L, const double *H, double T,
                       int32_t gi, int64_t rem, int32_t lo, double budget, int32_t n_iter,
                       double *scratch) {
    int32_t N = m->n_ranks;
    if (m->fill_mem <= 0 || zel_mem_area(m) <= 0 || gi >= m->n_grps) return 0;
    double tau = zel_mem_area(m) / m->fill_mem, cap = m->mem_room;
    double *R = scratch, sumR = 0;
    for (int32_t r = 0; r < N; r++) {
        double x = T - L[r] - tau * (cap - H[r]);
        R[r] = x > 0 ? x : 0;
        sumR += R[r];
    }
    int32_t ng = m->n_grps - gi;
    // per-group option counts and unit counts live after R (ng <= n_grps ints / doubles)
    double *cnt = R + N;
    int32_t *kg = (int32_t *)(void *)(cnt + ng);  // ng ints fit in ng doubles
    double *a = cnt + 2 * ng, *c = NULL;
    size_t tot = 0;
    for (int32_t g = gi; g < m->n_grps; g++) tot += (size_t)m->grps[g].n_opts;
    c = a + tot;
    int32_t *oj = (int32_t *)(void *)(c + tot);  // fitting option index per entry
    double *mu = c + 2 * tot, *gr = mu + N;
    size_t p = 0;
    double lam0 = 0;  // phi(0): least areas
    for (int32_t g = gi; g < m->n_grps; g++) {
        const zel_grp *G = &m->grps[g];
        int32_t o0 = g == gi ? lo : 0, k = 0;
        double best_a = INFINITY;
        for (int32_t j = o0; j < G->n_opts; j++) {
            const zel_opt *o = &G->opts[j];
            double e, h;
            zel_block_max(o, L, H, &e, &h);
            if (e + o->time > T || h + o->mem > cap) continue;
            double q = o->time - tau * o->mem, cv = 0;
            if (q > 0)
                for (int32_t r = o->start; r < o->start + o->degree; r++)
                    cv += q < R[r] ? q : R[r];
            a[p] = o->area, c[p] = cv, oj[p] = j, p++, k++;
            if (o->area < best_a) best_a = o->area;
        }
        if (k == 0) return INFINITY;  // no completion with objective <= T
        kg[g - gi] = k;
        cnt[g - gi] = (double)(g == gi ? rem : G->count);
        lam0 += cnt[g - gi] * best_a;
    }
    if (lam0 > budget) return lam0;
    double s, best = lam0, v = phi_eval(ng, kg, cnt, a, c, sumR, 1.0, &s);
    if (v > best) best = v;
    if (best > budget || s >= 0) return best;  // concave: slope >= 0 at 1 means the max is at 1
    double lo_l = 0, hi_l = 1, lam = 0;
    for (int32_t it = 0; it < 12; it++) {
        double mid = 0.5 * (lo_l + hi_l);
        v = phi_eval(ng, kg, cnt, a, c, sumR, mid, &s);
        if (v > best) best = v, lam = mid;
        if (best > budget) return best;
        if (s > 0)
            lo_l = mid;
        else
            hi_l = mid;
    }
    // the subgradient pays only where the uniform bound is already close to the budget
    if (n_iter <= 0 || budget - best > ZEL_COVER_NEAR * fabs(budget)) return best;
    // Per-rank multipliers mu_r in [0, 1] (the LP dual of the covering relaxation with one
    // residual per rank): D(mu) = sum_r mu_r R_r + sum_g count_g min_o (a_o - sum_{r in o}
    // mu_r min(q_o+, R_r)) is a valid bound for every such mu. Projected subgradient ascent
    // from the best uniform lambda, Polyak steps towards the budget.
    for (int32_t r = 0; r < N; r++) mu[r] = lam;
    for (int32_t it = 0; it < n_iter; it++) {
        double d = 0;
        for (int32_t r = 0; r < N; r++) d += mu[r] * R[r], gr[r] = R[r];
        size_t q0 = 0;
        for (int32_t g = 0; g < ng; g++) {
            const zel_grp *G = &m->grps[gi + g];
            double bv = INFINITY;
            size_t bq = q0;
            for (int32_t j = 0; j < kg[g]; j++) {
                size_t q1 = q0 + (size_t)j;
                const zel_opt *o = &G->opts[oj[q1]];
                double x = a[q1];
                double qq = o->time - tau * o->mem;
                if (qq > 0)
                    for (int32_t r = o->start; r < o->start + o->degree; r++)
                        x -= mu[r] * (qq < R[r] ? qq : R[r]);
                if (x < bv) bv = x, bq = q1;
            }
            d += cnt[g] * bv;
            const zel_opt *o = &G->opts[oj[bq]];
            double qq = o->time - tau * o->mem;
            if (qq > 0)
                for (int32_t r = o->start; r < o->start + o->degree; r++)
                    gr[r] -= cnt[g] * (qq < R[r] ? qq : R[r]);
            q0 += (size_t)kg[g];
        }
        if (d > best) best = d;
        if (best > budget) return best;
        double nn = 0;
        for (int32_t r = 0; r < N; r++) {
            // projected direction: no move out of [0, 1]
            if ((mu[r] <= 0 && gr[r] < 0) || (mu[r] >= 1 && gr[r] > 0)) gr[r] = 0;
            nn += gr[r] * gr[r];
        }
        if (nn <= 0) break;  // optimal multipliers: no better bound
        // Polyak step towards the budget (a finite target when none is given)
        double tgt = budget < INFINITY ? budget : best + 1e-2 * fabs(best) + ZEL_SUM_MARGIN;
        double step = 1.5 * (tgt - d + ZEL_SUM_MARGIN * (fabs(tgt) + 1)) / nn;
        for (int32_t r = 0; r < N; r++) {
            if (gr[r] == 0) continue;
            double x = mu[r] + step * gr[r];
            mu[r] = x < 0 ? 0 : x > 1 ? 1 : x;
        }
    }
    return best;
}

double zel_cover_root_bound(const zel_model *m, double lo, double hi) {
    int32_t N = m->n_ranks;
    if (m->fill_mem <= 0 || zel_mem_area(m) <= 0 || N <= 0 || m->n_grps == 0 || !(hi > lo))
        return lo;
    if (hi == INFINITY) return lo;
    double *scr = malloc(sizeof(double) * zel_cover_scratch(m));
    if (!scr) return lo;
    int32_t root_iter = 0;  // the per-rank multipliers do not move the root bound (measured)
    double sumL = 0;
    for (int32_t r = 0; r < N; r++) sumL += m->base_load[r];
    // holds(T): (*) can hold at T. Monotone in T (see the header), so bisect on [lo, hi].
    double a = lo, b = hi;
    double need = zel_cover_bound(m, m->base_load, m->base_mem, a, 0, m->grps[0].count, 0,
                                  (double)N * a * (1 + ZEL_STRICT) - sumL - zel_mem_area(m),
                                  root_iter, scr);
    if (sumL + zel_mem_area(m) + need <= (double)N * a * (1 + ZEL_STRICT)) {
        free(scr);
        return lo;
    }
    for (int32_t it = 0; it < 40 && b - a > 1e-7 * b; it++) {
        double mid = 0.5 * (a + b);
        need = zel_cover_bound(m, m->base_load, m->base_mem, mid, 0, m->grps[0].count, 0,
                               (double)N * mid * (1 + ZEL_STRICT) - sumL - zel_mem_area(m),
                               root_iter, scr);
        if (sumL + zel_mem_area(m) + need <= (double)N * mid * (1 + ZEL_STRICT))
            b = mid;
        else
            a = mid;
    }
    free(scr);
    return a;  // (*) fails at a, so every solution has objective > a
}
