// aoizora_bench.c — predicted step latency of AoiZora vs the expert configurations and the
// Alpa-style ILP (XLA auto-sharding costs, exact, default device order), all priced with the
// same uncalibrated network + roofline model, and planning time per plan. Inference (CFG for
// Wan) on v5e-4/8/16 at 21/41/81 frames; training on v5p-4/8 at 21/81 frames with a global
// batch of one sample per chip, 2 and 1. Prints a table and one JSON line per plan, then a
// summary JSON line with geo-means.
// Usage: bench_aoizora_bench [--quick] [--solver auto|cbc|dp]
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "aoizora/aoizora.h"

int main(int argc, char **argv) {
    int quick = 0;
    const char *solver = "auto";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--solver") && i + 1 < argc) solver = argv[++i];
        else {
            fprintf(stderr, "usage: bench_aoizora_bench [--quick] [--solver auto|cbc|dp]\n");
            return 2;
        }
    }
    const char *models[] = {"wan2.1-1.3b", "wan2.1-14b", "hunyuanvideo-13b"};
    const char *res[] = {"480p", "720p"};
    const int64_t frames[] = {21, 41, 81};
    const char *inf_topo[] = {"v5e-4", "v5e-8", "v5e-16"};
    const char *train_topo[] = {"v5p-4", "v5p-8"};
    double lg_exp = 0, lg_alpa = 0, max_plan = 0, lg_exp_t = 0, lg_alpa_t = 0, best_exp = 0;
    int n = 0, nt = 0, infeasible = 0, n_exp_illegal = 0, na = 0, nat = 0, n_alpa_illegal = 0;
    int n_from_ilp = 0, n_plans = 0;
    double min_vs_best = INFINITY, lg_best = 0, lg_best_t = 0, max_train = 0;
    int nb = 0, nbt = 0;
    printf("%-17s %-5s %4s %-7s %-5s %3s %10s %10s %10s %7s %7s %7s %7s  %s\n", "model", "res", "fr",
           "topo", "mode", "bat", "aoizora_s", "expert_s", "alpa_s", "vs_exp", "vs_alpa", "ilp_s",
           "plan_s", "chosen");
    for (int training = 0; training < 2; training++)
        for (size_t mi = 0; mi < 3; mi++)
            for (size_t ri = 0; ri < 2; ri++)
                for (size_t fi = 0; fi < 3; fi++) {
                    if (quick && (fi != 0 || ri != 0)) continue;
                    size_t nto = training ? 2 : 3;
                    if (training && fi == 1) continue;  // training: 21 and 81 frames
                    for (size_t ti = 0; ti < nto; ti++)
                    for (int bi = 0; bi < (training ? 3 : 1); bi++) {
                        const int32_t bat_opt[3] = {0, 2, 1};  // 0: one sample per chip
                        int32_t bat = training ? bat_opt[bi] : 0;
                        const char *topo = training ? train_topo[ti] : inf_topo[ti];
                        zg_error e = {0};
                        zg_net net;
                        zg_aoi_work w;
                        zg_aoi_graph g;
                        zg_aoi_plan p;
                        zg_aoi_plan_opts po;
                        zg_aoi_plan_opts_default(&po);
                        snprintf(po.ilp_solver, sizeof po.ilp_solver, "%s", solver);
                        if (zg_net_load(topo, &net, &e) ||
                            zg_aoi_work_init(&w, models[mi], res[ri], frames[fi], training, bat,
                                             net.n_devices, &e) ||
                            zg_aoi_graph_build(&w, &g, &e)) {
                            fprintf(stderr, "bench: %s\n", e.msg);
                            return 1;
                        }
                        zg_status st = zg_aoi_plan_run(&g, &net, &po, &p, &e);
                        if (st == ZG_ERR_INFEASIBLE) {
                            printf("%-17s %-5s %4lld %-7s %-5s %3d infeasible: %.90s\n", models[mi],
                                   res[ri], (long long)frames[fi], topo, training ? "train" : "infer",
                                   w.batch, e.msg);
                            infeasible++;
                            continue;
                        }
                        if (st) {
                            fprintf(stderr, "bench: %s\n", e.msg);
                            return 1;
                        }
                        double exp = INFINITY, alpa = INFINITY;
                        for (int b = 0; b < p.n_baselines; b++) {
                            if (!p.baselines[b].legal) continue;
                            if (!strcmp(p.baselines[b].name, "alpa_ilp")) alpa = p.baselines[b].latency_s;
                            else if (p.baselines[b].latency_s < exp) exp = p.baselines[b].latency_s;
                        }
                        char lab[300];
                        snprintf(lab, sizeof lab, "%s%s", p.from_ilp ? "[ilp placed] " : "", p.label);
                        double a = p.price.total_s;
                        printf("%-17s %-5s %4lld %-7s %-5s %3d %10.4f %10.4f %10.4f %7.3f %7.3f %7.3f %7.3f  %.80s\n",
                               models[mi], res[ri], (long long)frames[fi], topo,
                               training ? "train" : "infer", w.batch, a, exp, alpa, exp / a, alpa / a,
                               p.ilp_solve_s, p.plan_time_s, lab);
                        printf("{\"model\":\"%s\",\"res\":\"%s\",\"frames\":%lld,\"topology\":\"%s\","
                               "\"training\":%d,\"batch\":%d,\"aoizora_s\":%.6g,\"expert_s\":%.6g,\"alpa_s\":%.6g,"
                               "\"default_order_s\":%.6g,\"ilp_solver\":\"%s\",\"ilp_s\":%.4f,\"plan_time_s\":%.4f,"
                               "\"from_ilp\":%d,\"chosen\":\"%s\"}\n",
                               models[mi], res[ri], (long long)frames[fi], topo, training, w.batch, a,
                               isfinite(exp) ? exp : -1, isfinite(alpa) ? alpa : -1, p.default_order_s,
                               p.ilp_solver, p.ilp_solve_s, p.plan_time_s, p.from_ilp, p.label);
                        if (!isfinite(alpa)) n_alpa_illegal++;
                        else if (training) lg_alpa_t += log(alpa / a), nat++;
                        else lg_alpa += log(alpa / a), na++;
                        if (p.from_ilp) n_from_ilp++;
                        n_plans++;
                        double best = exp < alpa ? exp : alpa;
                        if (isfinite(best)) {
                            if (best / a < min_vs_best) min_vs_best = best / a;
                            if (training) lg_best_t += log(best / a), nbt++;
                            else lg_best += log(best / a), nb++;
                            if (training && best / a > max_train) max_train = best / a;
                        }
                        if (isfinite(exp)) {
                            if (training) lg_exp_t += log(exp / a), nt++;
                            else lg_exp += log(exp / a), n++;
                            if (exp / a > best_exp) best_exp = exp / a;
                        } else {
                            n_exp_illegal++;
                        }
                        if (p.plan_time_s > max_plan) max_plan = p.plan_time_s;
                        zg_aoi_plan_free(&p);
                    }
                }
    printf("{\"summary\":1,\"plans\":%d,\"inference_plans\":%d,\"training_plans\":%d,\"infeasible\":%d,"
           "\"expert_illegal\":%d,\"alpa_illegal\":%d,\"geomean_vs_expert_inference\":%.4f,"
           "\"geomean_vs_alpa_inference\":%.4f,\"geomean_vs_best_baseline_inference\":%.4f,"
           "\"geomean_vs_expert_training\":%.4f,\"geomean_vs_alpa_training\":%.4f,"
           "\"geomean_vs_best_baseline_training\":%.4f,\"max_vs_best_baseline_training\":%.4f,"
           "\"min_vs_best_baseline\":%.4f,\"max_vs_expert\":%.4f,\"winner_is_ilp_sharding\":%d,"
           "\"max_plan_time_s\":%.3f,\"ilp_solver\":\"%s\",\"note\":\"model predictions, uncalibrated\"}\n",
           n_plans, n, nt, infeasible, n_exp_illegal, n_alpa_illegal, n ? exp(lg_exp / n) : 0,
           na ? exp(lg_alpa / na) : 0, nb ? exp(lg_best / nb) : 0, nt ? exp(lg_exp_t / nt) : 0,
           nat ? exp(lg_alpa_t / nat) : 0, nbt ? exp(lg_best_t / nbt) : 0, max_train,
           isfinite(min_vs_best) ? min_vs_best : 0, best_exp, n_from_ilp, max_plan, solver);
    return 0;
}
