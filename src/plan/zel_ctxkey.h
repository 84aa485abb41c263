// zel_ctxkey.h — the context a planner cache kept across steps depends on (zel_cache.c for the
// fast path, zel_pcache.c for the exact path). A cache stays valid while everything that can
// change a price or an option list is unchanged: the model, the cluster, the pricer (object,
// kind, impl, functions, memory cap and base), the rank-set family, the max degree and
// exact_rank_prices. A pricer changed in place behind the same pointers is not visible here:
// each cache re-prices probes on every hit for that.
#ifndef ZG_ZEL_CTXKEY_H
#define ZG_ZEL_CTXKEY_H

#include "plan/plan.h"

typedef struct zel_ctx_key {
    int valid;
    zg_model model;
    zg_cluster cluster;
    const zg_pricer *pricer;
    const char *kind;
    void *impl;
    zg_price_fn price, block_for;
    zg_status (*price_block)(const zg_pricer *, const zg_seq *, zg_config, int32_t, int32_t,
                             zg_price *, zg_error *);
    double mem_cap, mem_base;
    zg_rankset_family family;
    int32_t max_degree, exact_rank_prices;
} zel_ctx_key;

// Records ctx (model, cluster and pricer must be set) and marks the key valid.
void zel_ctx_key_set(zel_ctx_key *k, const zg_plan_ctx *ctx);
// 1 when k is valid and ctx has the recorded context, bit for bit.
int zel_ctx_key_same(const zel_ctx_key *k, const zg_plan_ctx *ctx);

#endif
