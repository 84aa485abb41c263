// cost — what a placement option costs: per-participating-rank time A(s,c,r) and memory
// M(s,c,r), through one interface (zg_pricer) so the measured price table from the profiler
// replaces the analytic model without touching any planner. docs/cost-model.md derives terms.
#ifndef ZG_COST_H
#define ZG_COST_H

#include "model/model.h"
#include "topo/topo.h"
#include "workload/workload.h"

// A parallel configuration θ = (q, h, k): split factors over queries (all-gather CP), heads
// (Ulysses all-to-all) and keys/values (ring). Degree λ = q*h*k ranks.
// Rank order inside an option's rank list (position i = 0..λ-1): h fastest, then k, then q:
//   i = (iq * k + ik) * h + ih.
// So a Ulysses group is h consecutive positions (kept inside a node when possible), ring
// neighbours are h apart, and all-gather peers are h*k apart. Position i holds token chunk i.
typedef struct zg_config {
    int32_t q, h, k;
} zg_config;

static inline int32_t zg_config_degree(zg_config c) { return c.q * c.h * c.k; }
static inline int zg_config_is_whole(zg_config c) { return c.q == 1 && c.h == 1 && c.k == 1; }
static inline int zg_config_eq(zg_config a, zg_config b) {
    return a.q == b.q && a.h == b.h && a.k == b.k;
}
// "(1,4,2)"-style name into buf.
const char *zg_config_name(zg_config c, char *buf, size_t bufsz);

// Legality (the executor's rules): q,h,k >= 1; h divides n_heads; λ <= world_size;
// tokens >= λ (every participating rank gets at least one token). Returns ZG_OK or an error
// saying which rule failed.
zg_status zg_config_check(const zg_model *m, int32_t world_size, zg_config c, int64_t tokens,
                          zg_error *err);
// Enumerates the legal configurations of degree <= max_degree (sorted by degree, then q, k, h);
// caller frees *out.
zg_status zg_config_enumerate(const zg_model *m, int32_t max_degree, zg_config **out,
                              int32_t *n, zg_error *err);

// Per-participating-rank price of one sequence under one option.
typedef struct zg_price {
    double time;  // seconds of forward+backward (+recompute) on each participating rank
    double mem;   // bytes each participating rank holds for this sequence at peak
} zg_price;

// Communication volume of the attention primitives (bytes sent per participating rank, per
// step, forward + backward), for reports and the comm-bytes column.
typedef struct zg_comm_bytes {
    double allgather;  // all-gather CP K/V (and its reduce-scatter of dK/dV in backward)
    double alltoall;   // Ulysses all-to-alls
    double ring;       // ring K/V passes (and dK/dV passes in backward)
} zg_comm_bytes;

typedef struct zg_pricer zg_pricer;
struct zg_pricer {
    const char *kind;  // "analytic" or "table"
    void *impl;
    // ranks: the option's rank list (n = degree); prices may depend on the nodes it spans.
    zg_status (*price)(const zg_pricer *p, const zg_seq *s, zg_config c, const int32_t *ranks,
                       int32_t n, zg_price *out, zg_error *err);
    zg_comm_bytes (*comm)(const zg_pricer *p, const zg_seq *s, zg_config c);
    void (*free_impl)(zg_pricer *p);
    double mem_base;  // bytes per rank independent of placement (weights, grads, optimizer, ...)
    double mem_cap;   // bytes per rank available to placements: usable - base
};

static inline zg_status zg_pricer_price(const zg_pricer *p, const zg_seq *s, zg_config c,
                                        const int32_t *ranks, int32_t n, zg_price *out,
                                        zg_error *err) {
    return p->price(p, s, c, ranks, n, out, err);
}
void zg_pricer_free(zg_pricer *p);

// Analytic model options.
typedef struct zg_cost_opts {
    int32_t act_ckpt;        // 1: activation checkpointing per block (recompute in backward)
    int32_t shard_weights;   // 1: weights/grads/optimizer sharded over all ranks (FSDP/ZeRO-3)
    int32_t param_bytes;     // bytes per parameter of weights (2 bf16)
    int32_t act_bytes;       // bytes per activation element (2 bf16)
} zg_cost_opts;
void zg_cost_opts_default(zg_cost_opts *o);  // act_ckpt 1, shard_weights 1, bf16

zg_status zg_cost_analytic_init(zg_pricer *p, const zg_model *m, const zg_cluster *c,
                                const zg_cost_opts *o, zg_error *err);

#endif
