// cmd_fidelity.c — `zellige fidelity`: runs the fidelity design (rotation plans + corner plans)
// for real under mpirun and compares the measured step makespan and peak memory with what the
// measured price table predicts (docs/profiler.md). The run is zg_fidelity_run
// (src/profile/run.c); this file parses options and prints.
#include <stdlib.h>

#include "cli.h"
#include "profile/profile.h"

static const char *header =
    "usage: mpirun -np N zellige fidelity --profile FILE [options]\n"
    "Builds mixed plans in a rotation design (per block, one video of each resolution of one\n"
    "duration plus whole images; configurations rotated so every (video bucket x configuration)\n"
    "pair runs once per block; at least 18 mixed plans) and corner plans with everything whole\n"
    "(3), runs them for real in rounds (every plan once per round) and reports predicted vs\n"
    "measured step makespan (median or min over rounds, the profile's clock) and tracked peak "
    "memory,\n"
    "with MAE and MAPE. Predicted makespan = table makespan + the profile's host overhead.\n"
    "Also reports the measurement's own repeatability (odd vs even rounds' medians, %), the\n"
    "noise floor no prediction can beat on this machine.\n\n";

static void print_fidelity(const zg_fidelity_run_result *r, const zg_comm *comm, int32_t warmup) {
    const zg_fidelity_summary *sum = &r->sum;
    printf("fidelity: model %s, %d ranks (%s), %d plans, %lld warm-up + %lld measured "
           "rounds, %s clock, %s of rounds, %.1f s; host overhead %.2f ms\n",
           r->model.name, comm->size, zg_comm_backend_name(comm), r->n, (long long)warmup,
           (long long)r->reps, zg_profile_clock_name(r->clock), zg_profile_stat_name(r->stat),
           r->elapsed_s, 1e3 * r->overhead_s);
    printf("%-16s %5s %5s %10s %10s %7s %10s %10s %7s\n", "plan", "seqs", "split", "pred_ms",
           "meas_ms", "err%", "pred_MiB", "meas_MiB", "err%");
    for (int32_t i = 0; i < r->n; i++) {
        const zg_fidelity_plan *p = &r->plans[i];
        zg_plan_stats ps;
        zg_plan_evaluate((zg_plan *)&p->item.plan, NULL, NULL, &ps, NULL); // no pricer: reads
        printf("%-16s %5lld %5lld %10.2f %10.2f %+7.2f %10.3f %10.3f %+7.3f\n", p->name,
               (long long)p->item.batch.n, (long long)ps.n_split, 1e3 * p->pred_time,
               1e3 * p->meas_time, 100 * (p->pred_time - p->meas_time) / p->meas_time,
               p->pred_mem / 1048576.0, p->meas_mem / 1048576.0,
               100 * (p->pred_mem - p->meas_mem) / p->meas_mem);
    }
    printf("makespan: MAE %.2f ms, MAPE %.2f%% (max %.2f%%; on makespan - overhead %.2f%%)\n",
           1e3 * sum->mae_time, sum->mape_time, sum->max_ape_time, sum->mape_time_net);
    printf("peak memory: MAE %.1f KiB, MAPE %.3f%% (max %.3f%%)\n", sum->mae_mem / 1024,
           sum->mape_mem, sum->max_ape_mem);
    printf("repeatability of the measurement itself (odd vs even rounds' medians): %.2f%%\n",
           r->repeat_pct);
}

static int run_fidelity(int argc, char **argv) {
    zg_fidelity_run_opts o;
    zg_fidelity_run_opts_default(&o);
    zg_fidelity_opts *d = &o.design;
    int32_t threads = 0, json = 0;
    zg_error err = {0};
    const cli_opt opts[] = {
        CLI_STR_REQUIRED("--profile", "FILE", &o.profile,
                         "measured profile (zellige profile); required"),
        CLI_OPT_MODEL(&o.model, "model (default: the profile's model_spec)"),
        CLI_OPT_CLUSTER(&o.cluster, "default cpu:<ranks>"),
        CLI_STR_OPT("--catalog", "K", &o.catalog,
                    "cpu (default) | default | mix:SECONDS:K | FILE.json (the profiled\n"
                    "catalog)"),
        CLI_INT_OPT("--images", "N", &d->images, 0, 100000, "whole images per plan (default 12)"),
        CLI_INT_OPT("--min-mixed", "N", &d->min_mixed, 0, 10000,
                    "at least N mixed plans (default 18)"),
        CLI_INT_OPT("--corners", "N", &d->corners, 0, 100, "corner plans (default 3)"),
        CLI_INT_OPT("--warmup", "N", &o.warmup, 0, 1000,
                    "warm-up rounds (default 1; with 0, the largest item and the\n"
                    "first one still run once, unmeasured, first)"),
        CLI_INT_OPT("--reps", "N", &o.reps, 1, 1000, "measured rounds (default 7)"),
        CLI_STR_OPT("--clock", "C", &o.clock, "wall | cpu (default: the profile's)"),
        CLI_STR_OPT("--stat", "S", &o.stat, "median | min over rounds (default: the profile's)"),
        CLI_OPT_THREADS(&threads, "threads per rank (default 1 when ranks > 1)"),
        CLI_OPT_SEED(&d->seed, "image draw seed (default 1)"),
        CLI_OPT_OUT(&o.out, "per-plan results as JSON (atomic)"),
        CLI_OPT_JSON(&json, "print one JSON line: plans, mape_time_pct, mape_mem_pct, ..."),
        CLI_OPT_END,
    };
    const cli_spec spec = {"fidelity", header, opts, cli_cluster_footer()};
    cli_result pr = cli_parse(&spec, argc, argv, &err);
    if (pr != CLI_PARSED) return cli_parse_exit(&spec, pr, &err);
    if (cli_check_inputs(&(cli_inputs){.model = o.model, .cluster = o.cluster,
                                        .profile = o.profile, .catalog = o.model ? o.catalog : NULL},
                         &err))
        return cli_fail("fidelity", &err);

    zg_comm comm;
    if (zg_comm_init_auto(&comm, NULL, NULL, &err)) return cli_fail("fidelity", &err);
    zg_profile_set_threads(threads, comm.size);
    int root = comm.rank == 0;
    zg_progress prog;
    zg_progress_init(&prog, "fidelity", 1);
    if (root) o.progress = cli_progress, o.progress_ctx = &prog;
    zg_fidelity_run_result r;
    zg_status st = zg_fidelity_run(&o, &comm, &r, &err);
    if (root) zg_progress_finish(&prog);
    cJSON *j = !st && root && json ? zg_fidelity_run_json(&r, 0) : NULL;
    char *s = j ? cJSON_PrintUnformatted(j) : NULL;
    if (!st && root && json && !s) st = zg_error_set(&err, ZG_ERR_NOMEM, "out of memory");
    int code = 0;
    if (st)
        code = root ? cli_fail("fidelity", &err) : zg_status_exit_code(st);
    else if (s)
        printf("%s\n", s);
    else if (root)
        print_fidelity(&r, &comm, o.warmup);
    free(s);
    cJSON_Delete(j);
    zg_fidelity_run_result_free(&r);
    zg_comm_free(&comm);
    return code;
}

ZG_CLI_COMMAND(fidelity, "fidelity",
               "run rotation + corner plans for real; predicted vs measured makespan and memory",
               run_fidelity)
