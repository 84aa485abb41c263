// knapformer.h — internal API of the bit-faithful port of KnapFormer's plan_routing
// (Kai-46/KnapFormer @ efda11b, knapformer/sequence_balancer.py; spec:
// shared/reference/knapformer.md §2). The `knapformer` placement policy (policy_knapformer.c)
// and bench/knapformer_imbalance.c are built on it; docs/knapformer.md maps it to the reference.
//
// Pure functions on (lengths, origin GPUs) of one balance group: no batch, model or pricer.
//   zg_knap_layout     the parsed bag spec "g{G}n{N}+..." (§2.1)
//   zg_knap_balancer   one SequenceBalancer of one balance group: the layout plus the
//                      persistent fallback list options2bag_ids[G_max] (§2.4, §2.10)
//   zg_knap_routing    one plan_routing result: assignment, chunks, receipts, loads (§2.4-2.7)
#ifndef ZG_PLAN_KNAPFORMER_H
#define ZG_PLAN_KNAPFORMER_H

#include "core/core.h"

#define ZG_KNAP_MAX_SIZES 32 // distinct bag sizes G in one spec

// ---- bag spec (§2.1) ---------------------------------------------------------------------------
typedef struct zg_knap_layout {
    int32_t n_sizes;                  // distinct G
    int32_t size[ZG_KNAP_MAX_SIZES];  // G, ascending
    int32_t count[ZG_KNAP_MAX_SIZES]; // bags of that G
    int32_t group;                    // P = sum G*count: GPUs in one balance group
    int32_t n_bags;
    int32_t *bag_size;  // (n_bags) G of bag b; bag ids follow ascending G
    int32_t *bag_first; // (n_bags) first GPU of bag b (group-local); the bag
                        // owns GPUs bag_first[b] .. bag_first[b]+bag_size[b]-1
    int32_t *gpu_bag;   // (group) bag of each group-local GPU
} zg_knap_layout;

// Parses "g1n2+g2n1+g4n1": '+'-separated terms, each exactly g<G>n<N> with G, N >= 1; terms are
// sorted by G ascending and every G must be distinct ("g1n2+g1n3" is rejected: write g1n5).
zg_status zg_knap_layout_parse(const char *spec, zg_knap_layout *l, zg_error *err);
void zg_knap_layout_free(zg_knap_layout *l);
// Balance groups ("replicas") on world_size ranks: world_size % group must be 0 (§2.1).
zg_status zg_knap_layout_replicas(const zg_knap_layout *l, int32_t world_size, int32_t *replicas,
                                  zg_error *err);
// The spec back as a string in sorted order ("g1n2+g2n1+g4n1").
const char *zg_knap_layout_name(const zg_knap_layout *l, char *buf, size_t bufsz);
// Candidate layouts for one balance group of `world` GPUs: bag sizes that divide n_heads (Ulysses
// inside a bag splits heads), at most max_distinct distinct sizes, summing to world. Writes up to
// cap spec strings into out[] in a fixed order (fewer distinct sizes first, then by the sizes'
// counts, larger bags first) and returns how many were written. Used to find KnapFormer's best
// layout per setting, which the paper's authors picked by hand.
int32_t zg_knap_layouts_enumerate(int32_t world, int32_t n_heads, int32_t max_distinct,
                                  char (*out)[128], int32_t cap);

// ---- cost model (§2.2) -------------------------------------------------------------------------
typedef enum {
    ZG_KNAP_COST_FLOPS = 0, // w(L) = (24*L*d*d + gamma*4*L*L*d) / 1e12 (the reference)
    ZG_KNAP_COST_LINEAR,    // w(L) = L (how visualization/routing_plan.json was made; V1)
} zg_knap_cost;

// w(L) evaluated as the reference does: 24*L*(d*d) as an exact integer, then
// ((gamma*4)*(double)(L*L))*(double)d, their sum in double, then / 1e12.
double zg_knap_workload(int64_t L, int64_t d, double gamma);
// Checks that L and d keep the integer terms exact (L*L and 24*L*d*d fit in int64).
zg_status zg_knap_workload_check(int64_t L, int64_t d, zg_error *err);

// ---- balancer (persistent across steps) -------------------------------------------------------
typedef struct zg_knap_balancer {
    const zg_knap_layout *layout; // not owned; must outlive the balancer
    int64_t d;                    // model width in w(L)
    double gamma;                 // attention weight in w(L)
    zg_knap_cost cost;
    int32_t n_fallback;
    int32_t *fallback; // (n_fallback) options2bag_ids[G_max]: sorted in place by occupancy on
                       // every fallback; the order persists into later calls (§2.10)
} zg_knap_balancer;

zg_status zg_knap_balancer_init(zg_knap_balancer *b, const zg_knap_layout *l, int64_t d,
                                double gamma, zg_knap_cost cost, zg_error *err);
void zg_knap_balancer_free(zg_knap_balancer *b);

// ---- one plan_routing call ---------------------------------------------------------------------
typedef struct zg_knap_routing {
    int64_t n;     // sequences (global seq ids 0..n-1 of the balance group)
    int32_t group; // GPUs in the group
    int32_t n_bags;
    int32_t *assign;     // (n) bag of each sequence
    double *w;           // (n) estimated workload w(L)
    double total;        // sum of w, left to right in seq-id order
    double capacity;     // C = total / group (per-GPU capacity)
    double *cap;         // (n_bags) C * G_b
    double *occ;         // (n_bags) sum over members of w / cap (occupancy; may exceed 1)
    int32_t n_fallbacks; // sequences placed by the fallback path
    // chunks: sequence s owns chunk ids chunk_off[s] .. chunk_off[s+1]-1, in token order
    int64_t n_chunks;
    int64_t *chunk_off; // (n + 1)
    int64_t *chunk_len; // (n_chunks) tokens
    int32_t *chunk_gpu; // (n_chunks) destination GPU (group-local)
    int32_t *chunk_src; // (n_chunks) source GPU (the sequence's origin)
    // receipts: GPU g receives chunk ids recv[recv_off[g] .. recv_off[g+1]-1], ascending
    int64_t *recv_off; // (group + 1)
    int64_t *recv;     // (n_chunks)
    // loads (§2.7)
    double *orig_load; // (group) sum of w of the GPU's own sequences, in local order
    double *bal_load;  // (group) cap[bag] * occ[bag] / G_bag
    double orig_ratio; // max/min orig_load
    double bal_ratio;  // max/min bal_load
} zg_knap_routing;

void zg_knap_routing_init(zg_knap_routing *r);
void zg_knap_routing_free(zg_knap_routing *r);

// Plans one step of one balance group. lengths (n) are token counts >= 1; gpu (n) the
// group-local origin GPU of each sequence, non-decreasing (global ids are (GPU, local index)
// order, §2.3). Mutates b's fallback order exactly as the reference does (also when the call
// then fails). Errors: ZG_ERR_INVALID on bad input; ZG_ERR_INFEASIBLE when a GPU of the group
// receives no chunk (the reference's KeyError, §2.6) or a GPU has zero original workload (its
// ZeroDivisionError, §2.7). On error *out is left empty.
zg_status zg_knap_plan_routing(zg_knap_balancer *b, const int64_t *lengths, const int32_t *gpu,
                               int64_t n, zg_knap_routing *out, zg_error *err);

#endif
