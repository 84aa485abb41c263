// dump_workload.c — prints what the workload generators produce (used for docs/workloads.md).
// Not a test (the Makefile builds tests/*/test_*.c only); build it by hand:
//   cc -std=c11 -D_GNU_SOURCE -Isrc $(pkg-config --cflags libcjson) tests/workload/dump_workload.c
//      build/lib/libzg_workload.a build/lib/libzg_model.a build/lib/libzg_core.a -lcjson -lm
//      -o build/dump_workload
// Usage:
//   dump_workload catalog [MODEL]
//   dump_workload mix NAME LOAD WORLD SECONDS SEED STEP [OUT.json]   e.g. mix V50 350K 16 15 1 0
//   dump_workload knap CODES WORLD SEED STEP [OUT.json]
//   dump_workload read FILE
#include <stdlib.h>
#include <string.h>

#include "workload/workload.h"

static int fail(const zg_error *err) {
    fprintf(stderr, "dump_workload: %s\n", err->msg);
    return 1;
}

// One row per bucket (in first-appearance order): count, tokens, share of tokens.
static void summarize(const zg_batch *b, int32_t world) {
    int64_t total = zg_batch_total_tokens(b), video = 0;
    printf("%-12s %6s %12s %8s\n", "bucket", "count", "tokens", "share");
    for (int64_t i = 0; i < b->n; i++) {
        int seen = 0;
        for (int64_t k = 0; k < i && !seen; k++)
            seen = !strcmp(b->seqs[k].bucket, b->seqs[i].bucket);
        if (seen) continue;
        int64_t cnt = 0, tok = 0;
        for (int64_t k = i; k < b->n; k++)
            if (!strcmp(b->seqs[k].bucket, b->seqs[i].bucket)) cnt++, tok += b->seqs[k].tokens;
        printf("%-12s %6lld %12lld %7.2f%%\n", b->seqs[i].bucket[0] ? b->seqs[i].bucket : "-",
               (long long)cnt, (long long)tok, 100.0 * (double)tok / (double)total);
    }
    for (int64_t i = 0; i < b->n; i++)
        if (b->seqs[i].kind == ZG_SEQ_VIDEO) video += b->seqs[i].tokens;
    printf("sequences %lld, tokens %lld, video share %.4f\n", (long long)b->n, (long long)total,
           total ? (double)video / (double)total : 0.0);
    if (world <= 0) return;
    int64_t *load = calloc((size_t)world, sizeof *load);
    int64_t *cnt = calloc((size_t)world, sizeof *cnt);
    for (int64_t i = 0; i < b->n; i++)
        if (b->seqs[i].origin_rank >= 0 && b->seqs[i].origin_rank < world)
            load[b->seqs[i].origin_rank] += b->seqs[i].tokens, cnt[b->seqs[i].origin_rank]++;
    int64_t lo = load[0], hi = load[0];
    for (int32_t r = 0; r < world; r++) {
        if (load[r] < lo) lo = load[r];
        if (load[r] > hi) hi = load[r];
    }
    printf("origin ranks %d: tokens per rank min %lld, max %lld, mean %.0f\n", world, (long long)lo,
           (long long)hi, (double)total / world);
    if (world <= 32) {
        printf("rank:sequences/tokens");
        for (int32_t r = 0; r < world; r++)
            printf("%s %d:%lld/%lld", r % 4 ? "" : "\n ", r, (long long)cnt[r], (long long)load[r]);
        printf("\n");
    }
    free(load);
    free(cnt);
}

static int write_out(const char *path, const zg_batch *b) {
    zg_error err;
    if (path && zg_batch_write_file(path, b, &err)) return fail(&err);
    return 0;
}

int main(int argc, char **argv) {
    zg_error err;
    zg_model m;
    if (argc < 2) {
        fprintf(stderr, "usage: see the comment at the top of dump_workload.c\n");
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "catalog")) {
        if (zg_model_load(argc > 2 ? argv[2] : "wan2.1-1.3b", &m, &err)) return fail(&err);
        zg_catalog c;
        if (zg_catalog_default(&m, &c, &err)) return fail(&err);
        printf("%-10s %-6s %6s %6s %6s %8s\n", "bucket", "kind", "frames", "height", "width",
               "tokens");
        for (int32_t i = 0; i < c.n; i++)
            printf("%-10s %-6s %6d %6d %6d %8lld\n", c.buckets[i].name,
                   zg_seq_kind_name(c.buckets[i].kind), c.buckets[i].frames, c.buckets[i].height,
                   c.buckets[i].width, (long long)c.buckets[i].tokens);
        zg_catalog_free(&c);
        return 0;
    }
    if (!strcmp(cmd, "mix") && argc >= 8) {
        if (zg_model_preset("wan2.1-1.3b", &m, &err)) return fail(&err);
        zg_mix_spec sp = {zg_mix_share_from_name(argv[2]), zg_parse_count(argv[3]), atoi(argv[5]),
                          atoi(argv[4]), strtoull(argv[6], NULL, 10)};
        zg_batch b;
        if (zg_workload_mix(&m, &sp, atoll(argv[7]), &b, &err)) return fail(&err);
        printf("mix %s, %s tokens/rank x %s ranks = %lld target, %s s videos, seed %s, step %s\n",
               argv[2], argv[3], argv[4], (long long)(sp.tokens_per_rank * sp.world_size), argv[5],
               argv[6], argv[7]);
        summarize(&b, sp.world_size);
        int rc = write_out(argc > 8 ? argv[8] : NULL, &b);
        zg_batch_free(&b);
        return rc;
    }
    if (!strcmp(cmd, "knap") && argc >= 6) {
        zg_knap_code *codes;
        int32_t n;
        if (zg_knap_codes_parse(argv[2], &codes, &n, &err)) return fail(&err);
        zg_batch b;
        int32_t world = atoi(argv[3]);
        if (zg_knap_codes_sample(codes, n, world, strtoull(argv[4], NULL, 10), atoll(argv[5]), &b,
                                 &err)) {
            free(codes);
            return fail(&err);
        }
        for (int32_t i = 0; i < n; i++)
            printf("code %d g%db%di%df%ds%d: visual tokens %lld\n", i, codes[i].gpus,
                   codes[i].batch, codes[i].res, codes[i].frames, codes[i].smooth,
                   (long long)zg_knap_code_visual_tokens(&codes[i]));
        summarize(&b, world);
        int rc = write_out(argc > 6 ? argv[6] : NULL, &b);
        zg_batch_free(&b);
        free(codes);
        return rc;
    }
    if (!strcmp(cmd, "read") && argc >= 3) {
        if (zg_model_preset("wan2.1-1.3b", &m, &err)) return fail(&err);
        zg_batch b;
        if (zg_batch_read_file(argv[2], &m, &b, &err)) return fail(&err);
        for (int64_t i = 0; i < b.n && i < 10; i++)
            printf("id %lld tokens %lld kind %s frames %d %dx%d text %d rank %d bucket \"%s\"\n",
                   (long long)b.seqs[i].id, (long long)b.seqs[i].tokens,
                   zg_seq_kind_name(b.seqs[i].kind), b.seqs[i].frames, b.seqs[i].height,
                   b.seqs[i].width, b.seqs[i].text_tokens, b.seqs[i].origin_rank, b.seqs[i].bucket);
        summarize(&b, 0);
        zg_batch_free(&b);
        return 0;
    }
    fprintf(stderr, "dump_workload: bad arguments; see the comment at the top of the file\n");
    return 2;
}
