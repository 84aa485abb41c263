// test_config.c — configuration names, legality rules and enumeration counts.
#include <stdlib.h>
#include <string.h>

#include "cost/cost.h"
#include "zgtest.h"

static zg_model wan(void) {
    zg_model m;
    zg_error e;
    zg_model_preset("wan2.1-1.3b", &m, &e);
    return m;
}

ZG_TEST(config_name_and_degree) {
    char b[32];
    zg_config c = {2, 4, 3};
    CHECK_STR(zg_config_name(c, b, sizeof b), "(2,4,3)");
    CHECK_EQ_INT(zg_config_degree(c), 24);
    CHECK(zg_config_is_whole((zg_config){1, 1, 1}));
    CHECK(!zg_config_is_whole((zg_config){1, 2, 1}));
    char small[4];
    CHECK_STR(zg_config_name(c, small, sizeof small), "(2,");  // truncated, terminated
}

ZG_TEST(legal_configs_pass) {
    zg_model m = wan();
    zg_error e;
    CHECK_OK(zg_config_check(&m, 8, (zg_config){1, 1, 1}, 1, &e), &e);
    CHECK_OK(zg_config_check(&m, 8, (zg_config){1, 4, 2}, 8, &e), &e);
    CHECK_OK(zg_config_check(&m, 16, (zg_config){1, 12, 1}, 497760, &e), &e);
    CHECK_OK(zg_config_check(&m, 16, (zg_config){1, 3, 5}, 100, &e), &e);  // non-power-of-two
}

ZG_TEST(illegal_configs_are_rejected_with_reasons) {
    zg_model m = wan();
    zg_error e;
    CHECK(zg_config_check(&m, 16, (zg_config){1, 8, 1}, 1000, &e) == ZG_ERR_INVALID);
    CHECK(strstr(e.msg, "h = 8 does not divide the 12 heads") != NULL);
    CHECK(zg_config_check(&m, 16, (zg_config){1, 5, 1}, 1000, &e) == ZG_ERR_INVALID);
    CHECK(strstr(e.msg, "(1,5,1)") != NULL);
    CHECK(zg_config_check(&m, 8, (zg_config){2, 3, 2}, 1000, &e) == ZG_ERR_INVALID);
    CHECK(strstr(e.msg, "degree q*h*k = 12 exceeds the world size 8") != NULL);
    CHECK(zg_config_check(&m, 8, (zg_config){1, 4, 2}, 7, &e) == ZG_ERR_INVALID);
    CHECK(strstr(e.msg, "7 tokens") && strstr(e.msg, "8 ranks"));
    CHECK(zg_config_check(&m, 8, (zg_config){0, 1, 1}, 100, &e) == ZG_ERR_INVALID);
    CHECK(strstr(e.msg, ">= 1") != NULL);
    CHECK(zg_config_check(&m, 8, (zg_config){1, 1, -2}, 100, &e) == ZG_ERR_INVALID);
    CHECK(zg_config_check(&m, 0, (zg_config){1, 1, 1}, 100, &e) == ZG_ERR_INVALID);
    CHECK(strstr(e.msg, "world size 0") != NULL);
    CHECK(zg_config_check(&m, 8, (zg_config){1, 1, 1}, 0, &e) == ZG_ERR_INVALID);
    CHECK(zg_config_check(&m, 8, (zg_config){1, 2, 1}, 100, NULL) == ZG_OK);
    CHECK(zg_config_check(&m, 8, (zg_config){1, 5, 1}, 100, NULL) == ZG_ERR_INVALID);
}

static int32_t count(const zg_model *m, int32_t maxd) {
    zg_config *c = NULL;
    int32_t n = -1;
    zg_error e;
    if (zg_config_enumerate(m, maxd, &c, &n, &e) != ZG_OK) return -1;
    free(c);
    return n;
}

ZG_TEST(enumerate_counts_for_12_heads) {
    zg_model m = wan();
    // hand count of (q,h,k) with q*h*k = d and h | 12, summed over d <= max:
    // d=1: 1; d=2: 3; d=3: 3; d=4: 3 (h=1) + 2 (h=2) + 1 (h=4) = 6; d=5: 2; d=6: 4+2+2+1 = 9;
    // d=7: 2; d=8: 4 (h=1) + 3 (h=2) + 2 (h=4) = 9
    CHECK_EQ_INT(count(&m, 1), 1);
    CHECK_EQ_INT(count(&m, 2), 4);
    CHECK_EQ_INT(count(&m, 4), 13);
    CHECK_EQ_INT(count(&m, 8), 35);
    zg_config *c = NULL;
    int32_t n = 0;
    zg_error e;
    CHECK_OK(zg_config_enumerate(&m, 16, &c, &n, &e), &e);
    // sorted by degree, then q, then k; every entry legal and distinct
    zg_config want[] = {{1, 1, 1}, {1, 2, 1}, {1, 1, 2}, {2, 1, 1}, {1, 3, 1}, {1, 1, 3}};
    for (int i = 0; i < 6; i++) CHECK(zg_config_eq(c[i], want[i]));
    for (int32_t i = 0; i < n; i++) {
        CHECK(m.n_heads % c[i].h == 0);
        CHECK(zg_config_degree(c[i]) <= 16);
        if (i > 0) {
            zg_config a = c[i - 1], b = c[i];
            int da = zg_config_degree(a), db = zg_config_degree(b);
            CHECK(da < db || (da == db && (a.q < b.q || (a.q == b.q && a.k < b.k))));
        }
    }
    free(c);
    zg_model tiny;
    CHECK_OK(zg_model_preset("tiny", &tiny, &e), &e);  // 4 heads: 1 + 3 + 2 (no h=3) + 6
    CHECK_EQ_INT(count(&tiny, 4), 12);
}

// The sieve enumeration equals the plain triple loop (every d, every q <= d dividing it, every
// k <= d/q dividing it) entry for entry, for several head counts up to degree 1100.
ZG_TEST(enumerate_equals_brute_force) {
    static const int32_t heads[] = {1, 4, 12, 24, 40, 7};
    for (size_t hi = 0; hi < sizeof heads / sizeof *heads; hi++) {
        zg_model m = wan();
        m.n_heads = heads[hi];
        int32_t maxd = hi % 2 ? 1100 : 257;
        zg_config *c = NULL;
        int32_t n = 0;
        zg_error e;
        CHECK_OK(zg_config_enumerate(&m, maxd, &c, &n, &e), &e);
        int32_t i = 0, ok = 1;
        for (int32_t d = 1; d <= maxd; d++)
            for (int32_t q = 1; q <= d; q++)
                for (int32_t k = 1; d % q == 0 && k <= d / q; k++) {
                    if ((d / q) % k || m.n_heads % (d / q / k)) continue;
                    zg_config w = {q, d / q / k, k};
                    if (i >= n || !zg_config_eq(c[i], w)) ok = 0;
                    i++;
                }
        CHECK(ok);
        CHECK_EQ_INT(n, i);
        free(c);
    }
}

ZG_TEST(enumerate_bad_input) {
    zg_model m = wan();
    zg_config *c = (zg_config *)1;
    int32_t n = 5;
    zg_error e;
    CHECK(zg_config_enumerate(&m, 0, &c, &n, &e) == ZG_ERR_INVALID);
    CHECK(c == NULL && n == 0);
    CHECK(strstr(e.msg, "max degree 0") != NULL);
    m.n_heads = 0;
    CHECK(zg_config_enumerate(&m, 4, &c, &n, &e) == ZG_ERR_INVALID);
}

ZG_TEST_MAIN()
