// engine_coalesce.c — coalesced vs one-call-per-sequence on a pack of many images: every whole
// sequence on a rank in ONE slice-list kernel call (forward and backward) against one call per
// sequence, same engine, same data, measured in the same run (best of reps; ratios reported).
// Run: build/bin/bench_engine_coalesce [n_images] [min_tokens] [max_tokens] [reps]
//      (under mpirun every rank gets its own pack of images)
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "engine/engine.h"

#define H 12
#define D 64

static double run(zg_engine *e, float *b, size_t n, size_t nl, int reps, int64_t *calls,
                  zg_comm *comm, const int32_t *world, zg_error *err) {
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        zg_comm_barrier(comm, err);
        double t0 = zg_time_now();
        zg_status st = zg_engine_attn_forward(e, b, b + n, b + 2 * n, b + 3 * n, b + 8 * n, err);
        *calls = zg_engine_last_stats(e)->kernel_calls;
        if (!st)
            st = zg_engine_attn_backward_saved(e, b + 4 * n, b + 5 * n, b + 6 * n, b + 7 * n, err);
        *calls += zg_engine_last_stats(e)->kernel_calls;
        double t = zg_time_now() - t0;
        if (st) return -1;
        zg_comm_allreduce_max_f64(comm, world, comm->size, &t, 1, 600, err);
        if (t < best) best = t;
    }
    (void)nl;
    return best;
}

int main(int argc, char **argv) {
    zg_error err = {0};
    zg_comm comm;
    if (zg_comm_init_auto(&comm, &argc, &argv, &err)) return zb_fail("bench_engine_coalesce", &err);
    int32_t n_img = argc > 1 ? atoi(argv[1]) : 64;
    int64_t lo = argc > 2 ? atoll(argv[2]) : 64, hi = argc > 3 ? atoll(argv[3]) : 320;
    int reps = argc > 4 ? atoi(argv[4]) : 3;
    int32_t P = comm.size, n = n_img * P;
    zg_plan plan;
    zg_plan_init(&plan);
    zg_rng rng;
    zg_rng_init(&rng, 11);
    zg_status st = zg_plan_alloc(&plan, n, P, &err);
    int64_t tokens = 0;
    for (int32_t i = 0; i < n && !st; i++) {
        zg_seq s;
        memset(&s, 0, sizeof s);
        s.id = i;
        s.kind = ZG_SEQ_IMAGE;
        s.tokens = zg_rng_int(&rng, lo, hi);
        int32_t r = i % P;
        int64_t len = s.tokens;
        tokens += len;
        st = zg_plan_set_ranks(&plan, i, &s, i, (zg_config){1, 1, 1}, &r, &len, 1, &err);
    }
    zg_attn_shape shape = {H, D, 1.0f / sqrtf((float)D)};
    zg_engine_opts oc, on;
    zg_engine_opts_default(&oc);
    zg_engine_opts_default(&on);
    on.coalesce = 0;
    zg_engine *ec = NULL, *en = NULL;
    if (!st) st = zg_engine_init(&ec, &comm, &plan, shape, &oc, &err);
    if (!st) st = zg_engine_init(&en, &comm, &plan, shape, &on, &err);
    if (st) return zb_fail("bench_engine_coalesce", &err);
    int32_t *world = NULL;
    zg_comm_world_ranks(&comm, &world, &err);
    size_t T = (size_t)zg_engine_local_tokens(ec), nn = T * H * D, nl = T * H;
    float *b = calloc(8 * nn + nl + 1, 4);
    for (size_t x = 0; x < 8 * nn; x++)
        b[x] = (float)((x * 2654435761u) % 2001) / 1000.0f - 1;
    int64_t cc = 0, cn = 0;
    run(ec, b, nn, nl, 1, &cc, &comm, world, &err); // warm-up (work space allocation)
    run(en, b, nn, nl, 1, &cn, &comm, world, &err);
    double tn = run(en, b, nn, nl, reps, &cn, &comm, world, &err);
    double tc = run(ec, b, nn, nl, reps, &cc, &comm, world, &err);
    double flops = 0; // attention fwd 4*L^2*H*D, bwd 2.5x
    for (int64_t i = 0; i < plan.n; i++)
        flops += 3.5 * 4.0 * (double)plan.p[i].tokens * (double)plan.p[i].tokens * H * D;
    if (comm.rank == 0) {
        printf("coalesced vs one call per sequence: %d ranks (%s), %d images per rank, %lld..%lld "
               "tokens (total %lld), H=%d D=%d, kernels isa %s, fwd+bwd best of %d\n",
               P, zg_comm_backend_name(&comm), n_img, (long long)lo, (long long)hi,
               (long long)tokens, H, D, zg_attn_isa(), reps);
        printf("%-22s %14s %12s %10s\n", "mode", "kernel calls", "ms", "GFLOP/s");
        printf("%-22s %14lld %12.2f %10.2f\n", "one call per sequence", (long long)cn, tn * 1e3,
               flops / tn / 1e9);
        printf("%-22s %14lld %12.2f %10.2f\n", "coalesced", (long long)cc, tc * 1e3,
               flops / tc / 1e9);
        printf("speedup %.2fx\n", tn / tc);
        printf("{\"bench\":\"engine_coalesce\",\"world\":%d,\"images_per_rank\":%d,\"tokens\":%lld,"
               "\"calls_per_seq\":%lld,\"calls_coalesced\":%lld,\"ms_per_seq\":%.3f,"
               "\"ms_coalesced\":%.3f,\"speedup\":%.3f}\n",
               P, n_img, (long long)tokens, (long long)cn, (long long)cc, tn * 1e3, tc * 1e3,
               tn / tc);
    }
    free(b);
    free(world);
    zg_engine_free(ec);
    zg_engine_free(en);
    zg_plan_free(&plan);
    zg_comm_free(&comm);
    return 0;
}
