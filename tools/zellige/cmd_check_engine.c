// cmd_check_engine.c — `zellige check-engine`: under mpirun, draws random legal plans
// (overlapping rank sets, every configuration, odd lengths, ranks with no work), runs attention
// forward and backward through the distributed engine and compares with a single-process
// reference (each sequence whole, reference kernels). Rank 0 prints.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "engine/engine.h"
#ifdef ZG_HAVE_OPENMP
#include <omp.h>
#endif

static const char *header =
    "usage: mpirun -np P zellige check-engine [options]\n"
    "Runs random legal plans on the distributed attention engine (forward + backward, twice for\n"
    "bit-identity) and compares every rank's outputs and dQ/dK/dV with a single-process\n"
    "reference. Without mpirun it runs on one process (self backend).\n\n";

static int run_check_engine(int argc, char **argv) {
    int64_t n_plans = 20, seed = 1, heads = 12, hd = 16, max_seqs = 8, max_tok = 64, threads = 0,
            rounds = 1;
    double tol = 1e-4;
    int32_t json = 0, use_ref = 0, no_coalesce = 0;
    zg_engine_opts eo;
    zg_engine_opts_default(&eo);
    zg_error err = {0};
    const cli_opt opts[] = {
        CLI_INT_OPT("--random-plans", "N", &n_plans, 1, 1000000,
                    "plans to draw (default 20); plan i forces config i mod #configs"),
        CLI_INT_OPT("--seed", "S", &seed, 0, INT64_MAX, "seed (default 1)"),
        CLI_INT_OPT("--heads", "H", &heads, 1, 1024,
                    "attention heads (default 12: Ulysses degrees 1,2,3,4,6,12)"),
        CLI_INT_OPT("--head-dim", "D", &hd, 1, 256, "head dimension (default 16)"),
        CLI_INT_OPT("--max-seqs", "N", &max_seqs, 1, 4096,
                    "sequences per plan, at most (default 8)"),
        CLI_INT_OPT("--max-tokens", "N", &max_tok, 1, 1048576,
                    "tokens per sequence, at most (default 64)"),
        CLI_NUM_OPT("--tol", "X", &tol, 1e-300, 1,
                    "relative error above which a plan fails (default 1e-4)"),
        CLI_INT_OPT("--rounds", "R", &rounds, 1, 8,
                    "microbatch rounds, 1..8 (default 1): from 2 on, each plan gets 2..R\n"
                    "rounds (drawn; every round holds a sequence), run one after another"),
        CLI_FLAG_OPT("--ref", &use_ref, "use the reference kernels in the distributed run too"),
        CLI_FLAG_OPT("--no-coalesce", &no_coalesce,
                     "one kernel call per sequence shard (default: one per ring step)"),
        CLI_INT_OPT("--threads", "N", &threads, 0, 1024,
                    "OpenMP threads per rank (default: 1 when P > 1, else the OpenMP default)"),
        CLI_OPT_JSON(&json, "print one JSON line: plans, passed, max_rel_err_fwd, max_rel_err_bwd"),
        CLI_OPT_END,
    };
    const cli_spec spec = {"check-engine", header, opts, NULL};
    cli_result pr = cli_parse(&spec, argc, argv, &err);
    if (pr != CLI_PARSED) return cli_parse_exit(&spec, pr, &err);
    if (use_ref) eo.use_ref = 1;
    if (no_coalesce) eo.coalesce = 0;
    zg_comm comm;
    if (zg_comm_init_auto(&comm, NULL, NULL, &err) != ZG_OK) return cli_fail("check-engine", &err);
#ifdef ZG_HAVE_OPENMP
    if (threads > 0)
        omp_set_num_threads((int)threads);
    else if (comm.size > 1 && !getenv("OMP_NUM_THREADS"))
        omp_set_num_threads(1);
#endif
    int root = comm.rank == 0;
    zg_attn_shape shape = {(int32_t)heads, (int32_t)hd, 1.0f / sqrtf((float)hd)};
    int32_t nc = zg_engine_configs(comm.size, (int32_t)heads, NULL, 0);
    zg_engine_check tot;
    memset(&tot, 0, sizeof tot);
    zg_status st = ZG_OK;
    if (root && !json)
        printf("check-engine: %d ranks (%s), %d configs, H=%lld D=%lld, %lld plans\n", comm.size,
               zg_comm_backend_name(&comm), nc, (long long)heads, (long long)hd,
               (long long)n_plans);
    for (int64_t i = 0; i < n_plans && !st; i++) {
        uint64_t ps = zg_rng_derive((uint64_t)seed, (uint64_t)i);
        int32_t idle = comm.size > 1 && i % 3 == 2 ? (int32_t)(i % comm.size) : -1;
        zg_plan plan;
        zg_plan_init(&plan);
        st = zg_engine_random_plan(comm.size, (int32_t)heads, (int32_t)max_seqs, max_tok,
                                   (int32_t)(i % nc), idle, ps, &plan, &err);
        int32_t nr = 1; // rounds: the first nr sequences open them, the rest are drawn
        if (!st && rounds > 1) {
            zg_rng rs;
            zg_rng_init(&rs, zg_rng_derive(ps, 0x726f756e64));
            nr = (int32_t)zg_rng_int(&rs, 2, rounds);
            if (nr > plan.n) nr = (int32_t)plan.n;
            for (int64_t j = 0; j < plan.n; j++)
                plan.p[j].round = j < nr ? (int32_t)j : (int32_t)zg_rng_int(&rs, 0, nr - 1);
        }
        zg_engine_check r;
        if (!st) st = zg_engine_check_plan(&comm, &plan, shape, &eo, ps ^ 0x5eed, tol, &r, &err);
        if (!st) {
            tot.plans++;
            tot.passed += r.passed;
            tot.tokens += r.tokens;
            if (r.max_rel_err_fwd > tot.max_rel_err_fwd) tot.max_rel_err_fwd = r.max_rel_err_fwd;
            if (r.max_rel_err_bwd > tot.max_rel_err_bwd) tot.max_rel_err_bwd = r.max_rel_err_bwd;
            if (root && !json) {
                char cb[32];
                printf("  plan %3lld: %2lld seqs %5lld tokens, %d round%s, first %-8s idle rank %2d  "
                       "fwd %.2e  bwd %.2e  %s%s\n",
                       (long long)i, (long long)plan.n, (long long)r.tokens, nr, nr > 1 ? "s" : "",
                       zg_config_name(plan.p[0].config, cb, sizeof cb), idle, r.max_rel_err_fwd,
                       r.max_rel_err_bwd, r.bit_identical ? "bit-identical " : "NOT-IDENTICAL ",
                       r.passed ? "ok" : "FAIL");
            }
        }
        zg_plan_free(&plan);
    }
    if (st) {
        int code = root ? cli_fail("check-engine", &err) : zg_status_exit_code(st);
        zg_comm_free(&comm);
        return code;
    }
    if (root) {
        if (json)
            printf("{\"plans\":%lld,\"passed\":%lld,\"max_rel_err_fwd\":%.3e,\"max_rel_err_bwd\":"
                   "%.3e,\"world\":%d,\"configs\":%d,\"tokens\":%lld,\"tol\":%.1e}\n",
                   (long long)tot.plans, (long long)tot.passed, tot.max_rel_err_fwd,
                   tot.max_rel_err_bwd, comm.size, nc, (long long)tot.tokens, tol);
        else
            printf("passed %lld/%lld plans; worst relative error fwd %.3e, bwd %.3e (tol %.1e)\n",
                   (long long)tot.passed, (long long)tot.plans, tot.max_rel_err_fwd,
                   tot.max_rel_err_bwd, tol);
        fflush(stdout);
    }
    int failed = tot.passed != tot.plans;
    if (failed && root)
        fprintf(stderr, "zellige check-engine: %lld of %lld plans failed\n",
                (long long)(tot.plans - tot.passed), (long long)tot.plans);
    zg_comm_free(&comm);
    return failed ? 1 : 0;
}

ZG_CLI_COMMAND(check_engine, "check-engine",
               "distributed attention engine vs single-process reference on random plans",
               run_check_engine)
