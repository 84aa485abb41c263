// device_row.c — measured device rows (`zellige profile-device`, docs/profiler.md "Device
// rows"): the JSON file's row read back, checked against the cluster's device and the ranges the
// analytic model accepts, ready for zg_cost_opts.dev.
#include <math.h>
#include <string.h>
#include <strings.h>

#include "cost/cost.h"

zg_status zg_cost_device_check(const zg_cost_device *d, const char *ctx, zg_error *err) {
    const char *names[3] = {"attn_fwd_eff", "attn_bwd_eff", "gemm_eff"};
    double e[3] = {d->attn_fwd_eff, d->attn_bwd_eff, d->gemm_eff};
    for (int i = 0; i < 3; i++)
        if (!(e[i] > 0 && e[i] <= 1))
            return zg_error_set(err, ZG_ERR_INVALID,
                                "%s: %s = %g is out of range: an efficiency of the device's peak "
                                "must be in (0, 1]",
                                ctx, names[i], e[i]);
    const char *hn[2] = {"attn_half", "gemm_half"};
    double h[2] = {d->attn_half, d->gemm_half};
    for (int i = 0; i < 2; i++)
        if (!(h[i] >= 0 && h[i] <= 1e9))
            return zg_error_set(err, ZG_ERR_INVALID,
                                "%s: %s = %g is out of range: a half-point is a local token "
                                "count in [0, 1e9]",
                                ctx, hn[i], h[i]);
    if (!(d->framework_bytes > 0 && d->framework_bytes <= 1e15))
        return zg_error_set(err, ZG_ERR_INVALID,
                            "%s: framework_bytes = %g is out of range: bytes per rank in "
                            "(0, 1e15]",
                            ctx, d->framework_bytes);
    return ZG_OK;
}

static const char *const top_keys[] = {
    "version", "kind",        "device", "backend", "model", "cluster", "peak_flops", "dtype",
    "row",     "builtin_row", "fit",    "samples", "shape", "machine", "settings",   NULL};
static const char *const row_keys[] = {"attn_fwd_eff", "attn_bwd_eff",    "gemm_eff", "attn_half",
                                       "gemm_half",    "framework_bytes", NULL};

zg_status zg_cost_device_row_from_json(const cJSON *j, const char *device, zg_cost_device *d,
                                       char *measured_on, size_t measured_on_len, zg_error *err) {
    if (!cJSON_IsObject(j))
        return zg_error_set(err, ZG_ERR_INVALID,
                            "a device row must be a JSON object (written by zellige "
                            "profile-device)");
    zg_status st = zg_json_check_keys(j, top_keys, "device row", err);
    int64_t version = 0;
    char kind[64] = "", dev[32] = "";
    if (!st) st = zg_json_get_int(j, "version", 1, &version, "device row", err);
    if (!st && version != 1)
        st = zg_error_set(err, ZG_ERR_INVALID,
                          "device row: version %lld is not supported (this build reads 1)",
                          (long long)version);
    if (!st) st = zg_json_get_str(j, "kind", 1, kind, sizeof kind, "device row", err);
    if (!st && strcmp(kind, "device_row"))
        st = zg_error_set(err, ZG_ERR_INVALID,
                          "device row: \"kind\" is '%s', not 'device_row' (is this a price table "
                          "from zellige profile? give it to --profile instead)",
                          kind);
    if (!st) st = zg_json_get_str(j, "device", 1, dev, sizeof dev, "device row", err);
    if (st) return st;
    if (measured_on && measured_on_len) snprintf(measured_on, measured_on_len, "%s", dev);
    if (device && strcasecmp(dev, device))
        return zg_error_set(err, ZG_ERR_INVALID,
                            "device row was measured on device '%s' but the cluster's device is "
                            "'%s'; measure a row for %s with zellige profile-device, or plan on a "
                            "cluster of %s devices",
                            dev, device, device, dev);
    const cJSON *row = cJSON_GetObjectItemCaseSensitive(j, "row");
    if (!cJSON_IsObject(row))
        return zg_error_set(err, ZG_ERR_INVALID,
                            "device row: \"row\" (an object of %s, %s, %s, "
                            "%s, %s, %s) is missing",
                            row_keys[0], row_keys[1], row_keys[2], row_keys[3], row_keys[4],
                            row_keys[5]);
    if ((st = zg_json_check_keys(row, row_keys, "device row \"row\"", err))) return st;
    double *dst[6] = {&d->attn_fwd_eff, &d->attn_bwd_eff, &d->gemm_eff,
                      &d->attn_half,    &d->gemm_half,    &d->framework_bytes};
    for (int i = 0; i < 6; i++)
        if ((st = zg_json_get_num(row, row_keys[i], 1, dst[i], "device row \"row\"", err)))
            return st;
    return zg_cost_device_check(d, "device row", err);
}

zg_status zg_cost_device_row_load(const char *path, const char *device, zg_cost_device *d,
                                  zg_error *err) {
    cJSON *j = NULL;
    zg_status st = zg_json_read_file(path, &j, err); // its errors name the path
    if (st) return st;
    st = zg_cost_device_row_from_json(j, device, d, NULL, 0, err);
    cJSON_Delete(j);
    if (st) zg_error_prefix(err, "%s: ", path);
    return st;
}
