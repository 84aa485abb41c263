// cmd_profile.c — `zellige profile`: under mpirun, measures the per-(bucket, configuration)
// price table on the real training engine and calibrates the memory model (docs/profiler.md).
// The run is zg_profile_run (src/profile/run.c); this file parses options and prints the table.
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "profile/profile.h"

static const char *header =
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
    "mpirun: one rank. Pin ranks to cores (mpirun --bind-to core).\n\n";

static double setting(const zg_cost_table *t, const char *key, double scale) {
    const cJSON *set = t->extra ? cJSON_GetObjectItemCaseSensitive(t->extra, "settings") : NULL;
    const cJSON *v = set ? cJSON_GetObjectItemCaseSensitive(set, key) : NULL;
    return cJSON_IsNumber(v) ? scale * v->valuedouble : 0;
}

static void print_profile(const zg_profile_run_result *r, const zg_profile_run_opts *o,
                          const zg_comm *comm) {
    const zg_cost_table *t = &r->table;
    printf("profile: model %s on %s (%d ranks, %s), %s method, %lld warm-up + %lld measured "
           "rounds, %s clock, %s of rounds, %.1f s\n",
           r->model.name, r->cluster.name, comm->size, zg_comm_backend_name(comm),
           zg_profile_method_name(r->method), (long long)o->warmup, (long long)o->reps,
           zg_profile_clock_name(r->clock), zg_profile_stat_name(r->stat), r->elapsed_s);
    const cJSON *set = t->extra ? cJSON_GetObjectItemCaseSensitive(t->extra, "settings") : NULL;
    if (r->method != ZG_PROFILE_SINGLE) {
        printf("fit over %d calibration plans: fixed per-step time (overhead_s) %.2f ms, "
               "rmse %.2f ms, max relative residual %.2f%%; empty-plan step %.2f ms\n",
               (int)setting(t, "calib_plans", 1), 1e3 * t->overhead_s,
               setting(t, "fit_rmse_s", 1e3), setting(t, "fit_max_rel_err", 100),
               setting(t, "empty_step_s", 1e3));
        const cJSON *ha = cJSON_GetObjectItemCaseSensitive(set, "hybrid_scale");
        const cJSON *hw = cJSON_GetObjectItemCaseSensitive(set, "hybrid_offset_whole_s");
        const cJSON *hs = cJSON_GetObjectItemCaseSensitive(set, "hybrid_offset_split_s");
        if (cJSON_IsNumber(ha) && cJSON_IsNumber(hw) && cJSON_IsNumber(hs))
            printf("hybrid correction: price = max(0, %.4f x single %+.2f ms (whole) / "
                   "%+.2f ms (split))\n",
                   ha->valuedouble, 1e3 * hw->valuedouble, 1e3 * hs->valuedouble);
    } else {
        printf("host overhead (empty-plan step): %.2f ms\n", 1e3 * t->overhead_s);
    }
    printf("%-10s %7s %-9s %10s %10s %10s %10s\n", "bucket", "tokens", "config", "price_ms",
           "lo_ms", "hi_ms", "peak_MiB");
    for (int32_t i = 0; i < t->n; i++) {
        char cb[32];
        const zg_cost_table_entry *e = &t->e[i];
        printf("%-10s %7lld %-9s %10.2f %10.2f %10.2f %10.2f\n", e->bucket, (long long)e->tokens,
               zg_config_name(e->config, cb, sizeof cb), 1e3 * e->time, 1e3 * e->time_lo,
               1e3 * e->time_hi, e->peak / 1048576.0);
    }
    printf("memory model: base %.0f B + %.1f B/token + %.1f B/text row + %.1f B/sample "
           "(max fit error %.3f%%)\n",
           t->mem_base, t->mem_per_token, t->mem_per_text, t->mem_per_sample,
           100 * t->mem_fit_max_err);
    printf("wrote %s\n", o->out);
}

// A calibration fit that misses its own plans by more than half, or a pair priced 0 s, gives a
// planner wrong or free work: said on stderr, --quiet or not, since such a profile still gets
// written and used.
static void warn_poor_fit(const zg_profile_run_result *r, const char *out) {
    double max_rel = setting(&r->table, "fit_max_rel_err", 1);
    if (r->method != ZG_PROFILE_SINGLE && max_rel > 0.5)
        fprintf(stderr,
                "zellige profile: warning: the calibration fit misses its own plans by up to "
                "%.0f%% (rmse %.1f ms): its prices are unreliable. Profile with more rounds "
                "(--reps, --warmup) on a quiet machine, or with --method single\n",
                100 * max_rel, setting(&r->table, "fit_rmse_s", 1e3));
    cli_warn_unpriced("profile", out, &r->table);
}

static int run_profile(int argc, char **argv) {
    zg_profile_run_opts o;
    zg_profile_run_opts_default(&o);
    zg_calib_opts *c = &o.calib;
    int32_t threads = 0, quiet = 0;
    zg_error err = {0};
    const cli_opt opts[] = {
        CLI_OPT_MODEL(&o.model, "model preset or JSON (default tiny)"),
        CLI_OPT_CLUSTER(&o.cluster,
                        "cluster name to record (default cpu:<ranks>); must have <ranks> ranks"),
        CLI_STR_OPT("--catalog", "K", &o.catalog,
                    "cpu (default) | default | mix:SECONDS:K (the images and SECONDS-s\n"
                    "videos of the paper's catalog, tokens / K: what `train --mix ...\n"
                    "--mix-divisor K` draws) | FILE.json with {\"buckets\":[...]}"),
        CLI_OUT_REQUIRED("--out", "FILE", &o.out, "profile JSON to write (required)"),
        CLI_INT_OPT("--warmup", "N", &o.warmup, 0, 1000,
                    "warm-up rounds (default 1; with 0, the largest item and the\n"
                    "first one still run once, unmeasured, first)"),
        CLI_INT_OPT("--reps", "N", &o.reps, 1, 1000,
                    "measured rounds (default 6; fewer rounds fit noisier prices)"),
        CLI_INT_OPT("--max-degree", "D", &o.max_degree, 0, INT32_MAX,
                    "largest degree measured (default: all ranks)"),
        CLI_INT_OPT("--text-tokens", "N", &o.text_tokens, 0, 1000000,
                    "text rows of profiled sequences (default: the model's text_len)"),
        CLI_FLAG_VAL("--no-act-ckpt", &o.act_ckpt, 0, "profile without activation checkpointing"),
        CLI_OPT_THREADS(&threads, "OpenMP/OpenBLAS threads per rank (default 1 when ranks > 1)"),
        CLI_STR_OPT("--clock", "C", &o.clock,
                    "wall (default: step makespan in wall time) | cpu (largest per-rank CPU\n"
                    "time of the step: leaves out time other processes held the core)"),
        CLI_STR_OPT("--method", "M", &o.method, "hybrid (default) | mixed | single (see above)"),
        CLI_STR_OPT("--stat", "S", &o.stat,
                    "median (default) | min: how rounds are summarised (min: the\n"
                    "uncontended step on a shared machine; interference only adds time)"),
        CLI_INT_OPT("--calib-plans", "N", &c->plans, 0, 100000,
                    "calibration plans (default: mixed 3 x the (bucket, config) pairs,\n"
                    "hybrid max(24, pairs))"),
        CLI_INT_OPT("--calib-images", "N", &c->images, 0, 10000,
                    "up to N whole images on rank 0 per plan (default 12)"),
        CLI_INT_OPT("--calib-videos", "N", &c->videos, 0, 10000,
                    "up to N whole videos on rank 0 per plan (default 2)"),
        CLI_INT_OPT("--calib-splits", "N", &c->splits, 0, 10000,
                    "up to N split sequences per plan (default 3)"),
        CLI_INT_OPT("--calib-min-splits", "N", &c->min_splits, 0, 10000,
                    "at least N of them (default 1; 0: some plans hold none, so\n"
                    "hybrid's fixed time and split offset are told apart)"),
        CLI_NUM_OPT("--calib-mirror", "P", &c->mirror, 0, 1,
                    "probability of a copy of each whole sequence on each other rank\n"
                    "(default 1: balanced calibration plans)"),
        CLI_OPT_SEED(&o.seed, "parameter and design seed (default 1)"),
        CLI_FLAG_OPT("--quiet", &quiet, "no table on stdout"),
        CLI_OPT_END,
    };
    const cli_spec spec = {"profile", header, opts, cli_cluster_footer()};
    cli_result pr = cli_parse(&spec, argc, argv, &err);
    if (pr != CLI_PARSED) return cli_parse_exit(&spec, pr, &err);
    if (cli_check_inputs(&(cli_inputs){.model = o.model, .cluster = o.cluster,
                                        .catalog = o.catalog},
                         &err))
        return cli_fail("profile", &err);

    zg_comm comm;
    if (zg_comm_init_auto(&comm, NULL, NULL, &err)) return cli_fail("profile", &err);
    zg_profile_set_threads(threads, comm.size);
    int root = comm.rank == 0;
    zg_progress prog;
    zg_progress_init(&prog, "profile", 1);
    if (root) o.progress = cli_progress, o.progress_ctx = &prog;
    zg_profile_run_result r;
    zg_status st = zg_profile_run(&o, &comm, &r, &err);
    if (root) zg_progress_finish(&prog);
    int code = 0;
    if (st)
        code = root ? cli_fail("profile", &err) : zg_status_exit_code(st);
    else if (root && !quiet)
        print_profile(&r, &o, &comm);
    if (!st && root) warn_poor_fit(&r, o.out);
    zg_profile_run_result_free(&r);
    zg_comm_free(&comm);
    return code;
}

ZG_CLI_COMMAND(profile, "profile", "measure the price table and memory model on the real engine",
               run_profile)
