// stage2/filler.c — stage 2 of the Zellige planner (reference §5.3): fillers whole, in descending
// whole price, each to the memory-feasible rank maximising
//     min( (F - C_r - p_s) / F , (M_cap - M_r - m_s) / M_cap ),   F = sum of all whole prices / N
// (ties: the lowest rank). Beyond the paper: a filler with no memory-feasible whole rank takes
// its memory-feasible option with the lowest resulting block load (instead of failing), and a
// deterministic repair pass then moves or swaps fillers off the most loaded rank while that
// strictly lowers the pair's maximum, and typed exchanges (several dense fillers for a sparse
// one, with any rank) then load the ranks the memory left short. A second
// rule (mode 2, zel_filler_place_dense) places the densest fillers first,
// each where it costs the least fluid capacity, for plans where memory limits some ranks.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zellige/internal.h"

// Groups with at least this many fillers pick their ranks from a tournament tree.

typedef struct funit {
    int64_t seq;
    int32_t g;
    int32_t rank;   // -1 when placed split (not moved by the repair)
    double time, mem;
} funit;

static int grp_desc(const void *pa, const void *pb, void *ctx) {
    const zg_problem *pr = ctx;
    int32_t a = *(const int32_t *)pa, b = *(const int32_t *)pb;
    double x = pr->groups[a].whole_time, y = pr->groups[b].whole_time;
    if (x != y) return x > y ? -1 : 1;
    return (a > b) - (a < b);
}

// Mode 2's order: the densest whole fillers (time per byte) first, so that they reach the
// memory-bound ranks before sparser ones fill those ranks' memory; ties as grp_desc.
static int grp_dense(const void *pa, const void *pb, void *ctx) {
    const zg_problem *pr = ctx;
    int32_t a = *(const int32_t *)pa, b = *(const int32_t *)pb;
    const zg_group *A = &pr->groups[a], *B = &pr->groups[b];
    double x = A->whole_mem > 0 ? A->whole_time / A->whole_mem : INFINITY;
    double y = B->whole_mem > 0 ? B->whole_time / B->whole_mem : INFINITY;
    if (x != y) return x > y ? -1 : 1;
    return grp_desc(pa, pb, ctx);
}

static void exchange(const zg_problem *pr, funit *u, int64_t n, double *L, double *H,
                     int32_t *choice, const int32_t *wt);

static void repair(const zg_problem *pr, funit *u, int64_t n, double *L, double *H,
                   int32_t *choice) {
    int32_t N = pr->world_size;
    double cap = pr->mem_room;
    int64_t iters = 2 * n + N;
    int64_t *on_hi = malloc(sizeof(int64_t) * 2 * (size_t)(n + 1));
    int32_t *wt = malloc(sizeof(int32_t) * (size_t)pr->n_groups * (size_t)N);
    if (!on_hi || !wt) {  // the repair is an optional improvement
        free(on_hi), free(wt);
        return;
    }
    for (int32_t g = 0; g < pr->n_groups; g++) {
        for (int32_t r = 0; r < N; r++) wt[(size_t)g * N + r] = -1;
        const zg_group *G = &pr->groups[g];
        for (int32_t j = G->n_opts - 1; j >= 0; j--)  // first whole option per rank wins
            if (zg_config_is_whole(G->opts[j].config) && G->opts[j].start >= 0 &&
                G->opts[j].start < N)
                wt[(size_t)g * N + G->opts[j].start] = j;
    }
#define whole_ok(pr_, g_, r_) (wt[(size_t)(g_) * N + (r_)] >= 0)
    int64_t *on_lo = on_hi + n + 1;
    while (iters-- > 0) {
        int32_t hi = 0, lo = 0;
        for (int32_t r = 1; r < N; r++) {
            if (L[r] > L[hi]) hi = r;
            if (L[r] < L[lo]) lo = r;
        }
        if (hi == lo) break;
        double cur = L[hi];
        int64_t bi = -1, bj = -1, nh = 0, nl = 0;
        double bnew = cur;
        for (int64_t i = 0; i < n; i++) {  // units on the two ranks
            if (u[i].rank == hi) on_hi[nh++] = i;
            if (u[i].rank == lo) on_lo[nl++] = i;
        }
        for (int64_t x = 0; x < nh; x++) {  // move a filler hi -> lo
            int64_t i = on_hi[x];
            if (!whole_ok(pr, u[i].g, lo) || H[lo] + u[i].mem > cap) continue;
            double a = L[hi] - u[i].time, b = L[lo] + u[i].time;
            double mx = a > b ? a : b;
            if (mx < bnew * (1 - ZEL_STRICT)) bnew = mx, bi = i, bj = -1;
        }
        for (int64_t x = 0; x < nh; x++) {  // swap a (on hi) with b (on lo), a heavier
            int64_t i = on_hi[x];
            if (!whole_ok(pr, u[i].g, lo)) continue;
            for (int64_t y = 0; y < nl; y++) {
                int64_t j = on_lo[y];
                if (u[j].time >= u[i].time || !whole_ok(pr, u[j].g, hi)) continue;
                if (H[lo] - u[j].mem + u[i].mem > cap || H[hi] - u[i].mem + u[j].mem > cap)
                    continue;
                double a = L[hi] - u[i].time + u[j].time, b = L[lo] - u[j].time + u[i].time;
                double mx = a > b ? a : b;
                if (mx < bnew * (1 - ZEL_STRICT)) bnew = mx, bi = i, bj = j;
            }
        }
        if (bi < 0) break;
        funit *a = &u[bi];
        L[hi] -= a->time, H[hi] -= a->mem, L[lo] += a->time, H[lo] += a->mem;
        a->rank = lo;
        choice[a->seq] = wt[(size_t)a->g * N + lo];
        if (bj >= 0) {
            funit *b = &u[bj];
            L[lo] -= b->time, H[lo] -= b->mem, L[hi] += b->time, H[hi] += b->mem;
            b->rank = hi;
            choice[b->seq] = wt[(size_t)b->g * N + hi];
        }
    }
#undef whole_ok
    exchange(pr, u, n, L, H, choice, wt);
    free(on_hi), free(wt);
}

// exchange()'s trades: x <= ZEL_XCH_FEW units of type a for y units of b (y = 0: a move; any y, the best one
// found around the balance point), and y = 1..ZEL_XCH_FEW units of b for x = ZEL_XCH_FEW + 1 ..
// ZEL_XCH_MANY units of a (the best x the same way): several dense fillers for one sparse one.
// The most filler types it handles, and the most trades it prices per call (a bound on its
// time at large worlds).
// When the most loaded rank has no trade, the next most loaded ones (at most ZEL_XCH_HI_TRY in all,
// within ZEL_XCH_HI_NEAR of it) may trade first: a tie of loaded ranks where one lacks the dense
// types needs another to trade with the memory-full rank before it can trade with that one.
// exchange() keeps every pair's best trade (N^2 entries) up to this world size.

// Rank r's memory after a trade: what it has, plus x units of memory ma in, less y of mb out
// (this expression, in this order, decides every fit: monotone in y).
static inline int xch_fits(double h, double x, double ma, double y, double mb, double cap) {
    return h + x * ma - y * mb <= cap;
}

// ceil(v) for v > 0 (the casts below floor non-negative values: no library call).
static inline int64_t xch_ceil_pos(double v) {
    int64_t k = (int64_t)v;
    return k + ((double)k < v);
}

// The trades' ranks of y: [*lo, *hi] within [1, cb] where both ranks keep to the memory (each
// fit is monotone in y, so the set is an interval; the closed forms only seed the search).
// Returns 0 if empty.
static int xch_range(double hr, double hh, double x, double mar, double mah, double mbr,
                     double mbh, double cap, int64_t cb, int64_t *lo, int64_t *hi) {
    double s = mbr > 0 ? (hr + x * mar - cap) / mbr : 1;  // y >= s
    int64_t y = s <= 1 ? 1 : s > (double)cb ? cb : xch_ceil_pos(s);
    while (y > 1 && xch_fits(hr, x, mar, (double)(y - 1), mbr, cap)) y--;
    while (y <= cb && !xch_fits(hr, x, mar, (double)y, mbr, cap)) y++;
    double t = mbh > 0 ? (cap - hh + x * mah) / mbh : (double)cb;  // z <= t
    int64_t z = t < 0 ? 0 : t > (double)cb ? cb : (int64_t)t;
    while (z < cb && xch_fits(hh, (double)(z + 1), mbh, x, mah, cap)) z++;
    while (z >= y && !xch_fits(hh, (double)z, mbh, x, mah, cap)) z--;
    *lo = y, *hi = z;
    return y <= z;
}

// The x in [lo0, hi0] (units of memory mar on r, mah on hi) that keep both ranks within
// memory when y units (mbr, mbh) go the other way: r's fit falls with x, hi's rises.
// Returns 0 if none. (lo0 >= 1.)
static int xch_xrange(double hr, double hh, double y, double mar, double mah, double mbr,
                      double mbh, double cap, int64_t lo0, int64_t hi0, int64_t *lo,
                      int64_t *hi) {
    if (lo0 > hi0) return 0;
    double s = mar > 0 ? (cap - hr + y * mbr) / mar : (double)hi0;  // x <= s
    int64_t z = s < (double)lo0 - 1 ? lo0 - 1 : s > (double)hi0 ? hi0 : (int64_t)s;
    while (z < hi0 && xch_fits(hr, (double)(z + 1), mar, y, mbr, cap)) z++;
    while (z >= lo0 && !xch_fits(hr, (double)z, mar, y, mbr, cap)) z--;
    double t = mah > 0 ? (hh + y * mbh - cap) / mah : (double)lo0;  // x >= t
    int64_t x = t <= (double)lo0 ? lo0 : t > (double)hi0 + 1 ? hi0 + 1 : xch_ceil_pos(t);
    while (x > lo0 && xch_fits(hh, y, mbh, (double)(x - 1), mah, cap)) x--;
    while (x <= hi0 && !xch_fits(hh, y, mbh, (double)x, mah, cap)) x++;
    *lo = x, *hi = z;
    return x <= z;
}

// Whether some integer k in [lo, hi] may have k tu <= up and k td >= dn (a trade's count that
// keeps both ranks at or below the best so far): a loose test (its margin covers the
// rounding) that spares the memory ranges of trades that cannot improve.
// (lo >= 1.)
static inline int xch_window(double up, double tu, double dn, double td, int64_t lo, int64_t hi) {
    double kl = (double)lo, kh = (double)hi;
    if (tu > 0) {
        double q = up / tu;
        q += 1e-7 * (1 + fabs(q));
        if (q < kh) kh = q;
    } else if (up < 0) {
        return 0;
    }
    if (td > 0) {
        double q = dn / td;
        q -= 1e-7 * (1 + fabs(q));
        if (q > kl) kl = q;
    } else if (dn > 0) {
        return 0;
    }
    return kl <= kh && (double)(int64_t)kh >= kl;  // an integer in [kl, kh] (kh >= kl >= 1)
}

// Typed exchanges after the repair, which only pairs the most loaded rank with the least
// loaded one and trades one unit for one: on memory-tight batches that leaves memory-full
// ranks under-loaded (they need dense fillers, more work per byte, for sparse ones, several
// for one). Here the most loaded rank hi trades with any rank r, in two families: x <=
// ZEL_XCH_FEW units of filler type a go hi -> r and y units of type b come back (y = 0: a move),
// then x = ZEL_XCH_FEW + 1 .. ZEL_XCH_MANY units of a for y = 0 .. ZEL_XCH_FEW of b. A type is a class of
// filler groups whose whole options have the same time and memory on every rank. For fixed
// (a, x, b) the pair's new maximum is convex in y (for fixed (a, b, y) in x), so only the
// integers around its balance point, clipped to the values that keep both ranks within
// memory, are tried. The trade with the lowest new max(L_hi, L_r), strictly below L_hi, is
// applied (ties: the lower r, then the first in the first family's a, x, move, b, y order and
// the second's a, b, y, x order; the first units in placement order move); repeat while one
// exists, at most 8N times and while fewer than ZEL_XCH_MAX_PRICED trades have been priced (what a
// scan of every r prices: K + 1 per (r, a, x) of the first family, K per (r, a) of the second).
typedef struct xch {
    int32_t N, K;
    double cap;
    const double *L, *H, *tt, *mm;  // loads; per type and rank: whole time and memory
    const int64_t *cnt;             // per type and rank: units placed whole
    const int32_t *ord;             // per rank: the types by ascending whole time there
} xch;

typedef struct xtrade {
    double mx;             // the pair's new maximum (INFINITY: no trade)
    int32_t a, b;          // b = -1: a move
    int64_t x, y;
    uint32_t vh, vr;       // the ranks' versions it was priced at (the cache)
    double thr;            // priced below this bound only (mx = INFINITY: none at or below it)
} xtrade;

// The best trade of hi with r (lowest new maximum strictly below L_hi (1 - 1e-12), the first
// in a, x, move, b, y order on ties) when its new maximum is below thr; else none (mx =
// INFINITY). Candidates that cannot go below the best so far are skipped by bounds on their
// new maximum, so the threshold (the best trade with another rank) prunes from the start and
// the result, when found, is the pair's best.
static xtrade xch_pair(const xch *c, int32_t hi, int32_t r, double thr) {
    int32_t N = c->N, K = c->K;
    const double *L = c->L, *H = c->H;
    double t0 = L[hi] * (1 - ZEL_STRICT);
    xtrade t = {t0 < thr ? t0 : thr, -1, -1, 0, 0, 0, 0, thr};
    int found = 0;
    // The two ranks' columns of the type tables; the types hi can send (as: units on hi, a
    // whole option on r; type order) and the types r can send back (bs: by ascending time on
    // hi, for the first family; bd: by descending time on r, for the second). The sorted
    // lists let a bound end the scan of b; a tie with a trade of the same (a, x) (first
    // family) or the same a (second) goes to the lower b, as in a scan in type order.
    double th[ZEL_XCH_MAX_TYPES], tr[ZEL_XCH_MAX_TYPES], mh[ZEL_XCH_MAX_TYPES], mr[ZEL_XCH_MAX_TYPES];
    int64_t ch[ZEL_XCH_MAX_TYPES], cr[ZEL_XCH_MAX_TYPES];
    int32_t as[ZEL_XCH_MAX_TYPES], bs[ZEL_XCH_MAX_TYPES], bd[ZEL_XCH_MAX_TYPES], na = 0, nb = 0;
    for (int32_t k = 0; k < K; k++) {
        th[k] = c->tt[k * N + hi], tr[k] = c->tt[k * N + r];
        mh[k] = c->mm[k * N + hi], mr[k] = c->mm[k * N + r];
        ch[k] = c->cnt[k * N + hi], cr[k] = c->cnt[k * N + r];
        if (ch[k] > 0 && tr[k] != INFINITY) as[na++] = k;
    }
    for (int32_t i = 0, j = 0; i < K; i++) {
        int32_t kh = c->ord[(size_t)hi * K + i], kr = c->ord[(size_t)r * K + K - 1 - i];
        if (cr[kh] > 0 && th[kh] != INFINITY) bs[nb++] = kh;
        if (cr[kr] > 0 && th[kr] != INFINITY) bd[j++] = kr;
    }
    for (int32_t ia = 0; ia < na; ia++) {
        int32_t a = as[ia];
        int64_t ca = ch[a];
        double tah = th[a], tar = tr[a], mah = mh[a], mar = mr[a];
        for (int64_t xi = 1; xi <= ca && xi <= ZEL_XCH_FEW; xi++) {
            double x = (double)xi, lh = L[hi] - x * tah, lr = L[r] + x * tar;
            if (lh >= t.mx) continue;  // every trade of these x units keeps hi at lh or above
            int move = xch_fits(H[r], x, mar, 0, 0, c->cap);  // (hi's memory only falls)
            if (move) {
                double mx = lh > lr ? lh : lr;
                if (mx < t.mx) t = (xtrade){mx, a, -1, xi, 0, 0, 0, thr}, found = 1;
            }
            // a move that leaves r no higher than hi beats every trade back (those only
            // raise hi) when the returned type takes time
            int dominated = move && lr <= lh;
            for (int32_t ib = 0; ib < nb; ib++) {
                int32_t b = bs[ib];
                int64_t cb = cr[b], ylo, yhi;
                double tbh = th[b], tbr = tr[b];
                // y >= 1 units back: hi at lh + tbh or above (so the later b too)
                if (lh + tbh > t.mx) break;
                // a tie with the best so far only wins for the same (a, x) and a lower b (read
                // on equality only: rare)
#define XCH_TIE1 (found && t.a == a && t.x == xi && t.b > b)
                if (b == a || (dominated && tbh > 0) || (lh + tbh == t.mx && !XCH_TIE1)) continue;
                // the y that keep both ranks at or below the best so far, then the memory
                if (!xch_window(t.mx - lh, tbh, lr - t.mx, tbr, 1, cb) ||
                    !xch_range(H[r], H[hi], x, mar, mah, mr[b], mh[b], c->cap, cb, &ylo, &yhi))
                    continue;
                double ys = tbh + tbr > 0 ? (lr - lh) / (tbh + tbr) : 0;
                int64_t y0 = ys < (double)ylo   ? ylo
                             : ys > (double)yhi ? yhi
                                                : (int64_t)ys;  // (ys >= ylo >= 1: floor)
                for (int64_t y = y0 - 1 < ylo ? ylo : y0 - 1; y <= y0 + 2 && y <= yhi; y++) {
                    double nh = lh + (double)y * tbh, nr = lr - (double)y * tbr;
                    double mx = nh > nr ? nh : nr;
                    if (mx < t.mx || (mx == t.mx && XCH_TIE1))
                        t = (xtrade){mx, a, b, xi, y, 0, 0, thr}, found = 1;
                }
            }
        }
    }
    // several of a (x > ZEL_XCH_FEW) for y = 0..ZEL_XCH_FEW of b: for each (a, b, y) the new maximum is
    // convex in x, so the integers around its balance point within both memories
    for (int32_t ia = 0; ia < na; ia++) {
        int32_t a = as[ia];
        int64_t ca = ch[a];
        double tah = th[a], tar = tr[a], mah = mh[a], mar = mr[a];
        if (ca <= ZEL_XCH_FEW) continue;
        int64_t xmax0 = ca < ZEL_XCH_MANY ? ca : ZEL_XCH_MANY;
        for (int32_t ib = -1; ib < nb; ib++) {
            int32_t b = ib < 0 ? -1 : bd[ib];
            int64_t cb = b < 0 ? 0 : cr[b];
            double tbh = b < 0 ? 0 : th[b], tbr = b < 0 ? 0 : tr[b];
            double mbh = b < 0 ? 0 : mh[b], mbr = b < 0 ? 0 : mr[b];
            // r at L_r - y tbr + (ZEL_XCH_FEW + 1) tar or above, y <= ZEL_XCH_FEW (so the later b too)
            if (b >= 0 && L[r] - (double)ZEL_XCH_FEW * tbr + (double)(ZEL_XCH_FEW + 1) * tar > t.mx)
                break;
            if (b == a) continue;
            for (int64_t yi = b < 0 ? 0 : 1; yi <= (b < 0 ? 0 : cb < ZEL_XCH_FEW ? cb : ZEL_XCH_FEW);
                 yi++) {
                double y = (double)yi;
                int64_t xlo, xhi;
                double lh0 = L[hi] + y * tbh, lr0 = L[r] - y * tbr;  // before the x units
#define XCH_TIE2 (found && t.a == a && t.x > ZEL_XCH_FEW && t.b > b)
                // x > ZEL_XCH_FEW units to r: r at lr0 + (ZEL_XCH_FEW + 1) tar or above; then the x
                // that keep both ranks at or below the best so far (xch_window)
                double rmin = lr0 + (double)(ZEL_XCH_FEW + 1) * tar;
                if (rmin > t.mx || (rmin == t.mx && !XCH_TIE2)) continue;
                if (!xch_window(t.mx - lr0, tar, lh0 - t.mx, tah, ZEL_XCH_FEW + 1, xmax0) ||
                    !xch_xrange(H[r], H[hi], y, mar, mah, mbr, mbh, c->cap, ZEL_XCH_FEW + 1, xmax0,
                                &xlo, &xhi))
                    continue;
                double xs = tah + tar > 0 ? (lh0 - lr0) / (tah + tar) : 0;
                int64_t x0 = xs < (double)xlo   ? xlo
                             : xs > (double)xhi ? xhi
                                                : (int64_t)xs;  // (xs >= xlo >= 1: floor)
                for (int64_t x = x0 - 1 < xlo ? xlo : x0 - 1; x <= x0 + 2 && x <= xhi; x++) {
                    double nh = lh0 - (double)x * tah, nr = lr0 + (double)x * tar;
                    double mx = nh > nr ? nh : nr;
                    if (mx < t.mx || (mx == t.mx && XCH_TIE2))
                        t = (xtrade){mx, a, b, x, yi, 0, 0, thr}, found = 1;
                }
            }
        }
    }
#undef XCH_TIE1
#undef XCH_TIE2
    if (!found) t.mx = INFINITY;
    t.thr = thr;
    return t;
}

// Whether rank r prices like rank s against any hi: the same load, memory, whole units per
// type, and whole times and memories per type (all that xch_pair reads of a rank).
static int xch_same_rank(const xch *c, int32_t r, int32_t s) {
    int32_t N = c->N;
    if (c->L[r] != c->L[s] || c->H[r] != c->H[s]) return 0;
    for (int32_t k = 0; k < c->K; k++)
        if (c->cnt[k * N + r] != c->cnt[k * N + s] || c->tt[k * N + r] != c->tt[k * N + s] ||
            c->mm[k * N + r] != c->mm[k * N + s])
            return 0;
    return 1;
}

// Ranks a and b (a != b) back in their places in rk, the ranks by ascending load (ties: the
// lower rank), after their loads changed: both taken out, then each inserted into the rest.
static void xch_rank_fix(int32_t *rk, int32_t N, const double *L, int32_t a, int32_t b) {
    int32_t n = 0;
    for (int32_t i = 0; i < N; i++)
        if (rk[i] != a && rk[i] != b) rk[n++] = rk[i];
    for (int32_t j = 0; j < 2; j++, n++) {
        int32_t r = j ? b : a, q = 0;
        while (q < n && (L[rk[q]] < L[r] || (L[rk[q]] == L[r] && rk[q] < r))) q++;
        memmove(rk + q + 1, rk + q, sizeof(int32_t) * (size_t)(n - q));
        rk[q] = r;
    }
}

// The first (at most) want units whose positions in tun lie in [lo, end) and whose bits are
// set in bm (a rank's units), in position order, into out; returns how many.
static int64_t xch_first_units(const uint64_t *bm, int64_t lo, int64_t end, int64_t want,
                               const int64_t *tun, int64_t *out) {
    int64_t k = 0;
    for (int64_t w = lo / 64; w * 64 < end && k < want; w++) {
        uint64_t v = bm[w] & (w == lo / 64 ? ~0ULL << (lo % 64) : ~0ULL);
        for (; v && k < want; v &= v - 1) {
            int64_t q = w * 64 + __builtin_ctzll(v);
            if (q >= end) return k;
            out[k++] = tun[q];
        }
    }
    return k;
}

static void exchange(const zg_problem *pr, funit *u, int64_t n, double *L, double *H,
                     int32_t *choice, const int32_t *wt) {
    int32_t N = pr->world_size, K = 0, tg[ZEL_XCH_MAX_TYPES];
    if (N < 2) return;
    // type of each unit (-1: split) and of each group (-2: not seen yet)
    int32_t *ty = malloc(sizeof(int32_t) * ((size_t)n + (size_t)pr->n_groups + 1));
    if (!ty) return;
    int32_t *gty = ty + n;
    for (int32_t g = 0; g < pr->n_groups; g++) gty[g] = -2;
    for (int64_t i = 0; i < n; i++) {
        ty[i] = -1;
        if (u[i].rank < 0) continue;
        int32_t g = u[i].g, k = 0;
        if (gty[g] >= 0) {
            ty[i] = gty[g];
            continue;
        }
        for (; k < K; k++) {  // same whole option values on every rank as type k's group?
            int32_t h = tg[k], r = 0;
            if (h == g) break;
            for (; r < N; r++) {
                int32_t jg = wt[(size_t)g * N + r], jh = wt[(size_t)h * N + r];
                if ((jg < 0) != (jh < 0)) break;
                if (jg >= 0 && (pr->groups[g].opts[jg].time != pr->groups[h].opts[jh].time ||
                                pr->groups[g].opts[jg].mem != pr->groups[h].opts[jh].mem))
                    break;
            }
            if (r == N) break;
        }
        if (k == K) {
            if (K == ZEL_XCH_MAX_TYPES) {  // many types: left to the repair
                free(ty);
                return;
            }
            tg[K++] = g;
        }
        ty[i] = gty[g] = k;
    }
    // The pairs' best trades are cached (worlds up to ZEL_XCH_CACHE_RANKS): a trade changes two
    // ranks, so most of hi's row is still valid the next time it is the most loaded rank.
    int cache = N <= ZEL_XCH_CACHE_RANKS;
    int64_t *cnt = calloc((size_t)K * (size_t)N + 1, sizeof(int64_t));
    double *tt = malloc(sizeof(double) * (2 * (size_t)K * (size_t)N + 1));
    uint32_t *ver = calloc((size_t)N, sizeof(uint32_t));
    xtrade *row = malloc(sizeof(xtrade) * (cache ? (size_t)N * (size_t)N : (size_t)N));
    // each type's units in placement order (tun[tof[k] .. tof[k + 1])), a trade's units (mv),
    // each unit's position in tun (pos), and per rank a bitmap over those positions of the
    // units on it (onr, W words a rank): a trade's units are the first set bits of a range
    size_t W = ((size_t)n + 63) / 64;
    int64_t *tof = malloc(sizeof(int64_t) * (3 * (size_t)n + (size_t)K + 2));
    uint64_t *onr = calloc((size_t)N * W + 1, sizeof(uint64_t));
    if (!cnt || !tt || !ver || !row || !tof || !onr) {
        free(ty), free(cnt), free(tt), free(ver), free(row), free(tof), free(onr);
        return;
    }
    int64_t *tun = tof + K + 1, *mv = tun + n, *pos = mv + n;
    for (int32_t k = 0; k <= K; k++) tof[k] = 0;
    for (int64_t i = 0; i < n; i++)
        if (ty[i] >= 0) tof[ty[i] + 1]++;
    for (int32_t k = 0; k < K; k++) tof[k + 1] += tof[k];
    int64_t at[ZEL_XCH_MAX_TYPES] = {0};
    for (int64_t i = 0; i < n; i++)
        if (ty[i] >= 0) {
            int64_t q = tof[ty[i]] + at[ty[i]]++;
            tun[q] = i, pos[i] = q;
            onr[(size_t)u[i].rank * W + (size_t)q / 64] |= 1ULL << (q % 64);
        }
    double *mm = tt + K * N;
    for (int32_t k = 0; k < K; k++)
        for (int32_t r = 0; r < N; r++) {
            int32_t j = wt[(size_t)tg[k] * N + r];
            const zg_option *o = j >= 0 ? &pr->groups[tg[k]].opts[j] : NULL;
            tt[k * N + r] = o ? o->time : INFINITY, mm[k * N + r] = o ? o->mem : INFINITY;
        }
    for (int64_t i = 0; i < n; i++)
        if (ty[i] >= 0) cnt[ty[i] * N + u[i].rank]++;
    if (cache)
        for (size_t i = 0; i < (size_t)N * (size_t)N; i++) row[i].vh = row[i].vr = UINT32_MAX;
    // rk: the ranks by load; hom: see below; ord: per rank, the types by ascending whole time
    // there (ties: the lower type)
    int32_t *rk = malloc(sizeof(int32_t) * (2 + (size_t)K) * (size_t)N);
    int32_t *hom = rk ? rk + N : NULL, *ord = rk ? rk + 2 * N : NULL;
    if (!rk) {
        free(ty), free(cnt), free(tt), free(ver), free(row), free(tof), free(onr);
        return;
    }
    for (int32_t i = 0; i < N; i++) {  // ranks by ascending load (ties: the lower rank)
        int32_t j = i;
        while (j > 0 && L[rk[j - 1]] > L[i]) rk[j] = rk[j - 1], j--;
        rk[j] = i;
    }
    // per type: how many ranks have a whole option (the pricing budget below)
    int64_t fin[ZEL_XCH_MAX_TYPES] = {0};
    for (int32_t k = 0; k < K; k++)
        for (int32_t r = 0; r < N; r++) fin[k] += tt[k * N + r] < INFINITY;
    for (int32_t r = 0; r < N; r++) {  // ranks whose whole times equal rank 0's for every type
        hom[r] = 1;
        for (int32_t k = 0; k < K; k++) hom[r] &= tt[k * N + r] == tt[k * N];
    }
    for (int32_t r = 0; r < N; r++) {
        int32_t *o = ord + (size_t)r * K;
        for (int32_t i = 0; i < K; i++) {
            int32_t j = i;
            while (j > 0 && tt[o[j - 1] * N + r] > tt[i * N + r]) o[j] = o[j - 1], j--;
            o[j] = i;
        }
    }
    xch c = {N, K, pr->mem_room, L, H, tt, mm, cnt, ord};
    int64_t priced = 0;
    for (int64_t it = 0; it < 8 * (int64_t)N && priced < ZEL_XCH_MAX_PRICED; it++) {
        int32_t hi = -1, br = -1, tried[ZEL_XCH_HI_TRY], n_tried = 0;
        xtrade bt = {0};
        double thr = INFINITY;  // pairs are priced below this: just above bt.mx once br >= 0
        double top = L[0];
        for (int32_t r = 1; r < N; r++)
            if (L[r] > top) top = L[r];
        // hi: the most loaded rank with a trade; the next ones (ties: the lower rank) within
        // ZEL_XCH_HI_NEAR of the most loaded only when it has none
        while (br < 0 && n_tried < ZEL_XCH_HI_TRY && n_tried < N) {
            hi = -1;
            for (int32_t r = 0; r < N; r++) {
                int seen = 0;
                for (int32_t q = 0; q < n_tried; q++) seen |= tried[q] == r;
                if (!seen && (hi < 0 || L[r] > L[hi])) hi = r;
            }
            if (n_tried > 0 && L[hi] < top * (1 - ZEL_XCH_HI_NEAR)) break;
            tried[n_tried++] = hi;
            for (int32_t a = 0; a < K; a++) {  // the budget counts what a scan of every r prices
                int64_t ca = cnt[a * N + hi];
                priced += ((ca < ZEL_XCH_FEW ? ca : ZEL_XCH_FEW) * (1 + K) + (ca > ZEL_XCH_FEW) * K) *
                          (fin[a] - (tt[a * N + hi] < INFINITY));
            }
            // a rank like one tried before (xch_same_rank) has no trade either: its row is
            // that rank's row, the pair of the two included
            int again = 0;
            for (int32_t q = 0; q < n_tried - 1 && !again; q++)
                again = xch_same_rank(&c, hi, tried[q]);
            if (again) continue;
            // the lowest new maximum (ties: the lower r), the ranks by ascending load: between
            // ranks of equal times (hom) a trade keeps L_hi + L_r, so its new maximum is at
            // least (L_hi + L_r) / 2, and a rank where that is above the best so far is skipped;
            // the others are priced only below the best so far (a tie included: the lower r
            // wins it), and a cached "none below" stands for any lower bound. A rank that
            // prices like an earlier one of the row (ranks of equal load sit together in rk,
            // by rank) has that rank's trade, or its lack of one, and loses the tie to it: it
            // is not priced (at 32 ranks, about half of the pairs)
            for (int32_t q = 0; q < N; q++) {
                int32_t r = rk[q], twin = 0;
                if (r == hi) continue;
                for (int32_t p = q - 1; p >= 0 && !twin && L[rk[p]] == L[r]; p--)
                    twin = rk[p] != hi && rk[p] < r && xch_same_rank(&c, r, rk[p]);
                if (twin) continue;
                xtrade *e = cache ? &row[(size_t)hi * N + r] : &row[r];
                if (!cache || e->vh != ver[hi] || e->vr != ver[r] ||
                    (e->mx == INFINITY && e->thr < thr)) {
                    if (br >= 0 && hom[r] && hom[hi] && 0.5 * (L[hi] + L[r]) > bt.mx * (1 + ZEL_SUM_MARGIN))
                        continue;
                    *e = xch_pair(&c, hi, r, thr);
                    e->vh = ver[hi], e->vr = ver[r];
                }
                if (e->mx < INFINITY && (br < 0 || e->mx < bt.mx || (e->mx == bt.mx && r < br)))
                    bt = *e, br = r, thr = nextafter(bt.mx, INFINITY);
            }
        }
        if (br < 0) break;
        // bx units of type ba hi -> br, by units of type bb br -> hi, the first ones in
        // placement order (each type's units are listed in that order), moved in that order
        int64_t na = xch_first_units(onr + (size_t)hi * W, tof[bt.a], tof[bt.a + 1], bt.x, tun, mv);
        int64_t nb = bt.b < 0 ? 0
                              : xch_first_units(onr + (size_t)br * W, tof[bt.b], tof[bt.b + 1],
                                                bt.y, tun, mv + na);
        for (int64_t p = 0, q = na; p < na || q < na + nb;) {
            int64_t i = q >= na + nb || (p < na && mv[p] < mv[q]) ? mv[p++] : mv[q++];
            funit *f = &u[i];
            int32_t from = f->rank == hi ? hi : br, to = from == hi ? br : hi;
            int32_t j = wt[(size_t)f->g * N + to];
            const zg_option *o = &pr->groups[f->g].opts[j];
            L[from] -= f->time, H[from] -= f->mem;
            L[to] += o->time, H[to] += o->mem;
            f->rank = to, f->time = o->time, f->mem = o->mem;
            choice[f->seq] = j;
            cnt[ty[i] * N + from]--, cnt[ty[i] * N + to]++;
            onr[(size_t)from * W + (size_t)pos[i] / 64] &= ~(1ULL << (pos[i] % 64));
            onr[(size_t)to * W + (size_t)pos[i] / 64] |= 1ULL << (pos[i] % 64);
        }
        ver[hi]++, ver[br]++;
        xch_rank_fix(rk, N, L, hi, br);
    }
    free(ty), free(cnt), free(tt), free(ver), free(row), free(rk), free(tof), free(onr);
}

// The §5.3 score of whole option o on rank r (mode as in place): 1 and *s when the rank has
// the memory and the score is above -infinity (the only ranks the rule can pick), else 0.
static int rank_score(double F, double cap, const double *L, const double *H, int32_t r,
                      const zg_option *o, int mode, double *s) {
    if (cap - H[r] < o->mem) return 0;
    double x = F - L[r] - o->time, y = cap - H[r] - o->mem;
    double rc = x / F, rm = y / cap;
    *s = mode ? rm : (rc < rm ? rc : rm);
    return *s > -INFINITY;
}

// Tournament tree over the ranks (leaves P + r, P a power of two >= N): node v holds the best
// leaf below it, ts[v] its score and ti[v] its rank (-1: none), the best being the highest
// score and, among equal ones, the lowest rank — a total order, so the root is the rank the
// sequential rule picks (first strictly higher score, from -infinity).
static void tour_pull(double *ts, int32_t *ti, size_t v) {
    size_t a = 2 * v, b = 2 * v + 1;
    if (ti[b] >= 0 && (ti[a] < 0 || ts[b] > ts[a])) ts[v] = ts[b], ti[v] = ti[b];
    else ts[v] = ts[a], ti[v] = ti[a];
}

static void tour_leaf(double *ts, int32_t *ti, size_t P, double F, double cap, const double *L,
                      const double *H, const int32_t *wopt, const zg_group *G, int32_t r,
                      int mode) {
    double s = -INFINITY;
    int ok = wopt[r] >= 0 && rank_score(F, cap, L, H, r, &G->opts[wopt[r]], mode, &s);
    ts[P + (size_t)r] = s, ti[P + (size_t)r] = ok ? r : -1;
}

static void tour_build(double *ts, int32_t *ti, size_t P, int32_t N, double F, double cap,
                       const double *L, const double *H, const int32_t *wopt,
                       const zg_group *G, int mode) {
    for (int32_t r = 0; r < N; r++) tour_leaf(ts, ti, P, F, cap, L, H, wopt, G, r, mode);
    for (size_t v = P + (size_t)N; v < 2 * P; v++) ts[v] = -INFINITY, ti[v] = -1;
    for (size_t v = P - 1; v >= 1; v--) tour_pull(ts, ti, v);
}

static void tour_update(double *ts, int32_t *ti, size_t P, double F, double cap,
                        const double *L, const double *H, const int32_t *wopt,
                        const zg_group *G, int32_t r, int mode) {
    tour_leaf(ts, ti, P, F, cap, L, H, wopt, G, r, mode);
    for (size_t v = (P + (size_t)r) / 2; v >= 1; v /= 2) tour_pull(ts, ti, v);
}

// The rank the rule picks for one filler of G by a scan (-1: no rank has the memory). The
// scores divide by the positive constants F and cap, which keeps the order of the numerators
// (rounding is monotone): a rank whose numerator of the term that binds the best score is no
// larger cannot score above it, so its divisions are skipped (the same choice: only strictly
// higher scores replace the best).
static int32_t scan_best(double F, double cap, const double *L, const double *H,
                         const int32_t *wopt, const zg_group *G, int32_t N, int mode) {
    int32_t best = -1;
    double bs = -INFINITY;
    double bx = -INFINITY, by = -INFINITY;  // the best's binding numerator (rc or rm)
    int prune = F > 0 && cap > 0;
    for (int32_t r = 0; r < N; r++) {
        if (wopt[r] < 0) continue;
        const zg_option *o = &G->opts[wopt[r]];
        if (cap - H[r] < o->mem) continue;
        double x = F - L[r] - o->time, y = cap - H[r] - o->mem;
        if (prune && best >= 0 && (x <= bx || y <= by)) continue;
        double rc = x / F, rm = y / cap;
        double s = mode ? rm : (rc < rm ? rc : rm);
        if (s > bs) {
            bs = s, best = r;
            int rc_binds = !mode && rc < rm;
            bx = rc_binds ? x : -INFINITY;
            by = rc_binds ? -INFINITY : y;
        }
    }
    return best;
}

// Mode 2 (by density): each rank can still take c_r = min(T - L_r, tau (cap - H_r)) of the
// fillers left as a fluid (tau: their time per byte when the group starts, T: the mean load
// they lead to). A filler goes where it costs the least of that capacity beyond its own time,
// c_r - c_r' - t (one denser than tau gains on a memory-bound rank, one sparser loses there
// and not on a time-bound one), then where its load ends lowest, then the lowest rank. The
// cases are written out so that equal costs are exactly equal (0 on time-bound ranks, tau m - t
// on memory-bound ones) and the load decides between them. 0 if the rank lacks the memory.
typedef struct dense_ctx {
    double T, tau, cap, lc;  // lc: tau m - t, the cost on a rank memory-bound before and after
} dense_ctx;

static int dense_key(const dense_ctx *d, const double *L, const double *H, int32_t r,
                     const zg_option *o, double *k1, double *k2) {
    double b = d->cap - H[r];
    if (b < o->mem) return 0;
    double a = d->T - L[r], tb = d->tau * b, a2 = a - o->time, tb2 = d->tau * (b - o->mem);
    int t1 = a <= tb, t2 = a2 <= tb2;
    *k1 = t1 && t2 ? 0 : !t1 && !t2 ? d->lc : t1 ? a2 - tb2 : tb - a;
    *k2 = L[r] + o->time;
    return 1;
}

// A tournament tree as tour_* below, on the key (k1, k2, rank), lowest first.
static void dtour_pull(double *k1, double *k2, int32_t *ti, size_t v) {
    size_t a = 2 * v, b = 2 * v + 1;
    int bw = ti[b] >= 0 &&
             (ti[a] < 0 || k1[b] < k1[a] || (k1[b] == k1[a] && k2[b] < k2[a]));
    size_t w = bw ? b : a;
    k1[v] = k1[w], k2[v] = k2[w], ti[v] = ti[w];
}

static void dtour_leaf(double *k1, double *k2, int32_t *ti, size_t P, const dense_ctx *d,
                       const double *L, const double *H, const int32_t *wopt,
                       const zg_group *G, int32_t r) {
    size_t v = P + (size_t)r;
    int ok = wopt[r] >= 0 && dense_key(d, L, H, r, &G->opts[wopt[r]], &k1[v], &k2[v]);
    ti[v] = ok ? r : -1;
}

static void dtour_build(double *k1, double *k2, int32_t *ti, size_t P, int32_t N,
                        const dense_ctx *d, const double *L, const double *H,
                        const int32_t *wopt, const zg_group *G) {
    for (int32_t r = 0; r < N; r++) dtour_leaf(k1, k2, ti, P, d, L, H, wopt, G, r);
    for (size_t v = P + (size_t)N; v < 2 * P; v++) ti[v] = -1;
    for (size_t v = P - 1; v >= 1; v--) dtour_pull(k1, k2, ti, v);
}

static void dtour_update(double *k1, double *k2, int32_t *ti, size_t P, const dense_ctx *d,
                         const double *L, const double *H, const int32_t *wopt,
                         const zg_group *G, int32_t r) {
    dtour_leaf(k1, k2, ti, P, d, L, H, wopt, G, r);
    for (size_t v = (P + (size_t)r) / 2; v >= 1; v /= 2) dtour_pull(k1, k2, ti, v);
}

// Worlds up to this size try mode 2 (zel_filler_memory_binds).

// mode 0: the paper's rule; mode 1: memory first (the rank with the most memory left after
// placement), used when mode 0 runs out of memory on a memory-tight batch; mode 2: by density
// (dense_key), a second candidate when mode 0 leaves a rank memory-full (zel_filler_place).
static zg_status place(const zg_problem *pr, const zg_batch *b, const int32_t *fill,
                       int32_t n_fill, double *L, double *H, int32_t *choice, int mode,
                       zg_error *err) {
    int32_t N = pr->world_size;
    double cap = pr->mem_room;
    double F = 0;
    for (int32_t g = 0; g < pr->n_groups; g++)
        F += (double)pr->groups[g].count * pr->groups[g].whole_time;
    F /= N;
    int32_t *order = zg_calloc((size_t)(n_fill > 0 ? n_fill : 1), sizeof(int32_t), err);
    if (!order) return ZG_ERR_NOMEM;
    if (n_fill) memcpy(order, fill, sizeof(int32_t) * (size_t)n_fill);
    zg_status st = zg_sort_stable(order, (size_t)n_fill, sizeof *order,
                                  mode == 2 ? grp_dense : grp_desc, (void *)pr, err);
    int64_t n_units = 0;
    for (int32_t i = 0; i < n_fill; i++) n_units += pr->groups[fill[i]].count;
    funit *u = st ? NULL : zg_calloc((size_t)(n_units > 0 ? n_units : 1), sizeof(funit), err);
    int32_t *wopt = st || !u ? NULL : zg_calloc((size_t)N, sizeof(int32_t), err);
    size_t P = 1;
    while (P < (size_t)N) P *= 2;
    // ts, ti: the §5.3 tree; k1, k2 (mode 2 only): the density tree's keys (it shares ti)
    size_t nd = mode == 2 ? 6 * P : 2 * P;
    double *ts = st || !wopt ? NULL : zg_calloc(nd, sizeof(double) + sizeof(int32_t), err);
    if (st || !u || !wopt || !ts) {
        free(order), free(u), free(wopt);
        return st ? st : ZG_ERR_NOMEM;
    }
    double *k1 = ts + 2 * P, *k2 = ts + 4 * P;  // (mode 2)
    int32_t *ti = (int32_t *)(ts + nd);
    int64_t k = 0;
    // mode 2: the fillers' whole time and memory left, and the mean load they lead to
    double Rt = 0, Rm = 0, T2 = 0;
    for (int32_t i = 0; i < n_fill && mode == 2; i++) {
        const zg_group *G = &pr->groups[fill[i]];
        Rt += (double)G->count * G->whole_time, Rm += (double)G->count * G->whole_mem;
    }
    for (int32_t r = 0; r < N && mode == 2; r++) T2 += L[r];
    T2 = (T2 + Rt) / N;
    for (int32_t i = 0; i < n_fill && !st; i++) {
        const zg_group *G = &pr->groups[order[i]];
        for (int32_t r = 0; r < N; r++) wopt[r] = -1;
        for (int32_t j = 0; j < G->n_opts; j++) {
            const zg_option *o = &G->opts[j];
            if (zg_config_is_whole(o->config) && o->start >= 0 && o->start < N &&
                wopt[o->start] < 0)
                wopt[o->start] = j;
        }
        // A group of several members keeps its ranks' scores in a tournament tree (only the
        // ranks a member lands on change); a lone member scans the ranks.
        dense_ctx dc = {T2, Rm > 0 ? Rt / Rm : 0, cap, 0};
        dc.lc = dc.tau * G->whole_mem - G->whole_time;
        Rt -= (double)G->count * G->whole_time, Rm -= (double)G->count * G->whole_mem;
        // mode 2 always keeps a tree; the others only for several members (a lone one scans)
        int tree = G->count >= ZEL_FILL_TREE_MIN || mode == 2;
        if (tree && mode == 2) dtour_build(k1, k2, ti, P, N, &dc, L, H, wopt, G);
        else if (tree) tour_build(ts, ti, P, N, F, cap, L, H, wopt, G, mode);
        for (int64_t m = 0; m < G->count; m++) {
            int64_t seq = G->members[m];
            int32_t best = tree ? ti[1] : scan_best(F, cap, L, H, wopt, G, N, mode);
            funit *fu = &u[k++];
            fu->seq = seq, fu->g = order[i];
            if (best >= 0) {
                const zg_option *o = &G->opts[wopt[best]];
                L[best] += o->time, H[best] += o->mem;
                fu->rank = best, fu->time = o->time, fu->mem = o->mem;
                choice[seq] = wopt[best];
                if (tree && mode == 2) dtour_update(k1, k2, ti, P, &dc, L, H, wopt, G, best);
                else if (tree) tour_update(ts, ti, P, F, cap, L, H, wopt, G, best, mode);
                continue;
            }
            // no whole rank has the memory: the best-fitting split option
            int32_t bj = -1;
            double be = INFINITY;
            for (int32_t j = 0; j < G->n_opts; j++) {
                const zg_option *o = &G->opts[j];
                int32_t d = zg_option_degree(o);
                double e = 0;
                int ok = 1;
                for (int32_t r = o->start; r < o->start + d && ok; r++) {
                    if (H[r] + o->mem > cap) ok = 0;
                    if (L[r] > e) e = L[r];
                }
                if (ok && e + o->time < be) be = e + o->time, bj = j;
            }
            if (bj < 0) {
                const zg_seq *s = b ? &b->seqs[seq] : NULL;
                char cb[32], bb[32];
                st = zg_error_set(err, ZG_ERR_INFEASIBLE,
                                  "zellige: filler sequence %lld (%lld tokens) fits on no rank: "
                                  "every option needs more memory than the ranks have left "
                                  "after the anchors (cap %s per rank, base %s included); lower "
                                  "the load per rank",
                                  (long long)(s ? s->id : seq), (long long)G->tokens,
                                  zg_fmt_bytes(pr->mem_cap, cb, sizeof cb),
                                  zg_fmt_bytes(pr->mem_base, bb, sizeof bb));
                break;
            }
            const zg_option *o = &G->opts[bj];
            for (int32_t r = o->start; r < o->start + zg_option_degree(o); r++) {
                L[r] += o->time, H[r] += o->mem;
                if (tree && r >= 0 && r < N && mode == 2)
                    dtour_update(k1, k2, ti, P, &dc, L, H, wopt, G, r);
                else if (tree && r >= 0 && r < N)
                    tour_update(ts, ti, P, F, cap, L, H, wopt, G, r, mode);
            }
            fu->rank = -1;
            choice[seq] = bj;
        }
    }
    if (!st) repair(pr, u, k, L, H, choice);
    free(order), free(u), free(wopt), free(ts);
    return st;
}

// (zellige/internal.h)
int zel_filler_memory_binds(const zg_problem *pr, const int32_t *fill, int32_t n_fill,
                            const double *L, const double *H) {
    if (pr->world_size > ZEL_FILL_DENSE_MAX_RANKS) return 0;
    double mm = INFINITY, top = 0;
    for (int32_t i = 0; i < n_fill; i++)
        if (pr->groups[fill[i]].whole_mem < mm) mm = pr->groups[fill[i]].whole_mem;
    for (int32_t r = 0; r < pr->world_size; r++) top = L[r] > top ? L[r] : top;
    for (int32_t r = 0; r < pr->world_size; r++)
        if (H[r] + mm > pr->mem_room && L[r] < top * (1 - ZEL_SUM_MARGIN)) return 1;
    return 0;
}

zg_status zel_filler_place(const zg_problem *pr, const zg_batch *b, const int32_t *fill,
                           int32_t n_fill, double *L, double *H, int32_t *choice,
                           zg_error *err) {
    int32_t N = pr->world_size;
    double *save = zg_calloc(2 * (size_t)N, sizeof(double), err);
    if (!save) return ZG_ERR_NOMEM;
    memcpy(save, L, sizeof(double) * (size_t)N);
    memcpy(save + N, H, sizeof(double) * (size_t)N);
    zg_status st = place(pr, b, fill, n_fill, L, H, choice, 0, err);
    if (st == ZG_ERR_INFEASIBLE) {
        memcpy(L, save, sizeof(double) * (size_t)N);
        memcpy(H, save + N, sizeof(double) * (size_t)N);
        zg_error e2;
        if (place(pr, b, fill, n_fill, L, H, choice, 1, &e2) == ZG_OK) {
            zg_log(ZG_LOG_INFO, "zellige: fillers placed memory-first (%s)", err->msg);
            zg_error_clear(err);
            st = ZG_OK;
        }
    }
    free(save);
    return st;
}

zg_status zel_filler_place_dense(const zg_problem *pr, const zg_batch *b, const int32_t *fill,
                                 int32_t n_fill, double *L, double *H, int32_t *choice,
                                 zg_error *err) {
    return place(pr, b, fill, n_fill, L, H, choice, 2, err);
}
