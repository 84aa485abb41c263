// cmd_profile.c — `zellige profile`: under mpirun, measures the per-(bucket, configuration)
// price table on the real training engine and calibrates the memory model (docs/profiler.md).
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "profile/profile.h"

static const char *usage_text =
    "usage: mpirun -np N zellige profile --out FILE [options]\n"
    "Measures, for every (bucket, configuration) pair, the per-participating-rank price of a\n"
    "sequence in a training step (dispatch, DiT forward+backward with attention through the\n"
    "engine) on the real engine, in warm-up rounds then measured rounds.\n"
    "  --method mixed: prices in context. Mixed calibration plans (many sequences,\n"
    "    rank 0 the critical rank by construction) run for real; the median makespans are\n"
    "    fitted as fixed + sum of rank 0's counts x prices (non-negative least squares), so\n"
    "    coalescing and per-step fixed costs are folded into the prices; the fixed part is the\n"
    "    profile's overhead_s.\n"
    "  --method hybrid (default): the single-sequence prices below, corrected in context by 4\n"
    "    coefficients (scale, per-whole and per-split offsets, fixed) fitted on mixed\n"
    "    calibration plans run in the same rounds.\n"
    "  --method single: one sequence per step; price = its step minus the same round's\n"
    "    empty-plan step; median over rounds.\n"
    "Calibrates the memory model (base + per-token + per-text-row + per-sample bytes) on the\n"
    "tracked peaks. Writes the profile atomically (rank 0); it records the machine. Without\n"
    "mpirun: one rank. Pin ranks to cores (mpirun --bind-to core).\n\n"
    "  --model M        model preset or JSON (default tiny)\n"
    "  --cluster C      cluster name to record (default cpu:<ranks>); must have <ranks> ranks\n"
    "  --catalog K      cpu (default) | default | FILE.json with {\"buckets\":[...]}\n"
    "  --out FILE       profile JSON to write (required)\n"
    "  --warmup N       warm-up rounds (default 1)\n"
    "  --reps N         measured rounds (default 6; fewer rounds fit noisier prices)\n"
    "  --max-degree D   largest degree measured (default: all ranks)\n"
    "  --text-tokens N  text rows of profiled sequences (default: the model's text_len)\n"
    "  --no-act-ckpt    profile without activation checkpointing\n"
    "  --threads N      OpenMP/OpenBLAS threads per rank (default 1 when ranks > 1)\n"
    "  --clock C        wall (default: step makespan in wall time) | cpu (largest per-rank CPU\n"
    "                   time of the step: leaves out time other processes held the core)\n"
    "  --method M       hybrid (default) | mixed | single (see above)\n"
    "  --stat S         median (default) | min: how rounds are summarised (min: the\n"
    "                   uncontended step on a shared machine; interference only adds time)\n"
    "  --calib-plans N  calibration plans (default: mixed 3 x the (bucket, config) pairs,\n"
    "                   hybrid max(24, pairs))\n"
    "  --calib-images N up to N whole images on rank 0 per plan (default 12)\n"
    "  --calib-videos N up to N whole videos on rank 0 per plan (default 2)\n"
    "  --calib-splits N 1..N split sequences per plan (default 3)\n"
    "  --calib-mirror P probability of a copy of each whole sequence on each other rank\n"
    "                   (default 1: balanced calibration plans)\n"
    "  --seed N         parameter and design seed (default 1)\n"
    "  --quiet          no table on stdout\n";

static void on_progress(void *ctx, int64_t done, int64_t total) {
    zg_progress *p = ctx;
    if (!p) return;
    p->total = total;
    zg_progress_update(p, done);
}

static int run_profile(int argc, char **argv) {
    const char *model_name = "tiny", *cluster_name = NULL, *catalog = "cpu", *out = NULL;
    const char *clock = "wall", *method = "hybrid", *stat = "median";
    double cmirror = 1;
    int64_t warmup = 1, reps = 6, maxd = 0, text = 0, threads = 0, seed = 1;
    int64_t cplans = 0, cimages = 12, cvideos = 2, csplits = 3;
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
            cli_opt_str(argc, argv, &i, "--clock", &clock, &err, &bad) ||
            cli_opt_str(argc, argv, &i, "--method", &method, &err, &bad) ||
            cli_opt_str(argc, argv, &i, "--stat", &stat, &err, &bad))
            continue;
        if (cli_opt_int(argc, argv, &i, "--warmup", &warmup, &err, &bad) ||
            cli_opt_int(argc, argv, &i, "--reps", &reps, &err, &bad) ||
            cli_opt_int(argc, argv, &i, "--max-degree", &maxd, &err, &bad) ||
            cli_opt_int(argc, argv, &i, "--text-tokens", &text, &err, &bad) ||
            cli_opt_int(argc, argv, &i, "--threads", &threads, &err, &bad) ||
            cli_opt_int(argc, argv, &i, "--seed", &seed, &err, &bad) ||
            cli_opt_int(argc, argv, &i, "--calib-plans", &cplans, &err, &bad) ||
            cli_opt_int(argc, argv, &i, "--calib-images", &cimages, &err, &bad) ||
            cli_opt_int(argc, argv, &i, "--calib-videos", &cvideos, &err, &bad) ||
            cli_opt_int(argc, argv, &i, "--calib-splits", &csplits, &err, &bad) ||
            cli_opt_num(argc, argv, &i, "--calib-mirror", &cmirror, &err, &bad))
            continue;
        if (!strcmp(argv[i], "--no-act-ckpt")) ckpt = 0;
        else if (!strcmp(argv[i], "--quiet")) quiet = 1;
        else bad = 1, zg_error_set(&err, ZG_ERR_INVALID, "unknown option '%s' (see --help)", argv[i]);
    }
    if (!bad && !out) bad = 1, zg_error_set(&err, ZG_ERR_INVALID, "--out FILE is required");
    if (!bad && (warmup < 0 || warmup > 1000 || reps < 1 || reps > 1000 || maxd < 0 ||
                 text < 0 || text > 1000000 || threads < 0 || threads > 1024 || cplans < 0 ||
                 cplans > 100000 || cimages < 0 || cimages > 10000 || cvideos < 0 ||
                 cvideos > 10000 || csplits < 0 || csplits > 10000 || !(cmirror >= 0) ||
                 cmirror > 1))
        bad = 1, zg_error_set(&err, ZG_ERR_INVALID,
                              "--warmup (%lld) must be 0..1000, --reps (%lld) 1..1000, "
                              "--max-degree, --text-tokens, --threads and --calib-* >= 0, "
                              "--calib-mirror <= 1",
                              (long long)warmup, (long long)reps);
    zg_profile_clock clk = ZG_PROFILE_CLOCK_WALL;
    zg_profile_method meth = ZG_PROFILE_MIXED;
    if (!bad && zg_profile_clock_parse(clock, &clk, &err)) bad = 1;
    if (!bad && zg_profile_method_parse(method, &meth, &err)) bad = 1;
    zg_profile_stat sstat = ZG_PROFILE_STAT_MEDIAN;
    if (!bad && zg_profile_stat_parse(stat, &sstat, &err)) bad = 1;
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
    o.method = meth;
    o.stat = sstat;
    o.calib.plans = (int32_t)cplans, o.calib.images = (int32_t)cimages;
    o.calib.videos = (int32_t)cvideos, o.calib.splits = (int32_t)csplits;
    o.calib.mirror = cmirror;
    o.calib.seed = (uint64_t)seed;
    zg_progress prog;
    zg_progress_init(&prog, "profile", 1);
    if (root) {
        o.progress = on_progress;
        o.progress_ctx = &prog;
    }
    double t0 = zg_time_now();
    if (!st) st = zg_profile_measure(&comm, &m, &cl, &cat, &o, &t, &err);
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
        printf("profile: model %s on %s (%d ranks, %s), %s method, %lld warm-up + %lld measured "
               "rounds, %s clock, %s of rounds, %.1f s\n",
               m.name, cl.name, comm.size, zg_comm_backend_name(&comm),
               zg_profile_method_name(meth), (long long)warmup, (long long)reps,
               zg_profile_clock_name(clk), zg_profile_stat_name(sstat), zg_time_now() - t0);
        const cJSON *set = t.extra ? cJSON_GetObjectItemCaseSensitive(t.extra, "settings") : NULL;
        const cJSON *es = set ? cJSON_GetObjectItemCaseSensitive(set, "empty_step_s") : NULL;
        if (meth != ZG_PROFILE_SINGLE) {
            const cJSON *np = cJSON_GetObjectItemCaseSensitive(set, "calib_plans");
            const cJSON *rm = cJSON_GetObjectItemCaseSensitive(set, "fit_rmse_s");
            const cJSON *mr = cJSON_GetObjectItemCaseSensitive(set, "fit_max_rel_err");
            printf("fit over %d calibration plans: fixed per-step time (overhead_s) %.2f ms, "
                   "rmse %.2f ms, max relative residual %.2f%%; empty-plan step %.2f ms\n",
                   cJSON_IsNumber(np) ? np->valueint : 0, 1e3 * t.overhead_s,
                   cJSON_IsNumber(rm) ? 1e3 * rm->valuedouble : 0,
                   cJSON_IsNumber(mr) ? 100 * mr->valuedouble : 0,
                   cJSON_IsNumber(es) ? 1e3 * es->valuedouble : 0);
            const cJSON *ha = cJSON_GetObjectItemCaseSensitive(set, "hybrid_scale");
            const cJSON *hw = cJSON_GetObjectItemCaseSensitive(set, "hybrid_offset_whole_s");
            const cJSON *hs = cJSON_GetObjectItemCaseSensitive(set, "hybrid_offset_split_s");
            if (cJSON_IsNumber(ha) && cJSON_IsNumber(hw) && cJSON_IsNumber(hs))
                printf("hybrid correction: price = max(0, %.4f x single %+.2f ms (whole) / "
                       "%+.2f ms (split))\n",
                       ha->valuedouble, 1e3 * hw->valuedouble, 1e3 * hs->valuedouble);
        } else {
            printf("host overhead (empty-plan step): %.2f ms\n", 1e3 * t.overhead_s);
        }
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
