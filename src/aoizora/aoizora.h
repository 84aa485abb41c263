// aoizora — placement-aware auto-parallelization for video DiTs.
//
// Flow: graph IR of one DiT step (zg_aoi_graph) -> candidate logical meshes and shardings
// (zg_aoi_cand, illegal and over-memory ones rejected with a reason) -> stage 1: a
// placement-oblivious price keeps the top K -> lowering to the per-device program -> evidence
// (placement-free: compute ops and collectives over LOGICAL ids; also read from XLA HLO text)
// -> placement search, every placement priced from the evidence with the link-level network
// model (topo/network.h) -> plan, with expert and Alpa-style (exact per-op ILP, autoshard.c)
// baselines priced the same way; the ILP's sharding is also placed by the search.
// All latencies are model predictions (see docs/aoizora.md for what calibration needs).
//
// May include: topo, model, core.
#ifndef ZG_AOIZORA_H
#define ZG_AOIZORA_H

#include "core/core.h"
#include "model/model.h"
#include "topo/network.h"

#define ZG_AOI_MAX_AXES 4
#define ZG_AOI_MAX_NOTES 8

// =============================================================================================
// Evidence: the placement-free record of a per-device program (docs/aoizora.md has the JSON).

typedef struct zg_aoi_op {
    int32_t is_coll;
    char name[48];
    double flops;          // compute: per-device FLOPs
    double bytes;          // compute: HBM bytes; collective: buffer bytes (network.h convention)
    zg_coll_kind kind;     // collective kind
    int32_t n_groups, group_size;  // permute: group_size 2, each group a (source, target) pair
    int32_t *members;      // (n_groups, group_size) logical ids; owned
    int32_t overlap;       // compute ops that may run before the result is needed (0 = blocking)
    int32_t pattern;       // index of the distinct (kind, groups) pattern; set by finalize
} zg_aoi_op;

typedef struct zg_aoi_segment {
    char name[32];
    int64_t repeat;        // layers, or an HLO while loop's trip count
    int32_t n_ops, cap_ops;
    zg_aoi_op *ops;
} zg_aoi_segment;

typedef struct zg_aoi_evidence {
    char source[32];       // "aoizora-lowering" or "hlo"
    int32_t num_devices;
    int32_t n_axes;
    int32_t mesh_shape[ZG_AOI_MAX_AXES];
    char axis_names[ZG_AOI_MAX_AXES][8];
    double peak_mem_bytes;  // per device (0 = unknown)
    int32_t n_segs, cap_segs;
    zg_aoi_segment *segs;
    int32_t n_patterns;     // set by zg_aoi_evidence_finalize
    // Where peak_mem_bytes comes from: "lowering", "ilp", "buffer-assignment" (XLA's, read from
    // the HLO text), "estimate" (the HLO importer's liveness estimate), "" (unknown).
    char peak_mem_source[24];
    // What a reader should know (HLO importer: conditionals priced by one branch, loops without
    // a trip count, collectives that move nothing); n_notes counts all, the first
    // ZG_AOI_MAX_NOTES are kept.
    int32_t n_notes;
    char notes[ZG_AOI_MAX_NOTES][200];
} zg_aoi_evidence;

void zg_aoi_evidence_init(zg_aoi_evidence *ev, const char *source, int32_t num_devices);
void zg_aoi_evidence_free(zg_aoi_evidence *ev);
zg_status zg_aoi_evidence_segment(zg_aoi_evidence *ev, const char *name, int64_t repeat,
                                  zg_error *err);
// Appends to the last segment.
zg_status zg_aoi_evidence_compute(zg_aoi_evidence *ev, const char *name, double flops,
                                  double bytes, zg_error *err);
zg_status zg_aoi_evidence_coll(zg_aoi_evidence *ev, const char *name, zg_coll_kind kind,
                               double bytes, int32_t n_groups, int32_t group_size,
                               const int32_t *members, int32_t overlap, zg_error *err);
// Checks ids and assigns pattern indices (call after building or reading).
zg_status zg_aoi_evidence_finalize(zg_aoi_evidence *ev, zg_error *err);
// Appends a note (printf-style); past ZG_AOI_MAX_NOTES only counted.
void zg_aoi_evidence_note(zg_aoi_evidence *ev, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
cJSON *zg_aoi_evidence_to_json(const zg_aoi_evidence *ev);
zg_status zg_aoi_evidence_from_json(const cJSON *j, zg_aoi_evidence *ev, zg_error *err);

// Totals per collective kind (count weighted by repeat, bytes summed) for comparisons.
typedef struct zg_aoi_coll_summary {
    int64_t count[ZG_COLL_N];
    double bytes[ZG_COLL_N];
    double flops;
} zg_aoi_coll_summary;
void zg_aoi_evidence_summary(const zg_aoi_evidence *ev, zg_aoi_coll_summary *s);

// A 64-bit digest (FNV-1a) of the program the evidence describes: devices, segments and their
// repeats, and every op in order (compute: name, FLOPs, bytes; collective: kind, bytes, groups,
// overlap). ZG_AOI_DIGEST_BLOCKING leaves out the collectives that overlap compute (overlap >
// 0, e.g. FSDP weight prefetches): two candidates with equal blocking digests run the same
// compute and the same blocking collectives, and differ at most in hidden traffic.
// Deterministic across runs and machines (doubles hashed by value, -0 as 0).
enum { ZG_AOI_DIGEST_ALL = 0, ZG_AOI_DIGEST_BLOCKING = 1 };
uint64_t zg_aoi_evidence_digest(const zg_aoi_evidence *ev, int flags);

// XLA post-partitioning HLO text (`jax.jit(f, ...).lower(...).compile().as_text()`) -> evidence.
// Reads the ENTRY computation in order: collectives (sync, `*-start`/`*-done`, `async-start`
// wrappers; overlap = compute ops between start and done) with replica_groups in every printed
// form (explicit, {}, iota [G,S]<=[dims]T(perm), mesh['a'=2,'b'=4] {'b'}) or
// source_target_pairs, grouped by XLA's channel_id / use_global_device_ids rules; `while`
// loops as segments repeated by known_trip_count (else opts->trip_count, else once with a
// note); `conditional` by its most expensive branch (with a note); `call`s holding
// collectives inline; tuple shapes (with XLA's /*index=N*/ comments); dot FLOPs (also inside
// fusions). Peak memory from a buffer assignment appended to the text (XLA's
// *-buffer-assignment.txt dump), else a liveness estimate (peak_mem_source says which).
// Pre-partitioning HLO (Shardy/GSPMD sharding annotations) and StableHLO text are refused with
// an error naming the construct. Every error names the line.
typedef struct zg_aoi_hlo_opts {
    int64_t trip_count;    // repeat of while loops without known_trip_count (0: once, noted)
} zg_aoi_hlo_opts;
void zg_aoi_hlo_opts_default(zg_aoi_hlo_opts *o);
zg_status zg_aoi_hlo_parse(const char *text, size_t len, zg_aoi_evidence *ev, zg_error *err);
// The same with options (opts NULL: defaults).
zg_status zg_aoi_hlo_parse_opts(const char *text, size_t len, const zg_aoi_hlo_opts *opts,
                                zg_aoi_evidence *ev, zg_error *err);

// =============================================================================================
// Pricing: evidence + placement (logical id -> physical device) + network -> predicted time.

typedef struct zg_aoi_price {
    double total_s;        // predicted step latency
    double compute_s;      // sum of compute op times
    double comm_s;         // sum of collective times
    double exposed_comm_s; // total - compute (communication not hidden under compute)
} zg_aoi_price;

// Per-pattern unit costs under one placement: time(bytes) = per_byte * bytes + fixed.
typedef struct zg_aoi_pattern_cost {
    double per_byte, fixed;
} zg_aoi_pattern_cost;

// Physical costs of every pattern under placement perm (num_devices entries).
zg_status zg_aoi_pattern_costs(const zg_aoi_evidence *ev, const zg_net *net,
                               const int32_t *perm, zg_aoi_pattern_cost *out, zg_error *err);
// Placement-oblivious alpha-beta costs per pattern: alpha per step + (n-1)/n-style byte terms
// over one link's bandwidth (stage 1 uses xla_style = 0). xla_style = 1 prices all-to-all with
// XLA auto-sharding's n/2 factor (kept for comparisons; the Alpa-style baseline is the ILP in
// autoshard.c, which applies XLA's formulas per op).
void zg_aoi_pattern_costs_logical(const zg_aoi_evidence *ev, const zg_net *net, int xla_style,
                                  zg_aoi_pattern_cost *out);
// Schedule walk (one compute stream, one communication stream; a collective may overlap the
// next `overlap` compute ops). overlap_ok = 0 serializes everything (sum objective).
void zg_aoi_walk(const zg_aoi_evidence *ev, const zg_net *net, const zg_aoi_pattern_cost *pc,
                 int overlap_ok, zg_aoi_price *out);
// Convenience: pattern costs + walk. link_bytes (optional, zg_net_n_links) gets per-link bytes.
zg_status zg_aoi_price_placement(const zg_aoi_evidence *ev, const zg_net *net,
                                 const int32_t *perm, double *link_bytes, zg_aoi_price *out,
                                 zg_error *err);

// =============================================================================================
// Workload, graph IR, candidates, lowering.

typedef struct zg_aoi_work {
    zg_model model;
    int64_t frames, height, width;
    int32_t training;     // 0: one denoising step (inference); 1: forward + backward + optimizer
    int32_t batch;        // samples per step (inference: 2 with CFG for Wan, 1 for HunyuanVideo)
    int32_t cfg;          // inference: the batch is the two CFG branches
} zg_aoi_work;

// Fills defaults: batch = 2 (Wan inference, CFG), 1 (HunyuanVideo: CFG-distilled), or
// `devices` for training when batch <= 0. Resolution "480p" = 480x832, "720p" = 720x1280.
zg_status zg_aoi_work_init(zg_aoi_work *w, const char *model, const char *res, int64_t frames,
                           int training, int32_t batch, int32_t devices, zg_error *err);

typedef enum { ZG_AOI_GEMM = 0, ZG_AOI_ATTN, ZG_AOI_ELEM } zg_aoi_node_kind;
typedef enum { ZG_AOI_TP_NONE = 0, ZG_AOI_TP_COL, ZG_AOI_TP_ROW } zg_aoi_tp_mode;

typedef struct zg_aoi_node {
    zg_aoi_node_kind kind;
    char name[24];
    zg_aoi_tp_mode tp;    // GEMM: column-parallel (output sharded), row-parallel (input, + AR)
    int32_t text_rows;    // GEMM rows are the text tokens instead of the visual sequence
    int64_t k, n;         // GEMM: in and out widths
    int32_t cross;        // ATTN: cross-attention to the text (no sequence communication)
    int32_t qkv;          // GEMM: produces q,k,v for the next self-attention (Ulysses a2a)
    double elem_width;    // ELEM: elements per token read+written
} zg_aoi_node;

#define ZG_AOI_MAX_NODES 20
typedef struct zg_aoi_block {
    char name[24];
    int32_t repeat;
    double weight_params;  // parameters of one block
    int32_t n_nodes;
    zg_aoi_node nodes[ZG_AOI_MAX_NODES];
} zg_aoi_block;

typedef struct zg_aoi_graph {
    zg_aoi_work work;
    int64_t tokens;        // visual tokens per sample
    int64_t text;          // text tokens per sample
    int64_t seq;           // self-attention sequence per sample (+ text for joint attention)
    double params;         // DiT parameters
    double embed_params;   // parameters outside the blocks
    int32_t n_blocks;
    zg_aoi_block blocks[2];
} zg_aoi_graph;

zg_status zg_aoi_graph_build(const zg_aoi_work *w, zg_aoi_graph *g, zg_error *err);

// The dimensions of a user's DiT program (the JAX front end infers them from its arguments):
// a Wan-style block (self-attention, cross-attention to `text` tokens when text > 0, FFN)
// repeated `layers` times over `tokens` visual tokens per sample.
typedef struct zg_aoi_dims {
    char name[64];
    int64_t tokens, text;
    int32_t dim, heads, ffn, layers, batch;
    int32_t training;
} zg_aoi_dims;
// Builds the graph of such a program (the model's widths and the token count are the given
// ones; no video geometry). Errors name the bad value.
zg_status zg_aoi_graph_from_dims(const zg_aoi_dims *d, zg_aoi_graph *g, zg_error *err);

// A candidate: logical mesh dp x ring x ulysses x tp (tp fastest in the rank order) with
// replicated weights or FSDP (weights, grads and optimizer state sharded, all-gathered per
// block) over: all data axes (dp, ring, ulysses), the sequence axes only (ring, ulysses; dp
// replicas each hold a shard set, gradients reduce-scattered inside, all-reduced across:
// sequence parallelism + FSDP), or the dp axis only.
enum { ZG_AOI_FSDP_NONE = 0, ZG_AOI_FSDP_ALL = 1, ZG_AOI_FSDP_SP = 2, ZG_AOI_FSDP_DP = 3 };
typedef struct zg_aoi_cand {
    int32_t dp, ring, uly, tp, fsdp;  // fsdp: ZG_AOI_FSDP_*
    int32_t n_axes;
    int32_t shape[ZG_AOI_MAX_AXES];
    char names[ZG_AOI_MAX_AXES][8];
    double mem_bytes;        // predicted peak per device
    double weight_bytes, act_bytes;
    int32_t legal;
    char reject[200];        // why not legal
    double stage1_s;         // placement-oblivious price
} zg_aoi_cand;

// Fills names/shape and checks legality (divisibility, memory); sets legal and reject.
void zg_aoi_cand_check(const zg_aoi_graph *g, const zg_net *net, zg_aoi_cand *c);
// Every factorization of net->n_devices into dp x ring x uly x tp, with and without FSDP.
zg_status zg_aoi_cand_enumerate(const zg_aoi_graph *g, const zg_net *net, zg_aoi_cand **out,
                                int32_t *n, zg_error *err);
void zg_aoi_cand_label(const zg_aoi_cand *c, char *buf, size_t bufsz);
// Mask of the axes the weights are sharded over (1 dp, 2 ring, 4 uly) and its size.
int zg_aoi_cand_fsdp_mask(const zg_aoi_cand *c);
int32_t zg_aoi_cand_fsdp_size(const zg_aoi_cand *c);
// "dp=2,uly=4,fsdp" style spec -> candidate (for CLI and tests); fsdp_sp, fsdp_dp select the
// partial FSDP variants.
zg_status zg_aoi_cand_parse(const char *spec, int32_t devices, zg_aoi_cand *c, zg_error *err);

// Lowering: (graph, candidate) -> per-device program as evidence.
zg_status zg_aoi_lower(const zg_aoi_graph *g, const zg_aoi_cand *c, zg_aoi_evidence *ev,
                       zg_error *err);

// PartitionSpec of the main tensors for a candidate, as lines "name: P(...)".
void zg_aoi_partition_specs(const zg_aoi_cand *c, char *buf, size_t bufsz);

// =============================================================================================
// Alpa-style logical auto-sharding (the baseline; XLA auto-sharding's ILP, no placement).
//
// Per 2-D logical mesh (m0 x m1, m0 <= m1): one strategy variable per op of a block (the blocks
// of a DiT are one scanned loop body, so one set of variables per block kind), each strategy a
// role per mesh dimension (R replicated, B batch, S sequence / query, D out-features or heads,
// K contraction with an all-reduce) plus an FSDP flag (weights stored sharded over the data
// dimensions, all-gathered before use). Node cost = roofline compute + the op's own
// collectives priced with XLA's ClusterEnvironment alpha-beta formulas per mesh dimension;
// edge cost = resharding between the producer's output and the consumer's input layout
// (slice 0, all-gather, all-to-all on an effectively 1-D mesh), including the residual skip
// edges and the loop wrap edge; memory (weights x repeat + activations) <= HBM cap.
// Solved exactly by COIN-OR CBC (ZG_HAVE_CBC) or by an exact Pareto DP over the block's
// chain-with-residuals structure (same optimum; test autoshard_cbc_and_dp_agree).

typedef enum { ZG_AS_R = 0, ZG_AS_B, ZG_AS_S, ZG_AS_D, ZG_AS_K, ZG_AS_NROLES } zg_aoi_as_role;
typedef enum { ZG_AS_ELEM = 0, ZG_AS_GEMM, ZG_AS_SATTN, ZG_AS_XATTN } zg_aoi_as_kind;

typedef struct zg_aoi_as_strat {
    uint8_t role[2];     // per mesh dimension
    uint8_t fsdp;        // weights sharded over the R/B/S dimensions, all-gathered per use
    uint8_t lin, lout;   // input / output activation layouts: role0 + 4 * role1 (R,B,S,D)
    double node_s;       // node cost per block instance (XLA-style seconds)
    double mem;          // bytes per device: weights x repeat + activations
} zg_aoi_as_strat;

typedef struct zg_aoi_as_op {
    char name[24];
    zg_aoi_as_kind kind;
    int32_t res;          // consumes the residual stream and becomes its new value
    int64_t k, n;         // GEMM widths (XATTN: the folded text k/v projection d -> 2d)
    double in_width, out_width;  // activation widths per token
    double elem_width;    // ELEM
    int32_t qkv;          // GEMM output feeds a self-attention
    int32_t n_strat;
    zg_aoi_as_strat *s;   // owned
} zg_aoi_as_op;

typedef struct zg_aoi_as_block {
    char name[24];
    int32_t repeat, n_ops;
    zg_aoi_as_op ops[ZG_AOI_MAX_NODES];
} zg_aoi_as_block;

typedef struct zg_aoi_as_problem {
    const zg_aoi_graph *g;
    const zg_net *net;
    int32_t mesh[2];
    double alpha[2], beta[2];   // XLA ClusterEnvironment per-mesh-dimension parameters
    int32_t n_blocks;
    zg_aoi_as_block blocks[2];
    double mem_fixed, mem_cap;  // bytes per device
    double cutoff_s;            // solvers may skip solutions costing more (INFINITY: none)
} zg_aoi_as_problem;

typedef struct zg_aoi_as_solution {
    int32_t feasible;
    double cost_s;               // ILP objective (XLA-style seconds per step)
    double mem;                  // bytes per device under the ILP's memory model
    int32_t pick[2][ZG_AOI_MAX_NODES];
    char solver[8];              // "cbc" or "dp"
    int32_t cut;                 // 1: no feasible solution at or below the cutoff
} zg_aoi_as_solution;

zg_status zg_aoi_as_build(const zg_aoi_graph *g, const zg_net *net, int32_t m0, int32_t m1,
                          zg_aoi_as_problem *p, zg_error *err);
void zg_aoi_as_free(zg_aoi_as_problem *p);
// Resharding cost (XLA-style seconds) of `bytes` (the full tensor) from layout a to b, for one
// forward pass (training multipliers are applied by the solvers via zg_aoi_as_edge_mult).
double zg_aoi_as_reshard_s(const zg_aoi_as_problem *p, int32_t a, int32_t b, double bytes);
double zg_aoi_as_edge_mult(const zg_aoi_as_problem *p);
// Edge cost into op j of block b: main input (from op j-1, or the last op for j = 0) with the
// producer's strategy sp; skip (res ops) from the residual anchor's strategy sa (-1: none).
double zg_aoi_as_edge_s(const zg_aoi_as_problem *p, int32_t b, int32_t j, int32_t sp,
                        int32_t sa, int32_t sj);
// Index of the residual anchor op feeding op j's skip input (the last res op before j,
// cyclically).
int32_t zg_aoi_as_anchor(const zg_aoi_as_block *blk, int32_t j);
// Total objective and memory of a full assignment.
void zg_aoi_as_eval(const zg_aoi_as_problem *p, const int32_t pick[2][ZG_AOI_MAX_NODES],
                    double *cost_s, double *mem);
// Exact solvers. *sol->feasible = 0 when nothing fits in memory.
zg_status zg_aoi_as_solve_dp(const zg_aoi_as_problem *p, zg_aoi_as_solution *sol, zg_error *err);
// ZG_ERR_UNSUPPORTED when built without CBC.
zg_status zg_aoi_as_solve_cbc(const zg_aoi_as_problem *p, zg_aoi_as_solution *sol,
                              zg_error *err);
int zg_aoi_as_have_cbc(void);
// The solution's per-device program as evidence (logical mesh m0 x m1, rank = i0 * m1 + i1).
zg_status zg_aoi_as_lower(const zg_aoi_as_problem *p, const zg_aoi_as_solution *sol,
                          zg_aoi_evidence *ev, zg_error *err);
// "mesh 2x4 qkv:SD attn:SD ..." (roles per op; '*' marks FSDP), truncated to bufsz.
void zg_aoi_as_label(const zg_aoi_as_problem *p, const zg_aoi_as_solution *sol, char *buf,
                     size_t bufsz);
// PartitionSpecs of every op's activation and weight (mesh axes 'm0', 'm1'), one per line.
void zg_aoi_as_partition_specs(const zg_aoi_as_problem *p, const zg_aoi_as_solution *sol,
                               char *buf, size_t bufsz);

typedef struct zg_aoi_autoshard {
    int32_t found;
    int32_t mesh[2];
    zg_aoi_as_solution sol;
    int32_t n_meshes;            // mesh shapes solved
    double solve_s;              // solver wall time, all mesh shapes
} zg_aoi_autoshard;
// Solves every 2-D mesh shape m0 x m1 = devices (m0 <= m1) with `solver` ("cbc", "dp" or
// "auto": CBC when built with it) and keeps the lowest objective (ties: the first shape).
zg_status zg_aoi_autoshard_run(const zg_aoi_graph *g, const zg_net *net, const char *solver,
                               zg_aoi_autoshard *out, zg_error *err);

// =============================================================================================
// Placement search.

typedef struct zg_aoi_search_opts {
    int32_t exhaustive_max;  // enumerate all permutations up to this many devices (8)
    int32_t local_rounds;    // swap local-search rounds for larger slices
    uint64_t seed;
} zg_aoi_search_opts;

typedef struct zg_aoi_search_result {
    int32_t *perm;           // best placement, logical id -> physical device (owned)
    zg_aoi_price price;
    int64_t priced;          // placements priced
    int64_t skipped_sym;     // placements skipped as symmetric duplicates
} zg_aoi_search_result;

// Automorphisms of the network that preserve prices (reflections, swaps of equal dimensions,
// torus translations); each a device permutation. *n_out elements of n_devices ints.
zg_status zg_aoi_symmetries(const zg_net *net, int32_t **perms, int32_t *n_out, zg_error *err);
// 1 if perm is the lexicographically smallest of its orbit (syms from zg_aoi_symmetries).
int zg_aoi_perm_is_canonical(const int32_t *perm, int32_t n, const int32_t *syms,
                             int32_t n_syms);
zg_status zg_aoi_search(const zg_aoi_evidence *ev, const zg_net *net,
                        const zg_aoi_search_opts *opts, zg_aoi_search_result *res,
                        zg_error *err);
void zg_aoi_search_result_free(zg_aoi_search_result *res);

// =============================================================================================
// Planner.

typedef struct zg_aoi_plan_opts {
    int32_t top_k;           // stage-1 survivors (4)
    zg_aoi_search_opts search;
    char ilp_solver[8];      // Alpa-style ILP: "auto" (CBC when built with it), "cbc", "dp"
    int32_t place_ilp;       // 1: stage 2 also searches placements of the ILP's sharding (1)
} zg_aoi_plan_opts;
void zg_aoi_plan_opts_default(zg_aoi_plan_opts *o);


#define ZG_AOI_MAX_BASELINES 6
typedef struct zg_aoi_baseline {
    char name[32];
    char label[256];         // the candidate it chose
    int32_t legal;
    double latency_s;        // priced with the network model, default device order
    char why[200];           // when not legal
} zg_aoi_baseline;

typedef struct zg_aoi_plan {
    zg_aoi_cand cand;         // the winning template candidate (when from_ilp = 0)
    int32_t from_ilp;         // 1: the winner is the Alpa-style ILP's sharding, placed by AoiZora
    char label[256];          // the winner's sharding, in words
    char specs[2048];         // its PartitionSpecs, one per line
    int32_t n_axes;           // its logical mesh
    int32_t mesh_shape[ZG_AOI_MAX_AXES];
    char axis_names[ZG_AOI_MAX_AXES][8];
    double mem_bytes;         // its predicted memory per device
    zg_aoi_autoshard ilp;     // the Alpa-style ILP's result (found = 0 if nothing fit)
    char ilp_solver[8];       // solver that solved the ILP ("cbc" or "dp")
    double ilp_solve_s;       // ILP time, all mesh shapes
    int32_t *perm;            // logical id -> physical device (owned)
    zg_aoi_price price;
    double default_order_s;   // the chosen sharding in the default device order
    int32_t n_cands, n_legal, n_survivors;
    int64_t placements_priced;
    double plan_time_s;
    int32_t n_baselines;
    zg_aoi_baseline baselines[ZG_AOI_MAX_BASELINES];
    char rejected_example[200];
} zg_aoi_plan;

// Stage 1 on its own: every candidate (legal ones scored placement-obliviously), sorted legal
// first by stage-1 price (ties by degrees); the first min(top_k, n_legal) are the survivors.
// *cands is owned by the caller (free). ZG_ERR_INFEASIBLE (with an example reason) when none
// is legal.
zg_status zg_aoi_stage1(const zg_aoi_graph *g, const zg_net *net, zg_aoi_cand **cands,
                        int32_t *n, int32_t *n_legal, zg_error *err);

// The expert configurations the planner compares against (names as in zg_aoi_plan baselines:
// expert_ulysses, expert_cfg_ulysses, expert_tp_host_sp; training: expert_fsdp_ulysses,
// expert_fsdp_dp, expert_tp_host_sp), checked (legal/reject set). Returns how many were written
// (at most ZG_AOI_MAX_BASELINES).
int32_t zg_aoi_experts(const zg_aoi_graph *g, const zg_net *net,
                       char names[ZG_AOI_MAX_BASELINES][32], zg_aoi_cand *cands);

zg_status zg_aoi_plan_run(const zg_aoi_graph *g, const zg_net *net, const zg_aoi_plan_opts *o,
                          zg_aoi_plan *plan, zg_error *err);
void zg_aoi_plan_free(zg_aoi_plan *plan);
// The evidence of the plan's winning sharding (template lowering, or the ILP's program).
zg_status zg_aoi_plan_evidence(const zg_aoi_graph *g, const zg_net *net, const zg_aoi_plan *plan,
                               zg_aoi_evidence *ev, zg_error *err);
// JSON: mesh_shape, axis_names, device_order, torch_rank_order, partition_specs,
// predicted_latency_s, compute_s, comm_s, exposed_comm_s, baselines {name: latency}, plan_time_s.
cJSON *zg_aoi_plan_to_json(const zg_aoi_graph *g, const zg_net *net, const zg_aoi_plan *plan);
// PartitionSpec lines ("x [B,N,D]: P(None, ('ring','sp'), None)", "blk/op: x [..] P(..), w [..]
// P(..)") -> {"x": [null, ["ring","sp"], null], "blk/op/x": [...], ...}, so that
// jax.sharding.PartitionSpec(*spec) takes each value unchanged; *dims (optional) gets
// {"x": "[B,N,D]", ...}.
cJSON *zg_aoi_partition_specs_json(const char *specs, cJSON **dims);

#endif
