// test_plan_core.c — rank-set families, options, the grouped problem, plans (set, JSON,
// validator, evaluator), the planner object (timing, fallback) and fuzz-crash replays.
// Uses the closed-form test pricer of plan_testlib.h so values can be asserted exactly.
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"
#include "plan_testlib.h"
#include "planner/planner.h"
#include "zgtest.h"

static int starts_eq(const int32_t *got, int32_t n, const int32_t *want, int32_t wn) {
    if (n != wn) return 0;
    for (int32_t i = 0; i < n; i++)
        if (got[i] != want[i]) return 0;
    return 1;
}

// ---------------------------------------------------------------------------------------------

ZG_TEST(rankset_families) {
    zg_cluster c = test_cluster(8, 4);
    int32_t s[8];
    int32_t n = zg_rankset_starts(&c, ZG_RANKSETS_ALIGNED, 3, s);
    CHECK(starts_eq(s, n, (int32_t[]){0, 3}, 2));
    n = zg_rankset_starts(&c, ZG_RANKSETS_ALIGNED, 2, s);
    CHECK(starts_eq(s, n, (int32_t[]){0, 2, 4, 6}, 4));
    n = zg_rankset_starts(&c, ZG_RANKSETS_NODE, 2, s);  // aligned + in-node 1, 5
    CHECK(starts_eq(s, n, (int32_t[]){0, 1, 2, 4, 5, 6}, 6));
    n = zg_rankset_starts(&c, ZG_RANKSETS_NODE, 3, s);  // aligned 0,3 + in-node 0,1,4,5
    CHECK(starts_eq(s, n, (int32_t[]){0, 1, 3, 4, 5}, 5));
    n = zg_rankset_starts(&c, ZG_RANKSETS_NODE, 4, s);
    CHECK(starts_eq(s, n, (int32_t[]){0, 4}, 2));
    n = zg_rankset_starts(&c, ZG_RANKSETS_NODE, 6, s);
    CHECK(starts_eq(s, n, (int32_t[]){0}, 1));
    n = zg_rankset_starts(&c, ZG_RANKSETS_SLIDING, 3, s);
    CHECK(starts_eq(s, n, (int32_t[]){0, 1, 2, 3, 4, 5}, 6));
    CHECK_EQ_INT(zg_rankset_starts(&c, ZG_RANKSETS_SLIDING, 9, s), 0);
    CHECK_EQ_INT(zg_rankset_starts(&c, ZG_RANKSETS_SLIDING, 8, s), 1);
    zg_rankset_family f;
    zg_error err;
    CHECK_OK(zg_rankset_family_parse("sliding", &f, &err), &err);
    CHECK(f == ZG_RANKSETS_SLIDING);
    CHECK_STR(zg_rankset_family_name(ZG_RANKSETS_NODE), "node");
    CHECK(zg_rankset_family_parse("ring", &f, &err) == ZG_ERR_INVALID);
    CHECK(strstr(err.msg, "'ring'") != NULL);
}

FX_TEST(options_enumerate_order_and_cap, 4, 1e9) {
    f->ctx.opts.family = ZG_RANKSETS_ALIGNED;
    zg_seq s;
    zg_seq_init(&s);
    s.id = 7;
    s.tokens = 1000;
    zg_option *o = NULL;
    int32_t n = 0;
    zg_error err;
    CHECK_OK(zg_options_enumerate(&f->ctx, &s, &o, &n, &err), &err);
    // tiny has 4 heads: degree 1: (1,1,1) x4 starts; degree 2: (1,2,1),(1,1,2),(2,1,1) x2;
    // degree 3: (1,1,3),(3,1,1) x1; degree 4: 6 configs x1 -> 4 + 6 + 2 + 6 = 18
    CHECK_EQ_INT(n, 18);
    CHECK(zg_config_is_whole(o[0].config) && o[0].start == 0 && o[3].start == 3);
    CHECK_EQ_INT(zg_option_degree(&o[4]), 2);
    CHECK_EQ_INT(zg_option_degree(&o[17]), 4);
    CHECK_NEAR(o[0].time, 1e-6 * 1e6 + 1e-3 * 1000, 1e-12, 1e-12);
    CHECK_NEAR(o[0].mem, 1000, 0, 0);
    for (int32_t i = 1; i < n; i++) CHECK(zg_option_degree(&o[i]) >= zg_option_degree(&o[i - 1]));
    free(o);
    // cap 300 bytes: only degree >= 4 fits (1000/4 = 250) and not with q > 1 (+500)
    fx_set_room(f, 300);
    CHECK_OK(zg_options_enumerate(&f->ctx, &s, &o, &n, &err), &err);
    for (int32_t i = 0; i < n; i++) {
        CHECK_EQ_INT(zg_option_degree(&o[i]), 4);
        CHECK_EQ_INT(o[i].config.q, 1);
    }
    CHECK_EQ_INT(n, 3);  // (1,4,1) (1,2,2) (1,1,4), in (q, k, h) order: k = 1, 2, 4
    CHECK_EQ_INT(o[0].config.k, 1);
    CHECK_EQ_INT(o[2].config.k, 4);
    free(o);
    // a 2-token sequence has no degree-3/4 option
    s.tokens = 2;
    fx_set_room(f, 1e9);
    CHECK_OK(zg_options_enumerate(&f->ctx, &s, &o, &n, &err), &err);
    CHECK_EQ_INT(n, 4 + 6);
    free(o);
    // max_degree
    f->ctx.opts.max_degree = 1;
    s.tokens = 1000;
    CHECK_OK(zg_options_enumerate(&f->ctx, &s, &o, &n, &err), &err);
    CHECK_EQ_INT(n, 4);
    free(o);
}

// Reusing a price for blocks shifted by whole nodes must give the same options as pricing
// every block, under the analytic model on two nodes.
ZG_TEST(options_node_shift_reuse_matches_exact) {
    env e;
    zg_error err;
    CHECK_OK(env_init_model(&e, "wan2.1-1.3b", "16xA800", &err), &err);
    zg_plan_ctx ctx = e.ctx;
    zg_seq s;
    zg_seq_init(&s);
    s.tokens = 200000;
    zg_option *a = NULL, *b = NULL;
    int32_t na = 0, nb = 0;
    for (int f = 0; f < 3; f++) {
        ctx.opts.family = (zg_rankset_family)f;
        ctx.opts.exact_rank_prices = 0;
        CHECK_OK(zg_options_enumerate(&ctx, &s, &a, &na, &err), &err);
        ctx.opts.exact_rank_prices = 1;
        CHECK_OK(zg_options_enumerate(&ctx, &s, &b, &nb, &err), &err);
        CHECK_EQ_INT(na, nb);
        CHECK(na > 100);
        CHECK(memcmp(a, b, (size_t)na * sizeof *a) == 0);
        free(a);
        free(b);
    }
    zg_pricer_free(&e.pricer);
}

FX_TEST(price_classes, 2, 1e9) {
    fx_push(f, 100, "a");  // 0
    fx_push(f, 50, "a");   // 1
    fx_push(f, 100, "a");  // 2 = class of 0
    fx_push(f, 100, "b");  // 3: other bucket
    fx_push(f, 50, "a");   // 4 = class of 1
    f->b.seqs[4].text_tokens = 7;  // ... but different text: own class
    int32_t cls[5], n = -1;
    zg_error err;
    CHECK_OK(zg_batch_price_classes(&f->b, cls, &n, &err), &err);
    CHECK_EQ_INT(n, 4);
    CHECK(cls[0] == 0 && cls[1] == 1 && cls[2] == 0 && cls[3] == 2 && cls[4] == 3);
}

FX_TEST(problem_groups_and_order, 4, 1e9) {
    f->ctx.opts.family = ZG_RANKSETS_ALIGNED;
    fx_push(f, 100, "img");   // 0
    fx_push(f, 5000, "vid");  // 1
    fx_push(f, 100, "img");   // 2
    fx_push(f, 100, "other"); // 3: same tokens, other bucket -> own group
    fx_push(f, 5000, "vid");  // 4
    fx_push(f, 100, "img");   // 5
    zg_problem pr;
    zg_error err;
    CHECK_OK(zg_problem_build(&f->ctx, &f->b, &pr, &err), &err);
    CHECK_EQ_INT(pr.n_groups, 3);
    CHECK_EQ_INT(pr.world_size, 4);
    CHECK_EQ_INT(pr.n_seqs, 6);
    CHECK_EQ_INT(pr.groups[0].tokens, 5000);  // most expensive first
    CHECK_EQ_INT(pr.groups[0].count, 2);
    CHECK_EQ_INT(pr.groups[0].members[0], 1);
    CHECK_EQ_INT(pr.groups[0].members[1], 4);
    // equal whole price and tokens: ordered by first member (0 < 3)
    CHECK_EQ_INT(pr.groups[1].count, 3);
    CHECK_STR(pr.groups[1].bucket, "img");
    CHECK_EQ_INT(pr.groups[1].members[2], 5);
    CHECK_STR(pr.groups[2].bucket, "other");
    CHECK_EQ_INT(pr.group_of[3], 2);
    CHECK_EQ_INT(pr.group_of[4], 0);
    CHECK_NEAR(pr.groups[0].whole_time, 1e-6 * 25e6 + 1e-3 * 5000, 0, 1e-12);
    CHECK_EQ_INT(pr.groups[0].n_opts, 18);
    cJSON *j = zg_problem_to_json(&pr);
    CHECK(j != NULL);
    cJSON *g0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "groups"), 0);
    CHECK_EQ_INT(cJSON_GetObjectItem(g0, "count")->valueint, 2);
    cJSON *o17 = cJSON_GetArrayItem(cJSON_GetObjectItem(g0, "options"), 17);
    CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(o17, "ranks")), 4);
    CHECK_NEAR(cJSON_GetObjectItem(j, "mem_cap")->valuedouble, 100 + 1e9, 0, 0);  // base + room
    CHECK_NEAR(cJSON_GetObjectItem(j, "mem_base")->valuedouble, 100, 0, 0);
    cJSON_Delete(j);
    zg_problem_free(&pr);
}

FX_TEST(problem_infeasible_names_sequence, 4, 1000) {
    for (int i = 0; i < 17; i++) fx_push(f, 100, NULL);
    fx_push(f, 497760, NULL);  // id 17: needs 497760/4 bytes at best
    fx_push(f, 600000, NULL);
    zg_problem pr;
    zg_error err;
    CHECK(zg_problem_build(&f->ctx, &f->b, &pr, &err) == ZG_ERR_INFEASIBLE);
    CHECK_MSG(strstr(err.msg, "sequence 17 (497760 tokens) fits no option") != NULL, "%s",
              err.msg);
    CHECK_MSG(strstr(err.msg, "needs 121.6 KiB (121.5 KiB + base 100 B) on one rank") != NULL,
              "%s", err.msg);
    CHECK_MSG(strstr(err.msg, "cap 1.1 KiB") != NULL, "%s", err.msg);  // 100 B base + 1000 B
    CHECK_MSG(strstr(err.msg, "degree 4 is the largest legal") != NULL, "%s", err.msg);
    CHECK(pr.n_groups == 0 && pr.groups == NULL);
    zg_problem_free(&pr);
}

FX_TEST(problem_empty_batch_and_bad_tokens, 2, 1e9) {
    zg_problem pr;
    zg_error err;
    CHECK_OK(zg_problem_build(&f->ctx, &f->b, &pr, &err), &err);
    CHECK_EQ_INT(pr.n_groups, 0);
    zg_problem_free(&pr);
    fx_push(f, 10, NULL);
    f->b.seqs[0].tokens = 0;
    CHECK(zg_problem_build(&f->ctx, &f->b, &pr, &err) == ZG_ERR_INVALID);
    CHECK(strstr(err.msg, "0 tokens") != NULL);
}

FX_TEST(plan_set_option_chunks, 8, 1e9) {
    fx_push(f, 10, NULL);
    zg_plan p;
    zg_plan_init(&p);
    zg_error err;
    CHECK_OK(zg_plan_alloc(&p, 1, 8, &err), &err);
    zg_option o = {{1, 1, 3}, 4, 2.5, 7};
    CHECK_OK(zg_plan_set_option(&p, 0, &f->b.seqs[0], 0, &o, &err), &err);
    const zg_placement *pl = &p.p[0];
    CHECK_EQ_INT(pl->n_ranks, 3);
    CHECK_EQ_INT(pl->ranks[0], 4);
    CHECK_EQ_INT(pl->ranks[2], 6);
    CHECK_EQ_INT(pl->shards[0].end, 4);  // 10 = 4 + 3 + 3
    CHECK_EQ_INT(pl->shards[1].start, 4);
    CHECK_EQ_INT(pl->shards[1].end, 7);
    CHECK_EQ_INT(pl->shards[2].end, 10);
    CHECK_EQ_INT(pl->shards[2].rank, 6);
    zg_option bad = {{1, 1, 3}, 6, 0, 0};  // 6..8 out of range
    CHECK(zg_plan_set_option(&p, 0, &f->b.seqs[0], 0, &bad, &err) == ZG_ERR_INVALID);
    int32_t ranks[2] = {5, 1};
    int64_t lens[2] = {9, 1};
    CHECK_OK(zg_plan_set_ranks(&p, 0, &f->b.seqs[0], 0, (zg_config){1, 2, 1}, ranks, lens, 2, &err),
             &err);
    CHECK_EQ_INT(p.p[0].shards[1].start, 9);
    CHECK_EQ_INT(p.p[0].shards[1].rank, 1);
    lens[1] = 2;
    CHECK(zg_plan_set_ranks(&p, 0, &f->b.seqs[0], 0, (zg_config){1, 2, 1}, ranks, lens, 2, &err) ==
          ZG_ERR_INVALID);
    zg_plan_free(&p);
}

// A valid 2-sequence plan on 4 ranks to break in the validator tests.
static void good_plan(fixture *f, zg_plan *p) {
    zg_error err;
    fx_init(f, 4, 4, 1e9);
    fx_push(f, 100, NULL);
    fx_push(f, 10, NULL);
    zg_plan_init(p);
    zg_plan_alloc(p, 2, 4, &err);
    zg_option o0 = {{1, 2, 1}, 0, 1, 50};
    zg_option o1 = {{1, 1, 1}, 3, 1, 10};
    zg_plan_set_option(p, 0, &f->b.seqs[0], 0, &o0, &err);
    zg_plan_set_option(p, 1, &f->b.seqs[1], 1, &o1, &err);
    p->mem_cap = 100;
}

#define EXPECT_INVALID(fragment)                                                          \
    do {                                                                                  \
        zg_error e_;                                                                      \
        CHECK(zg_plan_validate(p, &f->b, &f->m, &e_) == ZG_ERR_INVALID);                  \
        CHECK_MSG(strstr(e_.msg, fragment) != NULL, "message \"%s\" lacks \"%s\"", e_.msg, \
                  fragment);                                                              \
    } while (0)

// A case on good_plan's fixture f and plan p (pointers in the body; both freed after it, also
// when a check fails).
#define GOOD_PLAN_TEST(name)                                        \
    static void name##_on(fixture *f, zg_plan *p, int *zg_failed_); \
    ZG_TEST(name) {                                                 \
        fixture f;                                                  \
        zg_plan p;                                                  \
        good_plan(&f, &p);                                          \
        name##_on(&f, &p, zg_failed_);                              \
        zg_plan_free(&p);                                           \
        zg_batch_free(&f.b);                                        \
    }                                                               \
    static void name##_on(fixture *f, zg_plan *p, int *zg_failed_)

GOOD_PLAN_TEST(validate_accepts_good_plan) {
    zg_error err;
    CHECK_OK(zg_plan_validate(p, &f->b, &f->m, &err), &err);
}

GOOD_PLAN_TEST(validate_rejects_uncovered_tokens) {
    p->p[0].shards[1].end = 99;
    EXPECT_INVALID("tokens 99..100 are not covered");
    p->p[0].shards[1].end = 100;
    p->p[0].shards[1].start = 52;
    EXPECT_INVALID("tokens 50..52 are not covered");
}

GOOD_PLAN_TEST(validate_rejects_tokens_covered_twice) {
    p->p[0].shards[1].start = 40;
    EXPECT_INVALID("covered twice");
}

GOOD_PLAN_TEST(validate_rejects_out_of_order_shards) {
    p->p[0].shards[0] = (zg_shard){0, 50, 100};
    p->p[0].shards[1] = (zg_shard){1, 0, 50};
    EXPECT_INVALID("out of order");
}

GOOD_PLAN_TEST(validate_rejects_illegal_config) {
    p->p[0].config = (zg_config){1, 3, 1};  // 3 does not divide tiny's 4 heads
    EXPECT_INVALID("does not divide");
    p->p[0].config = (zg_config){1, 8, 1};  // degree 8 > 4 ranks
    EXPECT_INVALID("not legal on 4 ranks");
    p->p[0].config = (zg_config){1, 1, 1};  // degree 1 but 2 ranks listed
    EXPECT_INVALID("2 ranks listed");
}

GOOD_PLAN_TEST(validate_rejects_bad_ranks) {
    p->p[0].ranks[1] = 0;
    p->p[0].shards[1].rank = 0;
    EXPECT_INVALID("rank 0 listed twice");
    p->p[0].ranks[1] = 4;
    p->p[0].shards[1].rank = 4;
    EXPECT_INVALID("rank 4 out of range");
    p->p[0].ranks[1] = -1;
    EXPECT_INVALID("rank -1 out of range");
}

GOOD_PLAN_TEST(validate_rejects_shard_rank_not_in_list) {
    p->p[0].shards[1].rank = 2;
    EXPECT_INVALID("not in its rank list");
    p->p[0].shards[1].rank = 0;  // in the list, wrong position
    EXPECT_INVALID("position 1 of the rank list is rank 1");
}

GOOD_PLAN_TEST(validate_rejects_memory_over_cap) {
    p->p[0].mem = 95;  // rank 0/1: 95 ok
    zg_error err;
    CHECK_OK(zg_plan_validate(p, &f->b, &f->m, &err), &err);
    p->p[1].ranks[0] = p->p[1].shards[0].rank = 1;  // rank 1: 95 + 10 > 100
    EXPECT_INVALID("rank 1 needs 105 B");
    EXPECT_INVALID("(largest: sequence 0)");
    p->mem_cap = 0;  // unknown cap: not checked
    CHECK_OK(zg_plan_validate(p, &f->b, &f->m, &err), &err);
}

GOOD_PLAN_TEST(validate_rejects_one_token_over_two_ranks) {
    f->b.seqs[1].tokens = 1;
    p->p[1].tokens = 1;
    p->p[1].config = (zg_config){1, 2, 1};
    p->p[1].n_ranks = 2;
    p->p[1].ranks = zg_arena_alloc(&p->arena, 2 * sizeof(int32_t));
    p->p[1].shards = zg_arena_alloc(&p->arena, 2 * sizeof(zg_shard));
    p->p[1].ranks[0] = 2;
    p->p[1].ranks[1] = 3;
    p->p[1].shards[0] = (zg_shard){2, 0, 1};
    p->p[1].shards[1] = (zg_shard){3, 1, 1};
    EXPECT_INVALID("1 tokens cannot give each of the 2 ranks");
}

GOOD_PLAN_TEST(validate_rejects_batch_mismatch) {
    p->p[1].id = 5;
    EXPECT_INVALID("placements must follow batch order");
    p->p[1].id = 1;
    p->p[1].tokens = 11;
    EXPECT_INVALID("plan says 11 tokens, batch says 10");
    p->p[1].tokens = 10;
    fx_push(f, 3, NULL);
    EXPECT_INVALID("plan places 2 sequences but the batch has 3");
}

GOOD_PLAN_TEST(evaluate_loads_and_comm) {
    zg_plan_stats st;
    zg_error err;
    CHECK_OK(zg_plan_evaluate(p, &f->b, NULL, &st, &err), &err);  // stored prices
    CHECK_NEAR(p->ranks[0].time, 1, 0, 0);
    CHECK_NEAR(p->ranks[3].time, 1, 0, 0);
    CHECK_NEAR(p->ranks[2].time, 0, 0, 0);
    CHECK_EQ_INT(p->ranks[0].tokens, 50);
    CHECK_EQ_INT(p->ranks[3].tokens, 10);
    CHECK_NEAR(st.makespan, 1, 0, 0);
    CHECK_NEAR(st.mean_time, 0.75, 0, 1e-12);
    CHECK_NEAR(st.balance, 1 / 0.75, 0, 1e-12);
    CHECK_EQ_INT(st.n_split, 1);
    // with the pricer: re-priced; seq 0 (100 tokens, (1,2,1)): 1e-6*1e4/2 + 1e-3*100/2 + 1e-4*50
    CHECK_OK(zg_plan_evaluate(p, &f->b, &f->p, &st, &err), &err);
    double t0 = 1e-6 * 1e4 / 2 + 1e-3 * 50 + 1e-4 * 50, t1 = 1e-6 * 100 + 1e-3 * 10;
    CHECK_NEAR(p->p[0].time, t0, 0, 1e-12);
    CHECK_NEAR(p->ranks[1].time, t0, 0, 1e-12);
    CHECK_NEAR(p->ranks[3].time, t1, 0, 1e-12);
    CHECK_NEAR(p->ranks[0].mem, 100 + 50, 0, 0);  // base + 100/2
    CHECK_NEAR(p->mem_cap, 100 + 1e9, 0, 0);  // the pricer's cap: base + room
    CHECK_NEAR(st.peak_mem, 150, 0, 0);
    CHECK_NEAR(st.makespan, t0, 0, 1e-12);
    CHECK_NEAR(st.comm.alltoall, 2 * 10 * 100, 0, 0);  // 2 ranks x 10 B/token x 100 tokens
    CHECK_NEAR(st.comm.ring, 0, 0, 0);
}

GOOD_PLAN_TEST(plan_json_round_trip) {
    zg_error err;
    CHECK_OK(zg_plan_evaluate(p, &f->b, &f->p, NULL, &err), &err);
    snprintf(p->policy, sizeof p->policy, "dp");
    snprintf(p->fallback_from, sizeof p->fallback_from, "zellige");
    snprintf(p->summary, sizeof p->summary, "a \"note\"\\ \t");
    p->plan_time_ms = 0.1 + 0.2;  // needs 17 digits
    p->lower_bound = 0.5;
    p->optimal = 1;
    cJSON *j = zg_plan_to_json(p);
    CHECK(j != NULL);
    char *s1 = cJSON_PrintUnformatted(j);
    CHECK(strstr(s1, "\"shards\":[{\"rank\":0,\"start\":0,\"end\":50},{\"rank\":1,\"start\":50,"
                     "\"end\":100}]") != NULL);
    CHECK(strstr(s1, "\"config\":{\"q\":1,\"h\":2,\"k\":1}") != NULL);
    zg_plan q;
    CHECK_OK(zg_plan_from_json(j, &q, &err), &err);
    CHECK_OK(zg_plan_validate(&q, &f->b, &f->m, &err), &err);
    CHECK_STR(q.fallback_from, "zellige");
    CHECK(q.optimal == 1);
    CHECK_NEAR(q.ranks[1].mem, p->ranks[1].mem, 0, 0);
    cJSON *j2 = zg_plan_to_json(&q);
    char *s2 = cJSON_PrintUnformatted(j2);
    CHECK_STR(s1, s2);
    // file round trip
    const char *path = "build-plan-test-roundtrip.tmp.json";
    CHECK_OK(zg_plan_write_file(path, p, &err), &err);
    zg_plan r;
    CHECK_OK(zg_plan_read_file(path, &r, &err), &err);
    remove(path);
    CHECK_EQ_INT(r.n, 2);
    CHECK_NEAR(r.makespan, p->makespan, 0, 0);
    cJSON *j3 = zg_plan_to_json(&r);  // the streaming writer and the cJSON tree agree
    char *s3 = cJSON_PrintUnformatted(j3);
    CHECK_STR(s3, s1);
    free(s3);
    cJSON_Delete(j3);
    zg_plan_free(&r);
    free(s1);
    free(s2);
    cJSON_Delete(j);
    cJSON_Delete(j2);
    zg_plan_free(&q);
}

// Rounds: a 3-sequence plan on 4 ranks where sequence 1 runs in round 1. Stored prices:
//   seq 0 (100 tokens, (1,2,1) on ranks 0,1): time 2, mem 60, round 0
//   seq 1 (10 tokens, whole on rank 0):        time 1, mem 60, round 1
//   seq 2 (10 tokens, whole on rank 3):        time 3, mem 10, round 0
static void rounds_plan(fixture *f, zg_plan *p) {
    zg_error err;
    fx_init(f, 4, 4, 1e9);
    fx_push(f, 100, NULL);
    fx_push(f, 10, NULL);
    fx_push(f, 10, NULL);
    zg_plan_init(p);
    zg_plan_alloc(p, 3, 4, &err);
    zg_option o[3] = {{{1, 2, 1}, 0, 2, 60}, {{1, 1, 1}, 0, 1, 60}, {{1, 1, 1}, 3, 3, 10}};
    for (int i = 0; i < 3; i++)
        zg_plan_set_option(p, i, &f->b.seqs[i], i, &o[i], &err);
    p->p[1].round = 1;
    p->mem_cap = 100;
}

ZG_TEST(plan_rounds_validate_evaluate_json) {
    fixture fx;
    zg_plan plan;
    fixture *f = &fx;  // pointers, as EXPECT_INVALID reads them
    zg_plan *p = &plan;
    rounds_plan(f, p);
    zg_error err;
    // each round on its own: rank 0 holds 60 B in round 0 and 60 B in round 1 (cap 100)
    CHECK_OK(zg_plan_validate(p, &f->b, &f->m, &err), &err);
    zg_plan_stats st;
    CHECK_OK(zg_plan_evaluate(p, &f->b, NULL, &st, &err), &err);
    // round 0: ranks 0,1 take 2 s, rank 3 3 s -> 3 s; round 1: rank 0 1 s -> makespan 4 s
    CHECK_NEAR(st.makespan, 4, 0, 0);
    CHECK_NEAR(p->makespan, 4, 0, 0);
    CHECK_EQ_INT(st.n_rounds, 2);
    CHECK_NEAR(p->ranks[0].time, 3, 0, 0); // a rank's time adds up its rounds
    CHECK_NEAR(p->ranks[3].time, 3, 0, 0);
    CHECK_NEAR(p->ranks[0].mem, 60, 0, 0); // memory: its largest round (mem_base 0 here)
    CHECK_NEAR(p->ranks[3].mem, 10, 0, 0);
    CHECK_NEAR(st.peak_mem, 60, 0, 0);
    CHECK_NEAR(st.balance, 4 / 2.0, 0, 1e-15); // mean rank time (3+2+0+3)/4
    CHECK_EQ_INT(p->ranks[0].tokens, 50 + 10);
    // the same plan in one round: the old rules (max rank time, memory summed)
    p->p[1].round = 0;
    CHECK_OK(zg_plan_evaluate(p, &f->b, NULL, &st, &err), &err);
    CHECK_NEAR(st.makespan, 3, 0, 0);
    CHECK_EQ_INT(st.n_rounds, 1);
    CHECK_NEAR(p->ranks[0].mem, 120, 0, 0);
    EXPECT_INVALID("rank 0 needs 120 B (base 0 B + its placements), over the memory cap of 100 B");
    // memory per round: sequence 2 moves to rank 0 in round 1 (60 + 10 B fit, 60 + 45 B do not)
    p->p[1].round = 1;
    p->p[2].round = 1;
    p->p[2].ranks[0] = p->p[2].shards[0].rank = 0;
    CHECK_OK(zg_plan_validate(p, &f->b, &f->m, &err), &err);
    p->p[2].mem = 45;
    EXPECT_INVALID("rank 0 needs 105 B in round 1 (base 0 B + its placements), over the memory "
                   "cap of 100 B (largest: sequence 1)");
    p->p[2].mem = 10;
    p->p[2].ranks[0] = p->p[2].shards[0].rank = 3;
    p->p[2].round = 0;
    // rounds out of range: negative, or more rounds than sequences
    p->p[1].round = 3;
    EXPECT_INVALID("sequence 1 is in round 3; rounds are 0..2");
    CHECK(zg_plan_evaluate(p, &f->b, NULL, &st, &err) == ZG_ERR_INVALID);
    p->p[1].round = -1;
    EXPECT_INVALID("sequence 1 is in round -1");
    p->p[1].round = 1;
    // JSON: "round" written only when non-zero, read back; both writers agree
    CHECK_OK(zg_plan_evaluate(p, &f->b, NULL, NULL, &err), &err);
    cJSON *j = zg_plan_to_json(p);
    char *s1 = cJSON_PrintUnformatted(j);
    CHECK(strstr(s1, "{\"id\":1,\"tokens\":10,\"round\":1,\"config\"") != NULL);
    CHECK(strstr(s1, "{\"id\":0,\"tokens\":100,\"config\"") != NULL);
    CHECK(strstr(s1, "\"round\":0") == NULL);
    const char *path = "build-plan-test-rounds.tmp.json";
    CHECK_OK(zg_plan_write_file(path, p, &err), &err);
    zg_plan r;
    CHECK_OK(zg_plan_read_file(path, &r, &err), &err);
    remove(path);
    CHECK_EQ_INT(r.p[1].round, 1);
    CHECK_EQ_INT(r.p[0].round, 0);
    CHECK_NEAR(r.makespan, 4, 0, 0);
    cJSON *j2 = zg_plan_to_json(&r);
    char *s2 = cJSON_PrintUnformatted(j2);
    CHECK_STR(s2, s1);
    free(s1);
    free(s2);
    cJSON_Delete(j);
    cJSON_Delete(j2);
    zg_plan_free(&r);
    // zg_plan_set_* put a placement back in round 0
    zg_option o = {{1, 1, 1}, 2, 1, 1};
    CHECK_OK(zg_plan_set_option(p, 1, &f->b.seqs[1], 1, &o, &err), &err);
    CHECK_EQ_INT(p->p[1].round, 0);
    zg_plan_free(p);
    zg_batch_free(&f->b);
}

static zg_status read_plan_text(const char *text, zg_plan *p, zg_error *err) {
    cJSON *j = NULL;
    zg_status st = zg_json_parse(text, "test", &j, err);
    if (st) {
        zg_plan_init(p);
        return st;
    }
    st = zg_plan_from_json(j, p, err);
    cJSON_Delete(j);
    return st;
}

ZG_TEST(plan_json_rejects_bad_input) {
    const char *bad[][2] = {
        {"[]", "not a JSON object"},
        {"{\"version\":2,\"world_size\":2,\"sequences\":[]}", "version 2"},
        {"{\"version\":1,\"world_size\":0,\"sequences\":[]}", "out of range"},
        {"{\"version\":1,\"world_size\":2}", "missing \"sequences\""},
        {"{\"version\":1,\"world_size\":2,\"sequences\":[{\"id\":0,\"tokens\":5,\"config\":{\"q\":1,"
         "\"h\":2,\"k\":1},\"ranks\":[0],\"shards\":[{\"rank\":0,\"start\":0,\"end\":5}]}]}",
         "config degree 2 but 1 ranks"},
        {"{\"version\":1,\"world_size\":2,\"sequences\":[{\"id\":0,\"tokens\":5,\"config\":{\"q\":1,"
         "\"h\":4,\"k\":1},\"ranks\":[0],\"shards\":[]}]}",
         "out of range"},
        {"{\"version\":1,\"world_size\":2,\"sequences\":[{\"id\":0,\"tokens\":-5,\"config\":{}}]}",
         "must be positive"},
        {"{\"version\":1,\"world_size\":2,\"sequences\":[{\"id\":0,\"tokens\":5,\"config\":{\"q\":1,"
         "\"h\":1,\"k\":1},\"ranks\":[\"a\"],\"shards\":[{}]}]}",
         "not a rank number"},
        {"{\"version\":1,\"world_size\":2,\"sequences\":[],\"ranks\":[{}]}", "world_size (2)"},
        {"{\"version\":1,\"world_size\":2,\"sequences\":[{\"id\":0,\"tokens\":5,\"round\":1,"
         "\"config\":{\"q\":1,\"h\":1,\"k\":1},\"ranks\":[0],\"shards\":[{\"rank\":0,\"start\":0,"
         "\"end\":5}]}]}",
         "\"round\" = 1 is out of range 0..0"},
        {"{\"version\":1,\"world_size\":2,\"sequences\":[{\"id\":0,\"tokens\":5,\"round\":-1,"
         "\"config\":{\"q\":1,\"h\":1,\"k\":1},\"ranks\":[0],\"shards\":[{\"rank\":0,\"start\":0,"
         "\"end\":5}]}]}",
         "\"round\" = -1 is out of range"},
        {"{\"version\":1,\"world_size\":2,\"sequences\":[{\"id\":0,\"tokens\":5,\"round\":0.5,"
         "\"config\":{\"q\":1,\"h\":1,\"k\":1},\"ranks\":[0],\"shards\":[{\"rank\":0,\"start\":0,"
         "\"end\":5}]}]}",
         "round"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zg_plan p;
        zg_error err;
        zg_status st = read_plan_text(bad[i][0], &p, &err);
        CHECK_MSG(st != ZG_OK, "input %zu accepted", i);
        CHECK_MSG(strstr(err.msg, bad[i][1]) != NULL, "input %zu: \"%s\" lacks \"%s\"", i,
                  err.msg, bad[i][1]);
        zg_plan_free(&p);
    }
    zg_error err;
    zg_plan p;
    CHECK(zg_plan_read_file("/nonexistent/plan.json", &p, &err) == ZG_ERR_IO);
    zg_plan_free(&p);
}

FX_TEST(planner_unknown_policy_and_fallback, 4, 3000) {
    fx_push(f, 5000, NULL);  // 5000 B whole > cap: dp cannot run it, usp can (1250 per rank)
    fx_push(f, 100, NULL);
    zg_planner pl;
    zg_error err;
    CHECK(zg_planner_init(&pl, "nope", &f->ctx, &err) == ZG_ERR_INVALID);
    CHECK(strstr(err.msg, "unknown policy 'nope'") != NULL && strstr(err.msg, "dp") != NULL);
    snprintf(f->ctx.opts.fallback, sizeof f->ctx.opts.fallback, "bogus");
    CHECK(zg_planner_init(&pl, "dp", &f->ctx, &err) == ZG_ERR_INVALID);
    CHECK(strstr(err.msg, "--fallback") != NULL);
    f->ctx.opts.fallback[0] = '\0';
    CHECK_OK(zg_planner_init(&pl, "dp", &f->ctx, &err), &err);
    zg_plan p;
    zg_plan_init(&p);
    CHECK(zg_planner_plan(&pl, &f->b, &p, &err) == ZG_ERR_INFEASIBLE);
    CHECK_MSG(strstr(err.msg, "sequence 0 (5000 tokens)") != NULL, "%s", err.msg);
    zg_planner_free(&pl);
    snprintf(f->ctx.opts.fallback, sizeof f->ctx.opts.fallback, "usp");
    CHECK_OK(zg_planner_init(&pl, "dp", &f->ctx, &err), &err);
    CHECK_OK(zg_planner_plan(&pl, &f->b, &p, &err), &err);
    CHECK_STR(p.policy, "usp");
    CHECK_STR(p.fallback_from, "dp");
    CHECK(p.plan_time_ms >= 0);
    CHECK_EQ_INT(p.p[0].n_ranks, 4);
    CHECK(p.makespan > 0);
    zg_planner_free(&pl);
    zg_plan_free(&p);
}

// Replays every input the fuzzer found (tests/plan/fuzz-crashes/): must not crash.
ZG_TEST(fuzz_crash_replay) {
    const char *dirpath = "tests/plan/fuzz-crashes";
    DIR *d = opendir(dirpath);
    CHECK_MSG(d != NULL, "cannot open %s (run the tests from the repository root)", dirpath);
    int files = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || !strcmp(e->d_name, "README.md")) continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dirpath, e->d_name);
        zg_plan p;
        zg_error err;
        if (zg_plan_read_file(path, &p, &err) == ZG_OK) {
            zg_plan_evaluate(&p, NULL, NULL, NULL, &err);
            cJSON *j = zg_plan_to_json(&p);
            cJSON_Delete(j);
        }
        zg_plan_free(&p);
        files++;
    }
    closedir(d);
    CHECK(files >= 1);
}

ZG_TEST_MAIN()
