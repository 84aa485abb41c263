// cost — what a placement option costs: per-participating-rank time A(s,c,r) and memory
// M(s,c,r), through one interface (zg_pricer) so the measured price table from the profiler
// replaces the analytic model without touching any planner. docs/cost-model.md derives terms.
//
// May include: topo, workload, model, core.
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
// 1 when c is pure Ulysses (1,h,1) with h > 1: every rank of the group computes its heads over
// all the group's tokens, so a rank may start with none of them (a zero-length shard).
static inline int zg_config_is_ulysses(zg_config c) {
    return c.q == 1 && c.k == 1 && c.h > 1;
}
// What the pricers accept: zg_config_check, except that a pure Ulysses config may have fewer
// tokens than ranks (KnapFormer routes such a sequence to its fallback bag with zero-length
// chunks; docs/knapformer.md). Priced as an even split of the tokens.
zg_status zg_config_check_priced(const zg_model *m, int32_t world_size, zg_config c,
                                 int64_t tokens, zg_error *err);
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
// The type of zg_pricer.price (named so a block entry can record which price it belongs to).
typedef zg_status (*zg_price_fn)(const zg_pricer *p, const zg_seq *s, zg_config c,
                                 const int32_t *ranks, int32_t n, zg_price *out, zg_error *err);
struct zg_pricer {
    const char *kind;  // "analytic" or "table"
    void *impl;
    // ranks: the option's rank list (n = degree); prices may depend on the nodes it spans.
    zg_status (*price)(const zg_pricer *p, const zg_seq *s, zg_config c, const int32_t *ranks,
                       int32_t n, zg_price *out, zg_error *err);
    zg_comm_bytes (*comm)(const zg_pricer *p, const zg_seq *s, zg_config c);
    void (*free_impl)(zg_pricer *p);
    double mem_base;  // bytes per rank independent of placement (weights, grads, optimizer, ...)
    double mem_cap;   // the memory cap per rank (total: base + placements), bytes; set from
                      // zg_cluster_mem_cap_bytes. Placements may use zg_pricer_mem_room().
    // Optional block entry (NULL: none). The price of c on the contiguous rank block
    // [start, start + n), without a rank list: bit-identical (status, error message, both
    // doubles) to price() on the list start, start+1, ..., start+n-1. It belongs to the price
    // function recorded in block_for; a copy of the struct whose price was replaced (a wrapper)
    // no longer matches, and zg_pricer_price_block then calls the wrapper's price on the list,
    // so a wrapper is never bypassed. Call it only through zg_pricer_price_block.
    zg_status (*price_block)(const zg_pricer *p, const zg_seq *s, zg_config c, int32_t start,
                             int32_t n, zg_price *out, zg_error *err);
    zg_price_fn block_for;
};

static inline zg_status zg_pricer_price(const zg_pricer *p, const zg_seq *s, zg_config c,
                                        const int32_t *ranks, int32_t n, zg_price *out,
                                        zg_error *err) {
    return p->price(p, s, c, ranks, n, out, err);
}
void zg_pricer_free(zg_pricer *p);
// Bytes per rank the placements may use on top of the base: mem_cap - mem_base (what planners
// compare a rank's summed placement memory with; INFINITY when mem_cap is). <= 0: nothing fits.
static inline double zg_pricer_mem_room(const zg_pricer *p) {
    return p->mem_cap - p->mem_base;
}
// Sets the base and the cap of a pricer (tests and wrappers that build one by hand).
static inline void zg_pricer_set_mem(zg_pricer *p, double mem_base, double mem_cap) {
    p->mem_base = mem_base, p->mem_cap = mem_cap;
}

// 1 when p's block entry may be used: set and paired with p's current price function.
static inline int zg_pricer_has_block(const zg_pricer *p) {
    return p->price_block && p->block_for == p->price;
}
// price() on the rank list start..start+n-1 built here (pricer.c): the fallback of
// zg_pricer_price_block; ZG_ERR_INVALID when start + n - 1 exceeds INT32_MAX.
zg_status zg_pricer_price_list_of_block(const zg_pricer *p, const zg_seq *s, zg_config c,
                                        int32_t start, int32_t n, zg_price *out, zg_error *err);
// Price of c on the contiguous block [start, start + n): the block entry when p has one paired
// with its price, else price() on the rank list. Same result either way.
static inline zg_status zg_pricer_price_block(const zg_pricer *p, const zg_seq *s, zg_config c,
                                              int32_t start, int32_t n, zg_price *out,
                                              zg_error *err) {
    if (zg_pricer_has_block(p)) return p->price_block(p, s, c, start, n, out, err);
    return zg_pricer_price_list_of_block(p, s, c, start, n, out, err);
}

// Per-device row of the analytic model (docs/cost-model.md, "Efficiency"). Achieved FLOP/s of a
// kernel family on n local tokens: peak_flops * eff * n / (n + half): efficiency falls for short
// sequences and small GEMMs (too few tiles to fill the device).
typedef struct zg_cost_device {
    double attn_fwd_eff;     // attention forward (FlashAttention-class), long sequences
    double attn_bwd_eff;     // attention backward, long sequences
    double gemm_eff;         // GEMMs incl. the memory-bound elementwise ops between them
    double attn_half;        // local tokens at which attention reaches half its efficiency
    double gemm_half;        // local tokens at which GEMMs reach half their efficiency
    double framework_bytes;  // per-rank constant: gathered weights, workspaces, allocator slack
} zg_cost_device;
// The built-in row for a device name (A800/A100, A6000, H100, H200, cpu; case-insensitive).
// Unknown devices get a generic row and the function returns 0 (1 when the device is known).
int zg_cost_device_row(const char *device, zg_cost_device *d);

// Checks a row against the ranges the analytic model accepts: efficiencies in (0, 1],
// half-points in [0, 1e9] tokens, framework_bytes in (0, 1e15]. ctx prefixes the message.
zg_status zg_cost_device_check(const zg_cost_device *d, const char *ctx, zg_error *err);
// A measured device row (`zellige profile-device`, docs/profiler.md "Device rows"):
// {"version":1, "kind":"device_row", "device":"H100", "row":{the six fields}, ...}. Checks the
// version and kind, that all six fields are there and in range (zg_cost_device_check), and, when
// device is not NULL, that the row was measured on that device (case-insensitive; a row of
// another device is refused naming both). measured_on (may be NULL) gets the row's device.
zg_status zg_cost_device_row_from_json(const cJSON *j, const char *device, zg_cost_device *d,
                                       char *measured_on, size_t measured_on_len,
                                       zg_error *err);
// Reads the file at path (errors name it) and checks it as above: the row for zg_cost_opts.dev.
zg_status zg_cost_device_row_load(const char *path, const char *device, zg_cost_device *d,
                                  zg_error *err);

// Analytic model options.
typedef struct zg_cost_opts {
    int32_t act_ckpt;        // 1: activation checkpointing per block (recompute in backward)
    int32_t shard_weights;   // 1: weights/grads/optimizer sharded over all ranks (FSDP/ZeRO-3)
    int32_t param_bytes;     // bytes per parameter of weights (2 bf16)
    int32_t act_bytes;       // bytes per activation element (2 bf16)
    zg_cost_device dev;      // overrides of the device row; fields <= 0 take the built-in row
} zg_cost_opts;
void zg_cost_opts_default(zg_cost_opts *o);  // act_ckpt 1, shard_weights 1, bf16, dev all 0

zg_status zg_cost_analytic_init(zg_pricer *p, const zg_model *m, const zg_cluster *c,
                                const zg_cost_opts *o, zg_error *err);
// The analytic pricer of ONE attention layer of n_heads x head_dim in fp32 without recompute
// (wan2.1-1.3b's other shapes on 8xA800): the layer the engine runs, so pr.comm() gives the
// bytes the engine's executors send (bench_engine_comm, zellige.torch's byte checks).
zg_status zg_cost_attn_layer_init(zg_pricer *p, int32_t n_heads, int32_t head_dim,
                                  zg_error *err);

// The analytic price split into the terms of docs/cost-model.md (per participating rank).
// time = linear + text + attn + cross + alltoall + allgather + ring; mem = act + kv + buf + text.
typedef struct zg_cost_terms {
    double time, linear, text_linear, attn, cross;  // seconds; attn: self-attention compute
    double alltoall, allgather;  // seconds of Ulysses / all-gather CP communication (exposed)
    double ring;       // seconds the ring adds over its compute (exposed comm after overlap)
    double mem, mem_act, mem_kv, mem_buf, mem_text;  // bytes
    double local_tokens;  // tokens this rank holds (visual + joint text), ceil(L'/λ)
} zg_cost_terms;
// Only for pricers made by zg_cost_analytic_init (ZG_ERR_INVALID otherwise). ranks may be NULL:
// positions 0..λ-1 are used as ranks.
zg_status zg_cost_analytic_terms(const zg_pricer *p, const zg_seq *s, zg_config c,
                                 const int32_t *ranks, int32_t n, zg_cost_terms *out,
                                 zg_error *err);

// ---------------------------------------------------------------------------------------------
// Measured price table (table.c): the profiler's output (`zellige profile`, docs/profiler.md)
// as a pricer. Time: per (bucket or token count, configuration) the measured
// per-participating-rank price, host overhead removed; between measured token counts of the
// same configuration it interpolates linearly in tokens (details at zg_cost_table_time).
// Memory: the calibrated linear model
//   M(s, c, r) = per_token * ceil(L / degree) + per_text * text_rows(s) + per_sample
// with text_rows(s) = s->text_tokens if > 0, else the model's text_len (at least 1), and
// mem_base = the fitted constant (weights, gradients, AdamW moments, workspaces).

typedef struct zg_cost_table_entry {
    char bucket[ZG_BUCKET_NAME_MAX];  // catalog bucket measured ("" = by token count only)
    int64_t tokens;                   // tokens of the measured sequence
    int32_t text_tokens;              // its text rows
    zg_config config;
    double time;             // median per-participating-rank price (s), host overhead removed
    double time_lo, time_hi; // min / max over the repetitions (same correction)
    int32_t reps;
    double peak;             // measured peak bytes of the busiest rank in that run
} zg_cost_table_entry;

typedef struct zg_cost_table {
    int32_t version;          // 1
    char model[64];           // model name measured
    char cluster[64];         // cluster name measured ("cpu:2")
    int32_t world_size;       // ranks of the measuring run
    double overhead_s;        // placement-independent host time per step (s), see docs
    double mem_base;          // bytes per rank independent of placement (fitted)
    double mem_per_token;     // bytes per local token (fitted)
    double mem_per_text;      // bytes per text row of a local sample (fitted)
    double mem_per_sample;    // bytes per local sample or shard (fitted)
    double mem_fit_max_err;   // largest |fit - measured| / measured over the calibration runs
    int32_t n;
    zg_cost_table_entry *e;
    cJSON *extra;             // other top-level keys (machine, settings), kept on round trip
} zg_cost_table;

void zg_cost_table_init_empty(zg_cost_table *t);
void zg_cost_table_free(zg_cost_table *t);
zg_status zg_cost_table_push(zg_cost_table *t, const zg_cost_table_entry *e, zg_error *err);
// Profile JSON (docs/profiler.md) <-> table. from_json validates (configs legal, times >= 0,
// memory coefficients finite); t is overwritten (free it first if it holds entries).
zg_status zg_cost_table_from_json(const cJSON *j, zg_cost_table *t, zg_error *err);
cJSON *zg_cost_table_to_json(const zg_cost_table *t);  // NULL on OOM
zg_status zg_cost_table_load(const char *path, zg_cost_table *t, zg_error *err);
zg_status zg_cost_table_write(const char *path, const zg_cost_table *t, zg_error *err);
// Entries priced 0 s (a measurement at or below its noise, clamped at 0): a planner sees such
// sequences as free and may pile them on one rank. Returns their count; when there are any,
// writes "N of M (bucket, config) pairs are priced 0 s (first: BUCKET, T tokens, config C); "
// and what that means and what to do into note (bufsz bytes, 512 hold it; note may be NULL).
int32_t zg_cost_table_unpriced(const zg_cost_table *t, char *note, size_t bufsz);

// Time of sequence s under config c from the table: an entry of the same bucket name and token
// count if there is one; otherwise linear interpolation in tokens between the two measured
// token counts of c that bracket s->tokens (entries of equal tokens averaged); outside the
// measured range, linear extrapolation along the nearest segment, never below
// time(smallest) * tokens / smallest tokens; one measured point: proportional to tokens.
// A config with no entry is ZG_ERR_UNSUPPORTED naming it and the measured configs.
zg_status zg_cost_table_time(const zg_cost_table *t, const zg_seq *s, zg_config c, double *time,
                             zg_error *err);
// Memory of s under c on one participating rank (the linear model above), bytes.
double zg_cost_table_mem(const zg_cost_table *t, const zg_model *m, const zg_seq *s,
                         zg_config c);

// A pricer over a copy of the table. Communication bytes come from the analytic model (they
// are volumes, not times). mem_cap = zg_cluster_mem_cap_bytes(c); mem_base = the table's.
zg_status zg_cost_table_init(zg_pricer *p, const zg_cost_table *t, const zg_model *m,
                             const zg_cluster *c, zg_error *err);
// Reads a profile file and makes its pricer; errors if the profile's model name differs from
// m->name (prices of another model would be silently wrong).
zg_status zg_cost_table_pricer_load(zg_pricer *p, const char *path, const zg_model *m,
                                    const zg_cluster *c, zg_error *err);

#endif
