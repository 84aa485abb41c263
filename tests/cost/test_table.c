// test_table.c — the measured price table: JSON round trip, exact-bucket lookups, linear
// interpolation/extrapolation in tokens (hand-computed values), the memory model, the pricer,
// and clear errors for unmeasured configs and bad profiles.
#include <string.h>
#include <unistd.h>

#include "cost/cost.h"
#include "cost_testlib.h"
#include "zgtest.h"

static void make_table(zg_cost_table *t) {
    cost_test_table_tiny(t, "cpu:2", 2);
    t->overhead_s = 0.005;
    zg_config w = {1, 1, 1}, u = {1, 2, 1};
    cost_test_table_add(t, "a", 100, w, 1.0);
    cost_test_table_add(t, "b", 200, w, 3.0);
    cost_test_table_add(t, "c", 400, w, 11.0);
    cost_test_table_add(t, "c2", 400, w,
                        13.0); // same tokens, other bucket: averaged (12) for interpolation
    cost_test_table_add(t, "b", 200, u, 2.0);
}

static zg_seq seq(int64_t tokens, const char *bucket) {
    zg_seq s;
    zg_seq_init(&s);
    s.tokens = tokens;
    s.text_tokens = 8;
    if (bucket) snprintf(s.bucket, sizeof s.bucket, "%s", bucket);
    return s;
}

// The table pricer over t for tiny on cpu:2 (c receives the cluster); frees t (the pricer keeps
// its own copy).
static zg_status table_pricer(zg_pricer *p, zg_cost_table *t, zg_cluster *c, zg_error *e) {
    zg_model m;
    zg_status st = zg_model_preset("tiny", &m, e);
    if (!st) st = zg_cluster_preset("cpu:2", c, e);
    if (!st) st = zg_cost_table_init(p, t, &m, c, e);
    zg_cost_table_free(t);
    return st;
}

ZG_TEST(lookup_exact_interpolate_extrapolate) {
    zg_cost_table t;
    make_table(&t);
    zg_config w = {1, 1, 1}, u = {1, 2, 1};
    double v = -1;
    zg_seq s = seq(400, "c2");
    CHECK(zg_cost_table_time(&t, &s, w, &v, NULL) == ZG_OK);
    CHECK_NEAR(v, 13.0, 0, 1e-15);  // exact bucket
    s = seq(400, "x");
    CHECK(zg_cost_table_time(&t, &s, w, &v, NULL) == ZG_OK);
    CHECK_NEAR(v, 12.0, 0, 1e-15);  // same count, averaged
    s = seq(150, NULL);
    CHECK(zg_cost_table_time(&t, &s, w, &v, NULL) == ZG_OK);
    CHECK_NEAR(v, 2.0, 0, 1e-15);  // halfway between 1 and 3
    s = seq(300, NULL);
    CHECK(zg_cost_table_time(&t, &s, w, &v, NULL) == ZG_OK);
    CHECK_NEAR(v, 7.5, 0, 1e-15);  // 3 + (12-3)/2
    s = seq(600, NULL);  // above: along 200..400 (slope 9/200): 12 + 9 = 21
    CHECK(zg_cost_table_time(&t, &s, w, &v, NULL) == ZG_OK);
    CHECK_NEAR(v, 21.0, 0, 1e-12);
    s = seq(50, NULL);  // below: line gives 0, floor 1.0 * 50/100 = 0.5
    CHECK(zg_cost_table_time(&t, &s, w, &v, NULL) == ZG_OK);
    CHECK_NEAR(v, 0.5, 0, 1e-15);
    s = seq(300, NULL);  // one measured point for (1,2,1): proportional
    CHECK(zg_cost_table_time(&t, &s, u, &v, NULL) == ZG_OK);
    CHECK_NEAR(v, 3.0, 0, 1e-15);
    zg_cost_table_free(&t);
}

ZG_TEST(unmeasured_config_is_a_clear_error) {
    zg_cost_table t;
    make_table(&t);
    zg_error e = {0};
    double v;
    zg_seq s = seq(200, NULL);
    CHECK(zg_cost_table_time(&t, &s, (zg_config){2, 1, 1}, &v, &e) == ZG_ERR_UNSUPPORTED);
    CHECK(strstr(e.msg, "(2,1,1)") && strstr(e.msg, "(1,1,1)") && strstr(e.msg, "(1,2,1)"));
    zg_cost_table_free(&t);
}

ZG_TEST(json_round_trip_keeps_everything) {
    zg_cost_table t, r;
    make_table(&t);
    t.extra = cJSON_CreateObject();
    cJSON_AddStringToObject(t.extra, "note", "kept");
    cJSON *j = zg_cost_table_to_json(&t);
    CHECK(j != NULL);
    zg_error e = {0};
    CHECK(zg_cost_table_from_json(j, &r, &e) == ZG_OK);
    cJSON_Delete(j);
    CHECK_EQ_INT(r.n, t.n);
    CHECK_STR(r.model, "tiny");
    CHECK_STR(r.cluster, "cpu:2");
    CHECK_EQ_INT(r.world_size, 2);
    CHECK(r.overhead_s == t.overhead_s && r.mem_base == t.mem_base);
    CHECK(r.mem_per_token == 100 && r.mem_per_text == 10 && r.mem_per_sample == 1000);
    for (int32_t i = 0; i < t.n; i++) {
        CHECK_STR(r.e[i].bucket, t.e[i].bucket);
        CHECK(r.e[i].tokens == t.e[i].tokens && zg_config_eq(r.e[i].config, t.e[i].config));
        CHECK(r.e[i].time == t.e[i].time && r.e[i].reps == 5 && r.e[i].text_tokens == 8);
    }
    const cJSON *note = cJSON_GetObjectItemCaseSensitive(r.extra, "note");
    CHECK(cJSON_IsString(note) && !strcmp(note->valuestring, "kept"));
    zg_cost_table_free(&t);
    zg_cost_table_free(&r);
}

ZG_TEST(pricer_memory_and_cap) {
    zg_cost_table t;
    make_table(&t);
    zg_cluster c;
    zg_pricer p;
    zg_error e = {0};
    CHECK_OK(table_pricer(&p, &t, &c, &e), &e);
    CHECK_STR(p.kind, "table");
    CHECK(p.mem_base == 1e6);
    CHECK_NEAR(p.mem_cap, c.mem_bytes * c.mem_usable_frac, 0, 1e-12);
    CHECK(p.mem_cap == zg_cluster_mem_cap_bytes(&c));
    CHECK_NEAR(zg_pricer_mem_room(&p), c.mem_bytes * c.mem_usable_frac - 1e6, 0, 1e-12);
    zg_seq s = seq(201, "x");
    int32_t ranks[2] = {0, 1};
    zg_price pr;
    CHECK(zg_pricer_price(&p, &s, (zg_config){1, 2, 1}, ranks, 2, &pr, &e) == ZG_OK);
    CHECK_NEAR(pr.time, 2.0 * 201 / 200, 0, 1e-12);
    CHECK_NEAR(pr.mem, 100.0 * 101 + 10 * 8 + 1000, 0, 1e-9);  // ceil(201/2) = 101
    CHECK(zg_pricer_price(&p, &s, (zg_config){1, 3, 1}, ranks, 2, &pr, &e) != ZG_OK);  // 3 ∤ 4
    zg_pricer_free(&p);
}

ZG_TEST(split_price_is_floored_at_perfect_scaling) {
    zg_cost_table t;
    make_table(&t);
    cost_test_table_add(&t, "d", 400, (zg_config){1, 2, 1},
                        0.0); // a fitted profile clamped this price to 0
    zg_cluster c;
    zg_pricer p;
    zg_error e = {0};
    CHECK_OK(table_pricer(&p, &t, &c, &e), &e);
    zg_seq s = seq(400, "d");
    int32_t ranks[2] = {0, 1};
    zg_price pr;
    CHECK(zg_pricer_price(&p, &s, (zg_config){1, 2, 1}, ranks, 2, &pr, &e) == ZG_OK);
    CHECK_NEAR(pr.time, 12.0 / 2, 0, 1e-12);  // whole price at 400 tokens (mean of 11, 13) / 2
    CHECK(zg_pricer_price(&p, &s, (zg_config){1, 1, 1}, ranks, 1, &pr, &e) == ZG_OK);
    CHECK_NEAR(pr.time, 12.0, 0, 1e-12);  // whole prices are not floored
    zg_pricer_free(&p);
}

ZG_TEST(bad_profiles_are_rejected) {
    const char *bad[] = {
        "[]",
        "{\"model\":\"tiny\",\"prices\":[]}",                                     // no memory
        "{\"model\":\"tiny\",\"memory\":{\"base_bytes\":1,\"per_token_bytes\":1}}",  // no prices
        "{\"version\":2,\"model\":\"tiny\",\"memory\":{\"base_bytes\":1,\"per_token_bytes\":1},"
        "\"prices\":[]}",
        "{\"model\":\"tiny\",\"memory\":{\"base_bytes\":1,\"per_token_bytes\":1},\"prices\":"
        "[{\"tokens\":1,\"q\":1,\"h\":2,\"k\":1,\"time_s\":1}]}",  // degree > tokens
        "{\"model\":\"tiny\",\"memory\":{\"base_bytes\":1,\"per_token_bytes\":1},\"prices\":"
        "[{\"tokens\":5,\"q\":0,\"h\":1,\"k\":1,\"time_s\":1}]}",
        "{\"model\":\"tiny\",\"memory\":{\"base_bytes\":1,\"per_token_bytes\":1},\"prices\":"
        "[{\"tokens\":5,\"q\":1,\"h\":1,\"k\":1,\"time_s\":-1}]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cJSON *j = cJSON_Parse(bad[i]);
        zg_cost_table t;
        zg_error e = {0};
        CHECK_MSG(zg_cost_table_from_json(j, &t, &e) != ZG_OK, "case %zu accepted", i);
        CHECK_MSG(e.msg[0] != 0, "case %zu: no message", i);
        cJSON_Delete(j);
    }
    // a table for another model is refused by the loader
    zg_cost_table t;
    make_table(&t);
    char path[] = "/tmp/zg_test_table_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    zg_error e = {0};
    CHECK(zg_cost_table_write(path, &t, &e) == ZG_OK);
    zg_model m;
    zg_cluster c;
    zg_model_preset("tiny-mmdit", &m, &e);
    zg_cluster_preset("cpu:2", &c, &e);
    zg_pricer p;
    CHECK(zg_cost_table_pricer_load(&p, path, &m, &c, &e) == ZG_ERR_INVALID);
    CHECK(strstr(e.msg, "tiny") != NULL);
    zg_model_preset("tiny", &m, &e);
    CHECK(zg_cost_table_pricer_load(&p, path, &m, &c, &e) == ZG_OK);
    zg_pricer_free(&p);
    unlink(path);
    zg_cost_table_free(&t);
}

ZG_TEST(pairs_priced_0_s_are_counted_and_named) {
    zg_cost_table t;
    make_table(&t);
    char note[512] = "untouched";
    CHECK(zg_cost_table_unpriced(&t, note, sizeof note) == 0);
    CHECK_STR(note, "untouched"); // nothing written when every pair has a price
    t.e[3].time = 0, t.e[4].time = 0;
    CHECK(zg_cost_table_unpriced(&t, note, sizeof note) == 2);
    const char *want = "2 of 5 (bucket, config) pairs are priced 0 s (first: c2, 400 tokens, "
                       "config (1,1,1)); a planner sees those sequences as free";
    CHECK_MSG(!strncmp(note, want, strlen(want)), "note: %s", note);
    CHECK_MSG(strstr(note, "(docs/profiler.md)"), "note cut short: %s", note);
    CHECK(zg_cost_table_unpriced(&t, NULL, 0) == 2);
    zg_cost_table_free(&t);
}

ZG_TEST_MAIN()
