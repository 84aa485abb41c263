// cmd_plan.c — `zellige plan`: plans one batch with one policy under the analytic prices,
// prints a summary table, and writes the plan JSON (and optionally the problem export).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "plan/plan.h"
#include "planner/planner.h"
#include "zellige/zellige.h"

static const char *usage_text =
    "usage: zellige plan --batch FILE [options]\n"
    "Plans one batch with one placement policy under the analytic cost model, prints a summary\n"
    "(makespan, balance, memory, splits, attention communication, plan time) and writes the\n"
    "plan JSON (docs/formats.md). Nothing is written when planning fails.\n\n"
    "  --batch FILE          batch .json or .jsonl trace (docs/formats.md)   (required)\n"
    "  --model M             model preset or JSON file (default wan2.1-1.3b)\n"
    "  --cluster C           NxGPU, NODESxGPUSxGPU, preset or JSON file (default 8xA800;\n"
    "                        with --world-size N and no --cluster: NxA800)\n"
    "  --policy P            zellige | joint | knapformer | usp | adaptive | dp | static |\n"
    "                        megatron (default zellige)\n"
    "  --json OUT            write the plan here (atomic)\n"
    "  --export-problem F    write every legal option of every sequence with its per-rank\n"
    "                        time and memory, and the cap, for external solvers\n"
    "  --family F            rank sets of options: node | aligned | sliding (default node)\n"
    "  --max-degree N        largest split degree (default: the world size)\n"
    "  --fallback P          policy to use when P finds no plan (marked in the plan)\n"
    "  --eps X               zellige stage-1 slack (default 1e-3)\n"
    "  --time-limit S        seconds for exact solvers (joint; > 0, default 60). joint spends\n"
    "                        up to half of it on its relaxation lower bound and a\n"
    "                        quarter on the pattern bound; problem setup and the\n"
    "                        plan's decode come on top\n"
    "  --anchor-cut S        zellige: whole price (s) above which a sequence is an anchor\n"
    "  --anchor-nodes N      zellige stage 1: node budget (>= 1) per exact-search phase\n"
    "                        (default: 50000 up to 8 ranks, 10000/N above)\n"
    "  --lns-nodes N         zellige stage 1 above 8 ranks: neighbourhood-search budget\n"
    "                        (>= 0; 0 turns it off; default: min(2500, 80000/N), 8x that on\n"
    "                        the first step of an anchor multiset, which one batch always\n"
    "                        is). From 10000 on it also tries leftover layouts. Larger is\n"
    "                        slower and better (docs/planner-zellige.md)\n"
    "  --first-nodes N|ordinary\n"
    "                        zellige stage 1 on the first step of an anchor multiset (one\n"
    "                        batch always is): min-T search budget (>= 1; default: 200000\n"
    "                        above 8 ranks, up to ~0.5 s); 'ordinary': the same budgets as\n"
    "                        every other step. A run pays it once per multiset: later steps\n"
    "                        replay the layout\n"
    "  --explain-tuning      print the Zellige solver's tuned constants (value, unit, where,\n"
    "                        why) and exit\n"
    "  --catalog C           default | none: bucket catalog for the anchor cut (default: the\n"
    "                        model's default catalog when every bucket of the batch is in it)\n"
    "  --seed N              seed for randomised tie-breaks (default 0)\n"
    "  --exact-rank-prices   price every rank set (default: blocks shifted by whole nodes\n"
    "                        reuse one price)\n"
    "  --max-seqlen-per-rank N\n"
    "                        megatron: tokens of a sample one rank holds (>= 1; default: the\n"
    "                        largest value at which every sequence fits memory)\n"
    "  knapformer: --bags SPEC (e.g. g1n2+g2n1+g4n1), --gamma X (default 1.0),\n"
    "              --d-model D (default the model's dim), --world-size N (default the\n"
    "              cluster's; without --cluster it also sets the cluster, NxA800)\n"
    "  --ranks               print the per-rank table even for more than 32 ranks\n"
    "  --quiet               print nothing on success\n";

// Copies s into a fixed buffer, failing on overflow.
static int copy_opt(char *dst, size_t sz, const char *s, const char *key, zg_error *err) {
    if (strlen(s) >= sz) {
        zg_error_set(err, ZG_ERR_INVALID, "%s: '%s' is too long (max %zu chars)", key, s,
                     sz - 1);
        return 0;
    }
    snprintf(dst, sz, "%s", s);
    return 1;
}

static int batch_in_catalog(const zg_batch *b, const zg_catalog *c) {
    if (b->n == 0) return 0;
    for (int64_t i = 0; i < b->n; i++)
        if (!b->seqs[i].bucket[0] || !zg_catalog_find(c, b->seqs[i].bucket)) return 0;
    return 1;
}

static void print_summary(const zg_plan *p, const zg_plan_stats *st, const zg_cluster *c,
                          const zg_batch *b, int all_ranks) {
    char a[32], bb[32], cc[32], d[32];
    printf("zellige plan: policy %s on %s (%d ranks), %lld sequences, %lld tokens\n", p->policy,
           c->name, p->world_size, (long long)b->n, (long long)zg_batch_total_tokens(b));
    if (p->fallback_from[0]) printf("  fallback        %s found no plan\n", p->fallback_from);
    if (p->summary[0]) printf("  note            %s\n", p->summary);
    printf("  makespan        %.4f s (mean rank time %.4f s, balance max/mean %.4f)\n",
           st->makespan, st->mean_time, st->balance);
    if (p->lower_bound > 0)
        printf("  lower bound     %.4f s%s\n", p->lower_bound, p->optimal ? " (optimal)" : "");
    printf("  peak memory     %s of the %s cap per rank (base %s)%s\n",
           zg_fmt_bytes(st->peak_mem, a, sizeof a), zg_fmt_bytes(p->mem_cap, bb, sizeof bb),
           zg_fmt_bytes(p->mem_base, cc, sizeof cc), p->over_cap ? ", OVER THE CAP" : "");
    printf("  split sequences %lld of %lld\n", (long long)st->n_split, (long long)p->n);
    printf("  attention comm  all-to-all %s, ring %s, all-gather %s (bytes sent, all ranks)\n",
           zg_fmt_bytes(st->comm.alltoall, a, sizeof a), zg_fmt_bytes(st->comm.ring, bb, sizeof bb),
           zg_fmt_bytes(st->comm.allgather, d, sizeof d));
    printf("  plan time       %.3f ms\n", p->plan_time_ms);
    if (p->world_size > 32 && !all_ranks) {
        printf("  (per-rank table omitted for %d ranks; --ranks prints it)\n", p->world_size);
        return;
    }
    printf("  %5s %12s %12s %10s %6s\n", "rank", "time (s)", "memory", "tokens", "seqs");
    int64_t *cnt = calloc((size_t)p->world_size, sizeof *cnt);
    if (cnt)
        for (int64_t i = 0; i < p->n; i++)
            for (int32_t k = 0; k < p->p[i].n_ranks; k++) cnt[p->p[i].ranks[k]]++;
    for (int32_t r = 0; r < p->world_size; r++)
        printf("  %5d %12.4f %12s %10lld %6lld\n", r, p->ranks[r].time,
               zg_fmt_bytes(p->ranks[r].mem, a, sizeof a), (long long)p->ranks[r].tokens,
               cnt ? (long long)cnt[r] : -1LL);
    free(cnt);
}

static int run_plan(int argc, char **argv) {
    const char *model_name = "wan2.1-1.3b", *cluster_name = NULL, *batch_path = NULL;
    const char *policy = "zellige", *json_out = NULL, *export_path = NULL, *family = "node";
    const char *fallback = NULL, *bags = NULL, *catalog_opt = NULL, *first_opt = NULL;
    int64_t max_degree = 0, d_model = 0, world = 0, seed = 0, anchor_nodes = INT64_MIN,
            lns_nodes = INT64_MIN, first_nodes = INT64_MIN;  // INT64_MIN: not given
    int64_t max_seqlen = 0;  // read when max_seqlen_given
    double eps = 1e-3, time_limit = 60, gamma = 1.0, anchor_cut = 0;
    int bad = 0, quiet = 0, all_ranks = 0, exact_prices = 0, max_seqlen_given = 0;
    zg_error err;
    zg_error_clear(&err);
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            fputs(usage_text, stdout);
            fputs(cli_cluster_footer(), stdout);
            return 0;
        } else if (!strcmp(argv[i], "--explain-tuning")) {
            zg_zellige_tuning_print(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--quiet")) quiet = 1;
        else if (!strcmp(argv[i], "--ranks")) all_ranks = 1;
        else if (!strcmp(argv[i], "--exact-rank-prices")) exact_prices = 1;
        else if (cli_opt_str(argc, argv, &i, "--model", &model_name, &err, &bad) ||
                 cli_opt_str(argc, argv, &i, "--cluster", &cluster_name, &err, &bad) ||
                 cli_opt_str(argc, argv, &i, "--batch", &batch_path, &err, &bad) ||
                 cli_opt_str(argc, argv, &i, "--policy", &policy, &err, &bad) ||
                 cli_opt_str(argc, argv, &i, "--json", &json_out, &err, &bad) ||
                 cli_opt_str(argc, argv, &i, "--export-problem", &export_path, &err, &bad) ||
                 cli_opt_str(argc, argv, &i, "--family", &family, &err, &bad) ||
                 cli_opt_str(argc, argv, &i, "--fallback", &fallback, &err, &bad) ||
                 cli_opt_str(argc, argv, &i, "--bags", &bags, &err, &bad) ||
                 cli_opt_str(argc, argv, &i, "--catalog", &catalog_opt, &err, &bad) ||
                 cli_opt_str(argc, argv, &i, "--first-nodes", &first_opt, &err, &bad)) {
        } else if (cli_opt_int(argc, argv, &i, "--max-degree", &max_degree, &err, &bad) ||
                   cli_opt_int(argc, argv, &i, "--d-model", &d_model, &err, &bad) ||
                   cli_opt_int(argc, argv, &i, "--world-size", &world, &err, &bad) ||
                   cli_opt_int(argc, argv, &i, "--seed", &seed, &err, &bad) ||
                   cli_opt_int(argc, argv, &i, "--anchor-nodes", &anchor_nodes, &err, &bad) ||
                   cli_opt_int(argc, argv, &i, "--lns-nodes", &lns_nodes, &err, &bad) ||
                   cli_opt_num(argc, argv, &i, "--eps", &eps, &err, &bad) ||
                   cli_opt_num(argc, argv, &i, "--time-limit", &time_limit, &err, &bad) ||
                   cli_opt_num(argc, argv, &i, "--gamma", &gamma, &err, &bad) ||
                   cli_opt_num(argc, argv, &i, "--anchor-cut", &anchor_cut, &err, &bad)) {
        } else if (cli_opt_int(argc, argv, &i, "--max-seqlen-per-rank", &max_seqlen, &err,
                               &bad)) {
            max_seqlen_given = 1;
        } else {
            zg_error_set(&err, ZG_ERR_INVALID, "unknown option '%s' (see --help)", argv[i]);
            bad = 1;
        }
        if (bad) break;
    }
    if (!bad && !batch_path) {
        zg_error_set(&err, ZG_ERR_INVALID, "--batch FILE is required (see --help)");
        bad = 1;
    }
    if (!bad && (max_degree < 0 || max_degree > INT32_MAX || d_model < 0 || d_model > INT32_MAX ||
                 world < 0 || world > INT32_MAX || seed < 0 || !(eps >= 0) ||
                 !(gamma >= 0) || !(anchor_cut >= 0))) {
        zg_error_set(&err, ZG_ERR_INVALID,
                     "--max-degree, --d-model, --world-size, --seed, --eps, --gamma and "
                     "--anchor-cut must be non-negative");
        bad = 1;
    }
    if (!bad && !(time_limit > 0 && time_limit < 1e9)) {
        zg_error_set(&err, ZG_ERR_INVALID,
                     "--time-limit %g: give a positive number of seconds (default 60)", time_limit);
        bad = 1;
    }
    if (!bad && first_opt && strcmp(first_opt, "ordinary")) {
        char *end = NULL;
        long long v = strtoll(first_opt, &end, 10);
        if (!*first_opt || *end || v < 1) {
            zg_error_set(&err, ZG_ERR_INVALID,
                         "--first-nodes '%s': give a node budget >= 1, or 'ordinary' for the "
                         "budgets of every other step", first_opt);
            bad = 1;
        }
        first_nodes = v;
    }
    if (!bad && anchor_nodes != INT64_MIN && anchor_nodes < 1) {
        zg_error_set(&err, ZG_ERR_INVALID,
                     "--anchor-nodes %lld: a node budget is >= 1 (leave it out for the built-in "
                     "rule)", (long long)anchor_nodes);
        bad = 1;
    }
    if (!bad && lns_nodes != INT64_MIN && lns_nodes < 0) {
        zg_error_set(&err, ZG_ERR_INVALID,
                     "--lns-nodes %lld: a node budget is >= 0 (0 turns the neighbourhood search "
                     "off; leave it out for the built-in rule)", (long long)lns_nodes);
        bad = 1;
    }
    if (!bad && max_seqlen_given && max_seqlen < 1) {
        zg_error_set(&err, ZG_ERR_INVALID,
                     "--max-seqlen-per-rank: '%lld' is out of range (>= 1); give N: tokens of a "
                     "sample one rank holds (leave it out for the largest that fits memory)",
                     (long long)max_seqlen);
        bad = 1;
    }
    if (!bad && catalog_opt && strcmp(catalog_opt, "default") && strcmp(catalog_opt, "none")) {
        zg_error_set(&err, ZG_ERR_INVALID, "--catalog: '%s' is not default or none",
                     catalog_opt);
        bad = 1;
    }
    if (bad) {
        if (!err.msg[0]) zg_error_set(&err, ZG_ERR_INVALID, "an option is missing its value");
        return cli_fail("plan", &err);
    }
    // --world-size N without --cluster: N GPUs of the default cluster's kind (docs/cli.md).
    char world_cluster[64];
    if (!cluster_name && world > 0) {
        snprintf(world_cluster, sizeof world_cluster, "%lldxA800", (long long)world);
        cluster_name = world_cluster;
    }
    if (!cluster_name) cluster_name = "8xA800";

    zg_model model;
    zg_cluster cluster;
    zg_catalog catalog = {0};
    zg_pricer pricer;
    memset(&pricer, 0, sizeof pricer);
    zg_batch batch;
    zg_batch_init(&batch);
    zg_plan plan;
    zg_plan_init(&plan);
    zg_planner planner;
    memset(&planner, 0, sizeof planner);
    zg_problem problem;
    memset(&problem, 0, sizeof problem);
    cJSON *problem_json = NULL;
    int have_catalog = 0, wrote_export = 0, rc = 0;
    zg_cost_opts copts;
    zg_cost_opts_default(&copts);
    zg_plan_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    zg_planner_opts_default(&ctx.opts);
    zg_plan_stats stats;

    if (zg_model_load(model_name, &model, &err)) goto fail;
    if (zg_cluster_load(cluster_name, &cluster, &err)) {
        if (cluster_name == world_cluster)
            zg_error_prefix(&err, "--world-size %lld: ", (long long)world);
        goto fail;
    }
    if (zg_batch_read_file(batch_path, &model, &batch, &err)) goto fail;
    if (zg_batch_validate(&batch, world > 0 ? (int32_t)world : cluster.world_size, &err)) {
        zg_error_prefix(&err, "%s: ", batch_path);
        goto fail;
    }
    if (zg_cost_analytic_init(&pricer, &model, &cluster, &copts, &err)) goto fail;
    if (!catalog_opt || !strcmp(catalog_opt, "default")) {
        if (zg_catalog_default(&model, &catalog, &err)) goto fail;
        have_catalog = catalog_opt ? 1 : batch_in_catalog(&batch, &catalog);
    }
    ctx.model = &model;
    ctx.cluster = &cluster;
    ctx.pricer = &pricer;
    ctx.catalog = have_catalog ? &catalog : NULL;
    if (zg_rankset_family_parse(family, &ctx.opts.family, &err)) goto fail;
    ctx.opts.max_degree = (int32_t)max_degree;
    ctx.opts.eps = eps;
    ctx.opts.time_limit_s = time_limit;
    ctx.opts.anchor_cut_s = anchor_cut;
    ctx.opts.gamma = gamma;
    ctx.opts.d_model = (int32_t)d_model;
    ctx.opts.world_size = (int32_t)world;
    ctx.opts.seed = (uint64_t)seed;
    ctx.opts.exact_rank_prices = exact_prices;
    if (anchor_nodes >= 1) ctx.opts.anchor_nodes = zg_budget_nodes(anchor_nodes);
    if (lns_nodes >= 0) ctx.opts.anchor_lns_nodes = zg_budget_nodes(lns_nodes);
    if (first_nodes >= 1) ctx.opts.anchor_first_nodes = zg_budget_nodes(first_nodes);
    if (first_opt && !strcmp(first_opt, "ordinary")) ctx.opts.deeper_first_visit = 0;
    if (max_seqlen_given) ctx.opts.max_seqlen_per_rank = zg_opt_tokens_of(max_seqlen);
    if ((fallback && !copy_opt(ctx.opts.fallback, sizeof ctx.opts.fallback, fallback,
                               "--fallback", &err)) ||
        (bags && !copy_opt(ctx.opts.bags, sizeof ctx.opts.bags, bags, "--bags", &err)))
        goto fail;

    if (zg_planner_init(&planner, policy, &ctx, &err) ||
        zg_planner_plan(&planner, &batch, &plan, &err) ||
        zg_plan_evaluate(&plan, &batch, &pricer, &stats, &err))
        goto fail;
    if (export_path) {
        if (zg_problem_build(&ctx, &batch, &problem, &err)) {
            zg_error_prefix(&err, "--export-problem: ");
            goto fail;
        }
        problem_json = zg_problem_to_json(&problem);
        if (!problem_json) {
            zg_error_set(&err, ZG_ERR_NOMEM, "out of memory exporting the problem");
            goto fail;
        }
        if (zg_json_write_file(export_path, problem_json, 0, &err)) goto fail;
        wrote_export = 1;
    }
    if (json_out && zg_plan_write_file(json_out, &plan, &err)) {
        if (wrote_export) unlink(export_path);  // all or nothing
        goto fail;
    }
    if (!quiet && cluster_name == world_cluster)
        printf("zellige plan: --world-size %lld and no --cluster: planned on %s\n",
               (long long)world, cluster_name);
    if (!quiet) print_summary(&plan, &stats, &cluster, &batch, all_ranks);
    if (plan.over_cap) {  // a baseline that ignores memory, placed as its real counterpart would
        char why[256];
        zg_plan_over_cap_describe(&plan, why, sizeof why);
        fprintf(stderr,
                "zellige plan: warning: %s ignores memory and its plan is over the cap (its real "
                "run would run out of memory; plan kept, exit status %d): %s\n",
                plan.policy, ZG_EXIT_OVER_CAP, why);
        rc = ZG_EXIT_OVER_CAP;
    }
    goto done;
fail:
    rc = cli_fail("plan", &err);
done:
    cJSON_Delete(problem_json);
    zg_problem_free(&problem);
    zg_planner_free(&planner);
    zg_plan_free(&plan);
    zg_batch_free(&batch);
    if (pricer.free_impl) zg_pricer_free(&pricer);
    zg_catalog_free(&catalog);
    return rc;
}

ZG_CLI_COMMAND(plan, "plan", "plan one batch with one policy; write the plan JSON", run_plan)
