// test_network.c — link-level network model: presets, routes, collective costs against
// hand-computed cases (ring vs line, shared links, per-dimension phases), calibration, errors.
#include <stdlib.h>
#include <string.h>

#include "topo/network.h"
#include "zgtest.h"

#define V5E_BW 4.5e10

ZG_TEST(presets_validate_and_have_the_documented_shapes) {
    zg_error e;
    zg_net n;
    for (const char *const *p = zg_net_preset_names(); *p; p++) {
        CHECK_OK(zg_net_load(*p, &n, &e), &e);
    }
    CHECK_OK(zg_net_preset("v5e-8", &n, &e), &e);
    CHECK(n.n_devices == 8 && n.dims[0] == 2 && n.dims[1] == 4 && !n.wrap[0] && !n.wrap[1]);
    CHECK_OK(zg_net_preset("v5e-256", &n, &e), &e);
    CHECK(n.wrap[0] && n.wrap[1]);
    CHECK_OK(zg_net_preset("v5e:16x4", &n, &e), &e);
    CHECK(n.wrap[0] && !n.wrap[1]);
    CHECK_OK(zg_net_preset("v5p-8", &n, &e), &e);
    CHECK(n.n_devices == 8 && !n.wrap[0] && !n.wrap[2] && n.link_bw == 9e10);
    CHECK_OK(zg_net_preset("v5p-64", &n, &e), &e);
    CHECK(n.wrap[0] && n.wrap[1] && n.wrap[2]);
    CHECK_OK(zg_net_preset("h100x8-ib:4", &n, &e), &e);
    CHECK_EQ_INT(n.n_devices, 32);
    CHECK(zg_net_preset("v5e:2x", &n, &e) == ZG_ERR_INVALID);
    CHECK(zg_net_preset("tpu9", &n, &e) == ZG_ERR_INVALID);
    CHECK(strstr(e.msg, "'tpu9'") != NULL);
}

ZG_TEST(json_overrides_and_rejects_bad_values) {
    zg_error e;
    zg_net n;
    cJSON *j = NULL;
    CHECK_OK(zg_json_parse("{\"preset\":\"v5e-8\",\"link_bw\":5e10,\"alpha\":{\"all-gather\":7e-6},"
                           "\"eff\":0.8}", "t", &j, &e), &e);
    CHECK_OK(zg_net_from_json(j, &n, &e), &e);
    cJSON_Delete(j);
    CHECK(n.link_bw == 5e10 && n.alpha[ZG_COLL_ALL_GATHER] == 7e-6 &&
          n.alpha[ZG_COLL_ALL_REDUCE] == 2e-6 && n.eff[ZG_COLL_PERMUTE] == 0.8);
    CHECK_OK(zg_json_parse("{\"preset\":\"v5e-8\",\"link_bw\":-1}", "t", &j, &e), &e);
    CHECK(zg_net_from_json(j, &n, &e) == ZG_ERR_INVALID);
    cJSON_Delete(j);
    CHECK_OK(zg_json_parse("{\"preset\":\"v5e-8\",\"alpha\":{\"gather\":1}}", "t", &j, &e), &e);
    CHECK(zg_net_from_json(j, &n, &e) == ZG_ERR_INVALID);
    CHECK(strstr(e.msg, "'gather'") != NULL);
    cJSON_Delete(j);
}

ZG_TEST(routes_are_dimension_ordered_and_split) {
    zg_error e;
    zg_net n;
    zg_net_hop h[ZG_NET_MAX_HOPS];
    double lat;
    CHECK_OK(zg_net_preset("v5e-8", &n, &e), &e);
    // (0,0) -> (0,2): two hops along y
    CHECK_EQ_INT(zg_net_route(&n, 0, 4, h, &lat), 2);
    CHECK(h[0].frac == 1.0 && h[1].frac == 1.0);
    CHECK_NEAR(lat, 2e-6, 1e-15, 0);
    // (0,0) -> (1,3): x-then-y and y-then-x, half each; 4 hops on one path
    int32_t nh = zg_net_route(&n, 0, 7, h, &lat);
    double tot = 0;
    for (int i = 0; i < nh; i++) tot += h[i].frac;
    CHECK_NEAR(tot, 4.0, 1e-12, 0);
    CHECK_EQ_INT(nh, 8);
    CHECK_NEAR(lat, 4e-6, 1e-15, 0);
    // torus of 16: 0 -> 8 is a tie, half each way around
    CHECK_OK(zg_net_preset("v5e-256", &n, &e), &e);
    nh = zg_net_route(&n, 0, 8, h, &lat);
    CHECK_EQ_INT(nh, 16);
    for (int i = 0; i < nh; i++) CHECK(h[i].frac == 0.5);
    char name[64];
    zg_net_link_name(&n, h[0].link, name, sizeof name);
    CHECK(strstr(name, "->") != NULL);
    CHECK_EQ_INT(zg_net_route(&n, 5, 5, h, &lat), 0);
}

ZG_TEST(line_all_gather_matches_hand_count) {
    zg_error e;
    zg_net n;
    zg_net_cost c;
    CHECK_OK(zg_net_preset("v5e-8", &n, &e), &e);
    int32_t g[4] = {0, 2, 4, 6};  // x = 0, y = 0..3
    CHECK_OK(zg_net_coll_price(&n, ZG_COLL_ALL_GATHER, 4e6, 1, 4, g, NULL, &c, &e), &e);
    // line of 4, chunk 1 MB: the end link carries 3 chunks
    CHECK_NEAR(c.bw_time, 3e6 / V5E_BW, 0, 1e-12);
    CHECK_EQ_INT(c.steps, 3);
    CHECK_NEAR(c.alpha_time, 3 * 2e-6, 0, 1e-12);
    CHECK_NEAR(c.lat_time, 1e-6, 0, 1e-12);
    CHECK_NEAR(c.max_link_bytes, 3e6, 0, 1e-12);
    zg_net_cost r;
    CHECK_OK(zg_net_coll_price(&n, ZG_COLL_REDUCE_SCATTER, 4e6, 1, 4, g, NULL, &r, &e), &e);
    CHECK_NEAR(r.bw_time, c.bw_time, 0, 1e-12);
    CHECK_OK(zg_net_coll_price(&n, ZG_COLL_ALL_REDUCE, 4e6, 1, 4, g, NULL, &r, &e), &e);
    CHECK_NEAR(r.bw_time, 2 * c.bw_time, 0, 1e-12);
    CHECK_EQ_INT(r.steps, 6);
}

ZG_TEST(ring_on_a_wrapped_axis_is_twice_as_fast_as_a_line) {
    zg_error e;
    zg_net n;
    zg_net_cost ring, line;
    CHECK_OK(zg_net_preset("v5e-256", &n, &e), &e);
    int32_t g[16];
    for (int i = 0; i < 16; i++) g[i] = i;  // row y = 0
    CHECK_OK(zg_net_coll_price(&n, ZG_COLL_ALL_GATHER, 16e6, 1, 16, g, NULL, &ring, &e), &e);
    CHECK_NEAR(ring.bw_time, 7.5e6 / V5E_BW, 0, 1e-12);  // 15 chunks over two directions
    n.wrap[0] = 0;
    CHECK_OK(zg_net_coll_price(&n, ZG_COLL_ALL_GATHER, 16e6, 1, 16, g, NULL, &line, &e), &e);
    CHECK_NEAR(line.bw_time, 15e6 / V5E_BW, 0, 1e-12);
    CHECK_NEAR(line.bw_time / ring.bw_time, 2.0, 0, 1e-12);
}

ZG_TEST(two_flows_sharing_a_link_get_half_bandwidth) {
    zg_error e;
    zg_net n;
    zg_net_cost one, two;
    CHECK_OK(zg_net_preset("v5e-8", &n, &e), &e);
    int32_t a[2] = {0, 4};            // (0,0) -> (0,2)
    int32_t ab[4] = {0, 4, 2, 6};     // plus (0,1) -> (0,3): both cross (0,1)->(0,2)
    int32_t apart[4] = {0, 4, 1, 5};  // x = 1 column: disjoint links
    CHECK_OK(zg_net_coll_price(&n, ZG_COLL_PERMUTE, 1e6, 1, 2, a, NULL, &one, &e), &e);
    CHECK_NEAR(one.bw_time, 1e6 / V5E_BW, 0, 1e-12);
    CHECK_OK(zg_net_coll_price(&n, ZG_COLL_PERMUTE, 1e6, 2, 2, ab, NULL, &two, &e), &e);
    CHECK_NEAR(two.bw_time, 2e6 / V5E_BW, 0, 1e-12);
    char name[64];
    zg_net_link_name(&n, two.bottleneck_link, name, sizeof name);
    CHECK_STR(name, "(0,1)->(0,2)");
    CHECK_OK(zg_net_coll_price(&n, ZG_COLL_PERMUTE, 1e6, 2, 2, apart, NULL, &two, &e), &e);
    CHECK_NEAR(two.bw_time, 1e6 / V5E_BW, 0, 1e-12);
    // link_bytes accumulates per directed link
    double *lb = calloc((size_t)zg_net_n_links(&n), sizeof *lb);
    CHECK_OK(zg_net_coll_price(&n, ZG_COLL_PERMUTE, 1e6, 2, 2, ab, lb, &two, &e), &e);
    double tot = 0;
    for (int l = 0; l < zg_net_n_links(&n); l++) tot += lb[l];
    free(lb);
    CHECK_NEAR(tot, 4e6, 0, 1e-12);  // 2 flows x 2 hops
}

// An all-gather of `bytes` over the 8 devices of preset `name` (n receives the network).
static zg_status all_gather_8(const char *name, double bytes, zg_net *n, zg_net_cost *c,
                              zg_error *e) {
    static const int32_t all[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    zg_status st = zg_net_preset(name, n, e);
    return st ? st : zg_net_coll_price(n, ZG_COLL_ALL_GATHER, bytes, 1, 8, all, NULL, c, e);
}

ZG_TEST(multi_axis_group_runs_per_dimension_phases) {
    zg_error e;
    zg_net n;
    zg_net_cost c;
    CHECK_OK(all_gather_8("v5e-8", 8e6, &n, &c, &e), &e);
    // x phase (line of 2) with chunk 1 MB, then y phase (line of 4) with chunk 2 MB: 1 + 6
    CHECK_NEAR(c.bw_time, 7e6 / V5E_BW, 0, 1e-12);
    CHECK_EQ_INT(c.phases, 2);
    CHECK_EQ_INT(c.steps, 4);
    // all-to-all over a line of 4: the middle link carries 2 x 2 chunks of 1 MB
    int32_t g[4] = {0, 2, 4, 6};
    CHECK_OK(zg_net_coll_price(&n, ZG_COLL_ALL_TO_ALL, 4e6, 1, 4, g, NULL, &c, &e), &e);
    CHECK_NEAR(c.bw_time, 4e6 / V5E_BW, 0, 1e-12);
    CHECK_EQ_INT(c.steps, 3);
    // two concurrent groups (the two columns) use disjoint links: same time as one
    int32_t cols[8] = {0, 2, 4, 6, 1, 3, 5, 7};
    zg_net_cost c2;
    CHECK_OK(zg_net_coll_price(&n, ZG_COLL_ALL_TO_ALL, 4e6, 2, 4, cols, NULL, &c2, &e), &e);
    CHECK_NEAR(c2.bw_time, c.bw_time, 0, 1e-12);
    // a non-contiguous group {y=0, y=2} is a line whose one step crosses two links
    int32_t gap[4] = {0, 4, 2, 6};
    CHECK_OK(zg_net_coll_price(&n, ZG_COLL_ALL_GATHER, 2e6, 2, 2, gap, NULL, &c, &e), &e);
    CHECK_NEAR(c.bw_time, 2e6 / V5E_BW, 0, 1e-12);  // link (0,1)->(0,2) carries 1 MB twice
}

ZG_TEST(switched_nodes_price_tx_links_and_uplinks) {
    zg_error e;
    zg_net n;
    zg_net_cost c;
    CHECK_OK(all_gather_8("h100x8", 8e6, &n, &c, &e), &e);
    CHECK_NEAR(c.bw_time, 7e6 / 4.5e11, 0, 1e-12);  // each GPU sends 7 chunks
    CHECK_OK(zg_net_preset("pcie8", &n, &e), &e);
    int32_t g[4] = {0, 1, 4, 5};  // two GPUs under each PCIe switch
    CHECK_OK(zg_net_coll_price(&n, ZG_COLL_ALL_GATHER, 4e6, 1, 4, g, NULL, &c, &e), &e);
    // cheapest order: across the uplink first (2 flows of 1 MB), then inside (2 MB): 4 MB-time
    CHECK_NEAR(c.bw_time, 4e6 / 2.5e10, 0, 1e-12);
    int32_t same[4] = {0, 1, 2, 3};
    CHECK_OK(zg_net_coll_price(&n, ZG_COLL_ALL_GATHER, 4e6, 1, 4, same, NULL, &c, &e), &e);
    CHECK_NEAR(c.bw_time, 3e6 / 2.5e10, 0, 1e-12);
    CHECK_OK(zg_net_preset("h100x8-ib:2", &n, &e), &e);
    int32_t x[2] = {0, 8};
    CHECK_OK(zg_net_coll_price(&n, ZG_COLL_PERMUTE, 5e7, 1, 2, x, NULL, &c, &e), &e);
    CHECK_NEAR(c.bw_time, 1e-3, 0, 1e-12);  // 50 MB over a 50 GB/s NIC
}

ZG_TEST(bad_collectives_are_rejected_with_the_value) {
    zg_error e;
    zg_net n;
    zg_net_cost c;
    CHECK_OK(zg_net_preset("v5e-4", &n, &e), &e);
    int32_t bad[2] = {0, 9};
    CHECK(zg_net_coll_price(&n, ZG_COLL_ALL_GATHER, 1, 1, 2, bad, NULL, &c, &e) == ZG_ERR_INVALID);
    CHECK(strstr(e.msg, "device 9") != NULL);
    int32_t dup[2] = {1, 1};
    CHECK(zg_net_coll_price(&n, ZG_COLL_ALL_REDUCE, 1, 1, 2, dup, NULL, &c, &e) == ZG_ERR_INVALID);
    CHECK(strstr(e.msg, "twice") != NULL);
    int32_t three[3] = {0, 1, 2};
    CHECK(zg_net_coll_price(&n, ZG_COLL_PERMUTE, 1, 1, 3, three, NULL, &c, &e) == ZG_ERR_INVALID);
    CHECK(zg_net_coll_price(&n, ZG_COLL_N, 1, 1, 2, three, NULL, &c, &e) == ZG_ERR_INVALID);
}

ZG_TEST(calibration_recovers_efficiency_and_alpha) {
    zg_error e;
    zg_net truth, fit;
    CHECK_OK(zg_net_preset("v5e-8", &truth, &e), &e);
    fit = truth;
    truth.eff[ZG_COLL_ALL_GATHER] = 0.5;
    truth.alpha[ZG_COLL_ALL_GATHER] = 7e-6;
    static const int32_t row[4] = {0, 2, 4, 6}, all[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    zg_net_sample s[6];
    for (int i = 0; i < 6; i++) {
        zg_net_cost c;
        s[i].kind = ZG_COLL_ALL_GATHER;
        s[i].n_groups = 1;
        s[i].group_size = i % 2 ? 8 : 4;
        s[i].members = i % 2 ? all : row;
        s[i].bytes = 1e5 * (1 << (2 * i));
        CHECK_OK(zg_net_coll_price(&truth, s[i].kind, s[i].bytes, 1, s[i].group_size,
                                   s[i].members, NULL, &c, &e), &e);
        s[i].measured_s = c.time;
    }
    double rms = 1;
    CHECK_OK(zg_net_calibrate(&fit, s, 6, &rms, &e), &e);
    CHECK_NEAR(fit.eff[ZG_COLL_ALL_GATHER], 0.5, 0, 1e-9);
    CHECK_NEAR(fit.alpha[ZG_COLL_ALL_GATHER], 7e-6, 1e-15, 1e-6);
    CHECK(fit.eff[ZG_COLL_PERMUTE] == 1.0);  // no samples: unchanged
    CHECK(rms < 1e-9);
    s[0].measured_s = -1;
    CHECK(zg_net_calibrate(&fit, s, 6, NULL, &e) == ZG_ERR_INVALID);
}

// TPU wraparound as on the real slices: a v5e axis wraps only when it spans all 16 chips, a v5p
// slice on every axis of a 4x4x4 or larger cube.
ZG_TEST(wraparound_only_where_the_real_slices_have_it) {
    zg_error e;
    zg_net n;
    CHECK_OK(zg_net_preset("v5e:4x4", &n, &e), &e);
    CHECK(!n.wrap[0] && !n.wrap[1]);
    CHECK_OK(zg_net_preset("v5e:8x16", &n, &e), &e);
    CHECK(!n.wrap[0] && n.wrap[1]);
    CHECK_OK(zg_net_preset("v5p:2x2x4", &n, &e), &e);
    CHECK(!n.wrap[0] && !n.wrap[1] && !n.wrap[2]);
    CHECK_OK(zg_net_preset("v5p:4x4x8", &n, &e), &e);
    CHECK(n.wrap[0] && n.wrap[1] && n.wrap[2]);
}

// A topology can list the user's devices by coordinates (jax: [d.coords for d in devices]);
// plans then name chips by the user's indices.
ZG_TEST(device_coords_map_user_devices_to_chips) {
    zg_error e;
    zg_net n;
    cJSON *j = NULL;
    const char *txt = "{\"preset\":\"v5e-8\",\"device_coords\":[[1,3,0],[0,3,0],[1,2,0],[0,2,0],"
                      "[1,1,0],[0,1,0],[1,0,0],[0,0,0]]}";
    CHECK_OK(zg_json_parse(txt, "t", &j, &e), &e);
    CHECK_OK(zg_net_from_json(j, &n, &e), &e);
    cJSON_Delete(j);
    CHECK(n.has_user_order);
    // chip 0 is (0,0): user device 7; chip 7 is (1,3): user device 0
    CHECK_EQ_INT(zg_net_user_index(&n, 0), 7);
    CHECK_EQ_INT(zg_net_user_index(&n, 7), 0);
    CHECK_EQ_INT(n.user_to_phys[2], 5);  // (1,2) = 1 + 2*2
    // the topology's JSON lists them back in the user's order
    cJSON *w = zg_net_to_json(&n);
    const cJSON *dc = cJSON_GetObjectItemCaseSensitive(w, "device_coords");
    CHECK(cJSON_GetArraySize(dc) == 8);
    CHECK(cJSON_GetArrayItem(cJSON_GetArrayItem(dc, 0), 0)->valueint == 1 &&
          cJSON_GetArrayItem(cJSON_GetArrayItem(dc, 0), 1)->valueint == 3);
    cJSON_Delete(w);
    zg_net m;
    // bad lists name what is wrong
    const char *bad[][2] = {
        {"{\"preset\":\"v5e-4\",\"device_coords\":[[0,0],[1,0],[0,1]]}", "lists 3 devices"},
        {"{\"preset\":\"v5e-4\",\"device_coords\":[[0,0],[1,0],[0,1],[0,1]]}", "repeats"},
        {"{\"preset\":\"v5e-4\",\"device_coords\":[[0,0],[1,0],[0,1],[2,1]]}", "= 2 is outside 0..1"},
        {"{\"preset\":\"v5e-4\",\"device_coords\":[[0,0],[1,0],[0,1],[1,1,1]]}", "array of 2"},
        {"{\"preset\":\"v5e-4\",\"device_coords\":[[0],[1],[2],[3]]}", "have 1 coordinates"},
        {"{\"preset\":\"v5e-4\",\"device_coords\":{}}", "must be an array"}};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        CHECK_OK(zg_json_parse(bad[k][0], "t", &j, &e), &e);
        CHECK(zg_net_from_json(j, &m, &e) == ZG_ERR_INVALID);
        CHECK_MSG(strstr(e.msg, bad[k][1]) != NULL, "%s: %s", bad[k][0], e.msg);
        cJSON_Delete(j);
    }
}

ZG_TEST_MAIN()
