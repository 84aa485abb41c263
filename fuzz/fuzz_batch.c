// fuzz_batch.c — libFuzzer target for the batch readers: batch JSON (zg_json_parse +
// zg_batch_from_json), content detection and JSONL traces (zg_batch_parse), and KnapFormer
// data codes. A batch that reads back must also survive a write/read round trip unchanged.
// Build and run: make fuzz && build-fuzz/fuzz_batch -max_total_time=120 -rss_limit_mb=2048
// Crashing inputs are kept in tests/workload/fuzz-crashes/ and replayed by the workload tests.
#include <stdlib.h>
#include <string.h>

#include "fuzz_input.h"
#include "workload/workload.h"

static void round_trip(const zg_batch *b) {
    cJSON *j = zg_batch_to_json(b);
    if (!j) return;
    zg_batch c;
    zg_error err;
    if (zg_batch_from_json(j, NULL, &c, &err) != ZG_OK) abort(); // what we wrote must read
    if (c.n != b->n || memcmp(c.seqs, b->seqs, sizeof(zg_seq) * (size_t)b->n) != 0) abort();
    zg_batch_free(&c);
    cJSON_Delete(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_text(data, size);
    if (!text) return 0;
    zg_model m;
    zg_error err;
    if (zg_model_preset("wan2.1-1.3b", &m, &err) != ZG_OK) abort();

    zg_batch b;
    cJSON *j = NULL;
    if (zg_json_parse(text, "fuzz", &j, &err) == ZG_OK) {
        if (zg_batch_from_json(j, &m, &b, &err) == ZG_OK) {
            round_trip(&b);
            zg_batch_free(&b);
        }
        cJSON_Delete(j);
    }
    if (zg_batch_parse(text, "fuzz", &m, &b, &err) == ZG_OK) {
        round_trip(&b);
        zg_batch_free(&b);
    }
    if (zg_batch_from_jsonl(text, "fuzz", NULL, &b, &err) == ZG_OK) zg_batch_free(&b);
    zg_knap_code *codes = NULL;
    int32_t n = 0;
    if (zg_knap_codes_parse(text, &codes, &n, &err) == ZG_OK) {
        int32_t g = zg_knap_codes_gpus(codes, n);
        int64_t samples = 0;
        for (int32_t i = 0; i < n; i++)
            samples += (int64_t)codes[i].gpus * codes[i].batch;
        if (g <= 64 && samples <= 10000 &&
            zg_knap_codes_sample(codes, n, g, 1, 0, &b, &err) == ZG_OK) {
            if (zg_batch_validate(&b, g, &err) != ZG_OK) abort();
            zg_batch_free(&b);
        }
        free(codes);
    }
    free(text);
    return 0;
}
