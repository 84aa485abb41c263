// catalog.c — bucket catalogs for the profiler: the small CPU catalog and JSON catalogs.
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"

typedef struct {
    const char *name;
    zg_seq_kind kind;
    int32_t frames, height, width;
} cpu_bucket;

static const cpu_bucket cpu_buckets[] = {
    {"64p-img", ZG_SEQ_IMAGE, 1, 64, 64},     {"128p-img", ZG_SEQ_IMAGE, 1, 128, 128},
    {"192p-img", ZG_SEQ_IMAGE, 1, 192, 256},  {"128p-5f", ZG_SEQ_VIDEO, 5, 128, 192},
    {"128p-9f", ZG_SEQ_VIDEO, 9, 128, 192},   {"192p-5f", ZG_SEQ_VIDEO, 5, 192, 256},
    {"192p-9f", ZG_SEQ_VIDEO, 9, 192, 256},   {"256p-5f", ZG_SEQ_VIDEO, 5, 256, 320},
    {"256p-9f", ZG_SEQ_VIDEO, 9, 256, 320},
};

zg_status zg_profile_cpu_catalog(const zg_model *m, zg_catalog *c, zg_error *err) {
    c->n = 0;
    c->buckets = NULL;
    int32_t n = (int32_t)(sizeof cpu_buckets / sizeof cpu_buckets[0]);
    zg_bucket *b = zg_calloc((size_t)n, sizeof *b, err);
    if (!b) return ZG_ERR_NOMEM;
    for (int32_t i = 0; i < n; i++) {
        snprintf(b[i].name, sizeof b[i].name, "%s", cpu_buckets[i].name);
        b[i].kind = cpu_buckets[i].kind;
        b[i].frames = cpu_buckets[i].frames;
        b[i].height = cpu_buckets[i].height;
        b[i].width = cpu_buckets[i].width;
        b[i].tokens = zg_model_tokens(m, b[i].frames, b[i].height, b[i].width);
        if (b[i].tokens < 1) {
            zg_error_set(err, ZG_ERR_INVALID,
                         "cpu catalog: bucket %s has %lld tokens under model '%s'", b[i].name,
                         (long long)b[i].tokens, m->name);
            free(b);
            return ZG_ERR_INVALID;
        }
    }
    c->n = n;
    c->buckets = b;
    return ZG_OK;
}

static zg_status bucket_from_json(const cJSON *o, int32_t i, const zg_model *m, zg_bucket *b,
                                  zg_error *err) {
    char ctx[48], kind[16] = "";
    snprintf(ctx, sizeof ctx, "catalog bucket %d", i);
    memset(b, 0, sizeof *b);
    int64_t f = 0, h = 0, w = 0, tok = 0;
    zg_status st;
    if ((st = zg_json_get_str(o, "name", 1, b->name, sizeof b->name, ctx, err)) ||
        (st = zg_json_get_str(o, "kind", 0, kind, sizeof kind, ctx, err)) ||
        (st = zg_json_get_int(o, "frames", 0, &f, ctx, err)) ||
        (st = zg_json_get_int(o, "height", 0, &h, ctx, err)) ||
        (st = zg_json_get_int(o, "width", 0, &w, ctx, err)) ||
        (st = zg_json_get_int(o, "tokens", 0, &tok, ctx, err)))
        return st;
    if (f < 0 || h < 0 || w < 0 || f > 100000 || h > 100000 || w > 100000)
        return zg_error_set(err, ZG_ERR_INVALID, "%s (%s): frames/height/width out of range",
                            ctx, b->name);
    b->frames = (int32_t)f, b->height = (int32_t)h, b->width = (int32_t)w;
    if (tok <= 0 && f > 0 && h > 0 && w > 0) tok = zg_model_tokens(m, f, h, w);
    if (tok <= 0 || tok > ZG_SEQ_MAX_TOKENS)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "%s (%s): give tokens or frames, height and width (got %lld tokens)",
                            ctx, b->name, (long long)tok);
    b->tokens = tok;
    if (!kind[0]) b->kind = f > 1 ? ZG_SEQ_VIDEO : ZG_SEQ_IMAGE;
    else if (!strcmp(kind, "video")) b->kind = ZG_SEQ_VIDEO;
    else if (!strcmp(kind, "image")) b->kind = ZG_SEQ_IMAGE;
    else if (!strcmp(kind, "other")) b->kind = ZG_SEQ_OTHER;
    else
        return zg_error_set(err, ZG_ERR_INVALID, "%s (%s): kind '%s' (image, video, other)", ctx,
                            b->name, kind);
    return ZG_OK;
}

zg_status zg_profile_catalog_load(const char *spec, const zg_model *m, zg_catalog *c,
                                  zg_error *err) {
    c->n = 0;
    c->buckets = NULL;
    if (!spec || !strcmp(spec, "cpu")) return zg_profile_cpu_catalog(m, c, err);
    if (!strcmp(spec, "default")) return zg_catalog_default(m, c, err);
    if (!strncmp(spec, "mix:", 4)) { // mix:SECONDS:DIVISOR, the buckets of a shrunk paper mix
        char *end;
        long sec = strtol(spec + 4, &end, 10), div = 0;
        int ok = end != spec + 4 && *end == ':';
        if (ok) {
            const char *d = end + 1;
            div = strtol(d, &end, 10);
            ok = end != d && !*end && div >= 1 && div <= ZG_MIX_DIVISOR_MAX;
        }
        if (!ok || sec < 1 || sec > 1000)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "catalog '%s': expected mix:SECONDS:DIVISOR, e.g. mix:15:128 (the "
                                "images and the 15 s videos of the paper's catalog, tokens / "
                                "128; divisor 1..%d)",
                                spec, ZG_MIX_DIVISOR_MAX);
        return zg_catalog_mix(m, (int32_t)sec, (int32_t)div, c, err);
    }
    cJSON *j = NULL;
    zg_status st = zg_json_read_file(spec, &j, err);
    if (st) return st;
    const cJSON *arr = cJSON_IsArray(j) ? j : cJSON_GetObjectItemCaseSensitive(j, "buckets");
    int32_t n = cJSON_GetArraySize(arr);
    if (!cJSON_IsArray(arr) || n < 1) {
        cJSON_Delete(j);
        return zg_error_set(err, ZG_ERR_INVALID,
                            "%s: expected {\"buckets\":[...]} with at least one bucket", spec);
    }
    zg_bucket *b = zg_calloc((size_t)n, sizeof *b, err);
    if (!b) {
        cJSON_Delete(j);
        return ZG_ERR_NOMEM;
    }
    int32_t i = 0;
    for (const cJSON *o = arr->child; o && !st; o = o->next, i++) {
        st = bucket_from_json(o, i, m, &b[i], err);
        for (int32_t k = 0; k < i && !st; k++)
            if (!strcmp(b[k].name, b[i].name))
                st = zg_error_set(err, ZG_ERR_INVALID, "catalog: bucket name '%s' repeats",
                                  b[i].name);
    }
    cJSON_Delete(j);
    if (st) {
        free(b);
        return zg_error_prefix(err, "%s: ", spec);
    }
    c->n = n;
    c->buckets = b;
    return ZG_OK;
}
