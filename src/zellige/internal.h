// zellige/internal.h — internals of the Zellige planner (zellige/policy_zellige.c) and the exact joint
// reference (zellige/policy_joint.c). Not a public header; docs/planner-zellige.md explains the method.
//
// The exact solver works on a "min-max model" (zel_model): a subset of the problem's ECF groups
// (solver-equivalent sequences collapsed into counts) on top of fixed per-rank ledgers. A
// solution assigns one option to every unit (sequence) of every group; units of a group are
// interchangeable, so the search only visits non-decreasing option indices inside a group,
// which is exactly an enumeration of the ECF count vectors u_{g,o}.
#ifndef ZG_ZEL_INTERNAL_H
#define ZG_ZEL_INTERNAL_H

#include "plan/plan.h"
#include "zellige/tuning.h"

// Relative tolerance of "strictly better" in the exact search: a plan is reported optimal when
// no plan with a makespan below (1 - ZEL_REL_TOL) * best exists.

// ---- catalog cut (stage1/cut.c) ------------------------------------------------------------------

// 2-cluster split of ascending prices w[0..n) in log space (1-D k-means / Jenks with two
// classes): returns k* in 1..n-1 (w[0..k*) are fillers), ties -> smallest k; 0 if n < 2 or the
// prices are all equal (no cut).
int32_t zel_cut_index(const double *w, int32_t n);

// The anchor threshold in seconds of whole price: a group is a filler iff its whole price is
// <= *thr (and it has a whole option). Over the catalog buckets' whole prices when ctx->catalog
// is set, else over the problem's distinct whole prices; opts.anchor_cut_s > 0 overrides.
// *thr = -1 means "everything is an anchor" (fewer than two distinct prices).
zg_status zel_cut_threshold(const zg_plan_ctx *ctx, const zg_problem *pr, double *thr,
                            zg_error *err);

// ---- the min-max model and its exact solver (stage1/model.c, exact/bb.c) ---------------------------

typedef struct zel_opt {
    int32_t src;     // index into zg_group.opts
    int32_t start;   // rank block [start, start + degree)
    int32_t degree;
    int32_t split;   // degree > 1
    double time;     // per participating rank
    double mem;
    double area;     // time * degree
} zel_opt;

typedef struct zel_grp {
    int32_t g;        // index into zg_problem.groups
    int64_t count;    // units (sequences) in the group
    int32_t n_opts;
    zel_opt *opts;    // whole options first (by start), then by degree, start, time, mem
    int32_t n_whole;  // opts[0 .. n_whole) have degree 1
    double min_area;
    int32_t n_blocks; // distinct rank blocks; block b holds opts[blk[b] .. blk[b+1]) (time asc)
    int32_t *blk;     // n_blocks + 1
} zel_grp;

// A rank-tile swap (X = [a, a+s), Y = [a+s, a+2s)) that maps every option of every group to an
// option with the same time, memory and split flag: a symmetry of the model.
typedef struct zel_sym {
    int32_t a, s;
    int32_t **map;  // map[grp][opt] -> opt
    int32_t rev;    // 1: the reflection r -> N-1-r of the whole world instead (a, s unused)
} zel_sym;

// Extra fluid variants a model may carry (zel_model.n_xfl).

typedef struct zel_model {
    int32_t n_ranks;
    double mem_room;
    int32_t n_grps;
    zel_grp *grps;
    int64_t n_units;
    int64_t *unit0;       // n_grps + 1: first unit of each group
    int32_t *grp_of;      // n_units: group of each unit
    double *base_load;    // n_ranks: fixed load under the model (seconds)
    double *base_mem;     // n_ranks: fixed memory (bytes, excluding mem_base)
    // Fluid work still to come (the fillers' total whole time, seconds): the objective is
    // max(max_r load_r, (sum_r load_r + extra_area) / N). 0 = the paper's stage 1 (max load).
    double extra_area;
    // Memory of that fluid work (the fillers' total whole memory, bytes): with fill_mem > 0 the
    // fillers are a fluid of time density tau = extra_area / fill_mem that can only go where a
    // rank has memory left, and the objective also includes T_mem = min T such that
    // sum_r min(T - load_r, tau * (mem_room - mem_r)) >= extra_area (zel_fluid_T). 0 = off.
    double fill_mem;
    // Part of extra_area that needs no memory (exact/relax.c's dense fillers; 0 elsewhere): it
    // counts in the mean term only, and the memory-aware fluid above is the rest,
    // zel_mem_area(m) = extra_area - free_area, at density zel_mem_area(m) / fill_mem.
    double free_area;
    // More memory-aware fluids of the same work (exact/relax.c's other densities; 0 elsewhere):
    // variant j needs extra_area - xfl_free[j] at density (extra_area - xfl_free[j]) /
    // xfl_mem[j]; the objective is the largest. Read by zel_fluid_T_more (without `more`) and
    // the objective; the search's per-child keys and fluid-loss terms use the main one only
    // (weaker, still valid).
    int32_t n_xfl;
    double xfl_free[ZEL_MAX_XFL], xfl_mem[ZEL_MAX_XFL];
    int32_t n_sym;
    zel_sym *sym;
    zg_arena arena;
    // search/lns.c builds sub-models as shallow copies of this struct (groups re-indexed, ledgers
    // replaced, symmetries dropped): a new per-group / per-unit / per-rank field must be
    // handled in its sub_build too.
} zel_model;

// The memory-aware fluid's work (see free_area).
static inline double zel_mem_area(const zel_model *m) { return m->extra_area - m->free_area; }

// The largest load *e and memory *h on option o's rank block, over ledgers L and H (n_ranks).
static inline void zel_block_max(const zel_opt *o, const double *L, const double *H, double *e,
                                 double *h) {
    double le = 0, lh = 0;
    for (int32_t r = o->start; r < o->start + o->degree; r++) {
        if (L[r] > le) le = L[r];
        if (H[r] > lh) lh = H[r];
    }
    *e = le, *h = lh;
}

// Builds the model of groups grp_idx[0..n) of pr (in that order) over ledgers base_load /
// base_mem (NULL = zeros). Options are Pareto-pruned per rank block (time, mem); symmetries are
// detected for world sizes <= 64.
zg_status zel_model_build(const zg_problem *pr, const int32_t *grp_idx, int32_t n,
                          const double *base_load, const double *base_mem, zel_model *m,
                          zg_error *err);
void zel_model_free(zel_model *m);

typedef struct zel_sol {
    int32_t *opt;  // n_units option indices (into the unit's zel_grp.opts)
    double T;      // objective: max(max rank load, (total load + extra_area) / N)
    int64_t K;     // split units
} zel_sol;

zg_status zel_sol_alloc(const zel_model *m, zel_sol *s, zg_error *err);
void zel_sol_free(zel_sol *s);
void zel_sol_copy(const zel_model *m, zel_sol *dst, const zel_sol *src);
// Loads of a solution (L, H: n_ranks, may be NULL) and its T and K; returns 0 if a rank's memory
// is over the cap.
int zel_sol_eval(const zel_model *m, const int32_t *opt, double *L, double *H, double *T,
                 int64_t *K);
// Puts a solution into ECF canonical form (option indices sorted inside each group).
void zel_sol_canon(const zel_model *m, zel_sol *s);

// T_mem of the memory-aware fluid filler model for ledgers L, H (n_ranks each): the smallest
// T >= max_r L_r at which the ranks' filler capacities min(T - L_r, tau * (cap - H_r)) sum to
// extra_area; 0 when fill_mem <= 0 or extra_area <= 0, INFINITY when the fillers' memory does
// not fit in the memory left. Nondecreasing in every L_r and H_r (so a valid bound inside the
// search). scratch: 2 * n_ranks doubles.
double zel_fluid_T(const zel_model *m, const double *L, const double *H, double *scratch);
// The same with `more` seconds of extra fluid demand at the fillers' density tau: the bound
// used inside the search, where `more` is the remaining anchors' least fluid loss
// sum_units min_o degree_o * min(time_o, tau * mem_o). Valid because a piece (t, m) placed on
// rank r lowers min(T - L_r, tau (cap - H_r)) by at least min(t, tau m), and these losses add
// up over the pieces of a rank (min(sum a, sum b) >= sum min(a, b)). O(N) per Newton step.
double zel_fluid_T_more(const zel_model *m, const double *L, const double *H, double more);
// The model's objective for ledgers L, H: max(max_r L_r, (sum_r L_r + extra_area) / N, T_mem).
double zel_objective(const zel_model *m, const double *L, const double *H, double *scratch);

// Root lower bound on the model's makespan: max of the fixed loads, every group's cheapest
// reachable option, and the area (LP) bound restricted to options no taller than T.
double zel_model_lower_bound(const zel_model *m);

// The density family's fluids (exact/relax.c) on m over filler types k < nt (densest work per
// byte rho[k], work[k]): theta[0] is the main fluid (free_area, fill_mem), theta[1..n_theta)
// extras (n_xfl, those whose work D(theta) > 0, at most ZEL_MAX_XFL); D(theta) = sum_k work[k]
// min(1, theta / rho[k]) at density theta (theta <= 0: D = 0, no memory term), the rest of
// m->extra_area (set by the caller) free work.
void zel_model_set_densities(zel_model *m, const double *rho, const double *work, int32_t nt,
                             const double *theta, int32_t n_theta);

// Greedy incumbent: units in group order; each takes the smallest-area option that keeps its
// block under a target, else the option with the lowest resulting block maximum; the best over
// a ladder of targets above `lb`. Returns 0 if no memory-feasible assignment was found.
int zel_heuristic(const zel_model *m, double lb, zel_sol *out);
// The same, stopping at zg_time_now() > t_end (0: never): a pass cut short counts for nothing,
// the best finished pass is returned (0 if none finished).
int zel_heuristic_until(const zel_model *m, double lb, double t_end, zel_sol *out);
// The short ladder only (no objective-driven pass, no local search) with units [0, n_pre)
// fixed to options pre[]: a cheap completion of a partial layout (search/beam.c). Canonical.
int zel_heuristic_prefix(const zel_model *m, double lb, const int32_t *pre, int64_t n_pre,
                         zel_sol *out);
// A beam over the first `levels` units' options, `width` prefixes kept per level, each scored
// by zel_heuristic_prefix; *out (allocated) gets the best completion seen. Returns 0 if none.
int zel_beam_incumbent(const zel_model *m, double lb, int32_t levels, int32_t width,
                       zel_sol *out);

// Column-structured incumbent (search/column.c): the best plan whose units stack in disjoint rank
// blocks (every unit of a block on exactly that block), by a DP over (next rank, units left)
// bisected on the height between lb and ub (ub: the incumbent's T, INFINITY = none). out->opt
// allocated by the caller; canonical and evaluated. Returns 0 (out->T = INFINITY) when none was
// found or the model is outside the DP's size limits (N <= 64, <= 8 groups, small counts).
int zel_column_incumbent(const zel_model *m, double lb, double ub, zel_sol *out);
// The same DP with nests as well, and ranks priced by what they leave the memory-aware fluid:
// one or two units on a block over units of one group spread evenly on the sub-blocks of degree
// d <= 4 that tile it (32xA6000 high batches 37 and 61: a 219 600-token video on [0, 8) over
// eight whole 95 160-token ones; batch 23: one on [8, 16) over four on 2-rank blocks; neither
// the plain columns nor the search reach them). Returns 0 when the model is out of its range.
int zel_column_nested(const zel_model *m, double lb, double ub, zel_sol *out);
// Layers: for every group, re-places its units by the column DP on top of the other units'
// loads (a zel_sub); keeps strictly better T (s: feasible; stays canonical). Returns 1 if s
// improved. Deterministic.
int zel_column_improve(const zel_model *m, double lb, zel_sol *s);
// Leftovers: for every group g with a whole option and every r in 1..count_g - 1, r units of g
// are set aside as fluid work (the fastest whole option's time and memory join the fillers'),
// the other units are packed by the column DP, and the r are laid over those columns by the DP
// as a layer; keeps a strictly better T (s: feasible; stays canonical). Returns 1 if s improved.
// Deterministic.
int zel_column_leftover(const zel_model *m, double lb, zel_sol *s);

// 1-opt descent on a feasible solution: moves one unit to another option of its group while
// that lowers (T, then K); at most max_sweeps moves. Deterministic.
void zel_local_improve(const zel_model *m, zel_sol *s, int32_t max_sweeps);

// Large-neighbourhood improvement (search/lns.c): frees a set of units (every pair of groups; the
// units in a window of ranks), fixes the others and re-solves the free ones with the exact
// branch-and-bound (sub_nodes per neighbourhood, max_nodes in all) from the current T; keeps
// strictly better T. s: feasible, canonical; stays so, T never grows. Deterministic. Returns the
// nodes spent.
int64_t zel_lns_improve(const zel_model *m, zel_sol *s, int64_t max_nodes, int64_t sub_nodes);

// A sub-model of m (search/submodel.c): the units marked in free_u[n_units] become its groups (same
// options, extra_area and fill_mem), every other unit stays where solution s puts it and its
// loads become the ledgers, so the sub-model's objective is m's for every completion. Shallow
// (option arrays shared), no symmetries. unit maps sub units to m's units (a group's units stay
// consecutive and in order in both numberings).
typedef struct zel_sub {
    zel_model m;
    int64_t *unit;
    double *L, *H;  // the ledgers, n_ranks each
} zel_sub;
int zel_sub_init(zel_sub *q, const zel_model *m);  // 0: out of memory (zel_sub_free anyway)
void zel_sub_free(zel_sub *q);
// Returns the number of free units.
int64_t zel_sub_build(zel_sub *q, const zel_model *m, const zel_sol *s, const uint8_t *free_u);

typedef struct zel_limits {
    int64_t max_nodes;    // 0 = no limit
    double time_limit_s;  // 0 = no limit (time limits make results timing-dependent)
    double rel_gap;       // min-max phase: prune subtrees whose bound is >= best * (1 - gap);
                          // <= ZEL_REL_TOL = exact (complete then means optimal), else
                          // complete means "no solution below best * (1 - gap)" (best: the
                          // final incumbent; the threshold only falls as it improves)
    int32_t no_cover;     // 1: no cover bound on the lower bound reported when the budget
                          // ends (stage1/anchor.c); the search no longer uses it per node
    int32_t no_lb;        // 1: zel_solve_minmax leaves stats->lb at 0 (no root bound computed:
                          // for callers that read only nodes / complete)
} zel_limits;

// Certified relative gap of the zellige anchor search (the joint reference uses 0: exact).

typedef struct zel_stats {
    int64_t nodes;
    int32_t complete;     // 1: the search finished (the result is proven optimal)
    double lb;            // proven lower bound on the objective (T for minmax, K for minsplit)
    double seconds;
} zel_stats;

// Exact min max-load: improves *best (in: a feasible incumbent with T set, or T = INFINITY and
// K = 0 for none) by depth-first branch-and-bound over ECF counts. stats->complete = 1 means no
// solution with T < (1 - ZEL_REL_TOL) * best->T exists.
zg_status zel_solve_minmax(const zel_model *m, zel_sol *best, const zel_limits *lim,
                           zel_stats *stats, zg_error *err);
// Exact min #split units subject to every rank load <= tcap (in: *best a feasible solution).
zg_status zel_solve_minsplit(const zel_model *m, double tcap, zel_sol *best,
                             const zel_limits *lim, zel_stats *stats, zg_error *err);

// ---- the cover bound of the memory-aware model (exact/bound_cover.c) ------------------------------

// Doubles of scratch zel_cover_bound needs for model m.
size_t zel_cover_scratch(const zel_model *m);
// 1 if the search should use the cover bound on m: memory-aware model and small enough that
// the bound's O(sum of option degrees) cost per node pays (see exact/bound_cover.c).
int zel_cover_worth(const zel_model *m);
// At a node with ledgers L, H (n_ranks each), units remaining: `rem` of group gi (options >= lo)
// and all of groups gi+1..: a lower bound on (area added + total filler excess at makespan T)
// over every completion whose objective is <= T (INFINITY: a group has no option fitting T).
// Such a completion exists only if sum_r L_r + extra_area + bound <= N T. The result may stop
// early once it exceeds `budget`. 0 when the model is not memory-aware (fill_mem <= 0).
// n_iter > 0: also that many subgradient steps on per-rank multipliers (stronger, slower).
double zel_cover_bound(const zel_model *m, const double *L, const double *H, double T,
                       int32_t gi, int64_t rem, int32_t lo, double budget, int32_t n_iter,
                       double *scratch);
// Root bound by bisection on T in [lo, hi] (hi: a feasible objective): the largest T found at
// which the cover condition fails, so every solution's objective is > the result; lo when the
// condition already holds at lo.
double zel_cover_root_bound(const zel_model *m, double lo, double hi);

// ---- the packing (dual-feasible-function) bound (exact/bound_dff.c) ------------------------------

// Doubles of scratch zel_dff_bound needs for model m.
size_t zel_dff_scratch(const zel_model *m);
// At a node with ledgers L, H (n_ranks each), units remaining as in zel_cover_bound: a lower
// bound on the area the remaining units add in every completion whose objective is <= T, from
// the per-rank packing constraints sum_{new pieces p on r} f(t_p / (T - L_r)) <= 1 for
// dual-feasible functions f (Lagrangian with the area; INFINITY: a group has no option fitting
// T). Such a completion exists only if sum_r L_r + extra_area + bound <= N T. May stop early
// once the result exceeds `budget`. Valid for any model (memory-aware or not).
double zel_dff_bound(const zel_model *m, const double *L, const double *H, double T, int32_t gi,
                     int64_t rem, int32_t lo, double budget, double *scratch);
// Root bound by bisection on T in [lo, hi] (hi: a feasible objective): the largest T found at
// which the packing check fails, so every solution's objective is > the result (lo: none).
double zel_dff_root_bound(const zel_model *m, double lo, double hi);

// ---- the fluid bound of a node's children (exact/bound_fluid.c) --------------------------------

// The parent's breakpoints sorted once per node; zel_fluid_T_child then gives
// zel_fluid_T_more(L + o, H + o, more) for a child option o in O(degree + log N) per Newton
// step (same iteration; equal up to rounding in the sums).
typedef struct zel_fluid_ctx {
    int32_t n;
    double tau, tot, maxL, sumL;
    double *buf, *bs, *tc, *pre_tc, *pre_L;  // sorted breakpoints, per-rank tc, prefix sums
    int32_t *rk;                             // rank of each sorted breakpoint
} zel_fluid_ctx;
int zel_fluid_ctx_init(zel_fluid_ctx *f, const zel_model *m);  // 0: out of memory
void zel_fluid_ctx_free(zel_fluid_ctx *f);
void zel_fluid_ctx_set(zel_fluid_ctx *f, const zel_model *m, const double *L, const double *H);
double zel_fluid_T_child(const zel_fluid_ctx *f, const zel_model *m, const double *L,
                         const double *H, const zel_opt *o, double more);
// The same, stopping once its (rising) iterate exceeds cut and returning that iterate: the
// search drops such a child whatever the exact value.
double zel_fluid_T_child_cut(const zel_fluid_ctx *f, const zel_model *m, const double *L,
                             const double *H, const zel_opt *o, double more, double cut);

// ---- stages and decode (stage1/anchor.c, stage2/filler.c, decode.c) -----------------------------

typedef struct zel_stage1 {
    double T;            // optimal max anchor load (or best found)
    double lb;           // proven lower bound on it
    int32_t optimal;     // 1: T proven optimal and K proven minimal within (1+eps) T
    int64_t K;           // split anchors
    int64_t nodes;
    double seconds;
    int32_t replayed;    // 1: a layout remembered from an earlier step (zel_anchor_replay)
} zel_stage1;

// Lexicographic stage 1 on model m: min T, then min K within (1 + eps) T. warm (may be NULL)
// is a candidate incumbent (option per unit, -1 = unknown). Result in *sol.
zg_status zel_anchor_solve(const zel_model *m, double eps, const zel_limits *lim,
                           const int32_t *warm, zel_sol *sol, zel_stage1 *st, zg_error *err);
// The same, also returning (when non-NULL, allocated) the search's starting incumbent (alt0)
// and the min-T solution before the split minimisation (alt1); T = INFINITY when absent. The
// two-stage planner runs the filler stage on each and keeps the fastest full plan (stage 1 is a
// model of the fillers: near-ties in it can end up a few tenths of a percent apart).
zg_status zel_anchor_solve_alts(const zel_model *m, double eps, const zel_limits *lim,
                                const int32_t *warm, zel_sol *sol, zel_sol *alt0, zel_sol *alt1,
                                zel_stage1 *st, zg_error *err);

// The same with separate limits for the split phase (lim_split; NULL = lim).
zg_status zel_anchor_solve_split(const zel_model *m, double eps, const zel_limits *lim,
                                 const zel_limits *lim_split, const int32_t *warm, zel_sol *sol,
                                 zel_sol *alt0, zel_sol *alt1, zel_stage1 *st, zg_error *err);

// The same, with lns_nodes of zel_lns_improve on the incumbent before the min-T search
// (counted in st->nodes; 0 = none, as zel_anchor_solve_split), preceded (lns_nodes > 0) by the
// column incumbents of search/column.c.
zg_status zel_anchor_solve_lns(const zel_model *m, double eps, const zel_limits *lim,
                               const zel_limits *lim_split, int64_t lns_nodes,
                               const int32_t *warm, zel_sol *sol, zel_sol *alt0, zel_sol *alt1,
                               zel_stage1 *st, zg_error *err);

// Stage 1 without a search: layout `from` (a feasible solution of m, e.g. remembered by
// search/library.c) improved by one sweep of 1-opt moves (zel_local_improve) into *sol; alt0 =
// `from`, alt1 = *sol (as zel_anchor_solve_lns). st->lb = lb (the root bound), st->optimal = 0,
// st->replayed = 1.
void zel_anchor_replay(const zel_model *m, double lb, const zel_sol *from, zel_sol *sol,
                       zel_sol *alt0, zel_sol *alt1, zel_stage1 *st);

// A stage-1 layout for the fillers' per-type densities, a stage-2 candidate:
// the mean-density model m rates layouts that need the dense filler types on the memory-tight
// ranks too high. Model m with exact/relax.c's density family over the whole options of filler
// groups fil[0..n_fil) (capacity min(T - L, theta (cap - H)), type k charged min(1, theta /
// rho_k) per second; theta = each type's density at once, the type with the most work the main
// one), solved by the greedy ladder, the neighbourhoods and a search of `nodes` nodes, which
// starts from `start` (may be NULL; a solution of m, e.g. stage 1's) when that scores better on
// the density model; *out (a solution of m) gets the layout with its objective on m, or
// T = INFINITY (fewer than two densities, or none found).
void zel_density_layout(const zg_problem *pr, const int32_t *fil, int32_t n_fil,
                        const zel_model *m, int64_t nodes, const zel_sol *start,
                        zel_sol *out);

// Per-sequence choice: the option (index into its zg_group.opts) of every batch index.
// Stage 2: whole fillers on top of ledgers L/H (n_ranks, updated in place), §5.3 rule, then a
// deterministic local repair of the worst rank and typed exchanges (stage2/filler.c). fill[] lists
// filler group indices (any order; processed by descending whole price). choice[seq] is set
// for their members. b (may be NULL) names sequences in errors.
zg_status zel_filler_place(const zg_problem *pr, const zg_batch *b, const int32_t *fill,
                           int32_t n_fill, double *L, double *H, int32_t *choice,
                           zg_error *err);

// Stage 2 by density (beyond the paper; stage2/filler.c mode 2): the same placement with the
// densest whole fillers (time per byte) first, each to the rank where it costs the least of the
// fluid capacity min(T - L, tau (cap - H)) the rest need, then the same repair and exchanges.
// A second candidate for plans where memory, not time, limits some ranks.
zg_status zel_filler_place_dense(const zg_problem *pr, const zg_batch *b, const int32_t *fill,
                                 int32_t n_fill, double *L, double *H, int32_t *choice,
                                 zg_error *err);
// 1 when the plan with ledgers L/H leaves a rank below the top without the memory for the
// smallest filler of fill[] (and the world has at most 256 ranks): then try the above.
int zel_filler_memory_binds(const zg_problem *pr, const int32_t *fill, int32_t n_fill,
                            const double *L, const double *H);

// Writes the units of model m's solution into choice[] (members ascending get the group's
// options in canonical order).
void zel_sol_to_choice(const zel_model *m, const zg_problem *pr, const zel_sol *s,
                       int32_t *choice);

// Builds the plan from choice[] (every batch sequence has an option). Sets policy name.
zg_status zel_decode(const zg_problem *pr, const zg_batch *b, const int32_t *choice,
                     const char *policy, zg_plan *out, zg_error *err);

// Per-rank loads (L, H: world_size, may be NULL) and the makespan of a full choice.
double zel_choice_makespan(const zg_problem *pr, const int32_t *choice, double *L, double *H);

// Best disjoint aligned-tile candidate (stage1/uniform.c): for every degree d | N, LPT of all
// sequences over the N/d tiles with each sequence's fastest memory-fitting option of degree d
// on the tile. choice[n_seqs] gets the best one; returns its makespan (INFINITY: none feasible)
// and its degree in *degree.
double zel_uniform_best(const zg_problem *pr, int32_t *choice, int32_t *degree);

// ---- a lower bound on the joint optimum (exact/relax.c, exact/pattern.c) ---------------------------

// The pattern bound (exact/pattern.c): a configuration LP over what one rank can hold (anchor
// pieces by degree, the model's fluids in what is left), bisected on T between lo (a proven
// bound) and hi (an incumbent's objective). *lb >= lo is a lower bound on m's optimum; lim:
// max_nodes caps the restricted-LP solves (0: 4000), time_limit_s the seconds. Needs Clp
// (ZG_HAVE_CBC); without it *lb = lo.
zg_status zel_pattern_bound(const zel_model *m, double lo, double hi, const zel_limits *lim,
                            double *lb, zg_error *err);

// The model zel_relax_bound minimises (below), without its search: the stage-1 model with
// extra_area = the fillers' least work and the density family's fluids set. Its optimum bounds
// every plan of pr from below, so an outside solver's proven bound on it does too
// (bench_planner_stage1 --relax exports it).
zg_status zel_relax_model(const zg_plan_ctx *ctx, const zg_problem *pr, zel_model *m,
                          zg_error *err);

// Every plan of pr has a makespan >= *lb: the stage-1 model (anchors by the cut, exact) with the
// fillers as fluid work of their least area, which for a density theta must fit in
// sum_r min(T - L_r, theta (cap - H_r)), a unit of type k's work using up min(1, theta / rho_k)
// of it (rho_k: its densest work per byte) — a relaxation for every theta, so for all of
// theta = each type's density at once (the objective the largest) — minimised by the
// branch-and-bound under lim (rel_gap ignored: exact), with target probes when the search does
// not finish. *complete = 1: *lb is that relaxation's optimum (less ZEL_REL_TOL); else a
// proven bound. *lb = INFINITY: no plan.
// When that search does not finish, the pattern bound (exact/pattern.c) follows, between the
// bound and min(its incumbent, plan_T) (a plan's makespan, INFINITY if none), in pattern_s
// seconds (0: no time limit, deterministic; < 0: skipped).
// layout (may be NULL; pr->n_seqs entries): the search's best layout, the anchors' options
// (-1 for the fillers, and for every sequence when it found none) — a stage-1 layout that
// stage 2 can complete into a plan.
zg_status zel_relax_bound(const zg_plan_ctx *ctx, const zg_problem *pr, const zel_limits *lim,
                          double pattern_s, double plan_T, double *lb, int *complete,
                          int64_t *nodes, int32_t *layout, zg_error *err);

// ---- the two-stage planner as a function (two_stage.c), shared by zellige and joint --------------

typedef struct zel_result {
    int32_t *choice;      // n_seqs options (caller frees)
    double makespan;
    double cut;           // anchor threshold used (-1: all anchors)
    int32_t n_anchor_groups, n_filler_groups;
    int64_t n_anchors;
    zel_stage1 st1;
    double anchor_ms, filler_ms;
    int32_t uniform_degree;  // > 0: a disjoint-tile candidate of this degree beat the two stages
} zel_result;

// The stage-1 model zel_two_stage builds for pr (anchor groups by the cut, fillers as fluid work:
// extra_area, fill_mem). For diagnosis (bench_planner_quality --explain). Free with
// zel_model_free.
zg_status zel_stage1_model(const zg_plan_ctx *ctx, const zg_problem *pr, zel_model *m,
                           zg_error *err);

// warm (may be NULL): the planner's state across steps — the previous step's anchor choices and
// the layout memory (search/library.c; off with ctx->opts.remember_layouts = 0) — updated with this
// step's. res->choice is malloc'ed (caller frees). b names sequences in errors.
typedef struct zel_warm zel_warm;
zg_status zel_two_stage(const zg_plan_ctx *ctx, const zg_problem *pr, const zg_batch *b,
                        zel_warm *warm, zel_result *res, zg_error *err);

// Warm start: remembers, per (tokens, bucket) anchor group, the multiset of (config, start)
// options chosen at the previous step and proposes it as an incumbent for the next step.
zel_warm *zel_warm_new(void);
void zel_warm_free(zel_warm *w);

// The option of model group G (built from problem group pg) on the block of problem option
// (c, start): the same block with the same or a dominating price; -1 if pg has no such option
// or G none on that block (search/library.c; also maps the warm start).
int32_t zel_opt_map(const zel_grp *G, const zg_group *pg, zg_config c, int32_t start);

// Stage-1 layouts remembered across steps per anchor multiset (search/library.c; zel_warm holds
// one). Both calls clear the library first when ctx differs from the one it was filled under.
typedef struct zel_library zel_library;
zel_library *zel_library_new(void);
void zel_library_free(zel_library *lib);
// The best layout stored for m's anchor multiset under m's objective into *out (allocated;
// canonical, T and K set) and its objective / root-bound ratio when stored into *ratio; 0 if
// there is none (or none maps onto m's options). *refresh = 1 on the multiset's first lookup
// and every ZEL_LIB_REFRESH-th: the caller should then search in full.
int zel_library_best(zel_library *lib, const zg_plan_ctx *ctx, const zel_model *m,
                     const zg_problem *pr, zel_sol *out, double *ratio, int *refresh);
// Remembers solution s of m with its objective / root-bound ratio (the oldest of the multiset's
// layouts makes room; a layout already held is not stored again).
void zel_library_store(zel_library *lib, const zg_plan_ctx *ctx, const zel_model *m,
                       const zg_problem *pr, const zel_sol *s, double ratio);

#endif
