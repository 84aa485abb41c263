// planner_build.c — the fast path's (fast/fast.c) per-batch cost with and without the
// cross-step template cache (fast/cache.c), on the same batches as bench_planner_latency.
//
//   build/bin/bench_planner_build [--clusters 256xH100,1024xH100] [--mixes V35,V60]
//       [--loads s4096] [--steps N] [--family node|aligned|sliding]
// Each (cluster, mix, load) plans steps 0..N-1 twice: cold (zel_fast_plan, no cache: what every
// step cost before the cache) and warm (zel_fast_plan_cached with one cache kept across the
// steps, as a planner keeps it; step 0 fills it). Prints build / solve / total p50 (ms) of both,
// the warm p50 over steps >= 1 (the steady state), the cache's hits and misses, and checks that
// both plans are identical (same makespan and options), else exits 1.
#include "zel_bench.h"
#include "zellige/fast/fast.h"

static const char *usage =
    "usage: bench_planner_build [--clusters LIST] [--mixes LIST] [--loads high,low,s4096]\n"
    "                           [--steps N] [--family F]\n";

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

static int same_plan(const zg_plan *a, const zg_plan *b) {
    if (a->n != b->n || memcmp(&a->makespan, &b->makespan, sizeof(double))) return 0;
    for (int64_t i = 0; i < a->n; i++)
        if (!zg_config_eq(a->p[i].config, b->p[i].config) || a->p[i].n_ranks != b->p[i].n_ranks ||
            a->p[i].ranks[0] != b->p[i].ranks[0])
            return 0;
    return 1;
}

int main(int argc, char **argv) {
    zb_args ar = {"256xH100,1024xH100", "V35,V60", "s4096", "node", 4};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (zb_args_take(&ar, argc, argv, &i)) {
            continue;
        } else if (!strcmp(a, "--help")) {
            fputs(usage, stdout);
            return 0;
        } else {
            fprintf(stderr, "bench_planner_build: bad argument '%s'\n%s", a, usage);
            return 1;
        }
    }
    int steps = ar.steps;
    if (steps < 1 || steps > 1000) {
        fprintf(stderr, "bench_planner_build: --steps %d; use 1..1000\n", steps);
        return 1;
    }
    char *cl[16], *mx[16], *ld[4];
    int ncl = zb_split(ar.clusters, cl, 16), nmx = zb_split(ar.mixes, mx, 16), nld = zb_split(ar.loads, ld, 4);
    printf("%-10s %5s %-5s %4s %5s | %9s %9s %9s | %9s %9s %9s %9s | %5s %5s\n", "cluster",
           "ranks", "load", "mix", "seqs", "cold_bld", "cold_slv", "cold_tot", "warm_bld",
           "warm_slv", "warm_tot", "steady", "hits", "miss");
    zg_error err;
    double *v = calloc(7 * (size_t)steps, sizeof(double));
    if (!v) return 1;
    for (int c = 0; c < ncl; c++) {
        zb_env e;
        if (zb_env_init(&e, cl[c], &err) ||
            zg_rankset_family_parse(ar.family, &e.ctx.opts.family, &err)) {
            fprintf(stderr, "bench_planner_build: %s\n", err.msg);
            return 1;
        }
        for (int l = 0; l < nld; l++)
            for (int x = 0; x < nmx; x++) {
                double share = zg_mix_share_from_name(mx[x]);
                int64_t tpr = share < 0 ? -1 : load_tpr(&e, ld[l], share, &err);
                if (tpr <= 0) {
                    fprintf(stderr, "bench_planner_build: bad mix or load '%s' '%s'\n", mx[x],
                            ld[l]);
                    return 1;
                }
                zel_cache *cache = zel_cache_new();
                double seqs = 0;
                int n_ok = 0;
                for (int s = 0; s < steps; s++) {
                    zg_mix_spec spec = {share, tpr, e.video_seconds, e.cluster.world_size, 1};
                    zg_batch b;
                    zg_batch_init(&b);
                    if (zg_workload_mix(&e.model, &spec, s, &b, &err)) return 1;
                    zg_plan pc, pw;
                    zg_plan_init(&pc), zg_plan_init(&pw);
                    zel_fast_stats fc, fw;
                    double t0 = zg_time_now();
                    zg_status sc = zel_fast_plan(&e.ctx, &b, &pc, &fc, &err);
                    double t1 = zg_time_now();
                    zg_status sw = zel_fast_plan_cached(&e.ctx, &b, cache, &pw, &fw, &err);
                    double t2 = zg_time_now();
                    if (sc != sw || (!sc && !same_plan(&pc, &pw))) {
                        fprintf(stderr, "bench_planner_build: %s %s step %d: cached plan "
                                        "differs from the uncached one\n", cl[c], mx[x], s);
                        return 1;
                    }
                    if (!sc) {
                        int k = n_ok++;
                        v[k] = fc.build_ms, v[steps + k] = fc.anchor_ms + fc.filler_ms + fc.ls_ms;
                        v[2 * steps + k] = (t1 - t0) * 1e3;
                        v[3 * steps + k] = fw.build_ms;
                        v[4 * steps + k] = fw.anchor_ms + fw.filler_ms + fw.ls_ms;
                        v[5 * steps + k] = (t2 - t1) * 1e3;
                        if (s > 0) v[6 * steps + k - 1] = (t2 - t1) * 1e3;
                        seqs += (double)b.n;
                    }
                    zg_plan_free(&pc), zg_plan_free(&pw);
                    zg_batch_free(&b);
                }
                zel_cache_stats cs = zel_cache_get_stats(cache);
                zel_cache_free(cache);
                double q[7];
                for (int j = 0; j < 6; j++) q[j] = zb_quantile(v + j * steps, n_ok, 0.5);
                q[6] = zb_quantile(v + 6 * steps, n_ok > 1 ? n_ok - 1 : 0, 0.5);
                printf("%-10s %5d %-5s %4s %5.0f | %9.2f %9.2f %9.2f | %9.2f %9.2f %9.2f %9.2f | "
                       "%5lld %5lld\n",
                       cl[c], e.cluster.world_size, ld[l], mx[x], seqs / (n_ok ? n_ok : 1), q[0],
                       q[1], q[2], q[3], q[4], q[5], q[6], (long long)cs.hits,
                       (long long)cs.misses);
                fflush(stdout);
            }
        zb_env_free(&e);
    }
    free(v);
    return 0;
}
