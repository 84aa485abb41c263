// batch_json.c — batch JSON: one sample object <-> zg_seq, {"sequences":[...]} <-> zg_batch.
// Every message names the sequence index, the key and the bad value.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "workload/workload.h"

#define DIM_MAX 1000000 // frames, height, width: a sanity bound that keeps token math in int64
#define ID_MAX ZG_SEQ_MAX_ID

// Short printable form of a JSON value for messages: strings quoted, others as JSON, cut at
// ~40 characters.
static void value_excerpt(const cJSON *v, char *buf, size_t bufsz) {
    if (cJSON_IsString(v)) {
        snprintf(buf, bufsz, "\"%.40s%s\"", v->valuestring,
                 strlen(v->valuestring) > 40 ? "..." : "");
        return;
    }
    if (cJSON_IsArray(v)) {
        snprintf(buf, bufsz, "an array");
        return;
    }
    if (cJSON_IsObject(v)) {
        snprintf(buf, bufsz, "an object");
        return;
    }
    char *s = cJSON_PrintUnformatted(v);
    if (!s) {
        snprintf(buf, bufsz, "?");
        return;
    }
    snprintf(buf, bufsz, "%.40s%s", s, strlen(s) > 40 ? "..." : "");
    cJSON_free(s);
}

// Optional integer field in [lo, hi]. *present tells whether it was given (null = absent).
static zg_status get_int(const cJSON *obj, const char *key, int64_t lo, int64_t hi, int64_t index,
                         int64_t *out, int *present, zg_error *err) {
    *present = 0;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsNull(v)) return ZG_OK;
    char ex[64];
    value_excerpt(v, ex, sizeof ex);
    if (!cJSON_IsNumber(v))
        return zg_error_set(err, ZG_ERR_INVALID, "sequence %lld: \"%s\" must be an integer, got %s",
                            (long long)index, key, ex);
    double d = v->valuedouble;
    if (!isfinite(d) || d != floor(d))
        return zg_error_set(err, ZG_ERR_INVALID, "sequence %lld: \"%s\" = %s is not an integer",
                            (long long)index, key, ex);
    if (d < (double)lo || d > (double)hi)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "sequence %lld: \"%s\" = %s is out of range; expected %lld..%lld",
                            (long long)index, key, ex, (long long)lo, (long long)hi);
    *out = (int64_t)d;
    *present = 1;
    return ZG_OK;
}

static zg_status get_str(const cJSON *obj, const char *key, int64_t index, char *out, size_t outsz,
                         int *present, zg_error *err) {
    *present = 0;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsNull(v)) return ZG_OK;
    if (!cJSON_IsString(v)) {
        char ex[64];
        value_excerpt(v, ex, sizeof ex);
        return zg_error_set(err, ZG_ERR_INVALID, "sequence %lld: \"%s\" must be a string, got %s",
                            (long long)index, key, ex);
    }
    size_t n = strlen(v->valuestring);
    if (n >= outsz)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "sequence %lld: \"%s\" = \"%.40s...\" is too long (%zu chars, max %zu)",
                            (long long)index, key, v->valuestring, n, outsz - 1);
    memcpy(out, v->valuestring, n + 1);
    *present = 1;
    return ZG_OK;
}

static const char *json_type_name(const cJSON *v) {
    if (cJSON_IsObject(v)) return "an object";
    if (cJSON_IsArray(v)) return "an array";
    if (cJSON_IsString(v)) return "a string";
    if (cJSON_IsNumber(v)) return "a number";
    if (cJSON_IsBool(v)) return "a boolean";
    if (cJSON_IsNull(v)) return "null";
    return "an invalid value";
}

zg_status zg_seq_from_json(const cJSON *j, const zg_model *model, int64_t index, zg_seq *s,
                           zg_error *err) {
    zg_seq_init(s);
    if (!cJSON_IsObject(j))
        return zg_error_set(err, ZG_ERR_INVALID, "sequence %lld: expected an object, got %s",
                            (long long)index, json_type_name(j));
    zg_status st;
    int64_t v = 0;
    int has_id, has_tokens, has_frames, has_h, has_w, has, has_kind;
    if ((st = get_int(j, "id", 0, ID_MAX, index, &v, &has_id, err))) return st;
    s->id = has_id ? v : index;
    int64_t tokens = 0;
    if ((st = get_int(j, "tokens", 1, ZG_SEQ_MAX_TOKENS, index, &tokens, &has_tokens, err)))
        return st;
    if ((st = get_int(j, "frames", 1, DIM_MAX, index, &v, &has_frames, err))) return st;
    if (has_frames) s->frames = (int32_t)v;
    if ((st = get_int(j, "height", 1, DIM_MAX, index, &v, &has_h, err))) return st;
    if (has_h) s->height = (int32_t)v;
    if ((st = get_int(j, "width", 1, DIM_MAX, index, &v, &has_w, err))) return st;
    if (has_w) s->width = (int32_t)v;
    if ((st = get_int(j, "text_tokens", 0, INT32_MAX, index, &v, &has, err))) return st;
    if (has) s->text_tokens = (int32_t)v;
    if ((st = get_int(j, "origin_rank", -1, INT32_MAX, index, &v, &has, err))) return st;
    if (has) s->origin_rank = (int32_t)v;
    if ((st = get_str(j, "bucket", index, s->bucket, sizeof s->bucket, &has, err))) return st;

    char kind[16] = "";
    const cJSON *kv = cJSON_GetObjectItemCaseSensitive(j, "kind");
    if (cJSON_IsString(kv) && strlen(kv->valuestring) >= sizeof kind)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "sequence %lld: unknown \"kind\" \"%.40s\"; expected \"image\", "
                            "\"video\" or \"other\"",
                            (long long)index, kv->valuestring);
    if ((st = get_str(j, "kind", index, kind, sizeof kind, &has_kind, err))) return st;
    if (has_kind) {
        if (!strcmp(kind, "image"))
            s->kind = ZG_SEQ_IMAGE;
        else if (!strcmp(kind, "video"))
            s->kind = ZG_SEQ_VIDEO;
        else if (!strcmp(kind, "other"))
            s->kind = ZG_SEQ_OTHER;
        else
            return zg_error_set(err, ZG_ERR_INVALID,
                                "sequence %lld: unknown \"kind\" \"%s\"; expected \"image\", "
                                "\"video\" or \"other\"",
                                (long long)index, kind);
    } else if (has_frames) {
        s->kind = s->frames > 1 ? ZG_SEQ_VIDEO : ZG_SEQ_IMAGE;
    }

    if (has_tokens) {
        s->tokens = tokens;
        return ZG_OK;
    }
    // no "tokens": compute them from the geometry with the model
    if (!has_h || !has_w)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "sequence %lld: missing \"tokens\" (or \"height\" and \"width\" to "
                            "compute them from)",
                            (long long)index);
    if (!has_frames) {
        if (s->kind == ZG_SEQ_VIDEO)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "sequence %lld: a video without \"tokens\" needs \"frames\"",
                                (long long)index);
        s->frames = 1;
        if (s->kind == ZG_SEQ_OTHER) s->kind = ZG_SEQ_IMAGE;
    }
    if (!model)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "sequence %lld: no \"tokens\" and no model to compute them from "
                            "frames/height/width; give \"tokens\" or a model",
                            (long long)index);
    for (int a = 0; a < 3; a++)
        if (model->vae_stride[a] <= 0 || model->patch[a] <= 0)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "model '%s': VAE stride and patch must be positive to compute "
                                "tokens",
                                model->name);
    int64_t t = zg_model_tokens(model, s->frames, s->height, s->width);
    if (t <= 0 || t > ZG_SEQ_MAX_TOKENS)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "sequence %lld: %d frames of %dx%d give %lld tokens under model "
                            "'%s'; expected 1..%lld",
                            (long long)index, s->frames, s->height, s->width, (long long)t,
                            model->name, (long long)ZG_SEQ_MAX_TOKENS);
    s->tokens = t;
    return ZG_OK;
}

zg_status zg_batch_from_json(const cJSON *j, const zg_model *model, zg_batch *b, zg_error *err) {
    zg_batch_init(b);
    const cJSON *arr = j;
    if (cJSON_IsObject(j)) {
        arr = cJSON_GetObjectItemCaseSensitive(j, "sequences");
        if (!arr)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "batch: missing \"sequences\" (expected {\"sequences\":[{\"tokens"
                                "\":...}, ...]})");
    }
    if (!cJSON_IsArray(arr))
        return zg_error_set(err, ZG_ERR_INVALID,
                            "batch: \"sequences\" must be an array of objects, got %s",
                            json_type_name(arr));
    zg_status st = ZG_OK;
    int64_t index = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, arr) {
        zg_seq s;
        if ((st = zg_seq_from_json(item, model, index, &s, err))) break;
        if ((st = zg_batch_push(b, &s, err))) break;
        index++;
    }
    if (!st) st = zg_batch_validate(b, 0, err);
    if (st) zg_batch_free(b);
    return st;
}

static int add_num(cJSON *o, const char *key, double v) {
    return cJSON_AddNumberToObject(o, key, v) != NULL;
}

cJSON *zg_batch_to_json(const zg_batch *b) {
    cJSON *root = cJSON_CreateObject();
    cJSON *arr = root ? cJSON_AddArrayToObject(root, "sequences") : NULL;
    if (!arr) goto fail;
    for (int64_t i = 0; i < b->n; i++) {
        const zg_seq *s = &b->seqs[i];
        cJSON *o = cJSON_CreateObject();
        if (!o) goto fail;
        cJSON_AddItemToArray(arr, o);
        int ok = add_num(o, "id", (double)s->id) && add_num(o, "tokens", (double)s->tokens);
        if (ok && s->kind != ZG_SEQ_OTHER)
            ok = cJSON_AddStringToObject(o, "kind", zg_seq_kind_name(s->kind)) != NULL;
        if (ok && s->frames > 0) ok = add_num(o, "frames", s->frames);
        if (ok && s->height > 0) ok = add_num(o, "height", s->height);
        if (ok && s->width > 0) ok = add_num(o, "width", s->width);
        if (ok && s->text_tokens > 0) ok = add_num(o, "text_tokens", s->text_tokens);
        if (ok && s->origin_rank >= 0) ok = add_num(o, "origin_rank", s->origin_rank);
        if (ok && s->bucket[0]) ok = cJSON_AddStringToObject(o, "bucket", s->bucket) != NULL;
        if (!ok) goto fail;
    }
    return root;
fail:
    cJSON_Delete(root);
    return NULL;
}

zg_status zg_batch_write_file(const char *path, const zg_batch *b, zg_error *err) {
    zg_status st = zg_batch_validate(b, 0, err);
    if (st) return zg_error_prefix(err, "writing '%s': ", path);
    cJSON *j = zg_batch_to_json(b);
    if (!j) return zg_error_set(err, ZG_ERR_NOMEM, "out of memory building '%s'", path);
    st = zg_json_write_file(path, j, 0, err);
    cJSON_Delete(j);
    return st;
}
