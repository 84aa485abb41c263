// cmd_train.c — `zellige train`: distributed DiT training under mpirun. Every step: a batch
// (synthetic, shaped like an image+video mix, or a fixed batch file), a plan from the chosen
// planner (identical on every rank: planners are deterministic), one training step on the real
// engine. With several policies, every step's batch runs under each policy in turn, each with
// its own trainer (same seed), so step times compare on the same batches (docs/training.md).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "profile/profile.h"
#include "planner/planner.h"

#define TRAIN_MAX_POL 8

static const char *usage_text =
    "usage: mpirun -np N zellige train [options]\n"
    "Trains the C DiT (arch wan) on N ranks; every step's placement comes from --policy.\n\n"
    "  --model M            preset or JSON (default tiny; configs/cpu-small.json is larger)\n"
    "  --policy LIST        planner(s): zellige, joint, knapformer, usp, adaptive, dp, static;\n"
    "                       a comma list runs each step's batch under every policy in turn\n"
    "                       (separate trainers, same seed) and prints a comparison\n"
    "  --cluster C          cluster for the planner (default cpu:<ranks>)\n"
    "  --profile FILE       price with the measured table (zellige profile) instead of the\n"
    "                       analytic model; predicted step = makespan + its host overhead\n"
    "  --tokens-per-rank N  synthetic batch load (default 512)\n"
    "  --video-share X      token share of videos, 0..1 (default 0.5)\n"
    "  --seed N             data and parameter seed (default 1)\n"
    "  --batch FILE         train on this batch (JSON/JSONL) every step instead\n"
    "  --steps N            steps (default 10)\n"
    "  --act-ckpt 0|1       activation checkpointing (default 1)\n"
    "  --lr X               AdamW learning rate (default 1e-3)\n"
    "  --max-degree D       planner's largest degree (default: all ranks)\n"
    "  --bags SPEC          KnapFormer bag layout (default: of the uniform layouts g{G}n{N/G},\n"
    "                       the one with the lowest predicted makespan on the first batch)\n"
    "  --save FILE          checkpoint after the last step (first policy's trainer)\n"
    "  --resume FILE        start from a checkpoint (every policy's trainer)\n"
    "  --threads N          threads per rank (default 1 when ranks > 1)\n"
    "  --plan-only          only plan (no training, no mpirun needed): predicted makespans on\n"
    "                       --cluster (default: the profile's cluster, else cpu:1)\n"
    "  --json               one JSON line per step (and a summary line)\n";

typedef struct {
    zg_planner pl;
    zg_trainer tr;
    int have_pl, have_tr;
    double *times;  // per step: measured makespan (or predicted with --plan-only)
    double *pred;
    double last_loss;
    int64_t n_ok;
} pol_run;

static int split_list(char *s, char **out, int max) {
    int n = 0;
    for (char *tok = strtok(s, ","); tok && n < max; tok = strtok(NULL, ",")) out[n++] = tok;
    return n;
}

// KnapFormer's layout: the uniform g{G}n{N/G} (G | N, G | heads) with the lowest predicted
// makespan on the first batch (ties: smaller G).
static zg_status pick_bags(const zg_plan_ctx *ctx, const zg_model *m, const zg_batch *fixed,
                           int use_fixed, int64_t tpr, double share, uint64_t seed, char *out,
                           zg_error *err) {
    int32_t N = ctx->cluster->world_size;
    zg_batch gen;
    zg_batch_init(&gen);
    const zg_batch *b = fixed;
    if (!use_fixed) {
        zg_status st = zg_train_synthetic_batch(m, N, tpr, share, seed, 0, &gen, err);
        if (st) return st;
        b = &gen;
    }
    double best = INFINITY;
    for (int32_t G = 1; G <= N; G++) {
        if (N % G || m->n_heads % G) continue;
        zg_plan_ctx c = *ctx;
        snprintf(c.opts.bags, sizeof c.opts.bags, "g%dn%d", G, N / G);
        zg_planner pl;
        zg_plan plan;
        zg_plan_init(&plan);
        if (!zg_planner_init(&pl, "knapformer", &c, NULL)) {
            if (!zg_planner_plan(&pl, b, &plan, NULL) && plan.makespan < best) {
                best = plan.makespan;
                snprintf(out, 128, "%s", c.opts.bags);
            }
            zg_planner_free(&pl);
        }
        zg_plan_free(&plan);
    }
    zg_batch_free(&gen);
    if (!out[0])
        return zg_error_set(err, ZG_ERR_INFEASIBLE,
                            "knapformer: no uniform bag layout plans the first batch on %d ranks; "
                            "give --bags",
                            N);
    return ZG_OK;
}

static int run_train(int argc, char **argv) {
    const char *model_name = "tiny", *cluster_name = NULL, *prof = NULL, *batch_file = NULL;
    const char *save = NULL, *resume = NULL, *pol_arg = "zellige", *bags = NULL;
    int64_t tpr = 512, seed = 1, steps = 10, ckpt = 1, maxd = 0, threads = 0;
    double share = 0.5, lr = 1e-3;
    int bad = 0, json = 0, plan_only = 0;
    zg_error err = {0};
    for (int i = 1; i < argc && !bad; i++) {
        if (cli_is_help(argv[i])) {
            fputs(usage_text, stdout);
            return 0;
        }
        if (cli_opt_str(argc, argv, &i, "--model", &model_name, &err, &bad) ||
            cli_opt_str(argc, argv, &i, "--policy", &pol_arg, &err, &bad) ||
            cli_opt_str(argc, argv, &i, "--cluster", &cluster_name, &err, &bad) ||
            cli_opt_str(argc, argv, &i, "--profile", &prof, &err, &bad) ||
            cli_opt_str(argc, argv, &i, "--batch", &batch_file, &err, &bad) ||
            cli_opt_str(argc, argv, &i, "--save", &save, &err, &bad) ||
            cli_opt_str(argc, argv, &i, "--resume", &resume, &err, &bad) ||
            cli_opt_str(argc, argv, &i, "--bags", &bags, &err, &bad))
            continue;
        if (cli_opt_int(argc, argv, &i, "--tokens-per-rank", &tpr, &err, &bad) ||
            cli_opt_int(argc, argv, &i, "--seed", &seed, &err, &bad) ||
            cli_opt_int(argc, argv, &i, "--steps", &steps, &err, &bad) ||
            cli_opt_int(argc, argv, &i, "--act-ckpt", &ckpt, &err, &bad) ||
            cli_opt_int(argc, argv, &i, "--max-degree", &maxd, &err, &bad) ||
            cli_opt_int(argc, argv, &i, "--threads", &threads, &err, &bad) ||
            cli_opt_num(argc, argv, &i, "--video-share", &share, &err, &bad) ||
            cli_opt_num(argc, argv, &i, "--lr", &lr, &err, &bad))
            continue;
        if (!strcmp(argv[i], "--json")) json = 1;
        else if (!strcmp(argv[i], "--plan-only")) plan_only = 1;
        else bad = 1, zg_error_set(&err, ZG_ERR_INVALID, "unknown option '%s' (see --help)", argv[i]);
    }
    if (!bad && (tpr < 1 || steps < 1 || steps > 10000000 || (ckpt != 0 && ckpt != 1) ||
                 maxd < 0 || threads < 0 || threads > 1024 || !(share >= 0 && share <= 1) ||
                 !(lr >= 0 && lr < 1e3)))
        bad = 1, zg_error_set(&err, ZG_ERR_INVALID,
                              "--tokens-per-rank and --steps must be >= 1, --act-ckpt 0 or 1, "
                              "--video-share in [0,1], --lr >= 0");
    char pol_buf[256], *pols[TRAIN_MAX_POL];
    snprintf(pol_buf, sizeof pol_buf, "%s", pol_arg);
    int n_pol = split_list(pol_buf, pols, TRAIN_MAX_POL);
    if (!bad && n_pol < 1) bad = 1, zg_error_set(&err, ZG_ERR_INVALID, "--policy is empty");
    if (bad) return cli_fail("train", &err);

    zg_comm comm;
    if (plan_only) {
        if (zg_comm_self_init(&comm, &err)) return cli_fail("train", &err);
    } else if (zg_comm_init_auto(&comm, NULL, NULL, &err)) {
        return cli_fail("train", &err);
    }
    zg_profile_set_threads((int32_t)threads, comm.size);
    int root = comm.rank == 0;
    char cname[64];
    snprintf(cname, sizeof cname, "cpu:%d", comm.size);
    zg_model m;
    zg_cluster cl;
    zg_pricer pr = {0};
    zg_batch fixed;
    zg_batch_init(&fixed);
    double overhead = 0;
    pol_run runs[TRAIN_MAX_POL];
    memset(runs, 0, sizeof runs);
    zg_status st = zg_model_load(model_name, &m, &err);
    if (!st && !cluster_name && plan_only && prof) {  // plan-only: the profile's cluster
        zg_cost_table pt;
        st = zg_cost_table_load(prof, &pt, &err);
        if (!st && pt.cluster[0]) snprintf(cname, sizeof cname, "%s", pt.cluster);
        if (!st) zg_cost_table_free(&pt);
    }
    if (!st) st = zg_cluster_load(cluster_name ? cluster_name : cname, &cl, &err);
    if (!st && !plan_only && cl.world_size != comm.size)
        st = zg_error_set(&err, ZG_ERR_INVALID,
                          "cluster %s has %d ranks but the run has %d (start with mpirun -np "
                          "%d, or --plan-only)",
                          cl.name, cl.world_size, comm.size, cl.world_size);
    if (!st && m.arch != ZG_ARCH_WAN)
        st = zg_error_set(&err, ZG_ERR_UNSUPPORTED,
                          "model '%s' has arch %s; the C DiT trains arch wan only", m.name,
                          zg_arch_name(m.arch));
    if (!st && prof) {
        zg_cost_table t;
        st = zg_cost_table_load(prof, &t, &err);
        if (!st) {
            overhead = t.overhead_s;
            if (strcmp(t.model, m.name))
                st = zg_error_set(&err, ZG_ERR_INVALID, "%s was measured for model '%s', not '%s'",
                                  prof, t.model, m.name);
            else st = zg_cost_table_init(&pr, &t, &m, &cl, &err);
            zg_cost_table_free(&t);
        }
    } else if (!st) {
        zg_cost_opts co;
        zg_cost_opts_default(&co);
        co.act_ckpt = (int32_t)ckpt;
        co.act_bytes = 4;
        co.shard_weights = 0;
        st = zg_cost_analytic_init(&pr, &m, &cl, &co, &err);
    }
    if (!st && batch_file) st = zg_batch_read_file(batch_file, &m, &fixed, &err);
    zg_plan_ctx ctx = {&m, &cl, &pr, NULL, {0}};
    zg_planner_opts_default(&ctx.opts);
    ctx.opts.max_degree = (int32_t)maxd;
    ctx.opts.seed = (uint64_t)seed;
    zg_train_opts to;
    zg_train_opts_default(&to);
    to.act_ckpt = (int32_t)ckpt;
    to.seed = (uint64_t)seed;
    to.adam.lr = (float)lr;
    char best_bags[128] = "";
    if (!st && bags) snprintf(best_bags, sizeof best_bags, "%s", bags);
    for (int p = 0; p < n_pol && !st && !bags; p++)
        if (!strcmp(pols[p], "knapformer")) st = pick_bags(&ctx, &m, &fixed, batch_file != NULL,
                                                             tpr, share, (uint64_t)seed, best_bags,
                                                             &err);
    for (int p = 0; p < n_pol && !st; p++) {
        pol_run *r = &runs[p];
        zg_plan_ctx pctx = ctx;
        if (!strcmp(pols[p], "knapformer")) snprintf(pctx.opts.bags, sizeof pctx.opts.bags, "%s", best_bags);
        r->times = zg_calloc((size_t)steps, sizeof *r->times, &err);
        r->pred = zg_calloc((size_t)steps, sizeof *r->pred, &err);
        if (!r->times || !r->pred) st = ZG_ERR_NOMEM;
        if (!st && !(st = zg_planner_init(&r->pl, pols[p], &pctx, &err))) r->have_pl = 1;
        if (!st && !plan_only && !(st = zg_trainer_init(&r->tr, &m, &comm, &to, &err)))
            r->have_tr = 1;
        if (!st && resume && r->have_tr) st = zg_trainer_load(&r->tr, resume, &err);
    }
    int64_t step0 = runs[0].have_tr ? runs[0].tr.step : 0;
    if (root && !json && !st)
        printf("train: model %s (%lld params), %d ranks (%s), cluster %s, prices %s, policy %s, "
               "%s, act-ckpt %lld, lr %g, from step %lld%s%s\n",
               m.name, (long long)zg_model_param_count(&m), plan_only ? cl.world_size : comm.size,
               plan_only ? "plan only" : zg_comm_backend_name(&comm), cl.name,
               prof ? prof : "analytic", pol_arg,
               batch_file ? batch_file : "synthetic batches", (long long)ckpt, lr,
               (long long)step0, best_bags[0] ? ", knapformer bags " : "", best_bags);
    zg_progress prog;
    zg_progress_init(&prog, "train", steps * n_pol);
    if (json || !root) prog.enabled = 0;
    for (int64_t s = 0; s < steps && !st; s++) {
        zg_batch gen, *b = &fixed;
        zg_batch_init(&gen);
        if (!batch_file) {
            st = zg_train_synthetic_batch(&m, cl.world_size, tpr, share, (uint64_t)seed,
                                          step0 + s, &gen, &err);
            b = &gen;
        }
        for (int p = 0; p < n_pol && !st; p++) {
            pol_run *r = &runs[p];
            zg_plan plan;
            zg_plan_init(&plan);
            zg_plan_stats ps;
            zg_train_stats ts;
            memset(&ts, 0, sizeof ts);
            st = zg_planner_plan(&r->pl, b, &plan, &err);
            if (!st) st = zg_plan_evaluate(&plan, NULL, NULL, &ps, &err);
            if (!st && !plan_only) st = zg_trainer_step(&r->tr, b, &plan, &ts, &err);
            if (!st) {
                r->pred[s] = plan.makespan + overhead;
                r->times[s] = plan_only ? r->pred[s] : ts.slowest_s;
                r->last_loss = ts.loss;
                r->n_ok++;
            }
            if (!st && root) {
                char mb[32];
                if (json)
                    printf("{\"step\":%lld,\"policy\":\"%s\",\"loss\":%.9g,\"step_s\":%.6f,"
                           "\"slowest_s\":%.6f,\"fastest_s\":%.6f,\"peak_bytes\":%lld,"
                           "\"predicted_s\":%.6f,\"n_split\":%lld,\"sequences\":%lld,"
                           "\"tokens\":%lld,\"plan_ms\":%.3f,\"plan_only\":%s}\n",
                           (long long)(step0 + s), plan.policy, ts.loss, ts.step_s, ts.slowest_s,
                           ts.fastest_s, (long long)ts.peak_bytes, r->pred[s],
                           (long long)ps.n_split, (long long)b->n,
                           (long long)zg_batch_total_tokens(b), plan.plan_time_ms,
                           plan_only ? "true" : "false");
                else if (plan_only)
                    printf("step %4lld %-10s predicted %9.2f ms  %3lld seqs %6lld tokens  %lld "
                           "split  balance %.3f\n",
                           (long long)(step0 + s), plan.policy, 1e3 * r->pred[s], (long long)b->n,
                           (long long)zg_batch_total_tokens(b), (long long)ps.n_split, ps.balance);
                else {
                    zg_progress_finish(&prog);  // keep log lines clean of the bar
                    printf("step %4lld %-10s loss %.6f  step %8.2f ms (slowest %8.2f, fastest "
                           "%8.2f)  peak %s | plan: predicted %8.2f ms, %lld split of %lld seqs\n",
                           (long long)(step0 + s), plan.policy, ts.loss, 1e3 * ts.step_s,
                           1e3 * ts.slowest_s, 1e3 * ts.fastest_s,
                           zg_fmt_bytes((double)ts.peak_bytes, mb, sizeof mb), 1e3 * r->pred[s],
                           (long long)ps.n_split, (long long)b->n);
                }
                fflush(stdout);
            }
            zg_plan_free(&plan);
            if (root && !json) zg_progress_update(&prog, s * n_pol + p + 1);
        }
        zg_batch_free(&gen);
    }
    if (root) zg_progress_finish(&prog);
    if (!st && save && runs[0].have_tr) st = zg_trainer_save(&runs[0].tr, save, &err);
    int code = 0;
    if (st) {
        code = root ? cli_fail("train", &err) : zg_status_exit_code(st);
    } else if (root) {
        // summary: median step time (first step excluded when there are more) per policy
        int64_t skip = steps > 2 ? 1 : 0;
        double base = 0;
        for (int p = 0; p < n_pol; p++) {
            double med = zg_profile_median(runs[p].times + skip, (int32_t)(steps - skip));
            double pmed = zg_profile_median(runs[p].pred + skip, (int32_t)(steps - skip));
            if (p == 0) base = med;
            if (json)
                printf("{\"summary\":true,\"policy\":\"%s\",\"steps\":%lld,\"median_step_s\":%.6f,"
                       "\"median_predicted_s\":%.6f,\"ratio_vs_first\":%.4f,\"final_loss\":%.9g,"
                       "\"plan_only\":%s}\n",
                       pols[p], (long long)steps, med, pmed, base > 0 ? med / base : 0,
                       runs[p].last_loss, plan_only ? "true" : "false");
            else
                printf("summary %-10s median %s %9.2f ms (predicted %9.2f ms)  %.3fx of %s%s\n",
                       pols[p], plan_only ? "predicted" : "step", 1e3 * med, 1e3 * pmed,
                       base > 0 ? med / base : 0, pols[0],
                       skip ? "  [first step excluded]" : "");
        }
    }
    for (int p = 0; p < n_pol; p++) {
        if (runs[p].have_pl) zg_planner_free(&runs[p].pl);
        if (runs[p].have_tr) zg_trainer_free(&runs[p].tr);
        free(runs[p].times), free(runs[p].pred);
    }
    zg_batch_free(&fixed);
    zg_pricer_free(&pr);
    zg_comm_free(&comm);
    return code;
}

ZG_CLI_COMMAND(train, "train", "distributed DiT training under mpirun with any planner",
               run_train)
