// fuzz_plan.c — libFuzzer target for the plan JSON reader (zg_plan_from_json). A plan that reads
// must survive validation against the batch it names, evaluation with its stored prices, and a
// write/read round trip that prints byte-identical JSON.
// Build and run: make fuzz && build-fuzz/fuzz_plan -max_total_time=120 -rss_limit_mb=2048
// Crashing inputs are kept in tests/plan/fuzz-crashes/ and replayed by tests/plan/test_plan_core.c.
#include <stdlib.h>
#include <string.h>

#include "fuzz_input.h"
#include "plan/plan.h"

static void round_trip(const zg_plan *p) {
    cJSON *j = zg_plan_to_json(p);
    if (!j) return;
    zg_plan q;
    zg_error err;
    if (zg_plan_from_json(j, &q, &err) != ZG_OK) abort();  // what we wrote must read
    cJSON *j2 = zg_plan_to_json(&q);
    char *a = cJSON_PrintUnformatted(j), *b = j2 ? cJSON_PrintUnformatted(j2) : NULL;
    if (a && b && strcmp(a, b) != 0) abort();
    free(a);
    free(b);
    cJSON_Delete(j2);
    cJSON_Delete(j);
    zg_plan_free(&q);
}

// The batch the plan claims to place (ids and tokens from its placements).
static void validate_against_own_batch(zg_plan *p) {
    zg_model m;
    zg_error err;
    if (zg_model_preset("tiny", &m, &err) != ZG_OK) abort();
    zg_batch b;
    zg_batch_init(&b);
    for (int64_t i = 0; i < p->n; i++) {
        zg_seq s;
        zg_seq_init(&s);
        s.id = p->p[i].id;
        s.tokens = p->p[i].tokens;
        if (zg_batch_push(&b, &s, &err) != ZG_OK) break;
    }
    if (zg_plan_validate(p, &b, &m, &err) == ZG_OK &&
        zg_plan_evaluate(p, &b, NULL, NULL, &err) != ZG_OK)
        abort();  // a valid plan must evaluate
    zg_plan_evaluate(p, NULL, NULL, NULL, &err);
    zg_batch_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_text(data, size);
    if (!text) return 0;
    cJSON *j = NULL;
    zg_error err;
    if (zg_json_parse(text, "fuzz", &j, &err) == ZG_OK) {
        zg_plan p;
        if (zg_plan_from_json(j, &p, &err) == ZG_OK) {
            round_trip(&p);
            validate_against_own_batch(&p);
        }
        zg_plan_free(&p);
        cJSON_Delete(j);
    }
    free(text);
    return 0;
}
