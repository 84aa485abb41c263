// exact/pattern.c — the pattern bound: a configuration LP over what one rank can hold, a lower
// bound on the relaxation model's optimum (exact/relax.c).
//
// Why. The relaxation's branch-and-bound proves little above its root at 32 ranks, and the
// root bound treats the anchors' area and the fillers' memory apart: it does not see that a
// rank holding one whole 95K-token video (103 s, 17 GB of 47) cannot be topped up to T with
// fillers, which need ~0.8 GB per second of work. A rank's contents are a *pattern*: a multiset
// of anchor pieces (a unit of degree d puts one piece, the option's per-rank time and memory,
// on each of d distinct ranks) plus the fillers' fluid in what is left. Any plan of makespan T
// gives every rank such a pattern, so this LP is feasible at T:
//
//   y_p >= 0 ranks of class c (same ledgers) use pattern p     sum_{p in c} y_p = |c|
//   u_i >= 0 units of group g take piece type i (a degree and a (time, memory) pair of its
//   options at that degree)                                     sum_{i in g} u_i = count_g
//   pieces laid = pieces needed                                 sum_p n_pi y_p >= d_i u_i
//   every fluid of the model (its density family and the mean term, tau = infinity)
//                                        sum_p y_p min(T - L_p, tau_k (cap - H_p)) >= D_k
//
// It forgets where the pieces sit (contiguity, which ranks share a unit), so it is a relaxation
// — but it keeps each rank's packing in time and memory, which the area and fluid bounds do
// not. Infeasible at T means every plan (and every layout of the relaxation) has makespan > T.
// Bisection on T finds the bound.
//
// Solved by column generation: the restricted LP (COIN-OR Clp) minimises an artificial S that
// pays for any shortfall; the pricing problem per class is a small integer knapsack with a
// concave bonus (the fluid capacities), solved exactly by depth-first search. Infeasibility is
// proven by a Lagrangian certificate that holds for any multipliers pi, mu >= 0 (not only
// optimal ones): L = sum_k mu_k D_k + sum_g nu_g count_g - sum_c |c| max_p value_c(p) with
// nu_g = min_{i in g} pi_i d_i; L > 0 means no feasible point. So Clp's tolerances can cost
// strength but never validity. Without Clp (built without CBC) the bound is not computed.
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zellige/internal.h"

#ifdef ZG_HAVE_CBC
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <Clp_C_Interface.h>
#include <Cbc_C_Interface.h>
#pragma GCC diagnostic pop

typedef struct piece {
    int32_t g, d;  // group, degree
    double t, m;   // per-rank time and memory
} piece;

typedef struct pclass {
    double L, H;  // ledgers of its ranks
    int32_t n;    // ranks
} pclass;

// The problem, the pattern pool and the pricing scratch.
typedef struct pbound {
    const zel_model *m;
    int32_t np, nk, ng, nc;
    piece *pc;
    double *D, *tau;  // fluids: amount, density (INFINITY: the time-only mean term)
    pclass *cls;
    int64_t *gcount;
    // pool: pattern j has class pool_cls[j] and counts pool[j * np + i]
    int32_t n_pool, cap_pool;
    int32_t *pool, *pool_cls;
    zg_hmap pool_index;  // (class, counts) -> pattern: the duplicate test
    // pricing
    int32_t *items, *cnt, *best_n, *gleft;
    double *scratch;  // frac_add's sort keys
    int64_t nodes, max_nodes;
} pbound;

// Beyond this many piece types the bound is not tried: every LP round prices them all and the
// pool holds np ints per pattern. 1024xH100 with ~30 000 sequences has 6 240 types (one LP
// round 2.3 s); 32xA6000 has at most a few hundred.
// Bisection stops when the interval is this small (relative): the quality bench's targets are
// 5e-4, and every step costs a column generation.
// Branch-and-bound nodes of one exact pricing MIP: past them its proven bound still certifies.

// Fluid k's capacity on a rank of class c holding pieces of time t and memory m, at T.
static double cap_k(const pbound *b, int32_t k, const pclass *c, double T, double t, double m) {
    double tl = T - c->L - t, ml = b->m->mem_room - c->H - m;
    if (tl < 0) tl = 0;
    if (ml < 0) ml = 0;
    return b->tau[k] < INFINITY && b->tau[k] * ml < tl ? b->tau[k] * ml : tl;
}

// sum_k mu_k cap_k (the fluids' worth of what the pieces leave).
static double cap_sum(const pbound *b, const double *mu, const pclass *c, double T, double t,
                      double m) {
    double s = 0;
    for (int32_t k = 0; k < b->nk; k++)
        if (mu[k] > 0) s += mu[k] * cap_k(b, k, c, T, t, m);
    return s;
}

static int ratio_cmp_desc(const void *x, const void *y) {
    const double *a = x, *c = y;
    return (a[0] < c[0]) - (a[0] > c[0]);
}

// Pricing: the best pattern of class c under multipliers pi (pieces), mu (fluids).
typedef struct pricing {
    pbound *b;
    const pclass *c;
    const double *pi, *mu;
    double T, best, delta;  // delta: values within it of the best are not searched
    int32_t n_items;
    int complete;
} pricing;

// Fractional knapsack over items[idx..): each worth e_j = pi_j + gt t_j + gm m_j (> 0 only),
// at most min(its group's units left, what fits) copies, in the room of time (by_mem 0) or of
// memory (1), by worth per unit of that resource: an upper bound on what they can add.
static double frac_add(const pricing *q, int32_t idx, double gt, double gm, double tl, double ml,
                       int by_mem) {
    const pbound *b = q->b;
    double room = by_mem ? ml : tl, add = 0;
    double *key = b->scratch;
    int32_t n = 0;
    for (int32_t j = idx; j < q->n_items; j++) {
        const piece *p = &b->pc[b->items[j]];
        double e = q->pi[b->items[j]] + gt * p->t + gm * p->m, w = by_mem ? p->m : p->t;
        if (e <= 0) continue;
        if (w <= 1e-12) return INFINITY;
        key[2 * n] = e / w, key[2 * n + 1] = j, n++;
    }
    qsort(key, (size_t)n, 2 * sizeof(double), ratio_cmp_desc);
    for (int32_t a = 0; a < n && room > 0; a++) {
        int32_t j = (int32_t)key[2 * a + 1];
        const piece *p = &b->pc[b->items[j]];
        double w = by_mem ? p->m : p->t, take = b->gleft[p->g] * w;
        if (take > room) take = room;
        add += take * key[2 * a], room -= take;
    }
    return add;
}

// An upper bound on the value of any pattern that extends the current one (pieces (t, m) so
// far, worth v) with items[idx..): the caps are concave in (t, m), so they fall at least by a
// supergradient (gt, gm) of theirs here; each item is worth pi + gt t + gm m at most, and the
// room in time (or memory) caps the sum, fractionally.
static double node_ub(const pricing *q, int32_t idx, double t, double m, double val) {
    const pbound *b = q->b;
    double tl = q->T - q->c->L - t, ml = b->m->mem_room - q->c->H - m;
    double v = val + cap_sum(b, q->mu, q->c, q->T, t, m);
    if (idx == q->n_items) return v;
    double gt = 0, gm = 0;
    for (int32_t k = 0; k < b->nk; k++) {
        if (!(q->mu[k] > 0)) continue;
        double mr = ml > 0 ? ml : 0;
        if (b->tau[k] < INFINITY && b->tau[k] * mr < tl) gm -= q->mu[k] * b->tau[k];
        else gt -= q->mu[k];
    }
    double add = frac_add(q, idx, gt, gm, tl, ml, 0), am = frac_add(q, idx, gt, gm, tl, ml, 1);
    if (am < add) add = am;
    return add > 0 ? v + add : v;
}

static void price_dfs(pricing *q, int32_t idx, double t, double m, double val) {
    pbound *b = q->b;
    if (++b->nodes > b->max_nodes) {
        q->complete = 0;
        return;
    }
    double caps = cap_sum(b, q->mu, q->c, q->T, t, m), v = val + caps;
    if (v > q->best) {
        q->best = v;
        memcpy(b->best_n, b->cnt, sizeof(int32_t) * (size_t)b->np);
    }
    if (idx == q->n_items) return;
    if (node_ub(q, idx, t, m, val) <= q->best + q->delta) return;
    double tl = q->T - q->c->L - t, ml = b->m->mem_room - q->c->H - m;
    int32_t i = b->items[idx];
    const piece *p = &b->pc[i];
    double kt = p->t > 0 ? floor(tl / p->t + ZEL_LP_TOL) : 1e9;
    double km = p->m > 0 ? floor(ml / p->m + ZEL_LP_TOL) : 1e9;
    double kmax = b->gleft[p->g];
    if (kt < kmax) kmax = kt;
    if (km < kmax) kmax = km;
    for (int32_t k = (int32_t)kmax; k >= 0 && q->complete; k--) {
        b->cnt[i] = k;
        b->gleft[p->g] -= k;
        price_dfs(q, idx + 1, t + k * p->t, m + k * p->m, val + k * q->pi[i]);
        b->gleft[p->g] += k;
        b->cnt[i] = 0;
    }
}

// Max over class c's patterns at T of sum_i pi_i n_i + sum_k mu_k cap_k; the argmax in
// b->best_n. Returns an upper bound on the max (the max itself when the search completed).
static double price(pbound *b, const pclass *c, const double *pi, const double *mu, double T,
                    double delta, double *ub) {
    pricing q = {b, c, pi, mu, T, -INFINITY, delta, 0, 1};
    // items: pieces with pi > 0 that fit alone, longest first (their choices move the bound
    // most)
    double *key = malloc(sizeof(double) * 2 * (size_t)(b->np + 1));
    if (!key) {
        *ub = INFINITY;
        return -INFINITY;
    }
    for (int32_t i = 0; i < b->np; i++) {
        const piece *p = &b->pc[i];
        if (!(pi[i] > 0) || c->L + p->t > T || c->H + p->m > b->m->mem_room) continue;
        key[2 * q.n_items] = p->t;
        key[2 * q.n_items + 1] = i;
        q.n_items++;
    }
    qsort(key, (size_t)q.n_items, 2 * sizeof(double), ratio_cmp_desc);
    for (int32_t j = 0; j < q.n_items; j++)
        b->items[j] = (int32_t)key[2 * j + 1];
    free(key);
    for (int32_t g = 0; g < b->ng; g++)
        b->gleft[g] = (int32_t)(b->gcount[g] < 1 << 20 ? b->gcount[g] : 1 << 20);
    memset(b->cnt, 0, sizeof(int32_t) * (size_t)b->np);
    b->nodes = 0;
    double root_ub = node_ub(&q, 0, 0, 0, 0);
    price_dfs(&q, 0, 0, 0, 0);
    *ub = q.complete ? q.best + delta : root_ub;
    return q.best;
}

// Exact pricing as a small MIP (COIN-OR CBC): n_i integer, s_k <= each fluid's capacity.
// Returns the best value found (its counts in b->best_n), *ub = CBC's proven bound (+ a margin
// for its tolerances), INFINITY if it failed.
static double price_mip(pbound *b, const pclass *c, const double *pi, const double *mu, double T,
                        double *ub) {
    *ub = INFINITY;
    double tl = T - c->L, ml = (b->m->mem_room - c->H) / 1e9;  // memory in GB
    Cbc_Model *q = Cbc_newModel();
    int32_t *ix = malloc(sizeof(int32_t) * (size_t)(b->np + 1));
    int *ri = malloc(sizeof(int) * (size_t)(b->np + 2)), nn = 0;
    double *rv = malloc(sizeof(double) * (size_t)(b->np + 2)), best = -INFINITY;
    if (!q || !ix || !ri || !rv) goto out;
    Cbc_setLogLevel(q, 0);
    Cbc_setObjSense(q, -1);
    double sc = 0;  // objective scale: values near 1
    for (int32_t i = 0; i < b->np; i++)
        if (pi[i] > sc) sc = pi[i];
    for (int32_t k = 0; k < b->nk; k++)
        if (mu[k] * tl > sc) sc = mu[k] * tl;
    if (!(sc > 0)) goto out;
    for (int32_t i = 0; i < b->np; i++) {
        const piece *p = &b->pc[i];
        if (!(pi[i] > 0) || p->t > tl || p->m / 1e9 > ml) continue;
        double hi = (double)b->gcount[p->g], ht = p->t > 0 ? floor(tl / p->t) : hi;
        Cbc_addCol(q, "", 0, ht < hi ? ht : hi, pi[i] / sc, 1, 0, NULL, NULL);
        ix[nn++] = i;
    }
    for (int32_t k = 0; k < b->nk; k++) Cbc_addCol(q, "", 0, DBL_MAX, mu[k] / sc, 0, 0, NULL, NULL);
    for (int32_t pass = 0; pass < 2; pass++) {  // time, memory
        for (int32_t j = 0; j < nn; j++)
            ri[j] = j, rv[j] = pass ? b->pc[ix[j]].m / 1e9 : b->pc[ix[j]].t;
        Cbc_addRow(q, "", nn, ri, rv, 'L', pass ? ml : tl);
    }
    for (int32_t g = 0; g < b->ng; g++) {
        int32_t k = 0;
        for (int32_t j = 0; j < nn; j++)
            if (b->pc[ix[j]].g == g) ri[k] = j, rv[k++] = 1;
        if (k) Cbc_addRow(q, "", k, ri, rv, 'L', (double)b->gcount[g]);
    }
    for (int32_t k = 0; k < b->nk; k++) {
        for (int32_t pass = 0; pass < 2; pass++) {
            if (pass && !(b->tau[k] < INFINITY)) continue;
            double f = pass ? b->tau[k] * 1e9 : 1;  // s/GB
            for (int32_t j = 0; j < nn; j++)
                ri[j] = j, rv[j] = f * (pass ? b->pc[ix[j]].m / 1e9 : b->pc[ix[j]].t);
            ri[nn] = nn + k, rv[nn] = 1;
            Cbc_addRow(q, "", nn + 1, ri, rv, 'L', f * (pass ? ml : tl));
        }
    }
    Cbc_setParameter(q, "preprocess", "off");
    Cbc_setParameter(q, "cuts", "off");
    Cbc_setParameter(q, "heuristics", "off");
    Cbc_setMaximumNodes(q, ZEL_PATTERN_MIP_NODES);
    Cbc_setAllowableGap(q, ZEL_LP_TOL);
    Cbc_setAllowableFractionGap(q, ZEL_LP_TOL);
    Cbc_solve(q);
    if (Cbc_isProvenOptimal(q) || Cbc_getBestPossibleObjValue(q) < DBL_MAX) {
        double bp = Cbc_getBestPossibleObjValue(q);
        if (Cbc_isProvenOptimal(q) && Cbc_getObjValue(q) > bp) bp = Cbc_getObjValue(q);
        *ub = sc * (bp + 1e-7 * (1 + fabs(bp)));
        const double *x = Cbc_getColSolution(q);
        if (x) {
            memset(b->best_n, 0, sizeof(int32_t) * (size_t)b->np);
            double t = 0, m = 0, v = 0;
            for (int32_t j = 0; j < nn; j++) {
                int32_t n = (int32_t)llround(x[j]);
                b->best_n[ix[j]] = n;
                t += n * b->pc[ix[j]].t, m += n * b->pc[ix[j]].m, v += n * pi[ix[j]];
            }
            if (t <= tl && m <= b->m->mem_room - c->H) best = v + cap_sum(b, mu, c, T, t, m);
        }
    }
out:
    if (q) Cbc_deleteModel(q);
    free(ix), free(ri), free(rv);
    return best;
}

static int pool_fits(const pbound *b, int32_t j, double T) {
    const pclass *c = &b->cls[b->pool_cls[j]];
    double t = c->L, m = c->H;
    for (int32_t i = 0; i < b->np; i++) {
        int32_t n = b->pool[(size_t)j * b->np + i];
        t += n * b->pc[i].t, m += n * b->pc[i].m;
    }
    return t <= T && m <= b->m->mem_room;
}

static uint64_t pool_hash(int32_t c, const int32_t *n, int32_t np) {
    return zg_hash_bytes(ZG_HASH_SEED ^ (uint64_t)c, n, sizeof(int32_t) * (size_t)np);
}

typedef struct pool_key {
    int32_t c;
    const int32_t *n;
} pool_key;

static int pool_eq(int64_t j, const void *key, const void *ctx) {
    const pbound *b = ctx;
    const pool_key *k = key;
    return b->pool_cls[j] == k->c &&
           !memcmp(&b->pool[(size_t)j * b->np], k->n, sizeof(int32_t) * (size_t)b->np);
}

// Appends counts n of class c to the pool. Returns 1 if added (0: the pool is full).
static int pool_push(pbound *b, int32_t c, const int32_t *n, uint64_t h) {
    if (b->n_pool == b->cap_pool) {
        if (b->cap_pool >= ZEL_PATTERN_POOL_MAX) return 0;
        int32_t nc = b->cap_pool ? 2 * b->cap_pool : 256;
        int32_t *p = realloc(b->pool, sizeof(int32_t) * (size_t)nc * (size_t)b->np);
        if (!p) return 0;
        b->pool = p;
        int32_t *pc = realloc(b->pool_cls, sizeof(int32_t) * (size_t)nc);
        if (!pc) return 0;
        b->pool_cls = pc;
        b->cap_pool = nc;
    }
    zg_error err;
    if (zg_hmap_add(&b->pool_index, h, &err) != b->n_pool) return 0;
    memcpy(&b->pool[(size_t)b->n_pool * b->np], n, sizeof(int32_t) * (size_t)b->np);
    b->pool_cls[b->n_pool++] = c;
    return 1;
}

// Adds counts n of class c to the pool unless present. Returns 1 if added. Patterns keep the
// order they were added in.
static int pool_add(pbound *b, int32_t c, const int32_t *n) {
    uint64_t h = pool_hash(c, n, b->np);
    pool_key k = {c, n};
    if (zg_hmap_find(&b->pool_index, h, pool_eq, &k, b) >= 0) return 0;
    return pool_push(b, c, n, h);
}

enum { PB_FEASIBLE = 0, PB_INFEASIBLE = 1, PB_UNKNOWN = 2 };

// Appends pattern j's column (at T) to the column buffers.
static void col_of(const pbound *b, int32_t j, double T, int32_t *idx, double *val, int32_t *nz) {
    const pclass *c = &b->cls[b->pool_cls[j]];
    double t = 0, m = 0;
    int32_t k = 0;
    for (int32_t i = 0; i < b->np; i++) {
        int32_t n = b->pool[(size_t)j * b->np + i];
        if (!n) continue;
        t += n * b->pc[i].t, m += n * b->pc[i].m;
        idx[k] = i, val[k++] = n;
    }
    for (int32_t f = 0; f < b->nk; f++) {
        double v = cap_k(b, f, c, T, t, m);
        if (v > 0) idx[k] = b->np + f, val[k++] = v;
    }
    idx[k] = b->np + b->nk + b->ng + b->pool_cls[j], val[k++] = 1;
    *nz = k;
}

// Is the LP feasible at T? Column generation from the pool's fitting patterns; *iters counts
// restricted-LP solves against the caller's budget.
static int feasible_at(pbound *b, double T, int64_t *iters, int64_t max_iters, double t_end) {
    int32_t np = b->np, nk = b->nk, ng = b->ng, nc = b->nc;
    int32_t rows = np + nk + ng + nc;
    // every group needs a piece that fits some class at T
    for (int32_t g = 0; g < ng; g++) {
        int ok = 0;
        for (int32_t i = 0; i < np && !ok; i++)
            for (int32_t c = 0; c < nc && !ok; c++)
                ok = b->pc[i].g == g && b->cls[c].L + b->pc[i].t <= T &&
                     b->cls[c].H + b->pc[i].m <= b->m->mem_room;
        if (!ok) return PB_INFEASIBLE;
    }
    for (int32_t c = 0; c < nc; c++)
        if (b->cls[c].L > T || b->cls[c].H > b->m->mem_room) return PB_INFEASIBLE;
    int32_t maxnz = np + nk + 1;
    int32_t *cidx = malloc(sizeof(int32_t) * (size_t)(maxnz + 2) * 2);
    double *cval = malloc(sizeof(double) * (size_t)(maxnz + 2));
    double *rlo = malloc(sizeof(double) * (size_t)rows * 2), *rhi = rlo ? rlo + rows : NULL;
    double *pi = malloc(sizeof(double) * (size_t)rows);
    Clp_Simplex *lp = Clp_newModel();
    int res = PB_UNKNOWN;
    if (!cidx || !cval || !rlo || !pi || !lp) goto done;
    Clp_setLogLevel(lp, 0);
    for (int32_t i = 0; i < np; i++) rlo[i] = 0, rhi[i] = DBL_MAX;
    for (int32_t k = 0; k < nk; k++) rlo[np + k] = b->D[k], rhi[np + k] = DBL_MAX;
    for (int32_t g = 0; g < ng; g++) rlo[np + nk + g] = rhi[np + nk + g] = (double)b->gcount[g];
    for (int32_t c = 0; c < nc; c++) rlo[np + nk + ng + c] = rhi[np + nk + ng + c] = b->cls[c].n;
    Clp_resize(lp, rows, 0);
    Clp_chgRowLower(lp, rlo);
    Clp_chgRowUpper(lp, rhi);
    // S: pays for every shortfall at once (S = 1 covers all rows)
    {
        int32_t k = 0;
        for (int32_t i = 0; i < np; i++) {
            const piece *p = &b->pc[i];
            cidx[k] = i, cval[k++] = (double)p->d * (double)b->gcount[p->g];
        }
        for (int32_t f = 0; f < nk; f++) cidx[k] = np + f, cval[k++] = b->D[f] > 0 ? b->D[f] : 1;
        CoinBigIndex st[2] = {0, k};
        double lo = 0, hi = DBL_MAX, obj = 1;
        Clp_addColumns(lp, 1, &lo, &hi, &obj, st, cidx, cval);
    }
    // u_i: pieces of type i needed d_i per unit (only types that fit some class)
    for (int32_t i = 0; i < np; i++) {
        int fits = 0;
        for (int32_t c = 0; c < nc && !fits; c++)
            fits = b->cls[c].L + b->pc[i].t <= T && b->cls[c].H + b->pc[i].m <= b->m->mem_room;
        double lo = 0, hi = fits ? DBL_MAX : 0, obj = 0;
        cidx[0] = i, cval[0] = -(double)b->pc[i].d;
        cidx[1] = np + nk + b->pc[i].g, cval[1] = 1;
        CoinBigIndex st[2] = {0, 2};
        Clp_addColumns(lp, 1, &lo, &hi, &obj, st, cidx, cval);
    }
    for (int32_t j = 0; j < b->n_pool; j++) {
        if (!pool_fits(b, j, T)) continue;
        int32_t nz;
        col_of(b, j, T, cidx, cval, &nz);
        CoinBigIndex st[2] = {0, nz};
        double lo = 0, hi = DBL_MAX, obj = 0;
        Clp_addColumns(lp, 1, &lo, &hi, &obj, st, cidx, cval);
    }
    int first = 1;
    for (;;) {
        if (*iters >= max_iters || (t_end > 0 && zg_time_now() > t_end)) break;
        (*iters)++;
        if (first) Clp_dual(lp, 0), first = 0;
        else Clp_primal(lp, 0);
        if (Clp_status(lp) != 0) break;
        double z = Clp_objectiveValue(lp);
        if (z <= ZEL_LP_TOL) {
            res = PB_FEASIBLE;
            break;
        }
        const double *du = Clp_dualRowSolution(lp);
        // multipliers for the certificate: pi, mu >= 0, nu_g = min over g's usable types
        for (int32_t r = 0; r < np + nk; r++) pi[r] = du[r] > 0 ? du[r] : 0;
        double L = 0;
        for (int32_t k = 0; k < nk; k++) L += pi[np + k] * b->D[k];
        for (int32_t g = 0; g < ng; g++) {
            double nu = INFINITY;
            for (int32_t i = 0; i < np; i++) {
                if (b->pc[i].g != g) continue;
                int fits = 0;
                for (int32_t c = 0; c < nc && !fits; c++)
                    fits = b->cls[c].L + b->pc[i].t <= T &&
                           b->cls[c].H + b->pc[i].m <= b->m->mem_room;
                if (fits && pi[i] * b->pc[i].d < nu) nu = pi[i] * b->pc[i].d;
            }
            L += nu * (double)b->gcount[g];
        }
        int added = 0;
        for (int32_t c = 0; c < nc; c++) {
            double sig = du[np + nk + ng + c], ub;
            // a node-capped search first; when it finds no new column, the exact MIP (its
            // bound is the certificate's)
            b->max_nodes = ZEL_PATTERN_PRICE_NODES;
            double thr = 1e-6 * fabs(sig) + 1e-12;  // above the LP's own tolerances
            double v = price(b, &b->cls[c], pi, pi + np, T, ZEL_LP_TOL * fabs(sig), &ub);
            int fresh = v + sig > thr && pool_add(b, c, b->best_n);
            if (!fresh) {
                v = price_mip(b, &b->cls[c], pi, pi + np, T, &ub);
                fresh = v + sig > thr && pool_add(b, c, b->best_n);
            }
            L -= b->cls[c].n * ub;
            if (fresh) {
                int32_t nz;
                col_of(b, b->n_pool - 1, T, cidx, cval, &nz);
                CoinBigIndex st[2] = {0, nz};
                double lo = 0, hi = DBL_MAX, obj = 0;
                Clp_addColumns(lp, 1, &lo, &hi, &obj, st, cidx, cval);
                added++;
            }
        }
        double scale = 0;
        for (int32_t k = 0; k < nk; k++) scale += pi[np + k] * b->D[k];
        if (L > ZEL_LP_TOL * scale && L > 0) {
            res = PB_INFEASIBLE;
            break;
        }
        if (!added) break;  // converged (or the pool is full) without a certificate
    }
done:
    if (lp) Clp_deleteModel(lp);
    free(cidx), free(cval), free(rlo), free(pi);
    return res;
}

// Piece types: per group and degree, the Pareto set of (time, memory) over its options.
static int32_t build_pieces(pbound *b, double Tmax, zg_error *err) {
    const zel_model *m = b->m;
    int32_t n = 0, capn = 64;
    b->pc = zg_calloc((size_t)capn, sizeof(piece), err);
    if (!b->pc) return -1;
    for (int32_t g = 0; g < m->n_grps; g++) {
        const zel_grp *G = &m->grps[g];
        for (int32_t j = 0; j < G->n_opts; j++) {
            const zel_opt *o = &G->opts[j];
            if (o->time > Tmax || o->mem > m->mem_room) continue;
            int dom = 0;
            for (int32_t i = 0; i < n && !dom; i++) {
                piece *p = &b->pc[i];
                if (p->g != g || p->d != o->degree) continue;
                if (p->t <= o->time && p->m <= o->mem) dom = 1;
                else if (o->time <= p->t && o->mem <= p->m) *p = b->pc[--n], i--;  // dominated
            }
            if (dom) continue;
            if (n == capn) {
                piece *q = realloc(b->pc, sizeof(piece) * (size_t)capn * 2);
                if (!q) return zg_error_set(err, ZG_ERR_NOMEM, "pattern bound: out of memory"), -1;
                b->pc = q, capn *= 2;
            }
            b->pc[n++] = (piece){g, o->degree, o->time, o->mem};
        }
    }
    return n;
}

zg_status zel_pattern_bound(const zel_model *m, double lo, double hi, const zel_limits *lim,
                            double *lb, zg_error *err) {
    *lb = lo;
    if (!(hi < INFINITY) || hi <= lo || m->n_grps == 0 || m->n_ranks == 0) return ZG_OK;
    pbound b;
    memset(&b, 0, sizeof b);
    b.m = m;
    b.ng = m->n_grps;
    zg_status st = ZG_OK;
    b.np = build_pieces(&b, hi, err);
    if (b.np < 0) {
        free(b.pc);
        return ZG_ERR_NOMEM;
    }
    if (b.np > ZEL_PATTERN_MAX_PIECES) {
        free(b.pc);
        return ZG_OK;  // *lb = lo
    }
    // fluids: the main one, the extra densities, the mean term
    double D[ZEL_MAX_XFL + 2], tau[ZEL_MAX_XFL + 2];
    if (m->fill_mem > 0 && zel_mem_area(m) > 0)
        D[b.nk] = zel_mem_area(m), tau[b.nk] = D[b.nk] / m->fill_mem, b.nk++;
    for (int32_t j = 0; j < m->n_xfl; j++) {
        double A = m->extra_area - m->xfl_free[j];
        if (A > 0 && m->xfl_mem[j] > 0) D[b.nk] = A, tau[b.nk] = A / m->xfl_mem[j], b.nk++;
    }
    D[b.nk] = m->extra_area, tau[b.nk] = INFINITY, b.nk++;
    b.D = D, b.tau = tau;
    // classes: ranks with equal ledgers
    b.cls = zg_calloc((size_t)m->n_ranks, sizeof(pclass), err);
    b.gcount = zg_calloc((size_t)b.ng, sizeof(int64_t), err);
    size_t npz = (size_t)b.np + 1;
    b.items = zg_calloc(npz * 4 + (size_t)b.ng, sizeof(int32_t), err);
    b.scratch = zg_calloc(npz * 2, sizeof(double), err);
    if (!b.cls || !b.gcount || !b.items || !b.scratch) {
        st = ZG_ERR_NOMEM;
        goto out;
    }
    b.cnt = b.items + npz, b.best_n = b.items + 2 * npz, b.gleft = b.items + 4 * npz;
    for (int32_t g = 0; g < b.ng; g++) b.gcount[g] = m->grps[g].count;
    for (int32_t r = 0; r < m->n_ranks; r++) {
        int32_t c = 0;
        while (c < b.nc && !(b.cls[c].L == m->base_load[r] && b.cls[c].H == m->base_mem[r])) c++;
        if (c == b.nc) b.cls[b.nc++] = (pclass){m->base_load[r], m->base_mem[r], 0};
        b.cls[c].n++;
    }
    // the pool starts with each class's empty and single-piece patterns (distinct: no test)
    for (int32_t c = 0; c < b.nc; c++) {
        memset(b.cnt, 0, sizeof(int32_t) * npz);
        pool_push(&b, c, b.cnt, pool_hash(c, b.cnt, b.np));
        for (int32_t i = 0; i < b.np; i++) {
            b.cnt[i] = 1;
            pool_push(&b, c, b.cnt, pool_hash(c, b.cnt, b.np));
            b.cnt[i] = 0;
        }
    }
    int64_t iters = 0, max_iters = lim->max_nodes > 0 ? lim->max_nodes : 4000;
    double t_end = lim->time_limit_s > 0 ? zg_time_now() + lim->time_limit_s : 0;
    // bisection: lo is proven (every plan is above it), hi is not below the optimum
    for (int step = 0; step < 40 && hi - lo > ZEL_PATTERN_PREC * hi; step++) {
        if (iters >= max_iters || (t_end > 0 && zg_time_now() > t_end)) break;
        double mid = lo + (hi - lo) / 2;
        int r = feasible_at(&b, mid, &iters, max_iters, t_end);
        if (r == PB_INFEASIBLE) lo = mid;
        else hi = mid;
    }
    *lb = lo;
out:
    free(b.pc), free(b.cls), free(b.gcount), free(b.items), free(b.scratch);
    free(b.pool), free(b.pool_cls);
    zg_hmap_free(&b.pool_index);
    return st;
}

#else

zg_status zel_pattern_bound(const zel_model *m, double lo, double hi, const zel_limits *lim,
                            double *lb, zg_error *err) {
    (void)m, (void)hi, (void)lim, (void)err;
    *lb = lo;  // needs Clp (built with CBC)
    return ZG_OK;
}

#endif
