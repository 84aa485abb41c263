// zel_testlib.h — hand-built planner problems for the Zellige tests (no pricer needed), and a
// brute-force reference that enumerates every per-sequence option assignment.
#ifndef ZEL_TESTLIB_H
#define ZEL_TESTLIB_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zellige/internal.h"

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
    pr.mem_cap = cap;
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
                if (H[r] > pr->mem_cap) ok = 0;
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

// Best objective over every completion of units k.. (units of group gi take options >= lo,
// later groups any option) on top of the assignment opt[0..k). INFINITY if none.
static inline double tbest_completion(const zel_model *m, int32_t *opt, int64_t k, int32_t gi,
                                      int32_t lo) {
    for (int64_t v = k; v < m->n_units; v++) opt[v] = m->grp_of[v] == gi ? lo : 0;
    double best = INFINITY;
    for (;;) {
        double T;
        int64_t K;
        if (zel_sol_eval(m, opt, NULL, NULL, &T, &K) && T < best) best = T;
        int64_t v = k;
        while (v < m->n_units) {
            int32_t first = m->grp_of[v] == gi ? lo : 0;
            if (++opt[v] < m->grps[m->grp_of[v]].n_opts) break;
            opt[v++] = first;
        }
        if (v == m->n_units) break;
    }
    return best;
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

#endif
