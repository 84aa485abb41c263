// planner_quality.c — how far `zellige` lands above the exact joint optimum: for every batch,
// the two-stage plan vs `joint` (the ECF branch-and-bound over all sequences, warm-started from
// the two-stage plan, under --time-limit). Where joint proves optimality the gap is exact;
// elsewhere the gap is reported against joint's best plan and against its proven lower bound
// (an upper bound on the true gap).
//
//   build/bin/bench_planner_quality [--settings 8xA800:high,8xA800:low,...] [--batches N]
//       [--time-limit S] [--mixes V35,...] [--per-batch] [--explain K]
//       [--best bench/data/planner_best.json [--best-update]]
//   build/bin/bench_planner_quality --export DIR [--export-count K]
// --export writes K small anchor-stage problems (8xA800, low load, anchors only) with our
// proven optimum to DIR/anchor_<i>.json, for tests/py/test_cpsat_crosscheck.py.
#include <math.h>

#include "zel_bench.h"
#include "planner/planner.h"

static const char *usage =
    "usage: bench_planner_quality [--settings CLUSTER:LOAD,...] [--batches N] [--time-limit S]\n"
    "                             [--mixes LIST] [--anchor-nodes N] [--lns-nodes N]\n"
    "                             [--ref-lns-nodes N] [--per-batch] [--explain K]\n"
    "                             [--best FILE [--best-update]] [--lb FILE] [--no-memory]\n"
    "                             [--first-nodes N]\n"
    "                             | --export DIR\n"
    "                             [--export-count K]\n"
    "--anchor-nodes N: zellige's stage-1 node budget per search phase (0 = default rule);\n"
    "--lns-nodes N: zellige's stage-1 neighbourhood-search budget (0 = default rule, -1 = off);\n"
    "--first-nodes N: zellige's min-T search budget on an anchor multiset's first batch\n"
    "(0 = default rule, -1 = the ordinary budget).\n"
    "--ref-lns-nodes N: joint's (the reference's) neighbourhood-search budget (0 = default).\n"
    "--no-memory: zellige remembers no stage-1 layouts across batches (anchor_memory = -1;\n"
    "by default one planner plans a setting's batches in order, as in a training run).\n"
    "--per-batch: one line per batch (index, mix, zellige and joint makespan, gap, joint's\n"
    "proven lower bound).\n"
    "--best FILE: also report the gap to the best plan known per batch (bestgap: against\n"
    "min(FILE's makespan, joint, zellige)); FILE (bench/data/planner_best.json) holds, per\n"
    "setting, the best makespan any run has recorded for each batch index (same --mixes).\n"
    "--best-update: write the new minima back into FILE (atomic; creates it).\n"
    "--lb FILE: also report the gap to the best proven lower bound per batch (pgap: against\n"
    "max(joint's bound, FILE's)); FILE (bench/data/planner_lb.json, bench_planner_stage1\n"
    "--relax) holds bounds proven offline on joint's relaxation model, by a MIP solver\n"
    "(--stage) or by joint's relaxation search given seconds per batch (--search S).\n"
    "--explain K: for batch K of each setting, both plans' anchors (block and time per anchor,\n"
    "by group) and their objective on zellige's stage-1 model (lower = the model prefers it;\n"
    "joint's layout scoring lower means a stage-1 search failure, not a model error).\n"
    "joint keeps the default (its incumbent is the default two-stage plan, not warm-started).\n";

static int export_anchor_problems(const char *dir, int count) {
    zb_env e;
    zg_error err;
    if (zb_env_init(&e, "8xA800", &err)) return zb_fail("bench_planner_quality", &err);
    int written = 0;
    for (int step = 0; written < count && step < 10 * count; step++) {
        zg_mix_spec spec = {0.35 + 0.05 * (step % 6), e.low, e.video_seconds, 8, 7};
        zg_batch b;
        zg_problem pr;
        if (zb_problem(&e, &spec, (uint64_t)step, &b, &pr, &err))
            return zb_fail("bench_planner_quality", &err);
        double cut;
        zel_cut_threshold(&e.ctx, &pr, &cut, &err);
        int32_t anc[64];
        int32_t na = 0;
        for (int32_t g = 0; g < pr.n_groups && na < 64; g++)
            if (cut < 0 || pr.groups[g].whole_time > cut) anc[na++] = g;
        zel_model m;
        zel_sol s;
        zel_model_build(&pr, anc, na, NULL, NULL, &m, &err);
        zel_sol_alloc(&m, &s, &err);
        zel_heuristic(&m, zel_model_lower_bound(&m), &s);
        zel_limits lim = {2000000, 0, 0, 0, 0};
        zel_stats st;
        if (zel_solve_minmax(&m, &s, &lim, &st, &err) == ZG_OK && st.complete && m.n_units >= 2) {
            cJSON *j = cJSON_CreateObject();
            cJSON_AddNumberToObject(j, "world_size", pr.world_size);
            cJSON_AddNumberToObject(j, "mem_cap", pr.mem_cap);  // the cap; placements: - mem_base
            cJSON_AddNumberToObject(j, "mem_base", pr.mem_base);
            cJSON_AddNumberToObject(j, "optimum", s.T);
            cJSON_AddNumberToObject(j, "nodes", (double)st.nodes);
            cJSON *gs = cJSON_AddArrayToObject(j, "groups");
            for (int32_t i = 0; i < na; i++) {
                const zg_group *G = &pr.groups[anc[i]];
                cJSON *g = cJSON_CreateObject();
                cJSON_AddNumberToObject(g, "count", (double)G->count);
                cJSON_AddStringToObject(g, "bucket", G->bucket);
                cJSON *os = cJSON_AddArrayToObject(g, "options");
                for (int32_t k = 0; k < G->n_opts; k++) {
                    cJSON *o = cJSON_CreateObject();
                    cJSON_AddNumberToObject(o, "start", G->opts[k].start);
                    cJSON_AddNumberToObject(o, "degree", zg_option_degree(&G->opts[k]));
                    cJSON_AddNumberToObject(o, "time", G->opts[k].time);
                    cJSON_AddNumberToObject(o, "mem", G->opts[k].mem);
                    cJSON_AddItemToArray(os, o);
                }
                cJSON_AddItemToArray(gs, g);
            }
            char path[512];
            snprintf(path, sizeof path, "%s/anchor_%d.json", dir, written);
            if (zg_json_write_file(path, j, 0, &err)) return zb_fail("bench_planner_quality", &err);
            cJSON_Delete(j);
            written++;
        }
        zel_sol_free(&s);
        zel_model_free(&m);
        zg_problem_free(&pr);
        zg_batch_free(&b);
    }
    printf("wrote %d anchor problems to %s\n", written, dir);
    zb_env_free(&e);
    return written == count ? 0 : 1;
}

// Plan p's anchors as a solution of the stage-1 model m (each anchor's option: same block and
// width, time no higher than the plan's). Returns 0 if an anchor has no such option.
static int plan_to_sol(const zel_model *m, const zg_problem *pr, const zg_plan *p, zel_sol *s) {
    for (int32_t g = 0; g < m->n_grps; g++) {
        const zel_grp *G = &m->grps[g];
        const zg_group *pg = &pr->groups[G->g];
        for (int64_t q = 0; q < G->count; q++) {
            const zg_placement *pl = &p->p[pg->members[q]];
            int32_t lo = pl->ranks[0], k = -1;
            for (int32_t r = 1; r < pl->n_ranks; r++)
                if (pl->ranks[r] < lo) lo = pl->ranks[r];
            for (int32_t t = 0; t < G->n_opts && k < 0; t++)
                if (G->opts[t].start == lo && G->opts[t].degree == pl->n_ranks &&
                    G->opts[t].time <= pl->time * (1 + 1e-12))
                    k = t;
            if (k < 0) return 0;
            s->opt[m->unit0[g] + q] = k;
        }
    }
    zel_sol_canon(m, s);
    return zel_sol_eval(m, s->opt, NULL, NULL, &s->T, &s->K);
}

static void explain_plan(const zel_model *m, const zg_problem *pr, const zg_plan *p,
                         const char *who) {
    zel_sol s;
    zg_error err;
    if (zel_sol_alloc(m, &s, &err)) return;
    if (!plan_to_sol(m, pr, p, &s)) {
        printf("  %-7s makespan %.6f: an anchor's placement is not a stage-1 option\n", who,
               p->makespan);
        zel_sol_free(&s);
        return;
    }
    printf("  %-7s makespan %.6f, stage-1 objective %.6f, %lld split anchors\n   ", who,
           p->makespan, s.T, (long long)s.K);
    for (int32_t g = 0; g < m->n_grps; g++) {
        printf(" g%d:", g);
        for (int64_t u = m->unit0[g]; u < m->unit0[g + 1]; u++) {
            const zel_opt *o = &m->grps[g].opts[s.opt[u]];
            printf(" [%d,%d) %.1f", o->start, o->start + o->degree, o->time);
        }
        printf(g + 1 < m->n_grps ? " |" : "\n");
    }
    zel_sol_free(&s);
}

// --explain: the two plans' anchor layouts on zellige's stage-1 model.
static void explain_batch(const zb_env *e, const zg_batch *b, const zg_plan *z,
                          const zg_plan *j) {
    zg_problem pr;
    zel_model m;
    zg_error err;
    if (zg_problem_build(&e->ctx, b, &pr, &err)) return;
    if (!zel_stage1_model(&e->ctx, &pr, &m, &err)) {
        printf("explain: %d ranks, %d anchor groups (", m.n_ranks, m.n_grps);
        for (int32_t g = 0; g < m.n_grps; g++)
            printf("%sg%d: %lld x %lld tokens", g ? ", " : "", g, (long long)m.grps[g].count,
                   (long long)pr.groups[m.grps[g].g].tokens);
        printf("), stage-1 root bound %.6f\n", zel_model_lower_bound(&m));
        explain_plan(&m, &pr, z, "zellige");
        explain_plan(&m, &pr, j, "joint");
        zel_model_free(&m);
    }
    zg_problem_free(&pr);
}

int main(int argc, char **argv) {
    zb_qargs q = {"8xA800:high,8xA800:low", "V35,V40,V45,V50,V55,V60", 100};
    int export_count = 5, per_batch = 0, explain = -1;
    zb_files fl = {NULL, NULL, 0, 0};
    zb_search so = {0, 0, 0, 0};
    int64_t ref_lns_nodes = 0;
    double limit = 0.2;
    const char *export_dir = NULL;
    zb_opt opts[] = {ZB_QARGS_OPTS(q), ZB_FILES_OPTS(fl), ZB_SEARCH_OPTS(so),
                     {"--per-batch", 'f', &per_batch, 0}, {"--explain", 'i', &explain, 0},
                     {"--time-limit", 'd', &limit, 0}, {"--ref-lns-nodes", 'l', &ref_lns_nodes, 0},
                     {"--export", 'p', &export_dir, 0}, {"--export-count", 'i', &export_count, 0}};
    int ex = zb_parse("bench_planner_quality", usage, opts, ZB_NOPTS(opts), argc, argv);
    if (ex >= 0) return ex;
    if (export_dir) return export_anchor_problems(export_dir, export_count);
    char *settings = q.settings, *mixes = q.mixes;
    int batches = q.batches;
    const char *best_path = fl.best_path, *lb_path = fl.lb_path;
    int best_update = fl.best_update;
    if ((best_update && !best_path) || fl.lb_update) {
        fprintf(stderr, "bench_planner_quality: --best-update needs --best FILE (--lb-update is "
                        "bench_planner_stage1's)\n");
        return 1;
    }
    cJSON *best = best_open(best_path, mixes, best_update);
    if (best_path && !best) return 1;
    cJSON *lbf = lb_open(lb_path, mixes, 0);
    if (lb_path && !lbf) {
        cJSON_Delete(best);
        return 1;
    }
    char *st[16], *mx[16];
    int nst = zb_split(settings, st, 16), nmx = zb_split(mixes, mx, 16);
    printf("%-10s %-4s %7s %7s %9s %9s %9s %9s %9s %8s\n", "cluster", "load", "batches",
           "proven", "gap_mean%", "gap_max%", "lbgap_mn%", "lbgap_mx%", "zel_p50ms", "infeas");
    zg_error err;
    for (int s = 0; s < nst; s++) {
        char name[64];
        const char *load = zb_setting(st[s], name);
        zb_env e;
        if (zb_env_init(&e, name, &err)) return zb_fail("bench_planner_quality", &err);
        e.ctx.opts.time_limit_s = limit;
        int64_t tpr = !strcmp(load, "low") ? e.low : e.high;
        double gsum = 0, gmax = 0, lsum = 0, lmax = 0, bsum = 0, bmax = 0, psum = 0, pmax = 0;
        cJSON *brow = best ? best_row(best, st[s], batches) : NULL;
        cJSON *lrow = lbf ? best_row(lbf, st[s], batches) : NULL;
        int from_file = 0;
        int n = 0, proven = 0, infeasible = 0;
        double *zt = calloc((size_t)batches + 1, sizeof(double));
        zg_planner zp, jp;
        if (zg_planner_init(&zp, "zellige", &e.ctx, &err) ||
            zg_planner_init(&jp, "joint", &e.ctx, &err))
            return zb_fail("bench_planner_quality", &err);
        zb_search_apply(&so, &zp.ctx.opts);
        jp.ctx.opts.anchor_lns_nodes =
            (zg_budget){ref_lns_nodes != 0, ref_lns_nodes > 0 ? ref_lns_nodes : 0};
        for (int k = 0; k < batches; k++) {
            zg_batch b;
            if (zb_quality_batch(&e, tpr, mx, nmx, k, &b, &err))
                return zb_fail("bench_planner_quality", &err);
            zg_plan z, j;
            zg_plan_init(&z);
            zg_plan_init(&j);
            zg_status rz = zg_planner_plan(&zp, &b, &z, &err);
            zg_status rj = rz ? rz : zg_planner_plan(&jp, &b, &j, &err);
            if (rz == ZG_ERR_INFEASIBLE || rj == ZG_ERR_INFEASIBLE) {
                infeasible++;
            } else if (rz || rj) {
                return zb_fail("bench_planner_quality", &err);
            } else {
                double g = z.makespan / j.makespan - 1, lg = z.makespan / j.lower_bound - 1;
                double bk = z.makespan < j.makespan ? z.makespan : j.makespan;
                if (brow) {
                    cJSON *it = cJSON_GetArrayItem(brow, k);
                    if (cJSON_IsNumber(it) && it->valuedouble > 0 && it->valuedouble < bk)
                        bk = it->valuedouble;
                    if (best_update) cJSON_ReplaceItemInArray(brow, k, cJSON_CreateNumber(bk));
                    double bg = z.makespan / bk - 1;
                    bsum += bg;
                    if (bg > bmax) bmax = bg;
                }
                if (per_batch)
                    printf("batch %d %s zellige %.9g joint %.9g gap %.4f%% lb %.9g%s", k,
                           mx[k % nmx], z.makespan, j.makespan, 100 * g, j.lower_bound,
                           brow ? "" : "\n");
                if (per_batch && brow)
                    printf(" best %.9g bestgap %.4f%%%s", bk, 100 * (z.makespan / bk - 1),
                           lrow ? "" : "\n");
                if (lrow) {
                    cJSON *it = cJSON_GetArrayItem(lrow, k);
                    double fb = cJSON_IsNumber(it) ? it->valuedouble : 0, pb = j.lower_bound;
                    if (fb > bk * (1 + 1e-9)) {
                        fprintf(stderr, "bench_planner_quality: --lb: %s's bound for %s batch %d "
                                        "is %.9g, above a plan of %.9g s: not a lower bound of "
                                        "these batches (other prices or mixes?)\n",
                                lb_path, st[s], k, fb, bk);
                        return 1;
                    }
                    if (fb > pb) pb = fb, from_file++;
                    double pg = z.makespan / pb - 1;
                    psum += pg;
                    if (pg > pmax) pmax = pg;
                    if (per_batch) printf(" pb %.9g pgap %.4f%%\n", pb, 100 * pg);
                }
                if (k == explain) explain_batch(&e, &b, &z, &j);
                // joint starts from a two-stage plan without the layout memory (so without the
                // deeper first-visit search): zellige can end below it; counted as 0
                if (g < 0) g = 0;
                gsum += g, lsum += lg;
                if (g > gmax) gmax = g;
                if (lg > lmax) lmax = lg;
                proven += j.optimal;
                zt[n++] = z.plan_time_ms;
            }
            zg_plan_free(&z);
            zg_plan_free(&j);
            zg_batch_free(&b);
        }
        int d = n > 0 ? n : 1;
        double p50 = zb_quantile(zt, n, 0.5);
        printf("%-10s %-4s %7d %7d %9.4f %9.4f %9.4f %9.4f %9.3f %8d\n", name, load, n, proven,
               100 * gsum / d, 100 * gmax, 100 * lsum / d, 100 * lmax, p50, infeasible);
        if (brow)
            printf("  best known (%s): bestgap mean %.4f%% max %.4f%%\n", best_path,
                   100 * bsum / d, 100 * bmax);
        if (lrow)
            printf("  best proven bound (joint's, or %s's on %d batches): pgap mean %.4f%% "
                   "max %.4f%%\n", lb_path, from_file, 100 * psum / d, 100 * pmax);
        printf("{\"bench\":\"planner_quality\",\"cluster\":\"%s\",\"load\":\"%s\","
               "\"tokens_per_rank\":%lld,\"batches\":%d,\"joint_proven\":%d,"
               "\"gap_mean\":%.6g,\"gap_max\":%.6g,\"gap_lb_mean\":%.6g,\"gap_lb_max\":%.6g,"
               "\"zellige_p50_ms\":%.4f,\"joint_time_limit_s\":%g,\"infeasible\":%d",
               name, load, (long long)tpr, n, proven, gsum / d, gmax, lsum / d, lmax, p50, limit,
               infeasible);
        if (brow) printf(",\"best_gap_mean\":%.6g,\"best_gap_max\":%.6g", bsum / d, bmax);
        if (lrow) printf(",\"proven_gap_mean\":%.6g,\"proven_gap_max\":%.6g", psum / d, pmax);
        printf("}\n");
        fflush(stdout);
        free(zt);
        zg_planner_free(&zp);
        zg_planner_free(&jp);
        zb_env_free(&e);
    }
    int rc = 0;
    if (best && best_update) {
        zg_error werr;
        if (zg_json_write_file(best_path, best, 1, &werr)) {
            fprintf(stderr, "bench_planner_quality: --best-update: %s\n", werr.msg);
            rc = 1;
        }
    }
    cJSON_Delete(best);
    cJSON_Delete(lbf);
    return rc;
}
