// plan_testlib.h — fixtures the planner tests share (tests/plan, tests/zellige): a model preset
// priced by the analytic pricer on a cluster preset with a default planning context; the plan's
// JSON text without its wall-time field (byte-identity checks); and a closed-form test pricer on
// a small synthetic cluster, with a batch to fill, so that placements and prices can be asserted
// exactly.
#ifndef PLAN_TESTLIB_H
#define PLAN_TESTLIB_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"
#include "planner/planner.h"

// ---- the analytic pricer on presets -------------------------------------------------------------

typedef struct env {
    zg_model model;
    zg_cluster cluster;
    zg_pricer pricer;
    zg_plan_ctx ctx;
} env;

// Model preset `model` on cluster preset `cluster`; free e->pricer with zg_pricer_free.
static inline int env_init_model(env *e, const char *model, const char *cluster, zg_error *err) {
    memset(e, 0, sizeof *e);
    if (zg_model_preset(model, &e->model, err)) return 1;
    if (zg_cluster_preset(cluster, &e->cluster, err)) return 1;
    zg_cost_opts co;
    zg_cost_opts_default(&co);
    if (zg_cost_analytic_init(&e->pricer, &e->model, &e->cluster, &co, err)) return 1;
    e->ctx.model = &e->model;
    e->ctx.cluster = &e->cluster;
    e->ctx.pricer = &e->pricer;
    zg_planner_opts_default(&e->ctx.opts);
    return 0;
}

// Caller frees with cJSON_free. plan_time_ms is zeroed: it is the only field timing can change.
static inline char *plan_text(zg_plan *p) {
    p->plan_time_ms = 0;
    cJSON *j = zg_plan_to_json(p);
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return s;
}

// Plans b once with a fresh planner of `policy` on ctx (p initialised also on failure).
static inline zg_status plan_policy(const zg_plan_ctx *ctx, const char *policy, const zg_batch *b,
                                   zg_plan *p, zg_error *err) {
    zg_planner pl;
    zg_plan_init(p);
    zg_status st = zg_planner_init(&pl, policy, ctx, err);
    if (st) return st;
    st = zg_planner_plan(&pl, b, p, err);
    zg_planner_free(&pl);
    return st;
}

// 1 if plans a and b have the same text (plan_text: the wall time aside).
static inline int plan_texts_equal(zg_plan *a, zg_plan *b) {
    char *x = plan_text(a), *y = plan_text(b);
    int same = x && y && !strcmp(x, y);
    free(x), free(y);
    return same;
}

// Byte identity across runs of the same steps: run 0 keeps p's text (plan_text) in *first, a
// later run compares p's with it (and the caller frees *first after the last run). 1 if equal.
static inline int plan_text_same(char **first, int run, zg_plan *p) {
    char *s = plan_text(p);
    if (run == 0) {
        *first = s;
        return s != NULL;
    }
    int same = s && *first && !strcmp(s, *first);
    free(s);
    return same;
}

// ---- a closed-form test pricer ------------------------------------------------------------------
// time = a L^2/λ + b L/λ + comm (+ lat when split), comm: Ulysses 1, ring 2, all-gather 3 times
// comm L/λ; mem = c L/λ (+ c L/2 for q > 1). Communication bytes: 10, 20, 30 per token.

typedef struct tp {
    double a, b, c, comm, lat;  // lat: fixed seconds per split (collective start-up)
} tp;

static inline zg_status tp_price(const zg_pricer *p, const zg_seq *s, zg_config c,
                                 const int32_t *ranks, int32_t n, zg_price *out, zg_error *err) {
    (void)ranks, (void)err;
    const tp *t = p->impl;
    double L = (double)s->tokens, lam = n;
    double comm = 0;
    if (c.h > 1) comm += t->comm * L / lam;      // Ulysses all-to-all
    if (c.k > 1) comm += 2 * t->comm * L / lam;  // ring passes
    if (c.q > 1) comm += 3 * t->comm * L / lam;  // all-gather
    if (n > 1) comm += t->lat;
    out->time = t->a * L * L / lam + t->b * L / lam + comm;
    out->mem = t->c * L / lam + (c.q > 1 ? t->c * L / 2 : 0);
    return ZG_OK;
}

static inline zg_comm_bytes tp_comm(const zg_pricer *p, const zg_seq *s, zg_config c) {
    (void)p;
    zg_comm_bytes b = {0, 0, 0};
    double L = (double)s->tokens;
    if (c.h > 1) b.alltoall = 10 * L;
    if (c.k > 1) b.ring = 20 * L;
    if (c.q > 1) b.allgather = 30 * L;
    return b;
}

// world ranks, per_node of them per node, 1 TB each (the test pricer ignores the rest).
static inline zg_cluster test_cluster(int32_t world, int32_t per_node) {
    zg_cluster c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "test%d", world);
    snprintf(c.device, sizeof c.device, "cpu");
    c.world_size = world;
    c.ranks_per_node = per_node;
    c.mem_bytes = 1e12;
    c.mem_usable_frac = 1;
    c.peak_flops = 1e12;
    c.intra_bw = c.inter_bw = 1e9;
    return c;
}

// The tiny model (4 heads) on test_cluster(world, per_node), priced by the test pricer
// {1e-6, 1e-3, 1, 1e-4, no latency} (f->t: change it in place) with memory cap `cap` and 100 B
// base memory; an empty batch f->b (free with zg_batch_free).
typedef struct fixture {
    zg_model m;
    zg_cluster c;
    tp t;
    zg_pricer p;
    zg_plan_ctx ctx;
    zg_batch b;
} fixture;

// Sets what placements may use per rank on top of the base (the memory cap = base + room).
static inline void fx_set_room(fixture *f, double room) {
    f->p.mem_cap = f->p.mem_base + room;
}

static inline void fx_init(fixture *f, int32_t world, int32_t per_node, double cap) {
    zg_error err;
    memset(f, 0, sizeof *f);
    zg_model_preset("tiny", &f->m, &err);
    f->c = test_cluster(world, per_node);
    f->t = (tp){1e-6, 1e-3, 1.0, 1e-4, 0};
    f->p.kind = "test";
    f->p.impl = &f->t;
    f->p.price = tp_price;
    f->p.comm = tp_comm;
    f->p.mem_base = 100;
    f->p.mem_cap = 100 + cap;  // `cap`: what placements may use on top of the base
    f->ctx.model = &f->m;
    f->ctx.cluster = &f->c;
    f->ctx.pricer = &f->p;
    zg_planner_opts_default(&f->ctx.opts);
    zg_batch_init(&f->b);
}

// Appends a sequence of `tokens` (bucket NULL: none), id = its index.
static inline void fx_push(fixture *f, int64_t tokens, const char *bucket) {
    zg_seq s;
    zg_seq_init(&s);
    s.id = f->b.n;
    s.tokens = tokens;
    if (bucket) snprintf(s.bucket, sizeof s.bucket, "%s", bucket);
    zg_error err;
    zg_batch_push(&f->b, &s, &err);
}

// FX_TEST(name, world, cap) { body }: a test case on a fixture f (a pointer in the body; its
// batch freed after the body, also when a check fails) of `world` ranks on one node, memory cap
// `cap`. Needs zgtest.h.
#define FX_TEST(name, world, cap)                       \
    static void name##_on(fixture *f, int *zg_failed_); \
    ZG_TEST(name) {                                     \
        fixture f;                                      \
        fx_init(&f, world, world, cap);                 \
        name##_on(&f, zg_failed_);                      \
        zg_batch_free(&f.b);                            \
    }                                                   \
    static void name##_on(fixture *f, int *zg_failed_)

#endif
