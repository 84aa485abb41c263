// MPI tests of the engine: distributed forward/backward == single-process reference on random
// plans covering every configuration and overlapping rank sets; bit-identical repeats; a rank
// with no work; dispatch/undispatch identity with positions; coalescing counts.
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "../comm/zgmpitest.h"

#define H 12
#define D 16
static const zg_attn_shape SHAPE = {H, D, 0.25f};
static zg_engine_opts opts_storage = {1, 0};
#define OPTS (getenv("ZG_ENGINE_REF") ? (opts_storage.use_ref = 1, &opts_storage) : NULL)

static int32_t P(void) {
    return zgmpi_comm->size;
}
static int32_t R(void) {
    return zgmpi_comm->rank;
}

ZG_TEST(every_config_matches_reference) {
    zg_error err = {0};
    int32_t nc = zg_engine_configs(P(), H, NULL, 0);
    double wf = 0, wb = 0;
    for (int32_t c = 0; c < nc; c++) {
        zg_plan plan;
        zg_plan_init(&plan);
        CHECK_OK(zg_engine_random_plan(P(), H, 4, 37, c, -1, 1000 + (uint64_t)c, &plan, &err),
                 &err);
        zg_engine_check res;
        zg_status st = zg_engine_check_plan(zgmpi_comm, &plan, SHAPE, OPTS, 7, 1e-4, &res, &err);
        zg_plan_free(&plan);
        CHECK_OK(st, &err);
        CHECK_MSG(res.passed, "config %d: fwd %.3g bwd %.3g identical %lld", c, res.max_rel_err_fwd,
                  res.max_rel_err_bwd, (long long)res.bit_identical);
        wf = wf > res.max_rel_err_fwd ? wf : res.max_rel_err_fwd;
        wb = wb > res.max_rel_err_bwd ? wb : res.max_rel_err_bwd;
    }
    if (R() == 0)
        fprintf(stderr, "[0] # %d configs: worst rel err fwd %.3g bwd %.3g\n", nc, wf, wb);
}

ZG_TEST(overlapping_rank_sets_random_plans) {
    zg_error err = {0};
    for (uint64_t s = 0; s < 6; s++) {
        zg_plan plan;
        zg_plan_init(&plan);
        CHECK_OK(zg_engine_random_plan(P(), H, 8, 29, -1, -1, 77 + s, &plan, &err), &err);
        zg_engine_check res;
        zg_status st =
            zg_engine_check_plan(zgmpi_comm, &plan, SHAPE, OPTS, 9 + s, 1e-4, &res, &err);
        zg_plan_free(&plan);
        CHECK_OK(st, &err);
        CHECK_MSG(res.passed, "seed %d: fwd %.3g bwd %.3g identical %lld", (int)s,
                  res.max_rel_err_fwd, res.max_rel_err_bwd, (long long)res.bit_identical);
        CHECK(res.max_rel_err_fwd <= 1e-5 && res.max_rel_err_bwd <= 1e-5); // typical
    }
}

// Microbatch rounds (megatron's groups): the engine runs them one after another, each round's
// placements as a plan of their own; every sequence still equals the single-process reference.
ZG_TEST(multi_round_plans_run_round_by_round) {
    zg_error err = {0};
    for (uint64_t s = 0; s < 6; s++) {
        zg_plan plan;
        zg_plan_init(&plan);
        CHECK_OK(zg_engine_random_plan(P(), H, 8, 29, -1, -1, 313 + s, &plan, &err), &err);
        int32_t nr = 2 + (int32_t)(s % 2); // 2 or 3 rounds; rank sets overlap across rounds
        for (int64_t i = 0; i < plan.n; i++) plan.p[i].round = (int32_t)(i % nr);
        zg_engine_check res;
        zg_status st =
            zg_engine_check_plan(zgmpi_comm, &plan, SHAPE, OPTS, 21 + s, 1e-4, &res, &err);
        // kernel calls: at least one per round that has work here
        zg_engine *e = NULL;
        if (!st) st = zg_engine_init(&e, zgmpi_comm, &plan, SHAPE, OPTS, &err);
        int64_t T = e ? zg_engine_local_tokens(e) : 0;
        float *buf = calloc((size_t)(T ? T : 1) * H * D * 4 + (size_t)(T ? T : 1) * H, 4);
        if (!st && buf)
            st = zg_engine_attn_forward(e, buf, buf + (size_t)T * H * D, buf + 2 * (size_t)T * H * D,
                                        buf + 3 * (size_t)T * H * D, buf + 4 * (size_t)T * H * D,
                                        &err);
        int32_t rounds_here = 0;
        for (int32_t r = 0; r < nr; r++) {
            int has = 0;
            for (int64_t i = 0; i < plan.n; i++)
                for (int32_t j = 0; j < plan.p[i].n_ranks; j++)
                    has |= plan.p[i].round == r && plan.p[i].ranks[j] == R();
            rounds_here += has;
        }
        if (!st) CHECK(zg_engine_last_stats(e)->kernel_calls >= rounds_here);
        free(buf);
        zg_engine_free(e);
        zg_plan_free(&plan);
        CHECK_OK(st, &err);
        CHECK_MSG(res.passed, "seed %d, %d rounds: fwd %.3g bwd %.3g identical %lld", (int)s, nr,
                  res.max_rel_err_fwd, res.max_rel_err_bwd, (long long)res.bit_identical);
    }
}

ZG_TEST(rank_with_nothing_to_do) {
    zg_error err = {0};
    zg_plan plan;
    zg_plan_init(&plan);
    int32_t idle = P() - 1;
    CHECK_OK(
        zg_engine_random_plan(P(), H, 5, 31, P() > 1 ? 3 : 0, P() > 1 ? idle : -1, 5, &plan, &err),
        &err);
    zg_engine *e = NULL;
    CHECK_OK(zg_engine_init(&e, zgmpi_comm, &plan, SHAPE, NULL, &err), &err);
    int64_t T = zg_engine_local_tokens(e);
    zg_engine_free(e);
    zg_engine_check res;
    zg_status st = zg_engine_check_plan(zgmpi_comm, &plan, SHAPE, OPTS, 3, 1e-4, &res, &err);
    zg_plan_free(&plan);
    CHECK_OK(st, &err);
    CHECK(res.passed);
    if (P() > 1 && R() == idle) CHECK_EQ_INT(T, 0);
}

ZG_TEST(dispatch_undispatch_identity_with_positions) {
    zg_error err = {0};
    zg_plan plan;
    zg_plan_init(&plan);
    CHECK_OK(zg_engine_random_plan(P(), H, 7, 41, -1, -1, 4242, &plan, &err), &err);
    int32_t *origin = calloc((size_t)plan.n, sizeof(int32_t));
    for (int64_t p = 0; p < plan.n; p++)
        origin[p] = (int32_t)((p * 7 + 3) % P());
    zg_engine *e = NULL;
    CHECK_OK(zg_engine_init(&e, zgmpi_comm, &plan, SHAPE, NULL, &err), &err);
    const int32_t W = 5;
    int64_t TL = zg_engine_loader_tokens(e, origin, R()), T = zg_engine_local_tokens(e);
    float *xl = calloc((size_t)(TL * W + 1), 4), *xp = calloc((size_t)(T * W + 1), 4),
          *xb = calloc((size_t)(TL * W + 1), 4);
    int32_t *pl = calloc((size_t)(TL * 3 + 1), 4), *pp = calloc((size_t)(T * 3 + 1), 4),
            *pb = calloc((size_t)(TL * 3 + 1), 4);
    int64_t row = 0;
    for (int64_t p = 0; p < plan.n; p++) {
        if (origin[p] != R()) continue;
        for (int64_t t = 0; t < plan.p[p].tokens; t++, row++) {
            for (int32_t c = 0; c < W; c++)
                xl[row * W + c] = (float)(p * 1000 + t) + 0.125f * c;
            pl[row * 3 + 0] = (int32_t)(t / 6); // frame, row, col of a 2x3 grid
            pl[row * 3 + 1] = (int32_t)(t % 6 / 3);
            pl[row * 3 + 2] = (int32_t)(t % 3);
        }
    }
    zg_status st = zg_engine_dispatch(e, origin, W, xl, pl, xp, pp, &err);
    int bad = 0;
    int64_t nsh;
    const int64_t *sp;
    const zg_shard *ss;
    zg_engine_local_shards(e, &nsh, &sp, &ss);
    row = 0;
    for (int64_t j = 0; j < nsh && !st; j++)
        for (int64_t t = ss[j].start; t < ss[j].end; t++, row++) {
            for (int32_t c = 0; c < W; c++)
                bad += xp[row * W + c] != (float)(sp[j] * 1000 + t) + 0.125f * c;
            bad += pp[row * 3] != t / 6 || pp[row * 3 + 1] != t % 6 / 3 || pp[row * 3 + 2] != t % 3;
        }
    if (!st) st = zg_engine_undispatch(e, origin, W, xp, pp, xb, pb, &err);
    int same = memcmp(xl, xb, (size_t)TL * W * 4) == 0 && memcmp(pl, pb, (size_t)TL * 12) == 0;
    // width-only (no positions) also round-trips
    memset(xb, 0, (size_t)(TL * W + 1) * 4);
    if (!st) st = zg_engine_dispatch(e, origin, W, xl, NULL, xp, NULL, &err);
    if (!st) st = zg_engine_undispatch(e, origin, W, xp, NULL, xb, NULL, &err);
    same = same && memcmp(xl, xb, (size_t)TL * W * 4) == 0;
    free(xl);
    free(xp);
    free(xb);
    free(pl);
    free(pp);
    free(pb);
    free(origin);
    zg_engine_free(e);
    zg_plan_free(&plan);
    CHECK_OK(st, &err);
    CHECK_EQ_INT(bad, 0);
    CHECK(same);
}

// KnapFormer's zero-length chunks (docs/knapformer.md): a knapformer plan routes a sequence
// shorter than its bag over the bag all the same, chunk (id mod G) holding every token and the
// others empty. The engine runs it (each rank computes its heads over the group's tokens after
// the all-to-all) and matches the single-process reference; under another policy's name the
// same plan is refused.
ZG_TEST(knapformer_zero_length_shards_match_reference) {
    zg_error err = {0};
    int32_t G = P(), ranks[4] = {0, 1, 2, 3};
    zg_plan plan;
    zg_plan_init(&plan);
    CHECK_OK(zg_plan_alloc(&plan, 4, G, &err), &err);
    snprintf(plan.policy, sizeof plan.policy, "knapformer");
    // ids 0, 1 have 1 and G-1 tokens (fewer than G when G >= 2): KnapFormer's lens, the
    // remainder at id mod G; id 2 splits evenly; id 3 runs whole on the last rank
    const int64_t tokens[3] = {1, G > 1 ? G - 1 : 1, 29};
    for (int32_t i = 0; i < 3; i++) {
        zg_seq s = {.id = i, .tokens = tokens[i]};
        int64_t lens[4];
        for (int32_t k = 0; k < G; k++)
            lens[k] = tokens[i] / G + (k == i % G ? tokens[i] % G : 0);
        CHECK_OK(zg_plan_set_ranks(&plan, i, &s, i, (zg_config){1, G, 1}, ranks, lens, G, &err),
                 &err);
    }
    zg_seq s3 = {.id = 3, .tokens = 17};
    int64_t l3 = 17;
    int32_t last = G - 1;
    CHECK_OK(zg_plan_set_ranks(&plan, 3, &s3, 3, (zg_config){1, 1, 1}, &last, &l3, 1, &err), &err);
    if (G >= 2) CHECK(plan.p[0].shards[1].end == plan.p[0].shards[1].start); // an empty shard
    zg_engine_check res;
    zg_status st = zg_engine_check_plan(zgmpi_comm, &plan, SHAPE, OPTS, 11, 1e-4, &res, &err);
    CHECK_OK(st, &err);
    CHECK_MSG(res.passed, "fwd %.3g bwd %.3g", res.max_rel_err_fwd, res.max_rel_err_bwd);
    if (G >= 2) {
        snprintf(plan.policy, sizeof plan.policy, "usp");
        zg_engine *e = NULL;
        CHECK(zg_engine_init(&e, zgmpi_comm, &plan, SHAPE, NULL, &err) == ZG_ERR_INVALID);
        CHECK(strstr(err.msg, ">= 1 token") != NULL);
    }
    zg_plan_free(&plan);
}

// Builds: 5 whole sequences per rank, 3 Ulysses (1,2,1) sequences on ranks {0,1} (P >= 2) and
// 2 ring (1,1,P) sequences on all ranks (P >= 2).
static zg_status coalesce_plan(zg_plan *plan, zg_error *err) {
    int32_t n = 5 * P() + (P() >= 2 ? 5 : 0);
    zg_status st = zg_plan_alloc(plan, n, P(), err);
    int32_t i = 0;
    for (int32_t r = 0; r < P() && !st; r++)
        for (int32_t w = 0; w < 5 && !st; w++, i++) {
            zg_seq s = {.id = i, .tokens = 9 + 2 * w + r};
            int64_t len = s.tokens;
            st = zg_plan_set_ranks(plan, i, &s, i, (zg_config){1, 1, 1}, &r, &len, 1, err);
        }
    if (P() >= 2) {
        int32_t ranks[8] = {0, 1, 2, 3};
        int64_t lens[8] = {5, 6, 7, 8};
        for (int32_t u = 0; u < 3 && !st; u++, i++) {
            zg_seq s = {.id = i, .tokens = lens[0] + lens[1] + u};
            int64_t l2[2] = {5 + u, 6};
            st = zg_plan_set_ranks(plan, i, &s, i, (zg_config){1, 2, 1}, ranks, l2, 2, err);
        }
        for (int32_t g = 0; g < 2 && !st; g++, i++) {
            zg_seq s = {.id = i, .tokens = 0};
            for (int32_t r = 0; r < P(); r++)
                s.tokens += lens[r];
            st = zg_plan_set_ranks(plan, i, &s, i, (zg_config){1, 1, P()}, ranks, lens, P(), err);
        }
    }
    return st;
}

ZG_TEST(coalescing_one_call_per_step) {
    zg_error err = {0};
    zg_plan plan;
    zg_plan_init(&plan);
    CHECK_OK(coalesce_plan(&plan, &err), &err);
    zg_engine *e = NULL;
    CHECK_OK(zg_engine_init(&e, zgmpi_comm, &plan, SHAPE, NULL, &err), &err);
    int64_t T = zg_engine_local_tokens(e);
    size_t n = (size_t)T * H * D;
    float *b = calloc(7 * n + (size_t)T * H + 1, 4);
    for (size_t x = 0; x < 7 * n; x++)
        b[x] = (float)((x * 2654435761u) % 1000) / 1000.0f - 0.5f;
    float *q = b, *k = b + n, *v = b + 2 * n, *o = b + 3 * n, *lse = b + 7 * n;
    zg_status st = zg_engine_attn_forward(e, q, k, v, o, lse, &err);
    zg_engine_stats fs = *zg_engine_last_stats(e);
    if (!st)
        st = zg_engine_attn_backward(e, q, k, v, o, lse, v, b + 4 * n, b + 5 * n, b + 6 * n, &err);
    zg_engine_stats bs = *zg_engine_last_stats(e);
    zg_engine_free(e);
    free(b);
    zg_plan_free(&plan);
    CHECK_OK(st, &err);
    // one call for step 0 (wholes + Ulysses + own ring block) + one per further ring step
    int64_t steps = P() >= 2 ? P() : 1;
    CHECK_EQ_INT(fs.kernel_calls, steps);
    CHECK_EQ_INT(bs.kernel_calls, steps);
    if (P() >= 2) {
        int u = R() < 2 ? 2 : 0; // one packed all-to-all + one inverse for the 3 Ulysses seqs
        CHECK_EQ_INT(fs.collectives, u + (P() - 1)); // + ring phases 1..P-1
        CHECK_EQ_INT(bs.collectives, u + P());       // + the dK/dV homecoming phase
        CHECK(fs.bytes_ring > 0);
    } else {
        CHECK_EQ_INT(fs.collectives, 0);
    }
}

ZG_TEST(non_coalesced_mode_same_numbers) {
    zg_error err = {0};
    zg_plan plan;
    zg_plan_init(&plan);
    CHECK_OK(zg_engine_random_plan(P(), H, 6, 23, -1, -1, 99, &plan, &err), &err);
    zg_engine_opts oc, on;
    zg_engine_opts_default(&oc);
    zg_engine_opts_default(&on);
    on.coalesce = 0;
    zg_engine *e1 = NULL, *e2 = NULL;
    CHECK_OK(zg_engine_init(&e1, zgmpi_comm, &plan, SHAPE, &oc, &err), &err);
    CHECK_OK(zg_engine_init(&e2, zgmpi_comm, &plan, SHAPE, &on, &err), &err);
    int64_t T = zg_engine_local_tokens(e1);
    size_t n = (size_t)T * H * D;
    float *b = calloc(5 * n + 2 * (size_t)T * H + 1, 4);
    for (size_t x = 0; x < 3 * n; x++)
        b[x] = (float)((x * 40503u) % 997) / 997.0f - 0.5f;
    zg_status st = zg_engine_attn_forward(e1, b, b + n, b + 2 * n, b + 3 * n, b + 5 * n, &err);
    int64_t c1 = zg_engine_last_stats(e1)->kernel_calls;
    if (!st)
        st = zg_engine_attn_forward(e2, b, b + n, b + 2 * n, b + 4 * n, b + 5 * n + T * H, &err);
    int64_t c2 = zg_engine_last_stats(e2)->kernel_calls;
    double md = 0;
    for (size_t x = 0; x < n; x++)
        md = fmax(md, fabs(b[3 * n + x] - b[4 * n + x]));
    zg_engine_free(e1);
    zg_engine_free(e2);
    free(b);
    zg_plan_free(&plan);
    CHECK_OK(st, &err);
    CHECK(md <= 1e-6);
    CHECK(c2 >= c1);
}

ZG_MPITEST_MAIN()
