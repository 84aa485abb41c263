// cmd_plan.c — `zellige plan`: plans one batch with one policy under the analytic prices,
// prints a summary table, and writes the plan JSON (and optionally the problem export).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "plan/knapformer.h"
#include "plan/plan.h"
#include "planner/planner.h"
#include "zellige/zellige.h"

static const char *header =
    "usage: zellige plan --batch FILE [options]\n"
    "Plans one batch with one placement policy under the analytic cost model, prints a summary\n"
    "(makespan, balance, memory, splits, attention communication, plan time) and writes the\n"
    "plan JSON (docs/formats.md). Every option is checked, and the output paths too, before\n"
    "any work; nothing is written when planning fails.\n\n";

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

// 1 when name is a registered policy; else 0 and err names the option, the value and the list.
static int known_policy(const char *opt, const char *name, zg_error *err) {
    char list[256] = "";
    size_t n = 0;
    for (const zg_planner_vtable *const *vt = zg_planner_policies(); *vt; vt++) {
        if (!strcmp((*vt)->name, name)) return 1;
        int k = snprintf(list + n, sizeof list - n, "%s%s", n ? ", " : "", (*vt)->name);
        if (k > 0 && (size_t)k < sizeof list - n) n += (size_t)k;
    }
    zg_error_set(err, ZG_ERR_INVALID, "%s: '%s' is not a policy; give one of %s", opt, name,
                 list);
    return 0;
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
    const char *device_row = NULL;
    int64_t max_degree = 0, d_model = 0, world = 0, seed = 0;
    // INT64_MIN / 0: not given (outside each range, so the parser never stores them)
    int64_t anchor_nodes = INT64_MIN, lns_nodes = INT64_MIN, first_nodes = INT64_MIN,
            max_seqlen = 0;
    double eps = 1e-3, time_limit = 60, gamma = 1.0, anchor_cut = 0;
    int32_t quiet = 0, all_ranks = 0, exact_prices = 0, explain = 0;
    zg_error err;
    zg_error_clear(&err);
    const cli_opt opts[] = {
        CLI_OPT_BATCH(&batch_path, "batch .json or .jsonl trace (docs/formats.md; required)"),
        CLI_OPT_MODEL(&model_name, "model preset or JSON file (default wan2.1-1.3b)"),
        CLI_OPT_CLUSTER(&cluster_name,
                        "NxGPU, NODESxGPUSxGPU, preset or JSON file (default 8xA800;\n"
                        "with --world-size N and no --cluster: NxA800)"),
        CLI_STR_OPT("--device-row", "FILE", &device_row,
                    "measured device row of the cluster's device (zellige\n"
                    "profile-device) in place of the built-in efficiency row"),
        CLI_STR_OPT("--policy", "P", &policy,
                       "placement policy: zellige, joint, knapformer, usp, adaptive, dp,\n"
                       "static or megatron (default zellige)"),
        CLI_OUT_OPT("--json", "OUT", &json_out, "write the plan here (atomic)"),
        CLI_OUT_OPT("--export-problem", "F", &export_path,
                    "write every legal option of every sequence with its per-rank\n"
                    "time and memory, and the cap, for external solvers (atomic)"),
        CLI_CHOICE_OPT("--family", "F", &family, "node|aligned|sliding",
                       "rank sets of options: node, aligned or sliding (default node)"),
        CLI_INT_OPT("--max-degree", "N", &max_degree, 0, 65536,
                    "largest split degree (default 0: the world size)"),
        CLI_STR_OPT("--fallback", "P", &fallback,
                       "policy to use when --policy finds no plan (marked in the plan)"),
        CLI_NUM_OPT("--eps", "X", &eps, 0, 1, "zellige stage-1 slack, 0..1 (default 1e-3)"),
        CLI_NUM_OPT("--time-limit", "S", &time_limit, 1e-6, 1e9,
                    "seconds for the exact solver joint (default 60); joint spends\n"
                    "up to half of it on its relaxation lower bound and a\n"
                    "quarter on the pattern bound; problem setup and the\n"
                    "plan's decode come on top"),
        CLI_NUM_OPT("--anchor-cut", "S", &anchor_cut, 0, 1e9,
                    "zellige: whole price (s) above which a sequence is an anchor"),
        CLI_INT_OPT("--anchor-nodes", "N", &anchor_nodes, 1, INT64_MAX,
                    "zellige stage 1: node budget per exact-search phase\n"
                    "(default: 50000 up to 8 ranks, 10000/N above)"),
        CLI_INT_OPT("--lns-nodes", "N", &lns_nodes, 0, INT64_MAX,
                    "zellige stage 1 above 8 ranks: neighbourhood-search budget\n"
                    "(0 turns it off; default: min(2500, 80000/N), 8x that on\n"
                    "the first step of an anchor multiset, which one batch always\n"
                    "is). From 10000 on it also tries leftover layouts. Larger is\n"
                    "slower and better (docs/planner-zellige.md)"),
        CLI_STR_OPT("--first-nodes", "N|ordinary",
                    &first_opt,
                    "zellige stage 1 on the first step of an anchor multiset (one\n"
                    "batch always is): min-T search budget (>= 1; default: 200000\n"
                    "above 8 ranks, up to ~0.5 s); 'ordinary': the same budgets as\n"
                    "every other step. A run pays it once per multiset: later steps\n"
                    "replay the layout"),
        CLI_FLAG_OPT("--explain-tuning", &explain,
                     "print the Zellige solver's tuned constants (value, unit, where,\n"
                     "why) and exit"),
        CLI_CHOICE_OPT("--catalog", "C", &catalog_opt, "default|none",
                       "bucket catalog for the anchor cut: default or none (default: the\n"
                       "model's default catalog when every bucket of the batch is in it)"),
        CLI_OPT_SEED(&seed, "seed for randomised tie-breaks (default 0)"),
        CLI_FLAG_OPT("--exact-rank-prices", &exact_prices,
                     "price every rank set (default: blocks shifted by whole nodes\n"
                     "reuse one price)"),
        CLI_INT_OPT("--max-seqlen-per-rank", "N", &max_seqlen, 1, INT64_MAX,
                    "megatron: tokens of a sample one rank holds (default: the\n"
                    "largest value at which every sequence fits memory)"),
        CLI_STR_OPT("--bags", "SPEC", &bags,
                    "knapformer: bag layout, e.g. g1n2+g2n1+g4n1 (default: the best)"),
        CLI_NUM_OPT("--gamma", "X", &gamma, 0, 1e6,
                    "knapformer: attention weight (default 1.0)"),
        CLI_INT_OPT("--d-model", "D", &d_model, 1, 1048576,
                    "knapformer: model width (default the model's dim)"),
        CLI_INT_OPT("--world-size", "N", &world, 1, 65536,
                    "knapformer: world size (default the cluster's; without\n"
                    "--cluster it also sets the cluster, NxA800)"),
        CLI_FLAG_OPT("--ranks", &all_ranks, "print the per-rank table even for more than 32 ranks"),
        CLI_FLAG_OPT("--quiet", &quiet, "print nothing on success"),
        CLI_OPT_END,
    };
    const cli_spec spec = {"plan", header, opts, cli_cluster_footer()};
    cli_result pr = cli_parse(&spec, argc, argv, &err);
    if (pr != CLI_PARSED) return cli_parse_exit(&spec, pr, &err);
    if (explain) {
        zg_zellige_tuning_print(stdout);
        return 0;
    }
    if (!batch_path) {
        zg_error_set(&err, ZG_ERR_INVALID,
                     "--batch FILE is required; give FILE: a batch .json or .jsonl trace "
                     "(docs/formats.md)");
        return cli_fail("plan", &err);
    }
    if (first_opt && strcmp(first_opt, "ordinary") &&
        !cli_int_value("--first-nodes", "N|ordinary",
                       "a node budget >= 1, or 'ordinary' for the budgets of every other step",
                       first_opt, 1, INT64_MAX, &first_nodes, &err))
        return cli_fail("plan", &err);
    if (!known_policy("--policy", policy, &err) ||
        (fallback && !known_policy("--fallback", fallback, &err)))
        return cli_fail("plan", &err);
    if (cli_check_inputs(&(cli_inputs){.model = model_name, .cluster = cluster_name,
                                        .batch = batch_path},
                         &err))
        return cli_fail("plan", &err);
    if (bags) { // the spec's syntax now; whether it divides the world size, once it is known
        zg_knap_layout kl;
        zg_status st = zg_knap_layout_parse(bags, &kl, &err);
        zg_knap_layout_free(&kl);
        if (st) {
            zg_error_prefix(&err, "--bags: ");
            return cli_fail("plan", &err);
        }
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
    int have_catalog = 0, rc = 0;
    char *export_tmp = NULL;
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
    if (device_row && zg_cost_device_row_load(device_row, cluster.device, &copts.dev, &err)) {
        zg_error_prefix(&err, "--device-row: ");
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
    if (max_seqlen >= 1) ctx.opts.max_seqlen_per_rank = zg_opt_tokens_of(max_seqlen);
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
        char *text = problem_json ? cJSON_PrintUnformatted(problem_json) : NULL;
        size_t n = text ? strlen(text) : 0;
        char *buf = text ? malloc(n + 2) : NULL;
        if (buf) memcpy(buf, text, n), buf[n] = '\n';
        cJSON_free(text);
        if (!buf) {
            zg_error_set(&err, ZG_ERR_NOMEM, "out of memory exporting the problem");
            goto fail;
        }
        // staged: renamed into place only once the plan is written (all or nothing; an
        // existing file stays as it was when the plan cannot be written)
        zg_status st = zg_file_stage(export_path, buf, n + 1, &export_tmp, &err);
        free(buf);
        if (st) goto fail;
    }
    if (json_out && zg_plan_write_file(json_out, &plan, &err)) goto fail;
    if (export_tmp) {
        zg_status st = zg_file_commit(export_tmp, export_path, &err);
        export_tmp = NULL;
        if (st) goto fail;
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
    zg_file_discard(export_tmp);
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
