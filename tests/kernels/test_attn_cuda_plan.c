// test_attn_cuda_plan.c — the host-side planning of the CUDA attention calls, without a GPU
// (attn_cuda_plan.h): the tile lists cover every row of every slice exactly once in blocks of
// the kernels' row counts, in the documented order; the backward's layers are row-disjoint and
// as few as the deepest overlap; the kernel choice and its error messages; alignment; limits.
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda/attn_cuda_plan.h"
#include "zgtest.h"

// Random slice list over T rows: lengths 0..max_len (zeros included), starts anywhere.
static int32_t random_slices(zg_attn_slice *sl, int32_t n, int64_t T, int64_t max_len,
                             zg_rng *rng) {
    for (int32_t i = 0; i < n; i++) {
        int64_t ql = zg_rng_int(rng, 0, max_len), kl = zg_rng_int(rng, 0, max_len);
        sl[i] = (zg_attn_slice){zg_rng_int(rng, 0, T - ql), ql, zg_rng_int(rng, 0, T - kl), kl};
    }
    return n;
}

// Checks tiles of the slices idx[0..n): rows covered exactly once, r0 a multiple of block, the
// order (other length descending, then slice, then r0). Returns the number of problems.
static int check_tiles(const zg_attn_slice *sl, const int32_t *idx, int32_t n, int by_keys,
                       int32_t block, const zg_cu_tile *t, int32_t nt) {
    int bad = 0;
    int64_t want = 0;
    for (int32_t i = 0; i < n; i++)
        want += ((by_keys ? sl[idx[i]].k_len : sl[idx[i]].q_len) + block - 1) / block;
    if (want != nt) bad++;
    // per slice: a bitmap of tile starts seen
    for (int32_t i = 0; i < n; i++) {
        int64_t len = by_keys ? sl[idx[i]].k_len : sl[idx[i]].q_len;
        int64_t nb = (len + block - 1) / block;
        unsigned char *seen = calloc((size_t)nb + 1, 1);
        for (int32_t j = 0; j < nt; j++) {
            if (t[j].slice != i) continue;
            if (t[j].r0 < 0 || t[j].r0 >= len || t[j].r0 % block != 0) {
                bad++;
                continue;
            }
            if (seen[t[j].r0 / block]++) bad++; // a block served twice
        }
        for (int64_t b = 0; b < nb; b++)
            if (!seen[b]) bad++; // rows no tile serves
        free(seen);
    }
    for (int32_t j = 0; j < nt; j++) {
        if (t[j].slice < 0 || t[j].slice >= n) return bad + 1;
        if (j == 0) continue;
        const zg_attn_slice *a = &sl[idx[t[j - 1].slice]], *b = &sl[idx[t[j].slice]];
        int64_t ca = by_keys ? a->q_len : a->k_len, cb = by_keys ? b->q_len : b->k_len;
        if (ca < cb || (ca == cb && (t[j - 1].slice > t[j].slice ||
                                     (t[j - 1].slice == t[j].slice && t[j - 1].r0 >= t[j].r0))))
            bad++;
    }
    return bad;
}

ZG_TEST(tiles_cover_every_row_once_in_cost_order) {
    zg_rng rng;
    zg_rng_init(&rng, 17);
    zg_error err = {0};
    for (int trial = 0; trial < 200; trial++) {
        zg_attn_slice sl[40];
        int32_t n = random_slices(sl, 1 + (int32_t)zg_rng_int(&rng, 0, 39), 5000, 400, &rng);
        int32_t idx[40], m = 0;
        for (int32_t i = 0; i < n; i++)
            if (zg_rng_int(&rng, 0, 3)) idx[m++] = i; // a sub-list, as the backward's layers
        for (int by_keys = 0; by_keys < 2; by_keys++) {
            const int32_t block = by_keys ? ZG_CU_TC_BN : ZG_CU_TC_BM;
            zg_cu_tile *t = NULL;
            int32_t nt = -1;
            CHECK_OK(zg_attn_cuda_plan_tiles(sl, idx, m, by_keys, block, &t, &nt, &err), &err);
            int bad = check_tiles(sl, idx, m, by_keys, block, t, nt);
            CHECK_MSG(bad == 0, "trial %d by_keys %d: %d problems in %d tiles", trial, by_keys, bad,
                      (int)nt);
            // deterministic: the same list gives the same tiles
            zg_cu_tile *t2 = NULL;
            int32_t nt2 = -1;
            CHECK_OK(zg_attn_cuda_plan_tiles(sl, idx, m, by_keys, block, &t2, &nt2, &err), &err);
            CHECK(nt2 == nt && (nt == 0 || memcmp(t, t2, (size_t)nt * sizeof *t) == 0));
            free(t), free(t2);
            if (*zg_failed_) return;
        }
    }
}

ZG_TEST(tiles_of_hand_computed_slices) {
    // q lengths 1, 64, 65, 0, 130 with key lengths 10, 300, 5, 7, 300 -> 1 + 1 + 2 + 0 + 3 tiles
    zg_attn_slice sl[5] = {
        {0, 1, 0, 10}, {1, 64, 0, 300}, {65, 65, 0, 5}, {130, 0, 0, 7}, {130, 130, 0, 300}};
    int32_t idx[5] = {0, 1, 2, 3, 4};
    zg_error err = {0};
    zg_cu_tile *t = NULL;
    int32_t nt = 0;
    CHECK_OK(zg_attn_cuda_plan_tiles(sl, idx, 5, 0, 64, &t, &nt, &err), &err);
    CHECK_EQ_INT(nt, 7);
    // keys 300 first (slice 1 r0 0, slice 4 r0 0/64/128), then 10 (slice 0), then 5 (slice 2)
    const zg_cu_tile want[7] = {{1, 0}, {4, 0}, {4, 64}, {4, 128}, {0, 0}, {2, 0}, {2, 64}};
    for (int i = 0; i < 7 && i < nt; i++)
        CHECK_MSG(t[i].slice == want[i].slice && t[i].r0 == want[i].r0,
                  "tile %d is (%d, %d), want (%d, %d)", i, (int)t[i].slice, (int)t[i].r0,
                  (int)want[i].slice, (int)want[i].r0);
    free(t);
    // by keys (dK/dV): 1 + 5 + 1 + 1 + 5 tiles of 64 keys
    CHECK_OK(zg_attn_cuda_plan_tiles(sl, idx, 5, 1, 64, &t, &nt, &err), &err);
    CHECK_EQ_INT(nt, 13);
    free(t);
    // no rows: no tiles, NULL list
    CHECK_OK(zg_attn_cuda_plan_tiles(sl, idx, 0, 0, 64, &t, &nt, &err), &err);
    CHECK(nt == 0 && t == NULL);
    CHECK(zg_attn_cuda_plan_tiles(sl, idx, 5, 0, 0, &t, &nt, &err) == ZG_ERR_INVALID);
}

// Layers: slices in one layer have disjoint ranges; the count is the deepest overlap.
ZG_TEST(layers_are_disjoint_and_minimal) {
    zg_rng rng;
    zg_rng_init(&rng, 5);
    zg_error err = {0};
    for (int trial = 0; trial < 300; trial++) {
        zg_attn_slice sl[30];
        int32_t n = random_slices(sl, 1 + (int32_t)zg_rng_int(&rng, 0, 29), 600, 200, &rng);
        int32_t idx[30], m = 0, layer[30];
        for (int32_t i = 0; i < n; i++)
            if (sl[i].q_len > 0 && sl[i].k_len > 0) idx[m++] = i; // as the backward keeps them
        for (int by_keys = 0; by_keys < 2; by_keys++) {
            int32_t nl = -1;
            CHECK_OK(zg_attn_cuda_plan_layers(sl, idx, m, by_keys, layer, &nl, &err), &err);
            int depth = 0, bad = 0;
            for (int64_t r = 0; r < 600; r++) { // deepest overlap over rows
                int d = 0;
                for (int32_t j = 0; j < m; j++) {
                    const zg_attn_slice *s = &sl[idx[j]];
                    int64_t a = by_keys ? s->k_start : s->q_start;
                    int64_t len = by_keys ? s->k_len : s->q_len;
                    d += r >= a && r < a + len;
                }
                if (d > depth) depth = d;
            }
            for (int32_t x = 0; x < m; x++) {
                if (layer[x] < 0 || layer[x] >= nl) bad++;
                for (int32_t y = x + 1; y < m; y++) {
                    if (layer[x] != layer[y]) continue;
                    const zg_attn_slice *a = &sl[idx[x]], *b = &sl[idx[y]];
                    int64_t a0 = by_keys ? a->k_start : a->q_start;
                    int64_t a1 = a0 + (by_keys ? a->k_len : a->q_len);
                    int64_t b0 = by_keys ? b->k_start : b->q_start;
                    int64_t b1 = b0 + (by_keys ? b->k_len : b->q_len);
                    if (a0 < b1 && b0 < a1) bad++; // two slices of a layer share rows
                }
            }
            CHECK_MSG(bad == 0, "trial %d by_keys %d: %d overlaps in %d layers", trial, by_keys,
                      bad, (int)nl);
            CHECK_MSG(nl == depth, "trial %d by_keys %d: %d layers, deepest overlap %d", trial,
                      by_keys, (int)nl, depth);
            if (*zg_failed_) return;
        }
    }
}

ZG_TEST(layers_of_engine_lists_and_ring_steps) {
    zg_error err = {0};
    int32_t layer[4], nl = -1;
    // an engine list: disjoint q and k ranges -> one layer each way
    zg_attn_slice eng[3] = {{0, 100, 0, 100}, {100, 50, 100, 50}, {150, 7, 150, 7}};
    int32_t idx[4] = {0, 1, 2, 3};
    CHECK_OK(zg_attn_cuda_plan_layers(eng, idx, 3, 0, layer, &nl, &err), &err);
    CHECK_EQ_INT(nl, 1);
    CHECK_OK(zg_attn_cuda_plan_layers(eng, idx, 3, 1, layer, &nl, &err), &err);
    CHECK_EQ_INT(nl, 1);
    // ring steps: the same 120 queries against two key parts -> dQ needs 2 layers, dK/dV one
    zg_attn_slice ring[2] = {{0, 120, 0, 77}, {0, 120, 77, 223}};
    CHECK_OK(zg_attn_cuda_plan_layers(ring, idx, 2, 0, layer, &nl, &err), &err);
    CHECK_EQ_INT(nl, 2);
    CHECK(layer[0] != layer[1]);
    CHECK_OK(zg_attn_cuda_plan_layers(ring, idx, 2, 1, layer, &nl, &err), &err);
    CHECK_EQ_INT(nl, 1);
    // shared keys: three query blocks on one key range -> dK/dV 3 layers, in list order
    zg_attn_slice sh[3] = {{0, 10, 500, 333}, {10, 20, 500, 333}, {30, 5, 500, 333}};
    CHECK_OK(zg_attn_cuda_plan_layers(sh, idx, 3, 1, layer, &nl, &err), &err);
    CHECK_EQ_INT(nl, 3);
    CHECK(layer[0] == 0 && layer[1] == 1 && layer[2] == 2);
    CHECK_OK(zg_attn_cuda_plan_layers(sh, idx, 0, 1, layer, &nl, &err), &err);
    CHECK_EQ_INT(nl, 0);
}

ZG_TEST(kernel_choice_and_its_messages) {
    zg_error err = {0};
    int tc = -1;
    CHECK_OK(zg_attn_cuda_pick_kernel(ZG_ATTN_CUDA_AUTO, ZG_DTYPE_BF16, 128, 1, &tc, &err), &err);
    CHECK_EQ_INT(tc, 1);
    CHECK_OK(zg_attn_cuda_pick_kernel(ZG_ATTN_CUDA_AUTO, ZG_DTYPE_F16, 64, 1, &tc, &err), &err);
    CHECK_EQ_INT(tc, 1);
    // AUTO falls back to the simple kernels: fp32, D 40, misaligned
    CHECK_OK(zg_attn_cuda_pick_kernel(ZG_ATTN_CUDA_AUTO, ZG_DTYPE_F32, 128, 1, &tc, &err), &err);
    CHECK_EQ_INT(tc, 0);
    CHECK_OK(zg_attn_cuda_pick_kernel(ZG_ATTN_CUDA_AUTO, ZG_DTYPE_BF16, 40, 1, &tc, &err), &err);
    CHECK_EQ_INT(tc, 0);
    CHECK_OK(zg_attn_cuda_pick_kernel(ZG_ATTN_CUDA_AUTO, ZG_DTYPE_BF16, 128, 0, &tc, &err), &err);
    CHECK_EQ_INT(tc, 0);
    CHECK_OK(zg_attn_cuda_pick_kernel(ZG_ATTN_CUDA_SIMPLE, ZG_DTYPE_BF16, 128, 1, &tc, &err), &err);
    CHECK_EQ_INT(tc, 0);
    // forcing the tensor cores where they cannot run says why
    CHECK(zg_attn_cuda_pick_kernel(ZG_ATTN_CUDA_TC, ZG_DTYPE_F32, 128, 1, &tc, &err) ==
          ZG_ERR_UNSUPPORTED);
    CHECK(strstr(err.msg, "bf16 or f16, got f32") != NULL);
    CHECK(zg_attn_cuda_pick_kernel(ZG_ATTN_CUDA_TC, ZG_DTYPE_BF16, 96, 1, &tc, &err) ==
          ZG_ERR_UNSUPPORTED);
    CHECK(strstr(err.msg, "head_dim 64 or 128, got 96") != NULL);
    CHECK(zg_attn_cuda_pick_kernel(ZG_ATTN_CUDA_TC, ZG_DTYPE_BF16, 64, 0, &tc, &err) ==
          ZG_ERR_UNSUPPORTED);
    CHECK(strstr(err.msg, "16-byte aligned") != NULL);
    CHECK(zg_attn_cuda_pick_kernel(7, ZG_DTYPE_BF16, 64, 1, &tc, &err) == ZG_ERR_INVALID);
    CHECK(strstr(err.msg, "kernel choice 7") != NULL);
}

ZG_TEST(alignment_of_the_tensor_core_operands) {
    _Alignas(16) static char buf[256];
    CHECK(zg_attn_cuda_tc_aligned(buf, buf + 16, buf + 32, NULL, buf + 8, NULL, NULL, NULL));
    CHECK(!zg_attn_cuda_tc_aligned(buf + 8, buf, buf, buf, buf, buf, buf, buf)); // q at 8 bytes
    CHECK(!zg_attn_cuda_tc_aligned(buf, buf, buf, buf + 2, buf, buf, buf, buf)); // a bf16 offset
    CHECK(!zg_attn_cuda_tc_aligned(buf, buf, buf, buf, buf, buf, buf + 4, buf)); // dk: one float
    CHECK(zg_attn_cuda_tc_aligned(buf, buf, buf, buf, buf + 8, buf + 24, buf + 40, buf + 56));
}

ZG_TEST(launch_limits) {
    zg_error err = {0};
    zg_attn_slice ok[1] = {{0, INT32_MAX - 256, 0, 5}};
    zg_attn_shape sh = {12, 128, 0.088f};
    CHECK_OK(zg_attn_cuda_check_limits(ok, 1, sh, &err), &err);
    zg_attn_slice big[2] = {{0, 5, 0, 5}, {0, 4, 0, (int64_t)INT32_MAX - 255}};
    CHECK(zg_attn_cuda_check_limits(big, 2, sh, &err) == ZG_ERR_UNSUPPORTED);
    CHECK(strstr(err.msg, "slice 1 has 4 queries and 2147483392 keys") != NULL);
    zg_attn_shape many = {70000, 64, 0.125f};
    CHECK(zg_attn_cuda_check_limits(ok, 1, many, &err) == ZG_ERR_UNSUPPORTED);
    CHECK(strstr(err.msg, "70000 heads") != NULL);
}

ZG_TEST_MAIN()
