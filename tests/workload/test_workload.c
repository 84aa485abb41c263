// test_workload.c — batches, JSON/JSONL I/O, catalog, the paper's mixes, KnapFormer codes.
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "workload/workload.h"
#include "zgtest.h"

static zg_model wan(void) {
    zg_model m;
    zg_error err;
    if (zg_model_preset("wan2.1-1.3b", &m, &err)) abort();
    return m;
}

#define CHECK_HAS(msg, sub)                                                                        \
    CHECK_MSG(strstr((msg), (sub)) != NULL, "message \"%s\" lacks \"%s\"", (msg), (sub))

// ---- catalog -------------------------------------------------------------------------------

ZG_TEST(catalog_default_tokens) {
    zg_model m = wan();
    zg_catalog c;
    zg_error err;
    CHECK_OK(zg_catalog_default(&m, &c, &err), &err);
    CHECK_EQ_INT(c.n, 13);
    static const struct {
        const char *name;
        int frames, h, w;
        long long tokens;
        zg_seq_kind kind;
    } want[] = {
        {"256p-img", 1, 256, 256, 256, ZG_SEQ_IMAGE},
        {"480p-img", 1, 480, 832, 1560, ZG_SEQ_IMAGE},
        {"720p-img", 1, 720, 1280, 3600, ZG_SEQ_IMAGE},
        {"1080p-img", 1, 1080, 1920, 8160, ZG_SEQ_IMAGE},
        {"480p-5s", 81, 480, 832, 32760, ZG_SEQ_VIDEO},
        {"480p-10s", 161, 480, 832, 63960, ZG_SEQ_VIDEO},
        {"480p-15s", 241, 480, 832, 95160, ZG_SEQ_VIDEO},
        {"720p-5s", 81, 720, 1280, 75600, ZG_SEQ_VIDEO},
        {"720p-10s", 161, 720, 1280, 147600, ZG_SEQ_VIDEO},
        {"720p-15s", 241, 720, 1280, 219600, ZG_SEQ_VIDEO},
        {"1080p-5s", 81, 1080, 1920, 171360, ZG_SEQ_VIDEO},
        {"1080p-10s", 161, 1080, 1920, 334560, ZG_SEQ_VIDEO},
        {"1080p-15s", 241, 1080, 1920, 497760, ZG_SEQ_VIDEO},
    };
    for (int i = 0; i < 13; i++) {
        const zg_bucket *b = &c.buckets[i];
        CHECK_STR(b->name, want[i].name);
        CHECK_EQ_INT(b->frames, want[i].frames);
        CHECK_EQ_INT(b->height, want[i].h);
        CHECK_EQ_INT(b->width, want[i].w);
        CHECK_EQ_INT(b->tokens, want[i].tokens);
        CHECK_EQ_INT(b->kind, want[i].kind);
        CHECK(zg_catalog_find(&c, want[i].name) == b);
    }
    CHECK(zg_catalog_find(&c, "1440p-img") == NULL);
    CHECK(zg_catalog_find(&c, NULL) == NULL);
    CHECK_EQ_INT(zg_video_frames(5), 81);
    CHECK_EQ_INT(zg_video_frames(10), 161);
    CHECK_EQ_INT(zg_video_frames(15), 241);
    zg_catalog_free(&c);
    CHECK_EQ_INT(c.n, 0);
    CHECK(zg_catalog_default(NULL, &c, &err) == ZG_ERR_INVALID);
}

// ---- batch container -----------------------------------------------------------------------

ZG_TEST(batch_push_total_validate) {
    zg_batch b;
    zg_batch_init(&b);
    zg_error err;
    for (int i = 0; i < 100; i++) {
        zg_seq s;
        zg_seq_init(&s);
        s.id = i;
        s.tokens = i + 1;
        s.origin_rank = i % 4;
        CHECK_OK(zg_batch_push(&b, &s, &err), &err);
    }
    CHECK_EQ_INT(b.n, 100);
    CHECK_EQ_INT(zg_batch_total_tokens(&b), 5050);
    CHECK_OK(zg_batch_validate(&b, 4, &err), &err);
    CHECK_OK(zg_batch_validate(&b, 0, &err), &err);
    CHECK(zg_batch_validate(&b, 3, &err) == ZG_ERR_INVALID);
    CHECK_HAS(err.msg, "origin_rank 3");
    b.seqs[7].id = 42;
    CHECK(zg_batch_validate(&b, 4, &err) == ZG_ERR_INVALID);
    CHECK_HAS(err.msg, "id 42");
    CHECK_HAS(err.msg, "7");
    b.seqs[7].id = 7;
    b.seqs[9].tokens = 0;
    CHECK(zg_batch_validate(&b, 4, &err) == ZG_ERR_INVALID);
    CHECK_HAS(err.msg, "tokens = 0");
    b.seqs[9].tokens = 10;
    b.seqs[9].origin_rank = -2;
    CHECK(zg_batch_validate(&b, 4, &err) == ZG_ERR_INVALID);
    zg_batch_free(&b);
    CHECK_EQ_INT(b.n, 0);
    CHECK(b.seqs == NULL);
}

// ---- JSON ----------------------------------------------------------------------------------

static zg_status parse_batch(const char *text, const zg_model *m, zg_batch *b, zg_error *err) {
    return zg_batch_parse(text, "test", m, b, err);
}

ZG_TEST(batch_json_round_trip) {
    zg_batch b, c;
    zg_batch_init(&b);
    zg_error err;
    zg_seq s;
    zg_seq_init(&s);
    s.id = 0, s.tokens = 32760, s.kind = ZG_SEQ_VIDEO, s.frames = 81, s.height = 480, s.width = 832,
    s.text_tokens = 512, s.origin_rank = 3;
    snprintf(s.bucket, sizeof s.bucket, "480p-5s");
    CHECK_OK(zg_batch_push(&b, &s, &err), &err);
    zg_seq_init(&s);
    s.id = ZG_SEQ_MAX_ID, s.tokens = (int64_t)1 << 40, s.kind = ZG_SEQ_IMAGE;
    CHECK_OK(zg_batch_push(&b, &s, &err), &err);
    zg_seq_init(&s);
    s.id = 5, s.tokens = 1;
    CHECK_OK(zg_batch_push(&b, &s, &err), &err);

    cJSON *j = zg_batch_to_json(&b);
    CHECK(j != NULL);
    CHECK_OK(zg_batch_from_json(j, NULL, &c, &err), &err);
    cJSON_Delete(j);
    CHECK_EQ_INT(c.n, b.n);
    CHECK(memcmp(c.seqs, b.seqs, sizeof(zg_seq) * (size_t)b.n) == 0);
    zg_batch_free(&c);

    // through a file (atomic write), read back by content detection
    char dir[] = "/tmp/zg_wl_test_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/batch.json", dir);
    CHECK_OK(zg_batch_write_file(path, &b, &err), &err);
    CHECK_OK(zg_batch_read_file(path, NULL, &c, &err), &err);
    CHECK_EQ_INT(c.n, b.n);
    CHECK(memcmp(c.seqs, b.seqs, sizeof(zg_seq) * (size_t)b.n) == 0);
    zg_batch_free(&c);
    // an invalid batch is not written
    char bad[256];
    snprintf(bad, sizeof bad, "%s/bad.json", dir);
    b.seqs[2].tokens = -1;
    CHECK(zg_batch_write_file(bad, &b, &err) == ZG_ERR_INVALID);
    CHECK(access(bad, F_OK) != 0);
    CHECK(zg_batch_read_file(bad, NULL, &c, &err) == ZG_ERR_IO);
    unlink(path);
    rmdir(dir);
    zg_batch_free(&b);
}

ZG_TEST(batch_json_minimal_and_computed_tokens) {
    zg_model m = wan();
    zg_batch b;
    zg_error err;
    CHECK_OK(parse_batch("{\"sequences\":[{\"tokens\":5},{\"tokens\":7}]}", NULL, &b, &err), &err);
    CHECK_EQ_INT(b.n, 2);
    CHECK_EQ_INT(b.seqs[0].id, 0);
    CHECK_EQ_INT(b.seqs[1].id, 1);
    CHECK_EQ_INT(b.seqs[1].tokens, 7);
    CHECK_EQ_INT(b.seqs[1].kind, ZG_SEQ_OTHER);
    CHECK_EQ_INT(b.seqs[1].origin_rank, -1);
    zg_batch_free(&b);

    const char *geo = "{\"version\":1,\"sequences\":[{\"frames\":81,\"height\":480,\"width\":832},"
                      "{\"height\":720,\"width\":1280},"
                      "{\"kind\":\"video\",\"frames\":241,\"height\":1080,\"width\":1920},"
                      "{\"tokens\":99,\"frames\":241,\"height\":1080,\"width\":1920}]}";
    CHECK_OK(parse_batch(geo, &m, &b, &err), &err);
    CHECK_EQ_INT(b.n, 4);
    CHECK_EQ_INT(b.seqs[0].tokens, 32760);
    CHECK_EQ_INT(b.seqs[0].kind, ZG_SEQ_VIDEO);
    CHECK_EQ_INT(b.seqs[1].tokens, 3600);
    CHECK_EQ_INT(b.seqs[1].kind, ZG_SEQ_IMAGE);
    CHECK_EQ_INT(b.seqs[1].frames, 1);
    CHECK_EQ_INT(b.seqs[2].tokens, 497760);
    CHECK_EQ_INT(b.seqs[3].tokens, 99); // given tokens win over the geometry
    zg_batch_free(&b);
    // geometry without a model, or a video without frames
    CHECK(parse_batch(geo, NULL, &b, &err) == ZG_ERR_INVALID);
    CHECK_HAS(err.msg, "sequence 0");
    CHECK_HAS(err.msg, "model");
    CHECK(parse_batch("[{\"kind\":\"video\",\"height\":480,\"width\":832}]", &m, &b, &err) ==
          ZG_ERR_INVALID);
    CHECK_HAS(err.msg, "frames");
    CHECK(parse_batch("[{\"height\":480}]", &m, &b, &err) == ZG_ERR_INVALID);
    CHECK_HAS(err.msg, "tokens");
    // a bare array of samples is a batch too
    CHECK_OK(parse_batch("[{\"tokens\":3,\"id\":4}]", NULL, &b, &err), &err);
    CHECK_EQ_INT(b.n, 1);
    CHECK_EQ_INT(b.seqs[0].id, 4);
    zg_batch_free(&b);
}

// Each bad input must fail with the given status and a message holding every listed piece.
ZG_TEST(batch_json_bad_inputs) {
    static const struct {
        const char *text;
        zg_status st;
        const char *msg1, *msg2;
    } cases[] = {
        {"{\"sequences\":[{\"tokens\":5},", ZG_ERR_PARSE, "malformed JSON", "line 1"},
        {"{\"sequences\":[{\"tokens\":-5}]}", ZG_ERR_INVALID, "\"tokens\" = -5", "sequence 0"},
        {"{\"sequences\":[{\"tokens\":1},{\"tokens\":0}]}", ZG_ERR_INVALID, "\"tokens\" = 0",
         "sequence 1"},
        {"{\"sequences\":[{\"tokens\":1,\"id\":3},{\"tokens\":2,\"id\":3}]}", ZG_ERR_INVALID,
         "id 3", "sequences 0 and 1"},
        {"{\"sequences\":[{\"tokens\":1,\"id\":1},{\"tokens\":2}]}", ZG_ERR_INVALID, "id 1",
         "unique"},
        {"{\"sequences\":[{\"tokens\":1,\"kind\":\"audio\"}]}", ZG_ERR_INVALID, "\"audio\"",
         "kind"},
        {"{\"sequences\":[{\"tokens\":1,\"kind\":7}]}", ZG_ERR_INVALID, "\"kind\"", "string"},
        {"{\"sequences\":[{\"tokens\":\"12\"}]}", ZG_ERR_INVALID, "\"tokens\"", "\"12\""},
        {"{\"sequences\":[{\"tokens\":1.5}]}", ZG_ERR_INVALID, "1.5", "not an integer"},
        {"{\"sequences\":[{\"tokens\":true}]}", ZG_ERR_INVALID, "\"tokens\"", "true"},
        {"{\"sequences\":[{\"tokens\":1e300}]}", ZG_ERR_INVALID, "\"tokens\"", "out of range"},
        {"{\"sequences\":[{\"tokens\":4,\"id\":-1}]}", ZG_ERR_INVALID, "\"id\" = -1", "range"},
        {"{\"sequences\":[{\"tokens\":4,\"origin_rank\":-2}]}", ZG_ERR_INVALID, "origin_rank",
         "-2"},
        {"{\"sequences\":[{\"tokens\":4,\"frames\":0}]}", ZG_ERR_INVALID, "\"frames\" = 0",
         "sequence 0"},
        {"{\"sequences\":[{\"tokens\":4,\"bucket\":\"0123456789012345678901234567890123\"}]}",
         ZG_ERR_INVALID, "bucket", "too long"},
        {"{\"sequences\":[{\"tokens\":4,\"bucket\":5}]}", ZG_ERR_INVALID, "bucket", "string"},
        {"{\"sequences\":[{\"tokens\":4},[1]]}", ZG_ERR_INVALID, "sequence 1", "an array"},
        {"{\"sequences\":{\"tokens\":4}}", ZG_ERR_INVALID, "sequences", "array"},
        {"{\"sequences\":[{\"tokens\":4}], \"x\":", ZG_ERR_PARSE, "malformed", "column"},
        {"{\"batch\":[]}", ZG_ERR_INVALID, "tokens", "sequence 0"}, // a one-sample trace
        {"42", ZG_ERR_INVALID, "expected a batch", "test"},
        {"   \n ", ZG_ERR_PARSE, "empty", "test"},
        {"[1, 2", ZG_ERR_PARSE, "malformed", "line 1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        zg_batch b;
        zg_error err;
        zg_error_clear(&err);
        zg_status st = parse_batch(cases[i].text, NULL, &b, &err);
        CHECK_MSG(st == cases[i].st, "case %zu (%s): status %d, want %d (%s)", i, cases[i].text,
                  (int)st, (int)cases[i].st, err.msg);
        CHECK_EQ_INT(b.n, 0);
        CHECK_HAS(err.msg, cases[i].msg1);
        CHECK_HAS(err.msg, cases[i].msg2);
    }
    // the plain JSON path too
    cJSON *j = NULL;
    zg_error err;
    CHECK(zg_json_parse("{\"sequences\":[", "x.json", &j, &err) == ZG_ERR_PARSE);
    CHECK(j == NULL);
}

ZG_TEST(jsonl_trace) {
    zg_model m = wan();
    zg_batch b;
    zg_error err;
    const char *t = "{\"tokens\":5}\n\n  \n{\"tokens\":6,\"id\":9}\r\n"
                    "{\"frames\":161,\"height\":720,\"width\":1280,\"origin_rank\":2}";
    CHECK_OK(parse_batch(t, &m, &b, &err), &err);
    CHECK_EQ_INT(b.n, 3);
    CHECK_EQ_INT(b.seqs[0].id, 0);
    CHECK_EQ_INT(b.seqs[1].id, 9);
    CHECK_EQ_INT(b.seqs[2].id, 2); // the sample's index (blank lines do not count)
    CHECK_EQ_INT(b.seqs[2].tokens, 147600);
    CHECK_EQ_INT(b.seqs[2].origin_rank, 2);
    zg_batch_free(&b);
    // a one-line trace is one sample
    CHECK_OK(parse_batch("{\"tokens\":11}\n", NULL, &b, &err), &err);
    CHECK_EQ_INT(b.n, 1);
    CHECK_EQ_INT(b.seqs[0].tokens, 11);
    zg_batch_free(&b);
    // errors name the line
    CHECK(parse_batch("{\"tokens\":5}\n\n{\"tokens\":\n{\"tokens\":1}", NULL, &b, &err) ==
          ZG_ERR_PARSE);
    CHECK_HAS(err.msg, "test line 3");
    CHECK(parse_batch("{\"tokens\":5}\n{\"tokens\":1}\n\n{\"tokens\":-3}\n", NULL, &b, &err) ==
          ZG_ERR_INVALID);
    CHECK_HAS(err.msg, "line 4");
    CHECK_HAS(err.msg, "-3");
    CHECK(parse_batch("{\"tokens\":5}\n{\"tokens\":1,\"id\":0}\n", NULL, &b, &err) ==
          ZG_ERR_INVALID);
    CHECK_HAS(err.msg, "id 0");
    CHECK(parse_batch("{\"tokens\":5}\n[1]\n", NULL, &b, &err) == ZG_ERR_INVALID);
    CHECK_HAS(err.msg, "line 2");
    CHECK(zg_batch_from_jsonl("\n\n", "t.jsonl", NULL, &b, &err) == ZG_ERR_INVALID);
    CHECK_HAS(err.msg, "no samples");
    // file path: detection by content, not by name
    char dir[] = "/tmp/zg_wl_test_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/trace.json", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs("{\"tokens\":1}\n{\"tokens\":2}\n", f);
    fclose(f);
    CHECK_OK(zg_batch_read_file(path, NULL, &b, &err), &err);
    CHECK_EQ_INT(b.n, 2);
    zg_batch_free(&b);
    f = fopen(path, "w");
    fputs("{\"tokens\":1}\n{\"tok", f);
    fputc('\0', f);
    fclose(f);
    CHECK(zg_batch_read_file(path, NULL, &b, &err) == ZG_ERR_PARSE);
    CHECK_HAS(err.msg, "NUL");
    unlink(path);
    rmdir(dir);
}

// ---- KnapFormer data codes -----------------------------------------------------------------

static const char *joint_mix = "g8b4i256f1s0,g2b5i512f1s0,g2b5i1024f1s0,g4b1i2048f1s0,"
                               "g1b10i256f4s0,g3b1i512f4s0,g8b2i256f85s1,g4b1i512f85s1";

ZG_TEST(knap_visual_tokens) {
    static const struct {
        const char *code;
        long long tokens;
    } cases[] = {
        {"g1b1i256f1s0", 256},    {"g1b1i512f1s0", 1024},      {"g1b1i1024f1s0", 4096},
        {"g1b1i2048f1s0", 16384}, {"g1b1i256f4s0", 1024},      {"g1b1i512f4s0", 4096},
        {"g1b1i256f85s1", 6400},  {"g1b1i512f85s1", 25600},    {"g1b1i256f1s1", 256},
        {"g1b1i256f3s1", 256},    {"g1b1i256f17s1", 256 * 5},  {"g1b1i250f1s0", 225},
        {"g1b1i31f1s0", 1},       {"g1b1i256f34s1", 256 * 10},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        zg_knap_code *c;
        int32_t n;
        zg_error err;
        CHECK_OK(zg_knap_codes_parse(cases[i].code, &c, &n, &err), &err);
        CHECK_EQ_INT(n, 1);
        CHECK_MSG(zg_knap_code_visual_tokens(c) == cases[i].tokens, "%s: %lld, want %lld",
                  cases[i].code, (long long)zg_knap_code_visual_tokens(c), cases[i].tokens);
        free(c);
    }
}

ZG_TEST(knap_parse) {
    zg_knap_code *c;
    int32_t n;
    zg_error err;
    CHECK_OK(zg_knap_codes_parse(joint_mix, &c, &n, &err), &err);
    CHECK_EQ_INT(n, 8);
    CHECK_EQ_INT(zg_knap_codes_gpus(c, n), 32);
    CHECK_EQ_INT(c[6].gpus, 8);
    CHECK_EQ_INT(c[6].batch, 2);
    CHECK_EQ_INT(c[6].res, 256);
    CHECK_EQ_INT(c[6].frames, 85);
    CHECK_EQ_INT(c[6].smooth, 1);
    free(c);
    CHECK_OK(zg_knap_codes_parse(" g1b2i256f1s0 , g3b4i512f1s0 ", &c, &n, &err), &err);
    CHECK_EQ_INT(n, 2);
    CHECK_EQ_INT(c[1].gpus, 3);
    free(c);
    static const struct {
        const char *spec;
        zg_status st;
        const char *piece;
    } bad[] = {
        {"g8b4x256f1s0", ZG_ERR_PARSE, "\"g8b4x256f1s0\""},
        {"g8b4i256f1s0,g2b5i512f1", ZG_ERR_PARSE, "data code 1 \"g2b5i512f1\""},
        {"g8b4i256f1s2", ZG_ERR_INVALID, "s2"},
        {"g0b4i256f1s0", ZG_ERR_INVALID, "g0"},
        {"g8b4i8f1s0", ZG_ERR_INVALID, "i8"},
        {"g8b4i256f1s0x", ZG_ERR_PARSE, "\"x\""},
        {"g8b4i256f1s0,", ZG_ERR_PARSE, "data code 1 is empty"},
        {"", ZG_ERR_PARSE, "empty"},
        {"gb4i256f1s0", ZG_ERR_PARSE, "number after 'g'"},
        {"g99999999999999b4i256f1s0", ZG_ERR_INVALID, "GPUs"},
        {"G8B4I256F1S0", ZG_ERR_PARSE, "expected 'g'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zg_error_clear(&err);
        zg_status st = zg_knap_codes_parse(bad[i].spec, &c, &n, &err);
        CHECK_MSG(st == bad[i].st, "%s: status %d (%s)", bad[i].spec, (int)st, err.msg);
        CHECK(c == NULL && n == 0);
        CHECK_HAS(err.msg, bad[i].piece);
    }
}

// knapformer.md §3.2: rank layout of the joint image+video mix on 32 ranks.
ZG_TEST(knap_joint_layout_32) {
    zg_knap_code *c;
    int32_t n;
    zg_error err;
    CHECK_OK(zg_knap_codes_parse(joint_mix, &c, &n, &err), &err);
    zg_batch b;
    CHECK_OK(zg_knap_codes_sample(c, n, 32, 1, 0, &b, &err), &err);
    static const struct {
        int lo, hi, per_rank;
        const char *bucket;
        zg_seq_kind kind;
    } layout[] = {
        {0, 7, 4, "i256f1s0", ZG_SEQ_IMAGE},    {8, 9, 5, "i512f1s0", ZG_SEQ_IMAGE},
        {10, 11, 5, "i1024f1s0", ZG_SEQ_IMAGE}, {12, 15, 1, "i2048f1s0", ZG_SEQ_IMAGE},
        {16, 16, 10, "i256f4s0", ZG_SEQ_VIDEO}, {17, 19, 1, "i512f4s0", ZG_SEQ_VIDEO},
        {20, 27, 2, "i256f85s1", ZG_SEQ_VIDEO}, {28, 31, 1, "i512f85s1", ZG_SEQ_VIDEO},
    };
    CHECK_EQ_INT(b.n, 32 + 10 + 10 + 4 + 10 + 3 + 16 + 4);
    int64_t k = 0;
    for (int g = 0; g < 8; g++)
        for (int r = layout[g].lo; r <= layout[g].hi; r++)
            for (int i = 0; i < layout[g].per_rank; i++, k++) {
                const zg_seq *s = &b.seqs[k];
                CHECK_EQ_INT(s->id, k);
                CHECK_EQ_INT(s->origin_rank, r);
                CHECK_STR(s->bucket, layout[g].bucket);
                CHECK_EQ_INT(s->kind, layout[g].kind);
                CHECK_EQ_INT(s->height, c[g].res);
                CHECK_EQ_INT(s->frames, c[g].frames);
            }
    CHECK_EQ_INT(k, b.n);
    CHECK_OK(zg_batch_validate(&b, 32, &err), &err);
    zg_batch_free(&b);
    // 64 ranks repeat the layout; 48 is not a multiple of 32
    CHECK_OK(zg_knap_codes_sample(c, n, 64, 1, 0, &b, &err), &err);
    CHECK_EQ_INT(b.n, 2 * 89);
    CHECK_EQ_INT(b.seqs[89].origin_rank, 32);
    CHECK_STR(b.seqs[89].bucket, "i256f1s0");
    CHECK_EQ_INT(b.seqs[b.n - 1].origin_rank, 63);
    CHECK_STR(b.seqs[b.n - 1].bucket, "i512f85s1");
    zg_batch_free(&b);
    CHECK(zg_knap_codes_sample(c, n, 48, 1, 0, &b, &err) == ZG_ERR_INVALID);
    CHECK_HAS(err.msg, "48");
    CHECK_HAS(err.msg, "32");
    CHECK(zg_knap_codes_sample(c, n, 0, 1, 0, &b, &err) == ZG_ERR_INVALID);
    free(c);
}

ZG_TEST(knap_jitter_bounds_and_determinism) {
    zg_knap_code *c;
    int32_t n;
    zg_error err;
    CHECK_OK(zg_knap_codes_parse(joint_mix, &c, &n, &err), &err);
    double mmin = 2, mmax = 0, text_sum = 0;
    int64_t text_n = 0;
    for (int64_t step = 0; step < 40; step++) {
        zg_batch b, b2;
        CHECK_OK(zg_knap_codes_sample(c, n, 32, 7, step, &b, &err), &err);
        CHECK_OK(zg_knap_codes_sample(c, n, 32, 7, step, &b2, &err), &err);
        CHECK_EQ_INT(b.n, b2.n);
        CHECK(memcmp(b.seqs, b2.seqs, sizeof(zg_seq) * (size_t)b.n) == 0);
        zg_batch_free(&b2);
        // per rank: L = text + vis with one jitter m per rank; text uniform in [0, 392]
        int32_t cur = -1;
        int64_t lo = 0, hi = 0, visual = 0;
        for (int64_t i = 0; i <= b.n; i++) {
            const zg_seq *s = i < b.n ? &b.seqs[i] : NULL;
            if (!s || s->origin_rank != cur) {
                if (cur >= 0) {  // close the previous rank: hi - lo spans the text range only
                    CHECK_MSG(hi - lo <= 392, "rank %d: L spread %lld > 392", cur,
                              (long long)(hi - lo));
                    CHECK(lo >= (int64_t)(visual * 0.96) && hi <= (int64_t)(visual * 1.04) + 392);
                    double mm = (double)lo / (double)visual;  // lower bound on the jitter
                    if (visual >= 4096 && mm < mmin) mmin = mm;
                    if (visual >= 4096 && (double)(hi - 392) / visual > mmax)
                        mmax = (double)(hi - 392) / visual;
                }
                if (!s) break;
                cur = s->origin_rank;
                zg_knap_code code = {1, 1, s->height, s->frames,
                                     s->bucket[strlen(s->bucket) - 1] - '0'};
                visual = zg_knap_code_visual_tokens(&code);
                lo = hi = s->tokens;
            }
            CHECK_EQ_INT(s->text_tokens, 0);  // text is packed inside tokens (KnapFormer's L)
            if (s->tokens < lo) lo = s->tokens;
            if (s->tokens > hi) hi = s->tokens;
            text_sum += (double)s->tokens - (double)visual;  // mean L - visual = mean text (+jitter)
            text_n++;
        }
        zg_batch_free(&b);
    }
    // the jitter spans most of [0.96, 1.04); text is uniform over 0..392 (mean 196)
    CHECK(mmin < 0.97 && mmax > 1.03);
    CHECK_NEAR(text_sum / text_n, 196, 60, 0);  // jitter of the visual part widens this
    // a different step or seed gives different values
    zg_batch a, b;
    CHECK_OK(zg_knap_codes_sample(c, n, 32, 7, 0, &a, &err), &err);
    CHECK_OK(zg_knap_codes_sample(c, n, 32, 7, 1, &b, &err), &err);
    CHECK(memcmp(a.seqs, b.seqs, sizeof(zg_seq) * (size_t)a.n) != 0);
    zg_batch_free(&b);
    CHECK_OK(zg_knap_codes_sample(c, n, 32, 8, 0, &b, &err), &err);
    CHECK(memcmp(a.seqs, b.seqs, sizeof(zg_seq) * (size_t)a.n) != 0);
    zg_batch_free(&a);
    zg_batch_free(&b);
    free(c);
}

// ---- the paper's mixes ---------------------------------------------------------------------

ZG_TEST(mix_share_from_name) {
    CHECK_NEAR(zg_mix_share_from_name("V35"), 0.35, 1e-12, 0);
    CHECK_NEAR(zg_mix_share_from_name("V60"), 0.60, 1e-12, 0);
    CHECK_NEAR(zg_mix_share_from_name("v50"), 0.50, 1e-12, 0);
    CHECK_NEAR(zg_mix_share_from_name("V100"), 1.0, 1e-12, 0);
    CHECK_NEAR(zg_mix_share_from_name("V0"), 0.0, 1e-12, 0);
    CHECK(zg_mix_share_from_name("V101") < 0);
    CHECK(zg_mix_share_from_name("V") < 0);
    CHECK(zg_mix_share_from_name("X35") < 0);
    CHECK(zg_mix_share_from_name("V3a") < 0);
    CHECK(zg_mix_share_from_name("V-5") < 0);
    CHECK(zg_mix_share_from_name(NULL) < 0);
    // the paper's mixes only (the CLIs' --mix): V35..V60 in steps of 5
    double share = -1;
    zg_error e = {0};
    CHECK(zg_mix_paper_share("V35", &share, &e) == ZG_OK && share == 0.35);
    CHECK(zg_mix_paper_share("v60", &share, &e) == ZG_OK && share == 0.60);
    const char *not_paper[] = {"V5", "V99", "V30", "V65", "V52", "V100", "V0", "X50", "", NULL};
    for (int i = 0; i < (int)(sizeof not_paper / sizeof not_paper[0]); i++) {
        share = -1;
        CHECK_MSG(zg_mix_paper_share(not_paper[i], &share, &e) == ZG_ERR_INVALID, "%s",
                  not_paper[i] ? not_paper[i] : "NULL");
        CHECK(share == -1 && strstr(e.msg, "V35, V40, V45, V50, V55, V60"));
    }
}

// Checks one mix batch: share, total, ids/ranks/buckets, loader balance.
static void check_mix(int *zg_failed_, const zg_catalog *cat, const zg_mix_spec *sp,
                      const zg_batch *b, double *max_total_dev) {
    int64_t total = zg_batch_total_tokens(b), video = 0,
            target = sp->tokens_per_rank * sp->world_size;
    int64_t *load = calloc((size_t)sp->world_size, sizeof *load);
    int64_t biggest = 0;
    for (int64_t i = 0; i < b->n; i++) {
        const zg_seq *s = &b->seqs[i];
        CHECK_EQ_INT(s->id, i);
        if (i > 0) CHECK(s->origin_rank >= b->seqs[i - 1].origin_rank);
        CHECK(s->origin_rank >= 0 && s->origin_rank < sp->world_size);
        const zg_bucket *bk = zg_catalog_find(cat, s->bucket);
        CHECK_MSG(bk != NULL, "bucket \"%s\"", s->bucket);
        CHECK_EQ_INT(s->tokens, bk->tokens);
        CHECK_EQ_INT(s->kind, bk->kind);
        CHECK_EQ_INT(s->text_tokens, 512);
        if (s->kind == ZG_SEQ_VIDEO) {
            video += s->tokens;
            CHECK_EQ_INT(s->frames, zg_video_frames(sp->video_seconds));
        }
        load[s->origin_rank] += s->tokens;
        if (s->tokens > biggest) biggest = s->tokens;
    }
    // the share is exact up to one image (<= 8160 tokens); the total is near the target
    double share = (double)video / (double)total;
    CHECK_MSG(fabs(share - sp->video_share) <= 8160.0 / (double)total, "share %.5f vs %.2f", share,
              sp->video_share);
    double dev = fabs((double)total - (double)target) / (double)target;
    if (dev > *max_total_dev) *max_total_dev = dev;
    CHECK_MSG(dev < 0.10, "total %lld vs target %lld", (long long)total, (long long)target);
    // token-balanced loader: ranks differ by at most the largest sequence
    int64_t lo = load[0], hi = load[0];
    for (int32_t r = 1; r < sp->world_size; r++) {
        if (load[r] < lo) lo = load[r];
        if (load[r] > hi) hi = load[r];
    }
    free(load);
    CHECK_MSG(hi - lo <= biggest, "rank loads %lld..%lld, largest sequence %lld", (long long)lo,
              (long long)hi, (long long)biggest);
    zg_error err;
    CHECK_OK(zg_batch_validate(b, sp->world_size, &err), &err);
}

ZG_TEST(mix_share_and_total) {
    zg_model m = wan();
    zg_catalog cat;
    zg_error err;
    CHECK_OK(zg_catalog_default(&m, &cat, &err), &err);
    static const struct {
        int64_t load;
        int32_t world, secs;
    } settings[] = {{350000, 8, 10}, {125000, 8, 10}, {350000, 16, 15}, {175000, 32, 15}};
    double max_dev = 0;
    for (int si = 0; si < 4; si++)
        for (int v = 35; v <= 60; v += 5)
            for (int64_t step = 0; step < 2; step++) {
                zg_mix_spec sp = {v / 100.0, settings[si].load, settings[si].secs,
                                  settings[si].world, 42};
                zg_batch b;
                CHECK_OK(zg_workload_mix(&m, &sp, step, &b, &err), &err);
                int f = 0;
                check_mix(&f, &cat, &sp, &b, &max_dev);
                zg_batch_free(&b);
                CHECK_MSG(!f, "setting %d V%d step %lld", si, v, (long long)step);
            }
    zg_catalog_free(&cat);
}

ZG_TEST(mix_determinism_and_bad_spec) {
    zg_model m = wan();
    zg_error err;
    zg_mix_spec sp = {0.5, 350000, 15, 16, 3};
    zg_batch a, b;
    CHECK_OK(zg_workload_mix(&m, &sp, 5, &a, &err), &err);
    CHECK_OK(zg_workload_mix(&m, &sp, 5, &b, &err), &err);
    CHECK_EQ_INT(a.n, b.n);
    CHECK(memcmp(a.seqs, b.seqs, sizeof(zg_seq) * (size_t)a.n) == 0);
    zg_batch_free(&b);
    CHECK_OK(zg_workload_mix(&m, &sp, 6, &b, &err), &err);
    CHECK(a.n != b.n || memcmp(a.seqs, b.seqs, sizeof(zg_seq) * (size_t)a.n) != 0);
    zg_batch_free(&a);
    zg_batch_free(&b);
    // share 0 and 1 are allowed
    zg_mix_spec s0 = {0.0, 100000, 10, 2, 1};
    CHECK_OK(zg_workload_mix(&m, &s0, 0, &a, &err), &err);
    for (int64_t i = 0; i < a.n; i++)
        CHECK_EQ_INT(a.seqs[i].kind, ZG_SEQ_IMAGE);
    CHECK_NEAR(zg_batch_total_tokens(&a), 200000, 128, 0);
    zg_batch_free(&a);
    zg_mix_spec s1 = {1.0, 400000, 10, 2, 1};
    CHECK_OK(zg_workload_mix(&m, &s1, 0, &a, &err), &err);
    for (int64_t i = 0; i < a.n; i++)
        CHECK_EQ_INT(a.seqs[i].kind, ZG_SEQ_VIDEO);
    zg_batch_free(&a);
    // bad specs
    zg_mix_spec bad[] = {
        {1.5, 350000, 10, 8, 1},           {0.5, 0, 10, 8, 1},       {0.5, 350000, 7, 8, 1},
        {0.5, 350000, 10, 0, 1},           {-0.1, 350000, 10, 8, 1}, {0.35, 1000, 10, 1, 1},
        {0.5, (int64_t)1 << 40, 10, 8, 1},
    };
    const char *pieces[] = {
        "1.5", "0 tokens", "7 s", "world size 0", "-0.1", "smallest video", "tokens per rank"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zg_error_clear(&err);
        CHECK_MSG(zg_workload_mix(&m, &bad[i], 0, &a, &err) == ZG_ERR_INVALID, "bad spec %zu", i);
        CHECK_EQ_INT(a.n, 0);
        CHECK_HAS(err.msg, pieces[i]);
    }
}

// Shrunk mixes: the same draw as zg_workload_mix with every sequence's tokens divided, and the
// catalog holding exactly those (bucket, tokens) pairs.
ZG_TEST(mix_divided_and_its_catalog) {
    zg_model m = wan();
    zg_error err;
    CHECK_EQ_INT(zg_tokens_divided(497760, 256), 1944);  // 1944.375
    CHECK_EQ_INT(zg_tokens_divided(32760, 256), 128);    // 127.97
    CHECK_EQ_INT(zg_tokens_divided(384, 256), 2);        // 1.5 rounds up
    CHECK_EQ_INT(zg_tokens_divided(256, 1024), 1);       // never below 1
    CHECK_EQ_INT(zg_tokens_divided(8160, 1), 8160);
    zg_catalog cat;
    CHECK_OK(zg_catalog_mix(&m, 15, 256, &cat, &err), &err);
    static const struct {
        const char *name;
        int64_t tokens;
    } want[] = {{"256p-img", 1},    {"480p-img", 6},    {"720p-img", 14},    {"1080p-img", 32},
                {"480p-15s", 372},  {"720p-15s", 858},  {"1080p-15s", 1944}};
    CHECK_EQ_INT(cat.n, 7);
    for (int32_t i = 0; i < cat.n && i < 7; i++) {
        CHECK_MSG(!strcmp(cat.buckets[i].name, want[i].name), "bucket %d is %s", i,
                  cat.buckets[i].name);
        CHECK_EQ_INT(cat.buckets[i].tokens, want[i].tokens);
        CHECK_EQ_INT(cat.buckets[i].frames + cat.buckets[i].height + cat.buckets[i].width, 0);
    }
    zg_mix_spec sp = {0.5, 350000, 15, 16, 1};
    zg_batch full, small;
    CHECK_OK(zg_workload_mix(&m, &sp, 3, &full, &err), &err);
    CHECK_OK(zg_workload_mix_divided(&m, &sp, 256, 3, &small, &err), &err);
    CHECK_EQ_INT(small.n, full.n);
    for (int64_t i = 0; i < small.n && i < full.n; i++) {
        const zg_seq *a = &full.seqs[i], *b = &small.seqs[i];
        CHECK_EQ_INT(b->id, a->id);
        CHECK_EQ_INT(b->origin_rank, a->origin_rank);
        CHECK_EQ_INT(b->kind, a->kind);
        CHECK_EQ_INT(b->text_tokens, a->text_tokens);
        CHECK(!strcmp(b->bucket, a->bucket));
        CHECK_EQ_INT(b->tokens, zg_tokens_divided(a->tokens, 256));
        CHECK_EQ_INT(b->frames + b->height + b->width, 0);
        const zg_bucket *k = zg_catalog_find(&cat, b->bucket);  // the profile prices it exactly
        CHECK_MSG(k && k->tokens == b->tokens, "sequence %lld (%s, %lld tokens) not in the catalog",
                  (long long)i, b->bucket, (long long)b->tokens);
    }
    CHECK_OK(zg_batch_validate(&small, 16, &err), &err);
    zg_batch_free(&full);
    zg_batch_free(&small);
    zg_catalog_free(&cat);
    // divisor 1 is the mix itself; bad divisors and lengths are refused with the value
    CHECK_OK(zg_catalog_mix(&m, 10, 1, &cat, &err), &err);
    CHECK_EQ_INT(cat.buckets[cat.n - 1].tokens, 334560);
    zg_catalog_free(&cat);
    CHECK(zg_catalog_mix(&m, 12, 8, &cat, &err) == ZG_ERR_INVALID);
    CHECK_HAS(err.msg, "12 s");
    CHECK(zg_workload_mix_divided(&m, &sp, 0, 0, &small, &err) == ZG_ERR_INVALID);
    CHECK_HAS(err.msg, "divisor 0");
    CHECK_EQ_INT(small.n, 0);
}

// ---- fuzz regressions ----------------------------------------------------------------------

// Every input the fuzzer ever crashed on goes through every reader; none may crash (ASan/UBSan
// builds turn a regression into a failure).
ZG_TEST(fuzz_crashes_replay) {
    const char *dirpath = "tests/workload/fuzz-crashes";
    DIR *d = opendir(dirpath);
    CHECK_MSG(d != NULL, "cannot open %s (run the tests from the repository root)", dirpath);
    zg_model m = wan();
    int files = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || !strcmp(e->d_name, "README.md")) continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dirpath, e->d_name);
        char *text = NULL;
        size_t len = 0;
        zg_error err;
        if (zg_file_read(path, &text, &len, &err)) continue;
        zg_batch b;
        if (zg_batch_parse(text, path, &m, &b, &err) == ZG_OK) zg_batch_free(&b);
        if (zg_batch_from_jsonl(text, path, NULL, &b, &err) == ZG_OK) zg_batch_free(&b);
        cJSON *j = NULL;
        if (zg_json_parse(text, path, &j, &err) == ZG_OK) {
            if (zg_batch_from_json(j, &m, &b, &err) == ZG_OK) zg_batch_free(&b);
            cJSON_Delete(j);
        }
        zg_knap_code *c = NULL;
        int32_t n = 0;
        if (zg_knap_codes_parse(text, &c, &n, &err) == ZG_OK) free(c);
        free(text);
        files++;
    }
    closedir(d);
    CHECK(files >= 1);
}

ZG_TEST_MAIN()
