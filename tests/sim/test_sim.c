// test_sim.c — zg_sim_run (the library behind `zellige simulate`) on a tiny setting: every
// (mix, policy) cell is filled, zellige's mean makespan is the lowest, the JSON / text / HTML
// outputs carry the same numbers, and bad options fail with a message naming the value.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/sim.h"
#include "zgtest.h"

static void tiny_opts(zg_sim_opts *o) {
    zg_sim_opts_default(o);
    o->cluster = "8xA800";
    o->mixes = "V50";
    o->steps = 1;
}

static int progress_calls;
static void count_progress(void *ctx, int64_t done, int64_t total) {
    (void)ctx;
    if (done >= 1 && done <= total) progress_calls++;
}

ZG_TEST(sim_run_fills_cells_and_zellige_is_best) {
    zg_sim_opts o;
    tiny_opts(&o);
    o.progress = count_progress;
    progress_calls = 0;
    zg_sim_result r;
    zg_error e;
    CHECK_OK(zg_sim_run(&o, &r, &e), &e);
    CHECK_EQ_INT(r.n_mix, 1);
    CHECK_EQ_INT(r.n_pol, 7);
    CHECK_STR(r.policies[2], "megatron"); // beside the other baselines by default
    CHECK_STR(r.mixes[0], "V50");
    CHECK_STR(r.cluster.name, "8xA800");
    CHECK_EQ_INT(r.cluster.world_size, 8);
    CHECK(r.knap_index == 1 && !strcmp(r.policies[r.knap_index], "knapformer"));
    CHECK(progress_calls > r.n_pol); // knapformer tries several layouts
    int z = 0, n_ok = 0;
    CHECK_STR(r.policies[z], "zellige");
    double zm = zg_sim_cell_makespan(&r.cells[z]);
    CHECK(r.cells[z].ok == 1 && isfinite(zm) && zm > 0);
    for (int32_t p = 0; p < r.n_pol; p++) {
        const zg_sim_cell *c = &r.cells[p];
        CHECK_EQ_INT(c->ok + c->failed, 1);
        if (c->failed) {
            CHECK_MSG(c->first_err[0], "%s failed without a message", r.policies[p]);
            CHECK(isnan(zg_sim_cell_makespan(c)));
            continue;
        }
        n_ok++;
        CHECK(c->peak_mem_max > 0 && c->balance_sum >= 1.0 - 1e-9);
        CHECK_MSG(zm <= zg_sim_cell_makespan(c) * (1 + 1e-12), "zellige %.6g > %s %.6g", zm,
                  r.policies[p], zg_sim_cell_makespan(c));
        CHECK_MSG(r.gantt_plans[p].n > 0, "no Gantt plan for %s", r.policies[p]);
    }
    CHECK(n_ok >= 3);                     // zellige, knapformer, usp at least
    CHECK(r.cells[r.knap_index].bags[0]); // the chosen layout is recorded
    CHECK(r.gantt_batch.n > 0);

    // the JSON carries the cells' numbers
    cJSON *j = zg_sim_to_json(&r);
    CHECK(j);
    const cJSON *jz =
        cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "mixes"), "V50"), "zellige");
    CHECK(cJSON_IsNumber(cJSON_GetObjectItem(jz, "makespan_s")));
    CHECK(cJSON_GetObjectItem(jz, "makespan_s")->valuedouble == zm);
    // communicators: zellige one world communicator; megatron every aligned power-of-two block
    // of 8 ranks (4 + 2 + the world)
    CHECK(cJSON_GetObjectItem(jz, "communicators")->valuedouble == 1);
    const cJSON *jmg =
        cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "mixes"), "V50"), "megatron");
    CHECK(cJSON_GetObjectItem(jmg, "communicators")->valuedouble == 7);
    CHECK(cJSON_GetObjectItem(jmg, "communicators_per_rank")->valuedouble == 3);
    CHECK(r.cells[r.knap_index].communicators >= 1);
    cJSON_Delete(j);

    // the text table and the report
    char path[] = "/tmp/zg_test_simXXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    FILE *f = fdopen(fd, "w+");
    CHECK_OK(zg_sim_print(&r, f, &e), &e);
    rewind(f);
    char buf[4096];
    size_t got = fread(buf, 1, sizeof buf - 1, f);
    buf[got] = 0;
    fclose(f);
    CHECK(strstr(buf, "8xA800") && strstr(buf, "\nV50\n") && strstr(buf, "zellige"));
    CHECK_OK(zg_sim_write_report(&r, path, &e), &e);
    f = fopen(path, "r");
    CHECK(f);
    got = fread(buf, 1, 15, f);
    fclose(f);
    unlink(path);
    CHECK(got == 15 && !strncmp(buf, "<!DOCTYPE html>", 15));
    // a report that cannot be written fails and leaves nothing
    CHECK(zg_sim_write_report(&r, "/nonexistent-dir/r.html", &e) != ZG_OK);
    CHECK(access("/nonexistent-dir/r.html", F_OK) != 0);
    zg_sim_result_free(&r);
}

ZG_TEST(sim_run_is_deterministic) {
    zg_sim_opts o;
    tiny_opts(&o);
    o.policies = "zellige,usp";
    zg_sim_result a, b;
    zg_error e;
    CHECK_OK(zg_sim_run(&o, &a, &e), &e);
    CHECK_OK(zg_sim_run(&o, &b, &e), &e);
    for (int32_t p = 0; p < a.n_pol; p++) {
        CHECK(a.cells[p].makespan_sum == b.cells[p].makespan_sum);
        CHECK(a.cells[p].comm_sum == b.cells[p].comm_sum);
    }
    zg_sim_result_free(&a);
    zg_sim_result_free(&b);
}

static int64_t count(const char *hay, const char *needle) {
    int64_t n = 0;
    for (const char *q = hay; (q = strstr(q, needle)); q++) n++;
    return n;
}

// The report's headline, shared Gantt axis, legend and reasons on a real run with a failure (dp
// cannot place the 498K-token video whole) and a plan over the cap (KnapFormer choosing its
// layout by makespan alone).
ZG_TEST(sim_report_has_headline_shared_axis_and_reasons) {
    zg_sim_opts o;
    tiny_opts(&o);
    o.policies = "zellige,knapformer,dp";
    o.knap_ignore_memory = 1;
    zg_sim_result r;
    zg_error e;
    CHECK_OK(zg_sim_run(&o, &r, &e), &e);
    CHECK(r.cells[1].over_cap == 1 && r.cells[2].failed == 1 && r.cells[0].ok == 1);
    char path[] = "/tmp/zg_test_simrepXXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    CHECK_OK(zg_sim_write_report(&r, path, &e), &e);
    char *d = NULL;
    CHECK_OK(zg_file_read(path, &d, NULL, &e), &e);
    unlink(path);
    // headline: zellige wins (knapformer is over the cap, dp failed), each other policy listed
    char want[256];
    snprintf(want, sizeof want, "<h1>zellige is fastest on V50: %.2f s per step</h1>",
             zg_sim_cell_makespan(&r.cells[0]));
    CHECK_MSG(strstr(d, want), "no '%s'", want);
    // (no speed-up over a plan over the cap: it is no reference, docs/planners.md §4b)
    snprintf(want, sizeof want, "<li class='over-cap'>knapformer (%s) (%.2f s) — over the "
             "memory cap: 1 of 1 plans exceed the memory cap: peak ",
             r.cells[1].bags, zg_sim_cell_makespan(&r.cells[1]));
    CHECK_MSG(strstr(d, want), "no '%s'", want);
    CHECK(strstr(d, "<li class='failed'>dp — failed: no plan for 1 of 1 steps: "));
    CHECK(strstr(d, " (KnapFormer plans without looking at memory; such a step would run out of "
                    "memory)</li>"));
    CHECK(strstr(d, "Cluster <b>8xA800</b> (8 ranks of A800), model <b>wan2.1-1.3b</b>, mix "
                    "<b>V50</b> (50% of the tokens in videos)"));
    CHECK(strstr(d, "memory cap <b>76.0 GiB per rank</b>"));
    // two Gantts (dp has none: its reason instead) on one axis: the slower plan's makespan
    double axis = fmax(r.gantt_plans[0].makespan, r.gantt_plans[1].makespan);
    snprintf(want, sizeof want, "class='gantt' data-axis-s='%.6g'", axis);
    CHECK_EQ_INT(count(d, want), 2);
    CHECK_EQ_INT(count(d, "class='gantt'"), 2);
    CHECK(strstr(d, "id='gantt-legend'"));
    CHECK(strstr(d, "<figure class='gantt-fig over-cap'><figcaption>knapformer"));
    CHECK(strstr(d, "OVER the 76.0 GiB memory cap</figcaption>"));
    CHECK(strstr(d, "<figure class='gantt-missing'><figcaption>dp — no plan for this step"
                    "</figcaption><p class='failure'>no plan for 1 of 1 steps: dp: sequence "));
    // the problems table: one row each, with the reason
    CHECK(strstr(d, "<tr class='failed'><td>V50</td><td>dp</td><td>1/1</td><td>0/1</td>"));
    CHECK(strstr(d, "<tr class='over-cap'><td>V50</td><td>knapformer ("));
    CHECK(count(d, "<rect") < 2000);
    free(d);
    zg_sim_result_free(&r);
}

ZG_TEST(sim_run_rejects_bad_options) {
    struct {
        const char *mixes, *policies, *family;
        int64_t steps;
        int32_t vsec;
        const char *needle;
    } bad[] = {
        {"V50,V99x", "zellige", "node", 1, 15, "V99x"},
        {"V50", "zellige,magic", "node", 1, 15, "magic"},
        {"V50,V99", "zellige", "node", 1, 15, "--mix: mix 'V99' is not one of the paper's mixes"},
        {"V5", "zellige", "node", 1, 15, "V35, V40, V45, V50, V55, V60"},
        {"V50", "zellige,magic", "node", 1, 15, "--policies: unknown policy 'magic'"},
        {"V50", "zellige", "node", 0, 15, "--steps: '0' is out of range (>= 1)"},
        {"V50", "zellige", "node", 1, 12, "--video-seconds: '12' is not one of 10, 15"},
        {"V50", "zellige", "diagonal", 1, 15, "diagonal"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zg_sim_opts o;
        tiny_opts(&o);
        o.mixes = bad[i].mixes, o.policies = bad[i].policies, o.family = bad[i].family;
        o.steps = bad[i].steps, o.video_seconds = bad[i].vsec;
        zg_sim_result r;
        zg_error e = {0};
        zg_status st = zg_sim_run(&o, &r, &e);
        CHECK_MSG(st == ZG_ERR_INVALID || st == ZG_ERR_PARSE, "case %zu: status %d", i, st);
        CHECK_MSG(strstr(e.msg, bad[i].needle), "case %zu: '%s' lacks '%s'", i, e.msg,
                  bad[i].needle);
        CHECK(r.cells == NULL && r.gantt_plans == NULL); // nothing left allocated
    }
    zg_sim_opts o;
    tiny_opts(&o);
    o.model = "wan9";
    zg_sim_result r;
    zg_error e = {0};
    CHECK(zg_sim_run(&o, &r, &e) != ZG_OK && strstr(e.msg, "wan9"));
}

ZG_TEST_MAIN()
