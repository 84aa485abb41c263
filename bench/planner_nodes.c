// planner_nodes.c — stage-1 proof cost of the exact anchor search (exact/bb.c), for bound work.
// For each batch (cluster, load, mix, step; no warm start): builds the stage-1 model like
// zel_two_stage (catalog cut, fill- and memory-aware), solves it with the default budget, then
// re-runs the min-T phase from its own optimum and reports the nodes and time that proof takes
// (the part a stronger bound shortens). Deterministic node counts; times are noisy.
// Usage: bench_planner_nodes [--clusters 8xA800] [--loads high] [--mixes V35,...] [--steps 5]
//        [--nodes N] [--no-cover] [--dump]   (--no-cover: zel_limits.no_cover, A/B)
#include <math.h>

#include "zel_bench.h"


static const char usage[] =
    "bench_planner_nodes [--clusters LIST] [--loads high,low] [--mixes V35,...] [--steps N]\n"
    "                    [--nodes N] [--no-cover] [--dump]\n";

static void dump_model(const zel_model *m) {
    printf("  model N=%d cap=%.4g extra_area=%.6g fill_mem=%.6g groups=%d units=%lld\n",
           m->n_ranks, m->mem_room, m->extra_area, m->fill_mem, m->n_grps,
           (long long)m->n_units);
    for (int32_t g = 0; g < m->n_grps; g++) {
        const zel_grp *G = &m->grps[g];
        printf("   grp %d count=%lld opts=%d whole=%d blocks=%d min_area=%.6g\n", g,
               (long long)G->count, G->n_opts, G->n_whole, G->n_blocks, G->min_area);
        for (int32_t j = 0; j < G->n_opts && j < 400; j++) {
            const zel_opt *o = &G->opts[j];
            if (o->start == 0 || j < 3)
                printf("     o%d [%d,+%d) t=%.6g m=%.6g a=%.6g\n", j, o->start, o->degree,
                       o->time, o->mem, o->area);
        }
    }
}

int main(int argc, char **argv) {
    zb_args ar = {"8xA800", "V35,V40,V45,V50,V55,V60", "high", "node", 5};
    int dump = 0, no_cover = 0;
    int64_t nodes_budget = 0;
    zb_opt opts[] = {ZB_ARGS_OPTS(ar), {"--nodes", 'l', &nodes_budget, 0},
                     {"--no-cover", 'f', &no_cover, 0}, {"--dump", 'f', &dump, 0}};
    int ex = zb_parse("bench_planner_nodes", usage, opts, ZB_NOPTS(opts), argc, argv);
    if (ex >= 0) return ex;
    zb_lists ls;
    int steps = ar.steps;
    zb_args_split(&ar, &ls);
    zg_error err;
    (void)zb_quantile;
    double tot_full = 0, tot_proof = 0, ms_full = 0, ms_proof = 0;
    for (int c = 0; c < ls.ncl; c++) {
        zb_env e;
        if (zb_env_init(&e, ls.cl[c], &err)) return zb_fail("bench_planner_nodes", &err);
        int32_t N = e.cluster.world_size;
        int64_t budget = nodes_budget > 0 ? nodes_budget : (N <= 8 ? 50000 : 80000 / N);
        for (int l = 0; l < ls.nld; l++)
            for (int x = 0; x < ls.nmx; x++)
                for (int s = 0; s < steps; s++) {
                    double share = zg_mix_share_from_name(ls.mx[x]);
                    int64_t tpr = strcmp(ls.ld[l], "low") ? e.high : e.low;
                    zg_mix_spec spec = {share, tpr, e.video_seconds, N, 1};
                    zg_batch b;
                    zg_problem pr;
                    if (zb_problem(&e, &spec, (uint64_t)s, &b, &pr, &err))
                        return zb_fail("bench_planner_nodes", &err);
                    double cut;
                    if (zel_cut_threshold(&e.ctx, &pr, &cut, &err)) return 1;
                    int32_t *anc = calloc((size_t)pr.n_groups + 1, sizeof(int32_t));
                    int32_t na = 0;
                    double A = 0, X = 0;
                    for (int32_t g = 0; g < pr.n_groups; g++) {
                        const zg_group *G = &pr.groups[g];
                        int whole = 0;
                        for (int32_t j = 0; j < G->n_opts; j++)
                            whole |= zg_config_is_whole(G->opts[j].config);
                        if (cut < 0 || G->whole_time > cut || !whole)
                            anc[na++] = g;
                        else
                            A += (double)G->count * G->whole_time,
                                X += (double)G->count * G->whole_mem;
                    }
                    zel_model m;
                    if (zel_model_build(&pr, anc, na, NULL, NULL, &m, &err)) return 1;
                    m.extra_area = A, m.fill_mem = X;
                    if (dump) dump_model(&m);
                    zel_sol sol, opt;
                    zel_sol_alloc(&m, &sol, &err);
                    zel_sol_alloc(&m, &opt, &err);
                    zel_limits lim = {budget, 0, ZEL_SEARCH_GAP, no_cover, 0};
                    zel_stage1 st1;
                    double t0 = zg_time_now();
                    zg_status rc = zel_anchor_solve(&m, 1e-3, &lim, NULL, &sol, &st1, &err);
                    double t1 = zg_time_now();
                    if (rc) {
                        printf("%s %s %s step %d: %s\n", ls.cl[c], ls.ld[l], ls.mx[x], s, err.msg);
                        zg_error_clear(&err);
                    } else {
                        // the proof alone: min-T phase from the optimum (T* itself, so the
                        // search must show nothing is below T* / (1 + gap))
                        zel_sol_copy(&m, &opt, &sol);
                        double Tstar = st1.T;
                        zel_sol_eval(&m, opt.opt, NULL, NULL, &opt.T, &opt.K);
                        zel_stats ps;
                        double t2 = zg_time_now();
                        zel_solve_minmax(&m, &opt, &lim, &ps, &err);
                        double t3 = zg_time_now();
                        double root = zel_model_lower_bound(&m);
                        double t4 = zg_time_now();
                        double dlb = zel_dff_root_bound(&m, root, Tstar);
                        double t5 = zg_time_now();
                        printf("%-8s %-4s %s s%d units=%lld grps=%d T*=%.6f root_gap=%.3f%% "
                               "full_nodes=%lld opt=%d full_ms=%.3f proof_nodes=%lld "
                               "proof_done=%d proof_ms=%.3f dff_root_gap=%.3f%% dff_ms=%.3f\n",
                               ls.cl[c], ls.ld[l], ls.mx[x], s, (long long)m.n_units, m.n_grps,
                               Tstar, 100 * (Tstar / root - 1), (long long)st1.nodes, st1.optimal,
                               (t1 - t0) * 1e3, (long long)ps.nodes, ps.complete,
                               (t3 - t2) * 1e3, 100 * (Tstar / dlb - 1), (t5 - t4) * 1e3);
                        if (dump) {
                            double *LL = calloc(2 * (size_t)m.n_ranks, sizeof(double));
                            double *HH = LL + m.n_ranks, Tq;
                            int64_t Kq;
                            zel_sol_eval(&m, opt.opt, LL, HH, &Tq, &Kq);
                            double tau = m.fill_mem > 0 ? m.extra_area / m.fill_mem : 0;
                            for (int64_t u = 0; u < m.n_units; u++) {
                                const zel_opt *o = &m.grps[m.grp_of[u]].opts[opt.opt[u]];
                                printf("   unit %lld grp %d [%d,+%d) t=%.4f m=%.4g\n",
                                       (long long)u, m.grp_of[u], o->start, o->degree,
                                       o->time, o->mem);
                            }
                            for (int32_t r = 0; r < m.n_ranks; r++)
                                printf("   rank %d L=%.4f H=%.4g room=%.4f fcap=%.4f\n", r,
                                       LL[r], HH[r], Tq - LL[r], tau * (m.mem_room - HH[r]));
                            double *scr = malloc(sizeof(double) * zel_dff_scratch(&m));
                            double sL = 0;
                            for (int32_t r = 0; r < m.n_ranks; r++) sL += m.base_load[r];
                            for (int q = 0; q < 3; q++) {
                                double T = Tstar * (q == 0 ? 1 - 1e-4 : q == 1 ? 0.999 : 0.998);
                                double bud = m.n_ranks * T - sL - m.extra_area;
                                double need = zel_dff_bound(&m, m.base_load, m.base_mem, T, 0,
                                                            m.grps[0].count, 0, INFINITY, scr);
                                printf("   dff at T=%.4f: need %.4f budget %.4f\n", T, need,
                                       bud);
                            }
                            free(scr);
                            free(LL);
                        }
                        tot_full += (double)st1.nodes, tot_proof += (double)ps.nodes;
                        ms_full += (t1 - t0) * 1e3, ms_proof += (t3 - t2) * 1e3;
                    }
                    zel_sol_free(&sol), zel_sol_free(&opt);
                    zel_model_free(&m);
                    free(anc);
                    zg_problem_free(&pr);
                    zg_batch_free(&b);
                }
        zb_env_free(&e);
    }
    printf("TOTAL full_nodes=%.0f proof_nodes=%.0f full_ms=%.2f proof_ms=%.2f\n", tot_full,
           tot_proof, ms_full, ms_proof);
    return 0;
}
