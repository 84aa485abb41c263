// zel_testlib.h — hand-built planner problems for the Zellige tests (no pricer needed), and a
// brute-force reference that enumerates every per-sequence option assignment.
#ifndef ZEL_TESTLIB_H
#define ZEL_TESTLIB_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zellige/internal.h"
#include "zgtest.h"

// A generator seeded with seed (the random tests' draws).
static inline zg_rng trng(uint64_t seed) {
    zg_rng r;
    zg_rng_init(&r, seed);
    return r;
}

// A planning context with no model, cluster or pricer and the default options (the hand-built
// problems carry their prices).
static inline zg_plan_ctx tctx(void) {
    zg_plan_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    zg_planner_opts_default(&ctx.opts);
    return ctx;
}

typedef struct tgroup {
    int64_t count;
    double w;       // whole price (s)
    double comm;    // split overhead: time(d) = w/d * (1 + comm*(d-1))
    double mem;     // whole memory; mem(d) = mem/d
} tgroup;

// A problem shell on N ranks: ng groups of cnt[g] members, numbered group by group, tokens
// 1000 (g + 1), bucket "<tag><g>"; the caller adds each group's options and whole price. Free
// with tprob_free.
static inline zg_problem tprob_shell(int32_t N, double cap, int32_t ng, const int64_t *cnt,
                                     char tag) {
    zg_problem pr;
    memset(&pr, 0, sizeof pr);
    pr.world_size = N;
    pr.mem_room = cap;
    pr.mem_cap = cap;  // base 0: the cap is all room
    pr.n_groups = ng;
    pr.groups = calloc((size_t)(ng > 0 ? ng : 1), sizeof(zg_group));
    for (int32_t g = 0; g < ng; g++) pr.n_seqs += cnt[g];
    pr.group_of = calloc((size_t)pr.n_seqs + 1, sizeof(int32_t));
    int64_t at = 0;
    for (int32_t g = 0; g < ng; g++) {
        zg_group *G = &pr.groups[g];
        G->count = cnt[g];
        G->members = calloc((size_t)G->count, sizeof(int64_t));
        for (int64_t j = 0; j < G->count; j++) {
            G->members[j] = at;
            pr.group_of[at++] = g;
        }
        G->tokens = 1000 * (g + 1);
        snprintf(G->bucket, sizeof G->bucket, "%c%d", tag, g);
    }
    return pr;
}

// Builds a problem on N ranks: degrees 1..maxd, starts per family (0 aligned: start % d == 0;
// 1 sliding: every start). Members are numbered group by group. Free with tprob_free.
static inline zg_problem tprob_make(int32_t N, double cap, const tgroup *tg, int32_t ng, int32_t maxd,
                             int sliding) {
    int64_t cnt[16];
    for (int32_t g = 0; g < ng && g < 16; g++) cnt[g] = tg[g].count;
    zg_problem pr = tprob_shell(N, cap, ng, cnt, 'b');
    for (int32_t g = 0; g < ng; g++) {
        zg_group *G = &pr.groups[g];
        G->opts = calloc((size_t)N * (size_t)maxd + 1, sizeof(zg_option));
        for (int32_t d = 1; d <= maxd && d <= N; d++) {
            for (int32_t s = 0; s + d <= N; s++) {
                if (!sliding && s % d) continue;
                zg_option *o = &G->opts[G->n_opts];
                o->config = (zg_config){1, d, 1};
                o->start = s;
                o->time = tg[g].w / d * (1 + tg[g].comm * (d - 1));
                o->mem = tg[g].mem / d;
                if (o->mem <= cap) G->n_opts++;
            }
        }
        G->whole_time = tg[g].w;
        G->whole_mem = tg[g].mem;
    }
    return pr;
}

static inline void tprob_free(zg_problem *pr) {
    for (int32_t g = 0; g < pr->n_groups; g++) free(pr->groups[g].members), free(pr->groups[g].opts);
    free(pr->groups);
    free(pr->group_of);
    memset(pr, 0, sizeof *pr);
}

// Brute force over every per-sequence option choice of groups idx[0..n): min makespan T*, then
// min #split with every load <= (1+eps) T*. Returns 0 if infeasible.
static inline int tbrute(const zg_problem *pr, const int32_t *idx, int32_t n, double eps, double *T,
                  int64_t *K) {
    int64_t units = 0;
    for (int32_t i = 0; i < n; i++) units += pr->groups[idx[i]].count;
    int32_t *ug = calloc((size_t)units + 1, sizeof(int32_t)), *pick = calloc((size_t)units + 1, sizeof(int32_t));
    int64_t u = 0;
    for (int32_t i = 0; i < n; i++)
        for (int64_t j = 0; j < pr->groups[idx[i]].count; j++) ug[u++] = idx[i];
    int32_t N = pr->world_size;
    double *L = calloc((size_t)N, sizeof(double)), *H = calloc((size_t)N, sizeof(double));
    double bestT = INFINITY;
    for (int pass = 0; pass < 2; pass++) {
        int64_t bestK = INT64_MAX;
        memset(pick, 0, sizeof(int32_t) * (size_t)(units + 1));
        for (;;) {
            for (int32_t r = 0; r < N; r++) L[r] = H[r] = 0;
            int64_t k = 0;
            for (int64_t v = 0; v < units; v++) {
                const zg_option *o = &pr->groups[ug[v]].opts[pick[v]];
                for (int32_t r = o->start; r < o->start + zg_option_degree(o); r++)
                    L[r] += o->time, H[r] += o->mem;
                k += zg_option_degree(o) > 1;
            }
            double t = 0;
            int ok = 1;
            for (int32_t r = 0; r < N; r++) {
                if (L[r] > t) t = L[r];
                if (H[r] > pr->mem_room) ok = 0;
            }
            if (ok && pass == 0 && t < bestT) bestT = t;
            if (ok && pass == 1 && t <= (1 + eps) * bestT * (1 + 1e-12) && k < bestK) bestK = k;
            int64_t v = 0;
            while (v < units && ++pick[v] == pr->groups[ug[v]].n_opts) pick[v++] = 0;
            if (v == units) break;
        }
        if (pass == 1) *K = bestK;
    }
    *T = bestT;
    free(ug), free(pick), free(L), free(H);
    return bestT < INFINITY;
}

// A random node of the stage-1 search: the first k units (group order, options non-decreasing
// inside a group, as the search enumerates them) get random options in opt[0..k); L and H (n_ranks
// each) receive their loads and memory. Returns the units' total area.
static inline double trand_prefix(zg_rng *rng, const zel_model *m, int64_t k, int32_t *opt,
                                  double *L, double *H) {
    for (int32_t r = 0; r < m->n_ranks; r++) L[r] = H[r] = 0;
    double sum = 0;
    for (int64_t v = 0; v < k; v++) {
        const zel_grp *G = &m->grps[m->grp_of[v]];
        int32_t lo = v > 0 && m->grp_of[v - 1] == m->grp_of[v] ? opt[v - 1] : 0;
        opt[v] = (int32_t)zg_rng_int(rng, lo, G->n_opts - 1);
        const zel_opt *o = &G->opts[opt[v]];
        for (int32_t r = o->start; r < o->start + o->degree; r++) L[r] += o->time, H[r] += o->mem;
        sum += o->area;
    }
    return sum;
}

// A random group of count units: weight 1..10, comm share 0..0.4, memory 0.2..1.5.
static inline tgroup tgroup_rand(zg_rng *rng, int64_t count) {
    tgroup g;
    g.count = count;
    g.w = zg_rng_range(rng, 1.0, 10.0);
    g.comm = zg_rng_range(rng, 0.0, 0.4);
    g.mem = zg_rng_range(rng, 0.2, 1.5);
    return g;
}

// The next assignment of units k.. in odometer order (unit k fastest): units of group gi take
// options lo.., the others 0..; 0 (and opt back at the first assignment) after the last.
static inline int tnext(const zel_model *m, int32_t *opt, int64_t k, int32_t gi, int32_t lo) {
    for (int64_t v = k; v < m->n_units; v++) {
        if (++opt[v] < m->grps[m->grp_of[v]].n_opts) return 1;
        opt[v] = m->grp_of[v] == gi ? lo : 0;
    }
    return 0;
}

// Best objective over every completion of units k.. (units of group gi take options >= lo,
// later groups any option) on top of the assignment opt[0..k). INFINITY if none.
static inline double tbest_completion(const zel_model *m, int32_t *opt, int64_t k, int32_t gi,
                                      int32_t lo) {
    for (int64_t v = k; v < m->n_units; v++) opt[v] = m->grp_of[v] == gi ? lo : 0;
    double best = INFINITY;
    do {
        double T;
        int64_t K;
        if (zel_sol_eval(m, opt, NULL, NULL, &T, &K) && T < best) best = T;
    } while (tnext(m, opt, k, gi, lo));
    return best;
}

// Brute force of the lexicographic stage 1 over every assignment of m's options: the least
// objective *T (INFINITY: none), then the least split count *K among the assignments with T <=
// (1 + eps) *T (-1: none).
static inline void tbrute_lex(const zel_model *m, double eps, double *T, int64_t *K) {
    int32_t *opt = calloc((size_t)m->n_units + 1, sizeof(int32_t));
    *T = tbest_completion(m, opt, 0, 0, 0);
    *K = -1;
    double tcap = (1 + eps) * *T * (1 + 1e-12);
    do {
        double t;
        int64_t k;
        if (*T < INFINITY && zel_sol_eval(m, opt, NULL, NULL, &t, &k) && t <= tcap &&
            (*K < 0 || k < *K))
            *K = k;
    } while (*T < INFINITY && tnext(m, opt, 0, 0, 0));
    free(opt);
}

// Random ledgers for N ranks, rank by rank: a load (an integer 0..3 when `integer`: equal
// breakpoints; else in [0, lmax)) into bl, then a memory in [0, mmax) into bm.
static inline void trand_ledgers(zg_rng *rng, int32_t N, int integer, double lmax, double mmax,
                                 double *bl, double *bm) {
    for (int32_t r = 0; r < N; r++) {
        bl[r] = integer ? (double)zg_rng_int(rng, 0, 3) : zg_rng_range(rng, 0, lmax);
        bm[r] = zg_rng_range(rng, 0, mmax);
    }
}

// A random problem on N ranks with ng groups of 1..max_count units (tgroup_rand), memory cap
// 1.5..4, degrees up to min(N, 8), aligned or sliding starts; idx[g] = g.
static inline zg_problem trand_problem(zg_rng *rng, int32_t N, int32_t ng, int64_t max_count,
                                       int32_t *idx) {
    tgroup tg[8];
    for (int32_t g = 0; g < ng; g++) {
        tg[g] = tgroup_rand(rng, zg_rng_int(rng, 1, max_count));
        idx[g] = g;
    }
    double cap = zg_rng_range(rng, 1.5, 4.0);
    int sliding = (int)zg_rng_int(rng, 0, 1);
    return tprob_make(N, cap, tg, ng, N < 8 ? N : 8, sliding);
}

// 1 if option indices are non-decreasing inside every group (ECF canonical form).
static inline int tsol_canonical(const zel_model *m, const zel_sol *s) {
    for (int32_t g = 0; g < m->n_grps; g++)
        for (int64_t u = m->unit0[g] + 1; u < m->unit0[g + 1]; u++)
            if (s->opt[u - 1] > s->opt[u]) return 0;
    return 1;
}

// 1 if s is legal (every option index in range) and evaluates (memory-feasible) to its T and K.
static inline int tsol_legal(const zel_model *m, const zel_sol *s) {
    for (int64_t u = 0; u < m->n_units; u++)
        if (s->opt[u] < 0 || s->opt[u] >= m->grps[m->grp_of[u]].n_opts) return 0;
    double T;
    int64_t K;
    return zel_sol_eval(m, s->opt, NULL, NULL, &T, &K) && T == s->T && K == s->K;
}

// 1 if a and b are the same solution: options, T and K.
static inline int tsol_same(const zel_model *m, const zel_sol *a, const zel_sol *b) {
    return a->T == b->T && a->K == b->K &&
           !memcmp(a->opt, b->opt, sizeof(int32_t) * (size_t)m->n_units);
}

// Allocates a solution of m (T = INFINITY, K = 0) at a, b and c (each may be NULL); 0 on
// failure. Free with tsols_free.
static inline int tsols(const zel_model *m, zel_sol *a, zel_sol *b, zel_sol *c) {
    zel_sol *s[3] = {a, b, c};
    zg_error err;
    for (int i = 0; i < 3; i++)
        if (s[i]) s[i]->opt = NULL;  // (tsols_free after a failure frees what was allocated)
    for (int i = 0; i < 3; i++)
        if (s[i] && zel_sol_alloc(m, s[i], &err)) return 0;
    return 1;
}

static inline void tsols_free(zel_sol *a, zel_sol *b, zel_sol *c) {
    zel_sol *s[3] = {a, b, c};
    for (int i = 0; i < 3; i++)
        if (s[i]) zel_sol_free(s[i]);
}

// A hand-built problem and its stage-1 model over all its groups (idx: 0..n_groups-1, at most
// 16). Free with tmodel_free.
typedef struct tmodel {
    zg_problem pr;
    zel_model m;
    int32_t idx[16];
} tmodel;

// Builds t->m over every group of t->pr, on the ledgers base and bmem (NULL: zero).
static inline zg_status tmodel_build(tmodel *t, const double *base, const double *bmem,
                                     zg_error *err) {
    memset(&t->m, 0, sizeof t->m);
    if (t->pr.n_groups > 16) return zg_error_set(err, ZG_ERR_INVALID, "tmodel: > 16 groups");
    for (int32_t g = 0; g < t->pr.n_groups; g++) t->idx[g] = g;
    return zel_model_build(&t->pr, t->idx, t->pr.n_groups, base, bmem, &t->m, err);
}

static inline void tmodel_free(tmodel *t) {
    zel_model_free(&t->m);
    tprob_free(&t->pr);
}

// tprob_make(N, cap, tg, ng, maxd, sliding) and its model.
static inline zg_status tmodel_make(tmodel *t, int32_t N, double cap, const tgroup *tg, int32_t ng,
                                    int32_t maxd, int sliding, zg_error *err) {
    t->pr = tprob_make(N, cap, tg, ng, maxd, sliding);
    return tmodel_build(t, NULL, NULL, err);
}

// trand_problem on N in [n_lo, n_hi] ranks with ng in [g_lo, g_hi] groups (drawn in that order)
// of up to max_count units, and its model.
static inline zg_status tmodel_rand(tmodel *t, zg_rng *rng, int32_t n_lo, int32_t n_hi,
                                    int32_t g_lo, int32_t g_hi, int64_t max_count, zg_error *err) {
    int32_t N = (int32_t)zg_rng_int(rng, n_lo, n_hi);
    int32_t ng = (int32_t)zg_rng_int(rng, g_lo, g_hi);
    t->pr = trand_problem(rng, N, ng, max_count, t->idx);
    return tmodel_build(t, NULL, NULL, err);
}

// A random memory-aware fluid for t's model: extra area in [0, 4 N), fill memory (with extra
// area) in [0.2, 0.5) N cap.
static inline void tmodel_fluid(tmodel *t, zg_rng *rng) {
    int32_t N = t->m.n_ranks;
    t->m.extra_area = zg_rng_range(rng, 0.0, 4.0 * N);
    t->m.fill_mem = t->m.extra_area > 0 ? zg_rng_range(rng, 0.2, 0.5) * N * t->pr.mem_room : 0;
}

// Small random models for brute force: N in [2, 4] ranks, ng in [1, max_groups] groups of
// tgroup_rand(1..max_count units; 1..max_count1 when ng = 1), memory cap in [cap_lo, 3),
// degrees up to N, aligned or sliding starts; then by kind the filler fluid: TSMALL_MEM extra
// area in [1, 12) and fill memory in [0.2, 0.5) cap N (memory-aware), TSMALL_FILL the extra
// area only (fill-aware), TSMALL_BARE none (the paper's max load).
enum { TSMALL_MEM, TSMALL_FILL, TSMALL_BARE };
typedef struct tsmall {
    int32_t max_groups;
    int64_t max_count, max_count1;
    double cap_lo;
    int64_t max_units;  // more units (or a group with no option): not used
    int kind;
} tsmall;

// Draws a model by spec into t; 0 (nothing to free) when it is not used.
static inline int tsmall_model(zg_rng *rng, tsmall spec, tmodel *t) {
    int32_t N = (int32_t)zg_rng_int(rng, 2, 4);
    int32_t ng = (int32_t)zg_rng_int(rng, 1, spec.max_groups);
    tgroup tg[8];
    int64_t units = 0;
    for (int32_t g = 0; g < ng; g++) {
        tg[g] = tgroup_rand(rng, zg_rng_int(rng, 1, ng == 1 ? spec.max_count1 : spec.max_count));
        units += tg[g].count;
    }
    double cap = zg_rng_range(rng, spec.cap_lo, 3.0);
    t->pr = tprob_make(N, cap, tg, ng, N, (int)zg_rng_int(rng, 0, 1));
    int ok = units <= spec.max_units;
    for (int32_t g = 0; g < ng; g++) ok &= t->pr.groups[g].n_opts > 0;
    zg_error err;
    if (!ok || tmodel_build(t, NULL, NULL, &err)) {
        tprob_free(&t->pr);
        return 0;
    }
    if (spec.kind != TSMALL_BARE) t->m.extra_area = zg_rng_range(rng, 1.0, 12.0);
    if (spec.kind == TSMALL_MEM) t->m.fill_mem = zg_rng_range(rng, 0.2, 0.5) * cap * N;
    return 1;
}

// A random node of the stage-1 search, for the bound tests: the first k units (k random) on
// random options (trand_prefix: opt[0..k), their loads L and H, their area sumL); unit k's
// group gi, the least option lo its units may take and rem of them left; Tc, the objective of
// the best completion (INFINITY: none); area, the plain area term of the remaining units.
typedef struct tnode {
    int64_t k, rem;
    int32_t gi, lo;
    double sumL, Tc, area;
} tnode;

static inline tnode tnode_rand(zg_rng *rng, const zel_model *m, int32_t *opt, double *L,
                               double *H) {
    tnode nd;
    nd.k = zg_rng_int(rng, 0, m->n_units - 1);
    nd.sumL = trand_prefix(rng, m, nd.k, opt, L, H);
    nd.gi = m->grp_of[nd.k];
    nd.lo = nd.k > 0 && m->grp_of[nd.k - 1] == nd.gi ? opt[nd.k - 1] : 0;
    nd.rem = m->unit0[nd.gi + 1] - nd.k;
    int32_t *tmp = malloc(sizeof(int32_t) * (size_t)m->n_units);
    memcpy(tmp, opt, sizeof(int32_t) * (size_t)m->n_units);
    nd.Tc = tbest_completion(m, tmp, nd.k, nd.gi, nd.lo);
    free(tmp);
    nd.area = 0;
    for (int32_t g = nd.gi; g < m->n_grps; g++) {
        double mn = INFINITY;
        for (int32_t j = g == nd.gi ? nd.lo : 0; j < m->grps[g].n_opts; j++)
            if (m->grps[g].opts[j].area < mn) mn = m->grps[g].opts[j].area;
        nd.area += (double)(g == nd.gi ? nd.rem : m->grps[g].count) * mn;
    }
    return nd;
}

// The exact min-T search (no limits) on the model of all of pr's groups with the fluid terms
// extra_area and fill_mem, with its symmetry breaking and without (n_sym = 0).
typedef struct tsym_run {
    int32_t n_sym;                   // symmetries found
    int has_rev;                     // a reflection among them
    int complete;                    // both searches completed
    double T_sym, T_plain;           // their objectives
    int64_t nodes_sym, nodes_plain;  // and node counts
} tsym_run;

static inline zg_status tsym_solve(const zg_problem *pr, double extra_area, double fill_mem,
                                   tsym_run *r, zg_error *err) {
    memset(r, 0, sizeof *r);
    tmodel a, b;
    a.pr = b.pr = *pr;
    zg_status st = tmodel_build(&a, NULL, NULL, err);
    if (st) return st;
    if ((st = tmodel_build(&b, NULL, NULL, err))) {
        zel_model_free(&a.m);
        return st;
    }
    r->n_sym = a.m.n_sym;
    for (int32_t k = 0; k < a.m.n_sym; k++) r->has_rev |= a.m.sym[k].rev;
    b.m.n_sym = 0;
    a.m.extra_area = b.m.extra_area = extra_area;
    a.m.fill_mem = b.m.fill_mem = fill_mem;
    zel_sol sa, sb;
    zel_stats x, y;
    if (!tsols(&a.m, &sa, &sb, NULL)) st = zg_error_set(err, ZG_ERR_NOMEM, "tsym_solve: no memory");
    if (!st) st = zel_solve_minmax(&a.m, &sa, NULL, &x, err);
    if (!st) st = zel_solve_minmax(&b.m, &sb, NULL, &y, err);
    if (!st) {
        r->complete = x.complete && y.complete;
        r->T_sym = sa.T, r->T_plain = sb.T;
        r->nodes_sym = x.nodes, r->nodes_plain = y.nodes;
    }
    tsols_free(&sa, &sb, NULL);
    zel_model_free(&a.m), zel_model_free(&b.m);
    return st;
}

// The exact min-T search (zel_solve_minmax) on m from no incumbent under lim (NULL: none): its
// solution in *sol (allocated here, also on failure: free with zel_sol_free), its statistics in
// *st.
static inline zg_status tminmax(const zel_model *m, const zel_limits *lim, zel_sol *sol,
                                zel_stats *st, zg_error *err) {
    zel_limits none = {0, 0, 0, 0, 0};
    zg_status rc = zel_sol_alloc(m, sol, err);
    return rc ? rc : zel_solve_minmax(m, sol, lim ? lim : &none, st, err);
}

// Stage 1 on m (zel_anchor_solve: no limits, no warm start) at split tolerance eps: its
// statistics in *st and, when sol is not NULL, its solution in *sol (allocated here, also on
// failure: free with zel_sol_free).
static inline zg_status tstage1(const zel_model *m, double eps, zel_sol *sol, zel_stage1 *st,
                                zg_error *err) {
    zel_sol own;
    zel_sol *s = sol ? sol : &own;
    zg_status rc = zel_sol_alloc(m, s, err);
    zel_limits lim = {0, 0, 0, 0, 0};
    if (!rc) rc = zel_anchor_solve(m, eps, &lim, NULL, s, st, err);
    if (!sol) zel_sol_free(&own);
    return rc;
}

// The symmetry tests' checks on tsym_solve: a symmetry is found (a reflection when want_rev),
// both searches complete with the same objective; their node counts are added to *nodes.
static inline void tsym_check(int *zg_failed_, const zg_problem *pr, double extra_area,
                              double fill_mem, int want_rev, int trial, int64_t nodes[2]) {
    tsym_run r;
    zg_error err;
    CHECK_OK(tsym_solve(pr, extra_area, fill_mem, &r, &err), &err);
    CHECK_MSG(want_rev ? r.has_rev : r.n_sym > 0, "trial %d: no symmetry found", trial);
    CHECK(r.complete);
    CHECK_MSG(fabs(r.T_sym - r.T_plain) <= 1e-9 * r.T_plain, "trial %d: %.12g vs %.12g", trial,
              r.T_sym, r.T_plain);
    nodes[0] += r.nodes_sym, nodes[1] += r.nodes_plain;
}

#endif
