// megatron.h — internal API of the faithful port of Megatron-Core's dynamic ("hybrid") context
// parallel scheduler: megatron-core 0.16.1 (PyPI), megatron/core/pipeline_parallel/
// hybrid_cp_schedule.py, class BalancedCPScheduler. The `megatron` placement policy
// (policy_megatron.c) is built on it; tests/plan/test_megatron.c checks it case by case against
// tests/fixtures/megatron_groups.json, written by the real code (scripts/gen_megatron_vectors.py).
//
// Pure functions on (sample id, length) lists: no batch, model or pricer. Each Python function
// has one C counterpart in megatron.c with the same order of operations:
//   gpus_needed, get_total_workload  -> zg_megatron_gpus_needed, zg_megatron_workload
//   make_buckets_equal               -> zg_megatron_buckets
//   next_hdp_group (+ trim_overload, fill_empty_gpus), get_groups_and_subsamples
//                                    -> zg_megatron_schedule
#ifndef ZG_PLAN_MEGATRON_H
#define ZG_PLAN_MEGATRON_H

#include "core/core.h"

// Longest sample the port accepts: L*L must be exact in a double (L*L < 2^53), as Python's
// exact integer L*L is before its true division.
#define ZG_MEGATRON_MAX_LEN 94906265

typedef struct zg_megatron_sample {
    int64_t id;  // the caller's sample id (Megatron: the global sub-sample id)
    int64_t len; // tokens, 1..ZG_MEGATRON_MAX_LEN
} zg_megatron_sample;

// get_groups_and_subsamples's result: microbatch groups run one after another; in group g,
// rank r runs the samples items[off[g*world + r] .. off[g*world + r + 1]) in that order (the
// real code's sample_id_groups[g][r] are their ids, groups[g][r] their lengths). A sample is in
// exactly one group, on the ranks of its CP group there (a contiguous block, in practice aligned).
typedef struct zg_megatron_groups {
    int32_t world; // total_hdp_gpus (the DPxCP group's size)
    int32_t n_groups;
    int64_t *off;              // (n_groups*world + 1)
    zg_megatron_sample *items; // (off[n_groups*world])
    double *exec_times;        // (n_groups*world) next_hdp_group's exec_times of each group
                               // (after fill_empty_gpus: an expanded group's ranks hold the
                               // workload of its first sample only, as in the reference)
} zg_megatron_groups;

void zg_megatron_groups_init(zg_megatron_groups *g);
void zg_megatron_groups_free(zg_megatron_groups *g);

// gpus_needed: max(1, 2 ** ceil(log2(len / max_seqlen_per_rank))) with the division and log2 in
// double, as Python's int / int and math.log2 compute them (len, max >= 1). Saturates at
// INT64_MAX for exponents >= 63 (such a sample fits no world).
int64_t zg_megatron_gpus_needed(int64_t len, int64_t max_seqlen_per_rank);
// get_total_workload: (len * len) / cp_size (len <= ZG_MEGATRON_MAX_LEN, cp_size >= 1).
double zg_megatron_workload(int64_t len, int64_t cp_size);

// make_buckets_equal on samples s[0..n) (n >= 1): as many buckets as distinct CP sizes, each a
// consecutive run of s; bucket b is s[end[b-1] .. end[b]) (end[-1] = 0). end has room for n
// entries; *n_buckets gets the count.
zg_status zg_megatron_buckets(const zg_megatron_sample *s, int64_t n, int64_t max_seqlen_per_rank,
                              int64_t *end, int32_t *n_buckets, zg_error *err);

// get_groups_and_subsamples(samples) of BalancedCPScheduler(max_seqlen_per_rank, world): sorts by
// length descending (stable), then calls next_hdp_group (delta 0.05, strategy "dp") on what is
// left until nothing is. out is initialized here (free it with zg_megatron_groups_free, also on
// failure). Errors (ZG_ERR_INVALID): max_seqlen_per_rank < 1, world < 1, a length outside
// 1..ZG_MEGATRON_MAX_LEN; ZG_ERR_INFEASIBLE where the reference raises: a sample that needs more
// ranks than the world (AssertionError in fill_empty_gpus once nothing else can be placed), and
// fill_empty_gpus pushing work past the last rank (IndexError; only on worlds that are not a
// power of two).
zg_status zg_megatron_schedule(const zg_megatron_sample *samples, int64_t n,
                               int64_t max_seqlen_per_rank, int32_t world, zg_megatron_groups *out,
                               zg_error *err);

#endif
