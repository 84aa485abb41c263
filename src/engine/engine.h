// engine — executes a placement plan across ranks: dispatch/undispatch of tokens (loader layout
// <-> plan layout) and the coalesced attention executor, forward and backward, for every legal
// configuration θ = (q, h, k): whole (1,1,1), Ulysses (1,h,1), ring (1,1,k), all-gather CP
// (q,1,1) and their compositions. docs/engine.md has the design and the deadlock argument.
//
// Layouts (per rank, token-major, fp32):
//   plan layout:   this rank's shards in plan order (placement 0, 1, ...), each shard's tokens
//                  in order. T = zg_engine_local_tokens(). Q/K/V/O are (T, H, D), LSE is (T, H).
//   loader layout: the whole sequences whose origin (data-loader rank) is this rank, in plan
//                  order, all tokens in order (zg_engine_loader_tokens()).
// No padding anywhere: any sequence length >= degree, ragged shards.
//
// Inside the executor each rank holds a head-major work space (one row per (head, token) of
// every shard group it serves) so whole sequences, Ulysses groups (H/h heads), all-gather blocks
// and ring blocks of different sequences all lower to ONE slice list and ONE kernel call per
// ring step (step 0 covers everything that needs no ring pass).
//
// Global ordering rule (every rank derives it from the plan): collectives run in classes
//   Ulysses all-to-alls -> all-gathers -> ring steps 1, 2, ... -> reduce-scatters -> inverse
//   all-to-alls; inside a class by descending group size, then placement order, then group.
// Each collective posts all its messages before waiting, so no two ranks can wait on each
// other in a cycle (docs/engine.md).
//
// May include: kernels, comm, plan, cost, topo, workload, model, core.
#ifndef ZG_ENGINE_H
#define ZG_ENGINE_H

#include "comm/comm.h"
#include "kernels/kernels.h"
#include "plan/plan.h"

typedef struct zg_engine_opts {
    int32_t coalesce; // 1 (default): one kernel call per step; 0: one call per sequence shard
    int32_t use_ref;  // 1: the reference kernels (slow; for checks)
} zg_engine_opts;
void zg_engine_opts_default(zg_engine_opts *o);

// Per-call statistics of the last forward/backward/dispatch (this rank).
typedef struct zg_engine_stats {
    int64_t kernel_calls;     // attention kernel calls
    int64_t collectives;      // collectives / ring phases this rank waited on
    uint64_t bytes_alltoall;  // bytes sent to other ranks, by class
    uint64_t bytes_allgather; // all-gather (forward) and reduce-scatter (backward)
    uint64_t bytes_ring;
    uint64_t bytes_dispatch;
    double t_total, t_kernel, t_comm, t_copy; // seconds
} zg_engine_stats;

typedef struct zg_engine zg_engine;

// Builds the executor for `plan` (kept by pointer: it must outlive the engine and stay
// unchanged). Checks the plan against the world (size, ranks, shards covering each sequence in
// order, chunk lengths >= 1, h | n_heads). Collective-free: every rank builds the same schedule.
zg_status zg_engine_init(zg_engine **out, zg_comm *comm, const zg_plan *plan, zg_attn_shape shape,
                         const zg_engine_opts *opts, zg_error *err);
void zg_engine_free(zg_engine *e);

int64_t zg_engine_local_tokens(const zg_engine *e);
// Shards held by this rank in plan-layout order: placement index and token range. *n entries;
// the arrays are owned by the engine.
void zg_engine_local_shards(const zg_engine *e, int64_t *n, const int64_t **placement,
                            const zg_shard **shards);
const zg_engine_stats *zg_engine_last_stats(const zg_engine *e);

// Attention forward: q, k, v (T, H, D) in plan layout -> o (T, H, D), lse (T, H) (natural log,
// fp32). Collective over the ranks of the plan: every rank of the world calls it (a rank with
// no shards returns after taking part in nothing).
zg_status zg_engine_attn_forward(zg_engine *e, const float *q, const float *k, const float *v,
                                 float *o, float *lse, zg_error *err);
// Attention backward: from q, k, v, the forward's o and lse, and dout = dL/dO (all plan layout)
// -> dq, dk, dv (T, H, D), OVERWRITTEN. Ulysses backward = inverse all-to-alls; ring backward
// passes dK/dV accumulators around the ring; all-gather backward = reduce-scatter.
zg_status zg_engine_attn_backward(zg_engine *e, const float *q, const float *k, const float *v,
                                  const float *o, const float *lse, const float *dout, float *dq,
                                  float *dk, float *dv, zg_error *err);
// The same backward reusing the last forward's work space (Q, gathered K/V blocks, O, LSE in
// head-major layout, kept by the engine): only dO travels in, no all-gather is repeated, so
// Ulysses and all-gather backward move half the bytes. Valid once after each forward (costs the
// work space's memory between the two calls; use the stateless version under recompute).
zg_status zg_engine_attn_backward_saved(zg_engine *e, const float *dout, float *dq, float *dk,
                                        float *dv, zg_error *err);

// ---------------------------------------------------------------------------------------------
// Dispatch: origin[i] (i < plan->n) is the loader rank of placement i's sequence. Tokens of
// `width` floats plus, if pos is non-NULL, 3 int32 positions (frame, row, col) per token travel
// together in one all-to-all(v) over the world. Undispatch is the exact inverse.
int64_t zg_engine_loader_tokens(const zg_engine *e, const int32_t *origin, int32_t rank);
zg_status zg_engine_dispatch(zg_engine *e, const int32_t *origin, int32_t width,
                             const float *x_loader, const int32_t *pos_loader, float *x_plan,
                             int32_t *pos_plan, zg_error *err);
zg_status zg_engine_undispatch(zg_engine *e, const int32_t *origin, int32_t width,
                               const float *x_plan, const int32_t *pos_plan, float *x_loader,
                               int32_t *pos_loader, zg_error *err);

// ---------------------------------------------------------------------------------------------
// Schedule export: this rank's whole schedule as flat arrays, for runtimes that execute the plan
// with their own collectives and kernels (python/zellige/torch runs it on torch.distributed).
// Everything is computed here, by the code the engine itself runs (the items, batches, slices
// and ring postings of engine_init.c / engine_attn.c), so the runtime derives nothing.
//
// Row spaces (each row is D floats; head-major work rows as in the engine):
//   X  plan layout (T, H, D) seen as (T*H) rows: row = token*H + head (LSE: (T*H) scalars)
//   Q  query work rows [0, q_rows): Q, O, LSE, dO, dQ of every item's Ulysses group
//   KV K/V work rows [0, kv_rows): K and V (and dK, dV) blocks
//   R_s ring buffer of step s (1 <= s <= k_max), [0, ring_rows): K/V (forward) and dK/dV
//      accumulators (backward) of the block held at step s
//   L  loader layout rows (whole sequences of this origin, plan order)
typedef enum zg_sched_xkind {
    ZG_SCHED_ULYSSES = 0, // all-to-all(v): X -> Q and KV (forward), inverse: Q/KV -> X
    ZG_SCHED_GATHER = 1   // all-gather of KV sections (forward), reduce-scatter (backward)
} zg_sched_xkind;
typedef enum zg_sched_rkind {
    ZG_SCHED_KV_RECV = 0,  // receive K/V block rows [row, row+rows) of R_buf from peer (prev)
    ZG_SCHED_KV_SEND = 1,  // send K/V rows of buf (0: KV work, s >= 1: R_s) to peer (next)
    ZG_SCHED_ACC_RECV = 2, // backward: receive dK/dV accumulator into R_buf rows
    ZG_SCHED_ACC_SEND = 3, // backward: send the accumulator of R_buf rows to peer
    ZG_SCHED_ACC_HOME = 4  // backward: add R_buf rows [row, row+rows) to dKV rows dst_row..
} zg_sched_rkind;
enum { ZG_SCHED_RING_FIELDS = 7 }; // phase, kind, peer, buf, row, rows, dst_row

typedef struct zg_engine_sched {
    int32_t rank, world_size, n_heads, head_dim, k_max;
    int64_t t_local, loader_tokens, q_rows, kv_rows, ring_rows;
    // Dispatch (one all-to-all(v) over the world): loader rows d_lrows[d_loff[r] .. d_loff[r+1])
    // go to world rank r (in this order) and plan rows d_prows[d_poff[r] ..] come from r.
    // Undispatch is the same lists with the roles swapped.
    int64_t *d_loff, *d_lrows, *d_poff, *d_prows; // offsets: world_size + 1
    // Exchanges in the engine's global order (Ulysses batches, then all-gather batches).
    // Exchange x has kind x_kind[x], members m in [x_moff[x], x_moff[x+1]) (world rank m_rank[m]),
    // this rank at member x_moff[x] + x_me[x]. Member m has three index lists
    // idx[m_ioff[3m+f] .. m_ioff[3m+f+1]), f = 0, 1, 2:
    //   Ulysses:    f0: X rows sent to m (forward), f1: Q rows received from m, f2: KV rows
    //               received from m (|f1| = |f2|); the inverse sends f1/f2 rows back to m and
    //               receives into f0 rows. Sender f0 and receiver f1 agree in length and order.
    //   all-gather: f0: KV rows of m's section (sent by m to every member; f1, f2 empty).
    //               Backward: partial dK/dV of section m is sent to m, summed in member order.
    int64_t n_x, n_members;
    int64_t *x_kind, *x_me, *x_moff, *m_rank, *m_ioff, *idx;
    // Kernel slices per step s in [0, k_max) (step 0: K/V from KV; s >= 1: from R_s):
    // slices [sl_off[s], sl_off[s+1]), 4 values each: q_start, q_len, k_start, k_len (rows).
    int64_t *sl_off, *sl;
    // Ring postings, ZG_SCHED_RING_FIELDS values each, in the engine's posting order within a
    // phase: forward runs phases 1 .. k_max-1 (KV kinds); backward phases 1 .. k_max (all kinds).
    int64_t n_ring;
    int64_t *ring;
} zg_engine_sched;

// Exports this rank's schedule; origin[i] (i < plan->n) is placement i's loader rank (as in
// zg_engine_dispatch), or NULL for no dispatch lists. Free with zg_engine_sched_free.
zg_status zg_engine_sched_export(const zg_engine *e, const int32_t *origin, zg_engine_sched *out,
                                 zg_error *err);
void zg_engine_sched_free(zg_engine_sched *s);

// ---------------------------------------------------------------------------------------------
// Checks (used by tests, `zellige check-engine` and benchmarks).

// A random legal plan for `world` ranks over `n_heads` heads: sequences with configs drawn from
// every legal (q,h,k) (config `force_cfg` index first when >= 0), random distinct rank lists
// (so rank sets overlap), odd/ragged lengths and chunks, and, when `idle_rank` >= 0, no work on
// that rank. Sequence i has id i and tokens in [degree, max_tokens].
zg_status zg_engine_random_plan(int32_t world, int32_t n_heads, int32_t max_seqs,
                                int64_t max_tokens, int32_t force_cfg, int32_t idle_rank,
                                uint64_t seed, zg_plan *out, zg_error *err);
// Number of legal configs of degree <= world for n_heads, and the i-th (sorted by degree, q, k).
int32_t zg_engine_configs(int32_t world, int32_t n_heads, zg_config *out, int32_t cap);

// Deterministic test data: element (token t, head hd, d) of tensor `which` (0 q, 1 k, 2 v,
// 3 dout) of sequence `id`, seeded by `seed`; values in [-1, 1).
float zg_engine_test_value(uint64_t seed, int64_t id, int32_t which, int64_t t, int32_t hd,
                           int32_t d, int32_t n_heads, int32_t head_dim);

typedef struct zg_engine_check {
    int64_t plans, passed;
    double max_rel_err_fwd, max_rel_err_bwd; // max |dist - ref| / max |ref| (O, LSE per
                                             // tensor; dQ/dK/dV over the sequence's grads)
    int64_t bit_identical;                   // 1: a repeated run gave identical bits
    int64_t tokens, kernel_calls;
} zg_engine_check;

// Runs one plan distributed (forward + backward on deterministic data, twice: stateless
// backward, then backward_saved, which must give identical bits) and compares every local
// output with the single-process reference (zg_attn_*_ref on each whole sequence). Collective over
// the world. Results are world-reduced (every rank gets the same numbers). tol: relative error
// above which the plan fails. opts: NULL = defaults (fast kernels, coalesced).
zg_status zg_engine_check_plan(zg_comm *comm, const zg_plan *plan, zg_attn_shape shape,
                               const zg_engine_opts *opts, uint64_t data_seed, double tol,
                               zg_engine_check *res, zg_error *err);

#endif
