// Unit tests of the engine without MPI: the self backend end to end, plan checks (a 1-token
// sequence split over 2 ranks is rejected), bad input, and the global ordering rule checked on
// every rank's schedule of random 4-rank plans (no two ranks order shared collectives
// differently, which is what makes overlapping rank sets deadlock-free).
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "zgtest.h"

static const zg_attn_shape SHAPE = {12, 16, 0.25f};

ZG_TEST(self_backend_matches_reference) {
    zg_error err = {0};
    zg_comm c;
    CHECK_OK(zg_comm_self_init(&c, &err), &err);
    for (uint64_t s = 0; s < 3; s++) {
        zg_plan plan;
        zg_plan_init(&plan);
        CHECK_OK(zg_engine_random_plan(1, 12, 6, 33, -1, -1, s, &plan, &err), &err);
        zg_engine_check res;
        zg_status st = zg_engine_check_plan(&c, &plan, SHAPE, NULL, s, 1e-4, &res, &err);
        zg_plan_free(&plan);
        CHECK_OK(st, &err);
        CHECK(res.passed && res.bit_identical);
        CHECK(res.max_rel_err_fwd <= 1e-5 && res.max_rel_err_bwd <= 1e-5);
        CHECK_EQ_INT(res.kernel_calls, 1); // every whole sequence in one call
    }
    zg_comm_free(&c);
}

ZG_TEST(one_token_over_two_ranks_rejected) {
    zg_error err = {0};
    zg_plan plan;
    zg_plan_init(&plan);
    CHECK_OK(zg_plan_alloc(&plan, 1, 2, &err), &err);
    zg_seq s = {.id = 0, .tokens = 2};
    int32_t ranks[2] = {0, 1};
    int64_t lens[2] = {1, 1};
    CHECK_OK(zg_plan_set_ranks(&plan, 0, &s, 0, (zg_config){1, 1, 2}, ranks, lens, 2, &err), &err);
    // shrink to 1 token: the second rank's shard is empty
    plan.p[0].tokens = 1;
    plan.p[0].shards[1].start = plan.p[0].shards[1].end = 1;
    zg_batch b;
    zg_batch_init(&b);
    s.tokens = 1;
    CHECK_OK(zg_batch_push(&b, &s, &err), &err);
    zg_model m;
    CHECK_OK(zg_model_preset("tiny", &m, &err), &err);
    CHECK(zg_plan_validate(&plan, &b, &m, &err) != ZG_OK);
    zg_comm c;
    CHECK_OK(zg_comm_self_init(&c, &err), &err);
    zg_engine *e = NULL;
    CHECK(zg_engine_init(&e, &c, &plan, SHAPE, NULL, &err) == ZG_ERR_INVALID);
    CHECK(strstr(err.msg, ">= 1 token") != NULL);
    CHECK(e == NULL);
    // and zg_plan_set_ranks refuses to build it
    int64_t bad[2] = {1, 0};
    CHECK(zg_plan_set_ranks(&plan, 0, &s, 0, (zg_config){1, 1, 2}, ranks, bad, 2, &err) != ZG_OK);
    zg_comm_free(&c);
    zg_batch_free(&b);
    zg_plan_free(&plan);
}

ZG_TEST(bad_input) {
    zg_error err = {0};
    zg_comm c;
    CHECK_OK(zg_comm_self_init(&c, &err), &err);
    zg_plan plan;
    zg_plan_init(&plan);
    CHECK_OK(zg_engine_random_plan(2, 12, 3, 20, 0, -1, 1, &plan, &err), &err);
    zg_engine *e = NULL;
    CHECK(zg_engine_init(&e, &c, &plan, SHAPE, NULL, &err) == ZG_ERR_INVALID);
    CHECK(strstr(err.msg, "mpirun -np 2") != NULL);
    zg_plan_free(&plan);
    zg_plan_init(&plan);
    CHECK_OK(zg_plan_alloc(&plan, 1, 1, &err), &err);
    zg_seq s = {.id = 5, .tokens = 4};
    int32_t r0 = 0;
    int64_t l = 4;
    CHECK_OK(zg_plan_set_ranks(&plan, 0, &s, 0, (zg_config){1, 1, 1}, &r0, &l, 1, &err), &err);
    plan.p[0].config.h = 5; // 5 does not divide 12 heads (and degree mismatch)
    CHECK(zg_engine_init(&e, &c, &plan, SHAPE, NULL, &err) == ZG_ERR_INVALID);
    plan.p[0].config.h = 1;
    CHECK_OK(zg_engine_init(&e, &c, &plan, SHAPE, NULL, &err), &err);
    int32_t origin[1] = {3};
    float x[4];
    CHECK(zg_engine_dispatch(e, origin, 1, x, NULL, x, NULL, &err) == ZG_ERR_INVALID);
    CHECK(strstr(err.msg, "origin rank 3") != NULL);
    zg_engine_free(e);
    zg_plan_free(&plan);
    zg_comm_free(&c);
}

// Collective signature: class and rank list.
typedef struct sig {
    int cls;
    int32_t n;
    int32_t ranks[8];
} sig;

static int sig_eq(const sig *a, const sig *b) {
    return a->cls == b->cls && a->n == b->n &&
           memcmp(a->ranks, b->ranks, (size_t)a->n * sizeof(int32_t)) == 0;
}

static int32_t schedule(const zg_engine *e, sig *out) {
    int32_t n = 0;
    for (int32_t i = 0; i < e->n_ub; i++)
        if (e->ub[i].n > 1) {
            out[n] = (sig){0, e->ub[i].n, {0}};
            memcpy(out[n++].ranks, e->ub[i].ranks, (size_t)e->ub[i].n * 4);
        }
    for (int32_t i = 0; i < e->n_gb; i++) {
        out[n] = (sig){1, e->gb[i].n, {0}};
        memcpy(out[n++].ranks, e->gb[i].ranks, (size_t)e->gb[i].n * 4);
    }
    return n;
}

ZG_TEST(global_order_is_consistent_across_ranks) {
    zg_error err = {0};
    const int32_t P = 4;
    int checked = 0;
    for (uint64_t seed = 0; seed < 40; seed++) {
        zg_plan plan;
        zg_plan_init(&plan);
        CHECK_OK(zg_engine_random_plan(P, 12, 10, 40, (int32_t)(seed % 13), -1, seed, &plan, &err),
                 &err);
        sig s[4][256];
        int32_t ns[4];
        for (int32_t r = 0; r < P; r++) {
            zg_comm fake = {0};
            fake.rank = r;
            fake.size = P; // schedule building sends no messages
            zg_engine *e = NULL;
            CHECK_OK(zg_engine_init(&e, &fake, &plan, SHAPE, NULL, &err), &err);
            ns[r] = schedule(e, s[r]);
            zg_engine_free(e);
        }
        // for every pair of ranks: the collectives both take part in appear in the same order
        for (int32_t a = 0; a < P; a++)
            for (int32_t b = a + 1; b < P; b++) {
                sig ca[256], cb[256];
                int32_t na = 0, nb = 0;
                for (int32_t i = 0; i < ns[a]; i++)
                    if (zg_comm_rank_index(s[a][i].ranks, s[a][i].n, b) >= 0) ca[na++] = s[a][i];
                for (int32_t i = 0; i < ns[b]; i++)
                    if (zg_comm_rank_index(s[b][i].ranks, s[b][i].n, a) >= 0) cb[nb++] = s[b][i];
                CHECK_EQ_INT(na, nb);
                for (int32_t i = 0; i < na; i++)
                    CHECK(sig_eq(&ca[i], &cb[i]));
                checked += na;
            }
        zg_plan_free(&plan);
    }
    CHECK(checked > 50);
}

ZG_TEST(configs_enumerated) {
    zg_config c[64];
    CHECK_EQ_INT(zg_engine_configs(1, 12, c, 64), 1);
    CHECK_EQ_INT(zg_engine_configs(4, 12, c, 64), 13); // 1 + 3 + 3 + 6
    CHECK_EQ_INT(zg_engine_configs(4, 1, c, 64), 8);   // no Ulysses: (q,1,k) with qk <= 4
    CHECK(c[0].q == 1 && c[0].h == 1 && c[0].k == 1);
}

ZG_TEST_MAIN()
