// cost_testlib.h — fixtures the cost tests share (static inline: each test program uses some).
#ifndef ZG_COST_TESTLIB_H
#define ZG_COST_TESTLIB_H

#include <stdio.h>
#include <string.h>

#include "cost/cost.h"

// The analytic pricer for the presets `model` and `cluster` with options o (NULL: defaults).
// m and c, when not NULL, receive the presets.
static inline zg_status cost_test_analytic(zg_pricer *p, const char *model, const char *cluster,
                                           const zg_cost_opts *o, zg_model *m, zg_cluster *c,
                                           zg_error *e) {
    zg_model mm;
    zg_cluster cc;
    m = m ? m : &mm, c = c ? c : &cc;
    zg_status st = zg_model_preset(model, m, e);
    if (!st) st = zg_cluster_preset(cluster, c, e);
    if (!st) st = zg_cost_analytic_init(p, m, c, o, e);
    return st;
}

// An empty price table for model tiny on `cluster` (world_size ranks), memory model: 1e6 bytes
// base, 100 per token, 10 per text row, 1000 per sample.
static inline void cost_test_table_tiny(zg_cost_table *t, const char *cluster, int32_t world_size) {
    zg_cost_table_init_empty(t);
    snprintf(t->model, sizeof t->model, "tiny");
    snprintf(t->cluster, sizeof t->cluster, "%s", cluster);
    t->world_size = world_size;
    t->mem_base = 1e6;
    t->mem_per_token = 100;
    t->mem_per_text = 10;
    t->mem_per_sample = 1000;
}

// Appends a measured price: `time` s (measured range +-10%, 5 repetitions) for `tokens` tokens
// (8 of them text) in `bucket` under config c, peak memory 1000 bytes.
static inline void cost_test_table_add(zg_cost_table *t, const char *bucket, int64_t tokens,
                                       zg_config c, double time) {
    zg_cost_table_entry e;
    memset(&e, 0, sizeof e);
    snprintf(e.bucket, sizeof e.bucket, "%s", bucket);
    e.tokens = tokens;
    e.text_tokens = 8;
    e.config = c;
    e.time = time;
    e.time_lo = time * 0.9;
    e.time_hi = time * 1.1;
    e.reps = 5;
    e.peak = 1000;
    zg_cost_table_push(t, &e, NULL);
}

#endif
