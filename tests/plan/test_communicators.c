// test_communicators.c — NCCL communicators per policy (src/plan/communicators.c): Megatron's
// aligned power-of-two blocks counted as create_hybrid_dp_cp_groups makes them (hand counts at
// 6, 8 and the table's 8..1024 ranks), KnapFormer's multi-GPU bags, static's tiles, USP's mesh,
// zellige's one world communicator; the per-rank memory at the cited figures; bad input.
#include <math.h>
#include <string.h>

#include "plan/plan.h"
#include "zgtest.h"

// The count, or total = -1 (and the message on stderr) when the call fails.
static zg_comm_count count(const char *policy, int32_t world, const zg_plan *p, const char *bags) {
    zg_comm_count c;
    zg_error e;
    if (zg_comm_count_policy(policy, world, p, bags, &c, &e)) {
        fprintf(stderr, "  %s on %d: %s\n", policy, world, e.msg);
        c.total = -1;
    }
    return c;
}

ZG_TEST(megatron_counts_every_aligned_power_of_two_block) {
    // 8 ranks: blocks of 2 (4) and 4 (2), plus the DP x CP group (the world): 7, 3 per rank
    zg_comm_count c = count("megatron", 8, NULL, NULL);
    CHECK_EQ_INT(c.total, 7);
    CHECK_EQ_INT(c.by_size2, 4);
    CHECK_EQ_INT(c.per_rank_max, 3);
    CHECK(c.bytes_per_rank_max == 544e6 + 688e6 + 688e6);
    const int32_t worlds[] = {8, 16, 32, 64, 1024}, logs[] = {3, 4, 5, 6, 10};
    for (int i = 0; i < 5; i++) {
        c = count("megatron", worlds[i], NULL, NULL);
        CHECK_EQ_INT(c.total, worlds[i] - 1);
        CHECK_EQ_INT(c.by_size2, worlds[i] / 2);
        CHECK_EQ_INT(c.per_rank_max, logs[i]);
        CHECK(c.bytes_per_rank_max == 544e6 + (logs[i] - 1) * 688e6);
    }
    // 6 ranks: int(log2 6) = 2, so only size 2: [0,1] [2,3] [4,5], plus the world
    c = count("megatron", 6, NULL, NULL);
    CHECK_EQ_INT(c.total, 4);
    CHECK_EQ_INT(c.per_rank_max, 2);
    // 2 ranks: no sub-groups
    CHECK_EQ_INT(count("megatron", 2, NULL, NULL).total, 1);
}

ZG_TEST(zellige_dp_adaptive_joint_hold_one_world_communicator) {
    const char *pols[] = {"zellige", "joint", "dp", "adaptive"};
    for (int i = 0; i < 4; i++) {
        zg_comm_count c = count(pols[i], 1024, NULL, NULL);
        CHECK_EQ_INT(c.total, 1);
        CHECK_EQ_INT(c.per_rank_max, 1);
        CHECK(c.bytes_per_rank_max == 688e6);
    }
    CHECK_EQ_INT(count("zellige", 2, NULL, NULL).bytes_per_rank_max == 544e6, 1);
    CHECK_EQ_INT(count("zellige", 1, NULL, NULL).total, 0); // one rank: no communicator
}

ZG_TEST(knapformer_one_per_multi_gpu_bag) {
    // g1n2+g2n1+g4n1 is an 8-GPU balance group, twice on 16 ranks: bags [2,3] [4..7] per group
    zg_comm_count c = count("knapformer", 16, NULL, "g1n2+g2n1+g4n1");
    CHECK_EQ_INT(c.total, 1 + 2 * 2);
    CHECK_EQ_INT(c.by_size2, 2);
    CHECK_EQ_INT(c.per_rank_max, 2);
    CHECK_EQ_INT(count("knapformer", 8, NULL, "g8n1").total, 1); // the bag is the world
    CHECK_EQ_INT(count("knapformer", 8, NULL, "g2n4").total, 5);
    CHECK_EQ_INT(count("knapformer", 8, NULL, "g1n8").total, 1);
}

static zg_status set(zg_plan *p, int64_t i, zg_config c, const int32_t *ranks, int32_t n,
                     zg_error *e) {
    zg_seq s = {.id = i, .tokens = 64};
    int64_t len[16];
    for (int32_t j = 0; j < n; j++)
        len[j] = 64 / n;
    return zg_plan_set_ranks(p, i, &s, i, c, ranks, len, n, e);
}

ZG_TEST(static_tiles_and_usp_mesh_from_the_plan) {
    zg_error e;
    zg_plan p;
    zg_plan_init(&p);
    CHECK_OK(zg_plan_alloc(&p, 4, 8, &e), &e);
    const int32_t a[2] = {0, 1}, c4[4] = {4, 5, 6, 7}, one[1] = {2};
    CHECK_OK(set(&p, 0, (zg_config){1, 1, 2}, a, 2, &e), &e);
    CHECK_OK(set(&p, 1, (zg_config){1, 1, 2}, a, 2, &e), &e); // the same tile: one communicator
    CHECK_OK(set(&p, 2, (zg_config){1, 2, 2}, c4, 4, &e), &e);
    CHECK_OK(set(&p, 3, (zg_config){1, 1, 1}, one, 1, &e), &e); // whole: none
    zg_comm_count c = count("static", 8, &p, NULL);
    CHECK_EQ_INT(c.total, 1 + 2); // world, [0,1], [4..7]
    // usp: (1,2,2) on ranks 4..7: Ulysses [4,5] [6,7], ring [4,6] [5,7]; (1,1,2) on [0,1]: ring
    c = count("usp", 8, &p, NULL);
    CHECK_EQ_INT(c.total, 1 + 1 + 4);
    CHECK_EQ_INT(c.by_size2, 5);
    CHECK_EQ_INT(c.per_rank_max, 3); // rank 4: world, [4,5], [4,6]
    // a plan of another world size
    zg_comm_count cc;
    CHECK(zg_comm_count_policy("usp", 16, &p, NULL, &cc, &e) == ZG_ERR_INVALID);
    CHECK(strstr(e.msg, "8 ranks, not 16") != NULL);
    zg_plan_free(&p);
}

ZG_TEST(bad_input_is_named) {
    zg_comm_count c;
    zg_error e;
    CHECK(zg_comm_count_policy("megatron", 0, NULL, NULL, &c, &e) == ZG_ERR_INVALID);
    CHECK(strstr(e.msg, "world size 0") != NULL);
    CHECK(zg_comm_count_policy("nope", 8, NULL, NULL, &c, &e) == ZG_ERR_INVALID);
    CHECK(strstr(e.msg, "'nope'") != NULL);
    CHECK(zg_comm_count_policy("static", 8, NULL, NULL, &c, &e) == ZG_ERR_INVALID);
    CHECK(strstr(e.msg, "static needs a plan") != NULL);
    CHECK(zg_comm_count_policy("knapformer", 8, NULL, NULL, &c, &e) == ZG_ERR_INVALID);
    CHECK(strstr(e.msg, "bag layout") != NULL);
    CHECK(zg_comm_count_policy("knapformer", 12, NULL, "g8n1", &c, &e) == ZG_ERR_INVALID);
}

ZG_TEST_MAIN()
