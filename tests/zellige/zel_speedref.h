// zel_speedref.h — plain reference implementations for test_zel_speedups.c (the root bound's also
// for test_zel_heur_lns.c): each restates a documented rule of the Zellige planner the slow,
// obvious way (full sorts, no pruning, no incremental tables), so the tests can check that the
// optimised code gives the same result.
#ifndef ZEL_SPEEDREF_H
#define ZEL_SPEEDREF_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zellige/internal.h"
#include "zel_testlib.h"

// ---- random problems with several options per rank block ----------------------------------------

// A problem on N ranks whose groups have 1..maxo options each, with several configs of one
// degree (so a rank block holds several options), quantised times and memories (ties, exact
// duplicates), some options off the world (start + degree > N) or over the memory cap. Every
// group gets at least one whole option on rank 0 so that it can be placed. Free with tprob_free.
static inline zg_problem rprob_make(zg_rng *rng, int32_t N, int32_t ng, double cap, int32_t maxo) {
    int64_t cnt[16];
    for (int32_t g = 0; g < ng; g++) cnt[g] = zg_rng_int(rng, 1, 4);
    zg_problem pr = tprob_shell(N, cap, ng, cnt, 'r');
    for (int32_t g = 0; g < ng; g++) {
        zg_group *G = &pr.groups[g];
        int32_t no = (int32_t)zg_rng_int(rng, 1, maxo);
        G->opts = calloc((size_t)no + 1, sizeof(zg_option));
        double w = (double)zg_rng_int(rng, 2, 20) * 0.5;
        G->opts[G->n_opts++] = (zg_option){{1, 1, 1}, 0, w, cap * 0.25};
        for (int32_t j = 0; j < no; j++) {
            zg_option *o = &G->opts[G->n_opts];
            if (j > 0 && zg_rng_int(rng, 0, 5) == 0) {  // an exact duplicate of the last one
                *o = o[-1];
                G->n_opts++;
                continue;
            }
            int32_t d = (int32_t)zg_rng_int(rng, 1, N < 6 ? N : 6);
            int32_t kind = (int32_t)zg_rng_int(rng, 0, 2);  // three configs of degree d
            o->config = kind == 0 ? (zg_config){1, d, 1} : kind == 1 ? (zg_config){d, 1, 1}
                                                                     : (zg_config){1, 1, d};
            o->start = (int32_t)zg_rng_int(rng, 0, N - d + (zg_rng_int(rng, 0, 9) == 0));
            o->time = (double)zg_rng_int(rng, 1, 8) * w / (4.0 * d);
            o->mem = (double)zg_rng_int(rng, 1, 6) * cap / (4.0 * d);  // > cap at times
            G->n_opts++;
        }
        G->whole_time = w;
        G->whole_mem = cap * 0.25;
    }
    return pr;
}

// ---- zel_model_build's options ----------------------------------------------------------------

static int ref_opt_cmp(const void *pa, const void *pb) {
    const zel_opt *a = pa, *b = pb;
    if (a->degree != b->degree) return a->degree < b->degree ? -1 : 1;
    if (a->start != b->start) return a->start < b->start ? -1 : 1;
    if (a->time != b->time) return a->time < b->time ? -1 : 1;
    if (a->mem != b->mem) return a->mem < b->mem ? -1 : 1;
    return a->src < b->src ? -1 : a->src > b->src;
}

// The model's options of problem group g as documented: the options on the world that fit the
// memory cap, sorted by (degree, start, time, mem, source index), then per rank block only
// those with a memory strictly below every faster one of the block (Pareto). out: n_opts slots.
static inline int32_t ref_model_opts(const zg_problem *pr, int32_t g, zel_opt *out) {
    const zg_group *G = &pr->groups[g];
    zel_opt *all = malloc(sizeof(zel_opt) * (size_t)(G->n_opts + 1));
    int32_t k = 0;
    for (int32_t j = 0; j < G->n_opts; j++) {
        const zg_option *o = &G->opts[j];
        int32_t d = zg_option_degree(o);
        if (d < 1 || o->start < 0 || o->start + d > pr->world_size || o->mem > pr->mem_room)
            continue;
        all[k++] = (zel_opt){j, o->start, d, d > 1, o->time, o->mem, o->time * d};
    }
    qsort(all, (size_t)k, sizeof *all, ref_opt_cmp);
    int32_t kept = 0;
    for (int32_t j = 0; j < k; j++) {
        int dominated = 0;
        for (int32_t i = 0; i < j && !dominated; i++)
            dominated = all[i].start == all[j].start && all[i].degree == all[j].degree &&
                        all[i].mem <= all[j].mem;
        if (!dominated) out[kept++] = all[j];
    }
    free(all);
    return kept;
}

// ---- zel_model_lower_bound --------------------------------------------------------------------

typedef struct ref_bp {
    double e, area;
    int32_t g;
} ref_bp;

static int ref_bp_cmp(const void *pa, const void *pb) {
    const ref_bp *a = pa, *b = pb;
    return a->e < b->e ? -1 : a->e > b->e;
}

// The root bound as zellige/internal.h defines it: max of the fixed loads (max and mean with the
// fluid area; the memory-aware fluid term from zel_fluid_T_more), and the area (LP) bound over
// every option that fits the memory left on its block, swept over all breakpoints e = block
// load + time sorted ascending: at the first e where every group has a point, and then at each
// later e, T = max(e, (fixed + extra area + sum_g count_g * least area_g) / N) is the bound as
// soon as T is below the next breakpoint. Sums in rank order, then group order.
static inline double ref_lower_bound(const zel_model *m) {
    int32_t N = m->n_ranks;
    double lb = 0, sum = m->extra_area;
    for (int32_t r = 0; r < N; r++) {
        if (m->base_load[r] > lb) lb = m->base_load[r];
        sum += m->base_load[r];
    }
    if (N > 0 && sum / N > lb) lb = sum / N;
    if (m->fill_mem > 0 && N > 0) {
        double f = zel_fluid_T_more(m, m->base_load, m->base_mem, 0);
        if (f > lb) lb = f;
    }
    if (m->n_grps <= 0 || N <= 0) return lb;
    size_t n_all = 1;
    for (int32_t g = 0; g < m->n_grps; g++) n_all += (size_t)m->grps[g].n_opts;
    ref_bp *pts = malloc(sizeof(ref_bp) * n_all);
    double *garea = malloc(sizeof(double) * (size_t)m->n_grps);
    size_t k = 0;
    for (int32_t g = 0; g < m->n_grps; g++) {
        const zel_grp *G = &m->grps[g];
        for (int32_t j = 0; j < G->n_opts; j++) {
            const zel_opt *o = &G->opts[j];
            double hl = 0, hm = 0;
            for (int32_t r = o->start; r < o->start + o->degree; r++) {
                if (r == o->start || m->base_load[r] > hl) hl = m->base_load[r];
                if (r == o->start || m->base_mem[r] > hm) hm = m->base_mem[r];
            }
            if (hm + o->mem > m->mem_room) continue;
            pts[k++] = (ref_bp){hl + o->time, o->area, g};
        }
        garea[g] = INFINITY;
    }
    qsort(pts, k, sizeof *pts, ref_bp_cmp);
    int32_t covered = 0;
    double result = INFINITY;
    for (size_t i = 0; i < k;) {
        double e = pts[i].e;
        for (; i < k && pts[i].e == e; i++) {
            if (garea[pts[i].g] == INFINITY) covered++;
            if (pts[i].area < garea[pts[i].g]) garea[pts[i].g] = pts[i].area;
        }
        if (covered < m->n_grps) continue;
        double f = sum;
        for (int32_t g = 0; g < m->n_grps; g++) f += (double)m->grps[g].count * garea[g];
        double t = f / N > e ? f / N : e;
        if (i == k || t < pts[i].e) {
            result = t;
            break;
        }
    }
    free(pts), free(garea);
    return result > lb ? result : lb;
}

// ---- zel_fluid_ctx_set ------------------------------------------------------------------------

// Checks f (after zel_fluid_ctx_set on L, H) against the plain definition: per-rank filler
// capacity tc = tau * max(cap - H, 0), tot/sumL (rank order) and maxL, the ranks sorted by
// (L + tc, rank) in rk with their breakpoints in bs, and the prefix sums of tc and L in that
// order. Returns 0 when all equal bit for bit, else a code naming the first difference.
static inline int ref_fluid_ctx_check(const zel_fluid_ctx *f, const zel_model *m, const double *L,
                                      const double *H) {
    int32_t N = m->n_ranks;
    double tau = m->fill_mem > 0 ? m->extra_area / m->fill_mem : 0, tot = 0, sumL = 0, maxL = 0;
    double *b = malloc(sizeof(double) * (size_t)(N + 1));
    int32_t *rk = malloc(sizeof(int32_t) * (size_t)(N + 1));
    int bad = 0;
    for (int32_t r = 0; r < N; r++) {
        double c = m->mem_room - H[r], tc = c > 0 ? tau * c : 0;
        if (memcmp(&tc, &f->tc[r], sizeof tc)) bad = bad ? bad : 1;
        tot += tc, sumL += L[r];
        if (L[r] > maxL) maxL = L[r];
        b[r] = L[r] + tc;
        rk[r] = r;
    }
    // selection sort by (b, rank): the plainest total order
    for (int32_t i = 0; i < N; i++) {
        int32_t best = i;
        for (int32_t j = i + 1; j < N; j++)
            if (b[rk[j]] < b[rk[best]] || (b[rk[j]] == b[rk[best]] && rk[j] < rk[best])) best = j;
        int32_t t = rk[i];
        rk[i] = rk[best], rk[best] = t;
    }
    if (!bad && (tot != f->tot || sumL != f->sumL || maxL != f->maxL)) bad = 2;
    double ptc = 0, pl = 0;
    for (int32_t i = 0; i < N && !bad; i++) {
        if (f->rk[i] != rk[i]) bad = 3;
        else if (memcmp(&f->bs[i], &b[rk[i]], sizeof(double))) bad = 4;
        else if (f->pre_tc[i] != ptc || f->pre_L[i] != pl) bad = 5;
        ptc += f->tc[rk[i]], pl += L[rk[i]];
    }
    if (!bad && N > 0 && (f->pre_tc[N] != ptc || f->pre_L[N] != pl)) bad = 5;
    free(b), free(rk);
    return bad;
}

// ---- zel_two_stage without its skips ------------------------------------------------------------

static inline int ref_has_whole(const zg_group *g) {
    for (int32_t j = 0; j < g->n_opts; j++)
        if (zg_config_is_whole(g->opts[j].config)) return 1;
    return 0;
}

// zel_two_stage as docs/zel_internal.h describe it, every candidate placed and the tile safety
// net always run: stage 1 on the anchors (fill-aware model, memory-blind retry), stage 2 on the
// four candidates (first the stage-1 solution, then the min-T one, then the search's start,
// then zel_density_layout's when the model is memory-aware; duplicates once), the fastest full
// plan by a factor 1 - 1e-12 (ties: the earlier), then stage 2 by density on the fastest
// candidate within 0.2 % of it whose plan leaves a rank short of memory (kept when faster by
// the same factor),
// then zel_uniform_best kept when it beats that by the same factor (or stage 1/2 failed).
// Needs ctx->opts.anchor_nodes and anchor_lns_nodes given (the automatic budgets are not
// restated here); split budget = nodes for N <= 8, else max(nodes / 4, 50), as two_stage.c.
// Fills choice (n_seqs), *ms, *udeg and *k_won (candidate kept: 0..3, -1 none). Returns the
// status. Counts in *n_placed how many candidates went through stage 2.
static inline zg_status ref_two_stage(const zg_plan_ctx *ctx, const zg_problem *pr,
                                      int32_t *choice, double *ms_out, int32_t *udeg,
                                      int32_t *k_won, int32_t *n_placed) {
    int32_t N = pr->world_size;
    zg_error err;
    double cut;
    *ms_out = INFINITY, *udeg = 0, *k_won = -1, *n_placed = 0;
    zg_status st = zel_cut_threshold(ctx, pr, &cut, &err);
    if (st) return st;
    int32_t anc[64], fil[64], na = 0, nf = 0;
    for (int32_t g = 0; g < pr->n_groups; g++) {
        const zg_group *G = &pr->groups[g];
        if (cut < 0 || G->whole_time > cut || !ref_has_whole(G))
            anc[na++] = g;
        else
            fil[nf++] = g;
    }
    zel_model m;
    st = zel_model_build(pr, anc, na, NULL, NULL, &m, &err);
    if (st) return st;
    for (int32_t i = 0; i < nf; i++) {
        m.extra_area += (double)pr->groups[fil[i]].count * pr->groups[fil[i]].whole_time;
        m.fill_mem += (double)pr->groups[fil[i]].count * pr->groups[fil[i]].whole_mem;
    }
    zel_sol sol, s0, s1, sd;
    zel_sol_alloc(&m, &sol, &err), zel_sol_alloc(&m, &s0, &err), zel_sol_alloc(&m, &s1, &err);
    zel_sol_alloc(&m, &sd, &err);
    sd.T = INFINITY;
    int64_t budget = ctx->opts.anchor_nodes.nodes;
    zel_limits lim = {budget, 0, ZEL_SEARCH_GAP, 0, 0}, lim2 = lim;
    lim2.max_nodes = N <= 8 ? budget : (budget / 4 > 50 ? budget / 4 : 50);
    int64_t lns = ctx->opts.anchor_lns_nodes.given ? ctx->opts.anchor_lns_nodes.nodes : 0;
    double eps = ctx->opts.eps >= 0 ? ctx->opts.eps : 1e-3;
    zel_stage1 st1;
    st = zel_anchor_solve_lns(&m, eps, &lim, &lim2, lns, NULL, &sol, &s0, &s1, &st1, &err);
    if (st == ZG_ERR_INFEASIBLE && m.fill_mem > 0) {
        m.fill_mem = 0;
        st = zel_anchor_solve_lns(&m, eps, &lim, &lim2, lns, NULL, &sol, &s0, &s1, &st1, &err);
    }
    if (!st && m.fill_mem > 0) zel_density_layout(pr, fil, nf, &m, 20000, &sol, &sd);
    double best = INFINITY;
    if (!st) {
        const zel_sol *cand[4] = {&sol, &s1, &s0, &sd};
        int32_t *ch = malloc(sizeof(int32_t) * (size_t)(pr->n_seqs + 1));
        double *l = malloc(sizeof(double) * 2 * (size_t)N), *h = l + N;
        double cms[4] = {INFINITY, INFINITY, INFINITY, INFINITY};
        int cbind[4] = {0, 0, 0, 0};
        zg_status st0 = ZG_OK;
        for (int32_t k = 0; k < 4; k++) {
            const zel_sol *c = cand[k];
            if (c->T == INFINITY) continue;
            int dup = 0;
            for (int32_t q = 0; q < k; q++)
                if (cand[q]->T < INFINITY &&
                    !memcmp(cand[q]->opt, c->opt, sizeof(int32_t) * (size_t)m.n_units))
                    dup = 1;
            if (dup) continue;
            memcpy(ch, choice, sizeof(int32_t) * (size_t)pr->n_seqs);
            zel_sol_to_choice(&m, pr, c, ch);
            zel_sol_eval(&m, c->opt, l, h, NULL, NULL);
            zg_error e2;
            zg_status sk = zel_filler_place(pr, NULL, fil, nf, l, h, ch, &e2);
            (*n_placed)++;
            if (k == 0) st0 = sk;
            if (sk) continue;
            double ms = zel_choice_makespan(pr, ch, NULL, NULL);
            cms[k] = ms;
            cbind[k] = zel_filler_memory_binds(pr, fil, nf, l, h);
            if (*k_won < 0 || ms < best * (1 - 1e-12)) {
                memcpy(choice, ch, sizeof(int32_t) * (size_t)pr->n_seqs);
                best = ms, *k_won = k;
            }
        }
        // stage 2 by density on one candidate: the fastest whose own plan leaves a rank short
        // of memory and came within 0.2 % of the winner (the first of equals), kept when
        // faster by the same factor
        int32_t kd = -1;
        for (int32_t k = 0; k < 4 && *k_won >= 0; k++)
            if (cbind[k] && cms[k] <= best * (1 + 2e-3) && (kd < 0 || cms[k] < cms[kd])) kd = k;
        zg_error e2;
        if (kd >= 0) {
            memcpy(ch, choice, sizeof(int32_t) * (size_t)pr->n_seqs);
            zel_sol_to_choice(&m, pr, cand[kd], ch);
            zel_sol_eval(&m, cand[kd]->opt, l, h, NULL, NULL);
            if (!zel_filler_place_dense(pr, NULL, fil, nf, l, h, ch, &e2)) {
                double ms = zel_choice_makespan(pr, ch, NULL, NULL);
                if (ms < best * (1 - 1e-12)) {
                    memcpy(choice, ch, sizeof(int32_t) * (size_t)pr->n_seqs);
                    best = ms, *k_won = kd;
                }
            }
        }
        if (*k_won < 0) st = st0 ? st0 : ZG_ERR_NOMEM;
        free(ch), free(l);
    }
    zel_sol_free(&sol), zel_sol_free(&s0), zel_sol_free(&s1), zel_sol_free(&sd);
    zel_model_free(&m);
    if (!st || st == ZG_ERR_INFEASIBLE) {
        int32_t *alt = malloc(sizeof(int32_t) * (size_t)(pr->n_seqs + 1));
        int32_t d = 0;
        double ms = zel_uniform_best(pr, alt, &d);
        if (ms < INFINITY && (st || ms < best * (1 - 1e-12))) {
            memcpy(choice, alt, sizeof(int32_t) * (size_t)pr->n_seqs);
            best = ms, *udeg = d, st = ZG_OK;
        }
        free(alt);
    }
    *ms_out = best;
    return st;
}

// ---- zel_filler_place (§5.3 rule, split fallback, local repair) -------------------------------

// The first whole option of group G starting on rank r (-1: none).
static inline int32_t ref_whole_on(const zg_group *G, int32_t r) {
    for (int32_t j = 0; j < G->n_opts; j++)
        if (zg_config_is_whole(G->opts[j].config) && G->opts[j].start == r) return j;
    return -1;
}

typedef struct ref_funit {
    int64_t seq;
    int32_t g, rank;  // rank -1: placed split
    double time, mem;
} ref_funit;

// The repair as zellige/internal.h / stage2/filler.c's header describe it: at most 2 n + N rounds; in
// each, hi = the first most loaded rank, lo = the first least loaded one; among moving one
// whole filler hi -> lo and swapping a filler on hi with a lighter one on lo (whole options on
// the target ranks, memory within the cap), the change with the smallest max(L_hi', L_lo')
// that is below the current L_hi by a factor 1 - 1e-12 (moves first, then swaps, in unit
// order; only a strictly smaller one replaces the best) is applied; stop when none.
static inline void ref_repair(const zg_problem *pr, ref_funit *u, int64_t n, double *L,
                              double *H, int32_t *choice) {
    int32_t N = pr->world_size;
    double cap = pr->mem_room;
    for (int64_t it = 0; it < 2 * n + N; it++) {
        int32_t hi = 0, lo = 0;
        for (int32_t r = 1; r < N; r++) {
            if (L[r] > L[hi]) hi = r;
            if (L[r] < L[lo]) lo = r;
        }
        if (hi == lo) return;
        double bnew = L[hi];
        int64_t bi = -1, bj = -1;
        for (int64_t i = 0; i < n; i++) {
            if (u[i].rank != hi || ref_whole_on(&pr->groups[u[i].g], lo) < 0) continue;
            if (H[lo] + u[i].mem > cap) continue;
            double mx = fmax(L[hi] - u[i].time, L[lo] + u[i].time);
            if (mx < bnew * (1 - 1e-12)) bnew = mx, bi = i, bj = -1;
        }
        for (int64_t i = 0; i < n; i++) {
            if (u[i].rank != hi || ref_whole_on(&pr->groups[u[i].g], lo) < 0) continue;
            for (int64_t j = 0; j < n; j++) {
                if (u[j].rank != lo || u[j].time >= u[i].time) continue;
                if (ref_whole_on(&pr->groups[u[j].g], hi) < 0) continue;
                if (H[lo] - u[j].mem + u[i].mem > cap || H[hi] - u[i].mem + u[j].mem > cap)
                    continue;
                double mx = fmax(L[hi] - u[i].time + u[j].time, L[lo] - u[j].time + u[i].time);
                if (mx < bnew * (1 - 1e-12)) bnew = mx, bi = i, bj = j;
            }
        }
        if (bi < 0) return;
        L[hi] -= u[bi].time, H[hi] -= u[bi].mem, L[lo] += u[bi].time, H[lo] += u[bi].mem;
        u[bi].rank = lo;
        choice[u[bi].seq] = ref_whole_on(&pr->groups[u[bi].g], lo);
        if (bj >= 0) {
            L[lo] -= u[bj].time, H[lo] -= u[bj].mem, L[hi] += u[bj].time, H[hi] += u[bj].mem;
            u[bj].rank = hi;
            choice[u[bj].seq] = ref_whole_on(&pr->groups[u[bj].g], hi);
        }
    }
}

// The typed exchange as stage2/filler.c's exchange() describes it, every y enumerated: types are
// classes of groups with the same whole option (time, memory) on every rank (in order of first
// placed unit; more than 12: nothing); at most 8 N rounds; in each, over r != hi (the most
// loaded rank; if it has no trade, the next ones as stage2/filler.c says), types a on hi that go
// whole on r, x = 1..min(2, units), first the move (r's memory), then every type b != a on r
// that goes whole on hi and every y = 1..units with both ranks within memory; then every such
// a with more than 2 units on hi, b = none (a move) or each type as above, y = 0 (none) or
// 1..min(2, units), x = 3..min(16, units) with both ranks within memory: the lowest max(new
// L_hi, new L_r) strictly below L_hi (1 - 1e-12) wins, first found on ties; its units move
// first in placement order.
static inline int ref_same_whole(const zg_problem *pr, int32_t g, int32_t h) {
    for (int32_t r = 0; r < pr->world_size; r++) {
        int32_t a = ref_whole_on(&pr->groups[g], r), b = ref_whole_on(&pr->groups[h], r);
        if ((a < 0) != (b < 0)) return 0;
        if (a >= 0 && (pr->groups[g].opts[a].time != pr->groups[h].opts[b].time ||
                       pr->groups[g].opts[a].mem != pr->groups[h].opts[b].mem))
            return 0;
    }
    return 1;
}

static inline void ref_exchange(const zg_problem *pr, ref_funit *u, int64_t n, double *L,
                                double *H, int32_t *choice) {
    int32_t N = pr->world_size, K = 0, tg[64];
    double cap = pr->mem_room;
    if (N < 2) return;
    int32_t *ty = malloc(sizeof(int32_t) * (size_t)(n + 1));
    for (int64_t i = 0; i < n; i++) {
        ty[i] = -1;
        if (u[i].rank < 0) continue;
        int32_t k = 0;
        while (k < K && !ref_same_whole(pr, u[i].g, tg[k])) k++;
        if (k == K) tg[K++] = u[i].g;
        ty[i] = k;
    }
    if (K > 12) {
        free(ty);
        return;
    }
    int64_t priced = 0;  // (r, a, x) trades priced, K + 1 each: at most 4 000 000 per call
    for (int64_t it = 0; it < 8 * (int64_t)N && priced < 4000000; it++) {
        // hi: the ranks by load, descending (ties: the lower rank), at most 4, the ones after
        // the first within 1e-3 of the largest load; the first that has a trade trades
        int32_t ord[64], br = -1, ba = -1, bb = -1, hi = -1;
        int64_t bx = 0, by = 0;
        for (int32_t r = 0; r < N; r++) ord[r] = r;
        for (int32_t i = 1; i < N; i++)
            for (int32_t j = i; j > 0 && L[ord[j]] > L[ord[j - 1]]; j--) {
                int32_t t = ord[j];
                ord[j] = ord[j - 1], ord[j - 1] = t;
            }
        for (int32_t q = 0; q < 4 && q < N && br < 0; q++) {
        hi = ord[q];
        if (q > 0 && L[hi] < L[ord[0]] * (1 - 1e-3)) break;
        int64_t c[64][2];  // units of each type on hi and on r
        double best = L[hi] * (1 - 1e-12);
        for (int32_t r = 0; r < N; r++) {
            if (r == hi) continue;
            for (int32_t k = 0; k < K; k++) c[k][0] = c[k][1] = 0;
            for (int64_t i = 0; i < n; i++) {
                if (ty[i] >= 0 && u[i].rank == hi) c[ty[i]][0]++;
                if (ty[i] >= 0 && u[i].rank == r) c[ty[i]][1]++;
            }
            for (int32_t a = 0; a < K; a++) {
                const zg_group *A = &pr->groups[tg[a]];
                int32_t jah = ref_whole_on(A, hi), jar = ref_whole_on(A, r);
                if (c[a][0] == 0 || jar < 0) continue;
                for (int64_t xi = 1; xi <= c[a][0] && xi <= 2; xi++) {
                    double x = (double)xi;
                    double lh = L[hi] - x * A->opts[jah].time, lr = L[r] + x * A->opts[jar].time;
                    priced += 1 + K;
                    if (H[r] + x * A->opts[jar].mem - 0.0 * 0.0 <= cap && fmax(lh, lr) < best)
                        best = fmax(lh, lr), br = r, ba = a, bb = -1, bx = xi, by = 0;
                    for (int32_t b = 0; b < K; b++) {
                        const zg_group *B = &pr->groups[tg[b]];
                        int32_t jbh = ref_whole_on(B, hi), jbr = ref_whole_on(B, r);
                        if (b == a || c[b][1] == 0 || jbh < 0) continue;
                        for (int64_t y = 1; y <= c[b][1]; y++) {
                            double yd = (double)y;
                            if (!(H[r] + x * A->opts[jar].mem - yd * B->opts[jbr].mem <= cap) ||
                                !(H[hi] + yd * B->opts[jbh].mem - x * A->opts[jah].mem <= cap))
                                continue;
                            double mx = fmax(lh + yd * B->opts[jbh].time,
                                             lr - yd * B->opts[jbr].time);
                            if (mx < best) best = mx, br = r, ba = a, bb = b, bx = xi, by = y;
                        }
                    }
                }
            }
            // then x = 3..16 units of a for y = 0 (b = -1: a move) or y = 1..2 units of b
            for (int32_t a = 0; a < K; a++) {
                const zg_group *A = &pr->groups[tg[a]];
                int32_t jah = ref_whole_on(A, hi), jar = ref_whole_on(A, r);
                if (c[a][0] <= 2 || jar < 0) continue;
                priced += K;
                for (int32_t b = -1; b < K; b++) {
                    const zg_group *B = b < 0 ? NULL : &pr->groups[tg[b]];
                    int32_t jbh = B ? ref_whole_on(B, hi) : 0, jbr = B ? ref_whole_on(B, r) : 0;
                    if (b == a || (B && (c[b][1] == 0 || jbh < 0))) continue;
                    double tbh = B ? B->opts[jbh].time : 0, tbr = B ? B->opts[jbr].time : 0;
                    double mbh = B ? B->opts[jbh].mem : 0, mbr = B ? B->opts[jbr].mem : 0;
                    for (int64_t y = B ? 1 : 0; y <= (B ? (c[b][1] < 2 ? c[b][1] : 2) : 0); y++) {
                        double yd = (double)y;
                        for (int64_t xi = 3; xi <= c[a][0] && xi <= 16; xi++) {
                            double x = (double)xi;
                            if (!(H[r] + x * A->opts[jar].mem - yd * mbr <= cap) ||
                                !(H[hi] + yd * mbh - x * A->opts[jah].mem <= cap))
                                continue;
                            double mx = fmax((L[hi] + yd * tbh) - x * A->opts[jah].time,
                                             (L[r] - yd * tbr) + x * A->opts[jar].time);
                            if (mx < best) best = mx, br = r, ba = a, bb = b, bx = xi, by = y;
                        }
                    }
                }
            }
        }
        }
        if (br < 0) break;
        for (int64_t i = 0; i < n; i++) {
            int32_t from, to;
            if (bx > 0 && u[i].rank == hi && ty[i] == ba)
                from = hi, to = br, bx--;
            else if (by > 0 && u[i].rank == br && ty[i] == bb)
                from = br, to = hi, by--;
            else
                continue;
            int32_t j = ref_whole_on(&pr->groups[u[i].g], to);
            const zg_option *o = &pr->groups[u[i].g].opts[j];
            L[from] -= u[i].time, H[from] -= u[i].mem;
            L[to] += o->time, H[to] += o->mem;
            u[i].rank = to, u[i].time = o->time, u[i].mem = o->mem;
            choice[u[i].seq] = j;
        }
    }
    free(ty);
}

// One placement pass: filler groups by descending whole price (ties: group index), members in
// order, each whole to the memory-feasible rank with the highest score (mode 0: min of the
// time and memory shares left, rc = (F - L - t) / F, rm = (cap - H - m) / cap, F = all whole
// prices / N; mode 1: rm alone; ties: the lowest rank); mode 2: groups by time per byte
// descending first, each filler to the least fluid capacity lost, then the lowest load, then
// the lowest rank (stage2/filler.c, written as a scan); else to the memory-feasible option with
// the least block load + time (ties: the first), else infeasible; then the repair.
static inline zg_status ref_place(const zg_problem *pr, const int32_t *fill, int32_t n_fill,
                                  double *L, double *H, int32_t *choice, int mode) {
    int32_t N = pr->world_size;
    double cap = pr->mem_room, F = 0;
    for (int32_t g = 0; g < pr->n_groups; g++)
        F += (double)pr->groups[g].count * pr->groups[g].whole_time;
    F /= N;
    int32_t order[64];
    memcpy(order, fill, sizeof(int32_t) * (size_t)n_fill);
    // selection sort: whole price desc, index asc (mode 2: time per byte desc first)
    for (int32_t i = 0; i < n_fill; i++)
        for (int32_t j = i + 1; j < n_fill; j++) {
            const zg_group *A = &pr->groups[order[i]], *B = &pr->groups[order[j]];
            double x = A->whole_time, y = B->whole_time;
            double dx = A->whole_mem > 0 ? A->whole_time / A->whole_mem : INFINITY;
            double dy = B->whole_mem > 0 ? B->whole_time / B->whole_mem : INFINITY;
            int later_first = mode == 2 && dy != dx ? dy > dx
                                                    : y > x || (y == x && order[j] < order[i]);
            if (later_first) {
                int32_t t = order[i];
                order[i] = order[j], order[j] = t;
            }
        }
    // mode 2: fluid capacity min(T - L, tau (cap - H)); T the mean load after all fillers, tau
    // the work per byte of the fillers not yet placed when a group starts
    double Rt = 0, Rm = 0, T = 0;
    for (int32_t i = 0; i < n_fill; i++) {
        Rt += (double)pr->groups[fill[i]].count * pr->groups[fill[i]].whole_time;
        Rm += (double)pr->groups[fill[i]].count * pr->groups[fill[i]].whole_mem;
    }
    for (int32_t r = 0; r < N; r++) T += L[r];
    T = (T + Rt) / N;
    int64_t n = 0;
    for (int32_t i = 0; i < n_fill; i++) n += pr->groups[fill[i]].count;
    ref_funit *u = calloc((size_t)n + 1, sizeof(ref_funit));
    int64_t k = 0;
    for (int32_t i = 0; i < n_fill; i++) {
        const zg_group *G = &pr->groups[order[i]];
        double tau = Rm > 0 ? Rt / Rm : 0;
        Rt -= (double)G->count * G->whole_time, Rm -= (double)G->count * G->whole_mem;
        for (int64_t q = 0; q < G->count; q++) {
            int64_t seq = G->members[q];
            int32_t best = -1;
            double bs = -INFINITY, bc = INFINITY, bl = INFINITY;
            for (int32_t r = 0; r < N; r++) {
                int32_t j = ref_whole_on(G, r);
                if (j < 0 || cap - H[r] < G->opts[j].mem) continue;
                if (mode == 2) {  // the least capacity lost beyond t, then the lowest load
                    double t = G->opts[j].time, m = G->opts[j].mem, b = cap - H[r];
                    double a = T - L[r], tb = tau * b, a2 = a - t, tb2 = tau * (b - m);
                    double c = a <= tb && a2 <= tb2 ? 0
                               : a > tb && a2 > tb2 ? tau * G->whole_mem - G->whole_time
                               : a <= tb            ? a2 - tb2
                                                    : tb - a;
                    if (c < bc || (c == bc && L[r] + t < bl)) bc = c, bl = L[r] + t, best = r;
                    continue;
                }
                double rc = (F - L[r] - G->opts[j].time) / F;
                double rm = (cap - H[r] - G->opts[j].mem) / cap;
                double s = mode ? rm : fmin(rc, rm);
                if (s > bs) bs = s, best = r;
            }
            ref_funit *f = &u[k++];
            f->seq = seq, f->g = order[i];
            if (best >= 0) {
                const zg_option *o = &G->opts[ref_whole_on(G, best)];
                L[best] += o->time, H[best] += o->mem;
                f->rank = best, f->time = o->time, f->mem = o->mem;
                choice[seq] = ref_whole_on(G, best);
                continue;
            }
            int32_t bj = -1;
            double be = INFINITY;
            for (int32_t j = 0; j < G->n_opts; j++) {
                const zg_option *o = &G->opts[j];
                double e = 0;
                int ok = 1;
                for (int32_t r = o->start; r < o->start + zg_option_degree(o); r++) {
                    if (H[r] + o->mem > cap) ok = 0;
                    if (L[r] > e) e = L[r];
                }
                if (ok && e + o->time < be) be = e + o->time, bj = j;
            }
            if (bj < 0) {
                free(u);
                return ZG_ERR_INFEASIBLE;
            }
            const zg_option *o = &G->opts[bj];
            for (int32_t r = o->start; r < o->start + zg_option_degree(o); r++)
                L[r] += o->time, H[r] += o->mem;
            f->rank = -1;
            choice[seq] = bj;
        }
    }
    ref_repair(pr, u, k, L, H, choice);
    ref_exchange(pr, u, k, L, H, choice);
    free(u);
    return ZG_OK;
}

// zel_filler_place: mode 0, and when that finds no room, mode 1 from the same ledgers.
static inline zg_status ref_filler_place(const zg_problem *pr, const int32_t *fill,
                                         int32_t n_fill, double *L, double *H, int32_t *choice) {
    int32_t N = pr->world_size;
    double *save = malloc(sizeof(double) * 2 * (size_t)N);
    memcpy(save, L, sizeof(double) * (size_t)N), memcpy(save + N, H, sizeof(double) * (size_t)N);
    zg_status st = ref_place(pr, fill, n_fill, L, H, choice, 0);
    if (st == ZG_ERR_INFEASIBLE) {
        memcpy(L, save, sizeof(double) * (size_t)N);
        memcpy(H, save + N, sizeof(double) * (size_t)N);
        if (ref_place(pr, fill, n_fill, L, H, choice, 1) == ZG_OK) st = ZG_OK;
    }
    free(save);
    return st;
}

// ---- the greedy incumbent and the 1-opt descent (stage1/model.c) -----------------------------------

// The model objective as zellige/internal.h defines it: max(max load, (sum of loads + extra area) /
// N, the fluid T_mem when fill_mem > 0), the sum in rank order from the extra area.
static inline double ref_objective(const zel_model *m, const double *L, const double *H) {
    int32_t N = m->n_ranks;
    double t = 0, sum = m->extra_area;
    for (int32_t r = 0; r < N; r++) {
        if (L[r] > t) t = L[r];
        sum += L[r];
    }
    if (N > 0 && sum / N > t) t = sum / N;
    if (m->fill_mem > 0) {
        double f = zel_fluid_T_more(m, L, H, 0);
        if (f > t) t = f;
    }
    return t;
}

// Does option o fit the memory on top of H (a scan of its block)? Its block's largest load + time.
static inline int ref_fits(const zel_model *m, const zel_opt *o, const double *H) {
    for (int32_t r = o->start; r < o->start + o->degree; r++)
        if (H[r] + o->mem > m->mem_room) return 0;
    return 1;
}
static inline double ref_block_e(const zel_opt *o, const double *L) {
    double e = L[o->start];
    for (int32_t r = o->start + 1; r < o->start + o->degree; r++)
        if (L[r] > e) e = L[r];
    return e + o->time;
}

// Objective of L, H with o added on its block (on copies).
static inline double ref_objective_with(const zel_model *m, const zel_opt *o, const double *L,
                                        const double *H, double *L1, double *H1) {
    memcpy(L1, L, sizeof(double) * (size_t)m->n_ranks);
    memcpy(H1, H, sizeof(double) * (size_t)m->n_ranks);
    for (int32_t r = o->start; r < o->start + o->degree; r++) L1[r] += o->time, H1[r] += o->mem;
    return ref_objective(m, L1, H1);
}

// Puts unit u on option j of its group: its time and memory onto its block in L and H, its
// split into *k.
static inline void ref_put(const zel_model *m, int64_t u, int32_t j, int32_t *opt, double *L,
                           double *H, int64_t *k) {
    const zel_opt *o = &m->grps[m->grp_of[u]].opts[j];
    for (int32_t r = o->start; r < o->start + o->degree; r++) L[r] += o->time, H[r] += o->mem;
    *k += o->split;
    opt[u] = j;
}

// One greedy pass with target tgt: units in order, each to the memory-fitting option that keeps
// its block <= tgt with the least (area, e), else the one with the least (e, area); first wins
// ties. Returns 0 when a unit has no fitting option. buf: 4 n_ranks doubles.
static inline int ref_greedy_pass(const zel_model *m, double tgt, int32_t *opt, double *T,
                                  int64_t *K, double *buf) {
    int32_t N = m->n_ranks;
    double *L = buf, *H = buf + N;
    memcpy(L, m->base_load, sizeof(double) * (size_t)N);
    memcpy(H, m->base_mem, sizeof(double) * (size_t)N);
    int64_t k = 0;
    for (int64_t u = 0; u < m->n_units; u++) {
        const zel_grp *G = &m->grps[m->grp_of[u]];
        int32_t best = -1, bc = 2;
        double ba = 0, bb = 0;
        for (int32_t j = 0; j < G->n_opts; j++) {
            const zel_opt *o = &G->opts[j];
            if (!ref_fits(m, o, H)) continue;
            double e = ref_block_e(o, L);
            int c = e <= tgt ? 0 : 1;
            double a = c == 0 ? o->area : e, b = c == 0 ? e : o->area;
            if (c < bc || (c == bc && (a < ba || (a == ba && b < bb))))
                best = j, bc = c, ba = a, bb = b;
        }
        if (best < 0) return 0;
        ref_put(m, u, best, opt, L, H, &k);
    }
    *T = ref_objective(m, L, H);
    *K = k;
    return 1;
}

// The objective-driven greedy: units in order, each to the fitting option with the least
// objective of the partial state (the later units' least areas counted as extra fluid area;
// within a factor 1e-12 of the best so far: the smaller area). buf: 4 n_ranks doubles.
static inline int ref_greedy_objective(const zel_model *m, int32_t *opt, double *T, int64_t *K,
                                       double *buf) {
    int32_t N = m->n_ranks;
    double *L = buf, *H = buf + N, *L1 = H + N, *H1 = L1 + N;
    memcpy(L, m->base_load, sizeof(double) * (size_t)N);
    memcpy(H, m->base_mem, sizeof(double) * (size_t)N);
    double rest = 0;
    for (int32_t i = 0; i < m->n_grps; i++) rest += (double)m->grps[i].count * m->grps[i].min_area;
    zel_model mm = *m;
    int64_t k = 0;
    for (int64_t u = 0; u < m->n_units; u++) {
        const zel_grp *G = &m->grps[m->grp_of[u]];
        rest -= G->min_area;
        mm.extra_area = m->extra_area + (rest > 0 ? rest : 0);
        int32_t best = -1;
        double bt = INFINITY, ba = INFINITY;
        for (int32_t j = 0; j < G->n_opts; j++) {
            const zel_opt *o = &G->opts[j];
            if (!ref_fits(m, o, H)) continue;
            double t = ref_objective_with(&mm, o, L, H, L1, H1);
            if (t < bt * (1 - 1e-12) || (t <= bt * (1 + 1e-12) && o->area < ba)) {
                if (t < bt) bt = t;
                ba = o->area, best = j;
            }
        }
        if (best < 0) return 0;
        ref_put(m, u, best, opt, L, H, &k);
    }
    *T = ref_objective(m, L, H);
    *K = k;
    return 1;
}

// 1-opt descent: each sweep finds the single move (unit u to another option) with the lowest
// objective (below the current by a factor 1e-12; within that factor, fewer splits), first
// found wins; the unit's old option is subtracted and added back as the planner does.
static inline void ref_local_improve(const zel_model *m, zel_sol *s, int32_t max_sweeps) {
    int32_t N = m->n_ranks;
    if (m->n_units == 0 || s->T == INFINITY) return;
    double *L = malloc(sizeof(double) * 4 * (size_t)N), *H = L + N, *L1 = H + N, *H1 = L1 + N;
    if (!zel_sol_eval(m, s->opt, L, H, NULL, NULL)) {
        free(L);
        return;
    }
    double T = ref_objective(m, L, H);
    int64_t K = s->K;
    for (int32_t sweep = 0; sweep < max_sweeps; sweep++) {
        int64_t bu = -1, bK = K;
        int32_t bj = -1;
        double bT = T;
        for (int64_t u = 0; u < m->n_units; u++) {
            const zel_grp *G = &m->grps[m->grp_of[u]];
            const zel_opt *a = &G->opts[s->opt[u]];
            for (int32_t r = a->start; r < a->start + a->degree; r++)
                L[r] -= a->time, H[r] -= a->mem;
            for (int32_t j = 0; j < G->n_opts; j++) {
                const zel_opt *o = &G->opts[j];
                if (j == s->opt[u] || !ref_fits(m, o, H)) continue;
                double t = ref_objective_with(m, o, L, H, L1, H1);
                int64_t k = K - a->split + o->split;
                if (t < bT * (1 - 1e-12) || (t <= bT * (1 + 1e-12) && k < bK)) {
                    bT = t < bT ? t : bT;
                    bK = k, bu = u, bj = j;
                }
            }
            for (int32_t r = a->start; r < a->start + a->degree; r++)
                L[r] += a->time, H[r] += a->mem;
        }
        if (bu < 0) break;
        const zel_grp *G = &m->grps[m->grp_of[bu]];
        const zel_opt *a = &G->opts[s->opt[bu]], *o = &G->opts[bj];
        for (int32_t r = a->start; r < a->start + a->degree; r++) L[r] -= a->time, H[r] -= a->mem;
        for (int32_t r = o->start; r < o->start + o->degree; r++) L[r] += o->time, H[r] += o->mem;
        s->opt[bu] = bj;
        T = ref_objective(m, L, H);
        K = bK;
    }
    free(L);
    zel_sol_canon(m, s);
    zel_sol_eval(m, s->opt, NULL, NULL, &s->T, &s->K);
}

// zel_heuristic: every pass of the target ladder lb * (1 + step) (steps 0, 1e-3, 3e-3, 1e-2,
// 3e-2, 0.1, 0.3, 1, then no target; 0, 3e-3, 3e-2, none when the work sum_g count_g
// (options_g + N) exceeds 4e6), then the objective greedy (memory-aware models of work * N <=
// 2e6); the best (T, then K; the earlier on a tie), canonical, then the 1-opt descent when it is
// above lb by more than ZEL_REL_TOL on a memory-aware model of at most 1024 units x ranks.
static inline int ref_heuristic(const zel_model *m, double lb, zel_sol *out) {
    int32_t N = m->n_ranks;
    out->T = INFINITY, out->K = 0;
    if (m->n_units == 0) {
        zel_sol_eval(m, out->opt, NULL, NULL, &out->T, &out->K);
        return 1;
    }
    static const double ladder[] = {0, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0, INFINITY};
    static const double short_ladder[] = {0, 3e-3, 3e-2, INFINITY};
    size_t work = 0;
    for (int32_t i = 0; i < m->n_grps; i++)
        work += (size_t)m->grps[i].count * (size_t)(m->grps[i].n_opts + N);
    const double *steps = work > 4000000 ? short_ladder : ladder;
    size_t n_steps = work > 4000000 ? 4 : 9;
    double *buf = malloc(sizeof(double) * 4 * (size_t)N);
    int32_t *opt = malloc(sizeof(int32_t) * (size_t)m->n_units);
    int found = 0;
    for (size_t i = 0; i <= n_steps; i++) {
        double T;
        int64_t K;
        int ok;
        if (i == n_steps) {
            if (m->fill_mem <= 0 || work * (size_t)(N > 1 ? N : 1) > 2000000) continue;
            ok = ref_greedy_objective(m, opt, &T, &K, buf);
        } else {
            double tgt = steps[i] == INFINITY ? INFINITY : lb * (1 + steps[i]);
            ok = ref_greedy_pass(m, tgt, opt, &T, &K, buf);
        }
        if (ok && (!found || T < out->T || (T == out->T && K < out->K))) {
            memcpy(out->opt, opt, sizeof(int32_t) * (size_t)m->n_units);
            out->T = T, out->K = K, found = 1;
        }
    }
    free(buf), free(opt);
    if (found) {
        zel_sol_canon(m, out);
        if (out->T > lb * (1 + ZEL_REL_TOL) && m->fill_mem > 0 && m->n_units * N <= 1024)
            ref_local_improve(m, out, 4 * (int32_t)(m->n_units < 64 ? m->n_units : 64));
    }
    return found;
}

#endif
