// cmd_simulate.c — `zellige simulate`: plan many seeded batches of the paper's mixes under
// several policies with the same prices, and compare (table, JSON line, HTML report). The work
// is zg_sim_run (src/sim); this file parses options and prints.
#include <stdlib.h>

#include "cli.h"
#include "sim/sim.h"

static const char *header =
    "usage: zellige simulate [options]\n"
    "Plans seeded batches of the paper's image+video mixes under several policies with the\n"
    "same prices (the analytic cost model) and compares them. All numbers are modelled.\n\n";

static int run_simulate(int argc, char **argv) {
    zg_sim_opts o;
    zg_sim_opts_default(&o);
    const char *report = NULL;
    int32_t json = 0;
    int64_t max_seqlen = 0;  // 0: not given
    zg_error err = {0};
    const cli_opt opts[] = {
        CLI_OPT_MODEL(&o.model, "model preset or JSON file (default wan2.1-1.3b)"),
        CLI_OPT_CLUSTER(&o.cluster, "NxGPU, NODESxGPUSxGPU, preset or JSON file (default 16xA800)"),
        CLI_STR_OPT("--device-row", "FILE", &o.device_row,
                    "measured device row of the cluster's device (zellige\n"
                    "profile-device) in place of the built-in efficiency row"),
        CLI_STR_OPT("--mix", "LIST", &o.mixes,
                    "comma list of V35, V40, V45, V50, V55, V60, or 'all' (default all)"),
        CLI_INT_OPT("--load", "N", &o.tokens_per_rank, 1, 100000000,
                    "tokens per rank per step, e.g. 350K (default 350K)"),
        CLI_INT_CHOICE_OPT("--video-seconds", "S", &o.video_seconds, "10|15",
                           "video length in seconds, 10 or 15 (default 15)"),
        CLI_INT_OPT("--steps", "N", &o.steps, 1, 100000, "batches per mix (default 3)"),
        CLI_OPT_POLICY("--policies", &o.policies,
                       "comma list of zellige, joint, knapformer, megatron, usp, adaptive,\n"
                       "dp, static (default zellige,knapformer,megatron,usp,adaptive,dp,\n"
                       "static; 'joint' adds the exact reference, with --time-limit)"),
        CLI_STR_OPT("--bags", "SPEC", &o.bags,
                    "KnapFormer bag layout (default: the best of every layout with at\n"
                    "most 3 distinct bag sizes, up to 256, chosen per mix:\n"
                    "fewest plans over the memory cap, then lowest makespan)"),
        CLI_FLAG_OPT("--knap-ignore-memory", &o.knap_ignore_memory,
                     "choose KnapFormer's layout by makespan alone (its plans may then\n"
                     "exceed the memory cap; the 'over cap' column counts them)"),
        CLI_NUM_OPT("--gamma", "X", &o.gamma, 0, 1e6,
                    "KnapFormer attention weight (default 1.0)"),
        CLI_INT_OPT("--max-seqlen-per-rank", "N", &max_seqlen, 1, INT64_MAX,
                    "megatron: tokens of a sample one rank holds (default: per batch\n"
                    "the largest at which every sequence fits memory)"),
        CLI_CHOICE_OPT("--family", "F", &o.family, "node|aligned|sliding",
                    "rank sets: node | aligned | sliding (default node)"),
        CLI_NUM_OPT("--time-limit", "S", &o.time_limit_s, 1e-6, 1e9,
                    "seconds per joint solve (default 10; up to half of it on\n"
                    "joint's relaxation lower bound, a quarter on its pattern bound)"),
        CLI_OPT_SEED(&o.seed, "workload seed (default 1)"),
        CLI_OUT_OPT("--report", "FILE", &report,
                    "write a self-contained HTML report (Gantt per policy, bars)"),
        CLI_OPT_JSON(&json, "print one JSON line with the results"),
        CLI_OPT_END,
    };
    const cli_spec spec = {"simulate", header, opts, cli_cluster_footer()};
    cli_result pr = cli_parse(&spec, argc, argv, &err);
    if (pr != CLI_PARSED) return cli_parse_exit(&spec, pr, &err);
    if (cli_check_inputs(&(cli_inputs){.model = o.model, .cluster = o.cluster}, &err))
        return cli_fail("simulate", &err);
    if (max_seqlen >= 1) o.max_seqlen_per_rank = zg_opt_tokens_of(max_seqlen);

    zg_progress prog;
    zg_progress_init(&prog, "simulate", 1);
    o.progress = cli_progress, o.progress_ctx = &prog;
    zg_sim_result r;
    zg_status st = zg_sim_run(&o, &r, &err);
    zg_progress_finish(&prog);
    if (st) return cli_fail("simulate", &err);
    int rc = zg_sim_print(&r, stdout, &err) ? cli_fail("simulate", &err) : 0;
    if (!rc && report) {
        if (zg_sim_write_report(&r, report, &err))
            rc = cli_fail("simulate", &err);
        else
            printf("\nwrote %s\n", report);
    }
    cJSON *j = !rc && json ? zg_sim_to_json(&r) : NULL;
    char *s = j ? cJSON_PrintUnformatted(j) : NULL;
    if (s) printf("%s\n", s);
    if (!rc && json && !s) rc = cli_fail("simulate", &(zg_error){ZG_ERR_NOMEM, "out of memory"});
    cJSON_free(s);
    cJSON_Delete(j);
    zg_sim_result_free(&r);
    return rc;
}

ZG_CLI_COMMAND(simulate, "simulate", "compare placement policies on seeded paper mixes (modelled)",
               run_simulate)
