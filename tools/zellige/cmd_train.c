// cmd_train.c — `zellige train`: distributed DiT training under mpirun with any planner. The run
// is zg_train_run (src/train/run.c); this file parses options, prints each step and the summary.
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "profile/profile.h"

static const char *header =
    "usage: mpirun -np N zellige train [options]\n"
    "Trains the C DiT (arch wan) on N ranks; every step's placement comes from --policy.\n\n";

typedef struct print_ctx {
    const zg_train_run_opts *o;
    const zg_comm *comm;
    int root, json;
    zg_progress prog;
} print_ctx;

static void on_start(void *ctx, const zg_train_run_result *r) {
    print_ctx *c = ctx;
    const zg_train_run_opts *o = c->o;
    c->prog.total = o->steps * r->n_pol;
    if (!c->root || c->json) return;
    char batch_desc[160];
    if (o->batch)
        snprintf(batch_desc, sizeof batch_desc, "batch %s", o->batch);
    else if (o->mix)
        snprintf(batch_desc, sizeof batch_desc,
                 "mix %s (%lld tokens/rank, %d s videos) with tokens / %d", o->mix,
                 (long long)o->mix_load, o->video_seconds, o->mix_divisor);
    else
        snprintf(batch_desc, sizeof batch_desc, "synthetic batches");
    printf("train: model %s (%lld params), %d ranks (%s), cluster %s, prices %s, policy %s, "
           "%s, act-ckpt %lld, lr %g, from step %lld%s%s\n",
           r->model.name, (long long)r->n_params, r->ranks,
           o->plan_only ? "plan only" : zg_comm_backend_name(c->comm), r->cluster.name,
           o->profile ? o->profile : "analytic", o->policies,
           batch_desc, (long long)o->act_ckpt, o->lr,
           (long long)r->step0, r->bags[0] ? ", knapformer bags " : "", r->bags);
}

static void on_step(void *ctx, const zg_train_run_result *r, const zg_train_step_info *s) {
    print_ctx *c = ctx;
    if (!c->root) return;
    const zg_train_stats *ts = s->train;
    const zg_plan_stats *ps = s->plan_stats;
    const char *pol = s->plan->policy;
    long long step = (long long)s->step, n = (long long)s->batch->n;
    long long tokens = (long long)zg_batch_total_tokens(s->batch);
    char mb[32];
    if (c->json)
        printf("{\"step\":%lld,\"policy\":\"%s\",\"loss\":%.9g,\"step_s\":%.6f,"
               "\"slowest_s\":%.6f,\"fastest_s\":%.6f,\"peak_bytes\":%lld,"
               "\"predicted_s\":%.6f,\"n_split\":%lld,\"sequences\":%lld,"
               "\"tokens\":%lld,\"plan_ms\":%.3f,\"plan_only\":%s}\n",
               step, pol, ts->loss, ts->step_s, ts->slowest_s, ts->fastest_s,
               (long long)ts->peak_bytes, s->predicted_s, (long long)ps->n_split, n, tokens,
               s->plan->plan_time_ms, c->o->plan_only ? "true" : "false");
    else if (c->o->plan_only)
        printf("step %4lld %-10s predicted %9.2f ms  %3lld seqs %6lld tokens  %lld "
               "split  balance %.3f\n",
               step, pol, 1e3 * s->predicted_s, n, tokens, (long long)ps->n_split, ps->balance);
    else {
        zg_progress_finish(&c->prog); // keep log lines clean of the bar
        printf("step %4lld %-10s loss %.6f  step %8.2f ms (slowest %8.2f, fastest "
               "%8.2f)  peak %s | plan: predicted %8.2f ms, %lld split of %lld seqs\n",
               step, pol, ts->loss, 1e3 * ts->step_s, 1e3 * ts->slowest_s, 1e3 * ts->fastest_s,
               zg_fmt_bytes((double)ts->peak_bytes, mb, sizeof mb), 1e3 * s->predicted_s,
               (long long)ps->n_split, n);
    }
    fflush(stdout);
    if (!c->json) zg_progress_update(&c->prog, (s->step - r->step0) * r->n_pol + s->policy + 1);
}

// Median step time per policy (the first step excluded when there are more than two).
static void print_summary(const zg_train_run_result *r, int json, int plan_only) {
    int64_t skip = r->steps > 2 ? 1 : 0;
    double base = 0;
    for (int32_t p = 0; p < r->n_pol; p++) {
        const zg_train_run_policy *rp = &r->pol[p];
        double med = zg_profile_median(rp->times + skip, (int32_t)(r->steps - skip));
        double pmed = zg_profile_median(rp->pred + skip, (int32_t)(r->steps - skip));
        if (p == 0) base = med;
        if (json)
            printf("{\"summary\":true,\"policy\":\"%s\",\"steps\":%lld,\"median_step_s\":%.6f,"
                   "\"median_predicted_s\":%.6f,\"ratio_vs_first\":%.4f,\"final_loss\":%.9g,"
                   "\"plan_only\":%s}\n",
                   rp->name, (long long)r->steps, med, pmed, base > 0 ? med / base : 0,
                   rp->last_loss, plan_only ? "true" : "false");
        else
            printf("summary %-10s median %s %9.2f ms (predicted %9.2f ms)  %.3fx of %s%s\n",
                   rp->name, plan_only ? "predicted" : "step", 1e3 * med, 1e3 * pmed,
                   base > 0 ? med / base : 0, r->pol[0].name,
                   skip ? "  [first step excluded]" : "");
    }
}

static int run_train(int argc, char **argv) {
    zg_train_run_opts o;
    zg_train_run_opts_default(&o);
    int64_t threads = 0;
    print_ctx pc = {&o, NULL, 0, 0, {0}};
    zg_error err = {0};
    const cli_opt opts[] = {
        CLI_OPT_MODEL(&o.model, "preset or JSON (default tiny; configs/cpu-small.json is larger)"),
        CLI_OPT_POLICY("--policy", &o.policies,
                       "planner(s): zellige, joint, knapformer, usp, adaptive, dp, static;\n"
                       "a comma list runs each step's batch under every policy in turn\n"
                       "(separate trainers, same seed) and prints a comparison"),
        CLI_OPT_CLUSTER(&o.cluster, "cluster for the planner (default cpu:<ranks>)"),
        CLI_OPT_PROFILE(&o.profile,
                        "price with the measured table (zellige profile) instead of the\n"
                        "analytic model; predicted step = makespan + its host overhead"),
        CLI_STR_OPT("--device-row", "FILE", &o.device_row,
                    "analytic prices with this measured device row of the cluster's\n"
                    "device (zellige profile-device) instead of the built-in row"),
        CLI_INT_OPT("--tokens-per-rank", "N", &o.tokens_per_rank, 1, INT64_MAX,
                    "synthetic batch load (default 512)"),
        CLI_NUM_OPT("--video-share", "X", &o.video_share, 0, 1,
                    "token share of videos, 0..1 (default 0.5)"),
        CLI_OPT_SEED(&o.seed, "data and parameter seed (default 1)"),
        CLI_OPT_BATCH(&o.batch, "train on this batch (JSON/JSONL) every step instead"),
        CLI_STR_OPT("--mix", "V", &o.mix,
                    "draw every step's batch from the paper's mix V35, V40, V45, V50,\n"
                    "V55 or V60 (docs/workloads.md §3) instead of the synthetic one,\n"
                    "shrunk by --mix-divisor; --tokens-per-rank/--video-share unused"),
        CLI_INT_OPT("--mix-load", "N", &o.mix_load, 1, 4000000000LL,
                    "the mix's load at the paper's scale, tokens per rank (default 350K)"),
        CLI_INT_OPT("--mix-divisor", "K", &o.mix_divisor, 1, ZG_MIX_DIVISOR_MAX,
                    "divide every mix sequence's tokens by K (default 1: the paper's\n"
                    "sizes); profile with --catalog mix:SECONDS:K for exact prices"),
        CLI_INT_CHOICE_OPT("--video-seconds", "S", &o.video_seconds, "5|10|15",
                           "the mix's video length, 5, 10 or 15 (default 15)"),
        CLI_INT_OPT("--steps", "N", &o.steps, 1, 10000000, "steps (default 10)"),
        CLI_INT_OPT("--act-ckpt", "0|1", &o.act_ckpt, 0, 1, "activation checkpointing (default 1)"),
        CLI_NUM_OPT("--lr", "X", &o.lr, 0, 1e3, "AdamW learning rate (default 1e-3)"),
        CLI_INT_OPT("--max-degree", "D", &o.max_degree, 0, INT32_MAX,
                    "planner's largest degree (default: all ranks)"),
        CLI_STR_OPT("--bags", "SPEC", &o.bags,
                    "KnapFormer bag layout (default: of the uniform layouts g{G}n{N/G},\n"
                    "the one with the lowest predicted makespan on the first batch)"),
        CLI_OUT_OPT("--save", "FILE", &o.save,
                    "checkpoint after the last step (first policy's trainer)"),
        CLI_STR_OPT("--resume", "FILE", &o.resume,
                    "start from a checkpoint (every policy's trainer)"),
        CLI_OPT_THREADS(&threads, "threads per rank (default 1 when ranks > 1)"),
        CLI_FLAG_OPT("--plan-only", &o.plan_only,
                     "only plan (no training, no mpirun needed): predicted makespans on\n"
                     "--cluster (default: the profile's cluster, else cpu:1)"),
        CLI_OPT_JSON(&pc.json, "one JSON line per step (and a summary line)"),
        CLI_OPT_END,
    };
    const cli_spec spec = {"train", header, opts, cli_cluster_footer()};
    cli_result pr = cli_parse(&spec, argc, argv, &err);
    if (pr != CLI_PARSED) return cli_parse_exit(&spec, pr, &err);
    if (cli_check_inputs(&(cli_inputs){.model = o.model, .cluster = o.cluster,
                                        .profile = o.profile, .batch = o.batch},
                         &err))
        return cli_fail("train", &err);

    zg_comm comm;
    if (o.plan_only ? zg_comm_self_init(&comm, &err) : zg_comm_init_auto(&comm, NULL, NULL, &err))
        return cli_fail("train", &err);
    zg_profile_set_threads((int32_t)threads, comm.size);
    pc.comm = &comm, pc.root = comm.rank == 0;
    if (pc.root && o.profile) cli_warn_profile("train", o.profile);
    o.on_start = on_start, o.on_step = on_step, o.ctx = &pc;
    zg_progress_init(&pc.prog, "train", o.steps);
    if (pc.json || !pc.root) pc.prog.enabled = 0;
    zg_train_run_result r;
    zg_status st = zg_train_run(&o, &comm, &r, &err);
    if (pc.root) zg_progress_finish(&pc.prog);
    int code = 0;
    if (st)
        code = pc.root ? cli_fail("train", &err) : zg_status_exit_code(st);
    else if (pc.root)
        print_summary(&r, pc.json, o.plan_only);
    zg_train_run_result_free(&r);
    zg_comm_free(&comm);
    return code;
}

ZG_CLI_COMMAND(train, "train", "distributed DiT training under mpirun with any planner", run_train)
