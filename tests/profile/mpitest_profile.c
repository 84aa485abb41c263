// mpitest_profile.c — the profiler on the real engine (tiny model, two small buckets, one
// measured round), every method (single-sequence steps; mixed calibration plans fitted by
// NNLS; hybrid): every legal (bucket, config) pair gets a finite price, the memory model fits
// the tracked peaks, and on a small fidelity design the predicted peak memory matches the
// measured one. No timing is asserted.
#include <math.h>

#include "comm/zgmpitest.h"
#include "profile/profile.h"

static void profile_and_memory_fidelity(int *zg_failed_, zg_profile_method method) {
    zg_error e = {0};
    zg_model m;
    zg_cluster cl;
    char cname[32];
    int32_t world = zgmpi_comm->size;
    snprintf(cname, sizeof cname, "cpu:%d", world);
    zg_model_preset("tiny", &m, &e);
    zg_cluster_preset(cname, &cl, &e);
    zg_bucket bk[2];
    memset(bk, 0, sizeof bk);
    snprintf(bk[0].name, sizeof bk[0].name, "img");
    bk[0].kind = ZG_SEQ_IMAGE, bk[0].frames = 1, bk[0].height = 64, bk[0].width = 64;
    snprintf(bk[1].name, sizeof bk[1].name, "vid");
    bk[1].kind = ZG_SEQ_VIDEO, bk[1].frames = 9, bk[1].height = 64, bk[1].width = 64;
    for (int i = 0; i < 2; i++) bk[i].tokens = zg_model_tokens(&m, bk[i].frames, bk[i].height, bk[i].width);
    zg_catalog cat = {2, bk};
    zg_profile_opts o;
    zg_profile_opts_default(&o);
    o.warmup = 0;
    o.reps = 1;
    o.method = method;
    o.calib.plans = 8, o.calib.images = 3;  // a small design: this checks plumbing, not fit
    zg_cost_table t;
    int bad = zg_profile_measure(zgmpi_comm, &m, &cl, &cat, &o, &t, &e) != ZG_OK;
    if (bad) fprintf(stderr, "[%d] %s\n", zgmpi_comm->rank, e.msg);
    int32_t want = 0;
    zg_config *cfgs = NULL;
    int32_t nc = 0;
    zg_config_enumerate(&m, world, &cfgs, &nc, NULL);
    for (int b = 0; b < 2; b++)
        for (int32_t c = 0; c < nc; c++) want += !zg_config_check(&m, world, cfgs[c], bk[b].tokens, NULL);
    free(cfgs);
    int prices_ok = !bad && t.n == want && t.world_size == world && t.overhead_s >= 0;
    for (int32_t i = 0; !bad && i < t.n; i++)
        prices_ok &= isfinite(t.e[i].time) && t.e[i].time >= 0 &&
                     (method == ZG_PROFILE_MIXED || t.e[i].peak > 0);
    if (!bad && method != ZG_PROFILE_SINGLE) {  // the fit's settings are recorded
        const cJSON *set = cJSON_GetObjectItemCaseSensitive(t.extra, "settings");
        prices_ok &= cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(set, "calib_plans")) &&
                     cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(set, "fit_rmse_s"));
        if (method == ZG_PROFILE_HYBRID)
            prices_ok &= cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(set, "hybrid_scale"));
    }
    // fidelity design on the measured table: memory is deterministic, so compare it
    zg_pricer pr = {0};
    zg_fidelity_plan *plans = NULL;
    int32_t n = 0;
    double worst_mem = 1;
    if (!bad && !zg_cost_table_init(&pr, &t, &m, &cl, &e)) {
        zg_fidelity_opts fo;
        zg_fidelity_opts_default(&fo);
        fo.images = 3, fo.min_mixed = 1, fo.corners = 1;
        if (!zg_fidelity_design(&m, &cl, &cat, &pr, t.overhead_s, &fo, &plans, &n, &e)) {
            zg_profile_item *items = calloc((size_t)n, sizeof *items);
            double *peaks = calloc((size_t)n, sizeof *peaks);
            zg_train_opts to;
            zg_train_opts_default(&to);
            zg_trainer tr;
            if (items && peaks && !zg_trainer_init(&tr, &m, zgmpi_comm, &to, &e)) {
                for (int32_t i = 0; i < n; i++) items[i] = plans[i].item;
                if (!zg_profile_run_rounds(&tr, items, n, 0, 1, ZG_PROFILE_CLOCK_WALL, NULL, peaks,
                                           NULL, NULL, &e)) {
                    worst_mem = 0;
                    for (int32_t i = 0; i < n; i++)
                        worst_mem = fmax(worst_mem, fabs(plans[i].pred_mem - peaks[i]) / peaks[i]);
                }
                zg_trainer_free(&tr);
            }
            free(items), free(peaks);
        }
    }
    zg_fidelity_free(plans, n);
    zg_pricer_free(&pr);
    double fit = bad ? 1 : t.mem_fit_max_err;
    if (!bad) zg_cost_table_free(&t);
    CHECK(!bad);
    CHECK_MSG(prices_ok, "%d prices for %d legal pairs", t.n, want);
    CHECK_MSG(fit < 1e-3, "memory fit error %.3g", fit);
    CHECK_MSG(n >= 2 && worst_mem < 0.01, "%d plans, worst memory error %.3g", n, worst_mem);
}

ZG_TEST(profile_single_and_memory_fidelity) {
    profile_and_memory_fidelity(zg_failed_, ZG_PROFILE_SINGLE);
}

ZG_TEST(profile_mixed_and_memory_fidelity) {
    profile_and_memory_fidelity(zg_failed_, ZG_PROFILE_MIXED);
}

ZG_TEST(profile_hybrid_and_memory_fidelity) {
    profile_and_memory_fidelity(zg_failed_, ZG_PROFILE_HYBRID);
}

ZG_TEST(profile_rejects_a_mismatched_cluster) {
    zg_error e = {0};
    zg_model m;
    zg_cluster cl;
    zg_model_preset("tiny", &m, &e);
    zg_cluster_preset("cpu:7", &cl, &e);
    zg_bucket bk = {"img", ZG_SEQ_IMAGE, 1, 64, 64, 16};
    zg_catalog cat = {1, &bk};
    zg_profile_opts o;
    zg_profile_opts_default(&o);
    zg_cost_table t;
    zg_status st = zg_profile_measure(zgmpi_comm, &m, &cl, &cat, &o, &t, &e);
    CHECK(zgmpi_comm->size == 7 || (st == ZG_ERR_INVALID && strstr(e.msg, "cpu:7")));
    if (!st) zg_cost_table_free(&t);
}

ZG_MPITEST_MAIN()
