// test_attn_bench.c — zg_attn_bench_run (the library behind `zellige bench attention`) on tiny
// shapes: every row measured and checked against the reference, the hooks called where they
// belong, the headline averaged from the rows, and bad sizes rejected. No timing is asserted
// beyond "positive" (shared machine; a benchmark is never a timed test).
#include <math.h>
#include <string.h>

#include "kernels/kernels.h"
#include "zgtest.h"

typedef struct hooks {
    int torch_calls, rows;
    int64_t last_tokens;
} hooks;

static double fake_torch(void *ctx, int64_t tokens, int32_t dim) {
    hooks *h = ctx;
    h->torch_calls++;
    h->last_tokens = tokens;
    return dim == 64 ? 5.0 : 10.0;
}

static double no_unset(void *ctx, int64_t tokens, int64_t threads) {
    (void)ctx, (void)tokens, (void)threads;
    return -1.0; // "the re-run failed": ceilings stay as measured
}

static void count_row(void *ctx, const zg_attn_bench_row *row) {
    hooks *h = ctx;
    if (row->fwd > 0) h->rows++;
}

ZG_TEST(attn_bench_run_tiny) {
    zg_attn_bench_opts o;
    zg_attn_bench_opts_default(&o);
    CHECK(o.max_tokens == 4096 && o.shard == 8192 && o.heads == 12 && o.pack_images == 50);
    o.max_tokens = 256, o.shard = 64, o.heads = 2, o.threads = 1, o.pack_images = 2;
    o.square = 128;
    hooks h = {0};
    o.torch_fwd = fake_torch, o.sgemm_env_unset = no_unset, o.on_row = count_row, o.ctx = &h;
    zg_attn_bench_result r;
    zg_error e;
    CHECK_OK(zg_attn_bench_run(&o, &r, &e), &e);
    CHECK(r.isa && r.peak_isa && r.peak > 0);
    CHECK_EQ_INT(r.threads, 1);
    CHECK_EQ_INT(r.heads, 2);
    CHECK_EQ_INT(r.n_rows, 4); // single 256 x {64, 128}, pack x {64, 128}
    CHECK_EQ_INT(h.rows, 4);
    CHECK_EQ_INT(h.torch_calls, 2); // singles only
    CHECK_EQ_INT(r.pack_tokens, 2 * 1560 + 3 * 64);
    for (int i = 0; i < r.n_rows; i++) {
        const zg_attn_bench_row *w = &r.rows[i];
        CHECK(w->fwd > 0 && w->sgemm > 0 && isfinite(w->fwd));
        int single = !strcmp(w->kind, "single");
        CHECK(single || !strcmp(w->kind, "pack"));
        CHECK(w->dim == (i % 2 ? 128 : 64));
        CHECK((w->bwd > 0) == (single || w->dim == 64)); // the pack's backward at D = 64 only
        CHECK(single ? w->torch_fwd == (w->dim == 64 ? 5.0 : 10.0) : w->torch_fwd < 0);
    }
    CHECK_MSG(r.max_err < 1e-3 && r.bwd_err < 1e-3, "errors %g %g", r.max_err, r.bwd_err);
    CHECK_EQ_INT(r.headline_tokens, 256);
    CHECK_EQ_INT(r.n_torch, 2);
    CHECK_NEAR(r.fwd, 0.5 * (r.rows[0].fwd + r.rows[1].fwd), 0, 1e-12);
    CHECK_NEAR(r.fwd_vs_torch, 0.5 * (r.rows[0].fwd / 5.0 + r.rows[1].fwd / 10.0), 0, 1e-12);
    CHECK_NEAR(r.pack_vs_sgemm,
               0.5 * (r.rows[2].fwd / r.rows[2].sgemm + r.rows[3].fwd / r.rows[3].sgemm), 0, 1e-12);
    CHECK(r.pack_bwd == r.rows[2].bwd);
    CHECK(r.env_factor == 1.0 && r.sgemm_env > 0 && r.sgemm_square > 0);
    CHECK_EQ_INT(r.gemm_tokens, 256);
    // the SGEMM ceiling alone (the re-run's entry point)
    double sq = 0;
    CHECK(zg_attn_bench_sgemm(256, 1, 128, &sq, &e) > 0 && sq > 0);
}

ZG_TEST(attn_bench_rejects_bad_sizes) {
    struct {
        int64_t max_tokens, shard, heads;
        int32_t pack_images;
        const char *needle;
    } bad[] = {
        {100, 64, 2, 2, "--max-tokens 100"},
        {256, 0, 2, 2, "--shard 0"},
        {256, 64, 65, 2, "--heads 65"},
        {256, 64, 2, 51, "pack_images 51"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zg_attn_bench_opts o;
        zg_attn_bench_opts_default(&o);
        o.max_tokens = bad[i].max_tokens, o.shard = bad[i].shard, o.heads = bad[i].heads;
        o.pack_images = bad[i].pack_images;
        zg_attn_bench_result r;
        zg_error e = {0};
        CHECK(zg_attn_bench_run(&o, &r, &e) == ZG_ERR_INVALID);
        CHECK_MSG(strstr(e.msg, bad[i].needle), "'%s' lacks '%s'", e.msg, bad[i].needle);
        CHECK_EQ_INT(r.n_rows, 0);
    }
    CHECK(zg_attn_bench_threads(3) == 3 && zg_attn_bench_threads(0) >= 1);
}

ZG_TEST_MAIN()
