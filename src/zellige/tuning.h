// tuning.h — every tuned constant and tolerance of the Zellige solver, in one table: its name,
// value, unit, where it acts and why it has this value. The numbers were chosen on the
// planner benchmarks (bench_planner_quality, bench_planner_latency; docs/planner-zellige.md
// says how); `zellige plan --explain-tuning` prints the table (tuning.c).
//
// The table is an X-macro so that the values stay compile-time constants (the solver's inner
// loops fold them) while the descriptions live beside them: ZEL_TUNING_INT entries become enum
// constants, ZEL_TUNING_REAL entries static const doubles, both named ZEL_<NAME>. Changing a
// value changes plans: tests/planner/test_plan_golden.c will say so.
//
// Node budgets are deterministic (never time-based), so plans do not depend on machine speed.
#ifndef ZG_ZELLIGE_TUNING_H
#define ZG_ZELLIGE_TUNING_H

// X(NAME, value, unit, where, reason)
#define ZEL_TUNING_INT(X)                                                                      \
    /* stage 1: anchor search budgets (two_stage.c) */                                          \
    X(ANCHOR_MAX_NODES, 50000, "nodes", "two_stage.c",                                        \
      "anchor search budget per phase up to 8 ranks, where it usually proves optimality")      \
    X(ANCHOR_WIDE_NODES, 10000, "nodes x ranks", "two_stage.c",                               \
      "beyond 8 ranks the budget is this / N (at least 200): a node costs O(options N log N)") \
    X(SPLIT_DIV, 4, "divisor", "two_stage.c",                                                  \
      "beyond 8 ranks the split phase gets 1/4 of the budget: its last 3/4 bought no plans")   \
    X(LNS_NODES, 80000, "nodes x ranks", "two_stage.c",                                       \
      "LNS budget before the min-T search beyond 8 ranks is this / N ...")                    \
    X(LNS_MAX_NODES, 2500, "nodes", "two_stage.c",                                            \
      "... at most this: a better start for fewer nodes than a longer search")                 \
    X(LNS_FIRST_MUL, 8, "x", "two_stage.c",                                                    \
      "first visit of an anchor multiset: 8x the LNS budget, paid once, its layouts replayed") \
    X(FIRST_NODES, 200000, "nodes", "two_stage.c",                                            \
      "first visit beyond 8 ranks: min-T search budget; finds stacked layouts LNS misses")     \
    X(DENSITY_NODES, 20000, "nodes", "two_stage.c",                                           \
      "density-model layout search per step without the layout memory")                       \
    X(DENSITY_FIRST_NODES, 1000000, "nodes", "two_stage.c",                                   \
      "density layout on a multiset's first visit: its optimum needs 1e5-1e6 nodes")           \
    X(SIDE_LNS_NODES, 2500, "nodes", "two_stage.c, exact/relax.c",                            \
      "LNS budget on a side model's start (density layout, relaxation bound) ...")            \
    X(SIDE_LNS_SUB_NODES, 312, "nodes", "two_stage.c, exact/relax.c",                         \
      "... per neighbourhood (the main LNS's 32-rank sub-budget)")                             \
    X(UNIFORM_MAX_WORK, 4000000, "sequences x tiles", "stage1/uniform.c",                     \
      "disjoint-tile candidates skipped above this much LPT work (large worlds)")              \
    /* stage 1: search parts (stage1/anchor.c, search/, exact/) */                              \
    X(LNS_SUB_MIN, 100, "nodes", "stage1/anchor.c", "least budget of one LNS sub-search")      \
    X(LNS_DEEP, 10000, "nodes", "stage1/anchor.c",                                            \
      "LNS budgets from this size also run the column leftovers after the search (<= -0.9 %)") \
    X(BEAM_LEVELS, 2, "units", "stage1/anchor.c",                                              \
      "beam over the first 2 units' options on deep searches (3 chose worse prefixes)")        \
    X(BEAM_WIDTH, 4, "prefixes", "stage1/anchor.c",                                            \
      "prefixes kept (4 and 8 give the same plans; 2 loses a batch by 0.52 %)")               \
    X(LNS_COL_STATES, 32, "count vectors", "search/lns.c",                                    \
      "LNS sub-models this small try the column DP first (max gap 1.19 -> 0.75 %)")           \
    X(LNS_EIGHTH_MUL, 4, "x", "search/lns.c",                                                  \
      "eighth-width rank windows get 4x the sub-budget (+10 % instructions, better repacks)")  \
    X(COL_MAX_RANKS, 64, "ranks", "search/column.c", "column incumbents up to this world size") \
    X(COL_MAX_GROUPS, 8, "groups", "search/column.c", "... and this many anchor groups")        \
    X(COL_MAX_STATES, 4096, "count vectors", "search/column.c",                               \
      "... and this many count vectors prod(count_g + 1): the DP's state space")               \
    X(COL_MAX_WORK, 400000, "DP steps", "search/column.c",                                    \
      "... and (N + 1) sum_k prod(k_g + 1) DP steps at most")                                   \
    X(COL_STEPS, 5, "bisection steps", "search/column.c",                                     \
      "bisection on T: 8 steps to 1e-3 gave the same quality 10-30 % slower")                  \
    X(COL_NEST_WORK, 8000000, "pushes", "search/column.c",                                    \
      "nested columns skipped above this much work")                                           \
    X(COL_NEST_DEG, 4, "ranks", "search/column.c", "nested columns' inner degrees 1..4")        \
    X(LIB_LAYOUTS, 4, "layouts", "search/library.c", "layouts remembered per anchor multiset") \
    X(LIB_ENTRIES, 256, "multisets", "search/library.c", "anchor multisets remembered")         \
    X(LIB_REFRESH, 8, "visits", "search/library.c",                                            \
      "every 8th visit of a multiset searches afresh: layouts keep improving for new fillers") \
    X(SKIP_PER_NODE, 64, "children", "exact/bb.c",                                             \
      "pruned children per node of budget: 4-16 starved the search, 64 as good and faster")    \
    X(COVER_MAX_INCIDENCE, 1024, "option degrees", "exact/bound_cover.c",                     \
      "cover bound only below this incidence: pays on 8 ranks, +20-30 % time beyond")          \
    X(DFF_K, 3, "functions", "exact/bound_dff.c", "dual-feasible functions u^(1)..u^(3)")      \
    X(PATTERN_POOL_MAX, 20000, "patterns", "exact/pattern.c", "pattern pool size")             \
    X(PATTERN_MAX_PIECES, 2000, "piece types", "exact/pattern.c",                             \
      "pattern bound skipped above this: one LP round prices every type (2.3 s at 6 240)")     \
    X(PATTERN_PRICE_NODES, 500, "nodes", "exact/pattern.c", "heuristic pricing search budget") \
    X(PATTERN_MIP_NODES, 500, "nodes", "exact/pattern.c",                                      \
      "exact pricing MIP budget: past it its proven bound still certifies")                    \
    X(RELAX_NODES, 2000000, "nodes", "policy_joint.c",                                        \
      "joint's relaxation bound: 16-rank batches finish in 2 900-272 000 nodes")               \
    X(MAX_XFL, 7, "fluids", "internal.h", "extra filler fluid densities a model may carry")     \
    /* stage 2: fillers (stage2/filler.c) */                                                    \
    X(FILL_TREE_MIN, 2, "fillers", "stage2/filler.c",                                          \
      "groups with this many fillers pick ranks from a tournament tree")                       \
    X(FILL_DENSE_MAX_RANKS, 256, "ranks", "stage2/filler.c", "stage 2 by density up to here")  \
    X(XCH_FEW, 2, "units", "stage2/filler.c",                                                  \
      "exchanges trade up to 2 units of a type for units of another ...")                      \
    X(XCH_MANY, 16, "units", "stage2/filler.c",                                                \
      "... or up to 16 dense fillers for 1-2 sparse ones")                                     \
    X(XCH_MAX_TYPES, 12, "filler types", "stage2/filler.c", "most filler types exchanged")     \
    X(XCH_MAX_PRICED, 4000000, "trades", "stage2/filler.c",                                   \
      "most trades priced per call: bounds its time at large worlds")                          \
    X(XCH_HI_TRY, 4, "ranks", "stage2/filler.c",                                               \
      "next most loaded ranks that may trade first when the top one cannot")                   \
    X(XCH_CACHE_RANKS, 128, "ranks", "stage2/filler.c",                                        \
      "each pair's best trade is kept (N^2 entries) up to this world size")                    \
    /* large worlds (fast/) */                                                                  \
    X(FAST_MIN_RANKS, 64, "ranks", "policy_zellige.c",                                         \
      "worlds this large take the fast path (templates, greedy, certified gap)")               \
    X(FAST_CACHE_BUDGET, 64 << 20, "bytes", "fast/cache.c",                                   \
      "template cache budget: ~0.2 MiB per shape at 1024 ranks")

#define ZEL_TUNING_REAL(X)                                                                     \
    /* tolerances */                                                                            \
    X(STRICT, 1e-12, "relative", "everywhere",                                                 \
      "a candidate replaces the one in hand only when better by this: ties keep the first")   \
    X(SUM_MARGIN, 1e-9, "relative", "two_stage.c, filler.c, column.c",                         \
      "rounding margin of bounds that sum many doubles; also the column DP's strict gain")    \
    X(REL_TOL, 1e-9, "relative", "exact/bb.c",                                                 \
      "optimal = no plan below (1 - this) x best exists")                                      \
    X(LP_TOL, 1e-9, "relative", "exact/pattern.c", "LP/MIP gaps and integrality rounding")     \
    X(SEARCH_GAP, 1e-4, "relative", "stage1/anchor.c",                                         \
      "certified gap of the anchor search (joint uses 0)")                                     \
    /* search thresholds */                                                                     \
    X(LNS_GAP, 7e-4, "relative", "search/lns.c",                                               \
      "LNS sub-searches look for completions this much better (2e-3 and 4e-4 were worse)")     \
    X(BEAM_GAP, 5e-3, "relative", "stage1/anchor.c",                                           \
      "beam skipped within 0.5 % of the root bound (same plans, p50 16.8 -> 11.1 ms)")         \
    X(COL_TOL, 3e-3, "relative", "search/column.c", "bisection on T stops at this width")      \
    X(LIB_TRUST, 3e-4, "relative", "two_stage.c",                                               \
      "a remembered layout is replayed only if as close to this step's root bound, within this") \
    X(DENSE_NEAR, 2e-3, "relative", "two_stage.c",                                             \
      "stage 2 by density runs on the fastest candidate within this of the best")             \
    X(XCH_HI_NEAR, 1e-3, "relative", "stage2/filler.c",                                        \
      "loaded ranks within this of the top one may trade first")                               \
    X(COVER_NEAR, 2e-3, "relative", "exact/bound_cover.c",                                     \
      "cover bound's subgradient steps only within this of the budget")                        \
    X(PATTERN_PREC, 2e-5, "relative", "exact/pattern.c",                                       \
      "pattern bound bisection stops here (quality targets are 5e-4)")

#define ZEL_TUNING_ENUM_(NAME, value, unit, where, why) ZEL_##NAME = (value),
enum { ZEL_TUNING_INT(ZEL_TUNING_ENUM_) };
#define ZEL_TUNING_CONST_(NAME, value, unit, where, why) \
    static const double ZEL_##NAME __attribute__((unused)) = (value);
ZEL_TUNING_REAL(ZEL_TUNING_CONST_)

#endif
