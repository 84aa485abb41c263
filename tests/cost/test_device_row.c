// test_device_row.c — measured device row files (zellige profile-device) read back for the
// analytic pricer: a good row, a row of another device, missing fields, out-of-range fields, the
// wrong kind of file, and a missing file, each with a message naming what is wrong.
#include <stdio.h>
#include <unistd.h>

#include "cost/cost.h"
#include "zgtest.h"

static const char *good =
    "{\"version\":1,\"kind\":\"device_row\",\"device\":\"H100\",\"backend\":\"cuda\","
    "\"peak_flops\":9.89e14,\"row\":{\"attn_fwd_eff\":0.55,\"attn_bwd_eff\":0.4,"
    "\"gemm_eff\":0.7,\"attn_half\":3000,\"gemm_half\":700,\"framework_bytes\":1073741824}}";

static zg_status parse(const char *text, const char *device, zg_cost_device *d, zg_error *err) {
    cJSON *j = cJSON_Parse(text);
    zg_status st = zg_cost_device_row_from_json(j, device, d, NULL, 0, err);
    cJSON_Delete(j);
    return st;
}

// good with `key` (inside "row") replaced by `val` ("" removes it)
static char *edited(const char *key, const char *val) {
    cJSON *j = cJSON_Parse(good);
    cJSON *row = cJSON_GetObjectItem(j, "row");
    cJSON_DeleteItemFromObject(row, key);
    if (*val) cJSON_AddItemToObject(row, key, cJSON_Parse(val));
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return s;
}

ZG_TEST(good_row_reads_and_prices) {
    zg_cost_device d;
    zg_error err = {0};
    CHECK(parse(good, "h100", &d, &err) == ZG_OK); // device names compare case-insensitively
    CHECK(d.attn_fwd_eff == 0.55 && d.attn_bwd_eff == 0.4 && d.gemm_eff == 0.7);
    CHECK(d.attn_half == 3000 && d.gemm_half == 700 && d.framework_bytes == 1073741824.0);
    CHECK(parse(good, NULL, &d, &err) == ZG_OK); // no device to match: any
    // the pricer takes it and its prices follow the row
    zg_model m;
    zg_cluster c;
    CHECK(zg_model_preset("wan2.1-1.3b", &m, &err) == ZG_OK);
    CHECK(zg_cluster_preset("8xH100", &c, &err) == ZG_OK);
    zg_cost_opts o;
    zg_cost_opts_default(&o);
    zg_pricer p0, p1;
    CHECK(zg_cost_analytic_init(&p0, &m, &c, &o, &err) == ZG_OK);
    o.dev = d;
    CHECK(zg_cost_analytic_init(&p1, &m, &c, &o, &err) == ZG_OK);
    zg_seq s = {.id = 1, .tokens = 75600};
    zg_cost_terms t0, t1;
    CHECK(zg_cost_analytic_terms(&p0, &s, (zg_config){1, 1, 1}, NULL, 1, &t0, &err) == ZG_OK);
    CHECK(zg_cost_analytic_terms(&p1, &s, (zg_config){1, 1, 1}, NULL, 1, &t1, &err) == ZG_OK);
    // attention at 75600 local tokens: (1 + ckpt) fwd + 2.5 bwd at the two rows' efficiencies
    double e0f = 0.60 * 75600 / (75600 + 4096.0), e0b = 0.45 * 75600 / (75600 + 4096.0);
    double e1f = 0.55 * 75600 / (75600 + 3000.0), e1b = 0.40 * 75600 / (75600 + 3000.0);
    double ratio = (2 / e1f + 2.5 / e1b) / (2 / e0f + 2.5 / e0b);
    CHECK_NEAR(t1.attn / t0.attn, ratio, 0, 1e-9);
    CHECK(t1.linear < t0.linear); // gemm 0.7 > 0.55
    zg_pricer_free(&p0);
    zg_pricer_free(&p1);
}

ZG_TEST(row_of_another_device_is_refused_naming_both) {
    zg_cost_device d;
    zg_error err = {0};
    CHECK(parse(good, "A800", &d, &err) == ZG_ERR_INVALID);
    CHECK(strstr(err.msg, "'H100'") && strstr(err.msg, "'A800'"));
}

ZG_TEST(missing_or_out_of_range_fields_are_named) {
    struct {
        const char *key, *val, *want;
    } cases[] = {
        {"gemm_half", "", "\"gemm_half\""},
        {"attn_fwd_eff", "", "\"attn_fwd_eff\""},
        {"gemm_eff", "1.2", "gemm_eff = 1.2"},
        {"attn_bwd_eff", "0", "attn_bwd_eff = 0"},
        {"attn_fwd_eff", "-0.5", "attn_fwd_eff = -0.5"},
        {"attn_half", "-1", "attn_half = -1"},
        {"gemm_half", "1e12", "gemm_half = 1e+12"},
        {"framework_bytes", "0", "framework_bytes = 0"},
        {"gemm_eff", "\"high\"", "\"gemm_eff\" must be a number"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *text = edited(cases[i].key, cases[i].val);
        zg_cost_device d;
        zg_error err = {0};
        zg_status st = parse(text, "H100", &d, &err);
        free(text);
        CHECK_MSG(st == ZG_ERR_INVALID, "%s=%s accepted", cases[i].key, cases[i].val);
        CHECK_MSG(strstr(err.msg, cases[i].want), "%s: '%s' not in '%s'", cases[i].key,
                  cases[i].want, err.msg);
    }
    char *text = edited("gemm_halve", "3"); // a misspelt key is named, not ignored
    zg_cost_device d;
    zg_error err = {0};
    CHECK(parse(text, "H100", &d, &err) == ZG_ERR_INVALID);
    free(text);
    CHECK(strstr(err.msg, "gemm_halve"));
}

ZG_TEST(wrong_kind_version_and_missing_file) {
    zg_cost_device d;
    zg_error err = {0};
    CHECK(parse("{\"version\":1,\"kind\":\"profile\",\"device\":\"cpu\"}", "cpu", &d, &err) ==
          ZG_ERR_INVALID);
    CHECK(strstr(err.msg, "'profile'") && strstr(err.msg, "device_row"));
    CHECK(parse("{\"version\":2,\"kind\":\"device_row\",\"device\":\"cpu\"}", "cpu", &d, &err) ==
          ZG_ERR_INVALID);
    CHECK(strstr(err.msg, "version 2"));
    CHECK(parse("{\"version\":1,\"kind\":\"device_row\",\"device\":\"cpu\"}", "cpu", &d, &err) ==
          ZG_ERR_INVALID);
    CHECK(strstr(err.msg, "\"row\""));
    CHECK(parse("[1]", "cpu", &d, &err) == ZG_ERR_INVALID);
    CHECK(zg_cost_device_row_load("/nonexistent/row.json", "cpu", &d, &err) != ZG_OK);
    CHECK(strstr(err.msg, "/nonexistent/row.json"));
    char path[] = "/tmp/zg_devrow_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    const char *bad = "{\"version\":1,\"kind\":\"device_row\",\"device\":\"cpu\",\"row\":{}}";
    CHECK(write(fd, bad, strlen(bad)) == (ssize_t)strlen(bad));
    close(fd);
    zg_status st = zg_cost_device_row_load(path, "cpu", &d, &err);
    unlink(path);
    CHECK(st == ZG_ERR_INVALID);
    CHECK(strstr(err.msg, path) && strstr(err.msg, "attn_fwd_eff"));
}

ZG_TEST_MAIN()
