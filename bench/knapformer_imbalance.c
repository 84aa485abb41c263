// knapformer_imbalance.c — KnapFormer's modelled imbalance on its three Flux mixes
// (reference knapformer.md §3.2/§3.4): 32 ranks, layouts g1n32/g2n16/g4n8/g8n4, d = 3072,
// gamma 0.4 (and joint at gamma 1.0), 50 seeded steps per cell with one persistent balancer per
// (mix, layout), as one SequenceBalancer object lives through a run. Prints the mean original
// and balanced max/min estimated per-GPU workload (§2.7) next to §3.4's figures, and one JSON line.
//
// Usage: bench_knapformer_imbalance [--steps N] [--seed S]
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "plan/knapformer.h"
#include "workload/workload.h"

#define WORLD 32
#define D_MODEL 3072
#define N_LAYOUTS 4

typedef struct mix_row {
    const char *name;
    const char *codes;
    double gamma;
    const char *ref[1 + N_LAYOUTS]; // §3.4 as printed there: original, g1n32 .. g8n4
} mix_row;

static const char *layouts[N_LAYOUTS] = {"g1n32", "g2n16", "g4n8", "g8n4"};

static const mix_row rows[] = {
    {"lowres", "g32b32i256f1s0", 0.4, {"1.21", "1.0009", "1.0003", "1.0001", "1.0000"}},
    {"mixres",
     "g16b4i256f1s0,g4b5i512f1s0,g4b5i1024f1s0,g8b1i2048f1s0",
     0.4,
     {"17.1", "3.88", "1.28", "1.005", "1.0005"}},
    {"joint",
     "g8b4i256f1s0,g2b5i512f1s0,g2b5i1024f1s0,g4b1i2048f1s0,g1b10i256f4s0,g3b1i512f4s0,"
     "g8b2i256f85s1,g4b1i512f85s1",
     0.4,
     {"28.1", "4.58", "1.61", "1.004", "1.002"}},
    {"joint",
     "g8b4i256f1s0,g2b5i512f1s0,g2b5i1024f1s0,g4b1i2048f1s0,g1b10i256f4s0,g3b1i512f4s0,"
     "g8b2i256f85s1,g4b1i512f85s1",
     1.0,
     {"42.9", "6.19", "2.05", "1.003", "1.001"}},
};
#define N_ROWS ((int)(sizeof rows / sizeof rows[0]))

// A §3.4 figure and half a unit of its last printed digit (its rounding).
static double ref_value(const char *s, double *half_unit) {
    const char *dot = strchr(s, '.');
    int decimals = dot ? (int)strlen(dot + 1) : 0;
    *half_unit = 0.5 * pow(10.0, -decimals);
    return strtod(s, NULL);
}

typedef struct cell {
    double mean, sd; // over steps
    int64_t ok, failed, fallbacks;
} cell;

// Distance to the reference in noise units: both figures are 50-step means from different RNGs,
// so the difference has sd ~ sd_step * sqrt(2 / steps); the reference is also rounded. Returns
// max(0, |ours - ref| - half_unit) / (sd_step * sqrt(2 / steps)); "within noise" is <= 3.
static double noise_z(const cell *c, const char *ref) {
    double half, v = ref_value(ref, &half);
    double dist = fabs(c->mean - v) - half;
    if (dist <= 0) return 0;
    double se = c->sd * sqrt(2.0 / (double)(c->ok ? c->ok : 1));
    return se > 0 ? dist / se : INFINITY;
}

static void add_stats(cell *c, const double *v, int64_t n) {
    double s = 0, ss = 0;
    for (int64_t i = 0; i < n; i++)
        s += v[i];
    c->mean = n ? s / (double)n : NAN;
    for (int64_t i = 0; i < n; i++)
        ss += (v[i] - c->mean) * (v[i] - c->mean);
    c->sd = n > 1 ? sqrt(ss / (double)(n - 1)) : 0;
}

// Runs `steps` steps of one mix on one layout; orig (may be NULL) collects original ratios.
static zg_status run_cell(const zg_knap_code *codes, int32_t n_codes, const char *spec,
                          double gamma, int64_t steps, uint64_t seed, cell *bal, cell *orig,
                          zg_error *err) {
    zg_knap_layout l;
    zg_knap_balancer b;
    zg_status st = zg_knap_layout_parse(spec, &l, err);
    if (st) return st;
    int32_t reps = 0;
    if ((st = zg_knap_layout_replicas(&l, WORLD, &reps, err)) || reps != 1) {
        zg_knap_layout_free(&l);
        return st ? st : zg_error_set(err, ZG_ERR_INVALID, "%s: expected one balance group", spec);
    }
    if ((st = zg_knap_balancer_init(&b, &l, D_MODEL, gamma, ZG_KNAP_COST_FLOPS, err))) {
        zg_knap_layout_free(&l);
        return st;
    }
    double *vb = calloc((size_t)steps, sizeof *vb), *vo = calloc((size_t)steps, sizeof *vo);
    int64_t *len = NULL;
    int32_t *gpu = NULL;
    memset(bal, 0, sizeof *bal);
    if (!vb || !vo) st = zg_error_set(err, ZG_ERR_NOMEM, "out of memory");
    for (int64_t s = 0; s < steps && !st; s++) {
        zg_batch batch;
        if ((st = zg_knap_codes_sample(codes, n_codes, WORLD, seed, s, &batch, err))) break;
        int64_t *nl = realloc(len, (size_t)(batch.n ? batch.n : 1) * sizeof *len);
        int32_t *ng = nl ? realloc(gpu, (size_t)(batch.n ? batch.n : 1) * sizeof *gpu) : NULL;
        if (nl) len = nl;
        if (ng) gpu = ng;
        if (!nl || !ng) {
            zg_batch_free(&batch);
            st = zg_error_set(err, ZG_ERR_NOMEM, "out of memory");
            break;
        }
        for (int64_t i = 0; i < batch.n; i++) {
            len[i] = batch.seqs[i].tokens; // text + visual: KnapFormer's packed length
            gpu[i] = batch.seqs[i].origin_rank;
        }
        zg_knap_routing r;
        zg_error serr = {0};
        if (zg_knap_plan_routing(&b, len, gpu, batch.n, &r, &serr) == ZG_OK) {
            vb[bal->ok] = r.bal_ratio;
            vo[bal->ok] = r.orig_ratio;
            bal->ok++;
            bal->fallbacks += r.n_fallbacks;
            zg_knap_routing_free(&r);
        } else { // the reference would crash here (KeyError / ZeroDivisionError): count it
            bal->failed++;
            fprintf(stderr, "%s gamma %g step %lld: %s\n", spec, gamma, (long long)s, serr.msg);
        }
        zg_batch_free(&batch);
    }
    if (!st) {
        add_stats(bal, vb, bal->ok);
        if (orig) {
            *orig = *bal;
            add_stats(orig, vo, bal->ok);
        }
    }
    free(vb);
    free(vo);
    free(len);
    free(gpu);
    zg_knap_balancer_free(&b);
    zg_knap_layout_free(&l);
    return st;
}

int main(int argc, char **argv) {
    int64_t steps = 50;
    uint64_t seed = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--steps") && i + 1 < argc) {
            steps = atoll(argv[++i]);
        } else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
            seed = strtoull(argv[++i], NULL, 10);
        } else {
            int help = !strcmp(argv[i], "--help") || !strcmp(argv[i], "-h");
            fprintf(help ? stdout : stderr,
                    "usage: %s [--steps N (default 50)] [--seed S (default 1)]\n", argv[0]);
            return help ? 0 : 1;
        }
    }
    if (steps < 1 || steps > 100000) {
        fprintf(stderr, "bench_knapformer_imbalance: --steps %lld is outside 1..100000\n",
                (long long)steps);
        return 1;
    }
    cell res[N_ROWS][1 + N_LAYOUTS];
    zg_error err = {0};
    double t0 = zg_time_now();
    for (int r = 0; r < N_ROWS; r++) {
        zg_knap_code *codes = NULL;
        int32_t nc = 0;
        if (zg_knap_codes_parse(rows[r].codes, &codes, &nc, &err))
            return zb_fail("bench_knapformer_imbalance", &err);
        for (int k = 0; k < N_LAYOUTS; k++) {
            zg_status st = run_cell(codes, nc, layouts[k], rows[r].gamma, steps, seed,
                                    &res[r][1 + k], k == 0 ? &res[r][0] : NULL, &err);
            if (st) {
                fprintf(stderr, "bench_knapformer_imbalance: %s %s: %s\n", rows[r].name, layouts[k],
                        err.msg);
                free(codes);
                return 1;
            }
        }
        free(codes);
    }
    double elapsed = zg_time_now() - t0;

    printf(
        "KnapFormer modelled imbalance, mean max/min estimated per-GPU workload over %lld "
        "steps\n(32 ranks, d=%d, seed %llu; 'ref' = reference knapformer.md s3.4, Python RNG)\n\n",
        (long long)steps, D_MODEL, (unsigned long long)seed);
    printf("%-14s %-5s %9s", "mix", "", "original");
    for (int k = 0; k < N_LAYOUTS; k++)
        printf(" %9s", layouts[k]);
    printf("\n");
    int outside = 0;
    for (int r = 0; r < N_ROWS; r++) {
        char label[32];
        snprintf(label, sizeof label, "%s g=%.1f", rows[r].name, rows[r].gamma);
        printf("%-14s %-5s", label, "ours");
        for (int k = 0; k <= N_LAYOUTS; k++)
            printf(" %9.4f", res[r][k].mean);
        printf("\n%-14s %-5s", "", "sd");
        for (int k = 0; k <= N_LAYOUTS; k++)
            printf(" %9.4f", res[r][k].sd);
        printf("\n%-14s %-5s", "", "ref");
        for (int k = 0; k <= N_LAYOUTS; k++)
            printf(" %9s", rows[r].ref[k]);
        printf("\n%-14s %-5s", "", "z");
        for (int k = 0; k <= N_LAYOUTS; k++) {
            double z = noise_z(&res[r][k], rows[r].ref[k]);
            printf(" %9.1f", z);
            if (z > 3) outside++;
        }
        printf("\n");
    }
    int64_t failed = 0, fallbacks = 0;
    for (int r = 0; r < N_ROWS; r++)
        for (int k = 1; k <= N_LAYOUTS; k++) {
            failed += res[r][k].failed;
            fallbacks += res[r][k].fallbacks;
        }
    printf("\nsd = standard deviation over steps; z = (|ours - ref| - ref rounding) / "
           "(sd * sqrt(2 / steps)), 0 inside the rounding;\n%d of %d cells beyond z = 3. "
           "failed steps (reference: KeyError/ZeroDivisionError): %lld; fallback placements: "
           "%lld; %.2f s\n\n",
           outside, N_ROWS * (1 + N_LAYOUTS), (long long)failed, (long long)fallbacks, elapsed);

    printf("{\"bench\":\"knapformer_imbalance\",\"world\":%d,\"d_model\":%d,\"steps\":%lld,"
           "\"seed\":%llu,\"failed_steps\":%lld,\"cells_beyond_z3\":%d,\"rows\":[",
           WORLD, D_MODEL, (long long)steps, (unsigned long long)seed, (long long)failed, outside);
    for (int r = 0; r < N_ROWS; r++) {
        printf("%s{\"mix\":\"%s\",\"gamma\":%.1f,\"original\":%.6g,\"original_sd\":%.4g,"
               "\"ref_original\":%s,\"z_original\":%.2f",
               r ? "," : "", rows[r].name, rows[r].gamma, res[r][0].mean, res[r][0].sd,
               rows[r].ref[0], noise_z(&res[r][0], rows[r].ref[0]));
        for (int k = 0; k < N_LAYOUTS; k++)
            printf(",\"%s\":%.6g,\"%s_sd\":%.4g,\"ref_%s\":%s,\"z_%s\":%.2f,"
                   "\"%s_fallbacks\":%lld",
                   layouts[k], res[r][1 + k].mean, layouts[k], res[r][1 + k].sd, layouts[k],
                   rows[r].ref[1 + k], layouts[k], noise_z(&res[r][1 + k], rows[r].ref[1 + k]),
                   layouts[k], (long long)res[r][1 + k].fallbacks);
        printf("}");
    }
    printf("]}\n");
    return failed ? 2 : 0;
}
