// cmd_profile_device.c — `zellige profile-device`: a measured device row for the analytic cost
// model (docs/profiler.md "Device rows"). The work is zg_devrow_run (src/profile/device.c); this
// file parses options, reports progress on stderr, prints the row and writes the JSON.
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "profile/profile.h"

static const char *header =
    "usage: zellige profile-device --out FILE [options]\n"
    "Measures the analytic cost model's device row on this machine: the model's attention\n"
    "(one sequence of n tokens, n_heads x head_dim) forward and backward and its DiT block's\n"
    "GEMMs (forward, dX, dW) at each local token count n, FLOPs counted as the cost model\n"
    "counts them, then fits rate(n) = peak * eff * n / (n + half) per family against the\n"
    "cluster device's peak_flops. Backends: cpu (the fast CPU attention kernels and OpenBLAS\n"
    "SGEMM, fp32) and cuda (the bf16 tensor-core attention kernels and cuBLAS bf16 GEMMs,\n"
    "fp32 accumulation; needs a GPU). Progress on stderr; the row is written atomically and\n"
    "is given to plan, simulate and train --plan-only with --device-row FILE.\n\n";

static void on_sample(void *ctx, const zg_devrow_sample *s, int32_t i, int32_t n, double peak) {
    (void)ctx;
    double f = s->attn_fwd_flops / s->attn_fwd_s, b = s->attn_bwd_flops / s->attn_bwd_s,
           g = s->gemm_flops / s->gemm_s;
    fprintf(stderr,
            "profile-device: [%d/%d] %lld tokens: attention fwd %.4g (%.1f%%) bwd %.4g (%.1f%%), "
            "GEMMs %.4g (%.1f%%) GFLOP/s of peak %.4g\n",
            i + 1, n, (long long)s->tokens, f / 1e9, 100 * f / peak, b / 1e9, 100 * b / peak,
            g / 1e9, 100 * g / peak, peak / 1e9);
}

static void print_row(const zg_devrow_result *r, const char *out) {
    double peak = r->cluster.peak_flops;
    printf("profile-device: model %s, device %s (cluster %s, peak %.4g GFLOP/s), backend %s "
           "(%s, attention %s), %.1f s\n",
           r->model.name, r->cluster.device, r->cluster.name, peak / 1e9, r->backend, r->dtype,
           r->attn_kernel, r->elapsed_s);
    if (r->gpu[0]) printf("GPU: %s\n", r->gpu);
    printf("%8s %12s %12s %12s %12s %12s %12s\n", "tokens", "attn_fwd_ms", "fwd_GFLOP/s",
           "attn_bwd_ms", "bwd_GFLOP/s", "gemm_ms", "gemm_GFLOP/s");
    for (int32_t i = 0; i < r->n; i++) {
        const zg_devrow_sample *s = &r->s[i];
        printf("%8lld %12.3f %12.4g %12.3f %12.4g %12.3f %12.4g\n", (long long)s->tokens,
               1e3 * s->attn_fwd_s, s->attn_fwd_flops / s->attn_fwd_s / 1e9, 1e3 * s->attn_bwd_s,
               s->attn_bwd_flops / s->attn_bwd_s / 1e9, 1e3 * s->gemm_s,
               s->gemm_flops / s->gemm_s / 1e9);
    }
    const zg_cost_device *m = &r->row, *b = &r->builtin;
    printf("%-10s %12s %12s %10s %11s %11s\n", "row", "attn_fwd_eff", "attn_bwd_eff", "gemm_eff",
           "attn_half", "gemm_half");
    printf("%-10s %12.4f %12.4f %10.4f %11.1f %11.1f\n", "measured", m->attn_fwd_eff,
           m->attn_bwd_eff, m->gemm_eff, m->attn_half, m->gemm_half);
    printf("%-10s %12.4f %12.4f %10.4f %11.1f %11.1f\n", "built-in", b->attn_fwd_eff,
           b->attn_bwd_eff, b->gemm_eff, b->attn_half, b->gemm_half);
    printf("fit: largest relative residual attention fwd %.1f%%, bwd %.1f%%, GEMMs %.1f%%\n",
           100 * r->max_rel[0], 100 * r->max_rel[1], 100 * r->max_rel[2]);
    printf("wrote %s\n", out);
}

static int run_profile_device(int argc, char **argv) {
    zg_devrow_opts o;
    zg_devrow_opts_default(&o);
    const char *out = NULL, *tokens = NULL;
    int32_t quiet = 0;
    zg_error err = {0};
    const cli_opt opts[] = {
        CLI_OPT_MODEL(&o.model, "model preset or JSON (default wan2.1-1.3b)"),
        CLI_OPT_CLUSTER(&o.cluster,
                        "the device and peak_flops the row is for (default cpu:1 for cpu,\n"
                        "1x<GPU> for cuda, the GPU named by the runtime)"),
        CLI_CHOICE_OPT("--backend", "B", &o.backend, "cpu|cuda",
                       "cpu (default: fast CPU kernels + OpenBLAS, fp32) | cuda (bf16\n"
                       "tensor-core kernels + cuBLAS; needs a GPU)"),
        CLI_OUT_REQUIRED("--out", "FILE", &out, "device row JSON to write (required)"),
        CLI_STR_OPT("--tokens", "LIST", &tokens,
                    "comma list of local token counts, at least 2 (default cpu\n"
                    "128,256,512,1024,2048; cuda 256,512,...,65536)"),
        CLI_INT_OPT("--reps", "N", &o.reps, 1, 64, "timed windows per point (default 3)"),
        CLI_INT_OPT("--warmup", "N", &o.warmup, 0, 1000, "unmeasured calls per point (default cpu 1, cuda 2)"),
        CLI_CHOICE_OPT("--stat", "S", &o.stat, "median|min",
                       "median (default) | min: how windows are summarised"),
        CLI_NUM_OPT("--min-window", "S", &o.min_window_s, 0, 60,
                    "shortest timed window, seconds (default 0.02 cpu, 0.005 cuda)"),
        CLI_OPT_THREADS(&o.threads,
                        "cpu: OpenMP/OpenBLAS threads (default 1: a cpu:N rank is one core;\n"
                        "0: OpenMP's default)"),
        CLI_INT_OPT("--device", "N", &o.device, 0, 1024, "cuda: GPU index (default 0)"),
        CLI_OPT_SEED(&o.seed, "input values' seed (default 1)"),
        CLI_FLAG_OPT("--quiet", &quiet, "no table on stdout"),
        CLI_OPT_END,
    };
    const cli_spec spec = {"profile-device", header, opts, cli_cluster_footer()};
    cli_result pr = cli_parse(&spec, argc, argv, &err);
    if (pr != CLI_PARSED) return cli_parse_exit(&spec, pr, &err);
    int64_t list[ZG_DEVROW_MAX_SAMPLES];
    char *copy = NULL;
    if (tokens) {
        copy = strdup(tokens);
        char *parts[ZG_DEVROW_MAX_SAMPLES + 1];
        int np = copy ? cli_split_list(copy, parts, ZG_DEVROW_MAX_SAMPLES + 1) : 0;
        if (np > ZG_DEVROW_MAX_SAMPLES) {
            free(copy);
            zg_error_set(&err, ZG_ERR_INVALID, "--tokens '%s': more than %d token counts given",
                         tokens, ZG_DEVROW_MAX_SAMPLES);
            return cli_fail("profile-device", &err);
        }
        for (int i = 0; i < np; i++)
            if (!cli_int_value("--tokens", "LIST", "a token count in 1..1048576", parts[i], 1,
                               1 << 20, &list[i], &err)) {
                free(copy);
                return cli_fail("profile-device", &err);
            }
        free(copy);
        o.tokens = list, o.n_tokens = np;
        if (np < 2) {
            zg_error_set(&err, ZG_ERR_INVALID,
                         "--tokens '%s': %d token count given; the fit needs at least 2 (e.g. "
                         "--tokens 256,1024)",
                         tokens, np);
            return cli_fail("profile-device", &err);
        }
    }
    o.on_sample = on_sample;
    zg_devrow_result r;
    zg_status st = zg_devrow_run(&o, &r, &err);
    if (st) return cli_fail("profile-device", &err);
    cJSON *j = zg_devrow_to_json(&r);
    if (!j) {
        zg_error_set(&err, ZG_ERR_NOMEM, "out of memory building the device row JSON");
        return cli_fail("profile-device", &err);
    }
    st = zg_json_write_file(out, j, 1, &err);
    cJSON_Delete(j);
    if (st) return cli_fail("profile-device", &err);
    if (!quiet) print_row(&r, out);
    return 0;
}

ZG_CLI_COMMAND(profile_device, "profile-device",
               "measure the cost model's device row (attention, GEMMs) on this CPU or GPU",
               run_profile_device)
