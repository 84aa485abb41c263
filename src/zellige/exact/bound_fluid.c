// exact/bound_fluid.c — the memory-aware fluid bound (zel_fluid_T_more) of every child of a
// search node, without an O(N) pass per child.
//
// h(T) = sum_r min(T - L_r, tc_r), tc_r = tau * max(cap - H_r, 0), breakpoints b_r = L_r + tc_r.
// Per node the parent's breakpoints are sorted once with prefix sums of tc and L, so that
//     h_parent(T) = sum_{b_r <= T} tc_r + sum_{b_r > T} (T - L_r)
// costs one binary search. A child (option o on block B adding time t and memory m to each of
// its ranks) changes only the ranks of B, so h_child(T) = h_parent(T) - (B's parent terms) +
// (B's child terms), and the slope and the next breakpoint likewise: one Newton step costs
// O(|B| + log N) instead of O(N). The Newton iteration, its start (the child's max load) and its
// stopping rule are those of zel_fluid_T_more, so the value is the same up to rounding in the
// sums (tested against it).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zellige/internal.h"

// Layout: buf = bs, tc (N each), pre_tc, pre_L (N + 1 each), then N doubles of scratch (the
// new breakpoints by rank); rk = N sorted ranks, rk[N] = 1 once a sort is in place (else 0),
// then N ints of scratch (the ranks whose breakpoint moved).
int zel_fluid_ctx_init(zel_fluid_ctx *f, const zel_model *m) {
    memset(f, 0, sizeof *f);
    int32_t N = m->n_ranks;
    f->n = N;
    f->buf = malloc(sizeof(double) * (5 * (size_t)N + 2));
    f->rk = malloc(sizeof(int32_t) * (2 * (size_t)N + 1));
    if (!f->buf || !f->rk) {
        zel_fluid_ctx_free(f);
        return 0;
    }
    f->bs = f->buf;
    f->tc = f->bs + N;
    f->pre_tc = f->tc + N;   // N + 1
    f->pre_L = f->pre_tc + N + 1;  // N + 1
    f->rk[N] = 0;
    return 1;
}

void zel_fluid_ctx_free(zel_fluid_ctx *f) {
    free(f->buf), free(f->rk);
    memset(f, 0, sizeof *f);
}

void zel_fluid_ctx_set(zel_fluid_ctx *f, const zel_model *m, const double *L, const double *H) {
    int32_t N = f->n;
    double *nb = f->pre_L + N + 1;  // new breakpoint by rank
    f->tau = m->fill_mem > 0 ? zel_mem_area(m) / m->fill_mem : 0;
    f->tot = 0, f->maxL = 0, f->sumL = 0;
    for (int32_t r = 0; r < N; r++) {
        double c = m->mem_room - H[r];
        f->tc[r] = c > 0 ? f->tau * c : 0;
        f->tot += f->tc[r];
        if (L[r] > f->maxL) f->maxL = L[r];
        f->sumL += L[r];
        nb[r] = L[r] + f->tc[r];
    }
    // The ranks sorted by (breakpoint, rank). Between two calls of a search usually only the
    // ranks of one or two option blocks move: the ranks whose breakpoint is unchanged keep
    // their sorted order, the moved ones are sorted apart and merged in (the same array as a
    // full sort: the order is total). The first call, or many moved ranks: insertion sort.
    int32_t *mv = f->rk + N + 1, n_mv = 0, n_keep = 0;
    if (f->rk[N]) {
        for (int32_t i = 0; i < N && n_mv <= N / 2; i++) {
            int32_t r = f->rk[i];
            if (nb[r] == f->bs[i])
                f->rk[n_keep++] = r;
            else
                mv[n_mv++] = r;
        }
    }
    if (!f->rk[N] || n_mv > N / 2) {
        for (int32_t i = 0; i < N; i++) {
            double b = nb[i];
            int32_t j = i;
            while (j > 0 && f->bs[j - 1] > b) {
                f->bs[j] = f->bs[j - 1];
                f->rk[j] = f->rk[j - 1];
                j--;
            }
            f->bs[j] = b;
            f->rk[j] = i;
        }
        f->rk[N] = 1;
    } else {
        for (int32_t i = 1; i < n_mv; i++) {  // the moved ranks by (breakpoint, rank)
            int32_t r = mv[i], j = i;
            while (j > 0 && (nb[mv[j - 1]] > nb[r] || (nb[mv[j - 1]] == nb[r] && mv[j - 1] > r))) {
                mv[j] = mv[j - 1];
                j--;
            }
            mv[j] = r;
        }
        // merge from the back: kept ranks in rk[0 .. n_keep), moved ones in mv[0 .. n_mv)
        int32_t a = n_keep - 1, c = n_mv - 1;
        for (int32_t w = N - 1; c >= 0; w--) {
            int take_keep = a >= 0 && (nb[f->rk[a]] > nb[mv[c]] ||
                                       (nb[f->rk[a]] == nb[mv[c]] && f->rk[a] > mv[c]));
            f->rk[w] = take_keep ? f->rk[a--] : mv[c--];
        }
    }
    f->pre_tc[0] = f->pre_L[0] = 0;
    for (int32_t i = 0; i < N; i++) {
        f->bs[i] = nb[f->rk[i]];  // (already so after the insertion sort)
        f->pre_tc[i + 1] = f->pre_tc[i] + f->tc[f->rk[i]];
        f->pre_L[i + 1] = f->pre_L[i] + L[f->rk[i]];
    }
}

// A child's block terms kept on the stack for the first BLK_TERMS ranks of its block (the rest,
// on wider blocks, are recomputed in every Newton step).
enum { BLK_TERMS = 64 };

// One rank of the block in a Newton step at T: its parent term (breakpoint pb, capacity ptc,
// load pl) out of h, its child term (capacity ct, load cl, breakpoint cb) in.
static inline void swap_rank(double T, double pb, double ptc, double pl, double ct, double cl,
                             double cb, double *h, int32_t *active, double *next) {
    if (pb <= T) {
        *h -= ptc;
    } else {
        *h -= T - pl;
        --*active;
    }
    if (cb <= T) {
        *h += ct;
    } else {
        *h += T - cl;
        ++*active;
        if (cb < *next) *next = cb;
    }
}

// zel_fluid_T_child, leaving the iteration as soon as its iterate exceeds cut (then returning
// that iterate: the result would be at least as large, every step goes up). cut = INFINITY:
// the full result. Each rank's block terms (parent and child breakpoint, the child's capacity
// and load) are computed once, not once per Newton step: the same values in the same order.
double zel_fluid_T_child_cut(const zel_fluid_ctx *f, const zel_model *m, const double *L,
                             const double *H, const zel_opt *o, double more, double cut) {
    int32_t N = f->n, s = o->start, e = o->start + o->degree, d = o->degree;
    double A0 = zel_mem_area(m), X = m->fill_mem;
    if (A0 <= 0 || X <= 0 || N <= 0) return 0;
    double tau = f->tau, A = A0 + (more > 0 ? more : 0);
    double tot = f->tot, maxL = f->maxL;
    // block terms by rank r = s + i: parent breakpoint, child capacity, load, breakpoint
    double b0[BLK_TERMS], tc1[BLK_TERMS], l1[BLK_TERMS], b1[BLK_TERMS];
    int32_t dk = d < BLK_TERMS ? d : BLK_TERMS;  // ranks s .. s + dk kept
    for (int32_t i = 0; i < d; i++) {
        int32_t r = s + i;
        double c = m->mem_room - (H[r] + o->mem);
        double tc = c > 0 ? tau * c : 0, l = L[r] + o->time;
        tot += tc - f->tc[r];
        if (l > maxL) maxL = l;
        if (i >= dk) continue;
        b0[i] = L[r] + f->tc[r], tc1[i] = tc, l1[i] = l, b1[i] = l + tc;
    }
    if (tot < A * (1 - ZEL_STRICT)) return INFINITY;
    double T = maxL;
    int32_t k = 0;
    for (int32_t it = 0; it <= N + 1; it++) {
        if (T > cut) return T;
        // parent ranks: k = #breakpoints <= T (T only grows: the search starts at the last k)
        int32_t hi = N;
        while (k < hi) {
            int32_t mid = (k + hi) / 2;
            if (f->bs[mid] <= T)
                k = mid + 1;
            else
                hi = mid;
        }
        double h = f->pre_tc[k] + (double)(N - k) * T - (f->sumL - f->pre_L[k]);
        int32_t active = N - k;
        double next = INFINITY;
        for (int32_t i = k; i < N; i++) {  // the first breakpoint above T outside the block
            if (f->rk[i] < s || f->rk[i] >= e) {
                next = f->bs[i];
                break;
            }
        }
        // swap the block's parent terms for the child's, rank by rank
        for (int32_t i = 0; i < dk; i++)
            swap_rank(T, b0[i], f->tc[s + i], L[s + i], tc1[i], l1[i], b1[i], &h, &active, &next);
        for (int32_t r = s + dk; r < e; r++) {
            double c = m->mem_room - (H[r] + o->mem), ct = c > 0 ? tau * c : 0, cl = L[r] + o->time;
            swap_rank(T, L[r] + f->tc[r], f->tc[r], L[r], ct, cl, cl + ct, &h, &active, &next);
        }
        if (h >= A || active == 0) return T;
        double t = T + (A - h) / active;
        if (t <= next) return t;
        T = t;
    }
    return T;
}

double zel_fluid_T_child(const zel_fluid_ctx *f, const zel_model *m, const double *L,
                         const double *H, const zel_opt *o, double more) {
    return zel_fluid_T_child_cut(f, m, L, H, o, more, INFINITY);
}
