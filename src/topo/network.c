// network.c — network presets, JSON overrides, coordinates, links and routes.
#include "topo/network.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const coll_names[ZG_COLL_N] = {"all-gather", "reduce-scatter", "all-reduce",
                                                  "all-to-all", "collective-permute"};

const char *zg_coll_kind_name(zg_coll_kind k) {
    return (k >= 0 && k < ZG_COLL_N) ? coll_names[k] : "?";
}

zg_status zg_coll_kind_parse(const char *s, zg_coll_kind *out, zg_error *err) {
    for (int k = 0; k < ZG_COLL_N; k++)
        if (!strcmp(s, coll_names[k])) return *out = (zg_coll_kind)k, ZG_OK;
    return zg_error_set(err, ZG_ERR_INVALID,
                        "unknown collective '%s' (all-gather, reduce-scatter, all-reduce, "
                        "all-to-all, collective-permute)", s);
}

static const char *const preset_names[] = {"v5e-4",  "v5e-8",  "v5e-16", "v5e-256",
                                           "v5p-4",  "v5p-8",  "v5p-64", "h100x8",
                                           "pcie8",  "h100x8-ib:2", NULL};
const char *const *zg_net_preset_names(void) { return preset_names; }

// Uncalibrated defaults: alpha per step is an assumption (a few microseconds per collective
// step on ICI/NVLink), eff = 1 means nominal link bandwidth. Calibrate with zg_net_calibrate.
static void set_common(zg_net *n) {
    for (int k = 0; k < ZG_COLL_N; k++) n->alpha[k] = 2e-6, n->eff[k] = 1.0;
    n->alpha[ZG_COLL_ALL_TO_ALL] = 3e-6;
    n->route_split = 1;
    n->flops_eff = 0.6;
    n->hbm_usable_frac = 0.9;
}

static void set_grid(zg_net *n, const char *dev, int nd, const int32_t *dims) {
    memset(n, 0, sizeof *n);
    set_common(n);
    n->kind = ZG_NET_GRID;
    n->ndims = nd;
    n->n_devices = 1;
    for (int d = 0; d < ZG_NET_MAX_DIMS; d++) n->dims[d] = d < nd ? dims[d] : 1;
    for (int d = 0; d < nd; d++) n->n_devices *= dims[d];
    snprintf(n->device, sizeof n->device, "%s", dev);
    if (!strcmp(dev, "tpu-v5e")) {
        // v5e: 16 GB HBM, 819 GB/s, 197 TF/s bf16, ICI 4.5e10 B/s per direction per link;
        // wraparound only on a full axis of 16.
        n->link_bw = 4.5e10, n->link_lat = 1e-6;
        n->peak_flops = 1.97e14, n->hbm_bw = 8.19e11, n->hbm_bytes = 16e9;
        for (int d = 0; d < nd; d++) n->wrap[d] = dims[d] == 16;
    } else {
        // v5p: 95 GiB HBM, 2.765 TB/s, 459 TF/s, ICI 9e10 B/s per direction per link;
        // wraparound on every dimension of a full 4x4x4 cube and larger.
        n->link_bw = 9e10, n->link_lat = 1e-6;
        n->peak_flops = 4.59e14, n->hbm_bw = 2.765e12, n->hbm_bytes = 95.0 * 1073741824.0;
        int cube = nd == 3 && dims[0] >= 4 && dims[1] >= 4 && dims[2] >= 4;
        for (int d = 0; d < nd; d++) n->wrap[d] = cube;
    }
}

static void set_switched(zg_net *n, const char *dev, int32_t per_switch, int32_t switches,
                         int32_t nodes) {
    memset(n, 0, sizeof *n);
    set_common(n);
    n->kind = ZG_NET_SWITCHED;
    n->ndims = 3;
    n->dims[0] = per_switch, n->dims[1] = switches, n->dims[2] = nodes;
    n->wrap[0] = n->wrap[1] = n->wrap[2] = 1;
    n->n_devices = per_switch * switches * nodes;
    snprintf(n->device, sizeof n->device, "%s", dev);
    if (!strcmp(dev, "h100")) {
        // NVLink4 through NVSwitch: 450 GB/s per direction per GPU; IB NDR 400 Gb/s per GPU.
        n->link_bw = 4.5e11, n->link_lat = 2e-6;
        n->inter_bw = 5e10, n->inter_lat = 5e-6;
        n->peak_flops = 9.89e14, n->hbm_bw = 3.35e12, n->hbm_bytes = 80e9;
    } else {
        // PCIe 4.0 x16: ~25 GB/s per direction per GPU; one x16 uplink between the switches.
        n->link_bw = 2.5e10, n->link_lat = 3e-6, n->up_bw = 2.5e10;
        n->inter_bw = 1.25e10, n->inter_lat = 8e-6;
        n->peak_flops = 1.5e14, n->hbm_bw = 7.68e11, n->hbm_bytes = 48e9;
        for (int k = 0; k < ZG_COLL_N; k++) n->alpha[k] = 8e-6;
    }
}

static int parse_dims(const char *s, int32_t *dims, int maxd) {
    int nd = 0;
    while (*s) {
        char *end = NULL;
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > 64 || nd >= maxd) return -1;
        dims[nd++] = (int32_t)v;
        s = end;
        if (*s == 'x') s++;
        else if (*s) return -1;
    }
    return nd;
}

zg_status zg_net_preset(const char *name, zg_net *n, zg_error *err) {
    int32_t dims[ZG_NET_MAX_DIMS] = {1, 1, 1};
    if (!strcmp(name, "v5e-4")) dims[0] = 2, dims[1] = 2, set_grid(n, "tpu-v5e", 2, dims);
    else if (!strcmp(name, "v5e-8")) dims[0] = 2, dims[1] = 4, set_grid(n, "tpu-v5e", 2, dims);
    else if (!strcmp(name, "v5e-16")) dims[0] = 4, dims[1] = 4, set_grid(n, "tpu-v5e", 2, dims);
    else if (!strcmp(name, "v5e-256")) dims[0] = 16, dims[1] = 16, set_grid(n, "tpu-v5e", 2, dims);
    else if (!strcmp(name, "v5p-4")) dims[0] = 2, dims[1] = 2, set_grid(n, "tpu-v5p", 3, dims);
    else if (!strcmp(name, "v5p-8"))
        dims[0] = 2, dims[1] = 2, dims[2] = 2, set_grid(n, "tpu-v5p", 3, dims);
    else if (!strcmp(name, "v5p-64"))
        dims[0] = 4, dims[1] = 4, dims[2] = 4, set_grid(n, "tpu-v5p", 3, dims);
    else if (!strcmp(name, "h100x8")) set_switched(n, "h100", 8, 1, 1);
    else if (!strcmp(name, "pcie8")) set_switched(n, "a6000", 4, 2, 1);
    else if (!strncmp(name, "h100x8-ib:", 10)) {
        char *end = NULL;
        long nodes = strtol(name + 10, &end, 10);
        if (end == name + 10 || *end || nodes < 1 || nodes > 128)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "network '%s': node count must be 1..128 (h100x8-ib:2)", name);
        set_switched(n, "h100", 8, 1, (int32_t)nodes);
    } else if (!strncmp(name, "v5e:", 4) || !strncmp(name, "v5p:", 4)) {
        int nd = parse_dims(name + 4, dims, ZG_NET_MAX_DIMS);
        int want = name[2] == 'e' ? 2 : 3;
        if (nd != want)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "network '%s': give %d dimensions like %s", name, want,
                                want == 2 ? "v5e:2x4" : "v5p:2x2x2");
        set_grid(n, name[2] == 'e' ? "tpu-v5e" : "tpu-v5p", nd, dims);
    } else {
        return zg_error_set(err, ZG_ERR_INVALID,
                            "unknown network '%s' (presets: v5e-4, v5e-8, v5e-16, v5e-256, "
                            "v5p-4, v5p-8, v5p-64, h100x8, pcie8, h100x8-ib:N, v5e:AxB, "
                            "v5p:AxBxC; or a JSON file)", name);
    }
    snprintf(n->name, sizeof n->name, "%s", name);
    return ZG_OK;
}

zg_status zg_net_validate(const zg_net *n, zg_error *err) {
    int64_t prod = 1;
    if (n->ndims < 1 || n->ndims > ZG_NET_MAX_DIMS)
        return zg_error_set(err, ZG_ERR_INVALID, "network %s: ndims %d not in 1..3", n->name,
                            n->ndims);
    for (int d = 0; d < ZG_NET_MAX_DIMS; d++) {
        if (n->dims[d] < 1 || n->dims[d] > 64)
            return zg_error_set(err, ZG_ERR_INVALID, "network %s: dims[%d] = %d not in 1..64",
                                n->name, d, n->dims[d]);
        prod *= n->dims[d];
    }
    if (prod != n->n_devices || prod > 4096)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "network %s: %d devices but dims multiply to %lld (max 4096)",
                            n->name, n->n_devices, (long long)prod);
    if (!(n->link_bw > 0) || !(n->link_lat >= 0) || !(n->peak_flops > 0) || !(n->hbm_bw > 0) ||
        !(n->hbm_bytes > 0) || !(n->flops_eff > 0 && n->flops_eff <= 1.5) ||
        !(n->hbm_usable_frac > 0 && n->hbm_usable_frac <= 1))
        return zg_error_set(err, ZG_ERR_INVALID,
                            "network %s: link_bw, peak_flops, hbm_bw, hbm_bytes must be > 0, "
                            "flops_eff in (0,1.5], hbm_usable_frac in (0,1] (got link_bw %g, "
                            "flops_eff %g)", n->name, n->link_bw, n->flops_eff);
    if (n->kind == ZG_NET_SWITCHED) {
        if (n->dims[1] > 1 && !(n->up_bw > 0))
            return zg_error_set(err, ZG_ERR_INVALID,
                                "network %s: %d switches per node need up_bw > 0", n->name,
                                n->dims[1]);
        if (n->dims[2] > 1 && !(n->inter_bw > 0))
            return zg_error_set(err, ZG_ERR_INVALID,
                                "network %s: %d nodes need inter_bw > 0", n->name, n->dims[2]);
    }
    for (int k = 0; k < ZG_COLL_N; k++)
        if (!(n->alpha[k] >= 0) || !(n->eff[k] > 0 && n->eff[k] <= 2))
            return zg_error_set(err, ZG_ERR_INVALID,
                                "network %s: %s alpha %g must be >= 0 and eff %g in (0,2]",
                                n->name, coll_names[k], n->alpha[k], n->eff[k]);
    return ZG_OK;
}

static zg_status get_kind_map(const cJSON *j, const char *key, double *vals, zg_error *err) {
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!m) return ZG_OK;
    if (cJSON_IsNumber(m)) {
        for (int k = 0; k < ZG_COLL_N; k++) vals[k] = m->valuedouble;
        return ZG_OK;
    }
    if (!cJSON_IsObject(m))
        return zg_error_set(err, ZG_ERR_PARSE, "network: '%s' must be a number or an object "
                            "{\"all-gather\": ...}", key);
    for (const cJSON *it = m->child; it; it = it->next) {
        zg_coll_kind k = ZG_COLL_ALL_GATHER;
        if (zg_coll_kind_parse(it->string, &k, err)) return zg_error_prefix(err, "network.%s: ", key);
        if (!cJSON_IsNumber(it))
            return zg_error_set(err, ZG_ERR_PARSE, "network.%s.%s must be a number", key,
                                it->string);
        vals[k] = it->valuedouble;
    }
    return ZG_OK;
}

int32_t zg_net_user_index(const zg_net *n, int32_t dev) {
    return n->has_user_order && dev >= 0 && dev < n->n_devices ? n->phys_to_user[dev] : dev;
}

zg_status zg_net_set_device_coords(zg_net *n, const int32_t *coords, int32_t nd, int32_t ndims,
                                   zg_error *err) {
    if (nd != n->n_devices)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "network %s: device_coords lists %d devices, the slice has %d chips",
                            n->name, nd, n->n_devices);
    if (ndims < n->ndims || ndims > ZG_NET_MAX_DIMS)  // (x, y, 0) for a 2-D slice is fine
        return zg_error_set(err, ZG_ERR_INVALID,
                            "network %s: device_coords entries have %d coordinates, the slice has %d "
                            "dimensions", n->name, ndims, n->ndims);
    if (nd > ZG_NET_MAX_DEVICES)
        return zg_error_set(err, ZG_ERR_INVALID, "network %s: device_coords for over %d chips",
                            n->name, ZG_NET_MAX_DEVICES);
    for (int32_t p = 0; p < nd; p++) n->phys_to_user[p] = -1;
    for (int32_t i = 0; i < nd; i++) {
        int32_t c[ZG_NET_MAX_DIMS] = {0, 0, 0};
        for (int d = 0; d < ndims; d++) {
            c[d] = coords[i * ndims + d];
            if (c[d] < 0 || c[d] >= n->dims[d])
                return zg_error_set(err, ZG_ERR_INVALID,
                                    "network %s: device_coords[%d] coordinate %d = %d is outside "
                                    "0..%d", n->name, i, d, c[d], n->dims[d] - 1);
        }
        int32_t p = zg_net_device_at(n, c);
        if (n->phys_to_user[p] >= 0)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "network %s: device_coords[%d] repeats the chip of device_coords[%d]",
                                n->name, i, n->phys_to_user[p]);
        n->phys_to_user[p] = (int16_t)i;
        n->user_to_phys[i] = (int16_t)p;
    }
    n->has_user_order = 1;
    return ZG_OK;
}

static zg_status get_device_coords(const cJSON *j, zg_net *n, zg_error *err) {
    const cJSON *dc = cJSON_GetObjectItemCaseSensitive(j, "device_coords");
    if (!dc) return ZG_OK;
    if (!cJSON_IsArray(dc))
        return zg_error_set(err, ZG_ERR_INVALID, "network: \"device_coords\" must be an array of "
                                                 "coordinate arrays like [[0,0],[1,0],...]");
    int32_t nd = cJSON_GetArraySize(dc), ndims = -1;
    if (nd < 1 || nd > ZG_NET_MAX_DEVICES)
        return zg_error_set(err, ZG_ERR_INVALID, "network: device_coords has %d entries (1..%d)",
                            nd, ZG_NET_MAX_DEVICES);
    int32_t *co = calloc((size_t)nd * ZG_NET_MAX_DIMS, sizeof *co);
    if (!co) return zg_error_set(err, ZG_ERR_NOMEM, "network: out of memory");
    int32_t i = 0;
    zg_status st = ZG_OK;
    for (const cJSON *e = dc->child; e && !st; e = e->next, i++) {
        int32_t k = cJSON_IsArray(e) ? cJSON_GetArraySize(e) : -1;
        if (k < 1 || k > ZG_NET_MAX_DIMS || (ndims >= 0 && k != ndims)) {
            st = zg_error_set(err, ZG_ERR_INVALID,
                              "network: device_coords[%d] must be an array of %s coordinates", i,
                              ndims >= 0 ? (ndims == 2 ? "2" : "3") : "2 or 3");
            break;
        }
        ndims = k;
        int d = 0;
        for (const cJSON *x = e->child; x; x = x->next, d++) {
            if (!cJSON_IsNumber(x) || x->valuedouble != (double)(int32_t)x->valuedouble) {
                st = zg_error_set(err, ZG_ERR_INVALID,
                                  "network: device_coords[%d] has a non-integer coordinate", i);
                break;
            }
            co[i * k + d] = (int32_t)x->valuedouble;
        }
    }
    if (!st) st = zg_net_set_device_coords(n, co, nd, ndims, err);
    free(co);
    return st;
}

zg_status zg_net_from_json(const cJSON *j, zg_net *n, zg_error *err) {
    char preset[64] = "";
    if (!cJSON_IsObject(j)) return zg_error_set(err, ZG_ERR_PARSE, "network: expected an object");
    if (zg_json_get_str(j, "preset", 1, preset, sizeof preset, "network", err)) return err->status;
    if (zg_net_preset(preset, n, err)) return err->status;
    struct { const char *key; double *v; } nums[] = {
        {"link_bw", &n->link_bw},     {"link_lat", &n->link_lat},
        {"up_bw", &n->up_bw},         {"inter_bw", &n->inter_bw},
        {"inter_lat", &n->inter_lat}, {"peak_flops", &n->peak_flops},
        {"flops_eff", &n->flops_eff}, {"hbm_bw", &n->hbm_bw},
        {"hbm_bytes", &n->hbm_bytes}, {"hbm_usable_frac", &n->hbm_usable_frac}};
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
        if (zg_json_get_num(j, nums[i].key, 0, nums[i].v, "network", err)) return err->status;
    int64_t rs = n->route_split;
    if (zg_json_get_int(j, "route_split", 0, &rs, "network", err)) return err->status;
    n->route_split = rs != 0;
    if (get_kind_map(j, "alpha", n->alpha, err) || get_kind_map(j, "eff", n->eff, err))
        return err->status;
    zg_json_get_str(j, "name", 0, n->name, sizeof n->name, "network", err);
    if (get_device_coords(j, n, err)) return err->status;
    return zg_net_validate(n, err);
}

// A preset is validated here; a file is by zg_net_from_json.
static zg_status load_net(const char *name, const cJSON *j, void *n, zg_error *err) {
    if (j) return zg_net_from_json(j, n, err);
    zg_status st = zg_net_preset(name, n, err);
    return st ? st : zg_net_validate(n, err);
}

zg_status zg_net_load(const char *name_or_path, zg_net *n, zg_error *err) {
    return zg_json_load_named(name_or_path, NULL, load_net, n, err);
}

cJSON *zg_net_to_json(const zg_net *n) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "name", n->name);
    cJSON_AddStringToObject(j, "device", n->device);
    cJSON_AddStringToObject(j, "kind", n->kind == ZG_NET_GRID ? "grid" : "switched");
    cJSON_AddItemToObject(j, "dims", cJSON_CreateIntArray((const int *)n->dims, n->ndims));
    cJSON_AddItemToObject(j, "wrap", cJSON_CreateIntArray((const int *)n->wrap, n->ndims));
    if (n->has_user_order) {
        cJSON *dc = cJSON_AddArrayToObject(j, "device_coords");
        for (int32_t i = 0; i < n->n_devices; i++) {
            int32_t c[ZG_NET_MAX_DIMS];
            zg_net_coords(n, n->user_to_phys[i], c);
            cJSON_AddItemToArray(dc, cJSON_CreateIntArray((const int *)c, n->ndims));
        }
    }
    cJSON_AddNumberToObject(j, "link_bw", n->link_bw);
    cJSON_AddNumberToObject(j, "link_lat", n->link_lat);
    if (n->kind == ZG_NET_SWITCHED) {
        cJSON_AddNumberToObject(j, "up_bw", n->up_bw);
        cJSON_AddNumberToObject(j, "inter_bw", n->inter_bw);
        cJSON_AddNumberToObject(j, "inter_lat", n->inter_lat);
    }
    cJSON *a = cJSON_AddObjectToObject(j, "alpha"), *e = cJSON_AddObjectToObject(j, "eff");
    for (int k = 0; k < ZG_COLL_N; k++) {
        cJSON_AddNumberToObject(a, coll_names[k], n->alpha[k]);
        cJSON_AddNumberToObject(e, coll_names[k], n->eff[k]);
    }
    cJSON_AddNumberToObject(j, "peak_flops", n->peak_flops);
    cJSON_AddNumberToObject(j, "flops_eff", n->flops_eff);
    cJSON_AddNumberToObject(j, "hbm_bw", n->hbm_bw);
    cJSON_AddNumberToObject(j, "hbm_bytes", n->hbm_bytes);
    return j;
}

// ---- coordinates, links ---------------------------------------------------------------------

void zg_net_coords(const zg_net *n, int32_t dev, int32_t c[ZG_NET_MAX_DIMS]) {
    for (int d = 0; d < ZG_NET_MAX_DIMS; d++) {
        c[d] = dev % n->dims[d];
        dev /= n->dims[d];
    }
}

int32_t zg_net_device_at(const zg_net *n, const int32_t c[ZG_NET_MAX_DIMS]) {
    int32_t id = 0;
    for (int d = ZG_NET_MAX_DIMS - 1; d >= 0; d--) id = id * n->dims[d] + c[d];
    return id;
}

int32_t zg_net_n_links(const zg_net *n) {
    if (n->kind == ZG_NET_GRID) return n->n_devices * ZG_NET_MAX_DIMS * 2;
    return 4 * n->n_devices + n->dims[2] * n->dims[1] * n->dims[1];
}

static int32_t grid_link(const zg_net *n, int32_t dev, int d, int dir) {
    return (dev * ZG_NET_MAX_DIMS + d) * 2 + dir;
}

double zg_net_link_bw(const zg_net *n, int32_t link) {
    if (link < 0 || link >= zg_net_n_links(n)) return 0;
    if (n->kind == ZG_NET_GRID) {
        int32_t dev = link / (2 * ZG_NET_MAX_DIMS), d = (link / 2) % ZG_NET_MAX_DIMS,
                dir = link % 2, c[ZG_NET_MAX_DIMS];
        if (d >= n->ndims || n->dims[d] < 2) return 0;
        zg_net_coords(n, dev, c);
        int ok = dir == 0 ? (c[d] + 1 < n->dims[d] || n->wrap[d]) : (c[d] > 0 || n->wrap[d]);
        return ok ? n->link_bw : 0;
    }
    if (link < 4 * n->n_devices) {
        int k = link % 4;
        if (k < 2) return n->link_bw;
        return n->dims[2] > 1 ? n->inter_bw : 0;
    }
    int32_t r = (link - 4 * n->n_devices) % (n->dims[1] * n->dims[1]);
    return (r / n->dims[1] != r % n->dims[1]) ? n->up_bw : 0;
}

void zg_net_link_name(const zg_net *n, int32_t link, char *buf, size_t bufsz) {
    if (n->kind == ZG_NET_GRID) {
        int32_t dev = link / (2 * ZG_NET_MAX_DIMS), d = (link / 2) % ZG_NET_MAX_DIMS,
                dir = link % 2, a[ZG_NET_MAX_DIMS], b[ZG_NET_MAX_DIMS];
        zg_net_coords(n, dev, a);
        memcpy(b, a, sizeof a);
        b[d] = (a[d] + (dir ? n->dims[d] - 1 : 1)) % n->dims[d];
        if (n->ndims == 2)
            snprintf(buf, bufsz, "(%d,%d)->(%d,%d)", a[0], a[1], b[0], b[1]);
        else
            snprintf(buf, bufsz, "(%d,%d,%d)->(%d,%d,%d)", a[0], a[1], a[2], b[0], b[1], b[2]);
        return;
    }
    if (link < 4 * n->n_devices) {
        static const char *const what[4] = {"->switch", "<-switch", "->ib", "<-ib"};
        snprintf(buf, bufsz, "gpu%d%s", link / 4, what[link % 4]);
        return;
    }
    int32_t r = link - 4 * n->n_devices, s2 = n->dims[1] * n->dims[1];
    snprintf(buf, bufsz, "sw%d->sw%d@node%d", (r % s2) / n->dims[1], r % n->dims[1], r / s2);
}

// ---- routes ---------------------------------------------------------------------------------

static void add_hop(zg_net_hop *h, int32_t *nh, int32_t link, double frac) {
    for (int32_t i = 0; i < *nh; i++)
        if (h[i].link == link) {
            h[i].frac += frac;
            return;
        }
    if (*nh < ZG_NET_MAX_HOPS) h[*nh].link = link, h[*nh].frac = frac, (*nh)++;
}

// Walks from a along dimension order `order` with per-dimension directions dirs (+1/-1).
static void walk(const zg_net *n, const int32_t *a, const int32_t *b, const int *order, int nord,
                 const int *dirs, double frac, zg_net_hop *h, int32_t *nh) {
    int32_t c[ZG_NET_MAX_DIMS];
    memcpy(c, a, sizeof c);
    for (int o = 0; o < nord; o++) {
        int d = order[o];
        while (c[d] != b[d]) {
            int32_t dev = zg_net_device_at(n, c);
            add_hop(h, nh, grid_link(n, dev, d, dirs[d] > 0 ? 0 : 1), frac);
            c[d] = (c[d] + (dirs[d] > 0 ? 1 : n->dims[d] - 1)) % n->dims[d];
        }
    }
}

static int32_t route_grid(const zg_net *n, int32_t src, int32_t dst, zg_net_hop *h,
                          double *path_lat) {
    int32_t a[ZG_NET_MAX_DIMS], b[ZG_NET_MAX_DIMS], nh = 0, hops = 0;
    int act[ZG_NET_MAX_DIMS], nact = 0, tie[ZG_NET_MAX_DIMS], dir0[ZG_NET_MAX_DIMS];
    zg_net_coords(n, src, a);
    zg_net_coords(n, dst, b);
    for (int d = 0; d < ZG_NET_MAX_DIMS; d++) {
        tie[d] = 0, dir0[d] = 1;
        if (a[d] == b[d]) continue;
        act[nact++] = d;
        if (n->wrap[d]) {
            int32_t f = ((b[d] - a[d]) % n->dims[d] + n->dims[d]) % n->dims[d];
            int32_t back = n->dims[d] - f;
            dir0[d] = f <= back ? 1 : -1;
            tie[d] = f == back;
            hops += f < back ? f : back;
        } else {
            dir0[d] = b[d] > a[d] ? 1 : -1;
            hops += abs(b[d] - a[d]);
        }
    }
    // dimension orders: the natural one, or all permutations of the active dims
    int orders[6][ZG_NET_MAX_DIMS], nord = 0;
    if (!n->route_split || nact < 2) {
        memcpy(orders[0], act, sizeof act), nord = 1;
    } else if (nact == 2) {
        orders[0][0] = act[0], orders[0][1] = act[1];
        orders[1][0] = act[1], orders[1][1] = act[0];
        nord = 2;
    } else {
        static const int p3[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                     {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
        for (int o = 0; o < 6; o++)
            for (int i = 0; i < 3; i++) orders[o][i] = act[p3[o][i]];
        nord = 6;
    }
    int ntie = 0, tdims[ZG_NET_MAX_DIMS];
    for (int i = 0; i < nact; i++)
        if (tie[act[i]]) tdims[ntie++] = act[i];
    double frac = 1.0 / (nord * (1 << ntie));
    for (int o = 0; o < nord; o++)
        for (int m = 0; m < (1 << ntie); m++) {
            int dirs[ZG_NET_MAX_DIMS];
            memcpy(dirs, dir0, sizeof dirs);
            for (int t = 0; t < ntie; t++)
                if (m >> t & 1) dirs[tdims[t]] = -1;
            walk(n, a, b, orders[o], nact, dirs, frac, h, &nh);
        }
    *path_lat = hops * n->link_lat;
    return nh;
}

static int32_t route_switched(const zg_net *n, int32_t src, int32_t dst, zg_net_hop *h,
                              double *path_lat) {
    int32_t a[ZG_NET_MAX_DIMS], b[ZG_NET_MAX_DIMS], nh = 0;
    zg_net_coords(n, src, a);
    zg_net_coords(n, dst, b);
    if (a[2] != b[2]) {
        add_hop(h, &nh, 4 * src + 2, 1.0);
        add_hop(h, &nh, 4 * dst + 3, 1.0);
        *path_lat = n->inter_lat;
        return nh;
    }
    add_hop(h, &nh, 4 * src + 0, 1.0);
    if (a[1] != b[1]) {
        int32_t s = n->dims[1];
        add_hop(h, &nh, 4 * n->n_devices + a[2] * s * s + a[1] * s + b[1], 1.0);
    }
    add_hop(h, &nh, 4 * dst + 1, 1.0);
    *path_lat = (a[1] != b[1] ? 3 : 2) * n->link_lat;
    return nh;
}

int32_t zg_net_route(const zg_net *n, int32_t src, int32_t dst, zg_net_hop *hops,
                     double *path_lat) {
    *path_lat = 0;
    if (src == dst) return 0;
    return n->kind == ZG_NET_GRID ? route_grid(n, src, dst, hops, path_lat)
                                  : route_switched(n, src, dst, hops, path_lat);
}
