// zel_column.c — column-structured incumbents for stage 1 (beyond the paper).
//
// At 16-32 ranks the optimal anchor placements are mostly "columns": the ranks split into
// contiguous blocks and every unit of a block uses exactly that block, so the block is a stack
// of units (32xA6000 low V50: two anchors on 11 ranks each and four on two 5-rank blocks,
// stacked two high, +3.5 % better than what the default search found). The greedy ladder
// misses such plans (each unit takes its least-area option and cannot foresee the stacking),
// and the branch-and-bound finds them only with 10-100x its node budget (docs, tenth pass).
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
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan/zel_internal.h"

#define ZEL_COL_MAX_RANKS 64
#define ZEL_COL_MAX_GROUPS 8
#define ZEL_COL_MAX_STATES 4096      // prod_g (count_g + 1)
#define ZEL_COL_MAX_WORK 400000      // (N + 1) * sum_k prod_g (k_g + 1)
// Bisection on T: at most 5 steps, until hi <= lo (1 + 3e-3); the neighbourhood search refines
// below (8 steps to 1e-3: the same quality on bench_planner_quality, 10-30 % slower plans).
#define ZEL_COL_STEPS 5
#define ZEL_COL_TOL 3e-3

typedef struct col_ctx {
    const zel_model *m;
    int32_t N, G, K;                 // ranks, groups, count vectors
    int32_t cnt[ZEL_COL_MAX_GROUPS], stride[ZEL_COL_MAX_GROUPS];
    int32_t *fast, *lean;            // [g][p][w] option index (-1 none): fastest, leanest
    double *maxL, *maxH;             // [p][w] ledger maxima over [p, p + w)
    double *tf, *mf, *tl, *ml;       // [g][p][w] time, memory of fast / lean (INFINITY: none)
    int16_t *dig;                    // [k][g] count of group g in vector k
    int32_t *wl;                     // [p][i] widths with an option of some group at p,
                                     // ascending, 0-terminated (N + 1 per rank)
    // per height T:
    int32_t *W;                      // [p][j] least width (0: none)
    uint8_t *lean_j;                 // [p][j] 1: the column uses the leanest options
    double *A;                       // [p][j] added area
    double *f;                       // [p][k]
    int32_t *pick;                   // [p][k] chosen j, -1 skip
} col_ctx;

static size_t tab(const col_ctx *c, int32_t g, int32_t p, int32_t w) {
    return ((size_t)g * (size_t)c->N + (size_t)p) * (size_t)(c->N + 1) + (size_t)w;
}

static int32_t digit(const col_ctx *c, int32_t k, int32_t g) {
    return (k / c->stride[g]) % (c->cnt[g] + 1);
}

// Stack of content j on [p, p + w) with the fastest (lean = 0) or leanest options: 1 if it
// exists and fits T and the memory cap; *area = added area.
static int stack_fits(const col_ctx *c, int32_t p, int32_t w, int32_t j, int lean, double T,
                      double *area) {
    size_t pw = (size_t)p * (size_t)(c->N + 1) + (size_t)w, per = (size_t)c->N * (c->N + 1);
    const double *tt = lean ? c->tl : c->tf, *mm = lean ? c->ml : c->mf;
    const int16_t *d = c->dig + (size_t)j * (size_t)c->G;
    double t = 0, mem = c->maxH[pw];
    for (int32_t g = 0; g < c->G; g++) {
        if (!d[g]) continue;
        t += d[g] * tt[(size_t)g * per + pw];  // INFINITY: no option on this block
        mem += d[g] * mm[(size_t)g * per + pw];
    }
    if (!(c->maxL[pw] + t <= T) || mem > c->m->mem_cap) return 0;
    *area = t * w;
    return 1;
}

// W, A, lean_j of every content j at rank p for height T. Contents in increasing index order:
// j - e_g < j, so a parent's width is known (and bounds this one's from below).
static void widths_at(col_ctx *c, int32_t p, double T) {
    size_t row = (size_t)p * (size_t)c->K;
    c->W[row] = 0;
    for (int32_t j = 1; j < c->K; j++) {
        int32_t w0 = 1, dead = 0;
        const int16_t *d = c->dig + (size_t)j * (size_t)c->G;
        for (int32_t g = 0; g < c->G && !dead; g++) {
            if (!d[g]) continue;
            int32_t pw = j - c->stride[g] ? c->W[row + (size_t)(j - c->stride[g])] : 1;
            if (j - c->stride[g] && pw == 0) dead = 1;  // a smaller content fits nowhere
            else if (pw > w0) w0 = pw;
        }
        c->W[row + (size_t)j] = 0;
        if (dead) continue;
        // only widths where some group has an option: at the others every content fails
        const int32_t *wl = c->wl + (size_t)p * (size_t)(c->N + 1);
        for (int32_t i = 0; wl[i] > 0 && !c->W[row + (size_t)j]; i++) {
            int32_t w = wl[i];
            if (w < w0) continue;
            for (int lean = 0; lean < 2; lean++) {  // fastest options first, then leanest
                double a;
                if (stack_fits(c, p, w, j, lean, T, &a)) {
                    c->W[row + (size_t)j] = w, c->A[row + (size_t)j] = a;
                    c->lean_j[row + (size_t)j] = (uint8_t)lean;
                    break;
                }
            }
        }
    }
}

// f(p, k) for every k, pushed from every content j that fits at p: for each j (ascending
// index) and each rest r with r + j <= the counts, k = r + j (mixed-radix indices add) gets
// A(p, j) + f(p + w(p, j), r) when that is strictly below its value so far (f(p + 1, k) first).
// Every k sees its contents in ascending order and keeps the first strict minimum, so values
// and picks are those of the pull form min_j over the sub-contents of k; the inner loop runs
// over group 0's digit, contiguous in memory.
static void dp_rank(col_ctx *c, int32_t p) {
    int32_t K = c->K, G = c->G;
    size_t row = (size_t)p * (size_t)K;
    double *fp = c->f + row;
    int32_t *pk = c->pick + row;
    const double *f1 = fp + K;
    for (int32_t k = 0; k < K; k++) fp[k] = f1[k], pk[k] = -1;
    for (int32_t j = 1; j < K; j++) {
        int32_t w = c->W[row + (size_t)j];
        if (!w) continue;
        double a = c->A[row + (size_t)j];
        const double *fw = c->f + (size_t)(p + w) * (size_t)K;
        const int16_t *d = c->dig + (size_t)j * (size_t)G;
        int32_t len = c->cnt[0] - d[0] + 1, rd[ZEL_COL_MAX_GROUPS] = {0}, base = 0;
        for (;;) {  // rows of r: digits 1.. of r, odometer; base = index of r with digit 0 = 0
            int32_t kb = base + j;
            for (int32_t r0 = 0; r0 < len; r0++) {
                double v = a + fw[base + r0];
                if (v < fp[kb + r0]) fp[kb + r0] = v, pk[kb + r0] = j;
            }
            int32_t g = 1;
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
    for (int32_t k = 0; k < K; k++) c->f[(size_t)N * (size_t)K + (size_t)k] = k ? INFINITY : 0;
    for (int32_t p = N - 1; p >= 0; p--) {
        widths_at(c, p, T);
        dp_rank(c, p);
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
        size_t row = (size_t)p * (size_t)c->K + (size_t)j;
        int32_t w = c->W[row];
        for (int32_t g = 0; g < c->G; g++) {
            int32_t o = (c->lean_j[row] ? c->lean : c->fast)[tab(c, g, p, w)];
            for (int32_t n = c->dig[(size_t)j * (size_t)c->G + (size_t)g]; n > 0; n--)
                out->opt[next[g]++] = o;
        }
        p += w, k -= j;
    }
    if (k != 0) return 0;
    zel_sol_canon(m, out);
    return zel_sol_eval(m, out->opt, NULL, NULL, &out->T, &out->K);
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
    size_t N = (size_t)c->N, nt = (size_t)c->G * N * (N + 1), nk = (N + 1) * (size_t)K;
    c->fast = malloc(sizeof(int32_t) * 2 * nt);
    c->maxL = malloc(sizeof(double) * 2 * N * (N + 1));
    c->W = malloc(sizeof(int32_t) * nk);
    c->pick = malloc(sizeof(int32_t) * nk);
    c->lean_j = malloc(nk);
    c->A = malloc(sizeof(double) * nk);
    c->f = malloc(sizeof(double) * nk);
    c->tf = malloc(sizeof(double) * 4 * nt);
    c->dig = malloc(sizeof(int16_t) * (size_t)K * (size_t)c->G);
    c->wl = malloc(sizeof(int32_t) * N * (N + 1));
    if (!c->fast || !c->maxL || !c->W || !c->pick || !c->lean_j || !c->A || !c->f || !c->tf ||
        !c->dig || !c->wl)
        return 0;
    c->mf = c->tf + nt, c->tl = c->tf + 2 * nt, c->ml = c->tf + 3 * nt;
    for (int32_t k = 0; k < c->K; k++)
        for (int32_t g = 0; g < c->G; g++)
            c->dig[(size_t)k * (size_t)c->G + (size_t)g] = (int16_t)digit(c, k, g);
    c->lean = c->fast + nt;
    c->maxH = c->maxL + N * (N + 1);
    for (size_t i = 0; i < 2 * nt; i++) c->fast[i] = -1;
    for (int32_t g = 0; g < c->G; g++) {
        const zel_grp *G = &m->grps[g];
        for (int32_t b = 0; b < G->n_blocks; b++) {
            const zel_opt *o = &G->opts[G->blk[b]];
            size_t t = tab(c, g, o->start, o->degree);
            c->fast[t] = G->blk[b];             // time ascending inside a block
            c->lean[t] = G->blk[b + 1] - 1;     // Pareto: memory descending
        }
    }
    for (size_t t = 0; t < nt; t++) {
        const zel_opt *o = m->grps[t / (N * (N + 1))].opts;
        c->tf[t] = c->fast[t] < 0 ? INFINITY : o[c->fast[t]].time;
        c->mf[t] = c->fast[t] < 0 ? INFINITY : o[c->fast[t]].mem;
        c->tl[t] = c->lean[t] < 0 ? INFINITY : o[c->lean[t]].time;
        c->ml[t] = c->lean[t] < 0 ? INFINITY : o[c->lean[t]].mem;
    }
    for (int32_t p = 0; p < c->N; p++) {
        int32_t *wl = c->wl + (size_t)p * (N + 1), n = 0;
        for (int32_t w = 1; p + w <= c->N; w++) {
            int any = 0;
            for (int32_t g = 0; g < c->G && !any; g++) any = c->fast[tab(c, g, p, w)] >= 0;
            if (any) wl[n++] = w;
        }
        wl[n] = 0;
    }
    for (int32_t p = 0; p < c->N; p++) {
        double l = -INFINITY, h = -INFINITY;
        for (int32_t w = 1; p + w <= c->N; w++) {
            int32_t r = p + w - 1;
            if (m->base_load[r] > l) l = m->base_load[r];
            if (m->base_mem[r] > h) h = m->base_mem[r];
            c->maxL[(size_t)p * (N + 1) + (size_t)w] = l;
            c->maxH[(size_t)p * (N + 1) + (size_t)w] = h;
        }
    }
    return 1;
}

static void col_free(col_ctx *c) {
    free(c->fast), free(c->maxL), free(c->W), free(c->pick), free(c->lean_j), free(c->A);
    free(c->f), free(c->tf), free(c->dig), free(c->wl);
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
    return (S + a) / c->N <= T * (1 + 1e-12);
}

int zel_column_incumbent(const zel_model *m, double lb, double ub, zel_sol *out) {
    out->T = INFINITY;
    out->K = 0;
    // an incumbent within the bisection's tolerance of the bound: nothing to gain here (running
    // the DP at lb anyway changes plans both ways on bench_planner_quality, at more cost)
    if (m->n_units == 0 || !(lb > 0) || !(ub > lb * (1 + ZEL_COL_TOL))) return 0;
    col_ctx c;
    int ok = col_init(&c, m);
    zel_sol cand = {0};
    if (ok) ok = zel_sol_alloc(m, &cand, NULL) == ZG_OK;
    if (!ok) {
        col_free(&c);
        return 0;
    }
    double S = m->extra_area;
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
    if (!zel_column_incumbent(&q->m, qlb, s->T, c) || !(c->T < s->T * (1 - 1e-9))) return 0;
    memcpy(keep, s->opt, sizeof(int32_t) * (size_t)m->n_units);
    for (int64_t k = 0; k < nu; k++) s->opt[q->unit[k]] = c->opt[k];  // c is canonical
    double T;
    int64_t K;
    if (!zel_sol_eval(m, s->opt, NULL, NULL, &T, &K) || !(T < s->T * (1 - 1e-9))) {
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
