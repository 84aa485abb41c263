// aoizora_bench.c — predicted step latency of AoiZora vs the expert configurations and the
// Alpa-style logical search (all priced with the same uncalibrated network + roofline model),
// and planning time per plan. Inference (CFG for Wan) on v5e-4/8/16; training on v5p-4/8.
// Prints a table and one JSON line per plan, then a summary JSON line with geo-means.
// Usage: bench_aoizora_bench [--quick]
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "aoizora/aoizora.h"

int main(int argc, char **argv) {
    int quick = argc > 1 && !strcmp(argv[1], "--quick");
    const char *models[] = {"wan2.1-1.3b", "wan2.1-14b", "hunyuanvideo-13b"};
    const char *res[] = {"480p", "720p"};
    const int64_t frames[] = {21, 41, 81};
    const char *inf_topo[] = {"v5e-4", "v5e-8", "v5e-16"};
    const char *train_topo[] = {"v5p-4", "v5p-8"};
    double lg_exp = 0, lg_alpa = 0, max_plan = 0, lg_exp_t = 0, lg_alpa_t = 0, best_exp = 0;
    int n = 0, nt = 0, infeasible = 0, n_exp_illegal = 0;
    printf("%-17s %-5s %4s %-7s %-5s %10s %10s %10s %7s %7s %8s  %s\n", "model", "res", "fr",
           "topo", "mode", "aoizora_s", "expert_s", "alpa_s", "vs_exp", "vs_alpa", "plan_s",
           "chosen");
    for (int training = 0; training < 2; training++)
        for (size_t mi = 0; mi < 3; mi++)
            for (size_t ri = 0; ri < 2; ri++)
                for (size_t fi = 0; fi < 3; fi++) {
                    if (quick && (fi != 0 || ri != 0)) continue;
                    size_t nto = training ? 2 : 3;
                    for (size_t ti = 0; ti < nto; ti++) {
                        const char *topo = training ? train_topo[ti] : inf_topo[ti];
                        zg_error e = {0};
                        zg_net net;
                        zg_aoi_work w;
                        zg_aoi_graph g;
                        zg_aoi_plan p;
                        zg_aoi_plan_opts po;
                        zg_aoi_plan_opts_default(&po);
                        if (zg_net_load(topo, &net, &e) ||
                            zg_aoi_work_init(&w, models[mi], res[ri], frames[fi], training, 0,
                                             net.n_devices, &e) ||
                            zg_aoi_graph_build(&w, &g, &e)) {
                            fprintf(stderr, "bench: %s\n", e.msg);
                            return 1;
                        }
                        zg_status st = zg_aoi_plan_run(&g, &net, &po, &p, &e);
                        if (st == ZG_ERR_INFEASIBLE) {
                            printf("%-17s %-5s %4lld %-7s %-5s infeasible: %.90s\n", models[mi],
                                   res[ri], (long long)frames[fi], topo, training ? "train" : "infer", e.msg);
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
                            if (!strcmp(p.baselines[b].name, "alpa_style")) alpa = p.baselines[b].latency_s;
                            else if (p.baselines[b].latency_s < exp) exp = p.baselines[b].latency_s;
                        }
                        char lab[64];
                        zg_aoi_cand_label(&p.cand, lab, sizeof lab);
                        double a = p.price.total_s;
                        printf("%-17s %-5s %4lld %-7s %-5s %10.4f %10.4f %10.4f %7.3f %7.3f %8.3f  %s\n",
                               models[mi], res[ri], (long long)frames[fi], topo,
                               training ? "train" : "infer", a, exp, alpa, exp / a, alpa / a,
                               p.plan_time_s, lab);
                        printf("{\"model\":\"%s\",\"res\":\"%s\",\"frames\":%lld,\"topology\":\"%s\","
                               "\"training\":%d,\"aoizora_s\":%.6g,\"expert_s\":%.6g,\"alpa_s\":%.6g,"
                               "\"default_order_s\":%.6g,\"plan_time_s\":%.4f,\"chosen\":\"%s\"}\n",
                               models[mi], res[ri], (long long)frames[fi], topo, training, a,
                               isfinite(exp) ? exp : -1, alpa, p.default_order_s, p.plan_time_s, lab);
                        if (isfinite(exp)) {
                            if (training) lg_exp_t += log(exp / a), lg_alpa_t += log(alpa / a), nt++;
                            else lg_exp += log(exp / a), lg_alpa += log(alpa / a), n++;
                            if (exp / a > best_exp) best_exp = exp / a;
                        } else {
                            n_exp_illegal++;
                        }
                        if (p.plan_time_s > max_plan) max_plan = p.plan_time_s;
                        zg_aoi_plan_free(&p);
                    }
                }
    printf("{\"summary\":1,\"inference_plans\":%d,\"training_plans\":%d,\"infeasible\":%d,"
           "\"expert_illegal\":%d,\"geomean_vs_expert_inference\":%.4f,"
           "\"geomean_vs_alpa_inference\":%.4f,\"geomean_vs_expert_training\":%.4f,"
           "\"geomean_vs_alpa_training\":%.4f,\"max_vs_expert\":%.4f,\"max_plan_time_s\":%.3f,"
           "\"note\":\"model predictions, uncalibrated\"}\n",
           n, nt, infeasible, n_exp_illegal, n ? exp(lg_exp / n) : 0, n ? exp(lg_alpa / n) : 0,
           nt ? exp(lg_exp_t / nt) : 0, nt ? exp(lg_alpa_t / nt) : 0, best_exp, max_plan);
    return 0;
}
