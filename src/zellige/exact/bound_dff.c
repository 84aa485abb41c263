// exact/bound_dff.c — a packing (dual-feasible-function) lower bound for the exact stage-1 search.
//
// Why: the area, fluid and cover bounds are all relaxations in which anchor pieces spread over
// the ranks like a fluid; the remaining 0.2-0.8 % root gap on 8xA800 high load is integrality —
// e.g. five ~100 s whole anchors cannot share four ranks of ~158 s room, so one must split and
// pay its split overhead. This bound charges that.
//
// At a node with rank loads L_r, a completion with objective <= T keeps every final load <= T,
// so the pieces it adds to rank r have total time <= C_r = T - L_r. For a dual-feasible function
// f (nondecreasing, sum x_i <= 1 => sum f(x_i) <= 1) every rank therefore satisfies
//     sum_{new pieces p on r} f(t_p / C_r) <= 1,
// and summed over ranks: sum_units F_o <= N with F_o = sum_{r in o's block} f(t_o / C_r).
// The completion also respects the area condition sum_units a_o <= N T - A - sum_r L_r (=:
// budget). For every mu >= 0, Lagrange:
//     phi(mu) = sum_groups count_g min_{o fits} (a_o + mu F_o) - mu N  <=  sum a_o  <=  budget,
// so a node with max_mu phi(mu) > budget has no completion with objective <= T. phi is concave
// and piecewise linear in mu; it is maximised by bisection on its slope (sum count_g F_chosen -
// N). Options that cannot be in such a completion (block load + time > T, block memory + mem >
// cap) are skipped. Monotone in T for nondecreasing f (a larger T gives larger C_r, smaller F,
// more options and a larger budget), so the check at the incumbent covers every lower T.
//
// Functions (Fekete & Schepers' u^(k), evaluated on x (1 - 1e-12) so that rounding at a
// threshold can only lower f): u^(k)(x) = floor((k + 1) x) / k for k = 1, 2, 3. u^(1) counts
// pieces longer than half a rank's room (at most one per rank), u^(2) thirds, and so on.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zellige/internal.h"

#define DFF_SHRINK (1 - ZEL_STRICT)

size_t zel_dff_scratch(const zel_model *m) {
    size_t n = 0;
    for (int32_t g = 0; g < m->n_grps; g++) n += (size_t)m->grps[g].n_opts;
    return (size_t)(ZEL_DFF_K + 3) * n + 2 * (size_t)m->n_grps + 2 * (size_t)m->n_ranks + 4;
}

static inline double dff_u(int32_t k, double x) {
    if (x >= 1) return 1;  // a piece that fills (or overfills) the room: never below 1
    return floor((double)(k + 1) * x * DFF_SHRINK) / (double)k;
}

// phi(mu) and its slope for one function (a: the areas after the cover term).
static double dff_eval(int32_t ng, const int32_t *kg, const double *cnt, const double *a,
                       const double *F, double base, double N, double mu, double *slope) {
    double v = base - mu * N, s = -N;
    size_t p = 0;
    for (int32_t g = 0; g < ng; g++) {
        double bv = INFINITY, bf = 0;
        for (int32_t j = 0; j < kg[g]; j++, p++) {
            double x = a[p] + mu * F[p];
            if (x < bv || (x == bv && F[p] < bf)) bv = x, bf = F[p];
        }
        v += cnt[g] * bv;
        s += cnt[g] * bf;
    }
    *slope = s;
    return v;
}

// max over mu >= 0 of phi(mu) = lam sumR + sum_g cnt_g min_o (a0 - lam cv + mu F) - mu N for one
// function: bisection on the slope over [0, mu_hi], then the intersection of the two bracketing
// pieces (exact when one breakpoint is left between them). Every mu >= 0 gives a valid bound.
static double dff_max(int32_t ng, const int32_t *kg, const double *cnt, const double *a0,
                      const double *cv, double lam, double sumR, const double *F, double N,
                      double budget, double mu_hi, double *a) {
    size_t np = 0;
    for (int32_t g = 0; g < ng; g++) np += (size_t)kg[g];
    for (size_t p = 0; p < np; p++) a[p] = a0[p] - lam * cv[p];
    double base = lam * sumR, s_hi, s_lo, s;
    double v_hi = dff_eval(ng, kg, cnt, a, F, base, N, mu_hi, &s_hi);
    double v_lo = dff_eval(ng, kg, cnt, a, F, base, N, 0, &s_lo);
    double best = v_hi > v_lo ? v_hi : v_lo;
    if (best > budget || s_hi >= 0 || s_lo <= 0) return best;  // concave: max at an end
    double lo = 0, hi = mu_hi;
    for (int32_t it = 0; it < 10; it++) {
        double mu = 0.5 * (lo + hi);
        double v = dff_eval(ng, kg, cnt, a, F, base, N, mu, &s);
        if (v > best) best = v;
        if (best > budget) return best;
        if (s > 0)
            lo = mu, v_lo = v, s_lo = s;
        else
            hi = mu, v_hi = v, s_hi = s;
    }
    if (s_lo > s_hi) {
        double mu = (v_hi - v_lo + s_lo * lo - s_hi * hi) / (s_lo - s_hi);
        if (mu > lo && mu < hi) {
            double v = dff_eval(ng, kg, cnt, a, F, base, N, mu, &s);
            if (v > best) best = v;
        }
    }
    return best;
}

double zel_dff_bound(const zel_model *m, const double *L, const double *H, double T, int32_t gi,
                     int64_t rem, int32_t lo, double budget, double *scratch) {
    int32_t N = m->n_ranks;
    if (gi >= m->n_grps || N <= 0) return 0;
    double cap = m->mem_room;
    double *inv = scratch;  // 1 / C_r (C_r <= 0: no piece fits there)
    double *R = inv + N, sumR = 0;  // the cover bound's residual excess (exact/bound_cover.c)
    int mem = m->fill_mem > 0 && zel_mem_area(m) > 0;
    double tau = mem ? zel_mem_area(m) / m->fill_mem : 0;
    for (int32_t r = 0; r < N; r++) {
        double c = T - L[r];
        inv[r] = c > 0 ? 1 / c : INFINITY;
        double x = mem ? T - L[r] - tau * (cap - H[r]) : 0;
        R[r] = x > 0 ? x : 0;
        sumR += R[r];
    }
    int32_t ng = m->n_grps - gi;
    double *cnt = R + N;
    int32_t *kg = (int32_t *)(void *)(cnt + ng);  // ng ints fit in ng doubles
    double *a = cnt + 2 * ng;
    size_t tot = 0;
    for (int32_t g = gi; g < m->n_grps; g++) tot += (size_t)m->grps[g].n_opts;
    double *cv = a + tot, *aw = cv + tot;  // covers, working areas
    double *F = aw + tot;  // ZEL_DFF_K arrays of tot
    size_t p = 0;
    double lam0 = 0;
    for (int32_t g = gi; g < m->n_grps; g++) {
        const zel_grp *G = &m->grps[g];
        int32_t o0 = g == gi ? lo : 0, k = 0;
        double best_a = INFINITY;
        for (int32_t j = o0; j < G->n_opts; j++) {
            const zel_opt *o = &G->opts[j];
            double e, h;
            zel_block_max(o, L, H, &e, &h);
            if (e + o->time > T || h + o->mem > cap) continue;
            for (int32_t d = 0; d < ZEL_DFF_K; d++) {
                double f = 0;
                for (int32_t r = o->start; r < o->start + o->degree; r++)
                    f += dff_u(d + 1, o->time * inv[r]);
                F[(size_t)d * tot + p] = f;
            }
            double q = o->time - tau * o->mem, c1 = 0;
            if (mem && q > 0)
                for (int32_t r = o->start; r < o->start + o->degree; r++)
                    c1 += q < R[r] ? q : R[r];
            cv[p] = c1;
            a[p] = o->area, p++, k++;
            if (o->area < best_a) best_a = o->area;
        }
        if (k == 0) return INFINITY;  // no completion with objective <= T
        kg[g - gi] = k;
        cnt[g - gi] = (double)(g == gi ? rem : G->count);
        lam0 += cnt[g - gi] * best_a;
    }
    if (lam0 > budget) return lam0;
    // mu scale: one unit of f is one rank's room, worth up to T seconds of area
    double best = lam0, mu_hi = 4 * T;
    static const double lams[] = {0, 0.5, 1};
    for (int32_t li = 0; li < (mem ? 3 : 1) && best <= budget; li++)
        for (int32_t d = 0; d < ZEL_DFF_K && best <= budget; d++) {
            double v = dff_max(ng, kg, cnt, a, cv, lams[li], sumR, F + (size_t)d * tot,
                               (double)N, budget, mu_hi, aw);
            if (v > best) best = v;
        }
    return best;
}

double zel_dff_root_bound(const zel_model *m, double lo, double hi) {
    int32_t N = m->n_ranks;
    if (N <= 0 || m->n_grps == 0 || !(hi > lo) || hi == INFINITY) return lo;
    double *scr = malloc(sizeof(double) * zel_dff_scratch(m));
    if (!scr) return lo;
    double sumL = 0;
    for (int32_t r = 0; r < N; r++) sumL += m->base_load[r];
    // fails(T): no solution with objective <= T. Monotone (see the header): bisect on [lo, hi].
    double a = lo, b = hi;
    for (int32_t it = 0; it < 40 && b - a > 1e-7 * b; it++) {
        double mid = 0.5 * (a + b);
        // with the fluid's excess in the need, only the memory-aware fluid's work (the free
        // part fills excess time): zel_mem_area (= extra_area without exact/relax.c's free part)
        double A = m->fill_mem > 0 && zel_mem_area(m) > 0 ? zel_mem_area(m) : m->extra_area;
        double budget = (double)N * mid * (1 + ZEL_STRICT) - sumL - A;
        double need = zel_dff_bound(m, m->base_load, m->base_mem, mid, 0, m->grps[0].count, 0,
                                    budget, scr);
        if (need > budget)
            a = mid;
        else
            b = mid;
    }
    free(scr);
    // every solution has objective > a when the check failed at a (a = lo: nothing proven)
    return a;
}
