// pricer.c — the pricer interface's helpers, analytic options and the per-device efficiency
// rows (every number is derived in docs/cost-model.md, "Efficiency").
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cost/cost.h"

#define MIB (1024.0 * 1024.0)
#define GIB (1024.0 * MIB)

void zg_pricer_free(zg_pricer *p) {
    if (!p) return;
    if (p->free_impl) p->free_impl(p);
    memset(p, 0, sizeof *p);
}

zg_status zg_pricer_price_list_of_block(const zg_pricer *p, const zg_seq *s, zg_config c,
                                        int32_t start, int32_t n, zg_price *out, zg_error *err) {
    if (n > 0 && (int64_t)start + n - 1 > INT32_MAX)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "pricing: rank block of %d ranks from %d passes rank %d", n, start,
                            INT32_MAX);
    if (n <= 0) return p->price(p, s, c, &start, n, out, err);  // an empty list: nothing read
    int32_t local[256], *ranks = local;  // n ranks; the heap beyond 256
    if (n > 256 && !(ranks = zg_calloc((size_t)n, sizeof *ranks, err))) return ZG_ERR_NOMEM;
    for (int32_t i = 0; i < n; i++) ranks[i] = start + i;
    zg_status st = p->price(p, s, c, ranks, n, out, err);
    if (ranks != local) free(ranks);
    return st;
}

void zg_cost_opts_default(zg_cost_opts *o) {
    *o = (zg_cost_opts){.act_ckpt = 1, .shard_weights = 1, .param_bytes = 2, .act_bytes = 2};
}

typedef struct device_row {
    const char *names[4];
    zg_cost_device d;
} device_row;

// attn_fwd, attn_bwd, gemm, attn_half, gemm_half, framework
static const device_row rows[] = {
    // A100/A800: FlashAttention-2 forward ~70% of 312 TFLOP/s, backward ~60%; GEMMs 60% with
    // the elementwise ops folded in. Calibrated: a whole 10 s 1080p Wan2.1-1.3B video prices at
    // ~490 s, the paper's AdaptiveLoad step (docs/cost-model.md).
    {{"A800", "A100", NULL}, {0.70, 0.60, 0.60, 2048, 256, 1.0 * GIB}},
    // RTX A6000 (GA102: smaller shared memory per SM than A100, lower FA2 efficiency).
    // L40S (AD102, same 100 KB shared memory per SM) takes this row too (our assumption).
    {{"A6000", "RTX A6000", "L40S", NULL}, {0.60, 0.50, 0.55, 2048, 256, 1.0 * GIB}},
    // H100/H200 with FlashAttention-3 class kernels: ~600 fwd / ~450 bwd of 989 TFLOP/s; needs
    // more work in flight to fill 132 SMs, hence the larger half-points.
    // B200 takes it until measured (FA3-class kernels are not yet tuned for it; our assumption).
    {{"H100", "H200", "B200", NULL}, {0.60, 0.45, 0.55, 4096, 512, 1.0 * GIB}},
    // cpu: relative to the per-core SGEMM figure of the cpu:N preset; our CPU attention kernels
    // run at a fraction of SGEMM. Placeholder until the profiler measures this machine.
    {{"cpu", NULL}, {0.30, 0.20, 0.80, 64, 32, 64 * MIB}},
};
static const zg_cost_device generic_row = {0.50, 0.40, 0.50, 2048, 256, 1.0 * GIB};

int zg_cost_device_row(const char *device, zg_cost_device *d) {
    for (size_t i = 0; device && i < sizeof rows / sizeof rows[0]; i++)
        for (int k = 0; rows[i].names[k]; k++)
            if (!strcasecmp(device, rows[i].names[k])) {
                *d = rows[i].d;
                return 1;
            }
    *d = generic_row;
    return 0;
}
