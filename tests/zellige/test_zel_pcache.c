// test_zg_option_cache.c — the exact path's cross-step option cache (zg_option_cache.c): problems built
// through it are identical (every byte) to uncached ones, so are the two-stage plans; it resets
// when the memory cap, family, max degree, cluster or pricer (also in place) change; eviction
// under a byte budget and an infeasible batch leave it usable.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../zgtest.h"
#include "zellige/internal.h"
#include "plan/plan.h"
#include "planner/planner.h"
#include "zel_env.h"

// Step `step` of mix `name` at tpr tokens per rank (10 s videos, seed 1); 0 on success.
static int mix(const env *e, const char *name, int64_t tpr, uint64_t step, zg_batch *b,
               zg_error *err) {
    return env_batch(e, zg_mix_share_from_name(name), tpr, 10, 1, step, b, err) != ZG_OK;
}

static int same_problem(const zg_problem *a, const zg_problem *b) {
    if (a->world_size != b->world_size || a->n_seqs != b->n_seqs || a->n_groups != b->n_groups ||
        memcmp(&a->mem_room, &b->mem_room, sizeof(double)) ||
        memcmp(&a->mem_base, &b->mem_base, sizeof(double)))
        return 0;
    if (a->n_seqs && memcmp(a->group_of, b->group_of, sizeof(int32_t) * (size_t)a->n_seqs))
        return 0;
    for (int32_t g = 0; g < a->n_groups; g++) {
        const zg_group *x = &a->groups[g], *y = &b->groups[g];
        if (x->tokens != y->tokens || strcmp(x->bucket, y->bucket) || x->count != y->count ||
            x->n_opts != y->n_opts || memcmp(&x->whole_time, &y->whole_time, sizeof(double)) ||
            memcmp(&x->whole_mem, &y->whole_mem, sizeof(double)) ||
            memcmp(x->members, y->members, sizeof(int64_t) * (size_t)x->count) ||
            (x->n_opts && memcmp(x->opts, y->opts, sizeof(zg_option) * (size_t)x->n_opts)))
            return 0;
    }
    return 1;
}

// Builds b with and without the cache; 1 if both fail alike or give the same problem.
// *hits / *misses: this build's cache counters.
static int same_build(const env *e, const zg_batch *b, zg_option_cache *c, int64_t *hits,
                      int64_t *misses) {
    zg_option_cache_stats s0 = zg_option_cache_get_stats(c);
    zg_problem p, q;
    zg_error e1, e2;
    zg_status r1 = zg_problem_build(&e->ctx, b, &p, &e1);
    zg_status r2 = zg_problem_build_cached(&e->ctx, b, c, &q, &e2);
    zg_option_cache_stats s1 = zg_option_cache_get_stats(c);
    if (hits) *hits = s1.hits - s0.hits;
    if (misses) *misses = s1.misses - s0.misses;
    int ok = r1 == r2 && (r1 ? !strcmp(e1.msg, e2.msg) : same_problem(&p, &q));
    if (!r1) zg_problem_free(&p);
    if (!r2) zg_problem_free(&q);
    return ok;
}

ZG_TEST(pcache_same_problems_and_plans) {
    const char *clusters[] = {"8xA800", "16xA800"}, *mixes[] = {"V35", "V60"};
    const int64_t loads[] = {350000, 125000};
    zg_error err;
    for (int c = 0; c < 2; c++) {
        env e;
        CHECK(!env_init(&e, clusters[c], &err));
        zg_option_cache *cache = zg_option_cache_new();
        CHECK(cache != NULL);
        int64_t hits_total = 0;
        for (int x = 0; x < 2; x++)
            for (int l = 0; l < 2; l++) {
                zel_warm *w1 = zel_warm_new(), *w2 = zel_warm_new();
                for (uint64_t s = 0; s < 3; s++) {
                    zg_batch b;
                    CHECK(!mix(&e, mixes[x], loads[l], s, &b, &err));
                    int64_t h, mi;
                    CHECK(same_build(&e, &b, cache, &h, &mi));
                    hits_total += h;
                    CHECK(same_build(&e, &b, cache, &h, &mi)); // the same batch again: all hits
                    CHECK(mi == 0 && h > 0);
                    // the two-stage plans, warm-started over the steps, with and without
                    zg_problem p, q;
                    CHECK_OK(zg_problem_build(&e.ctx, &b, &p, &err), &err);
                    CHECK_OK(zg_problem_build_cached(&e.ctx, &b, cache, &q, &err), &err);
                    zel_result r1, r2;
                    CHECK_OK(zel_two_stage(&e.ctx, &p, &b, w1, &r1, &err), &err);
                    CHECK_OK(zel_two_stage(&e.ctx, &q, &b, w2, &r2, &err), &err);
                    zg_plan a, z;
                    zg_plan_init(&a), zg_plan_init(&z);
                    CHECK_OK(zel_decode(&p, &b, r1.choice, "zellige", &a, &err), &err);
                    CHECK_OK(zel_decode(&q, &b, r2.choice, "zellige", &z, &err), &err);
                    CHECK(plan_texts_equal(&a, &z));
                    zg_plan_free(&a), zg_plan_free(&z);
                    free(r1.choice), free(r2.choice);
                    zg_problem_free(&p), zg_problem_free(&q);
                    zg_batch_free(&b);
                }
                zel_warm_free(w1), zel_warm_free(w2);
            }
        CHECK(hits_total > 0); // later steps reuse shapes
        CHECK_EQ_INT(zg_option_cache_get_stats(cache).resets, 0);
        zg_option_cache_free(cache);
        zg_pricer_free(&e.pricer);
    }
}

ENV_TEST(pcache_policy_plans_match_uncached, "8xA800") {
    // `--policy zellige` keeps the cache in its state: its plans equal uncached two-stage plans
    zg_error err;
    zg_planner pl;
    CHECK_OK(zg_planner_init(&pl, "zellige", &e->ctx, &err), &err);
    zel_warm *w = zel_warm_new();
    for (uint64_t s = 0; s < 4; s++) {
        zg_batch b;
        CHECK(!mix(e, "V45", 350000, s, &b, &err));
        zg_plan a, z;
        zg_plan_init(&a), zg_plan_init(&z);
        CHECK_OK(zg_planner_plan(&pl, &b, &a, &err), &err);
        zg_problem p;
        CHECK_OK(zg_problem_build(&e->ctx, &b, &p, &err), &err);
        zel_result r;
        CHECK_OK(zel_two_stage(&e->ctx, &p, &b, w, &r, &err), &err);
        CHECK_OK(zel_decode(&p, &b, r.choice, "zellige", &z, &err), &err);
        CHECK_EQ_INT(a.n, z.n);
        int same = 1;
        for (int64_t i = 0; i < a.n && same; i++)
            same = zg_config_eq(a.p[i].config, z.p[i].config) && a.p[i].n_ranks == z.p[i].n_ranks &&
                   !memcmp(a.p[i].ranks, z.p[i].ranks, sizeof(int32_t) * (size_t)a.p[i].n_ranks);
        CHECK(same);
        CHECK(!memcmp(&a.makespan, &z.makespan, sizeof(double)));
        free(r.choice);
        zg_problem_free(&p);
        zg_plan_free(&a), zg_plan_free(&z);
        zg_batch_free(&b);
    }
    zel_warm_free(w);
    zg_planner_free(&pl);
}

ENV_TEST(pcache_resets_on_changes, "16xA800") {
    zg_error err;
    zg_option_cache *c = zg_option_cache_new();
    zg_batch b;
    CHECK(!mix(e, "V50", 125000, 0, &b, &err));
    int64_t h, mi;
    CHECK(same_build(e, &b, c, &h, &mi));
    CHECK(mi > 0);
    CHECK(same_build(e, &b, c, &h, &mi));
    CHECK(h > 0 && mi == 0);
    int64_t r = zg_option_cache_get_stats(c).resets;
    // the next build: the same problem as uncached, no hits, one more reset
#define EXPECT_RESET()                                                       \
    do {                                                                     \
        CHECK(same_build(e, &b, c, &h, &mi));                                \
        CHECK(h == 0 && zg_option_cache_get_stats(c).resets == ++r);         \
    } while (0)
    // memory cap
    double cap = e->pricer.mem_cap;
    e->pricer.mem_cap = cap * 0.9;
    CHECK(same_build(e, &b, c, &h, &mi));
    CHECK(h == 0 && mi > 0);
    CHECK(zg_option_cache_get_stats(c).resets == ++r);
    e->pricer.mem_cap = cap;
    EXPECT_RESET();
    // family, max degree, exact rank prices
    e->ctx.opts.family = ZG_RANKSETS_ALIGNED;
    EXPECT_RESET();
    e->ctx.opts.family = ZG_RANKSETS_NODE;
    e->ctx.opts.max_degree = 4;
    EXPECT_RESET();
    e->ctx.opts.max_degree = 0;
    EXPECT_RESET();
    e->ctx.opts.exact_rank_prices = 1;
    EXPECT_RESET();
    e->ctx.opts.exact_rank_prices = 0;
    EXPECT_RESET();
    // a pricer changed in place: only the re-priced whole option / probe can see it
    scaled sc = {&e->pricer, 1.0, 1.0, 1.0};
    zg_pricer wrap = wrap_pricer(&e->pricer, &sc, scaled_price);
    e->ctx.pricer = &wrap;
    CHECK(same_build(e, &b, c, &h, &mi));
    CHECK(same_build(e, &b, c, &h, &mi));
    CHECK(h > 0 && mi == 0);
    r = zg_option_cache_get_stats(c).resets;
    sc.split_scale = 1.1; // whole prices unchanged: the split probe sees it
    CHECK(same_build(e, &b, c, &h, &mi));
    CHECK(h == 0 && mi > 0);
    CHECK(zg_option_cache_get_stats(c).resets == ++r);
    sc.time_scale = 1.25;
    EXPECT_RESET();
    sc.mem_scale = 0.5;
    EXPECT_RESET();
    e->ctx.pricer = &e->pricer;
    // another cluster through the same cache, then back
    env e2;
    CHECK(!env_init(&e2, "8xA800", &err));
    zg_batch b2;
    CHECK(!mix(&e2, "V50", 125000, 0, &b2, &err));
    CHECK(same_build(&e2, &b2, c, &h, &mi));
    CHECK(h == 0);
    CHECK(same_build(e, &b, c, &h, &mi));
    CHECK(h == 0);
    // explicit clear
    zg_option_cache_clear(c);
    CHECK_EQ_INT(zg_option_cache_get_stats(c).n_entries, 0);
    CHECK(same_build(e, &b, c, &h, &mi));
    CHECK(h == 0 && mi > 0);
    zg_batch_free(&b), zg_batch_free(&b2);
    zg_option_cache_free(c);
    zg_pricer_free(&e2.pricer);
#undef EXPECT_RESET
}

ENV_TEST(pcache_budget_infeasible_bad_input, "8xA800") {
    zg_error err;
    zg_option_cache *c = zg_option_cache_new();
    zg_option_cache_set_budget(c, 1); // every build evicts what earlier builds left
    for (uint64_t s = 0; s < 3; s++) {
        zg_batch b;
        CHECK(!mix(e, "V40", 350000, s, &b, &err));
        int64_t h, mi;
        CHECK(same_build(e, &b, c, &h, &mi));
        CHECK(same_build(e, &b, c, &h, &mi)); // evicted at the start of this build
        CHECK(h == 0 && mi > 0);
        zg_batch_free(&b);
    }
    CHECK(zg_option_cache_get_stats(c).evictions > 0);
    zg_option_cache_set_budget(c, (size_t)64 << 20);
    // an infeasible batch: same error, and the cache stays usable
    zg_batch b;
    CHECK(!mix(e, "V60", 350000, 0, &b, &err));
    double cap = e->pricer.mem_cap;
    e->pricer.mem_cap = 1e6;
    int64_t h, mi;
    CHECK(same_build(e, &b, c, &h, &mi));
    zg_problem p;
    CHECK(zg_problem_build_cached(&e->ctx, &b, c, &p, &err) == ZG_ERR_INFEASIBLE);
    e->pricer.mem_cap = cap;
    CHECK(same_build(e, &b, c, &h, &mi));
    CHECK(same_build(e, &b, c, &h, &mi));
    CHECK(h > 0 && mi == 0);
    // bad input: no context
    zg_plan_ctx bad = e->ctx;
    bad.pricer = NULL;
    CHECK(zg_problem_build_cached(&bad, &b, c, &p, &err) == ZG_ERR_INVALID);
    CHECK(zg_option_cache_begin(NULL, &e->ctx, &err) == ZG_ERR_INVALID);
    zg_batch_free(&b);
    zg_option_cache_free(c);
    zg_option_cache_free(NULL);
}

ENV_TEST(problem_groups_by_price_key, "8xA800") {
    // the build groups by hashing the price keys: every sequence of a key lands in one group,
    // members ascend, counts add up (also with keys interleaved in batch order)
    zg_error err;
    zg_batch b;
    CHECK(!mix(e, "V50", 350000, 2, &b, &err));
    for (int64_t i = 0; i + 1 < b.n; i += 2) { // interleave: swap neighbours
        zg_seq t = b.seqs[i];
        b.seqs[i] = b.seqs[i + 1], b.seqs[i + 1] = t;
    }
    zg_problem p;
    CHECK_OK(zg_problem_build(&e->ctx, &b, &p, &err), &err);
    int64_t total = 0;
    int ok = 1;
    for (int32_t g = 0; g < p.n_groups; g++) {
        total += p.groups[g].count;
        for (int64_t m = 1; m < p.groups[g].count; m++)
            ok &= p.groups[g].members[m - 1] < p.groups[g].members[m];
    }
    CHECK(ok);
    CHECK_EQ_INT(total, b.n);
    for (int64_t i = 0; i < b.n && ok; i++)
        for (int64_t j = i + 1; j < b.n && ok; j++) {
            const zg_seq *x = &b.seqs[i], *y = &b.seqs[j];
            int same = x->tokens == y->tokens && x->kind == y->kind && x->frames == y->frames &&
                       x->height == y->height && x->width == y->width &&
                       x->text_tokens == y->text_tokens && !strcmp(x->bucket, y->bucket);
            if (same) ok = p.group_of[i] == p.group_of[j];
        }
    CHECK(ok);
    zg_problem_free(&p);
    zg_batch_free(&b);
}

ZG_TEST_MAIN()
