// cmd_profile.c — `zellige profile`: under mpirun, measures the per-(bucket, configuration)
// price table on the real training engine and calibrates the memory model (docs/profiler.md).
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "profile/profile.h"

static const char *usage_text =
    "usage: mpirun -np N zellige profile --out FILE [options]\n"
    "Measures, for every (bucket, configuration) pair, the per-participating-rank price of one\n"
    "training step (dispatch, DiT forward+backward with attention through the engine) on the\n"
    "real engine: warm-up rounds, then measured rounds in which every pair runs once; price =\n"
    "step makespan minus the same round's empty-plan step (the placement-independent host\n"
    "overhead: gradient all-reduce, AdamW, set-up), median over rounds. Calibrates the memory\n"
    "model (base + per-token + per-text-row + per-sample bytes) on the tracked peaks. Writes the\n"
    "profile atomically (rank 0); it records the machine. Without mpirun: one rank.\n\n"
    "  --model M        model preset or JSON (default tiny)\n"
    "  --cluster C      cluster name to record (default cpu:<ranks>); must have <ranks> ranks\n"
    "  --catalog K      cpu (default) | default | FILE.json with {\"buckets\":[...]}\n"
    "  --out FILE       profile JSON to write (required)\n"
    "  --warmup N       warm-up rounds (default 1)\n"
    "  --reps N         measured rounds (default 5)\n"
    "  --max-degree D   largest degree measured (default: all ranks)\n"
    "  --text-tokens N  text rows of profiled sequences (default: the model's text_len)\n"
    "  --no-act-ckpt    profile without activation checkpointing\n"
    "  --threads N      OpenMP/OpenBLAS threads per rank (default 1 when ranks > 1)\n"
    "  --clock C        wall (default: step makespan in wall time) | cpu (largest per-rank CPU\n"
    "                   time of the step: leaves out time other processes held the core)\n"
    "  --seed N         parameter seed (default 1)\n"
    "  --quiet          no table on stdout\n";

static void on_progress(void *ctx, int64_t done, int64_t total) {
    zg_progress *p = ctx;
    if (p) zg_progress_update(p, done);
    (void)total;
}

static int run_profile(int argc, char **argv) {
    const char *model_name = "tiny", *cluster_name = NULL, *catalog = "cpu", *out = NULL;
    const char *clock = "wall";
    int64_t warmup = 1, reps = 5, maxd = 0, text = 0, threads = 0, seed = 1;
    int bad = 0, ckpt = 1, quiet = 0;
    zg_error err = {0};
    for (int i = 1; i < argc && !bad; i++) {
        if (cli_is_help(argv[i])) {
            fputs(usage_text, stdout);
            return 0;
        }
        if (cli_opt_str(argc, argv, &i, "--model", &model_name, &err, &bad) ||
            cli_opt_str(argc, argv, &i, "--cluster", &cluster_name, &err, &bad) ||
            cli_opt_str(argc, argv, &i, "--catalog", &catalog, &err, &bad) ||
            cli_opt_str(argc, argv, &i, "--out", &out, &err, &bad) ||
            cli_opt_str(argc, argv, &i, "--clock", &clock, &err, &bad))
            continue;
        if (cli_opt_int(argc, argv, &i, "--warmup", &warmup, &err, &bad) ||
            cli_opt_int(argc, argv, &i, "--reps", &reps, &err, &bad) ||
            cli_opt_int(argc, argv, &i, "--max-degree", &maxd, &err, &bad) ||
            cli_opt_int(argc, argv, &i, "--text-tokens", &text, &err, &bad) ||
            cli_opt_int(argc, argv, &i, "--threads", &threads, &err, &bad) ||
            cli_opt_int(argc, argv, &i, "--seed", &seed, &err, &bad))
            continue;
        if (!strcmp(argv[i], "--no-act-ckpt")) ckpt = 0;
        else if (!strcmp(argv[i], "--quiet")) quiet = 1;
        else bad = 1, zg_error_set(&err, ZG_ERR_INVALID, "unknown option '%s' (see --help)", argv[i]);
    }
    if (!bad && !out) bad = 1, zg_error_set(&err, ZG_ERR_INVALID, "--out FILE is required");
    if (!bad && (warmup < 0 || warmup > 1000 || reps < 1 || reps > 1000 || maxd < 0 ||
                 text < 0 || text > 1000000 || threads < 0 || threads > 1024))
        bad = 1, zg_error_set(&err, ZG_ERR_INVALID,
                              "--warmup (%lld) must be 0..1000, --reps (%lld) 1..1000, "
                              "--max-degree, --text-tokens and --threads >= 0",
                              (long long)warmup, (long long)reps);
    zg_profile_clock clk = ZG_PROFILE_CLOCK_WALL;
    if (!bad && zg_profile_clock_parse(clock, &clk, &err)) bad = 1;
    if (bad) return cli_fail("profile", &err);
    zg_comm comm;
    if (zg_comm_init_auto(&comm, NULL, NULL, &err)) return cli_fail("profile", &err);
    zg_profile_set_threads((int32_t)threads, comm.size);
    int root = comm.rank == 0;
    char cname[32];
    snprintf(cname, sizeof cname, "cpu:%d", comm.size);
    zg_model m;
    zg_cluster cl;
    zg_catalog cat = {0};
    zg_cost_table t;
    zg_cost_table_init_empty(&t);
    zg_status st = zg_model_load(model_name, &m, &err);
    if (!st) st = zg_cluster_load(cluster_name ? cluster_name : cname, &cl, &err);
    if (!st) st = zg_profile_catalog_load(catalog, &m, &cat, &err);
    zg_profile_opts o;
    zg_profile_opts_default(&o);
    o.warmup = (int32_t)warmup, o.reps = (int32_t)reps, o.max_degree = (int32_t)maxd;
    o.text_tokens = (int32_t)text, o.act_ckpt = ckpt, o.seed = (uint64_t)seed;
    o.clock = clk;
    zg_progress prog;
    zg_progress_init(&prog, "profile", 1);
    if (root) {
        o.progress = on_progress;
        o.progress_ctx = &prog;
    }
    double t0 = zg_time_now();
    if (!st) {
        // total steps for the progress bar: rounds x (1 + legal pairs)
        zg_config *cfgs = NULL;
        int32_t nc = 0, pairs = 1;
        int32_t md = maxd > 0 && maxd < comm.size ? (int32_t)maxd : comm.size;
        if (!zg_config_enumerate(&m, md, &cfgs, &nc, NULL))
            for (int32_t b = 0; b < cat.n; b++)
                for (int32_t c = 0; c < nc; c++)
                    pairs += !zg_config_check(&m, comm.size, cfgs[c], cat.buckets[b].tokens, NULL);
        free(cfgs);
        prog.total = (int64_t)pairs * (warmup + reps);
        st = zg_profile_measure(&comm, &m, &cl, &cat, &o, &t, &err);
    }
    if (root) zg_progress_finish(&prog);
    if (!st && root) st = zg_cost_table_write(out, &t, &err);
    if (st) {
        int code = root ? cli_fail("profile", &err) : zg_status_exit_code(st);
        zg_cost_table_free(&t);
        zg_catalog_free(&cat);
        zg_comm_free(&comm);
        return code;
    }
    if (root && !quiet) {
        printf("profile: model %s on %s (%d ranks, %s), %lld warm-up + %lld measured rounds, "
               "%s clock, %.1f s\n",
               m.name, cl.name, comm.size, zg_comm_backend_name(&comm), (long long)warmup,
               (long long)reps, zg_profile_clock_name(clk), zg_time_now() - t0);
        printf("host overhead (empty-plan step): %.2f ms\n", 1e3 * t.overhead_s);
        printf("%-10s %7s %-9s %10s %10s %10s %10s\n", "bucket", "tokens", "config", "price_ms",
               "lo_ms", "hi_ms", "peak_MiB");
        for (int32_t i = 0; i < t.n; i++) {
            char cb[32];
            const zg_cost_table_entry *e = &t.e[i];
            printf("%-10s %7lld %-9s %10.2f %10.2f %10.2f %10.2f\n", e->bucket,
                   (long long)e->tokens, zg_config_name(e->config, cb, sizeof cb), 1e3 * e->time,
                   1e3 * e->time_lo, 1e3 * e->time_hi, e->peak / 1048576.0);
        }
        printf("memory model: base %.0f B + %.1f B/token + %.1f B/text row + %.1f B/sample "
               "(max fit error %.3f%%)\n",
               t.mem_base, t.mem_per_token, t.mem_per_text, t.mem_per_sample,
               100 * t.mem_fit_max_err);
        printf("wrote %s\n", out);
    }
    zg_cost_table_free(&t);
    zg_catalog_free(&cat);
    zg_comm_free(&comm);
    return 0;
}

ZG_CLI_COMMAND(profile, "profile", "measure the price table and memory model on the real engine",
               run_profile)
