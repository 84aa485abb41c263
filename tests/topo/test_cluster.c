// test_cluster.c — cluster presets, cpu:N, JSON round trip, validation, nodes spanned.
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "topo/topo.h"
#include "zgtest.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

static int same_cluster(const zg_cluster *a, const zg_cluster *b) {
    return !strcmp(a->name, b->name) && !strcmp(a->device, b->device) &&
           a->world_size == b->world_size && a->ranks_per_node == b->ranks_per_node &&
           a->mem_bytes == b->mem_bytes && a->mem_usable_frac == b->mem_usable_frac &&
           a->peak_flops == b->peak_flops && a->intra_bw == b->intra_bw &&
           a->intra_lat == b->intra_lat && a->inter_bw == b->inter_bw &&
           a->inter_lat == b->inter_lat;
}

ZG_TEST(presets_have_documented_values) {
    zg_error e;
    zg_cluster c;
    CHECK_OK(zg_cluster_preset("8xA800", &c, &e), &e);
    CHECK_STR(c.device, "A800");
    CHECK_EQ_INT(c.world_size, 8);
    CHECK_EQ_INT(c.ranks_per_node, 8);
    CHECK_EQ_INT(zg_cluster_n_nodes(&c), 1);
    CHECK(c.mem_bytes == 80 * GIB);
    CHECK(c.peak_flops == 312e12);
    CHECK_NEAR(c.intra_bw, 160e9, 0, 1e-12);  // 400 GB/s bidirectional / 2 * 0.8 usable
    CHECK_NEAR(c.inter_bw, 20e9, 0, 1e-12);   // HDR 200 Gb/s * 0.8
    CHECK_OK(zg_cluster_preset("16xA800", &c, &e), &e);
    CHECK_EQ_INT(zg_cluster_n_nodes(&c), 2);
    CHECK(c.inter_bw < c.intra_bw);
    CHECK_OK(zg_cluster_preset("32xA6000", &c, &e), &e);
    CHECK_STR(c.device, "A6000");
    CHECK_EQ_INT(zg_cluster_n_nodes(&c), 4);
    CHECK(c.mem_bytes == 48 * GIB);
    CHECK(c.peak_flops == 154.8e12);
    CHECK(c.intra_bw < 32e9);  // PCIe, not NVLink
    CHECK_OK(zg_cluster_preset("8xH200", &c, &e), &e);
    CHECK(c.mem_bytes == 140 * GIB && c.peak_flops == 989e12);
    CHECK_OK(zg_cluster_preset("1024xH100", &c, &e), &e);
    CHECK_EQ_INT(c.world_size, 1024);
    CHECK_EQ_INT(zg_cluster_n_nodes(&c), 128);
    CHECK_NEAR(c.inter_bw, 40e9, 0, 1e-12);  // NDR 400 Gb/s per GPU * 0.8
    CHECK_EQ_INT(zg_cluster_node_of(&c, 1023), 127);
    int n = 0;
    for (const char *const *p = zg_cluster_preset_names(); *p; p++, n++) {
        const char *name = strcmp(*p, "cpu:N") ? *p : "cpu:3";
        CHECK_OK(zg_cluster_preset(name, &c, &e), &e);
        CHECK_OK(zg_cluster_validate(&c, &e), &e);
    }
    CHECK_EQ_INT(n, 9);
}

ZG_TEST(cpu_preset_is_one_node_of_n_ranks) {
    zg_error e;
    zg_cluster c;
    CHECK_OK(zg_cluster_preset("cpu:4", &c, &e), &e);
    CHECK_STR(c.name, "cpu:4");
    CHECK_STR(c.device, "cpu");
    CHECK_EQ_INT(c.world_size, 4);
    CHECK_EQ_INT(c.ranks_per_node, 4);
    CHECK(c.mem_bytes > 0 && c.peak_flops > 0 && c.peak_flops <= 95e9);
    zg_cluster c1;
    CHECK_OK(zg_cluster_preset("cpu:1", &c1, &e), &e);
    CHECK_NEAR(c1.mem_bytes, 4 * c.mem_bytes, 0, 1e-12);  // RAM share split over the ranks
    const char *bad[] = {"cpu:", "cpu:0", "cpu:-2", "cpu:4x", "cpu:100000"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(zg_cluster_preset(bad[i], &c, &e) == ZG_ERR_INVALID);
        CHECK(strstr(e.msg, bad[i]) != NULL);
    }
}

ZG_TEST(unknown_names_are_rejected) {
    zg_error e;
    zg_cluster c;
    CHECK(zg_cluster_preset("A800", &c, &e) == ZG_ERR_INVALID);
    CHECK(strstr(e.msg, "'A800'") && strstr(e.msg, "16xA800") && strstr(e.msg, "NxGPU"));
    CHECK(zg_cluster_load("", &c, &e) == ZG_ERR_INVALID);
    CHECK(zg_cluster_load("/nonexistent/cluster.json", &c, &e) != ZG_OK);
    CHECK(strstr(e.msg, "/nonexistent/cluster.json") != NULL);
}

// A cluster from its JSON text.
static zg_status parse_cluster(const char *text, zg_cluster *c, zg_error *e) {
    cJSON *j = NULL;
    zg_status st = zg_json_parse(text, "t", &j, e);
    if (st) return st;
    st = zg_cluster_from_json(j, c, e);
    cJSON_Delete(j);
    return st;
}

ZG_TEST(json_round_trip_every_preset) {
    zg_error e;
    for (const char *const *p = zg_cluster_preset_names(); *p; p++) {
        const char *name = strcmp(*p, "cpu:N") ? *p : "cpu:2";
        zg_cluster a, b;
        CHECK_OK(zg_cluster_preset(name, &a, &e), &e);
        cJSON *j = zg_cluster_to_json(&a);
        char *text = cJSON_PrintUnformatted(j);
        cJSON_Delete(j);
        zg_status st = parse_cluster(text, &b, &e);
        free(text);
        CHECK_OK(st, &e);
        CHECK_MSG(same_cluster(&a, &b), "round trip of %s changed it", name);
    }
}

// The one memory cap: device memory x usable fraction (the 5% margin: CUDA context and
// allocator fragmentation), whatever the count of ranks; a JSON override of either moves it.
ZG_TEST(mem_cap_is_memory_times_usable_fraction) {
    zg_error e;
    zg_cluster c;
    CHECK_OK(zg_cluster_preset("8xA800", &c, &e), &e);
    CHECK(zg_cluster_mem_cap_bytes(&c) == 76.0 * GIB);  // 80 GiB x 0.95, exact in binary
    CHECK_OK(zg_cluster_preset("16xA800", &c, &e), &e);
    CHECK(zg_cluster_mem_cap_bytes(&c) == 76.0 * GIB);  // per rank: the world size does not count
    CHECK_OK(zg_cluster_preset("32xA6000", &c, &e), &e);
    CHECK(zg_cluster_mem_cap_bytes(&c) == 48 * GIB * 0.95);
    CHECK_NEAR(zg_cluster_mem_cap_bytes(&c) / GIB, 45.6, 0, 1e-12);
    CHECK_OK(zg_cluster_preset("8xH200", &c, &e), &e);
    CHECK_NEAR(zg_cluster_mem_cap_bytes(&c) / GIB, 133.0, 0, 1e-12);
    CHECK_OK(parse_cluster("{\"preset\":\"8xA800\",\"mem_usable_frac\":0.9}", &c, &e), &e);
    CHECK_NEAR(zg_cluster_mem_cap_bytes(&c) / GIB, 72.0, 0, 1e-12);
    CHECK_OK(parse_cluster("{\"preset\":\"8xA800\",\"mem_bytes\":4e10}", &c, &e), &e);
    CHECK(zg_cluster_mem_cap_bytes(&c) == 4e10 * 0.95);
}

ZG_TEST(json_custom_and_preset_override) {
    zg_error e;
    zg_cluster c;
    CHECK_OK(parse_cluster("{\"name\":\"lab\",\"device\":\"A100\",\"world_size\":12,"
                           "\"ranks_per_node\":8,\"mem_bytes\":4e10,\"peak_flops\":3e14,"
                           "\"intra_bw\":1e11,\"intra_lat\":5e-6,\"inter_bw\":1e10,"
                           "\"inter_lat\":1e-5}",
                           &c, &e),
             &e);
    CHECK_STR(c.name, "lab");
    CHECK_EQ_INT(c.world_size, 12);
    CHECK_EQ_INT(zg_cluster_n_nodes(&c), 2);  // a partial last node (8 + 4) is allowed
    CHECK(c.mem_usable_frac == 0.95);         // default
    // one node: inter-node link defaults to the intra-node one; ranks_per_node to world_size
    CHECK_OK(parse_cluster("{\"world_size\":2,\"mem_bytes\":1e9,\"peak_flops\":1e10,"
                           "\"intra_bw\":1e9,\"intra_lat\":0}",
                           &c, &e),
             &e);
    CHECK_EQ_INT(c.ranks_per_node, 2);
    CHECK(c.inter_bw == 1e9 && c.inter_lat == 0);
    // a preset as the base with overrides
    CHECK_OK(parse_cluster("{\"preset\":\"16xA800\",\"name\":\"16xA800-slowib\","
                           "\"inter_bw\":5e9}",
                           &c, &e),
             &e);
    CHECK_STR(c.name, "16xA800-slowib");
    CHECK(c.inter_bw == 5e9 && c.world_size == 16 && c.intra_bw == 160e9);
    // docs/formats.md §4's example: a smaller world_size than the base's node is one node
    CHECK_OK(parse_cluster("{\"preset\":\"8xA800\",\"name\":\"my-a800\",\"world_size\":4}",
                           &c, &e),
             &e);
    CHECK(c.world_size == 4 && c.ranks_per_node == 4);
    CHECK(parse_cluster("{\"preset\":\"8xA800\",\"world_size\":4,\"ranks_per_node\":8}", &c,
                        &e) == ZG_ERR_INVALID);  // explicit: still checked
}

ZG_TEST(json_file_load) {
    zg_error e;
    char dir[] = "/tmp/zg_cluster_test_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[128];
    snprintf(path, sizeof path, "%s/c.json", dir);
    zg_cluster a, b;
    CHECK_OK(zg_cluster_preset("32xA6000", &a, &e), &e);
    cJSON *j = zg_cluster_to_json(&a);
    zg_status st = zg_json_write_file(path, j, 1, &e);
    cJSON_Delete(j);
    CHECK_OK(st, &e);
    st = zg_cluster_load(path, &b, &e);
    unlink(path);
    rmdir(dir);
    CHECK_OK(st, &e);
    CHECK(same_cluster(&a, &b));
}

ZG_TEST(json_bad_input_names_the_value) {
    zg_error e;
    zg_cluster c;
    const char *base = "\"mem_bytes\":1e9,\"peak_flops\":1e10,\"intra_bw\":1e9,\"intra_lat\":1e-6";
    char buf[512];
    struct {
        const char *extra, *want;
    } cases[] = {
        {"\"world_size\":0", "world_size = 0"},
        {"\"world_size\":-3", "world_size = -3"},
        {"\"world_size\":4,\"ranks_per_node\":0", "ranks_per_node = 0"},
        {"\"world_size\":4,\"ranks_per_node\":8", "ranks_per_node = 8"},
        {"\"world_size\":4,\"inter_bw\":-1", "inter_bw = -1"},
        {"\"world_size\":4,\"inter_lat\":-1e-6", "inter_lat = -1e-06"},
        {"\"world_size\":4,\"mem_usable_frac\":1.5", "mem_usable_frac = 1.5"},
        {"\"world_size\":2.5", "world_size"},
        {"\"world_size\":\"8\"", "world_size"},
        {"\"world_size\":1e12", "out of range"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(buf, sizeof buf, "{%s,%s}", base, cases[i].extra);
        CHECK_MSG(parse_cluster(buf, &c, &e) == ZG_ERR_INVALID, "accepted %s", buf);
        CHECK_MSG(strstr(e.msg, cases[i].want) != NULL, "message '%s' lacks '%s'", e.msg,
                  cases[i].want);
    }
    CHECK(parse_cluster("{\"world_size\":4}", &c, &e) == ZG_ERR_INVALID);
    CHECK(strstr(e.msg, "missing \"mem_bytes\"") != NULL);
    CHECK(parse_cluster("{\"preset\":\"8xV100\"}", &c, &e) == ZG_ERR_INVALID);
    CHECK(strstr(e.msg, "8xV100") != NULL);
    // NxGPU forms are bases too
    CHECK_OK(parse_cluster("{\"preset\":\"2x4xB200\",\"inter_bw\":1e10}", &c, &e), &e);
    CHECK(c.world_size == 8 && c.ranks_per_node == 4 && c.inter_bw == 1e10);
    CHECK(parse_cluster("[1,2]", &c, &e) == ZG_ERR_INVALID);
    CHECK(parse_cluster("{\"world_size\":4,", &c, &e) == ZG_ERR_PARSE);
}

ZG_TEST(validate_catches_hand_built_clusters) {
    zg_error e;
    zg_cluster c;
    CHECK_OK(zg_cluster_preset("8xH100", &c, &e), &e);
    c.intra_bw = 0;
    CHECK(zg_cluster_validate(&c, &e) == ZG_ERR_INVALID);
    CHECK(strstr(e.msg, "intra_bw = 0") != NULL);
    CHECK_OK(zg_cluster_preset("8xH100", &c, &e), &e);
    c.peak_flops = 0.0 / 0.0;
    CHECK(zg_cluster_validate(&c, &e) == ZG_ERR_INVALID);
    CHECK(strstr(e.msg, "peak_flops") != NULL);
}

ZG_TEST(nodes_spanned) {
    zg_error e;
    zg_cluster c;
    CHECK_OK(zg_cluster_preset("32xA6000", &c, &e), &e);
    int32_t in_node[] = {8, 9, 10, 11, 12, 13, 14, 15};
    CHECK_EQ_INT(zg_cluster_nodes_spanned(&c, in_node, 8), 1);
    int32_t across[] = {6, 7, 8, 9};
    CHECK_EQ_INT(zg_cluster_nodes_spanned(&c, across, 4), 2);
    int32_t all[32];
    for (int i = 0; i < 32; i++) all[i] = i;
    CHECK_EQ_INT(zg_cluster_nodes_spanned(&c, all, 32), 4);
    int32_t unsorted[] = {25, 3, 30, 4, 17};  // nodes 3, 0, 3, 0, 2
    CHECK_EQ_INT(zg_cluster_nodes_spanned(&c, unsorted, 5), 3);
    CHECK_EQ_INT(zg_cluster_nodes_spanned(&c, all, 0), 0);
}

// Every GPU of the table in both forms, with the documented figures (docs/cost-model.md §1).
ZG_TEST(every_gpu_in_both_forms) {
    zg_error e;
    zg_cluster c;
    struct {
        const char *gpu;
        double mem_gib, peak, intra, inter_8;  // inter_8: per GPU in an 8-GPU node
    } want[] = {
        {"A100", 80, 312e12, 300e9 * 0.8, 25e9 * 0.8},
        {"A800", 80, 312e12, 200e9 * 0.8, 25e9 * 0.8},
        {"A6000", 48, 154.8e12, 31.5e9 * 0.6, 25e9 / 8 * 0.8},
        {"L40S", 45, 362.05e12, 31.5e9 * 0.6, 50e9 / 8 * 0.8},
        {"H100", 80, 989e12, 450e9 * 0.8, 50e9 * 0.8},
        {"H200", 140, 989e12, 450e9 * 0.8, 50e9 * 0.8},
        {"B200", 179, 2250e12, 900e9 * 0.8, 50e9 * 0.8},
    };
    int n = 0;
    for (const char *const *d = zg_cluster_devices(); *d; d++, n++) {
        CHECK_STR(*d, want[n].gpu);
        char name[64];
        snprintf(name, sizeof name, "32x%s", *d);
        CHECK_OK(zg_cluster_preset(name, &c, &e), &e);
        CHECK_STR(c.name, name);
        CHECK_STR(c.device, *d);
        CHECK_EQ_INT(c.world_size, 32);
        CHECK_EQ_INT(c.ranks_per_node, 8);
        CHECK(c.mem_bytes == want[n].mem_gib * GIB);
        CHECK(c.peak_flops == want[n].peak);
        CHECK_NEAR(c.intra_bw, want[n].intra, 0, 1e-12);
        CHECK_NEAR(c.inter_bw, want[n].inter_8, 0, 1e-12);
        CHECK_OK(zg_cluster_validate(&c, &e), &e);
        // NODESxGPUSxGPU: the same cluster as NxGPU when the layout agrees
        zg_cluster c3;
        snprintf(name, sizeof name, "4x8x%s", *d);
        CHECK_OK(zg_cluster_preset(name, &c3, &e), &e);
        CHECK_STR(c3.name, name);
        snprintf(c3.name, sizeof c3.name, "32x%s", *d);
        CHECK(same_cluster(&c, &c3));
        // small: one node of N
        snprintf(name, sizeof name, "3x%s", *d);
        CHECK_OK(zg_cluster_preset(name, &c, &e), &e);
        CHECK_EQ_INT(c.world_size, 3);
        CHECK_EQ_INT(c.ranks_per_node, 3);
        CHECK_EQ_INT(zg_cluster_n_nodes(&c), 1);
    }
    CHECK_EQ_INT(n, 7);
    // a GPU with one NIC per node shares it over the node's GPUs
    CHECK_OK(zg_cluster_preset("2x4xA6000", &c, &e), &e);
    CHECK_NEAR(c.inter_bw, 25e9 / 4 * 0.8, 0, 1e-12);
    CHECK_OK(zg_cluster_preset("2x4xH100", &c, &e), &e);
    CHECK_NEAR(c.inter_bw, 50e9 * 0.8, 0, 1e-12);  // one NIC per GPU: unchanged
}

ZG_TEST(forms_layout_and_spelling) {
    zg_error e;
    zg_cluster c;
    struct {
        const char *in, *name;
        int32_t world, per_node, nodes;
    } ok[] = {
        {"32xA800", "32xA800", 32, 8, 4},   {"4xH100", "4xH100", 4, 4, 1},
        {"2x8xH100", "2x8xH100", 16, 8, 2}, {"8xH100", "8xH100", 8, 8, 1},
        {"12xB200", "12xB200", 12, 8, 2},    // partial last node: 8 + 4
        {"1xL40S", "1xL40S", 1, 1, 1},      {"16x1xA100", "16x1xA100", 16, 1, 16},
        {"4xh100", "4xH100", 4, 4, 1},      {"4XH200", "4xH200", 4, 4, 1},
        {"0004xA6000", "4xA6000", 4, 4, 1}, {"65536xH100", "65536xH100", 65536, 8, 8192},
        {"8192x8xB200", "8192x8xB200", 65536, 8, 8192},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        CHECK_OK(zg_cluster_load(ok[i].in, &c, &e), &e);
        CHECK_STR(c.name, ok[i].name);  // the canonical spelling
        CHECK_EQ_INT(c.world_size, ok[i].world);
        CHECK_EQ_INT(c.ranks_per_node, ok[i].per_node);
        CHECK_EQ_INT(zg_cluster_n_nodes(&c), ok[i].nodes);
        CHECK_OK(zg_cluster_validate(&c, &e), &e);
    }
}

// Every preset is its own NxGPU form: the spelled-out form gives the identical cluster.
ZG_TEST(presets_equal_their_forms) {
    zg_error e;
    for (const char *const *p = zg_cluster_preset_names(); *p; p++) {
        if (!strcmp(*p, "cpu:N")) continue;
        zg_cluster a, b, c;
        CHECK_OK(zg_cluster_preset(*p, &a, &e), &e);
        char lower[64], three[64];
        snprintf(lower, sizeof lower, "%s", *p);
        for (char *q = lower; *q; q++) *q = (char)(*q >= 'A' && *q <= 'Z' ? *q - 'A' + 'a' : *q);
        CHECK_OK(zg_cluster_preset(lower, &b, &e), &e);  // not the preset table's spelling
        CHECK_MSG(same_cluster(&a, &b), "%s and %s differ", *p, lower);
        snprintf(three, sizeof three, "%dx%dx%s", a.world_size / a.ranks_per_node,
                 a.ranks_per_node, a.device);
        CHECK_OK(zg_cluster_preset(three, &c, &e), &e);
        snprintf(c.name, sizeof c.name, "%s", a.name);
        CHECK_MSG(same_cluster(&a, &c), "%s and %s differ", *p, three);
    }
}

ZG_TEST(bad_forms_name_the_value_and_the_choices) {
    zg_error e;
    zg_cluster c;
    struct {
        const char *in, *want;
    } bad[] = {
        {"3xV100", "unknown GPU 'V100'"},
        {"8xB100", "unknown GPU 'B100'"},
        {"2x8xTPU", "unknown GPU 'TPU'"},
        {"0xH100", "GPU count 0 is out of range 1..65536"},
        {"-4xH100", "GPU count '-4' is not a whole number"},
        {"+4xH100", "'+4' is not a whole number"},
        {"4.5xH100", "'4.5' is not a whole number"},
        {"1e3xH100", "'1e3' is not a whole number"},
        {"65537xH100", "GPU count 65537 is out of range"},
        {"18446744073709551617xH100", "18446744073709551617 is out of range"},
        {"99999999999999999999999999999xA800", "is out of range"},
        {"0x8xH100", "node count 0 is out of range"},
        {"2x0xH100", "GPUs per node 0 is out of range"},
        {"2x9xH100", "9 GPUs per node: H100 nodes hold at most 8"},
        {"9000x8xH100", "9000 x 8 = 72000 GPUs is over the limit of 65536"},
        {"xH100", "missing the GPU count before 'x'"},
        {"x8xH100", "missing the node count before 'x'"},
        {"2xx8xH100", "too many"},
        {"4x", "missing the GPU after the last 'x'"},
        {"2x8x", "missing the GPU after the last 'x'"},
        {"4xH100x", "missing the GPU after the last 'x'"},
        {"1x2x3xH100", "too many"},
        {"4 x H100", "'4 ' is not a whole number"},
        {" 4xH100", "not a whole number"},
        {"4xH100 ", "unknown GPU 'H100 '"},
        {"garbage", "not NxGPU, NODESxGPUSxGPU or a preset"},
        {"H100", "not NxGPU"},
        {"x", "missing"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_MSG(zg_cluster_load(bad[i].in, &c, &e) == ZG_ERR_INVALID, "accepted '%s'", bad[i].in);
        char quoted[96];
        snprintf(quoted, sizeof quoted, "cluster '%s'", bad[i].in);
        CHECK_MSG(strstr(e.msg, quoted) != NULL, "'%s' lacks %s", e.msg, quoted);
        CHECK_MSG(strstr(e.msg, bad[i].want) != NULL, "'%s' lacks '%s'", e.msg, bad[i].want);
        // the choices: every GPU of the table and the forms
        for (const char *const *d = zg_cluster_devices(); *d; d++)
            CHECK_MSG(strstr(e.msg, *d) != NULL, "'%s' does not list %s", e.msg, *d);
        CHECK(strstr(e.msg, "NODESxGPUSxGPU") && strstr(e.msg, ".json"));
        CHECK(!strchr(e.msg, '\n'));
    }
}

ZG_TEST(help_lists_forms_gpus_and_presets) {
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    CHECK(f != NULL);
    zg_cluster_help_print(f, "  ");
    fclose(f);
    CHECK(strstr(text, "NxGPU") && strstr(text, "NODESxGPUSxGPU") && strstr(text, "cpu:N"));
    for (const char *const *d = zg_cluster_devices(); *d; d++) CHECK(strstr(text, *d) != NULL);
    for (const char *const *p = zg_cluster_preset_names(); *p; p++)
        CHECK(strstr(text, *p) != NULL);
    free(text);
}

ZG_TEST_MAIN()
