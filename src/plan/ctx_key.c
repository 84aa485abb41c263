// plan/ctx_key.c — the context fingerprint shared by the planner's cross-step caches
// (plan/plan.h says what it covers and why).
#include <stddef.h>
#include <string.h>

#include "plan/plan.h"

static int same_model(const zg_model *a, const zg_model *b) {
    return !strncmp(a->name, b->name, sizeof a->name) &&
           !memcmp(&a->arch, &b->arch, sizeof *a - offsetof(zg_model, arch));
}

static int same_cluster(const zg_cluster *a, const zg_cluster *b) {
    return !strncmp(a->name, b->name, sizeof a->name) &&
           !strncmp(a->device, b->device, sizeof a->device) &&
           !memcmp(&a->world_size, &b->world_size, sizeof *a - offsetof(zg_cluster, world_size));
}

void zg_plan_ctx_key_set(zg_plan_ctx_key *k, const zg_plan_ctx *ctx) {
    const zg_pricer *p = ctx->pricer;
    k->model = *ctx->model;
    k->cluster = *ctx->cluster;
    k->pricer = p;
    k->kind = p->kind;
    k->impl = p->impl;
    k->price = p->price;
    k->price_block = p->price_block;
    k->block_for = p->block_for;
    k->mem_cap = p->mem_cap;
    k->mem_room = zg_pricer_mem_room(p);
    k->mem_base = p->mem_base;
    k->family = ctx->opts.family;
    k->max_degree = zg_plan_ctx_max_degree(ctx);
    k->exact_rank_prices = ctx->opts.exact_rank_prices;
    k->valid = 1;
}

int zg_plan_ctx_key_same(const zg_plan_ctx_key *k, const zg_plan_ctx *ctx) {
    const zg_pricer *p = ctx->pricer;
    // memcmp on the doubles: a NaN cap must not make the key always differ from itself
    return k->valid && k->pricer == p && k->kind == p->kind && k->impl == p->impl &&
           k->price == p->price && k->price_block == p->price_block &&
           k->block_for == p->block_for && !memcmp(&k->mem_cap, &p->mem_cap, sizeof(double)) &&
           !memcmp(&k->mem_base, &p->mem_base, sizeof(double)) &&
           k->family == ctx->opts.family && k->max_degree == zg_plan_ctx_max_degree(ctx) &&
           k->exact_rank_prices == ctx->opts.exact_rank_prices &&
           same_model(&k->model, ctx->model) && same_cluster(&k->cluster, ctx->cluster);
}
