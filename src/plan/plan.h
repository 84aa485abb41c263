// plan — the policy interface (zg_planner_vtable), placement options, the planner problem (with
// the Exact Compact Formulation's groups) and its cross-step option cache, plans (JSON,
// validator, evaluator), and the baseline policies: dp, adaptive, usp, static, knapformer,
// megatron. The Zellige solver (zellige, joint) is in src/zellige; every policy by name in
// src/planner.
//
// Plan JSON (docs/formats.md): {"version":1,"policy":"zellige","world_size":16,"makespan":..,
//   "plan_time_ms":..,"sequences":[{"id":0,"tokens":..,"config":{"q":1,"h":4,"k":2},
//   "ranks":[...],"shards":[{"rank":r,"start":a,"end":b}]}],
//   "ranks":[{"rank":0,"time":..,"memory":..,"tokens":..}]}
// Token ranges are half-open, cover each sequence exactly once, and are all the engine needs.
// A sequence may carry "round":k (k > 0; absent = 0): rounds run one after another (megatron's
// microbatch groups); every other policy leaves all sequences in round 0.
//
// May include: cost, topo, workload, model, core.
#ifndef ZG_PLAN_H
#define ZG_PLAN_H

#include "cost/cost.h"

// ---------------------------------------------------------------------------------------------
// Rank-set families for options. An option's rank set is a contiguous block of ranks
// [start, start + degree). Which blocks are legal:
//   ALIGNED: start % degree == 0 (blocks tile the ranks; non-dividing degrees use the tiles that
//            fit, e.g. degree 3 on 8 ranks -> starts 0, 3)
//   NODE:    ALIGNED, plus: when degree < ranks_per_node, every block inside one node (any
//            start); when degree >= ranks_per_node, every block that starts on a node boundary
//            (so NODE is a superset of ALIGNED)
//   SLIDING: every start 0 .. world-degree (largest family; small clusters / tests)
// Starts are listed in ascending order; the world size is the cluster's.
typedef enum { ZG_RANKSETS_ALIGNED = 0, ZG_RANKSETS_NODE, ZG_RANKSETS_SLIDING } zg_rankset_family;
const char *zg_rankset_family_name(zg_rankset_family f);
zg_status zg_rankset_family_parse(const char *s, zg_rankset_family *f, zg_error *err);
// Legal starts of blocks of `degree` ranks on cluster c under family f, ascending, into
// starts[] (room for c->world_size entries). Returns the count (0 if degree > world size).
int32_t zg_rankset_starts(const zg_cluster *c, zg_rankset_family f, int32_t degree,
                          int32_t *starts);

typedef struct zg_option {
    zg_config config;
    int32_t start;  // rank set = [start, start + degree)
    double time;    // per participating rank (seconds)
    double mem;     // per participating rank (bytes)
} zg_option;

static inline int32_t zg_option_degree(const zg_option *o) { return zg_config_degree(o->config); }

// ---------------------------------------------------------------------------------------------
// Planner options and context.

// A node budget of a search: given (a count of nodes; 0 turns that search off) or absent (the
// planner's own rule). Budgets are counts, never times, so plans do not depend on speed.
typedef struct zg_budget {
    int32_t given;  // 0: absent
    int64_t nodes;  // >= 0 when given
} zg_budget;
static inline zg_budget zg_budget_nodes(int64_t nodes) {
    zg_budget b = {1, nodes};
    return b;
}

// A token count: given (>= 1, checked in zg_planner_init) or absent (the policy's own rule).
typedef struct zg_opt_tokens {
    int32_t given;   // 0: absent
    int64_t tokens;  // when given
} zg_opt_tokens;
static inline zg_opt_tokens zg_opt_tokens_of(int64_t tokens) {
    zg_opt_tokens t = {1, tokens};
    return t;
}

typedef struct zg_planner_opts {
    zg_rankset_family family;  // default ZG_RANKSETS_NODE
    int32_t max_degree;        // 0 = world size
    double eps;                // stage-1 slack for split minimisation (default 1e-3)
    double time_limit_s;       // exact solvers (joint): seconds, > 0 (default 60)
    double anchor_cut_s;       // >0: override the catalog cut (whole price threshold, seconds)
    char fallback[32];         // policy to use when this one finds no plan ("" = fail)
    // knapformer
    char bags[128];            // bag spec "g1n2+g2n1+g4n1"; "" = choose the best layout
    double gamma;              // attention weight in w(L) (default 1.0)
    int32_t d_model;           // 0 = model dim
    int32_t world_size;        // 0 = cluster world size
    uint64_t seed;             // for randomised tie-breaks / local search (deterministic)
    int32_t exact_rank_prices; // 1: call the pricer for every rank set; 0 (default): a block
                               // shifted by whole nodes reuses the price (zg_options_enumerate)
    // zellige stage 1 (src/zellige; the built-in rules and their reasons: zellige/tuning.h).
    zg_budget anchor_nodes;        // per exact-search phase; absent: 50 000 up to 8 ranks,
                                   // 10 000 / N beyond. Given, it also stops layout replays
    zg_budget anchor_lns_nodes;    // neighbourhood improvement of the incumbent before the
                                   // min-T search; absent: min(2 500, 80 000 / N) beyond 8 ranks
                                   // (8x on a multiset's first visit); 0 turns it off. Given, it
                                   // also stops layout replays
    zg_budget anchor_first_nodes;  // min-T search the first time an anchor multiset is planned
                                   // (layouts remembered); absent: 200 000 beyond 8 ranks.
                                   // anchor_nodes, when given, wins
    int32_t deeper_first_visit;    // 1 (default): a multiset's first visit searches deeper
                                   // (anchor_first_nodes, the density layout's larger budget);
                                   // 0: every visit gets the ordinary budgets
    int32_t remember_layouts;      // 1 (default): stage-1 layouts are remembered across steps per
                                   // anchor multiset, used as candidates and replayed when
                                   // trusted (search/library.c); 0: every step searches
    // megatron: the scheduler's max_seqlen_per_dp_cp_rank (tokens one rank holds of a sample).
    // Absent: per batch, the largest value at which every sequence fits memory on the CP size
    // it gets (policy_megatron.c, docs/planners.md).
    zg_opt_tokens max_seqlen_per_rank;
} zg_planner_opts;
void zg_planner_opts_default(zg_planner_opts *o);

typedef struct zg_plan_ctx {
    const zg_model *model;
    const zg_cluster *cluster;
    const zg_pricer *pricer;
    const zg_catalog *catalog;  // may be NULL: the anchor cut then uses the batch's prices
    zg_planner_opts opts;
} zg_plan_ctx;

// ---------------------------------------------------------------------------------------------
// Plans.

typedef struct zg_shard {
    int32_t rank;
    int64_t start, end;  // half-open token range of the sequence
} zg_shard;

typedef struct zg_placement {
    int64_t seq;        // index in the batch
    int64_t id;         // sequence id (copied from the batch)
    int64_t tokens;
    int32_t round;      // microbatch round, 0 .. n-1: rounds run one after another, each a
                        // placement on its own (zg_plan_set_* put it in round 0; only megatron
                        // uses others)
    zg_config config;
    int32_t n_ranks;    // = degree
    int32_t *ranks;     // rank list; position i holds shards[i] (see zg_config for the order)
    zg_shard *shards;   // n_ranks shards, consecutive token chunks in position order
    double time;        // per participating rank price (seconds)
    double mem;         // per participating rank price (bytes)
} zg_placement;

typedef struct zg_rank_load {
    double time;    // seconds: sum of prices of everything placed on the rank (all rounds)
    double mem;     // bytes: mem_base + its largest round's sum of memory prices
    int64_t tokens; // tokens held (sum of shard lengths, all rounds)
} zg_rank_load;

typedef struct zg_plan {
    int32_t version;           // 1
    char policy[32];
    char fallback_from[32];    // non-empty: this plan came from --fallback after `policy` failed
    int32_t world_size;
    int64_t n;                 // placements, one per batch sequence, in batch order
    zg_placement *p;
    zg_rank_load *ranks;       // world_size entries (filled by zg_plan_evaluate)
    double makespan;           // sum over rounds of the slowest rank's time in the round
                               // (one round: the max rank time)
    double plan_time_ms;       // planner wall time
    double mem_base;           // bytes per rank independent of placement (the pricer's)
    double mem_cap;            // the memory cap per rank, total (zg_cluster_mem_cap_bytes);
                               // <= 0: unknown. A rank's memory (ranks[r].mem) is compared with it
    double lower_bound;        // exact solvers: proven lower bound on the makespan (0 unknown)
    int32_t optimal;           // exact solvers: 1 if proven optimal
    zg_arena arena;            // owns ranks/shards arrays of placements
    char summary[256];         // policy's one-line note (static: chosen layout; "" if none)
    // 1: a policy that ignores memory (knapformer) placed the batch as its real counterpart would,
    // and some rank's memory is over mem_cap: that run would run out of memory. Such a plan is
    // reported (JSON "over_cap_ranks"), never a winner or a speedup's reference, and the
    // validator does not refuse it for its memory. Memory-aware policies never return one
    // (docs/planners.md, "Plans over the memory cap").
    int32_t over_cap;
} zg_plan;

void zg_plan_init(zg_plan *p);
void zg_plan_free(zg_plan *p);
// Allocates n placements for world_size ranks. p must be initialized (zg_plan_init) or hold a
// plan, which is freed first (nothing is kept).
zg_status zg_plan_alloc(zg_plan *p, int64_t n, int32_t world_size, zg_error *err);
// Sets placement i to a contiguous option: ranks start..start+degree-1, even chunks (the first
// tokens % degree positions get one extra token), prices from the option.
zg_status zg_plan_set_option(zg_plan *p, int64_t i, const zg_seq *s, int64_t seq_index,
                             const zg_option *o, zg_error *err);
// Sets placement i to an explicit rank list and chunk lengths (used by knapformer, tests).
// Its prices are left 0: zg_plan_evaluate with a pricer fills them. A chunk may be 0 tokens long
// (KnapFormer's fallback routing); whether the plan may keep it is zg_plan_shard_may_be_empty's.
zg_status zg_plan_set_ranks(zg_plan *p, int64_t i, const zg_seq *s, int64_t seq_index,
                            zg_config c, const int32_t *ranks, const int64_t *chunk_lens,
                            int32_t n, zg_error *err);

// Formats a rank's total for messages: base + `bytes` of placements, e.g. "83.2 GiB (80.7 GiB +
// base 2.5 GiB)", or the bytes alone when the base is 0; messages then name the cap as zg_fmt_bytes(pr->mem_cap) (one cap, totals).
const char *zg_plan_fmt_need(const zg_pricer *pr, double bytes, char *buf, size_t n);

// 1 when placement pl of plan p may have zero-length shards: p is a knapformer plan, pl is pure
// Ulysses (1,h,1) and its sequence has fewer tokens than ranks. The real KnapFormer routes such a
// sequence when it falls back to a bag larger than its length: chunk (seq_id mod G) holds every
// token and the other G-1 GPUs get empty chunks, yet compute their heads after the all-to-all
// (docs/knapformer.md, "Zero-length chunks"). Every other placement gives each rank >= 1 token.
// The validator and the engine apply this one rule.
int zg_plan_shard_may_be_empty(const zg_plan *p, const zg_placement *pl);

// Ranks whose memory (ranks[r].mem, zg_plan_evaluate) is over the cap: their count, and the first
// `max` of them ascending in out (out may be NULL). The test is the validator's (placements over
// mem_cap - mem_base, relative tolerance 1e-12). 0 when the cap is unknown (mem_cap <= 0).
int32_t zg_plan_over_cap_ranks(const zg_plan *p, int32_t *out, int32_t max);
// One line naming the ranks over the cap, their peaks and the cap ("2 of 16 ranks over the memory
// cap of 76.0 GiB per rank: rank 3 peaks at 80.7 GiB, rank 5 at 77.1 GiB"); "" when none.
void zg_plan_over_cap_describe(const zg_plan *p, char *buf, size_t n);

// Validator: each sequence placed once, token ranges cover it exactly once in order, configs
// legal, ranks distinct and in range, shard ranks match the rank list, rounds in 0..n-1, memory
// <= cap in every round (a rank's placements of one round together; rounds free their memory).
// Memory is summed from the placements' stored prices (run zg_plan_evaluate first to re-price);
// p->mem_cap <= 0 means the cap is unknown and memory is not checked.
zg_status zg_plan_validate(const zg_plan *p, const zg_batch *b, const zg_model *m,
                           zg_error *err);

// Evaluator: re-prices every placement with `pricer` (if non-NULL, else keeps stored prices) and
// fills per-rank time/memory/tokens and the makespan; with a pricer it also sets mem_base and
// mem_cap from it and fills stats->comm (bytes sent, summed over every participating rank).
// Rounds: makespan = sum over rounds of max over ranks of the rank's time in that round (the
// rounds are separated by a barrier); a rank's memory is its largest round. With one round this
// is the max rank time and the sum of a rank's memory prices, as before rounds existed.
// b may be NULL when pricer is NULL. stats may be NULL.
typedef struct zg_plan_stats {
    double makespan, mean_time, balance;  // balance = makespan/mean rank time
    double peak_mem;                      // max rank memory (bytes, base included)
    int64_t n_split;                      // placements with degree > 1
    zg_comm_bytes comm;                   // summed over all ranks
    int32_t n_rounds;                     // 1 + the largest round
} zg_plan_stats;
zg_status zg_plan_evaluate(zg_plan *p, const zg_batch *b, const zg_pricer *pricer,
                           zg_plan_stats *stats, zg_error *err);

// JSON (docs/formats.md). from_json/read_file treat p as uninitialized output (free it with
// zg_plan_free afterwards, also on failure); they check structure, zg_plan_validate semantics.
cJSON *zg_plan_to_json(const zg_plan *p);
zg_status zg_plan_from_json(const cJSON *j, zg_plan *p, zg_error *err);
zg_status zg_plan_write_file(const char *path, const zg_plan *p, zg_error *err);
zg_status zg_plan_read_file(const char *path, zg_plan *p, zg_error *err);

// ---------------------------------------------------------------------------------------------
// Options and the planner problem.

// All legal options of one sequence under the context (configs x rank sets of the family),
// priced; options whose memory exceeds the cap are dropped. *n may be 0 (sequence fits
// nowhere). Caller frees *out. Order: configs as zg_config_enumerate lists them (degree, then
// q, k, h), then start ascending. Degrees up to opts.max_degree (0 = the cluster's world size).
// The pricer is assumed to depend only on a sequence's tokens, kind, frames, height, width,
// text_tokens and bucket (not on id / origin_rank): zg_problem_build prices each distinct
// combination once. Unless opts.exact_rank_prices is set, a block is also assumed to cost the
// same when shifted by whole nodes (same offset start % ranks_per_node: the same links), so
// each (config, offset) is priced once; at 1024 ranks this cuts the pricer calls ~50x.
zg_status zg_options_enumerate(const zg_plan_ctx *ctx, const zg_seq *s, zg_option **out,
                               int32_t *n, zg_error *err);
// Same, keeping options over the cap when keep_over_cap != 0.
zg_status zg_options_enumerate_all(const zg_plan_ctx *ctx, const zg_seq *s, int keep_over_cap,
                                   zg_option **out, int32_t *n, zg_error *err);
// Fills err with ZG_ERR_INFEASIBLE naming sequence s (by id) that fits no option:
// its tokens, the smallest per-rank memory over its options, the cap and the largest legal
// degree ("sequence 17 (497760 tokens) fits no option: needs 91.2 GiB on one rank with the
// best option, cap 76.0 GiB, and degree 12 is the largest legal"). `who` prefixes the message
// (e.g. "usp: "; may be NULL). Returns ZG_ERR_INFEASIBLE (or the pricer's error).
zg_status zg_options_infeasible(const zg_plan_ctx *ctx, const zg_seq *s, const char *who,
                                zg_error *err);
// Price classes: sequences the pricer cannot tell apart (same tokens, kind, frames, height,
// width, text_tokens and bucket). class_of[b->n] gets each sequence's class, numbered 0.. in
// order of first appearance in the batch; *n_classes the count. Planners price one member per
// class.
zg_status zg_batch_price_classes(const zg_batch *b, int32_t *class_of, int32_t *n_classes,
                                 zg_error *err);
// The largest degree the context allows (opts.max_degree capped by the world size).
int32_t zg_plan_ctx_max_degree(const zg_plan_ctx *ctx);
// Whole-sequence (1,1,1) price of every batch sequence (priced on rank 0: a whole sequence is
// assumed to cost the same on any rank) into out[b->n].
zg_status zg_plan_whole_prices(const zg_plan_ctx *ctx, const zg_batch *b, zg_price *out,
                               zg_error *err);

// A group of solver-equivalent sequences (Exact Compact Formulation): same tokens, same bucket,
// same options with the same coefficients. Sequences in a group are interchangeable.
typedef struct zg_group {
    int64_t count;
    int64_t *members;    // batch indices, ascending
    int64_t tokens;
    char bucket[ZG_BUCKET_NAME_MAX];
    int32_t n_opts;
    zg_option *opts;
    double whole_time;   // price of the (1,1,1) option (same on every rank)
    double whole_mem;
} zg_group;

typedef struct zg_problem {
    int32_t world_size;
    double mem_cap;      // the memory cap per rank (zg_cluster_mem_cap_bytes; total, bytes)
    double mem_room;     // what placements may use per rank: mem_cap - mem_base
    int32_t n_groups;
    zg_group *groups;    // sorted by whole_time descending, ties by tokens then first member
    int64_t n_seqs;
    zg_arena arena;
    int32_t *group_of;   // n_seqs entries: the group index of each batch index
    double mem_base;     // pricer's per-rank base memory (bytes)
} zg_problem;

// Builds the grouped problem; fails with ZG_ERR_INFEASIBLE naming the first sequence (in batch
// order) that fits no option (its tokens, the smallest memory over its options, the cap, the
// largest degree). Group keys: tokens, bucket and the option list (every config, start, time
// and mem bit-identical). zg_problem_free releases everything; pr may then be rebuilt.
zg_status zg_problem_build(const zg_plan_ctx *ctx, const zg_batch *b, zg_problem *pr,
                           zg_error *err);
void zg_problem_free(zg_problem *pr);
// --export-problem: {"version":1,"world_size","mem_cap","mem_base","groups":[{"count","members","tokens",
//   "bucket","options":[{"q","h","k","ranks":[..],"time","mem"}]}]}
cJSON *zg_problem_to_json(const zg_problem *pr);

// ---------------------------------------------------------------------------------------------
// Planners. A planner is an object because some keep state across steps (knapformer's
// persistent fallback order, zellige's warm start).

typedef struct zg_planner zg_planner;
typedef struct zg_planner_vtable {
    const char *name;
    const char *summary;  // one line for --help
    zg_status (*init)(zg_planner *pl, zg_error *err);
    zg_status (*plan)(zg_planner *pl, const zg_batch *b, zg_plan *out, zg_error *err);
    void (*free)(zg_planner *pl);
    // 1: the policy places without looking at memory (a baseline whose real counterpart does
    // not model it: knapformer). zg_planner_plan then returns its plan even over the cap,
    // marked over_cap (or runs --fallback when one is given); any other policy's plan over the
    // cap is an internal error.
    int32_t ignores_memory;
} zg_planner_vtable;

struct zg_planner {
    const zg_planner_vtable *vt;
    zg_plan_ctx ctx;
    void *state;
};

// The baseline policies this module implements (the registry in src/planner lists every
// policy; the Zellige solver's two are in src/zellige).
extern const zg_planner_vtable zg_policy_dp, zg_policy_adaptive, zg_policy_usp, zg_policy_static,
    zg_policy_knapformer, zg_policy_megatron;

// ---------------------------------------------------------------------------------------------
// Cross-step caches: the context they depend on, and the cache of priced options.

// The context a planner cache kept across steps depends on (ctx_key.c; used by option_cache.c
// and by the Zellige fast path's template cache). A cache stays valid while everything that can
// change a price or an option list is unchanged: the model, the cluster, the pricer (object,
// kind, impl, functions, memory cap and base), the rank-set family, the max degree and
// exact_rank_prices. A pricer changed in place behind the same pointers is not visible here:
// each cache re-prices probes on every hit for that.

typedef struct zg_plan_ctx_key {
    int valid;
    zg_model model;
    zg_cluster cluster;
    const zg_pricer *pricer;
    const char *kind;
    void *impl;
    zg_price_fn price, block_for;
    zg_status (*price_block)(const zg_pricer *, const zg_seq *, zg_config, int32_t, int32_t,
                             zg_price *, zg_error *);
    double mem_cap, mem_base, mem_room;  // the pricer's cap and base; mem_room = cap - base
    zg_rankset_family family;
    int32_t max_degree, exact_rank_prices;
} zg_plan_ctx_key;

// Records ctx (model, cluster and pricer must be set) and marks the key valid.
void zg_plan_ctx_key_set(zg_plan_ctx_key *k, const zg_plan_ctx *ctx);
// 1 when k is valid and ctx has the recorded context, bit for bit.
int zg_plan_ctx_key_same(const zg_plan_ctx_key *k, const zg_plan_ctx *ctx);

// Exact cross-step cache of priced options (option_cache.c), used by zg_problem_build_cached
// (problem.c) and kept in `--policy zellige`'s planner state.
//
// Per price key (tokens, kind, frames, height, width, text_tokens, bucket: the fields the pricer
// may look at, see zg_batch_price_classes) it keeps what zg_options_enumerate returned and the
// whole price, so a step prices only the shapes it has not seen. A cached problem is identical
// (every byte of every group) to an uncached one, hence so are the plans.
//
// Invalidation (the whole cache resets): the model or cluster changed (by value), the pricer
// changed (address, kind, impl pointer, price function, mem_base, mem_cap), the rank-set family,
// the max degree or exact_rank_prices changed, or a hit's re-priced whole option or probe (one
// split option priced by a direct pricer call at enumeration) differs bitwise from the cached
// one (a pricer mutated in place). zg_option_cache_clear does it explicitly. Memory: a byte budget;
// least recently used entries are evicted at the start of a build (never during one).

typedef struct zg_option_cache zg_option_cache;

zg_option_cache *zg_option_cache_new(void); // NULL on out of memory
void zg_option_cache_free(zg_option_cache *c);
void zg_option_cache_clear(zg_option_cache *c);
void zg_option_cache_set_budget(zg_option_cache *c, size_t max_bytes);

typedef zg_memo_stats zg_option_cache_stats;
zg_option_cache_stats zg_option_cache_get_stats(const zg_option_cache *c);

// Starts a build with ctx: resets the cache if the context changed, evicts over the budget.
zg_status zg_option_cache_begin(zg_option_cache *c, const zg_plan_ctx *ctx, zg_error *err);

// The options (as zg_options_enumerate) and whole price of sequence s. *opts points into the
// cache (valid until the next zg_option_cache_begin / clear / free; do not free it). On a hit the
// whole option and the probe are re-priced; a difference resets the cache and prices s afresh.
zg_status zg_option_cache_options(zg_option_cache *c, const zg_plan_ctx *ctx, const zg_seq *s,
                             const zg_option **opts, int32_t *n_opts, zg_price *whole,
                             zg_error *err);

// zg_problem_build through the cache (cache NULL: the uncached build). Same problem, same errors.
zg_status zg_problem_build_cached(const zg_plan_ctx *ctx, const zg_batch *b, zg_option_cache *cache,
                                  zg_problem *pr, zg_error *err);

// ---- communicators (communicators.c) ------------------------------------------------------------
// How many NCCL communicators a placement policy needs, counted the way each implementation
// creates them (issue 27), and the memory they cost at the published per-communicator figures.
// Zellige keeps one world communicator and treats rank sets as data (DESIGN.md, "Comm"); the
// baselines create a communicator per group they run collectives on.
// Published NCCL memory per communicator, per GPU, on A100 (NVIDIA/nccl issue 964, cited in
// shared/reference/anchors-2.md §5): 544 MB for a 2-GPU communicator, 688 MB for 3-4 GPUs. No
// figure is published for larger communicators; 688 MB is used for them too (a lower bound: the
// buffers grow with the peers, nccl issue 864).
#define ZG_COMM_BYTES_2 544e6
#define ZG_COMM_BYTES_3PLUS 688e6

typedef struct zg_comm_count {
    int64_t total;           // distinct communicators in the run, the world one included
    int64_t by_size2;        // of which 2-rank communicators
    int32_t per_rank_max;    // the most communicators any one rank is a member of
    double bytes_per_rank_max; // the largest per-GPU memory of a rank's communicators at the
                               // figures above (bytes)
} zg_comm_count;

// The communicators a run of `policy` on `world` ranks holds: the world communicator (every
// data-parallel run holds one for its gradients; zellige, joint, dp and adaptive need nothing
// else) plus what the policy creates:
//   megatron    Megatron-Core 0.16.1 parallel_state.create_hybrid_dp_cp_groups: for every
//               power of two 2^i, 1 <= i < int(log2(world)), the blocks ranks[j : j + 2^i]
//               (j = 0, 2^i, ...); the size-world block is the DP x CP group itself (the world
//               one). On 2^n ranks: 2^n - 1 in all, n per rank.
//   knapformer  one dist.new_group per multi-GPU bag of every balance group (bags: the layout
//               spec, required).
//   static      one per tile: each distinct rank set of 2 or more ranks in plan (required).
//   usp         its mesh: per distinct config (q, h, k) in plan (required), the Ulysses groups
//               (h consecutive positions), the ring groups (k positions h apart) and the
//               all-gather groups (q positions h*k apart) of more than one rank; a group equal
//               to the world is the world one.
// Errors (ZG_ERR_INVALID): world < 1, an unknown policy, a missing plan or bag spec, a plan of
// another world size. world == 1: nothing (0 communicators).
zg_status zg_comm_count_policy(const char *policy, int32_t world, const zg_plan *plan,
                               const char *bags, zg_comm_count *out, zg_error *err);

#endif
