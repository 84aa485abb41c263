// Unit tests of the comm module's self backend (one process) and the collectives on it.
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "zgtest.h"

ZG_TEST(self_send_recv_matches_by_tag_in_order) {
    zg_error err = {0};
    zg_comm c;
    CHECK_OK(zg_comm_self_init(&c, &err), &err);
    CHECK_EQ_INT(c.size, 1);
    CHECK_STR(zg_comm_backend_name(&c), "self");
    int a = 1, b = 2, x = 0, y = 0, z = 0;
    zg_comm_req q[5];
    CHECK_OK(zg_comm_isend(&c, &a, sizeof a, 0, 3, &q[0], &err), &err);
    CHECK_OK(zg_comm_isend(&c, &b, sizeof b, 0, 3, &q[1], &err), &err);
    CHECK_OK(zg_comm_irecv(&c, &x, sizeof x, 0, 3, &q[2], &err), &err);
    CHECK_OK(zg_comm_irecv(&c, &y, sizeof y, 0, 3, &q[3], &err), &err);
    CHECK_OK(zg_comm_waitall(&c, 4, q, &err), &err);
    CHECK_EQ_INT(x, 1);
    CHECK_EQ_INT(y, 2);
    // an unmatched receive cannot complete in one process: error, not a hang
    CHECK_OK(zg_comm_irecv(&c, &z, sizeof z, 0, 9, &q[4], &err), &err);
    CHECK(zg_comm_waitall(&c, 1, &q[4], &err) == ZG_ERR_COMM);
    CHECK(strstr(err.msg, "deadlock") != NULL);
    // bad peer
    CHECK(zg_comm_isend(&c, &a, sizeof a, 1, 0, &q[0], &err) == ZG_ERR_INVALID);
    zg_comm_free(&c);
}

ZG_TEST(self_collectives) {
    zg_error err = {0};
    zg_comm c;
    CHECK_OK(zg_comm_self_init(&c, &err), &err);
    int32_t w[1] = {0};
    float s[3] = {1, 2, 3}, r[3] = {0};
    size_t cnt[1] = {sizeof s}, dsp[1] = {0};
    CHECK_OK(zg_comm_alltoallv(&c, w, 1, s, cnt, dsp, r, cnt, dsp, 0, &err), &err);
    CHECK(r[0] == 1 && r[1] == 2 && r[2] == 3);
    CHECK_OK(zg_comm_allgatherv(&c, w, 1, s, r, cnt, dsp, 0, &err), &err);
    CHECK(r[2] == 3);
    size_t fc[1] = {3};
    float o[3];
    CHECK_OK(zg_comm_reduce_scatterv_f32(&c, w, 1, s, o, fc, dsp, 0, &err), &err);
    CHECK(o[0] == 1 && o[2] == 3);
    CHECK_OK(zg_comm_allreduce_f32(&c, w, 1, s, 3, 0, &err), &err);
    CHECK(s[1] == 2);
    CHECK_OK(zg_comm_barrier_ranks(&c, w, 1, 0, &err), &err);
    CHECK_OK(zg_comm_bcast(&c, w, 1, 0, s, sizeof s, 0, &err), &err);
    int32_t bad[1] = {1};
    CHECK(zg_comm_allreduce_f32(&c, bad, 1, s, 3, 0, &err) == ZG_ERR_INVALID);
    CHECK(strstr(err.msg, "rank 1") != NULL);
    zg_comm_free(&c);
}

ZG_TEST(auto_backend_respects_env) {
    zg_error err = {0};
    zg_comm c;
    setenv("ZG_COMM", "self", 1);
    CHECK_OK(zg_comm_init_auto(&c, NULL, NULL, &err), &err);
    CHECK_STR(zg_comm_backend_name(&c), "self");
    zg_comm_free(&c);
    setenv("ZG_COMM", "bogus", 1);
    CHECK(zg_comm_init_auto(&c, NULL, NULL, &err) == ZG_ERR_INVALID);
    unsetenv("ZG_COMM");
}

ZG_TEST_MAIN()
