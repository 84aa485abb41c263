// engine_comm.c — per configuration, the attention engine's communication (bytes sent per
// participating rank, forward + backward, by class) and its measured comm/total time, next to
// the cost model's prediction (pricer->comm bytes for one layer without recompute, fp32 here;
// the stateless backward's bytes; exposed comm seconds of the analytic model on an 8xA800 node for
// the same shapes). Run: mpirun --allow-run-as-root --oversubscribe -np 4
// build/bin/bench_engine_comm [L] [reps]
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "cost/cost.h"
#include "engine/engine.h"
#ifdef ZG_HAVE_OPENMP
#include <omp.h>
#endif

#define H 12
#define D 32

int main(int argc, char **argv) {
    zg_error err = {0};
    zg_comm comm;
    if (zg_comm_init_auto(&comm, &argc, &argv, &err)) return zb_fail("bench_engine_comm", &err);
#ifdef ZG_HAVE_OPENMP
    if (comm.size > 1 && !getenv("OMP_NUM_THREADS")) omp_set_num_threads(1);
#endif
    int64_t L = argc > 1 ? atoll(argv[1]) : 768;
    int reps = argc > 2 ? atoi(argv[2]) : 2;
    int root = comm.rank == 0;
    zg_pricer pr; // the cost model of the attention layer the bench runs
    if (zg_cost_attn_layer_init(&pr, H, D, &err)) return zb_fail("bench_engine_comm", &err);
    zg_config cfg[64];
    int32_t nc = zg_engine_configs(comm.size, H, cfg, 64);
    int32_t *world = NULL;
    zg_comm_world_ranks(&comm, &world, &err);
    zg_attn_shape shape = {H, D, 1.0f / sqrtf((float)D)};
    if (root) {
        printf("engine comm per config: L=%lld tokens, H=%d, D=%d, fp32, %d ranks (%s); bytes are "
               "per participating rank, fwd+bwd\n",
               (long long)L, H, D, comm.size, zg_comm_backend_name(&comm));
        printf("%-8s %12s %12s %6s %13s %10s %10s %8s %13s\n", "config", "measured_B", "model_B",
               "ratio", "stateless_B", "comm_ms", "total_ms", "GB/s", "model_comm_ms");
    }
    char json[8192];
    size_t jl = (size_t)snprintf(json, sizeof json,
                                 "{\"bench\":\"engine_comm\",\"L\":%lld,"
                                 "\"world\":%d,\"configs\":[",
                                 (long long)L, comm.size);
    for (int32_t ci = 0; ci < nc; ci++) {
        zg_config c = cfg[ci];
        int32_t deg = zg_config_degree(c);
        zg_plan plan;
        zg_plan_init(&plan);
        zg_seq s;
        memset(&s, 0, sizeof s);
        s.id = 0;
        s.tokens = L;
        s.kind = ZG_SEQ_VIDEO;
        int32_t ranks[64];
        int64_t lens[64];
        for (int32_t i = 0; i < deg; i++) {
            ranks[i] = i;
            lens[i] = L / deg + (i < L % deg ? 1 : 0);
        }
        zg_status st = zg_plan_alloc(&plan, 1, comm.size, &err);
        if (!st) st = zg_plan_set_ranks(&plan, 0, &s, 0, c, ranks, lens, deg, &err);
        zg_engine *e = NULL;
        if (!st) st = zg_engine_init(&e, &comm, &plan, shape, NULL, &err);
        if (st) return zb_fail("bench_engine_comm", &err);
        int64_t T = zg_engine_local_tokens(e);
        size_t n = (size_t)T * H * D;
        float *b = calloc(8 * n + 2 * (size_t)T * H + 1, 4);
        for (size_t x = 0; x < 8 * n; x++)
            b[x] = (float)((x * 2654435761u) % 2001) / 1000.0f - 1;
        double best_c = 1e30, best_t = 1e30, bytes = 0, bytes_stateless = 0;
        for (int r = 0; r < reps && !st; r++) {
            zg_comm_barrier(&comm, &err);
            st = zg_engine_attn_forward(e, b, b + n, b + 2 * n, b + 3 * n, b + 8 * n, &err);
            zg_engine_stats f = *zg_engine_last_stats(e);
            // the training path: backward from the forward's saved work space
            if (!st)
                st = zg_engine_attn_backward_saved(e, b + 4 * n, b + 5 * n, b + 6 * n, b + 7 * n,
                                                   &err);
            zg_engine_stats g = *zg_engine_last_stats(e);
            // the stateless backward (re-sends Q, K, V, O, LSE) for comparison
            if (!st)
                st = zg_engine_attn_backward(e, b, b + n, b + 2 * n, b + 3 * n, b + 8 * n,
                                             b + 4 * n, b + 5 * n, b + 6 * n, b + 7 * n, &err);
            zg_engine_stats g2 = *zg_engine_last_stats(e);
            double fb = (double)(f.bytes_alltoall + f.bytes_allgather + f.bytes_ring);
            double v[4] = {fb + (double)(g.bytes_alltoall + g.bytes_allgather + g.bytes_ring),
                           f.t_comm + g.t_comm, f.t_total + g.t_total,
                           fb + (double)(g2.bytes_alltoall + g2.bytes_allgather + g2.bytes_ring)};
            zg_comm_allreduce_max_f64(&comm, world, comm.size, v, 4, 500, &err);
            bytes = v[0];
            bytes_stateless = v[3];
            if (v[1] < best_c) best_c = v[1];
            if (v[2] < best_t) best_t = v[2];
        }
        if (st) return zb_fail("bench_engine_comm", &err);
        zg_comm_bytes mb = pr.comm(&pr, &s, c);
        double model_b = mb.alltoall + mb.allgather + mb.ring;
        zg_cost_terms t;
        double model_ms = 0;
        if (!zg_cost_analytic_terms(&pr, &s, c, NULL, deg, &t, &err))
            model_ms = (t.alltoall + t.allgather + t.ring) * 1e3;
        char cn[32];
        zg_config_name(c, cn, sizeof cn);
        if (root) {
            printf("%-8s %12.0f %12.0f %6.2f %13.0f %10.2f %10.2f %8.2f %13.4f\n", cn, bytes,
                   model_b, model_b > 0 ? bytes / model_b : 0.0, bytes_stateless, best_c * 1e3,
                   best_t * 1e3, best_c > 0 ? bytes / best_c / 1e9 : 0.0, model_ms);
            jl += (size_t)snprintf(json + jl, sizeof json - jl,
                                   "%s{\"config\":\"%s\",\"bytes\":%.0f,\"model_bytes\":%.0f,"
                                   "\"stateless_bytes\":%.0f,\"comm_ms\":%.3f,\"total_ms\":%.3f,"
                                   "\"model_comm_ms\":%.4f}",
                                   ci ? "," : "", cn, bytes, model_b, bytes_stateless, best_c * 1e3,
                                   best_t * 1e3, model_ms);
        }
        free(b);
        zg_engine_free(e);
        zg_plan_free(&plan);
    }
    if (root) printf("%s]}\n", json);
    free(world);
    zg_pricer_free(&pr);
    zg_comm_free(&comm);
    return 0;
}
