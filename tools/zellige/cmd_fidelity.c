// cmd_fidelity.c — `zellige fidelity`: runs the fidelity design (rotation plans + corner plans)
// for real under mpirun and compares the measured step makespan and peak memory with what the
// measured price table predicts (docs/profiler.md).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "profile/profile.h"

static const char *usage_text =
    "usage: mpirun -np N zellige fidelity --profile FILE [options]\n"
    "Builds mixed plans in a rotation design (per block, one video of each resolution of one\n"
    "duration plus whole images; configurations rotated so every (video bucket x configuration)\n"
    "pair runs once per block; at least 18 mixed plans) and corner plans with everything whole\n"
    "(3), runs them for real in rounds (every plan once per round) and reports predicted vs\n"
    "measured step makespan (median or min over rounds, the profile's clock) and tracked peak memory,\n"
    "with MAE and MAPE. Predicted makespan = table makespan + the profile's host overhead.\n"
    "Also reports the measurement's own repeatability (odd vs even rounds' medians, %), the\n"
    "noise floor no prediction can beat on this machine.\n\n"
    "  --profile FILE   measured profile (zellige profile); required\n"
    "  --model M        model (default: the profile's model_spec)\n"
    "  --cluster C      default cpu:<ranks>\n"
    "  --catalog K      cpu (default) | default | FILE.json (the profiled catalog)\n"
    "  --images N       whole images per plan (default 12)\n"
    "  --min-mixed N    at least N mixed plans (default 18)\n"
    "  --corners N      corner plans (default 3)\n"
    "  --warmup N       warm-up rounds (default 1)\n"
    "  --reps N         measured rounds (default 7)\n"
    "  --clock C        wall | cpu (default: the profile's)\n"
    "  --stat S         median | min over rounds (default: the profile's)\n"
    "  --threads N      threads per rank (default 1 when ranks > 1)\n"
    "  --seed N         image draw seed (default 1)\n"
    "  --out FILE       per-plan results as JSON (atomic)\n"
    "  --json           print one JSON line: plans, mape_time_pct, mape_mem_pct, ...\n";

static void on_progress(void *ctx, int64_t done, int64_t total) {
    zg_progress *p = ctx;
    p->total = total;
    zg_progress_update(p, done);
}

static int run_fidelity(int argc, char **argv) {
    const char *prof = NULL, *model_name = NULL, *cluster_name = NULL, *catalog = "cpu";
    const char *out = NULL, *clock = NULL, *stat = NULL;
    int64_t images = 12, min_mixed = 18, corners = 3, warmup = 1, reps = 7, threads = 0, seed = 1;
    int bad = 0, json = 0;
    zg_error err = {0};
    for (int i = 1; i < argc && !bad; i++) {
        if (cli_is_help(argv[i])) {
            fputs(usage_text, stdout);
            return 0;
        }
        if (cli_opt_str(argc, argv, &i, "--profile", &prof, &err, &bad) ||
            cli_opt_str(argc, argv, &i, "--model", &model_name, &err, &bad) ||
            cli_opt_str(argc, argv, &i, "--cluster", &cluster_name, &err, &bad) ||
            cli_opt_str(argc, argv, &i, "--catalog", &catalog, &err, &bad) ||
            cli_opt_str(argc, argv, &i, "--clock", &clock, &err, &bad) ||
            cli_opt_str(argc, argv, &i, "--stat", &stat, &err, &bad) ||
            cli_opt_str(argc, argv, &i, "--out", &out, &err, &bad))
            continue;
        if (cli_opt_int(argc, argv, &i, "--images", &images, &err, &bad) ||
            cli_opt_int(argc, argv, &i, "--min-mixed", &min_mixed, &err, &bad) ||
            cli_opt_int(argc, argv, &i, "--corners", &corners, &err, &bad) ||
            cli_opt_int(argc, argv, &i, "--warmup", &warmup, &err, &bad) ||
            cli_opt_int(argc, argv, &i, "--reps", &reps, &err, &bad) ||
            cli_opt_int(argc, argv, &i, "--threads", &threads, &err, &bad) ||
            cli_opt_int(argc, argv, &i, "--seed", &seed, &err, &bad))
            continue;
        if (!strcmp(argv[i], "--json")) json = 1;
        else bad = 1, zg_error_set(&err, ZG_ERR_INVALID, "unknown option '%s' (see --help)", argv[i]);
    }
    if (!bad && !prof) bad = 1, zg_error_set(&err, ZG_ERR_INVALID, "--profile FILE is required");
    if (!bad && (images < 0 || images > 100000 || min_mixed < 0 || min_mixed > 10000 ||
                 corners < 0 || corners > 100 || warmup < 0 || warmup > 1000 || reps < 1 ||
                 reps > 1000 || threads < 0 || threads > 1024))
        bad = 1, zg_error_set(&err, ZG_ERR_INVALID,
                              "--images, --min-mixed, --corners, --warmup must be >= 0, --reps "
                              "1..1000");
    if (bad) return cli_fail("fidelity", &err);

    zg_cost_table t;
    zg_model m;
    zg_status st = zg_cost_table_load(prof, &t, &err);
    if (st) return cli_fail("fidelity", &err);
    const cJSON *spec = t.extra ? cJSON_GetObjectItemCaseSensitive(t.extra, "model_spec") : NULL;
    if (model_name) st = zg_model_load(model_name, &m, &err);
    else if (spec) st = zg_model_from_json(spec, &m, &err);
    else st = zg_error_set(&err, ZG_ERR_INVALID, "%s has no model_spec; give --model", prof);
    zg_profile_clock clk = ZG_PROFILE_CLOCK_WALL;
    const cJSON *set = t.extra ? cJSON_GetObjectItemCaseSensitive(t.extra, "settings") : NULL;
    const cJSON *pc = set ? cJSON_GetObjectItemCaseSensitive(set, "clock") : NULL;
    if (!st && (clock || cJSON_IsString(pc)))
        st = zg_profile_clock_parse(clock ? clock : pc->valuestring, &clk, &err);
    zg_profile_stat sstat = ZG_PROFILE_STAT_MEDIAN;
    const cJSON *pst = set ? cJSON_GetObjectItemCaseSensitive(set, "stat") : NULL;
    if (!st && (stat || cJSON_IsString(pst)))
        st = zg_profile_stat_parse(stat ? stat : pst->valuestring, &sstat, &err);
    if (st) {
        zg_cost_table_free(&t);
        return cli_fail("fidelity", &err);
    }
    zg_comm comm;
    if (zg_comm_init_auto(&comm, NULL, NULL, &err)) {
        zg_cost_table_free(&t);
        return cli_fail("fidelity", &err);
    }
    zg_profile_set_threads((int32_t)threads, comm.size);
    int root = comm.rank == 0;
    char cname[32];
    snprintf(cname, sizeof cname, "cpu:%d", comm.size);
    zg_cluster cl;
    zg_catalog cat = {0};
    zg_pricer pr = {0};
    zg_fidelity_plan *plans = NULL;
    int32_t n = 0;
    double *times = NULL, *peaks = NULL;
    zg_trainer tr;
    int have_tr = 0;
    st = zg_cluster_load(cluster_name ? cluster_name : cname, &cl, &err);
    if (!st && cl.world_size != comm.size)
        st = zg_error_set(&err, ZG_ERR_INVALID, "cluster %s has %d ranks but the run has %d",
                          cl.name, cl.world_size, comm.size);
    if (!st && strcmp(t.model, m.name))
        st = zg_error_set(&err, ZG_ERR_INVALID, "%s was measured for model '%s', not '%s'", prof,
                          t.model, m.name);
    if (!st) st = zg_profile_catalog_load(catalog, &m, &cat, &err);
    if (!st) st = zg_cost_table_init(&pr, &t, &m, &cl, &err);
    zg_fidelity_opts fo;
    zg_fidelity_opts_default(&fo);
    fo.images = (int32_t)images, fo.min_mixed = (int32_t)min_mixed, fo.corners = (int32_t)corners;
    fo.seed = (uint64_t)seed;
    if (!st) st = zg_fidelity_design(&m, &cl, &cat, &pr, t.overhead_s, &fo, &plans, &n, &err);
    zg_profile_item *items = NULL;
    if (!st) {
        times = zg_calloc((size_t)n * (size_t)reps, sizeof *times, &err);
        peaks = zg_calloc((size_t)n, sizeof *peaks, &err);
        items = zg_calloc((size_t)n, sizeof *items, &err);
        if (!times || !peaks || !items) st = ZG_ERR_NOMEM;
    }
    for (int32_t i = 0; !st && i < n; i++) items[i] = plans[i].item;  // shallow views
    zg_train_opts to;
    zg_train_opts_default(&to);
    to.adam.lr = 0;
    const cJSON *ck = set ? cJSON_GetObjectItemCaseSensitive(set, "act_ckpt") : NULL;
    if (cJSON_IsNumber(ck)) to.act_ckpt = ck->valueint;
    if (!st && !(st = zg_trainer_init(&tr, &m, &comm, &to, &err))) have_tr = 1;
    zg_progress prog;
    zg_progress_init(&prog, "fidelity", (int64_t)n * (warmup + reps));
    double t0 = zg_time_now();
    if (!st)
        st = zg_profile_run_rounds(&tr, items, n, (int32_t)warmup, (int32_t)reps, clk, times,
                                   peaks, root ? on_progress : NULL, &prog, &err);
    if (root) zg_progress_finish(&prog);
    zg_fidelity_summary sum;
    memset(&sum, 0, sizeof sum);
    cJSON *res = NULL;
    if (!st) {
        for (int32_t i = 0; i < n; i++) {
            plans[i].meas_time = zg_profile_stat_of(times + (int64_t)i * reps, (int32_t)reps, sstat);
            plans[i].meas_lo = INFINITY, plans[i].meas_hi = 0;
            for (int64_t r = 0; r < reps; r++) {
                plans[i].meas_lo = fmin(plans[i].meas_lo, times[i * reps + r]);
                plans[i].meas_hi = fmax(plans[i].meas_hi, times[i * reps + r]);
            }
            plans[i].meas_mem = peaks[i];
        }
        zg_fidelity_summarize(plans, n, t.overhead_s, &sum);
        res = cJSON_CreateObject();
        cJSON_AddNumberToObject(res, "plans", n);
        cJSON_AddNumberToObject(res, "mape_time_pct", sum.mape_time);
        cJSON_AddNumberToObject(res, "mape_mem_pct", sum.mape_mem);
        cJSON_AddNumberToObject(res, "mae_time_s", sum.mae_time);
        cJSON_AddNumberToObject(res, "mae_mem_bytes", sum.mae_mem);
        cJSON_AddNumberToObject(res, "max_ape_time_pct", sum.max_ape_time);
        cJSON_AddNumberToObject(res, "max_ape_mem_pct", sum.max_ape_mem);
        cJSON_AddNumberToObject(res, "mape_time_net_pct", sum.mape_time_net);
        cJSON_AddNumberToObject(res, "repeat_time_pct",
                                zg_fidelity_repeat_pct(times, n, (int32_t)reps, sstat));
        cJSON_AddNumberToObject(res, "overhead_s", t.overhead_s);
        cJSON_AddStringToObject(res, "clock", zg_profile_clock_name(clk));
        cJSON_AddStringToObject(res, "stat", zg_profile_stat_name(sstat));
        cJSON_AddNumberToObject(res, "world_size", comm.size);
        cJSON_AddNumberToObject(res, "reps", (double)reps);
        cJSON_AddStringToObject(res, "model", m.name);
        if (out && root) {
            cJSON *full = cJSON_Duplicate(res, 1), *arr = cJSON_AddArrayToObject(full, "per_plan");
            for (int32_t i = 0; i < n && arr; i++) {
                zg_plan_stats ps;
                zg_plan_evaluate(&plans[i].item.plan, NULL, NULL, &ps, NULL);
                cJSON *o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "name", plans[i].name);
                cJSON_AddNumberToObject(o, "sequences", (double)plans[i].item.batch.n);
                cJSON_AddNumberToObject(o, "split", (double)ps.n_split);
                cJSON_AddNumberToObject(o, "pred_s", plans[i].pred_time);
                cJSON_AddNumberToObject(o, "meas_s", plans[i].meas_time);
                cJSON_AddNumberToObject(o, "meas_lo_s", plans[i].meas_lo);
                cJSON_AddNumberToObject(o, "meas_hi_s", plans[i].meas_hi);
                cJSON *rr = cJSON_AddArrayToObject(o, "meas_rounds_s");
                for (int64_t r = 0; rr && r < reps; r++)
                    cJSON_AddItemToArray(rr, cJSON_CreateNumber(times[i * reps + r]));
                cJSON_AddNumberToObject(o, "pred_mem", plans[i].pred_mem);
                cJSON_AddNumberToObject(o, "meas_mem", plans[i].meas_mem);
                cJSON_AddItemToObject(o, "plan", zg_plan_to_json(&plans[i].item.plan));
                cJSON_AddItemToArray(arr, o);
            }
            st = zg_json_write_file(out, full, 1, &err);
            cJSON_Delete(full);
        }
    }
    int code = 0;
    if (st) code = root ? cli_fail("fidelity", &err) : zg_status_exit_code(st);
    else if (root && json) {
        char *s = cJSON_PrintUnformatted(res);
        printf("%s\n", s);
        free(s);
    } else if (root) {
        printf("fidelity: model %s, %d ranks (%s), %d plans, %lld warm-up + %lld measured "
               "rounds, %s clock, %s of rounds, %.1f s; host overhead %.2f ms\n",
               m.name, comm.size, zg_comm_backend_name(&comm), n, (long long)warmup,
               (long long)reps, zg_profile_clock_name(clk), zg_profile_stat_name(sstat),
               zg_time_now() - t0, 1e3 * t.overhead_s);
        printf("%-16s %5s %5s %10s %10s %7s %10s %10s %7s\n", "plan", "seqs", "split", "pred_ms",
               "meas_ms", "err%", "pred_MiB", "meas_MiB", "err%");
        for (int32_t i = 0; i < n; i++) {
            const zg_fidelity_plan *p = &plans[i];
            zg_plan_stats ps;
            zg_plan_evaluate((zg_plan *)&p->item.plan, NULL, NULL, &ps, NULL);
            printf("%-16s %5lld %5lld %10.2f %10.2f %+7.2f %10.3f %10.3f %+7.3f\n", p->name,
                   (long long)p->item.batch.n, (long long)ps.n_split, 1e3 * p->pred_time,
                   1e3 * p->meas_time, 100 * (p->pred_time - p->meas_time) / p->meas_time,
                   p->pred_mem / 1048576.0, p->meas_mem / 1048576.0,
                   100 * (p->pred_mem - p->meas_mem) / p->meas_mem);
        }
        printf("makespan: MAE %.2f ms, MAPE %.2f%% (max %.2f%%; on makespan - overhead %.2f%%)\n",
               1e3 * sum.mae_time, sum.mape_time, sum.max_ape_time, sum.mape_time_net);
        printf("peak memory: MAE %.1f KiB, MAPE %.3f%% (max %.3f%%)\n", sum.mae_mem / 1024,
               sum.mape_mem, sum.max_ape_mem);
        printf("repeatability of the measurement itself (odd vs even rounds' medians): %.2f%%\n",
               zg_fidelity_repeat_pct(times, n, (int32_t)reps, sstat));
    }
    cJSON_Delete(res);
    if (have_tr) zg_trainer_free(&tr);
    free(items), free(times), free(peaks);
    zg_fidelity_free(plans, n);
    zg_pricer_free(&pr);
    zg_catalog_free(&cat);
    zg_cost_table_free(&t);
    zg_comm_free(&comm);
    return code;
}

ZG_CLI_COMMAND(fidelity, "fidelity",
               "run rotation + corner plans for real; predicted vs measured makespan and memory",
               run_fidelity)
