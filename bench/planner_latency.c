// planner_latency.c — Zellige planner latency per batch (p50/p99) on the paper's V35..V60
// mixes at high and low load, per cluster size, with the anchor stage's share.
//
//   build/bin/bench_planner_latency [--clusters 8xA800,16xA800,32xA6000,64xH100,256xH100,1024xH100]
//       [--mixes V35,V40,V45,V50,V55,V60] [--loads high,low] [--steps N] [--steps-large N]
//       [--family node|aligned|sliding] [--path auto|exact] [--compare] [--no-cache]
//       [--anchor-nodes N] [--lns-nodes N] [--first-nodes N] [--no-memory]
// Loads: high, low (tokens per rank from zel_bench.h) and s4096: the tokens per rank scaled
// from high load so that the step-0 batch has about 4096 sequences (the 1024-rank
// target: tpr = high * 4096 / n(high batch), then the batch is drawn at that tpr).
// Path: auto = the fast path (fast/fast.c: compact options, greedy + local search) at world
// sizes >= ZEL_FAST_MIN_RANKS, the exact stage 1 below; exact = always the exact stage 1.
// The JSON line also gives anchor_nodes_mean: the anchor search's mean node count per batch
// (deterministic, unlike the times; exact path only).
// --compare (fast-path rows): also plans every batch with the exact stage 1 and prints the
// fast/exact makespan ratio (slow at 1024 ranks).
// Cache: like `--policy zellige`, the fast path keeps one template cache (fast/cache.c) and the
// exact path one option cache (plan/option_cache.c) per (cluster, mix, load) across its steps, so
// step 0 is cold (every shape priced) and later steps reuse the priced shapes; `cold_ms` in the
// JSON is step 0's total. --no-cache plans every step cold.
// --anchor-nodes N: the exact stage 1's node budget per search phase (0 = the default rule).
// --lns-nodes N: its neighbourhood-search budget (search/lns.c; 0 = the default rule, -1 = off).
// --first-nodes N: the min-T search's budget on an anchor multiset's first step (0 = the default
// rule, -1 = the ordinary budget; anchor_first_nodes).
// --no-memory: no stage-1 layouts remembered across steps (search/library.c; anchor_memory = -1).
// The planner state (warm start, layouts, caches) lives per (cluster, mix, load) across its
// steps, as in a training run; `replayed` in the JSON is the share of steps whose stage 1
// replayed a remembered layout instead of searching (it grows with --steps: the anchor
// multisets recur).
// makespan_mean in the JSON: the mean plan makespan (s), deterministic like anchor_nodes_mean
// (a fingerprint of the plans when a change should keep them). total_mean_ms: the mean total
// per step (the series' planning time / steps: what a run pays on average, first steps included).
// Times: build = zg_problem_build (enumerating and pricing options), solve = cut + anchor
// stage + filler stage, decode = plan construction; total = all three, which is what
// `--policy zellige` costs per step. --steps batches per (mix, load) up to 64 ranks,
// --steps-large beyond. Prints a table and one JSON line per setting.
#include "zel_bench.h"
#include "zellige/fast/fast.h"
#include "plan/plan.h"

static const char *usage =
    "usage: bench_planner_latency [--clusters LIST] [--mixes LIST] [--loads high,low]\n"
    "                             [--steps N] [--steps-large N] [--family F]\n"
    "                             [--path auto|exact] [--compare] [--no-cache]\n"
    "                             [--anchor-nodes N] [--lns-nodes N] [--first-nodes N]\n"
    "                             [--no-memory]\n";

// Tokens per rank for load name ld (see the header comment).
static int64_t load_tpr(const zb_env *e, const char *ld, double share, zg_error *err) {
    if (!strcmp(ld, "low")) return e->low;
    if (strcmp(ld, "s4096")) return e->high;
    zg_mix_spec spec = {share, e->high, e->video_seconds, e->cluster.world_size, 1};
    zg_batch b;
    zg_batch_init(&b);
    if (zg_workload_mix(&e->model, &spec, 0, &b, err)) return -1;
    int64_t tpr = (int64_t)((double)e->high * 4096.0 / (double)(b.n > 0 ? b.n : 1));
    zg_batch_free(&b);
    return tpr;
}

// One (cluster, mix, load) setting's measurements for one thread count.
typedef struct lat_acc {
    double *tb, *ts, *tt, *ta;  // per step: build, solve, total, anchor stage (ms)
    double seqs, anchors, sum_a, sum_t, nodes, ms_sum, gap_sum, ratio_max, ratio_sum, cold_ms;
    int optimal, infeasible, n_ok, n_cmp, replayed;
    zel_warm *warm;
    zel_cache *cache;
    zg_option_cache *pcache;
    int no_cache;
} lat_acc;

static void lat_acc_init(lat_acc *a, int n_steps, int no_cache) {
    memset(a, 0, sizeof *a);
    a->tb = calloc((size_t)(n_steps > 0 ? n_steps : 1), sizeof(double) * 4);
    a->ts = a->tb + n_steps, a->tt = a->ts + n_steps, a->ta = a->tt + n_steps;
    a->warm = zel_warm_new();
    a->cache = zel_cache_new();
    a->pcache = no_cache ? NULL : zg_option_cache_new();
    a->no_cache = no_cache;
    a->cold_ms = -1;
}

static void lat_acc_free(lat_acc *a) {
    zel_warm_free(a->warm);
    zel_cache_free(a->cache);
    zg_option_cache_free(a->pcache);
    free(a->tb);
}

// Plans batch b (step s) once and records it in a. Returns 1 on a hard error (printed).
static int plan_one(zb_env *e, const zg_batch *b, int s, int fast, int compare, lat_acc *a,
                    const char *cl, const char *mx, zg_error *err) {
    if (fast) {
        zg_plan fp;
        zg_plan_init(&fp);
        zel_fast_stats fs;
        double f0 = zg_time_now();
        if (a->no_cache) zel_cache_clear(a->cache);
        zg_status fst = zel_fast_plan_cached(&e->ctx, b, a->cache, &fp, &fs, err);
        double f1 = zg_time_now();
        if (fst == ZG_ERR_INFEASIBLE) {
            a->infeasible++;
        } else if (fst) {
            fprintf(stderr, "bench_planner_latency: %s\n", err->msg);
            return 1;
        } else {
            int k = a->n_ok++;
            a->tb[k] = fs.build_ms, a->tt[k] = (f1 - f0) * 1e3;
            a->ts[k] = fs.anchor_ms + fs.filler_ms + fs.ls_ms;
            a->ta[k] = fs.anchor_ms;
            if (s == 0) a->cold_ms = a->tt[k];
            a->sum_a += fs.anchor_ms, a->sum_t += a->tt[k];
            a->seqs += (double)b->n, a->anchors += (double)fs.n_anchors;
            a->ms_sum += fs.makespan;
            a->gap_sum += 100 * (fs.makespan / fs.lower_bound - 1);
            if (compare) {
                zg_problem cp;
                zel_result cr;
                if (!zg_problem_build(&e->ctx, b, &cp, err)) {
                    if (!zel_two_stage(&e->ctx, &cp, b, NULL, &cr, err)) {
                        double q = fs.makespan / cr.makespan;
                        a->ratio_sum += q, a->n_cmp++;
                        if (q > a->ratio_max) a->ratio_max = q;
                        free(cr.choice);
                    }
                    zg_problem_free(&cp);
                }
            }
        }
        zg_plan_free(&fp);
        return 0;
    }
    double t0 = zg_time_now();
    zg_problem pr;
    zel_result res;
    zg_plan plan;
    zg_plan_init(&plan);
    zg_status st = zg_problem_build_cached(&e->ctx, b, a->pcache, &pr, err);
    int built = st == ZG_OK;
    double t1 = zg_time_now();
    if (!st) st = zel_two_stage(&e->ctx, &pr, b, a->warm, &res, err);
    double t2 = zg_time_now();
    if (!st) st = zel_decode(&pr, b, res.choice, "zellige", &plan, err);
    double t3 = zg_time_now();
    if (st == ZG_ERR_INFEASIBLE) {  // memory-tight batch: counted, not timed
        a->infeasible++;
        zg_plan_free(&plan);
        if (built) zg_problem_free(&pr);
        return 0;
    }
    if (st) {
        fprintf(stderr, "bench_planner_latency: %s %s step %d: %s\n", cl, mx, s, err->msg);
        return 1;
    }
    int k = a->n_ok++;
    a->tb[k] = (t1 - t0) * 1e3, a->ts[k] = (t2 - t1) * 1e3, a->tt[k] = (t3 - t0) * 1e3;
    if (s == 0) a->cold_ms = a->tt[k];
    a->ta[k] = res.anchor_ms;
    a->sum_a += res.anchor_ms, a->sum_t += a->tt[k];
    a->seqs += (double)b->n, a->anchors += (double)res.n_anchors;
    a->optimal += res.st1.optimal;
    a->replayed += res.st1.replayed;
    a->nodes += (double)res.st1.nodes;
    a->ms_sum += res.makespan;
    free(res.choice);
    zg_plan_free(&plan);
    zg_problem_free(&pr);
    return 0;
}

static void lat_acc_print(lat_acc *a, const char *cl, int ranks, const char *ld, const char *mx,
                          int64_t tpr, int fast) {
    int n_ok = a->n_ok, div = n_ok > 0 ? n_ok : 1;
    double bp50 = zb_quantile(a->tb, n_ok, 0.5), sp50 = zb_quantile(a->ts, n_ok, 0.5);
    double sp99 = zb_quantile(a->ts, n_ok, 0.99), tp50 = zb_quantile(a->tt, n_ok, 0.5);
    double tp99 = zb_quantile(a->tt, n_ok, 0.99), ap50 = zb_quantile(a->ta, n_ok, 0.5);
    int optimal = fast ? 0 : a->optimal;
    // the planner's cross-step cache of priced shapes: the fast path's template cache, the
    // exact path's option cache (lookups are per price class of a batch)
    int64_t hits = 0, misses = 0;
    if (fast) {
        zel_cache_stats cs = zel_cache_get_stats(a->cache);
        hits = cs.hits, misses = cs.misses;
    } else if (a->pcache) {
        zg_option_cache_stats ps = zg_option_cache_get_stats(a->pcache);
        hits = ps.hits, misses = ps.misses;
    }
    printf("%-10s %5d %-4s %6s %6.0f %7.1f %9.3f %9.3f %9.3f %9.3f %9.3f %6.1f%% %5.0f%% %5d\n",
           cl, ranks, ld, mx, a->seqs / div, a->anchors / div, bp50, sp50, sp99, tp50,
           tp99, a->sum_t > 0 ? 100 * a->sum_a / a->sum_t : 0,
           fast ? a->gap_sum / div : 100.0 * optimal / div, a->infeasible);
    if (fast)
        printf("  path=fast tokens_per_rank=%lld certified_gap_mean=%.3f%%%s", (long long)tpr,
               a->gap_sum / div, a->n_cmp ? "" : "\n");
    if (fast && a->n_cmp)
        printf(" vs_exact mean %.5f max %.5f (n=%d)\n", a->ratio_sum / a->n_cmp, a->ratio_max,
               a->n_cmp);
    printf("{\"bench\":\"planner_latency\",\"cluster\":\"%s\",\"ranks\":%d,\"load\":\"%s\","
           "\"tokens_per_rank\":%lld,\"mix\":\"%s\",\"steps\":%d,\"seqs\":%.1f,"
           "\"anchors\":%.1f,\"build_p50_ms\":%.4f,\"solve_p50_ms\":%.4f,"
           "\"solve_p99_ms\":%.4f,\"anchor_p50_ms\":%.4f,\"total_p50_ms\":%.4f,"
           "\"total_p99_ms\":%.4f,\"anchor_share\":%.4f,\"anchor_optimal\":%.3f,"
           "\"infeasible\":%d,\"anchor_nodes_mean\":%.1f,\"makespan_mean\":%.9g,"
           "\"cold_ms\":%.4f,\"replayed\":%.3f,\"total_mean_ms\":%.4f,\"cache_hits\":%lld,"
           "\"cache_misses\":%lld}\n",
           cl, ranks, ld, (long long)tpr, mx, n_ok, a->seqs / div, a->anchors / div,
           bp50, sp50, sp99, ap50, tp50, tp99, a->sum_t > 0 ? a->sum_a / a->sum_t : 0,
           (double)optimal / div, a->infeasible, a->nodes / div, a->ms_sum / div, a->cold_ms,
           (double)a->replayed / div, a->sum_t / div, (long long)hits, (long long)misses);
    fflush(stdout);
}

int main(int argc, char **argv) {
    zb_args ar = {"8xA800,16xA800,32xA6000,64xH100,256xH100,1024xH100",
                  "V35,V40,V45,V50,V55,V60", "high,low", "node", 10};
    int steps_large = 2, exact_only = 0, compare = 0, no_cache = 0, no_memory = 0;
    int64_t anchor_nodes = 0, lns_nodes = 0, first_nodes = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (zb_args_take(&ar, argc, argv, &i)) {
            continue;
        } else if (!strcmp(a, "--help")) {
            fputs(usage, stdout);
            return 0;
        } else if (v && !strcmp(a, "--steps-large")) {
            steps_large = atoi(v), i++;
        } else if (v && !strcmp(a, "--path")) {
            exact_only = !strcmp(v, "exact"), i++;
        } else if (!strcmp(a, "--compare")) {
            compare = 1;
        } else if (!strcmp(a, "--no-cache")) {
            no_cache = 1;
        } else if (!strcmp(a, "--no-memory")) {
            no_memory = 1;
        } else if (v && !strcmp(a, "--anchor-nodes")) {
            anchor_nodes = atoll(v), i++;
        } else if (v && !strcmp(a, "--lns-nodes")) {
            lns_nodes = atoll(v), i++;
        } else if (v && !strcmp(a, "--first-nodes")) {
            first_nodes = atoll(v), i++;
        } else {
            fprintf(stderr, "bench_planner_latency: bad argument '%s'\n%s", a, usage);
            return 1;
        }
    }
    char *cl[16], *mx[16], *ld[4];
    int ncl = zb_split(ar.clusters, cl, 16), nmx = zb_split(ar.mixes, mx, 16), nld = zb_split(ar.loads, ld, 4);
    printf("%-10s %5s %-4s %6s %6s %7s %9s %9s %9s %9s %9s %7s %6s %6s\n", "cluster", "ranks",
           "load", "mix", "seqs", "anchors", "build_p50", "solve_p50", "solve_p99", "total_p50",
           "total_p99", "anchor%", "opt%", "infeas");
    printf("(fast-path rows: path=fast, opt%% = mean certified gap to the memory-blind lower "
           "bound, in %%; vs_exact = fast/exact makespan with --compare)\n");
    zg_error err;
    for (int c = 0; c < ncl; c++) {
        zb_env e;
        if (zb_env_init(&e, cl[c], &err)) {
            fprintf(stderr, "bench_planner_latency: %s\n", err.msg);
            return 1;
        }
        if (zg_rankset_family_parse(ar.family, &e.ctx.opts.family, &err)) {
            fprintf(stderr, "bench_planner_latency: %s\n", err.msg);
            return 1;
        }
        zb_set_budgets(&e.ctx.opts, anchor_nodes, lns_nodes, first_nodes, no_memory);
        int n_steps = e.cluster.world_size > 64 ? steps_large : ar.steps;
        for (int l = 0; l < nld; l++) {
            for (int x = 0; x < nmx; x++) {
                double share = zg_mix_share_from_name(mx[x]);
                if (share < 0) {
                    fprintf(stderr, "bench_planner_latency: bad mix '%s'\n", mx[x]);
                    return 1;
                }
                int64_t tpr = load_tpr(&e, ld[l], share, &err);
                if (tpr <= 0) {
                    fprintf(stderr, "bench_planner_latency: %s\n", err.msg);
                    return 1;
                }
                int fast = !exact_only && e.cluster.world_size >= ZEL_FAST_MIN_RANKS;
                lat_acc acc;
                lat_acc_init(&acc, n_steps, no_cache);
                for (int s = 0; s < n_steps; s++) {
                    zg_mix_spec spec = {share, tpr, e.video_seconds, e.cluster.world_size, 1};
                    zg_batch b;
                    zg_batch_init(&b);
                    if (zg_workload_mix(&e.model, &spec, s, &b, &err)) {
                        fprintf(stderr, "bench_planner_latency: %s\n", err.msg);
                        return 1;
                    }
                    if (plan_one(&e, &b, s, fast, compare, &acc, cl[c], mx[x], &err)) return 1;
                    zg_batch_free(&b);
                }
                lat_acc_print(&acc, cl[c], e.cluster.world_size, ld[l], mx[x], tpr, fast);
                lat_acc_free(&acc);
            }
        }
        zb_env_free(&e);
    }
    return 0;
}
