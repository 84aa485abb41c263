// fuzz_hlo.c — libFuzzer target for AoiZora's HLO importer (zg_aoi_hlo_parse_opts). Text that
// imports must give evidence that passes its own checks, survives a JSON write/read round trip
// printing byte-identical JSON, and prices (default order) on a slice of its size; text that
// does not import must fail with a status and a message naming a line.
// Build and run: make fuzz && build-fuzz/fuzz_hlo -max_total_time=120 tests/fixtures/hlo
// Crashing inputs are kept in tests/aoizora/fuzz-crashes/ and replayed by
// tests/aoizora/test_aoizora.c (hlo_fuzz_crash_replay).
#include <stdlib.h>
#include <string.h>

#include "aoizora/aoizora.h"
#include "fuzz_input.h"

static void round_trip(const zg_aoi_evidence *ev) {
    cJSON *j = zg_aoi_evidence_to_json(ev);
    if (!j) return;
    zg_aoi_evidence back;
    zg_error err;
    if (zg_aoi_evidence_from_json(j, &back, &err) != ZG_OK) abort();  // what we wrote must read
    cJSON *j2 = zg_aoi_evidence_to_json(&back);
    char *a = cJSON_PrintUnformatted(j), *b = j2 ? cJSON_PrintUnformatted(j2) : NULL;
    if (a && b && strcmp(a, b) != 0) abort();
    free(a), free(b);
    cJSON_Delete(j2);
    cJSON_Delete(j);
    zg_aoi_evidence_free(&back);
}

static void price(const zg_aoi_evidence *ev) {
    const char *preset = ev->num_devices == 4 ? "v5e-4" : ev->num_devices == 8 ? "v5e-8"
                       : ev->num_devices == 16 ? "v5e-16" : NULL;
    if (!preset) return;
    zg_net net;
    zg_error err;
    zg_aoi_price p;
    if (zg_net_preset(preset, &net, &err) != ZG_OK) abort();
    if (zg_aoi_price_placement(ev, &net, NULL, NULL, &p, &err) != ZG_OK) abort();
    if (!(p.total_s >= 0)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > (256 << 10)) return 0;
    zg_aoi_evidence ev;
    zg_error err;
    zg_aoi_hlo_opts o;
    zg_aoi_hlo_opts_default(&o);
    o.trip_count = size % 3;  // exercise the override too
    zg_status st = zg_aoi_hlo_parse_opts((const char *)data, size, &o, &ev, &err);
    if (st == ZG_OK) {
        round_trip(&ev);
        price(&ev);
        zg_aoi_evidence_free(&ev);
    } else if (!strstr(err.msg, "line") && st != ZG_ERR_NOMEM) {
        abort();  // every error names the line
    }
    return 0;
}
