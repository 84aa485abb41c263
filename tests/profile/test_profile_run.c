// test_profile_run.c — zg_profile_run and zg_fidelity_run (the libraries behind `zellige
// profile` / `zellige fidelity`) on one process with a two-bucket catalog: the profile is
// measured and written atomically, fidelity runs its design against it and writes the per-plan
// JSON, and bad options fail with a message naming the value. Times are not asserted (shared
// machine); tracked memory is deterministic, so its prediction is.
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profile/profile.h"
#include "zgtest.h"

static const char *catalog_json =
    "{\"buckets\":[{\"name\":\"img\",\"kind\":\"image\",\"frames\":1,\"height\":64,\"width\":64},"
    "{\"name\":\"vid\",\"kind\":\"video\",\"frames\":5,\"height\":128,\"width\":128}]}";

static int tmpfile_path(char *path, const char *content) {
    int fd = mkstemp(path);
    if (fd < 0) return 0;
    size_t n = content ? strlen(content) : 0;
    int ok = !content || write(fd, content, n) == (ssize_t)n;
    close(fd);
    return ok;
}

static int calls;
static void count(void *ctx, int64_t done, int64_t total) {
    (void)ctx;
    if (done >= 1 && done <= total) calls++;
}

ZG_TEST(profile_run_then_fidelity_run) {
    char cat[] = "/tmp/zg_test_catXXXXXX", prof[] = "/tmp/zg_test_profXXXXXX";
    char fid[] = "/tmp/zg_test_fidXXXXXX";
    CHECK(tmpfile_path(cat, catalog_json) && tmpfile_path(prof, NULL) && tmpfile_path(fid, NULL));
    unlink(prof), unlink(fid);
    zg_comm comm;
    zg_error e;
    CHECK_OK(zg_comm_self_init(&comm, &e), &e);

    zg_profile_run_opts po;
    zg_profile_run_opts_default(&po);
    CHECK(!strcmp(po.model, "tiny") && po.reps == 6 && po.act_ckpt == 1);
    po.catalog = cat, po.out = prof, po.reps = 1, po.warmup = 0, po.method = "single";
    po.progress = count;
    calls = 0;
    zg_profile_run_result pr;
    zg_status st = zg_profile_run(&po, &comm, &pr, &e);
    if (st) zg_comm_free(&comm), unlink(cat);
    CHECK_OK(st, &e);
    CHECK(calls > 0);
    CHECK_EQ_INT(pr.method, ZG_PROFILE_SINGLE);
    CHECK_STR(pr.cluster.name, "cpu:1");
    CHECK_EQ_INT(pr.table.n, 2); // two buckets x the one config of one rank
    CHECK(pr.table.mem_per_token > 0);
    zg_cost_table back;
    CHECK_OK(zg_cost_table_load(prof, &back, &e), &e); // the file is the table
    CHECK_EQ_INT(back.n, pr.table.n);
    CHECK_NEAR(back.overhead_s, pr.table.overhead_s, 1e-12, 1e-6);
    zg_cost_table_free(&back);
    zg_profile_run_result_free(&pr);

    zg_fidelity_run_opts fo;
    zg_fidelity_run_opts_default(&fo);
    CHECK(fo.reps == 7 && fo.design.min_mixed == 18);
    fo.profile = prof, fo.catalog = cat, fo.out = fid;
    fo.reps = 2, fo.warmup = 0, fo.design.min_mixed = 1, fo.design.corners = 1;
    fo.design.images = 2;
    zg_fidelity_run_result fr;
    st = zg_fidelity_run(&fo, &comm, &fr, &e);
    zg_comm_free(&comm);
    unlink(cat), unlink(prof);
    if (st) zg_fidelity_run_result_free(&fr), unlink(fid);
    CHECK_OK(st, &e);
    CHECK(fr.n >= 2 && fr.reps == 2 && fr.world_size == 1);
    CHECK_STR(fr.model.name, "tiny");              // from the profile's model_spec
    CHECK_EQ_INT(fr.clock, ZG_PROFILE_CLOCK_WALL); // the profile's
    for (int32_t i = 0; i < fr.n; i++) {
        CHECK(fr.plans[i].meas_time > 0 && fr.plans[i].pred_time > 0);
        CHECK(fr.plans[i].meas_lo <= fr.plans[i].meas_time);
        CHECK(fr.plans[i].meas_time <= fr.plans[i].meas_hi);
    }
    CHECK_EQ_INT(fr.sum.plans, fr.n);
    CHECK_MSG(fr.sum.mape_mem < 1.0, "memory MAPE %.3f%%", fr.sum.mape_mem);
    cJSON *j = zg_fidelity_run_json(&fr, 0);
    CHECK(j && cJSON_GetObjectItem(j, "plans")->valueint == fr.n);
    CHECK(!cJSON_GetObjectItem(j, "per_plan"));
    cJSON_Delete(j);
    cJSON *full = NULL;
    CHECK_OK(zg_json_read_file(fid, &full, &e), &e);
    unlink(fid);
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(full, "per_plan")) == fr.n);
    cJSON_Delete(full);
    zg_fidelity_run_result_free(&fr);
}

ZG_TEST(profile_and_fidelity_runs_reject_bad_options) {
    zg_comm comm;
    zg_error e = {0};
    CHECK_OK(zg_comm_self_init(&comm, &e), &e);
    zg_profile_run_opts po;
    zg_profile_run_result pr;
    const char *needle[] = {"--reps is 0, must be 1..1000", "moon", "lunar", "wan9",
                            "--calib-mirror is 2", "--out: ", "--warmup is -1"};
    for (int i = 0; i < 7; i++) {
        zg_profile_run_opts_default(&po);
        if (i == 0) po.reps = 0;
        if (i == 1) po.clock = "moon";
        if (i == 2) po.method = "lunar";
        if (i == 3) po.model = "wan9";
        if (i == 4) po.calib.mirror = 2;
        if (i == 5) po.out = "/nonexistent-dir/profile.json"; // found before measuring
        if (i == 6) po.warmup = -1;
        zg_status st = zg_profile_run(&po, &comm, &pr, &e);
        zg_profile_run_result_free(&pr);
        CHECK_MSG(st != ZG_OK && strstr(e.msg, needle[i]), "case %d: '%s'", i, e.msg);
    }
    zg_fidelity_run_opts fo;
    zg_fidelity_run_result fr;
    zg_fidelity_run_opts_default(&fo);
    zg_status st = zg_fidelity_run(&fo, &comm, &fr, &e);
    zg_fidelity_run_result_free(&fr);
    CHECK(st == ZG_ERR_INVALID && strstr(e.msg, "--profile"));
    fo.profile = "/nonexistent/profile.json";
    st = zg_fidelity_run(&fo, &comm, &fr, &e);
    zg_fidelity_run_result_free(&fr);
    CHECK(st != ZG_OK && strstr(e.msg, "/nonexistent/profile.json"));
    fo.out = "/nonexistent-dir/fidelity.json"; // checked before the profile is even read
    st = zg_fidelity_run(&fo, &comm, &fr, &e);
    zg_fidelity_run_result_free(&fr);
    CHECK_MSG(st != ZG_OK && strstr(e.msg, "--out: ") && strstr(e.msg, "/nonexistent-dir"), "'%s'",
              e.msg);
    zg_comm_free(&comm);
}

ZG_TEST_MAIN()
