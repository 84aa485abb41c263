// test_price_block.c — the pricers' block entry (cost.h, zg_pricer_price_block): the price of a
// configuration on the contiguous rank block [start, start + n) equals price() on the rank list
// start..start+n-1 bit for bit (status, message, time and memory) for the analytic and table
// pricers over random (model, cluster, sequence, config, start), bad input included; a wrapper
// that copies the struct and replaces price is always called (never bypassed), with the rank
// list built for it (also beyond the fallback's stack buffer).
#include <stdlib.h>
#include <string.h>

#include "cost/cost.h"
#include "cost_testlib.h"
#include "zgtest.h"

// 1 when both calls give the same status and, on success, bitwise the same doubles; on failure
// the same message.
static int same_result(zg_status s1, const zg_price *a, const zg_error *e1, zg_status s2,
                       const zg_price *b, const zg_error *e2) {
    if (s1 != s2) return 0;
    if (s1) return !strcmp(e1->msg, e2->msg);
    return !memcmp(&a->time, &b->time, sizeof(double)) && !memcmp(&a->mem, &b->mem, sizeof(double));
}

// Block entry, the dispatching helper and the list fallback against price() on the list.
static int check_block(const zg_pricer *p, const zg_seq *s, zg_config c, int32_t start,
                       int32_t n, int32_t *ranks) {
    for (int32_t i = 0; i < n; i++) ranks[i] = start + i;
    zg_price a = {-1, -1}, b = {-2, -2}, d = {-3, -3}, f = {-4, -4};
    zg_error e1 = {0}, e2 = {0}, e3 = {0}, e4 = {0};
    zg_status s1 = p->price(p, s, c, ranks, n, &a, &e1);
    zg_status s2 = p->price_block(p, s, c, start, n, &b, &e2);
    zg_status s3 = zg_pricer_price_block(p, s, c, start, n, &d, &e3);
    zg_status s4 = zg_pricer_price_list_of_block(p, s, c, start, n, &f, &e4);
    int ok = same_result(s1, &a, &e1, s2, &b, &e2) && same_result(s1, &a, &e1, s3, &d, &e3) &&
             same_result(s1, &a, &e1, s4, &f, &e4);
    if (!ok)
        fprintf(stderr, "  block (%d,%d,%d) start %d n %d: list %d %.17g %.17g '%s' / block %d "
                        "%.17g %.17g '%s'\n",
                c.q, c.h, c.k, start, n, s1, a.time, a.mem, e1.msg, s2, b.time, b.mem, e2.msg);
    return ok;
}

static zg_seq random_seq(zg_rng *r, int64_t min_tokens) {
    zg_seq s;
    zg_seq_init(&s);
    s.id = zg_rng_int(r, 0, 1000);
    s.tokens = min_tokens + zg_rng_int(r, 0, zg_rng_int(r, 0, 1) ? 4000 : 400000);
    s.text_tokens = (int32_t)zg_rng_int(r, 0, 600);
    return s;
}

// A cluster of 6 ranks per node (not a power of two): blocks cross nodes at odd offsets.
static zg_cluster odd_cluster(void) {
    zg_cluster c;
    zg_error e;
    zg_cluster_preset("8xA800", &c, &e);
    snprintf(c.name, sizeof c.name, "30x6");
    c.world_size = 30;
    c.ranks_per_node = 6;
    return c;
}

ZG_TEST(analytic_block_equals_list_random) {
    static const char *clusters[] = {"cpu:3", "cpu:16", "8xA800", "64xH100", "1024xH100", "odd"};
    static const char *models[] = {"tiny", "tiny-mmdit", "wan2.1-1.3b", "hunyuanvideo-13b"};
    zg_rng r;
    zg_rng_init(&r, 20261130);
    int64_t priced = 0, errors = 0;
    for (size_t ci = 0; ci < sizeof clusters / sizeof *clusters; ci++)
        for (size_t mi = 0; mi < sizeof models / sizeof *models; mi++)
            for (int ck = 0; ck < 2; ck++) {
                zg_error e = {0};
                zg_model m;
                zg_cluster cl;
                CHECK_OK(zg_model_preset(models[mi], &m, &e), &e);
                if (!strcmp(clusters[ci], "odd")) cl = odd_cluster();
                else CHECK_OK(zg_cluster_preset(clusters[ci], &cl, &e), &e);
                zg_cost_opts o;
                zg_cost_opts_default(&o);
                o.act_ckpt = ck;
                zg_pricer p;
                if (zg_cost_analytic_init(&p, &m, &cl, &o, &e)) continue;  // does not fit
                CHECK(zg_pricer_has_block(&p));
                zg_config *cfgs = NULL;
                int32_t nc = 0;
                CHECK_OK(zg_config_enumerate(&m, cl.world_size, &cfgs, &nc, &e), &e);
                int32_t *ranks = malloc(sizeof(int32_t) * (size_t)cl.world_size * 2 + 64);
                CHECK(ranks != NULL);
                int32_t W = cl.world_size;
                for (int it = 0; it < 300; it++) {
                    zg_config c = cfgs[zg_rng_int(&r, 0, nc - 1)];
                    int32_t d = zg_config_degree(c);
                    zg_seq s = random_seq(&r, d);
                    int32_t start = (int32_t)zg_rng_int(&r, 0, W - d);
                    CHECK(check_block(&p, &s, c, start, d, ranks));
                    priced++;
                }
                // bad input: the same status and message as the list
                zg_config c = cfgs[nc - 1];
                int32_t d = zg_config_degree(c);
                zg_seq s = random_seq(&r, d);
                int32_t bad_starts[] = {-1, -d, W - d + 1, W - 1, W, W + 5};
                for (size_t i = 0; i < sizeof bad_starts / sizeof *bad_starts; i++) {
                    if (bad_starts[i] + d > 2 * W + 16) continue;
                    CHECK(check_block(&p, &s, c, bad_starts[i], d, ranks));
                    errors++;
                }
                CHECK(check_block(&p, &s, c, 0, d > 1 ? d - 1 : 2, ranks));  // n != degree
                zg_seq few = s;
                few.tokens = d > 1 ? d - 1 : 0;  // fewer tokens than ranks (or none)
                CHECK(check_block(&p, &few, c, 0, d, ranks));
                CHECK(check_block(&p, &s, (zg_config){1, 7, 1}, 0, 7 <= W ? 7 : W, ranks));
                CHECK(check_block(&p, &s, (zg_config){0, 1, 1}, 0, 0, ranks));
                errors += 4;
                free(ranks);
                free(cfgs);
                zg_pricer_free(&p);
            }
    printf("  info: %lld block prices and %lld bad inputs equal the list's\n", (long long)priced,
           (long long)errors);
    CHECK(priced > 10000);
    CHECK(errors > 100);
}

// Terms with ranks NULL (positions 0..λ-1) still equal the list 0..λ-1.
ZG_TEST(analytic_terms_null_ranks_equal_list) {
    zg_error e = {0};
    zg_pricer p;
    CHECK_OK(cost_test_analytic(&p, "wan2.1-1.3b", "64xH100", NULL, NULL, NULL, &e), &e);
    zg_seq s;
    zg_seq_init(&s);
    s.tokens = 75600;
    int32_t ranks[64];
    for (int32_t i = 0; i < 64; i++) ranks[i] = i;
    zg_config cs[] = {{1, 1, 1}, {1, 4, 3}, {2, 2, 4}, {4, 12, 1}, {3, 2, 5}};
    for (size_t i = 0; i < sizeof cs / sizeof *cs; i++) {
        zg_cost_terms a, b;
        int32_t d = zg_config_degree(cs[i]);
        CHECK_OK(zg_cost_analytic_terms(&p, &s, cs[i], NULL, d, &a, &e), &e);
        CHECK_OK(zg_cost_analytic_terms(&p, &s, cs[i], ranks, d, &b, &e), &e);
        CHECK(!memcmp(&a, &b, sizeof a));
    }
    zg_pricer_free(&p);
}

ZG_TEST(table_block_equals_list_random) {
    zg_cost_table t;
    cost_test_table_tiny(&t, "cpu:8", 8);
    zg_config measured[] = {{1, 1, 1}, {1, 2, 1}, {1, 1, 2}, {2, 1, 1}, {1, 4, 1}, {2, 2, 2}};
    for (size_t i = 0; i < sizeof measured / sizeof *measured; i++)
        for (int64_t tk = 100; tk <= 1600; tk *= 2)
            cost_test_table_add(&t, tk == 400 ? "b400" : "", tk, measured[i],
                                1e-3 * (double)tk / zg_config_degree(measured[i]) *
                                    (1 + 0.1 * (double)i));
    zg_model m;
    zg_cluster cl;
    zg_error e = {0};
    CHECK_OK(zg_model_preset("tiny", &m, &e), &e);
    CHECK_OK(zg_cluster_preset("cpu:8", &cl, &e), &e);
    zg_pricer p;
    CHECK_OK(zg_cost_table_init(&p, &t, &m, &cl, &e), &e);
    zg_cost_table_free(&t);
    CHECK(zg_pricer_has_block(&p));
    zg_config *cfgs = NULL;
    int32_t nc = 0;
    CHECK_OK(zg_config_enumerate(&m, 8, &cfgs, &nc, &e), &e);
    zg_rng r;
    zg_rng_init(&r, 7);
    int32_t ranks[32];
    int ok = 0, bad = 0;
    for (int it = 0; it < 2000; it++) {
        zg_config c = zg_rng_int(&r, 0, 1) ? cfgs[zg_rng_int(&r, 0, nc - 1)]
                                          : measured[zg_rng_int(&r, 0, 5)];
        int32_t d = zg_config_degree(c);
        zg_seq s;
        zg_seq_init(&s);
        s.tokens = zg_rng_int(&r, 1, 3000);
        s.text_tokens = (int32_t)zg_rng_int(&r, 0, 16);
        if (zg_rng_int(&r, 0, 3) == 0) snprintf(s.bucket, sizeof s.bucket, "b400");
        int32_t start = (int32_t)zg_rng_int(&r, -2, 8);  // the table ignores which ranks
        int32_t n = zg_rng_int(&r, 0, 9) ? d : (int32_t)zg_rng_int(&r, 1, 16);
        CHECK(check_block(&p, &s, c, start, n, ranks));
        zg_price x;
        if (zg_pricer_price_block(&p, &s, c, start, n, &x, NULL) == ZG_OK) ok++;
        else bad++;
    }
    // both measured and unmeasured / illegal configs were seen
    CHECK_MSG(ok > 700 && bad > 300, "ok %d bad %d", ok, bad);
    free(cfgs);
    zg_pricer_free(&p);
}

// A wrapper: copies the struct, replaces price (and impl), doubles the time and counts calls.
typedef struct wrapped {
    const zg_pricer *inner;
    int64_t calls;
    int64_t last_n;
} wrapped;

static zg_status doubled_price(const zg_pricer *p, const zg_seq *s, zg_config c,
                               const int32_t *ranks, int32_t n, zg_price *out, zg_error *err) {
    wrapped *w = p->impl;
    w->calls++;
    w->last_n = n;
    for (int32_t i = 1; i < n; i++)
        if (ranks[i] != ranks[0] + i) return zg_error_set(err, ZG_ERR_INTERNAL, "not a block");
    zg_status st = zg_pricer_price(w->inner, s, c, ranks, n, out, err);
    if (!st) out->time *= 2;
    return st;
}

ZG_TEST(wrapper_copying_the_struct_is_never_bypassed) {
    zg_error e = {0};
    zg_pricer p;
    CHECK_OK(cost_test_analytic(&p, "wan2.1-1.3b", "1024xH100", NULL, NULL, NULL, &e), &e);
    wrapped w = {&p, 0, 0};
    zg_pricer wrap = p;  // as tests/plan/test_zel_fast_cache.c does
    wrap.impl = &w;
    wrap.price = doubled_price;
    wrap.free_impl = NULL;
    CHECK(zg_pricer_has_block(&p));
    CHECK(!zg_pricer_has_block(&wrap));  // the block entry belongs to the analytic price
    zg_seq s;
    zg_seq_init(&s);
    s.tokens = 300000;
    zg_config cs[] = {{1, 1, 1}, {1, 4, 2}, {2, 4, 64}, {1, 2, 512}, {4, 2, 128}};
    int32_t starts[] = {0, 3, 100, 0, 0};
    for (size_t i = 0; i < sizeof cs / sizeof *cs; i++) {
        int32_t d = zg_config_degree(cs[i]);
        zg_price a, b;
        int64_t before = w.calls;
        CHECK_OK(zg_pricer_price_block(&wrap, &s, cs[i], starts[i], d, &a, &e), &e);
        CHECK_EQ_INT(w.calls, before + 1);
        CHECK_EQ_INT(w.last_n, d);  // the list was built (d = 1024 > the stack buffer)
        CHECK_OK(zg_pricer_price_block(&p, &s, cs[i], starts[i], d, &b, &e), &e);
        CHECK(a.time == 2 * b.time && !memcmp(&a.mem, &b.mem, sizeof(double)));
    }
    // a block entry with no recorded price (or another one) is not used either
    zg_pricer half = p;
    half.block_for = NULL;
    CHECK(!zg_pricer_has_block(&half));
    zg_price a, b;
    CHECK_OK(zg_pricer_price_block(&half, &s, cs[1], 5, 8, &a, &e), &e);
    CHECK_OK(zg_pricer_price_block(&p, &s, cs[1], 5, 8, &b, &e), &e);
    CHECK(!memcmp(&a, &b, sizeof a));
    // the fallback: an empty block reaches price (which rejects it); a block past INT32_MAX is
    // refused before any list is built
    int64_t before = w.calls;
    CHECK(zg_pricer_price_block(&wrap, &s, cs[0], 0, 0, &a, &e) != ZG_OK);
    CHECK_EQ_INT(w.calls, before + 1);
    CHECK(zg_pricer_price_block(&wrap, &s, cs[1], INT32_MAX - 3, 8, &a, &e) == ZG_ERR_INVALID);
    CHECK(strstr(e.msg, "rank block") != NULL);
    CHECK_EQ_INT(w.calls, before + 1);
    zg_pricer_free(&p);
}

ZG_TEST_MAIN()
