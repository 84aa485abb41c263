// two_stage.c — the two-stage Zellige planner on a built problem: catalog cut, exact
// lexicographic anchor stage, greedy filler stage; plus the warm start kept across steps.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zellige/internal.h"

// ---- warm start ---------------------------------------------------------------------------------

typedef struct warm_ent {
    int64_t tokens;
    char bucket[ZG_BUCKET_NAME_MAX];
    int64_t n;
    zg_config *cfg;
    int32_t *start;
} warm_ent;

struct zel_warm {
    int32_t n;
    warm_ent *e;
    zel_library *lib;  // stage-1 layouts per anchor multiset (search/library.c)
};

zel_warm *zel_warm_new(void) {
    zel_warm *w = calloc(1, sizeof(zel_warm));
    if (w && !(w->lib = zel_library_new())) {
        free(w);
        return NULL;
    }
    return w;
}

static void warm_clear(zel_warm *w) {
    for (int32_t i = 0; i < w->n; i++) free(w->e[i].cfg), free(w->e[i].start);
    free(w->e);
    w->e = NULL;
    w->n = 0;
}

void zel_warm_free(zel_warm *w) {
    if (!w) return;
    warm_clear(w);
    zel_library_free(w->lib);
    free(w);
}

static const warm_ent *warm_find(const zel_warm *w, const zg_group *g) {
    for (int32_t i = 0; i < w->n; i++)
        if (w->e[i].tokens == g->tokens && !strcmp(w->e[i].bucket, g->bucket)) return &w->e[i];
    return NULL;
}

static int32_t *warm_vector(const zel_warm *w, const zel_model *m, const zg_problem *pr) {
    if (!w || w->n == 0 || m->n_units == 0) return NULL;
    int32_t *v = malloc(sizeof(int32_t) * (size_t)m->n_units);
    if (!v) return NULL;
    int any = 0;
    for (int32_t i = 0; i < m->n_grps; i++) {
        const zg_group *pg = &pr->groups[m->grps[i].g];
        const warm_ent *e = warm_find(w, pg);
        for (int64_t j = 0; j < m->grps[i].count; j++) {
            int32_t k = -1;
            if (e && j < e->n) k = zel_opt_map(&m->grps[i], pg, e->cfg[j], e->start[j]);
            v[m->unit0[i] + j] = k;
            any |= k >= 0;
        }
    }
    if (!any) {
        free(v);
        return NULL;
    }
    return v;
}

static void warm_store(zel_warm *w, const zel_model *m, const zg_problem *pr, const zel_sol *s) {
    warm_clear(w);
    if (m->n_grps == 0) return;
    w->e = calloc((size_t)m->n_grps, sizeof(warm_ent));
    if (!w->e) return;
    for (int32_t i = 0; i < m->n_grps; i++) {
        const zel_grp *G = &m->grps[i];
        const zg_group *pg = &pr->groups[G->g];
        warm_ent *e = &w->e[w->n];
        e->cfg = malloc(sizeof(zg_config) * (size_t)G->count);
        e->start = malloc(sizeof(int32_t) * (size_t)G->count);
        if (!e->cfg || !e->start) {
            free(e->cfg), free(e->start);
            continue;
        }
        e->tokens = pg->tokens;
        memcpy(e->bucket, pg->bucket, sizeof e->bucket);
        e->n = G->count;
        for (int64_t j = 0; j < G->count; j++) {
            const zg_option *o = &pg->opts[G->opts[s->opt[m->unit0[i] + j]].src];
            e->cfg[j] = o->config;
            e->start[j] = o->start;
        }
        w->n++;
    }
}

// ---- the planner --------------------------------------------------------------------------------

static int has_whole(const zg_group *g) {
    for (int32_t j = 0; j < g->n_opts; j++)
        if (zg_config_is_whole(g->opts[j].config)) return 1;
    return 0;
}

// Node budget of the anchor search (deterministic, never time-based): 50 000 per phase up to 8
// ranks (where the memory-aware search usually proves optimality), 10 000 / N beyond (a node
// costs O(options x N log N) there), at least 200. Beyond 8 ranks the split phase (min #splits
// within (1 + eps) T*) gets a quarter of it: it rarely completes there, and on the quality
// bench its last three quarters cost time without making plans better.
// Beyond 8 ranks the min-T search rarely proves either; what its budget bought was a better
// incumbent, which the neighbourhood search (search/lns.c, min(2 500, 80 000 / N) nodes) now
// finds for fewer nodes: the frontier in docs/planner-zellige.md (eighth, ninth and eleventh
// passes).
static int64_t anchor_node_budget(int32_t N) {
    if (N <= 8) return ZEL_ANCHOR_MAX_NODES;
    int64_t b = ZEL_ANCHOR_WIDE_NODES / N;
    return b < 200 ? 200 : b;
}
static int64_t split_node_budget(int32_t N, int64_t budget) {
    if (N <= 8) return budget;
    return budget / ZEL_SPLIT_DIV > 50 ? budget / ZEL_SPLIT_DIV : 50;
}

// Node budget of the large-neighbourhood improvement of the stage-1 incumbent (search/lns.c)
// before the min-T search: beyond 8 ranks only, where the search ends on its budget and the
// start is what it keeps; at most 8 ranks the search proves. 2 500 at 16
// and 32 ranks (was 40 000 / N: 2 500 and 1 250); with the sub-search gap of 7e-4 (search/lns.c)
// better plans than before at 16 / 32 ranks for fewer instructions (bench: gap
// means against bench/data/planner_best.json 0.093 / 0.221 % -> 0.061 / 0.091 % at high load).
// `zellige plan --lns-nodes 5000`: 0.037 / 0.067 % for ~35 % more.
static int64_t lns_node_budget(int32_t N) {
    if (N <= 8) return 0;
    return ZEL_LNS_NODES / N < ZEL_LNS_MAX_NODES ? ZEL_LNS_NODES / N : ZEL_LNS_MAX_NODES;
}

// Lower bound on the makespan of any plan whose anchors give per-rank loads l[0..N) and whose
// fillers add at least fill_area of rank time: the largest anchor load (times are >= 0) and the
// mean load. A candidate of stage 2 is kept only when it is faster than the plan in hand by a
// factor 1 - 1e-12, so one whose bound (less a 1e-9 margin for the sums' rounding) is not
// below that cannot be kept: its fillers need not be placed. Exact: skipping changes no plan.
static double stage2_bound(const double *l, int32_t N, double fill_area) {
    double mx = 0, sum = fill_area;
    for (int32_t r = 0; r < N; r++) {
        if (l[r] > mx) mx = l[r];
        sum += l[r];
    }
    return N > 0 && sum / N > mx ? sum / N : mx;
}

// Can the disjoint-tile candidate (zel_uniform_best) beat makespan `ms`? 0 only when it
// provably cannot: for every degree d | N the candidate's makespan is at least
// max(the largest fastest-degree-d time of any sequence, the sum of those times / (N / d)),
// the times its LPT spreads over the N / d tiles (INFINITY: a group has no option of degree d,
// and that degree is infeasible). The 1e-9 margin covers the rounding of both sums; the caller
// keeps the candidate only below ms * (1 - 1e-12). Exact: skipping changes no plan. One pass
// over each group's options for every degree at once; 1 (run it) when out of memory.
static int uniform_may_win(const zg_problem *pr, double ms) {
    int32_t N = pr->world_size;
    if (N < 1) return 1;
    double *top = calloc(3 * ((size_t)N + 1), sizeof(double));  // top, area, tmin by degree
    if (!top) return 1;
    double *area = top + N + 1, *tmin = area + N + 1;
    for (int32_t g = 0; g < pr->n_groups; g++) {
        const zg_group *G = &pr->groups[g];
        if (G->count <= 0) continue;
        for (int32_t d = 1; d <= N; d++) tmin[d] = INFINITY;
        for (int32_t j = 0; j < G->n_opts; j++) {
            const zg_option *o = &G->opts[j];
            int32_t d = zg_option_degree(o);
            if (d < 1 || d > N || N % d || o->start % d || o->start + d > N) continue;
            if (o->time < tmin[d]) tmin[d] = o->time;
        }
        for (int32_t d = 1; d <= N; d++) {
            if (N % d) continue;
            if (tmin[d] > top[d]) top[d] = tmin[d];
            area[d] += (double)G->count * tmin[d];
        }
    }
    double thr = ms * (1 - ZEL_STRICT);
    int may = 0;
    for (int32_t d = 1; d <= N && !may; d++) {
        if (N % d) continue;
        if ((double)pr->n_seqs * (N / d) > ZEL_UNIFORM_MAX_WORK) continue;  // zel_uniform_best skips it too
        double lb = area[d] / (N / d) > top[d] ? area[d] / (N / d) : top[d];
        may = lb * (1 - ZEL_SUM_MARGIN) < thr;
    }
    free(top);
    return may;
}

// Replay (zel_anchor_replay) the layout `lay` remembered for these anchors instead of searching?
// Only with the built-in budgets (an explicit budget asks for that much search), not on
// the library's refreshes (a multiset's first revisit and every 8th), and only when the layout
// is as close to this step's root bound lb as it was to its own step's when stored (ratio),
// within a factor 1 + ZEL_LIB_TRUST: a layout that this step's fillers make relatively worse is
// searched past instead. Both were chosen on the bench.
// The first time an anchor multiset is planned (nothing remembered for it), the neighbourhood
// search gets this many times its budget: the layouts it finds are replayed on the multiset's
// later steps, so the deeper search is paid once (bench: gap means at 32 ranks high load
// 0.089 -> 0.035 % against bench/data/planner_best.json).
// ... and, beyond 8 ranks, its min-T branch-and-bound gets this many nodes instead of
// anchor_node_budget(N) (625 at 16 ranks, 312 at 32). From the start the deeper neighbourhood
// search leaves, it often finishes (the optimum within ZEL_SEARCH_GAP proven) in 15 000-80 000
// nodes, and it finds the stacked layouts the neighbourhoods miss (bench: 16xA800 high batch 69
// 0.82 % better, 32xA6000 low batch 91 0.86 %). Paid once per multiset,
// like the neighbourhood budget: up to ~0.5 s on the shared VM at 16-32 ranks.
static int64_t first_node_budget(const zg_plan_ctx *ctx, int32_t N, int64_t budget) {
    if (ctx->opts.anchor_nodes.given || !ctx->opts.deeper_first_visit) return budget;
    if (ctx->opts.anchor_first_nodes.given) return ctx->opts.anchor_first_nodes.nodes;
    return N > 8 && budget < ZEL_FIRST_NODES ? ZEL_FIRST_NODES : budget;
}
// The density layout's search (zel_density_layout): ZEL_DENSITY_NODES on every step without the
// layout memory, ZEL_DENSITY_FIRST_NODES on a multiset's first visit (paid once, like
// ZEL_FIRST_NODES; its layout is remembered and replayed). The density model is the better
// judge of memory-tight layouts (32xA6000 high batch 0: its optimum stages at 204.209 s, the
// mean-density model's at 204.504), but its search needs 10^5-10^6 nodes to reach it (20 000:
// 205.503; 200 000: 205.049; 2 000 000: 204.209); bench in docs/planner-zellige.md, nineteenth
// pass.
static int64_t density_node_budget(const zg_plan_ctx *ctx, int first) {
    if (!first || ctx->opts.anchor_nodes.given || !ctx->opts.deeper_first_visit)
        return ZEL_DENSITY_NODES;
    return ZEL_DENSITY_FIRST_NODES;
}
// Stage 2 by density (zel_filler_place_dense) runs on one candidate: the fastest whose plan by
// the paper's rule leaves a rank short of memory and came within this fraction of the best one
// (bench: docs/planner-zellige.md).
static int replay_trusted(const zg_plan_ctx *ctx, double lb, const zel_sol *lay, double ratio,
                          int refresh) {
    if (refresh || ctx->opts.anchor_nodes.given || ctx->opts.anchor_lns_nodes.given) return 0;
    if (!(lay->T < INFINITY) || !(lb > 0) || !(ratio < INFINITY)) return 0;
    return lay->T / lb <= ratio * (1 + ZEL_LIB_TRUST);
}

// Anchor groups (whole price above the cut, or no whole option) into anc, the others into fil
// (n_groups entries each), in group order.
static void split_groups(const zg_problem *pr, double cut, int32_t *anc, int32_t *n_anc,
                         int32_t *fil, int32_t *n_fil) {
    *n_anc = *n_fil = 0;
    for (int32_t g = 0; g < pr->n_groups; g++) {
        const zg_group *G = &pr->groups[g];
        if (cut < 0 || G->whole_time > cut || !has_whole(G)) anc[(*n_anc)++] = g;
        else fil[(*n_fil)++] = g;
    }
}

// The stage-1 model: the anchor groups over empty ledgers, the fillers as fluid work.
static zg_status stage1_build(const zg_problem *pr, const int32_t *anc, int32_t n_anc,
                              const int32_t *fil, int32_t n_fil, zel_model *m, zg_error *err) {
    zg_status st = zel_model_build(pr, anc, n_anc, NULL, NULL, m, err);
    if (st) return st;
    // Fill-aware stage 1 (beyond the paper): the fillers' whole time is fluid work that will
    // top up the ranks, so the anchors minimise max(max load, (anchor area + filler area) / N)
    // instead of their bare max load; anchors then stay whole when the fillers can even out the
    // ranks, and split only when a rank would otherwise stick out. Memory-aware: the fillers
    // can only go where memory is left, so their whole memory is part of the model too
    // (zel_fluid_T); otherwise memory-tight batches leave anchor-free ranks full of images and
    // short of time.
    for (int32_t i = 0; i < n_fil; i++) {
        const zg_group *G = &pr->groups[fil[i]];
        m->extra_area += (double)G->count * G->whole_time;
        m->fill_mem += (double)G->count * G->whole_mem;
    }
    return ZG_OK;
}

zg_status zel_stage1_model(const zg_plan_ctx *ctx, const zg_problem *pr, zel_model *m,
                           zg_error *err) {
    double cut;
    zg_status st = zel_cut_threshold(ctx, pr, &cut, err);
    if (st) return st;
    int32_t *anc = zg_calloc(2 * ((size_t)pr->n_groups + 1), sizeof(int32_t), err);
    if (!anc) return ZG_ERR_NOMEM;
    int32_t *fil = anc + pr->n_groups + 1, na, nf;
    split_groups(pr, cut, anc, &na, fil, &nf);
    st = stage1_build(pr, anc, na, fil, nf, m, err);
    free(anc);
    return st;
}

// (zellige/internal.h)
void zel_density_layout(const zg_problem *pr, const int32_t *fil, int32_t n_fil,
                        const zel_model *m, int64_t nodes, const zel_sol *start,
                        zel_sol *out) {
    double th[1 + ZEL_MAX_XFL], rho[64], W[64];
    int32_t nt = 0, nth = 0, big = -1;
    for (int32_t i = 0; i < n_fil && nt < 64; i++) {
        const zg_group *G = &pr->groups[fil[i]];
        if (!(G->whole_mem > 0) || !(G->whole_time > 0)) continue;
        rho[nt] = G->whole_time / G->whole_mem, W[nt] = (double)G->count * G->whole_time;
        if (big < 0 || W[nt] > W[big]) big = nt;
        nt++;
    }
    if (big >= 0) th[nth++] = rho[big];  // the main fluid: the type with the most work
    for (int32_t k = 0; k < nt && nth < 1 + ZEL_MAX_XFL; k++) {
        int dup = 0;
        for (int32_t i = 0; i < nth; i++) dup |= th[i] == rho[k];
        if (!dup) th[nth++] = rho[k];
    }
    out->T = INFINITY;
    if (nth < 2) return;  // one density: the mean-density model is the same
    zel_model t = *m;  // shallow: only the fluid's scalars change
    zel_model_set_densities(&t, rho, W, nt, th, nth);
    if (!zel_heuristic(&t, zel_model_lower_bound(&t), out)) {
        out->T = INFINITY;
        return;
    }
    zel_lns_improve(&t, out, ZEL_SIDE_LNS_NODES, ZEL_SIDE_LNS_SUB_NODES);
    // and the column DP's plan on this model, 1-opt descended: the neighbourhoods do not make
    // the one-unit moves that matter here (32xA6000 low batch 91: columns 186.88, 1-opt 183.58,
    // this model's optimum; neighbourhoods from either start 185.75)
    zel_sol c;
    if (zel_sol_alloc(&t, &c, NULL) == ZG_OK) {
        if (zel_column_incumbent(&t, zel_model_lower_bound(&t), INFINITY, &c)) {
            zel_local_improve(&t, &c, 256);
            if (c.T < out->T * (1 - ZEL_STRICT)) zel_sol_copy(&t, out, &c);
        }
        zel_sol_free(&c);
    }
    if (start) {  // stage 1's layout may start the search better (batch 0 above: 2x faster)
        double T;
        int64_t K;
        if (start->T < INFINITY && zel_sol_eval(&t, start->opt, NULL, NULL, &T, &K) &&
            T < out->T * (1 - ZEL_STRICT))
            zel_sol_copy(&t, out, start), out->T = T, out->K = K;
    }
    zel_limits lim = {nodes, 0, ZEL_SEARCH_GAP, 0, 1};
    zel_stats s;
    zg_error e;
    if (zel_solve_minmax(&t, out, &lim, &s, &e)) {
        out->T = INFINITY;
        return;
    }
    double T;
    int64_t K;
    if (!zel_sol_eval(m, out->opt, NULL, NULL, &T, &K)) T = INFINITY;
    out->T = T, out->K = K;
}

zg_status zel_two_stage(const zg_plan_ctx *ctx, const zg_problem *pr, const zg_batch *b,
                        zel_warm *warm, zel_result *res, zg_error *err) {
    memset(res, 0, sizeof *res);
    int32_t N = pr->world_size;
    zg_status st;
    double cut;
    if ((st = zel_cut_threshold(ctx, pr, &cut, err))) return st;
    res->cut = cut;
    int32_t *anc = zg_calloc((size_t)pr->n_groups + 1, sizeof(int32_t), err);
    int32_t *fil = anc ? zg_calloc((size_t)pr->n_groups + 1, sizeof(int32_t), err) : NULL;
    res->choice = fil ? zg_calloc((size_t)pr->n_seqs + 1, sizeof(int32_t), err) : NULL;
    double *L = res->choice ? zg_calloc(2 * (size_t)N, sizeof(double), err) : NULL;
    if (!L) {
        free(anc), free(fil), free(res->choice);
        res->choice = NULL;
        return ZG_ERR_NOMEM;
    }
    double *H = L + N;
    split_groups(pr, cut, anc, &res->n_anchor_groups, fil, &res->n_filler_groups);
    for (int32_t i = 0; i < res->n_anchor_groups; i++) res->n_anchors += pr->groups[anc[i]].count;
    double t0 = zg_time_now();
    zel_model m;
    st = stage1_build(pr, anc, res->n_anchor_groups, fil, res->n_filler_groups, &m, err);
    // sol: stage 1's result; sal[0], sal[1]: its start and its min-T solution (alt0, alt1);
    // sal[2]: the best layout remembered for these anchors (search/library.c); sal[3]: the
    // density layout (zel_density_layout, on a first visit or without memory)
    zel_sol sol = {0}, sal[4] = {{0}, {0}, {0}, {0}};
    for (int32_t i = 0; i < 5 && !st; i++) st = zel_sol_alloc(&m, i ? &sal[i - 1] : &sol, err);
    if (!st) sal[3].T = INFINITY;
    zel_library *lib = warm && ctx->opts.remember_layouts ? warm->lib : NULL;
    double lb0 = 0, lib_ratio = INFINITY;
    int refresh = 0;
    if (!st) {
        lb0 = zel_model_lower_bound(&m);
        if (!zel_library_best(lib, ctx, &m, pr, &sal[2], &lib_ratio, &refresh))
            sal[2].T = INFINITY;
    }
    if (!st && replay_trusted(ctx, lb0, &sal[2], lib_ratio, refresh)) {
        zel_anchor_replay(&m, lb0, &sal[2], &sol, &sal[0], &sal[1], &res->st1);
    } else if (!st) {
        int32_t *wv = warm_vector(warm, &m, pr);
        int64_t budget = ctx->opts.anchor_nodes.given ? ctx->opts.anchor_nodes.nodes
                                                      : anchor_node_budget(N);
        zel_limits lim = {budget, 0, ZEL_SEARCH_GAP, 0, 0}, lim2 = lim;
        lim2.max_nodes = split_node_budget(N, budget);
        int64_t lns = ctx->opts.anchor_lns_nodes.given ? ctx->opts.anchor_lns_nodes.nodes
                                                       : lns_node_budget(N);
        if (lib && !(sal[2].T < INFINITY)) {  // nothing remembered for these anchors: deeper
            if (!ctx->opts.anchor_lns_nodes.given) lns *= ZEL_LNS_FIRST_MUL;
            lim.max_nodes = first_node_budget(ctx, N, lim.max_nodes);
        }
        double eps = ctx->opts.eps >= 0 ? ctx->opts.eps : 1e-3;
        st = zel_anchor_solve_lns(&m, eps, &lim, &lim2, lns, wv, &sol, &sal[0], &sal[1],
                                  &res->st1, err);
        if (st == ZG_ERR_INFEASIBLE && m.fill_mem > 0) {
            // no anchor placement leaves the fillers' memory: plan the anchors memory-blind
            // and let stage 2 (memory-first retry, split fallback) do what it can
            zg_error_clear(err);
            m.fill_mem = 0, m.n_xfl = 0;
            st = zel_anchor_solve_lns(&m, eps, &lim, &lim2, lns, wv, &sol, &sal[0], &sal[1],
                                      &res->st1, err);
        }
        free(wv);
        if (!st && !(sal[2].T < INFINITY) && m.fill_mem > 0)  // first visit or no memory
            zel_density_layout(pr, fil, res->n_filler_groups, &m,
                               density_node_budget(ctx, lib != NULL), &sol, &sal[3]);
    }
    double t1 = zg_time_now();
    res->anchor_ms = (t1 - t0) * 1e3;
    if (!st) {
        // Stage 2 on the stage-1 solution, then on the min-T solution before the split
        // minimisation, on the search's starting incumbent, on the best layout remembered
        // for these anchors and on the density layout (zel_density_layout); the fastest full plan
        // wins (ties: the earlier candidate). Stage 1 models the fillers as a fluid, so
        // candidates that tie there can end a few tenths of a percent apart once the fillers
        // are real.
        const zel_sol *cand[5] = {&sol, &sal[1], &sal[0], &sal[2], &sal[3]};
        int32_t *tmp = malloc(sizeof(int32_t) * (size_t)(pr->n_seqs + 1));
        double *L2 = malloc(sizeof(double) * 2 * (size_t)N);
        int32_t chosen = -1;
        double cms[5] = {INFINITY, INFINITY, INFINITY, INFINITY, INFINITY};  // stage 2's results
        int cbind[5] = {0, 0, 0, 0, 0};  // ... and whether memory binds in each plan
        zg_status st0 = ZG_OK;
        double fill_area = 0;  // the fillers' least area (any option), for stage2_bound
        for (int32_t i = 0; i < res->n_filler_groups; i++) {
            const zg_group *G = &pr->groups[fil[i]];
            double a = INFINITY;
            for (int32_t j = 0; j < G->n_opts; j++) {
                double v = G->opts[j].time * zg_option_degree(&G->opts[j]);
                if (v < a) a = v;
            }
            if (a < INFINITY) fill_area += (double)G->count * a;
        }
        for (int32_t k = 0; k < 5; k++) {
            const zel_sol *c = cand[k];
            if (c->T == INFINITY || (k > 0 && (!tmp || !L2))) continue;
            int dup = 0;
            for (int32_t q = 0; q < k && !dup; q++)
                dup = cand[q]->T < INFINITY &&
                      !memcmp(cand[q]->opt, c->opt, sizeof(int32_t) * (size_t)m.n_units);
            if (dup) continue;
            int32_t *ch = k == 0 ? res->choice : tmp;
            double *l = k == 0 ? L : L2, *h = k == 0 ? H : L2 + N;
            zel_sol_eval(&m, c->opt, l, h, NULL, NULL);
            if (chosen >= 0 && stage2_bound(l, N, fill_area) * (1 - ZEL_SUM_MARGIN) >=
                                   res->makespan * (1 - ZEL_STRICT))
                continue;  // provably not faster than the plan in hand: not placed
            if (k > 0) memcpy(tmp, res->choice, sizeof(int32_t) * (size_t)pr->n_seqs);
            zel_sol_to_choice(&m, pr, c, ch);
            zg_error e2;
            zg_status sk = zel_filler_place(pr, b, fil, res->n_filler_groups, l, h, ch,
                                            k == 0 ? err : &e2);
            if (k == 0) st0 = sk;
            if (sk) continue;
            double ms = zel_choice_makespan(pr, ch, NULL, NULL);
            cms[k] = ms;
            cbind[k] = zel_filler_memory_binds(pr, fil, res->n_filler_groups, l, h);
            if (chosen < 0 || ms < res->makespan * (1 - ZEL_STRICT)) {
                if (k > 0) memcpy(res->choice, tmp, sizeof(int32_t) * (size_t)pr->n_seqs);
                res->makespan = ms;
                chosen = k;
            }
        }
        // Stage 2 by density on one candidate: the fastest among those whose plan leaves a
        // rank short of memory and came within ZEL_DENSE_NEAR of the winner (the first of
        // equals); its result is kept only when strictly faster than the plan in hand
        int32_t kd = -1;
        for (int32_t k = 0; k < 5 && chosen >= 0 && tmp && L2; k++)
            if (cbind[k] && cms[k] <= res->makespan * (1 + ZEL_DENSE_NEAR) &&
                (kd < 0 || cms[k] < cms[kd]))
                kd = k;
        zg_error e2;
        if (kd >= 0) {
            zel_sol_eval(&m, cand[kd]->opt, L2, L2 + N, NULL, NULL);
            memcpy(tmp, res->choice, sizeof(int32_t) * (size_t)pr->n_seqs);
            zel_sol_to_choice(&m, pr, cand[kd], tmp);
            if (zel_filler_place_dense(pr, b, fil, res->n_filler_groups, L2, L2 + N, tmp,
                                       &e2) == ZG_OK) {
                double ms = zel_choice_makespan(pr, tmp, NULL, NULL);
                if (ms < res->makespan * (1 - ZEL_STRICT)) {
                    memcpy(res->choice, tmp, sizeof(int32_t) * (size_t)pr->n_seqs);
                    res->makespan = ms;
                    chosen = kd;
                }
            }
        }
        if (chosen < 0) {
            st = st0 ? st0 : ZG_ERR_NOMEM;
            if (!st0) zg_error_set(err, ZG_ERR_NOMEM, "zellige: out of memory in stage 2");
        } else {
            if (st0) zg_error_clear(err);
            if (warm) warm_store(warm, &m, pr, cand[chosen]);
            if (lb0 > 0) zel_library_store(lib, ctx, &m, pr, cand[chosen], cand[chosen]->T / lb0);
        }
        free(tmp), free(L2);
    }
    zel_sol_free(&sol), zel_sol_free(&sal[0]), zel_sol_free(&sal[1]), zel_sol_free(&sal[2]);
    zel_sol_free(&sal[3]);
    zel_model_free(&m);
    res->filler_ms = (zg_time_now() - t1) * 1e3;
    if (!st || st == ZG_ERR_INFEASIBLE) {
        // Safety net: the best disjoint-tile plan (static / USP / DP-like) under the same
        // prices; kept only when it beats the two stages (or they found nothing).
        // (skipped when a cheap bound proves it cannot beat the two stages)
        int try_u = res->choice && (st || uniform_may_win(pr, res->makespan));
        int32_t *alt = try_u ? malloc(sizeof(int32_t) * (size_t)(pr->n_seqs + 1)) : NULL;
        int32_t d = 0;
        double ms = alt ? zel_uniform_best(pr, alt, &d) : INFINITY;
        if (ms < INFINITY && (st || ms < res->makespan * (1 - ZEL_STRICT))) {
            memcpy(res->choice, alt, sizeof(int32_t) * (size_t)pr->n_seqs);
            res->makespan = ms;
            res->uniform_degree = d;
            if (st) zg_error_clear(err);
            st = ZG_OK;
        }
        free(alt);
    }
    free(anc), free(fil), free(L);
    if (st) {
        free(res->choice);
        res->choice = NULL;
    }
    return st;
}
