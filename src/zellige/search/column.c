// search/column.c — column-structured incumbents for stage 1 (beyond the paper).
//
// At 16-32 ranks the optimal anchor placements are mostly "columns": the ranks split into
// contiguous blocks and every unit of a block uses exactly that block, so the block is a stack
// of units (32xA6000 low V50: two anchors on 11 ranks each and four on two 5-rank blocks,
// stacked two high, +3.5 % better than what the default search found). The greedy ladder
// misses such plans (each unit takes its least-area option and cannot foresee the stacking),
// and the branch-and-bound finds them only with 10-100x its node budget.
//
// Over column structures stage 1 is a dynamic programme. For a height T, let f(p, k) be the
// least area that places the remaining units k (a count per group) on ranks [p, N) in columns
// no higher than T: f(p, k) = min(f(p + 1, k)                   rank p left to the fillers,
//                                  min_j area(p, j) + f(p + w(p, j), k - j))
// where j <= k (j != 0) is a column's content and w(p, j) its least width from p: the smallest w
// at which every group of j has an option on [p, p + w) and the stack (each unit on its block's
// fastest option, or on its leanest one when the fastest overflows memory) stays under T and
// under the memory cap on top of the ledgers. Wider than w(p, j) only adds area (the fillers
// fill what is left), so the least width is the right one. A height T is achievable when
// (sum of ledgers + f(0, all) + extra_area) / N <= T (the fillers' fluid then fits under T), and
// that is monotone in T, so T is bisected between the root bound and the incumbent. Every plan
// the DP returns is evaluated on the exact objective (memory-aware fluid included) and the best
// is kept. Only an incumbent: the search that follows, its proof and its gap are unchanged.
//
// Cost: (N + 1) * sum_k prod_g (k_g + 1) per height, pruned: a column content that fits at no
// width makes every larger content fit at none (loads and memory only grow), and w(p, j) >=
// w(p, j - e_g). Models beyond ZEL_COL_MAX_WORK pairs are skipped (return 0).
//
// Nested runs (zel_column_nested) add a second kind of transition, a nest: a
// top content of one or two units on [p, p + w) over units of one group on the sub-blocks that
// tile it, and price ranks by their effective load max(L, T - tau (cap - H)) (what they leave
// the memory-aware fluid) instead of their area; a rank left empty then costs its own.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zellige/internal.h"

// Bisection on T: at most 5 steps, until hi <= lo (1 + 3e-3); the neighbourhood search refines
// below (8 steps to 1e-3: the same quality on bench_planner_quality, 10-30 % slower plans).
// Nests (zel_column_nested) add n_nest * K pushes per rank: skipped above this much in all;
// their inner units have degrees 1..ZEL_COL_NEST_DEG.

typedef struct col_ctx {
    const zel_model *m;
    int32_t N, G, K;                 // ranks, groups, count vectors
    int32_t cnt[ZEL_COL_MAX_GROUPS], stride[ZEL_COL_MAX_GROUPS];
    int16_t *dig;                    // [k][g] count of group g in vector k
    uint8_t *jmask, *jn;             // [k] bit g: group g in k; the number of such groups
    uint8_t *jg;                     // [k][i] those groups, ascending (jn[k] of them)
    double *jd;                      // [k][i] their counts
    int32_t *jp;                     // [k][i] k - e_g of those groups g (parent contents)
    uint8_t *jneed;                  // [k] how many of those are != 0
    uint8_t *ok;                     // [k] scratch (widths_at)
    int32_t *fit, nfit;              // the contents that fit at the rank last run, ascending
    // Blocks: the (p, w) pairs where some group has an option, "records" in (p, w) order.
    int32_t *first;                  // [p][x] (x = 0..N + 1) first record of rank p with width
                                     // >= x; first[p][N + 1] = end of rank p's records
    int32_t *rw;                     // [r] width
    uint8_t *rav, *rdf;              // [r] bit g: group g has an option; its lean != its fast
    double *rL, *rH;                 // [r] ledger maxima over [p, p + w)
    double *rt;                      // [r][4][g] time, memory of fast, then time, memory of lean
                                     // (INFINITY: none)
    int32_t *ro;                     // [r][2][g] option index (-1 none): fastest, leanest
    // per height T:
    int32_t *W;                      // [p][j] least width (0: none)
    uint8_t *lean_j;                 // [p][j] 1: the column uses the leanest options
    double *A;                       // [p][j] added area
    double *f;                       // [p][k]
    int32_t *pick;                   // [p][k] chosen j, -1 skip, K + i nest i
    // Nests (zel_column_nested): a top content ntop[i] (one or two units, as a column's) on a
    // block [p, p + w) over nc[i] units of group nh[i] on the sub-blocks of degree nd[i] that
    // tile it (w a multiple of nd, w >= 2 nd; ceil / floor of nc / (w / nd) units each, the
    // first ones one more), n_nest of them (0: plain columns only).
    int32_t n_nest;
    // Nested runs also price a rank by its effective load max(L, T - tau (cap - H)) instead of
    // L (the memory-aware fluid's tau; 0: plain areas): what it leaves to the fillers.
    double tau, T;                   // (T: the height dp_run runs)
    int32_t *ntop, *nc;              // [i]
    uint8_t *nh, *nd;                // [i]
    int32_t *NW;                     // [p][i] least width (0: none)
    uint8_t *nlean;                  // [p][i] 1: leanest options (top and wholes)
    double *NA;                      // [p][i] area
} col_ctx;

// Effective load of rank q holding `t` seconds and `mem` bytes over its ledgers at height T.
static double eff_rank(const col_ctx *c, int32_t q, double t, double mem, double T) {
    double L = c->m->base_load[q] + t, room = c->m->mem_room - c->m->base_mem[q] - mem;
    double e = T - c->tau * (room > 0 ? room : 0);
    return e > L ? e : L;
}

// The same summed over block [p, p + w), each rank holding the same stack.
static double eff_block(const col_ctx *c, int32_t p, int32_t w, double t, double mem, double T) {
    double a = 0;
    for (int32_t q = p; q < p + w; q++) a += eff_rank(c, q, t, mem, T);
    return a;
}

// W, A, lean_j of every content j at rank p for height T. Contents in increasing index order:
// j - e_g < j, so a parent's width is known (and bounds this one's from below). At each block
// [p, p + w) (ascending w, from that bound), the stack of j on its groups' fastest options fits
// when it stays under T on top of the ledgers and under the memory cap; else the leanest ones
// are tried. A block where a group of j has no option fails both (its time is infinite), and
// the leanest stack is the fastest one again when every group of j has lean == fast there: both
// are skipped without summing (the same outcome). A content with a parent j - e_g != 0 that fits
// nowhere fits nowhere (as before; counted: every content that fits adds 1 to its children's
// ok[]), and the contents that fit are listed, ascending, for dp_rank.
static void widths_at(col_ctx *c, int32_t p, double T) {
    int32_t K = c->K, G = c->G;
    size_t row = (size_t)p * (size_t)K;
    const int32_t *first = c->first + (size_t)p * (size_t)(c->N + 2);
    int32_t rend = first[c->N + 1];
    double cap = c->m->mem_room;
    int32_t *Wr = c->W + row;
    uint8_t *ok = c->ok;
    memset(Wr, 0, sizeof(int32_t) * (size_t)K);
    memset(ok, 0, (size_t)K);
    c->nfit = 0;
    for (int32_t j = 1; j < K; j++) {
        // ok[j]: the parents j - e_g != 0 that fit (pushed by them below); one that fits
        // nowhere makes j fit nowhere
        if (ok[j] != c->jneed[j]) continue;
        int32_t w0 = 1, n = c->jn[j];
        const int32_t *par = c->jp + (size_t)j * (size_t)G;
        for (int32_t i = 0; i < n; i++)
            if (par[i] && Wr[par[i]] > w0) w0 = Wr[par[i]];
        uint32_t mask = c->jmask[j];
        const uint8_t *gs = c->jg + (size_t)j * (size_t)G;
        const double *ds = c->jd + (size_t)j * (size_t)G;
        for (int32_t r = first[w0]; r < rend; r++) {
            if (mask & ~(uint32_t)c->rav[r]) continue;
            const double *t4 = c->rt + (size_t)r * 4 * (size_t)G;
            double t = 0, mem = c->rH[r];
            for (int32_t i = 0; i < n; i++) {
                t += ds[i] * t4[gs[i]];
                mem += ds[i] * t4[G + gs[i]];
            }
            int lean = 0;
            if (!(c->rL[r] + t <= T) || mem > cap) {
                if (!(mask & c->rdf[r])) continue;
                t = 0, mem = c->rH[r];
                for (int32_t i = 0; i < n; i++) {
                    t += ds[i] * t4[2 * G + gs[i]];
                    mem += ds[i] * t4[3 * G + gs[i]];
                }
                if (!(c->rL[r] + t <= T) || mem > cap) continue;
                lean = 1;
            }
            Wr[j] = c->rw[r];
            c->A[row + (size_t)j] = t * c->rw[r];
            if (c->tau > 0) {  // effective loads: the leaner stack may leave the fillers more
                c->A[row + (size_t)j] = eff_block(c, p, c->rw[r], t, mem - c->rH[r], T);
                double tl = 0, ml = c->rH[r];
                for (int32_t i = 0; i < n && !lean && (mask & c->rdf[r]); i++) {
                    tl += ds[i] * t4[2 * G + gs[i]];
                    ml += ds[i] * t4[3 * G + gs[i]];
                }
                if (!lean && (mask & c->rdf[r]) && c->rL[r] + tl <= T && ml <= cap) {
                    double e = eff_block(c, p, c->rw[r], tl, ml - c->rH[r], T);
                    if (e < c->A[row + (size_t)j]) c->A[row + (size_t)j] = e, lean = 1;
                }
            }
            c->lean_j[row + (size_t)j] = (uint8_t)lean;
            break;
        }
        if (!Wr[j]) continue;
        c->fit[c->nfit++] = j;
        const int16_t *d = c->dig + (size_t)j * (size_t)G;
        for (int32_t g = 0; g < G; g++)
            if (d[g] < c->cnt[g]) ok[j + c->stride[g]]++;
    }
}

// The record of block (p, w), -1 when no group has an option there.
static int32_t rec_of(const col_ctx *c, int32_t p, int32_t w) {
    const int32_t *first = c->first + (size_t)p * (size_t)(c->N + 2);
    int32_t r = first[w];
    return r < first[c->N + 1] && c->rw[r] == w ? r : -1;
}

// Nest i on block (p, w) at height T, on the fastest (lean 0) or leanest (1) options: its area,
// or INFINITY when a rank would go over T or the memory cap, or an option is missing.
static double nest_fit(const col_ctx *c, int32_t i, int32_t p, int32_t w, int lean, double T) {
    int32_t G = c->G, j = c->ntop[i], h = c->nh[i], d = c->nd[i], n = c->nc[i], S = w / d;
    int32_t r = rec_of(c, p, w);
    if (r < 0 || (c->jmask[j] & ~(uint32_t)c->rav[r])) return INFINITY;
    const double *t4 = c->rt + (size_t)r * 4 * (size_t)G;
    const uint8_t *gs = c->jg + (size_t)j * (size_t)G;
    const double *ds = c->jd + (size_t)j * (size_t)G;
    double tt = 0, tm = 0;
    for (int32_t x = 0; x < c->jn[j]; x++)
        tt += ds[x] * t4[2 * lean * G + gs[x]], tm += ds[x] * t4[2 * lean * G + G + gs[x]];
    double area = c->tau > 0 ? 0 : w * tt;
    const double *bl = c->m->base_load, *bm = c->m->base_mem;
    for (int32_t sb = 0; sb < S; sb++) {
        int32_t r1 = rec_of(c, p + sb * d, d);
        if (r1 < 0 || !(c->rav[r1] >> h & 1)) return INFINITY;
        const double *u4 = c->rt + (size_t)r1 * 4 * (size_t)G;
        int32_t cnt = n / S + (sb < n % S);
        double t = tt + cnt * u4[2 * lean * G + h], mem = tm + cnt * u4[2 * lean * G + G + h];
        for (int32_t q = p + sb * d; q < p + (sb + 1) * d; q++) {
            if (!(bl[q] + t <= T) || bm[q] + mem > c->m->mem_room) return INFINITY;
            area += c->tau > 0 ? eff_rank(c, q, t, mem, T) : cnt * u4[2 * lean * G + h];
        }
    }
    return area;
}

// NW, NA, nlean of every nest at rank p for height T: the least width that fits (fastest
// options, else the leanest; with effective loads the lower of both). A nest's units only grow
// with its count, so the least width of count n + 1 is at least that of n (the nests of one
// top, group and degree are listed by count).
static void nests_at(col_ctx *c, int32_t p, double T) {
    size_t row = (size_t)p * (size_t)c->n_nest;
    int32_t w0 = 0;  // set at i = 0 (count 1)
    for (int32_t i = 0; i < c->n_nest; i++) {
        int32_t d = c->nd[i];
        if (i == 0 || c->nc[i] == 1) w0 = 2 * d;  // a new (top, group, degree)
        int32_t *W = c->NW + row + i;
        *W = 0;
        for (int32_t w = (w0 + d - 1) / d * d; p + w <= c->N && !*W; w += d)
            for (int lean = 0; lean < 2; lean++) {
                double a = nest_fit(c, i, p, w, lean, T);
                if (a < INFINITY && (!*W || a < c->NA[row + i]))
                    *W = w, c->NA[row + i] = a, c->nlean[row + i] = (uint8_t)lean;
                if (*W && !(c->tau > 0)) break;
            }
        w0 = *W ? *W : c->N + 1;  // none: more units fit nowhere either
    }
}

// The nests' share of f(p, k): k = r + top + n e_h from every rest r that leaves room.
static void dp_rank_nests(col_ctx *c, int32_t p) {
    int32_t K = c->K, G = c->G;
    size_t row = (size_t)p * (size_t)K, nrow = (size_t)p * (size_t)c->n_nest;
    double *fp = c->f + row;
    int32_t *pk = c->pick + row;
    for (int32_t i = 0; i < c->n_nest; i++) {
        int32_t w = c->NW[nrow + i];
        if (!w) continue;
        int32_t j = c->ntop[i], h = c->nh[i], n = c->nc[i];
        int32_t add = j + n * c->stride[h], need[ZEL_COL_MAX_GROUPS];
        const int16_t *dj = c->dig + (size_t)j * (size_t)G;
        for (int32_t g = 0; g < G; g++) need[g] = c->cnt[g] - dj[g] - (g == h ? n : 0);
        double a = c->NA[nrow + i];
        const double *fw = c->f + (size_t)(p + w) * (size_t)K;
        for (int32_t r = 0; r < K; r++) {
            const int16_t *d = c->dig + (size_t)r * (size_t)G;
            int32_t g = 0;
            while (g < G && d[g] <= need[g]) g++;
            if (g < G) continue;
            double v = a + fw[r];
            if (v < fp[r + add]) fp[r + add] = v, pk[r + add] = K + i;
        }
    }
}

// f(p, k) for every k, pushed from every content j that fits at p: for each j (ascending
// index) and each rest r with r + j <= the counts, k = r + j (mixed-radix indices add) gets
// A(p, j) + f(p + w(p, j), r) when that is strictly below its value so far (f(p + 1, k) first).
// Every k sees its contents in ascending order and keeps the first strict minimum, so values
// and picks are those of the pull form min_j over the sub-contents of k. For a given j the k
// are distinct, so the order over r is free: with h the lowest group of j, the rests r whose
// digits above h are fixed form one contiguous run of indices (the digits below h take every
// value, h's from 0 to count_h - j_h), and the runs are visited by an odometer over the digits
// above h.
static void dp_rank(col_ctx *c, int32_t p) {
    int32_t K = c->K, G = c->G;
    size_t row = (size_t)p * (size_t)K;
    double *fp = c->f + row;
    int32_t *pk = c->pick + row;
    const double *f1 = fp + K;
    if (c->tau > 0) {  // rank p left to the fillers still costs its effective load
        double e = eff_rank(c, p, 0, 0, c->T);
        for (int32_t k = 0; k < K; k++) fp[k] = f1[k] + e;
    } else {
        memcpy(fp, f1, sizeof(double) * (size_t)K);
    }
    memset(pk, 0xff, sizeof(int32_t) * (size_t)K);  // -1
    for (int32_t q = 0; q < c->nfit; q++) {  // the contents that fit at p, ascending
        int32_t j = c->fit[q], w = c->W[row + (size_t)j];
        double a = c->A[row + (size_t)j];
        const double *fw = c->f + (size_t)(p + w) * (size_t)K;
        const int16_t *d = c->dig + (size_t)j * (size_t)G;
        int32_t h = c->jg[(size_t)j * (size_t)G];  // lowest group of j
        int32_t len = (c->cnt[h] - d[h] + 1) * c->stride[h];
        int32_t rd[ZEL_COL_MAX_GROUPS] = {0}, base = 0;
        for (;;) {  // runs of r: digits h + 1.. of r, odometer; base = index of the run's start
            double *fk = fp + base + j;
            int32_t *pkk = pk + base + j;
            const double *fr = fw + base;
            for (int32_t i = 0; i < len; i++) {
                double v = a + fr[i];
                if (v < fk[i]) fk[i] = v, pkk[i] = j;
            }
            int32_t g = h + 1;
            for (; g < G; g++) {
                if (rd[g] < c->cnt[g] - d[g]) {
                    rd[g]++, base += c->stride[g];
                    break;
                }
                base -= rd[g] * c->stride[g], rd[g] = 0;
            }
            if (g >= G) break;
        }
    }
}

// Least column area of all units at height T (INFINITY: no column structure fits).
static double dp_run(col_ctx *c, double T) {
    int32_t N = c->N, K = c->K;
    c->T = T;
    for (int32_t k = 0; k < K; k++) c->f[(size_t)N * (size_t)K + (size_t)k] = k ? INFINITY : 0;
    for (int32_t p = N - 1; p >= 0; p--) {
        widths_at(c, p, T);
        dp_rank(c, p);
        if (c->n_nest) {
            nests_at(c, p, T);
            dp_rank_nests(c, p);
        }
    }
    return c->f[K - 1];
}

// The DP's plan at the last height run, as options per unit (canonical, evaluated).
static int dp_decode(const col_ctx *c, zel_sol *out) {
    const zel_model *m = c->m;
    int64_t next[ZEL_COL_MAX_GROUPS];
    for (int32_t g = 0; g < c->G; g++) next[g] = m->unit0[g];
    int32_t p = 0, k = c->K - 1;
    while (k > 0 && p < c->N) {
        size_t at = (size_t)p * (size_t)c->K + (size_t)k;
        int32_t j = c->pick[at];
        if (j < 0) {
            p++;
            continue;
        }
        if (j >= c->K) {  // a nest: the top units, then the inner ones round the sub-blocks
            int32_t i = j - c->K, t = c->ntop[i], h = c->nh[i], d = c->nd[i], G = c->G;
            size_t ni = (size_t)p * (size_t)c->n_nest + (size_t)i;
            int32_t w = c->NW[ni], lean = c->nlean[ni];
            const int32_t *ro = c->ro + (size_t)rec_of(c, p, w) * 2 * (size_t)G + lean * G;
            for (int32_t g = 0; g < G; g++)
                for (int32_t n = c->dig[(size_t)t * (size_t)G + (size_t)g]; n > 0; n--)
                    out->opt[next[g]++] = ro[g];
            for (int32_t u = 0; u < c->nc[i]; u++)
                out->opt[next[h]++] = c->ro[(size_t)rec_of(c, p + u % (w / d) * d, d) * 2 *
                                                (size_t)G + (size_t)(lean * G + h)];
            p += w, k -= t + c->nc[i] * c->stride[h];
            continue;
        }
        size_t row = (size_t)p * (size_t)c->K + (size_t)j;
        int32_t w = c->W[row];
        const int32_t *ro = c->ro + (size_t)c->first[(size_t)p * (size_t)(c->N + 2) + (size_t)w] *
                                        2 * (size_t)c->G + (c->lean_j[row] ? (size_t)c->G : 0);
        for (int32_t g = 0; g < c->G; g++)
            for (int32_t n = c->dig[(size_t)j * (size_t)c->G + (size_t)g]; n > 0; n--)
                out->opt[next[g]++] = ro[g];  // set: the stack of j fits on this block
        p += w, k -= j;
    }
    if (k != 0) return 0;
    zel_sol_canon(m, out);
    return zel_sol_eval(m, out->opt, NULL, NULL, &out->T, &out->K);
}

// The nests of m (zel_column_nested): every top content of one or two units, every group h
// and inner degree d <= ZEL_COL_NEST_DEG, each count of h the top leaves room for; none when
// their DP work passes ZEL_COL_NEST_WORK. Returns 0 on out of memory.
static int nests_init(col_ctx *c) {
    int32_t G = c->G;
    for (int pass = 0; pass < 2; pass++) {  // count, then fill
        int64_t n = 0;
        for (int32_t j = 1; j < c->K; j++) {
            const int16_t *dj = c->dig + (size_t)j * (size_t)G;
            int32_t units = 0;
            for (int32_t g = 0; g < G; g++) units += dj[g];
            if (units > 2) continue;
            for (int32_t h = 0; h < G; h++)
                for (int32_t d = 1; d <= ZEL_COL_NEST_DEG; d++)
                    for (int32_t k = 1; k <= c->cnt[h] - dj[h]; k++, n++)
                        if (pass) {
                            c->ntop[n] = j, c->nh[n] = (uint8_t)h, c->nd[n] = (uint8_t)d;
                            c->nc[n] = k;
                        }
        }
        if (pass) break;
        if (n == 0 || n * c->K * (int64_t)c->N > ZEL_COL_NEST_WORK) return 1;
        size_t np = (size_t)n * (size_t)c->N;
        c->ntop = malloc(sizeof(int32_t) * (2 * (size_t)n + np));
        c->nh = malloc(2 * (size_t)n + np);
        c->NA = malloc(sizeof(double) * np);
        if (!c->ntop || !c->nh || !c->NA) return 0;
        c->nc = c->ntop + n, c->NW = c->nc + n, c->nd = c->nh + n, c->nlean = c->nd + n;
        c->n_nest = (int32_t)n;
    }
    return 1;
}

static int col_init(col_ctx *c, const zel_model *m) {
    memset(c, 0, sizeof *c);
    c->m = m;
    c->N = m->n_ranks;
    c->G = m->n_grps;
    if (c->N < 1 || c->N > ZEL_COL_MAX_RANKS || c->G < 1 || c->G > ZEL_COL_MAX_GROUPS) return 0;
    int64_t K = 1, pairs = 1;
    for (int32_t g = 0; g < c->G; g++) {
        int64_t n = m->grps[g].count;
        if (n > ZEL_COL_MAX_STATES) return 0;
        c->cnt[g] = (int32_t)n;
        c->stride[g] = (int32_t)K;
        K *= n + 1;
        pairs *= (n + 1) * (n + 2) / 2;
        if (K > ZEL_COL_MAX_STATES || pairs * (c->N + 1) > ZEL_COL_MAX_WORK) return 0;
    }
    c->K = (int32_t)K;
    int32_t N = c->N, G = c->G;
    size_t nk = (size_t)(N + 1) * (size_t)K, nf = (size_t)N * (size_t)(N + 2);
    c->W = malloc(sizeof(int32_t) * nk);
    c->pick = malloc(sizeof(int32_t) * nk);
    c->lean_j = malloc(nk);
    c->A = malloc(sizeof(double) * nk);
    c->f = malloc(sizeof(double) * nk);
    c->dig = malloc(sizeof(int16_t) * (size_t)K * (size_t)G);
    c->jmask = malloc(2 * (size_t)K + (size_t)K * (size_t)G);
    c->jd = malloc(sizeof(double) * (size_t)K * (size_t)G);
    c->jp = malloc(sizeof(int32_t) * (size_t)K * (size_t)G);
    c->jneed = malloc(2 * (size_t)K);
    c->fit = malloc(sizeof(int32_t) * (size_t)K);
    c->first = malloc(sizeof(int32_t) * nf);
    if (!c->W || !c->pick || !c->lean_j || !c->A || !c->f || !c->dig || !c->jmask || !c->jd ||
        !c->jp || !c->jneed || !c->fit || !c->first)
        return 0;
    c->jn = c->jmask + K, c->jg = c->jn + K, c->ok = c->jneed + K;
    int32_t dg[ZEL_COL_MAX_GROUPS] = {0};
    for (int32_t k = 0; k < c->K; k++) {  // digits by an odometer (k ascending)
        int16_t *d = c->dig + (size_t)k * (size_t)G;
        uint8_t *gs = c->jg + (size_t)k * (size_t)G;
        double *ds = c->jd + (size_t)k * (size_t)G;
        int32_t *jp = c->jp + (size_t)k * (size_t)G;
        uint32_t mask = 0;
        int32_t n = 0;
        for (int32_t g = 0; g < G; g++) {
            d[g] = (int16_t)dg[g];
            if (!dg[g]) continue;
            mask |= 1u << g, gs[n] = (uint8_t)g, jp[n] = k - c->stride[g], ds[n++] = dg[g];
        }
        c->jmask[k] = (uint8_t)mask, c->jn[k] = (uint8_t)n;
        c->jneed[k] = (uint8_t)(n - (n == 1 && jp[0] == 0));
        for (int32_t g = 0; g < G; g++) {
            if (dg[g] < c->cnt[g]) {
                dg[g]++;
                break;
            }
            dg[g] = 0;
        }
    }
    // records: the blocks as bits (bit w - 1 of rank p), numbered in (p, w) order
    uint64_t bits[ZEL_COL_MAX_RANKS] = {0};
    for (int32_t g = 0; g < G; g++) {
        const zel_grp *Gr = &m->grps[g];
        for (int32_t b = 0; b < Gr->n_blocks; b++) {
            const zel_opt *o = &Gr->opts[Gr->blk[b]];
            if (o->start >= 0 && o->degree >= 1 && o->start + o->degree <= N)
                bits[o->start] |= 1ull << (o->degree - 1);
        }
    }
    int32_t R = 0;
    for (int32_t p = 0; p < N; p++) R += __builtin_popcountll(bits[p]);
    size_t nr = (size_t)(R > 0 ? R : 1);
    c->rw = malloc(sizeof(int32_t) * nr);
    c->rav = malloc(2 * nr);
    c->rL = malloc(sizeof(double) * 2 * nr);
    c->rt = malloc(sizeof(double) * 4 * (size_t)G * nr);
    c->ro = malloc(sizeof(int32_t) * 2 * (size_t)G * nr);
    if (!c->rw || !c->rav || !c->rL || !c->rt || !c->ro) return 0;
    c->rdf = c->rav + nr, c->rH = c->rL + nr;
    memset(c->rav, 0, 2 * nr);
    int32_t at = 0;
    for (int32_t p = 0; p < N; p++) {  // first[] and the ledger maxima
        int32_t *fp = c->first + (size_t)p * (size_t)(N + 2);
        double l = -INFINITY, h = -INFINITY;
        fp[0] = at;
        for (int32_t w = 1; p + w <= N; w++) {
            int32_t r = p + w - 1;
            if (m->base_load[r] > l) l = m->base_load[r];
            if (m->base_mem[r] > h) h = m->base_mem[r];
            fp[w] = at;
            if (bits[p] >> (w - 1) & 1) c->rw[at] = w, c->rL[at] = l, c->rH[at] = h, at++;
        }
        for (int32_t w = N - p + 1; w <= N + 1; w++) fp[w] = at;
    }
    // the options, on fields read only for the groups marked in rav (the others stay unset)
    for (int32_t g = 0; g < G; g++) {
        const zel_grp *Gr = &m->grps[g];
        for (int32_t b = 0; b < Gr->n_blocks; b++) {
            const zel_opt *o = &Gr->opts[Gr->blk[b]];
            if (!(o->start >= 0 && o->degree >= 1 && o->start + o->degree <= N)) continue;
            int32_t r = c->first[(size_t)o->start * (size_t)(N + 2) + (size_t)o->degree];
            int32_t fo = Gr->blk[b], lo = Gr->blk[b + 1] - 1;  // time ascending; Pareto: memory
            double *t4 = c->rt + (size_t)r * 4 * (size_t)G;     // descending inside a block
            int32_t *o2 = c->ro + (size_t)r * 2 * (size_t)G;
            o2[g] = fo, o2[G + g] = lo;
            t4[g] = Gr->opts[fo].time, t4[G + g] = Gr->opts[fo].mem;
            t4[2 * G + g] = Gr->opts[lo].time, t4[3 * G + g] = Gr->opts[lo].mem;
            c->rav[r] |= (uint8_t)(1u << g);
            if (lo != fo) c->rdf[r] |= (uint8_t)(1u << g);
        }
    }
    return 1;
}

static void col_free(col_ctx *c) {
    free(c->ntop), free(c->nh), free(c->NA);
    free(c->W), free(c->pick), free(c->lean_j), free(c->A), free(c->f), free(c->dig);
    free(c->jmask), free(c->jd), free(c->jp), free(c->jneed), free(c->fit), free(c->first);
    free(c->rw), free(c->rav), free(c->rL);
    free(c->rt), free(c->ro);
}

// One height: runs the DP and keeps its plan in *out when it is better on the exact objective
// (plans of heights that are not achievable are evaluated too: the memory-aware fluid can rank
// them differently). Returns 1 if T is achievable.
static int try_height(col_ctx *c, double T, double S, zel_sol *cand, zel_sol *out, int *found) {
    double a = dp_run(c, T);
    if (!(a < INFINITY)) return 0;
    if (dp_decode(c, cand) &&
        (!*found || cand->T < out->T || (cand->T == out->T && cand->K < out->K))) {
        zel_sol_copy(c->m, out, cand);
        *found = 1;
    }
    return (S + a) / c->N <= T * (1 + ZEL_STRICT);
}

static int column_run(const zel_model *m, double lb, double ub, int nest, zel_sol *out) {
    out->T = INFINITY;
    out->K = 0;
    // an incumbent within the bisection's tolerance of the bound: nothing to gain here (running
    // the DP at lb anyway changes plans both ways on bench_planner_quality, at more cost)
    if (m->n_units == 0 || !(lb > 0) || !(ub > lb * (1 + ZEL_COL_TOL))) return 0;
    col_ctx c;
    int ok = col_init(&c, m) && (!nest || nests_init(&c));
    if (ok && nest && c.n_nest == 0) ok = 0;  // nothing the plain columns would not give
    zel_sol cand = {0};
    if (ok) ok = zel_sol_alloc(m, &cand, NULL) == ZG_OK;
    if (!ok) {
        col_free(&c);
        return 0;
    }
    // achievable at T: (S + a) / N <= T, a the DP's least area; with effective loads (nested
    // runs) a holds the ledgers and what the memory keeps from the fillers, so S is their work
    double S = m->extra_area;
    if (nest && m->fill_mem > 0 && zel_mem_area(m) > 0) c.tau = zel_mem_area(m) / m->fill_mem;
    else
        for (int32_t r = 0; r < c.N; r++) S += m->base_load[r];
    int found = 0;
    double lo = lb * (1 + 1e-5), hi = ub;
    // With an incumbent the bisection starts at once: the root bound is 0.3-1 % below the
    // optimum, so a DP run at it was never achievable on bench_planner_quality (same plans, one
    // better, 6 % fewer instructions at 32xA6000 without it). Without one, the bound is tried
    // first and then doubled until some height is achievable.
    if (!(hi < INFINITY)) {
        if (try_height(&c, lb, S, &cand, out, &found)) {
            hi = lb;  // the root bound itself is achieved: nothing to bisect
        } else {
            for (hi = 2 * lb; hi < 512 * lb && !try_height(&c, hi, S, &cand, out, &found);
                 hi *= 2)
                lo = hi;
        }
    }
    for (int32_t step = 0; step < ZEL_COL_STEPS && hi > lo * (1 + ZEL_COL_TOL); step++) {
        double T = 0.5 * (lo + hi);
        if (try_height(&c, T, S, &cand, out, &found)) hi = T;
        else lo = T;
        if (found && out->T < hi) hi = out->T;  // a column plan of that objective exists
    }
    zel_sol_free(&cand);
    col_free(&c);
    return found;
}

int zel_column_incumbent(const zel_model *m, double lb, double ub, zel_sol *out) {
    return column_run(m, lb, ub, 0, out);
}

int zel_column_nested(const zel_model *m, double lb, double ub, zel_sol *out) {
    return column_run(m, lb, ub, 1, out);
}

// Layers: the units of group g are re-placed by the column DP on top of the other units' loads
// (32xA6000 high V60's optimum is four 8-rank anchors under 5- and 7-rank blocks: no column
// structure of all groups, but one of the smaller groups over the big ones). 1 if s got
// strictly better. free_u: n_units scratch; c: sub-model solution with room for every unit.
static int layer_improve(const zel_model *m, double lb, zel_sol *s, int32_t g, zel_sub *q,
                         uint8_t *free_u, zel_sol *c, int32_t *keep) {
    for (int64_t u = 0; u < m->n_units; u++) free_u[u] = (uint8_t)(m->grp_of[u] == g);
    int64_t nu = zel_sub_build(q, m, s, free_u);
    double qlb = zel_model_lower_bound(&q->m);
    if (qlb < lb) qlb = lb;
    if (!zel_column_incumbent(&q->m, qlb, s->T, c) || !(c->T < s->T * (1 - ZEL_SUM_MARGIN))) return 0;
    memcpy(keep, s->opt, sizeof(int32_t) * (size_t)m->n_units);
    for (int64_t k = 0; k < nu; k++) s->opt[q->unit[k]] = c->opt[k];  // c is canonical
    double T;
    int64_t K;
    if (!zel_sol_eval(m, s->opt, NULL, NULL, &T, &K) || !(T < s->T * (1 - ZEL_SUM_MARGIN))) {
        memcpy(s->opt, keep, sizeof(int32_t) * (size_t)m->n_units);
        return 0;
    }
    s->T = T, s->K = K;
    return 1;
}

int zel_column_improve(const zel_model *m, double lb, zel_sol *s) {
    int32_t G = m->n_grps, N = m->n_ranks;
    if (G < 2 || G > ZEL_COL_MAX_GROUPS || N > ZEL_COL_MAX_RANKS || s->T == INFINITY) return 0;
    zel_sub q;
    zel_sol c = {0};
    int ok = zel_sub_init(&q, m) && zel_sol_alloc(m, &c, NULL) == ZG_OK;
    uint8_t *free_u = malloc((size_t)m->n_units);
    int32_t *keep = malloc(sizeof(int32_t) * (size_t)m->n_units);
    int improved = 0;
    if (ok && free_u && keep) {
        for (int round = 0; round < 3; round++) {
            int any = 0;
            // one group at a time (every subset of groups: about as good, slower)
            for (int32_t g = 0; g < G && s->T > lb * (1 + ZEL_REL_TOL); g++)
                any |= layer_improve(m, lb, s, g, &q, free_u, &c, keep);
            improved |= any;
            if (!any) break;
        }
    }
    zel_sub_free(&q);
    zel_sol_free(&c);
    free(free_u), free(keep);
    return improved;
}

// Leftovers: r units of group g are set aside as fluid work (the fastest whole option's time and
// memory join the fillers'), the other units are packed in columns by the DP, and the r are then
// laid over them as a layer (the DP on the sub-model of those r over the columns' loads). Reaches
// plans where a few small anchors sit on top of columns that hold the rest of their group and
// the big ones (32xA6000 high batch 29 of bench_planner_quality: 0.78 % better). q, q2: sub-model
// room (zel_sub_init on m); c, c2, full: solutions with room for every unit of m.
static int leftover_try(const zel_model *m, double lb, zel_sol *s, int32_t g, int64_t r,
                        zel_sub *q, zel_sub *q2, zel_sol *c, zel_sol *c2, uint8_t *free_u,
                        zel_sol *full) {
    const zel_grp *G = &m->grps[g];
    if (G->n_whole <= 0 || r < 1 || r >= G->count) return 0;
    int32_t N = m->n_ranks;
    zel_model *rm = &q->m;
    memcpy(q->L, m->base_load, sizeof(double) * (size_t)N);
    memcpy(q->H, m->base_mem, sizeof(double) * (size_t)N);
    int64_t nu = 0;
    for (int32_t h = 0; h < m->n_grps; h++) {
        rm->grps[h] = m->grps[h];
        int64_t cnt = m->grps[h].count - (h == g ? r : 0);
        rm->grps[h].count = cnt;
        rm->unit0[h] = nu;
        for (int64_t k = 0; k < cnt; k++) rm->grp_of[nu + k] = h, q->unit[nu + k] = m->unit0[h] + k;
        nu += cnt;
    }
    rm->n_grps = m->n_grps;
    rm->n_units = nu;
    rm->unit0[m->n_grps] = nu;
    double wt = INFINITY, wm = 0;  // the fastest whole option's time and memory
    for (int32_t j = 0; j < G->n_whole; j++)
        if (G->opts[j].time < wt) wt = G->opts[j].time, wm = G->opts[j].mem;
    rm->extra_area = m->extra_area + (double)r * wt;
    rm->fill_mem = m->fill_mem > 0 ? m->fill_mem + (double)r * wm : 0;
    rm->n_xfl = 0;  // (a guide only: the result is evaluated on m below)
    double rlb = zel_model_lower_bound(rm);
    if (!zel_column_incumbent(rm, rlb, INFINITY, c)) return 0;
    for (int64_t u = 0; u < m->n_units; u++) full->opt[u] = 0, free_u[u] = 0;
    for (int64_t k = 0; k < nu; k++) full->opt[q->unit[k]] = c->opt[k];
    for (int64_t k = G->count - r; k < G->count; k++) free_u[m->unit0[g] + k] = 1;
    int64_t n2 = zel_sub_build(q2, m, full, free_u);
    double qlb = zel_model_lower_bound(&q2->m);
    if (qlb < lb) qlb = lb;
    if (!zel_column_incumbent(&q2->m, qlb, s->T, c2)) return 0;
    for (int64_t k = 0; k < n2; k++) full->opt[q2->unit[k]] = c2->opt[k];
    zel_sol_canon(m, full);
    double T;
    int64_t K;
    if (!zel_sol_eval(m, full->opt, NULL, NULL, &T, &K) || !(T < s->T * (1 - ZEL_SUM_MARGIN))) return 0;
    zel_sol_copy(m, s, full);
    s->T = T, s->K = K;
    return 1;
}

int zel_column_leftover(const zel_model *m, double lb, zel_sol *s) {
    int32_t G = m->n_grps, N = m->n_ranks;
    if (G < 1 || G > ZEL_COL_MAX_GROUPS || N > ZEL_COL_MAX_RANKS || s->T == INFINITY) return 0;
    zel_sub q, q2;
    zel_sol c = {0}, c2 = {0}, full = {0};
    int ok = zel_sub_init(&q, m) && zel_sub_init(&q2, m) && zel_sol_alloc(m, &c, NULL) == ZG_OK &&
             zel_sol_alloc(m, &c2, NULL) == ZG_OK && zel_sol_alloc(m, &full, NULL) == ZG_OK;
    uint8_t *free_u = malloc((size_t)m->n_units + 1);
    int improved = 0;
    if (ok && free_u) {
        for (int32_t g = 0; g < G; g++)
            for (int64_t r = 1; r < m->grps[g].count && s->T > lb * (1 + ZEL_REL_TOL); r++)
                improved |= leftover_try(m, lb, s, g, r, &q, &q2, &c, &c2, free_u, &full);
    }
    zel_sub_free(&q), zel_sub_free(&q2);
    zel_sol_free(&c), zel_sol_free(&c2), zel_sol_free(&full);
    free(free_u);
    return improved;
}
