// test_profile.c — profiler pieces that need no timing: memory-model fit (exact recovery),
// catalogs, the fidelity design (rotation coverage, corner plans, predictions) and its summary.
#include <fcntl.h>
#include <unistd.h>

#include "profile/profile.h"
#include "zgtest.h"

ZG_TEST(memory_fit_recovers_exact_coefficients) {
    zg_mem_obs obs[6] = {{0, 0, 0, 0}, {100, 8, 1, 0}, {50, 8, 1, 0}, {64, 10, 4, 0},
                         {128, 16, 2, 0}, {300, 8, 1, 0}};
    for (int i = 0; i < 6; i++)
        obs[i].peak = 2e6 + 1234.5 * obs[i].tokens + 77 * obs[i].text_rows + 999 * obs[i].samples;
    zg_cost_table t;
    zg_cost_table_init_empty(&t);
    CHECK(zg_profile_fit_memory(obs, 6, &t, NULL) == ZG_OK);
    CHECK_NEAR(t.mem_base, 2e6, 1e-3, 1e-9);
    CHECK_NEAR(t.mem_per_token, 1234.5, 1e-6, 1e-9);
    CHECK_NEAR(t.mem_per_text, 77, 1e-6, 1e-8);
    CHECK_NEAR(t.mem_per_sample, 999, 1e-6, 1e-8);
    CHECK(t.mem_fit_max_err < 1e-9);
    // collinear text rows and samples (always 8 per sample): the later feature is dropped
    zg_mem_obs col[4] = {{0, 0, 0, 0}, {10, 8, 1, 0}, {20, 16, 2, 0}, {40, 8, 1, 0}};
    for (int i = 0; i < 4; i++) col[i].peak = 500 + 10 * col[i].tokens + 3 * col[i].text_rows;
    CHECK(zg_profile_fit_memory(col, 4, &t, NULL) == ZG_OK);
    CHECK(t.mem_fit_max_err < 1e-9);
    zg_error e = {0};
    CHECK(zg_profile_fit_memory(obs, 1, &t, &e) == ZG_ERR_INVALID);
}

ZG_TEST(catalogs) {
    zg_model m;
    zg_model_preset("tiny", &m, NULL);
    zg_catalog c;
    CHECK(zg_profile_catalog_load("cpu", &m, &c, NULL) == ZG_OK);
    CHECK_EQ_INT(c.n, 9);
    const zg_bucket *b = zg_catalog_find(&c, "128p-5f");
    CHECK(b && b->tokens == 2 * 8 * 12 && b->kind == ZG_SEQ_VIDEO);  // 2 latent frames, 8x12
    b = zg_catalog_find(&c, "64p-img");
    CHECK(b && b->tokens == 16 && b->kind == ZG_SEQ_IMAGE);
    zg_catalog_free(&c);
    char path[] = "/tmp/zg_test_catalog_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    const char *txt = "{\"buckets\":[{\"name\":\"v\",\"frames\":9,\"height\":64,\"width\":64},"
                      "{\"name\":\"t\",\"kind\":\"image\",\"tokens\":40}]}";
    CHECK(write(fd, txt, strlen(txt)) == (ssize_t)strlen(txt));
    close(fd);
    CHECK(zg_profile_catalog_load(path, &m, &c, NULL) == ZG_OK);
    CHECK_EQ_INT(c.n, 2);
    CHECK(c.buckets[0].tokens == 3 * 16 && c.buckets[0].kind == ZG_SEQ_VIDEO);
    CHECK(c.buckets[1].tokens == 40 && c.buckets[1].kind == ZG_SEQ_IMAGE);
    zg_catalog_free(&c);
    const char *bad = "{\"buckets\":[{\"name\":\"v\",\"frames\":9},{\"name\":\"v\",\"tokens\":3}]}";
    fd = open(path, O_WRONLY | O_TRUNC);
    CHECK(fd >= 0 && write(fd, bad, strlen(bad)) == (ssize_t)strlen(bad));
    close(fd);
    zg_error e = {0};
    CHECK(zg_profile_catalog_load(path, &m, &c, &e) == ZG_ERR_INVALID);
    CHECK(strstr(e.msg, path) != NULL);
    unlink(path);
    // mix:SECONDS:DIVISOR: the buckets `train --mix --mix-divisor` draws (zg_catalog_mix)
    CHECK(zg_profile_catalog_load("mix:10:128", &m, &c, NULL) == ZG_OK);
    CHECK_EQ_INT(c.n, 7);
    b = zg_catalog_find(&c, "1080p-10s");
    CHECK(b && b->tokens == 2614 && b->kind == ZG_SEQ_VIDEO);  // 334560 / 128 = 2613.75
    CHECK(zg_catalog_find(&c, "1080p-15s") == NULL);
    zg_catalog_free(&c);
    const char *bad_specs[] = {"mix:15", "mix:15:0", "mix:x:8", "mix:15:8x", "mix:12:8"};
    for (int i = 0; i < 5; i++) {
        zg_error_clear(&e);
        CHECK_MSG(zg_profile_catalog_load(bad_specs[i], &m, &c, &e) == ZG_ERR_INVALID, "%s",
                  bad_specs[i]);
        CHECK_MSG(strstr(e.msg, i < 4 ? bad_specs[i] : "12 s") != NULL, "%s: %s", bad_specs[i],
                  e.msg);
    }
}

// A synthetic table for tiny on 2 ranks: time = a * tokens per config, memory linear.
static void synth_table(const zg_model *m, const zg_catalog *cat, zg_cost_table *t) {
    zg_cost_table_init_empty(t);
    snprintf(t->model, sizeof t->model, "%s", m->name);
    t->world_size = 2;
    t->overhead_s = 0.01;
    t->mem_base = 1e6, t->mem_per_token = 1000, t->mem_per_text = 10, t->mem_per_sample = 100;
    zg_config cf[4] = {{1, 1, 1}, {1, 1, 2}, {1, 2, 1}, {2, 1, 1}};
    for (int32_t b = 0; b < cat->n; b++)
        for (int c = 0; c < 4; c++) {
            zg_cost_table_entry e;
            memset(&e, 0, sizeof e);
            snprintf(e.bucket, sizeof e.bucket, "%s", cat->buckets[b].name);
            e.tokens = cat->buckets[b].tokens;
            e.config = cf[c];
            e.time = 1e-4 * (double)e.tokens * (c == 0 ? 1.0 : 0.6);
            zg_cost_table_push(t, &e, NULL);
        }
}

ZG_TEST(fidelity_design_rotation_and_corners) {
    zg_model m;
    zg_cluster cl;
    zg_catalog cat;
    zg_model_preset("tiny", &m, NULL);
    zg_cluster_preset("cpu:2", &cl, NULL);
    zg_profile_cpu_catalog(&m, &cat, NULL);
    zg_cost_table t;
    synth_table(&m, &cat, &t);
    zg_pricer pr;
    zg_error e = {0};
    CHECK(zg_cost_table_init(&pr, &t, &m, &cl, &e) == ZG_OK);
    zg_fidelity_opts o;
    zg_fidelity_opts_default(&o);
    zg_fidelity_plan *p = NULL;
    int32_t n = 0;
    CHECK(zg_fidelity_design(&m, &cl, &cat, &pr, t.overhead_s, &o, &p, &n, &e) == ZG_OK);
    // 4 configs -> blocks of 4 mixed plans; ceil(18/4) = 5 blocks -> 20 mixed + 3 corners
    CHECK_EQ_INT(n, 23);
    // per block: every (video bucket, config) pair exactly once
    for (int32_t bl = 0; bl < 5; bl++) {
        int seen[16][4];
        memset(seen, 0, sizeof seen);
        for (int32_t j = 0; j < 4; j++) {
            const zg_fidelity_plan *fp = &p[bl * 4 + j];
            CHECK_EQ_INT(fp->item.batch.n, 3 + o.images);
            for (int64_t i = 0; i < 3; i++) {
                const zg_placement *pl = &fp->item.plan.p[i];
                int32_t bi = (int32_t)(zg_catalog_find(&cat, fp->item.batch.seqs[i].bucket) -
                                       cat.buckets);
                int ci = pl->config.k == 2 ? 1 : pl->config.h == 2 ? 2 : pl->config.q == 2 ? 3 : 0;
                seen[bi][ci]++;
            }
            for (int64_t i = 3; i < fp->item.batch.n; i++)
                CHECK(zg_config_is_whole(fp->item.plan.p[i].config));
            CHECK(zg_plan_validate(&fp->item.plan, &fp->item.batch, &m, &e) == ZG_OK);
            CHECK_NEAR(fp->pred_time, fp->item.plan.makespan + 0.01, 0, 1e-12);
        }
        int pairs = 0;
        for (int b = 0; b < 16; b++)
            for (int c = 0; c < 4; c++) {
                CHECK(seen[b][c] <= 1);
                pairs += seen[b][c];
            }
        CHECK_EQ_INT(pairs, 12);  // 3 videos x 4 configs
    }
    for (int32_t c = 20; c < 23; c++) {
        CHECK(strstr(p[c].name, "corner") != NULL);
        for (int64_t i = 0; i < p[c].item.batch.n; i++)
            CHECK(zg_config_is_whole(p[c].item.plan.p[i].config));
        // memory prediction = max over ranks of base + Σ (1000 * tokens + 10 * 8 + 100)
        double mem[2] = {1e6, 1e6};
        for (int64_t i = 0; i < p[c].item.batch.n; i++)
            mem[p[c].item.plan.p[i].ranks[0]] += 1000.0 * (double)p[c].item.batch.seqs[i].tokens + 180;
        CHECK_NEAR(p[c].pred_mem, mem[0] > mem[1] ? mem[0] : mem[1], 0, 1e-12);
    }
    // summary: hand-made measurements
    for (int32_t i = 0; i < n; i++) {
        p[i].meas_time = p[i].pred_time * (i % 2 ? 1.1 : 0.9);  // |err| = 10%/1.1 or 10%/0.9
        p[i].meas_mem = p[i].pred_mem;
    }
    zg_fidelity_summary s;
    zg_fidelity_summarize(p, n, t.overhead_s, &s);
    CHECK_EQ_INT(s.plans, 23);
    double want = (12 * (0.1 / 0.9) + 11 * (0.1 / 1.1)) * 100 / 23;
    CHECK_NEAR(s.mape_time, want, 1e-9, 1e-9);
    CHECK(s.mape_mem == 0 && s.mae_mem == 0);
    zg_fidelity_free(p, n);
    zg_pricer_free(&pr);
    zg_cost_table_free(&t);
    zg_catalog_free(&cat);
}

ZG_TEST(median_and_clock_names) {
    double v[5] = {5, 1, 4, 2, 3};
    CHECK(zg_profile_median(v, 5) == 3);
    CHECK(zg_profile_median(v, 4) == 3);  // {1,2,4,5} -> 3
    zg_profile_clock c;
    CHECK(zg_profile_clock_parse("cpu", &c, NULL) == ZG_OK && c == ZG_PROFILE_CLOCK_CPU);
    CHECK(zg_profile_clock_parse("wall", &c, NULL) == ZG_OK && c == ZG_PROFILE_CLOCK_WALL);
    zg_error e = {0};
    CHECK(zg_profile_clock_parse("sundial", &c, &e) == ZG_ERR_INVALID);
    CHECK_STR(zg_profile_clock_name(ZG_PROFILE_CLOCK_CPU), "cpu");
}

ZG_TEST(repeatability_of_rounds) {
    // item 0: rounds 1,3,1,3 -> even rounds {1,1}, odd {3,3}, all median 2 -> 100 %
    // item 1: identical rounds -> 0 %
    double t[8] = {1, 3, 1, 3, 5, 5, 5, 5};
    CHECK_NEAR(zg_fidelity_repeat_pct(t, 2, 4, ZG_PROFILE_STAT_MEDIAN), 50, 1e-12, 0);
    // min: odd {3,3} -> 3, even {1,1} -> 1, all 1 -> 200 % for item 0
    CHECK_NEAR(zg_fidelity_repeat_pct(t, 2, 4, ZG_PROFILE_STAT_MIN), 100, 1e-12, 0);
    CHECK(zg_fidelity_repeat_pct(t, 2, 1, ZG_PROFILE_STAT_MEDIAN) == 0);
    CHECK(zg_fidelity_repeat_pct(t, 0, 4, ZG_PROFILE_STAT_MEDIAN) == 0);
    double v[4] = {4, 2, 9, 3};
    CHECK(zg_profile_stat_of(v, 4, ZG_PROFILE_STAT_MIN) == 2);
    CHECK(zg_profile_stat_of(v, 4, ZG_PROFILE_STAT_MEDIAN) == 3.5);
    zg_profile_stat s;
    CHECK(zg_profile_stat_parse("min", &s, NULL) == ZG_OK && s == ZG_PROFILE_STAT_MIN);
    zg_error e = {0};
    CHECK(zg_profile_stat_parse("mean", &s, &e) == ZG_ERR_INVALID);
    CHECK_STR(zg_profile_stat_name(ZG_PROFILE_STAT_MEDIAN), "median");
}

ZG_TEST(priming_runs_the_largest_item_then_item_0) {
    zg_model m;
    zg_comm comm;
    zg_trainer tr;
    CHECK(zg_model_preset("tiny", &m, NULL) == ZG_OK);
    CHECK(zg_comm_self_init(&comm, NULL) == ZG_OK);
    zg_train_opts to;
    zg_train_opts_default(&to);
    CHECK(zg_trainer_init(&tr, &m, &comm, &to, NULL) == ZG_OK);
    // item 0 empty, then whole sequences of 4, 32 and 8 tokens
    int32_t tokens[4] = {0, 4, 32, 8};
    zg_profile_item items[4];
    for (int32_t i = 0; i < 4; i++) {
        zg_batch_init(&items[i].batch);
        zg_plan_init(&items[i].plan);
        int32_t k = tokens[i] > 0;
        if (k) {
            zg_seq s;
            zg_seq_init(&s);
            s.tokens = tokens[i], s.frames = 1, s.height = 2, s.width = tokens[i] / 2;
            s.text_tokens = m.text_len > 0 ? m.text_len : 1;
            CHECK(zg_batch_push(&items[i].batch, &s, NULL) == ZG_OK);
        }
        CHECK(zg_plan_alloc(&items[i].plan, k, 1, NULL) == ZG_OK);
        zg_option o = {{1, 1, 1}, 0, 0, 0};
        if (k)
            CHECK(zg_plan_set_option(&items[i].plan, 0, &items[i].batch.seqs[0], 0, &o, NULL) ==
                  ZG_OK);
    }
    int32_t primed = -7;
    CHECK(zg_profile_prime(&tr, items, 4, &primed, NULL) == ZG_OK);
    CHECK(primed == 2 && tr.step == 2); // the 32-token item, then the empty one
    CHECK(zg_profile_prime(&tr, items, 1, &primed, NULL) == ZG_OK);
    CHECK(primed == 0 && tr.step == 3); // item 0 is the largest: one step
    CHECK(zg_profile_prime(&tr, items, 0, &primed, NULL) == ZG_OK && primed == -1 && tr.step == 3);
    for (int32_t i = 0; i < 4; i++)
        zg_batch_free(&items[i].batch), zg_plan_free(&items[i].plan);
    zg_trainer_free(&tr);
    zg_comm_free(&comm);
}

ZG_TEST_MAIN()
