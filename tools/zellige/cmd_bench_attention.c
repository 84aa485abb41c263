// cmd_bench_attention.c — `zellige bench attention [--json]`: GFLOP/s of the CPU attention
// kernels against OpenBLAS SGEMM on comparable shapes, measured in the same run, and against
// PyTorch's scaled_dot_product_attention when a Python with torch is available. The measurement
// is zg_attn_bench_run (src/kernels/attn_bench.c); this file parses options, runs the PyTorch
// helper process and the SGEMM re-run with the OpenBLAS variables unset (its hooks), and prints.
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "kernels/kernels.h"

// Re-runs this binary's SGEMM measurement with OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE unset
// (OpenBLAS reads them when it loads, so it must be a fresh process). -1 if it failed.
static double sgemm_env_unset(void *ctx, int64_t T, int64_t threads) {
    (void)ctx;
    int fd[2];
    if (pipe(fd)) return -1.0;
    pid_t pid = fork();
    if (pid < 0) return -1.0;
    if (pid == 0) {
        close(fd[0]);
        dup2(fd[1], STDOUT_FILENO);
        unsetenv("OPENBLAS_CORETYPE");
        unsetenv("OPENBLAS_L2_SIZE");
        char tok[32], thr[32];
        snprintf(tok, sizeof tok, "%lld", (long long)T);
        snprintf(thr, sizeof thr, "%lld", (long long)threads);
        execl("/proc/self/exe", "zellige", "bench", "attention", "--threads", thr, "--sgemm-only",
              tok, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    char buf[128] = {0};
    ssize_t got = read(fd[0], buf, sizeof buf - 1);
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (got <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1.0;
    return atof(buf);
}

// --- PyTorch ---------------------------------------------------------------------------------

// The helper runs as a server (one torch import), so each torch timing is taken right next to
// the C kernel's timing of the same case: on a shared machine the load changes by the minute.
typedef struct torch_srv {
    pid_t pid;
    FILE *to, *from;
    char version[64];
} torch_srv;

static int torch_start(const char *python, const char *script, int64_t heads_, int64_t threads_,
                       torch_srv *t) {
    int in[2], out[2];
    memset(t, 0, sizeof *t);
    if (pipe(in)) return 0;
    if (pipe(out)) {
        close(in[0]), close(in[1]);
        return 0;
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(in[0]), close(in[1]), close(out[0]), close(out[1]);
        return 0;
    }
    if (pid == 0) { // child: stdin <- in[0], stdout -> out[1], stderr discarded
        dup2(in[0], STDIN_FILENO), dup2(out[1], STDOUT_FILENO);
        FILE *null = freopen("/dev/null", "w", stderr);
        (void)null;
        close(in[0]), close(in[1]), close(out[0]), close(out[1]);
        char heads[32], threads[32];
        snprintf(heads, sizeof heads, "%lld", (long long)heads_);
        snprintf(threads, sizeof threads, "%lld", (long long)threads_);
        execlp(python, python, script, "--serve", "--heads", heads, "--threads", threads,
               (char *)NULL);
        _exit(127);
    }
    close(in[0]), close(out[1]);
    t->pid = pid, t->to = fdopen(in[1], "w"), t->from = fdopen(out[0], "r");
    char line[256];
    cJSON *j = t->to && t->from && fgets(line, sizeof line, t->from) ? cJSON_Parse(line) : NULL;
    const cJSON *v = j ? cJSON_GetObjectItem(j, "torch") : NULL;
    int ok = cJSON_IsString(v) && cJSON_IsTrue(cJSON_GetObjectItem(j, "ready"));
    if (ok) snprintf(t->version, sizeof t->version, "%s", v->valuestring);
    cJSON_Delete(j);
    if (!ok) {
        if (t->to) fclose(t->to);
        if (t->from) fclose(t->from);
        waitpid(pid, NULL, 0);
        memset(t, 0, sizeof *t);
    }
    return ok;
}

static double torch_measure(void *ctx, int64_t T, int32_t D) {
    torch_srv *t = ctx;
    if (!t->pid) return -1.0;
    char line[512];
    fprintf(t->to, "%lld %d\n", (long long)T, D);
    fflush(t->to);
    if (!fgets(line, sizeof line, t->from)) return -1.0;
    cJSON *j = cJSON_Parse(line);
    const cJSON *g = j ? cJSON_GetObjectItem(j, "fwd_gflops") : NULL;
    double r = cJSON_IsNumber(g) ? g->valuedouble : -1.0;
    cJSON_Delete(j);
    return r;
}

static void torch_stop(torch_srv *t) {
    if (!t->pid) return;
    fclose(t->to), fclose(t->from); // EOF on its stdin ends the helper
    waitpid(t->pid, NULL, 0);
    t->pid = 0;
}

// --- output ------------------------------------------------------------------------------------

static void print_json(const zg_attn_bench_result *r, const char *torch_version) {
    printf("{\"isa\":\"%s\",\"peak_gflops\":%.2f,\"peak_isa\":\"%s\",\"threads\":%lld,"
           "\"heads\":%lld,\"headline_tokens_min\":%lld,"
           "\"fwd_gflops\":%.2f,\"bwd_gflops\":%.2f,\"pack_fwd_gflops\":%.2f,"
           "\"pack_bwd_gflops\":%.2f,\"pack_tokens\":%lld,\"sgemm_gflops\":%.2f,"
           "\"sgemm_square_gflops\":%.2f,",
           r->isa, r->peak, r->peak_isa, (long long)r->threads, (long long)r->heads,
           (long long)r->headline_tokens, r->fwd, r->bwd, r->pack_fwd, r->pack_bwd,
           (long long)r->pack_tokens, r->sgemm, r->sgemm_square);
    if (r->env_set)
        printf("\"sgemm_gflops_env\":%.2f,\"sgemm_gflops_env_unset\":%.2f,", r->sgemm_env,
               r->sgemm_env_unset);
    if (r->n_torch)
        printf("\"torch_fwd_gflops\":%.2f,\"torch\":\"%s\",", r->torch_fwd, torch_version);
    else
        printf("\"torch_fwd_gflops\":null,");
    printf("\"fwd_vs_sgemm\":%.3f,\"bwd_vs_sgemm\":%.3f,\"pack_vs_sgemm\":%.3f,", r->fwd_vs_sgemm,
           r->bwd_vs_sgemm, r->pack_vs_sgemm);
    printf("\"fwd_vs_peak\":%.3f,\"bwd_vs_peak\":%.3f,\"pack_vs_peak\":%.3f,"
           "\"sgemm_vs_peak\":%.3f,",
           r->fwd / r->peak, r->bwd / r->peak, r->pack_fwd / r->peak, r->sgemm / r->peak);
    if (r->n_torch)
        printf("\"fwd_vs_torch\":%.3f,", r->fwd_vs_torch);
    else
        printf("\"fwd_vs_torch\":null,");
    printf("\"max_rel_err\":%.3g,\"bwd_max_rel_err\":%.3g,\"rows\":[", r->max_err, r->bwd_err);
    for (int i = 0; i < r->n_rows; i++) {
        const zg_attn_bench_row *w = &r->rows[i];
        printf("%s{\"kind\":\"%s\",\"tokens\":%lld,\"dim\":%d,\"fwd_gflops\":%.2f,"
               "\"sgemm_gflops\":%.2f",
               i ? "," : "", w->kind, (long long)w->tokens, w->dim, w->fwd, w->sgemm);
        if (w->bwd > 0) printf(",\"bwd_gflops\":%.2f", w->bwd);
        if (w->torch_fwd > 0) printf(",\"torch_fwd_gflops\":%.2f", w->torch_fwd);
        printf("}");
    }
    printf("]}\n");
}

static void print_table(const zg_attn_bench_result *r) {
    printf("attention kernels: isa %s, %lld threads, %lld heads\n", r->isa, (long long)r->threads,
           (long long)r->heads);
    printf("machine FP32 peak (register-only %s FMA loop, %lld threads): %.1f GFLOP/s\n",
           r->peak_isa, (long long)r->threads, r->peak);
    printf("%-7s %7s %4s %9s %9s %9s %9s %8s %8s %8s\n", "kind", "tokens", "D", "fwd GF/s",
           "bwd GF/s", "SGEMM", "torch", "fwd/gemm", "bwd/gemm", "fwd/torch");
    for (int i = 0; i < r->n_rows; i++) {
        const zg_attn_bench_row *w = &r->rows[i];
        char tb[16] = "-", bb[16] = "-", bg[16] = "-", ft[16] = "-";
        if (w->torch_fwd > 0)
            snprintf(tb, sizeof tb, "%.1f", w->torch_fwd),
                snprintf(ft, sizeof ft, "%.2fx", w->fwd / w->torch_fwd);
        if (w->bwd > 0)
            snprintf(bb, sizeof bb, "%.1f", w->bwd),
                snprintf(bg, sizeof bg, "%.0f%%", 100 * w->bwd / w->sgemm);
        printf("%-7s %7lld %4d %9.1f %9s %9.1f %9s %7.0f%% %8s %8s\n", w->kind,
               (long long)w->tokens, w->dim, w->fwd, bb, w->sgemm, tb, 100 * w->fwd / w->sgemm, bg,
               ft);
    }
    printf("SGEMM: per row, the attention GEMM shapes of one head (T<=4096) measured right after "
           "the row; at the end: %.1f GFLOP/s at T=%lld, square 2048^3 %.1f\n",
           r->sgemm_env, (long long)r->gemm_tokens, r->sgemm_square);
    if (r->env_set)
        printf("SGEMM with OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE unset: %.1f (ceilings x%.2f)\n",
               r->sgemm_env_unset, r->env_factor);
    printf("headline (T >= %lld): fwd %.1f GF/s = %.0f%% of SGEMM, bwd %.1f = %.0f%%, pack fwd "
           "%.1f = %.0f%%",
           (long long)r->headline_tokens, r->fwd, 100 * r->fwd_vs_sgemm, r->bwd,
           100 * r->bwd_vs_sgemm, r->pack_fwd, 100 * r->pack_vs_sgemm);
    if (r->n_torch)
        printf(", torch fwd %.1f (ours %.2fx)\n", r->torch_fwd, r->fwd_vs_torch);
    else
        printf(", torch: absent\n");
    printf("as fraction of the FP32 peak %.1f: fwd %.0f%%, bwd %.0f%%, pack fwd %.0f%%, SGEMM "
           "%.0f%%\n",
           r->peak, 100 * r->fwd / r->peak, 100 * r->bwd / r->peak, 100 * r->pack_fwd / r->peak,
           100 * r->sgemm / r->peak);
    printf("max rel err vs reference: fwd %.3g, bwd %.3g\n", r->max_err, r->bwd_err);
}

// --- the command ---------------------------------------------------------------------------------

static const char *header =
    "usage: zellige bench attention [--json] [--quick] [--max-tokens N] [--shard N]\n"
    "                               [--heads H] [--threads N] [--python PY]\n"
    "                               [--torch-script FILE] [--no-torch]\n"
    "CPU attention kernels (fwd/bwd GFLOP/s; fwd = 4*Lq*Lk*D*H flops, bwd = 2.5x) on single\n"
    "sequences and a coalesced pack (50 images x 1560 tokens + 3 shards), head dims 64 and 128;\n"
    "OpenBLAS SGEMM on the attention GEMM shapes in the same run (also with\n"
    "OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE unset when they are set); PyTorch\n"
    "scaled_dot_product_attention through the helper script when PY imports torch; the\n"
    "machine's FP32 peak (register-only FMA loop, all threads, widest ISA).\n\n";
static const char *footer =
    "\nZG_KERNELS_ISA=auto|scalar|avx2|avx512 forces the kernels' ISA (JSON \"isa\").\n";

static void on_row(void *ctx, const zg_attn_bench_row *w) {
    (void)ctx;
    if (!strcmp(w->kind, "single"))
        fprintf(stderr, "  single T=%lld D=%d done\n", (long long)w->tokens, w->dim);
    else
        fprintf(stderr, "  pack D=%d done\n", w->dim);
}

// The helper sits next to this file: <root>/tools/zellige/, the binary in <root>/<build>/bin.
static const char *default_torch_script(char *buf, size_t sz) {
    char exe[4096] = {0};
    ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash = l > 0 ? strrchr(exe, '/') : NULL;
    if (slash) *slash = 0;
    snprintf(buf, sz, "%s/../../tools/zellige/bench_attention_torch.py", exe);
    return buf;
}

static int cmd_bench_attention(int argc, char **argv) {
    zg_attn_bench_opts o;
    zg_attn_bench_opts_default(&o);
    const char *py = getenv("ZG_PYTHON"), *script = NULL;
    const char *python = py && *py ? py : "python3";
    int32_t json = 0, no_torch = 0;
    int64_t sgemm_only = 0;
    char buf[4096];
    zg_error err = {0};
    const cli_opt opts[] = {
        CLI_OPT_JSON(&json, "print one JSON line instead of the table"),
        CLI_FLAG_OPT("--quick", &o.quick, "--max-tokens at most 1024, --shard at most 2048"),
        CLI_INT_OPT("--max-tokens", "N", &o.max_tokens, 256, 65536,
                    "single sequences 256..N tokens, doubling (default 4096)"),
        CLI_INT_OPT("--shard", "N", &o.shard, 1, 65536,
                    "tokens of each video shard in the pack (default 8192)"),
        CLI_INT_OPT("--heads", "H", &o.heads, 1, 64, "attention heads (default 12)"),
        CLI_INT_OPT("--threads", "N", &o.threads, 0, 1024,
                    "kernels, OpenBLAS and torch threads (default: OpenMP's)"),
        CLI_STR_OPT("--python", "PY", &python,
                    "Python for the torch helper (default $ZG_PYTHON "
                    "or python3)"),
        CLI_STR_OPT("--torch-script", "FILE", &script,
                    "the torch helper (default tools/zellige/bench_attention_torch.py)"),
        CLI_FLAG_OPT("--no-torch", &no_torch, "skip PyTorch"),
        CLI_INT_OPT("--sgemm-only", "T", &sgemm_only, 1, 65536, NULL), // sgemm_env_unset's run
        CLI_OPT_END,
    };
    const cli_spec spec = {"bench attention", header, opts, footer};
    cli_result pr = cli_parse(&spec, argc, argv, &err);
    if (pr != CLI_PARSED) return cli_parse_exit(&spec, pr, &err);
    if (sgemm_only) {
        double sq = 0.0, c = zg_attn_bench_sgemm(sgemm_only, o.threads, o.square, &sq, &err);
        printf("%.3f\n", c > sq ? c : sq);
        return c < 0;
    }
    if (!script) script = default_torch_script(buf, sizeof buf);
    o.threads = zg_attn_bench_threads(o.threads); // the torch helper gets the run's threads
    signal(SIGPIPE, SIG_IGN); // a torch helper that dies must not kill the benchmark
    torch_srv torch;
    int have_torch = !no_torch && torch_start(python, script, o.heads, o.threads, &torch);
    if (have_torch) o.torch_fwd = torch_measure;
    o.sgemm_env_unset = sgemm_env_unset;
    o.on_row = json ? NULL : on_row;
    o.ctx = &torch;
    zg_attn_bench_result r;
    zg_status st = zg_attn_bench_run(&o, &r, &err);
    if (have_torch) torch_stop(&torch);
    if (st) return cli_fail("bench attention", &err);
    if (json)
        print_json(&r, torch.version);
    else
        print_table(&r);
    return 0;
}

static int cmd_bench(int argc, char **argv) {
    if (argc >= 2 && cli_is_help(argv[1])) {
        printf("usage: zellige bench <kind> [options]\n  kinds: attention\n");
        return 0;
    }
    if (argc < 2) {
        fprintf(stderr, "zellige bench: give a kind: attention (see zellige bench --help)\n");
        return 2;
    }
    if (!strcmp(argv[1], "attention")) return cmd_bench_attention(argc - 1, argv + 1);
    fprintf(stderr, "zellige bench: unknown kind '%s'; give one of attention (see zellige bench "
                    "--help)\n",
            argv[1]);
    return 2;
}

ZG_CLI_COMMAND(bench, "bench", "benchmarks: `bench attention` (CPU attention kernels vs SGEMM)",
               cmd_bench)
