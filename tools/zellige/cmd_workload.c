// cmd_workload.c — `zellige workload`: show the bucket catalog, draw a batch of a paper mix or
// of KnapFormer data codes, or read a batch/trace file; summarise it and optionally write it.
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "workload/workload.h"

static const char *usage_text =
    "usage: zellige workload catalog [--model M]\n"
    "       zellige workload mix --mix V50 [--load 350K] [--world-size 16] [--video-seconds 15]\n"
    "                            [--seed 1] [--step 0] [--model M] [--out batch.json]\n"
    "       zellige workload knap --codes g8b4i256f1s0,... [--world-size 16] [--seed 1]\n"
    "                            [--step 0] [--out batch.json]\n"
    "       zellige workload read FILE [--model M] [--out batch.json]\n"
    "Draws seeded batches (docs/workloads.md) and prints per-bucket counts, tokens, the video\n"
    "share and tokens per origin rank. --out writes the batch JSON (atomically; its directory\n"
    "is checked before any work). Each action takes only the options listed for it.\n\n";

// One row per bucket (first-appearance order), then totals and tokens per origin rank.
static void summarize(const zg_batch *b, int32_t world) {
    int64_t total = zg_batch_total_tokens(b), video = 0;
    printf("%-12s %6s %12s %8s\n", "bucket", "count", "tokens", "share");
    for (int64_t i = 0; i < b->n; i++) {
        int seen = 0;
        for (int64_t k = 0; k < i && !seen; k++) seen = !strcmp(b->seqs[k].bucket, b->seqs[i].bucket);
        if (seen) continue;
        int64_t cnt = 0, tok = 0;
        for (int64_t k = i; k < b->n; k++)
            if (!strcmp(b->seqs[k].bucket, b->seqs[i].bucket)) cnt++, tok += b->seqs[k].tokens;
        printf("%-12s %6lld %12lld %7.2f%%\n", b->seqs[i].bucket[0] ? b->seqs[i].bucket : "-",
               (long long)cnt, (long long)tok, 100.0 * (double)tok / (double)(total ? total : 1));
    }
    for (int64_t i = 0; i < b->n; i++)
        if (b->seqs[i].kind == ZG_SEQ_VIDEO) video += b->seqs[i].tokens;
    printf("sequences %lld, tokens %lld, video share %.4f\n", (long long)b->n, (long long)total,
           total ? (double)video / (double)total : 0.0);
    if (world <= 0) return;
    int64_t *load = calloc((size_t)world, sizeof *load), *cnt = calloc((size_t)world, sizeof *cnt);
    if (!load || !cnt) {
        free(load);
        free(cnt);
        return;
    }
    for (int64_t i = 0; i < b->n; i++)
        if (b->seqs[i].origin_rank >= 0 && b->seqs[i].origin_rank < world)
            load[b->seqs[i].origin_rank] += b->seqs[i].tokens, cnt[b->seqs[i].origin_rank]++;
    int64_t lo = load[0], hi = load[0];
    for (int32_t r = 0; r < world; r++) {
        if (load[r] < lo) lo = load[r];
        if (load[r] > hi) hi = load[r];
    }
    printf("origin ranks %d: tokens per rank min %lld, max %lld, mean %.0f\n", world,
           (long long)lo, (long long)hi, (double)total / world);
    if (world <= 32) {
        printf("rank:sequences/tokens");
        for (int32_t r = 0; r < world; r++)
            printf("%s %d:%lld/%lld", r % 4 ? "" : "\n ", r, (long long)cnt[r], (long long)load[r]);
        printf("\n");
    }
    free(load);
    free(cnt);
}

// Which actions take each option (bits: catalog, mix, knap, read).
enum { W_CATALOG = 1, W_MIX = 2, W_KNAP = 4, W_READ = 8 };
#define W_MIX_TOTAL 4000000000LL // tokens per step the mix generator draws at most (mix.c)

static int run_workload(int argc, char **argv) {
    zg_error err;
    zg_error_clear(&err);
    const char *model_name = "wan2.1-1.3b", *mix = NULL, *codes_s = NULL, *out = NULL,
               *file = NULL;
    int64_t load = 350000, world = 16, vsec = 15, seed = 1, step = 0;
    const cli_opt all[] = {
        CLI_OPT_MODEL(&model_name, "model preset or JSON file (default wan2.1-1.3b)"),
        CLI_STR_OPT("--mix", "V", &mix, "the paper's mix V35, V40, V45, V50, V55 or V60 (required)"),
        CLI_INT_OPT("--load", "N", &load, 1, W_MIX_TOTAL,
                    "tokens per rank per step, e.g. 350K (default 350K)"),
        CLI_INT_OPT("--world-size", "N", &world, 1, 1048576,
                    "ranks (default 16)"),
        CLI_INT_CHOICE_OPT("--video-seconds", "S", &vsec, "5|10|15",
                           "video length in seconds, 5, 10 or 15 (default 15)"),
        CLI_OPT_SEED(&seed, "seed (default 1)"),
        CLI_INT_OPT("--step", "N", &step, 0, INT64_MAX, "step drawn (default 0)"),
        CLI_STR_OPT("--codes", "LIST", &codes_s,
                    "KnapFormer data codes, e.g. g8b4i256f1s0,g2b5i512f1s0 (required)"),
        CLI_OPT_OUT(&out, "write the batch JSON here (atomic)"),
    };
    static const int takes[] = {W_CATALOG | W_MIX | W_READ, W_MIX, W_MIX, W_MIX | W_KNAP, W_MIX,
                                W_MIX | W_KNAP, W_MIX | W_KNAP, W_KNAP, W_MIX | W_KNAP | W_READ};
    enum { N_ALL = sizeof all / sizeof all[0] };
    _Static_assert(N_ALL == sizeof takes / sizeof takes[0], "one mask per option");
    static const char *const actions[] = {"catalog", "mix", "knap", "read"};
    if (argc >= 2 && cli_is_help(argv[1])) {
        const cli_spec spec = {"workload", usage_text, (cli_opt[]){CLI_OPT_END}, NULL};
        cli_help(&spec, stdout);
        printf("options (the actions that take each; `zellige workload ACTION --help` lists one's):\n");
        for (int k = 0; k < N_ALL; k++) {
            char left[48], acts[48] = "";
            snprintf(left, sizeof left, "%s %s", all[k].name, all[k].metavar);
            for (int a = 0; a < 4; a++)
                if (takes[k] & (1 << a))
                    snprintf(acts + strlen(acts), sizeof acts - strlen(acts), "%s%s",
                             acts[0] ? "," : "", actions[a]);
            printf("  %-20s %-17s %s\n", left, acts, all[k].help);
        }
        return 0;
    }
    if (argc < 2) {
        zg_error_set(&err, ZG_ERR_INVALID,
                     "give an action: catalog, mix, knap or read (see zellige workload --help)");
        return cli_fail("workload", &err);
    }
    const char *what = argv[1];
    int act = -1;
    for (int k = 0; k < 4; k++)
        if (!strcmp(what, actions[k])) act = k;
    if (act < 0) {
        zg_error_set(&err, ZG_ERR_INVALID,
                     "unknown action '%s'; give catalog, mix, knap or read (see zellige workload "
                     "--help)",
                     what);
        return cli_fail("workload", &err);
    }
    cli_opt opts[N_ALL + 1];
    int n_opts = 0;
    for (int k = 0; k < N_ALL; k++)
        if (takes[k] & (1 << act)) opts[n_opts++] = all[k];
    opts[n_opts] = (cli_opt)CLI_OPT_END;
    char cmd[32], head[64];
    snprintf(cmd, sizeof cmd, "workload %s", what);
    snprintf(head, sizeof head, "usage: zellige workload %s%s [options]\n", what,
             act == 3 ? " FILE" : "");
    const cli_spec spec = {cmd, head, opts, NULL};
    int first = 1; // argv index before the options (read: FILE comes first)
    if (act == 3 && argc >= 3 && !cli_is_help(argv[2]) && argv[2][0] != '-') file = argv[2], first = 2;
    cli_result pr = cli_parse(&spec, argc - first, argv + first, &err);
    if (pr != CLI_PARSED) return cli_parse_exit(&spec, pr, &err);
    if (act == 3 && !file) {
        zg_error_set(&err, ZG_ERR_INVALID,
                     "read needs a FILE right after 'read' (a batch .json or .jsonl trace)");
        return cli_fail(cmd, &err);
    }
    if (act == 1 && !mix) {
        zg_error_set(&err, ZG_ERR_INVALID,
                     "mix needs --mix V; give one of the paper's mixes " ZG_MIX_PAPER_NAMES);
        return cli_fail(cmd, &err);
    }
    double share = 0;
    if (act == 1 && zg_mix_paper_share(mix, &share, &err)) {
        zg_error_prefix(&err, "--mix: ");
        return cli_fail(cmd, &err);
    }
    if (act == 1 && load > W_MIX_TOTAL / world) {
        const char *ls = NULL, *ws = NULL; // the values as given
        for (int i = first + 1; i + 1 < argc; i++) {
            if (!strcmp(argv[i], "--load")) ls = argv[i + 1];
            if (!strcmp(argv[i], "--world-size")) ws = argv[i + 1];
        }
        zg_error_set(&err, ZG_ERR_INVALID,
                     "--load '%s' x --world-size '%s' is %.4g tokens per step, over %lld; give a "
                     "smaller --load or --world-size",
                     ls ? ls : "350K", ws ? ws : "16", (double)load * (double)world,
                     W_MIX_TOTAL);
        return cli_fail(cmd, &err);
    }
    if (act == 2 && !codes_s) {
        zg_error_set(&err, ZG_ERR_INVALID,
                     "knap needs --codes LIST (e.g. g8b4i256f1s0,g2b5i512f1s0)");
        return cli_fail(cmd, &err);
    }
    zg_model m;
    if (zg_model_load(model_name, &m, &err)) {
        zg_error_prefix(&err, "--model: ");
        return cli_fail(cmd, &err);
    }
    zg_batch b;
    zg_batch_init(&b);
    int32_t show_world = 0;
    if (!strcmp(what, "catalog")) {
        zg_catalog c;
        if (zg_catalog_default(&m, &c, &err)) return cli_fail(cmd, &err);
        printf("%-10s %-6s %6s %6s %6s %8s\n", "bucket", "kind", "frames", "height", "width",
               "tokens");
        for (int32_t i = 0; i < c.n; i++)
            printf("%-10s %-6s %6d %6d %6d %8lld\n", c.buckets[i].name,
                   zg_seq_kind_name(c.buckets[i].kind), c.buckets[i].frames, c.buckets[i].height,
                   c.buckets[i].width, (long long)c.buckets[i].tokens);
        zg_catalog_free(&c);
        return 0;
    } else if (!strcmp(what, "mix")) {
        zg_mix_spec sp = {share, load, (int32_t)vsec, (int32_t)world, (uint64_t)seed};
        if (zg_workload_mix(&m, &sp, step, &b, &err)) return cli_fail(cmd, &err);
        char lb[32];
        if (load % 1000 == 0) snprintf(lb, sizeof lb, "%lldK", (long long)(load / 1000));
        else snprintf(lb, sizeof lb, "%lld", (long long)load);
        printf("mix %s, %s tokens/rank x %lld ranks = %lld target, %lld s videos, seed %lld, "
               "step %lld\n",
               mix, lb, (long long)world, (long long)(load * world), (long long)vsec,
               (long long)seed, (long long)step);
        show_world = (int32_t)world;
    } else if (!strcmp(what, "knap")) {
        zg_knap_code *codes = NULL;
        int32_t n = 0;
        if (zg_knap_codes_parse(codes_s, &codes, &n, &err)) {
            zg_error_prefix(&err, "--codes: ");
            return cli_fail(cmd, &err);
        }
        zg_status st = zg_knap_codes_sample(codes, n, (int32_t)world, (uint64_t)seed, step, &b, &err);
        if (!st)
            for (int32_t i = 0; i < n; i++)
                printf("code %d g%db%di%df%ds%d: visual tokens %lld\n", i, codes[i].gpus,
                       codes[i].batch, codes[i].res, codes[i].frames, codes[i].smooth,
                       (long long)zg_knap_code_visual_tokens(&codes[i]));
        free(codes);
        if (st) return cli_fail(cmd, &err);
        show_world = (int32_t)world;
    } else if (!strcmp(what, "read")) {
        if (zg_batch_read_file(file, &m, &b, &err)) {
            zg_error_prefix(&err, "read FILE: ");
            return cli_fail(cmd, &err);
        }
        for (int64_t i = 0; i < b.n && i < 10; i++)
            printf("id %lld tokens %lld kind %s frames %d %dx%d text %d rank %d bucket \"%s\"\n",
                   (long long)b.seqs[i].id, (long long)b.seqs[i].tokens,
                   zg_seq_kind_name(b.seqs[i].kind), b.seqs[i].frames, b.seqs[i].height,
                   b.seqs[i].width, b.seqs[i].text_tokens, b.seqs[i].origin_rank, b.seqs[i].bucket);
    }
    summarize(&b, show_world);
    int rc = 0;
    if (out) {
        if (zg_batch_write_file(out, &b, &err)) rc = cli_fail(cmd, &err);
        else printf("wrote %s\n", out);
    }
    zg_batch_free(&b);
    return rc;
}

ZG_CLI_COMMAND(workload, "workload", "show the catalog, draw seeded batches, read batch files",
               run_workload)
