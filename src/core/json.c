// json.c — thin, error-reporting wrappers over cJSON.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/core.h"

zg_status zg_json_parse(const char *text, const char *what, cJSON **out, zg_error *err) {
    *out = NULL;
    const char *end = NULL;
    if (!text[strspn(text, " \t\r\n")])
        return zg_error_set(err, ZG_ERR_PARSE, "%s is empty; expected JSON", what);
    cJSON *j = cJSON_ParseWithOpts(text, &end, 1);
    if (!j) {
        // report line and column of the failure
        const char *at = end ? end : cJSON_GetErrorPtr();
        int line = 1, col = 1;
        if (at) {
            for (const char *p = text; p < at && *p; p++) {
                if (*p == '\n') {
                    line++;
                    col = 1;
                } else
                    col++;
            }
        }
        const char *a = at ? at + (*at == '-') : "";
        int nonfinite = !strncasecmp(a, "nan", 3) || !strncasecmp(a, "inf", 3);
        return zg_error_set(err, ZG_ERR_PARSE, "%s: malformed JSON at line %d, column %d%s", what,
                            line, col,
                            nonfinite ? " (NaN and Infinity are not JSON numbers; give a finite "
                                        "number)"
                                      : " (fix the JSON there)");
    }
    *out = j;
    return ZG_OK;
}

zg_status zg_json_read_file(const char *path, cJSON **out, zg_error *err) {
    char *text = NULL;
    zg_status st = zg_file_read(path, &text, NULL, err);
    if (st) return st;
    st = zg_json_parse(text, path, out, err);
    free(text);
    return st;
}

zg_status zg_json_write_file(const char *path, const cJSON *json, int pretty, zg_error *err) {
    char *s = pretty ? cJSON_Print(json) : cJSON_PrintUnformatted(json);
    if (!s) return zg_error_set(err, ZG_ERR_NOMEM, "out of memory printing JSON for '%s'", path);
    size_t n = strlen(s);
    char *buf = malloc(n + 2);
    if (!buf) {
        cJSON_free(s);
        return zg_error_set(err, ZG_ERR_NOMEM, "out of memory");
    }
    memcpy(buf, s, n);
    buf[n] = '\n';
    cJSON_free(s);
    zg_status st = zg_file_write_atomic(path, buf, n + 1, err);
    free(buf);
    return st;
}

zg_status zg_json_load_file(const char *path, zg_named_fn load, void *out, zg_error *err) {
    cJSON *j = NULL;
    zg_status st = zg_json_read_file(path, &j, err);
    if (st) return st;
    st = load(path, j, out, err);
    cJSON_Delete(j);
    if (st) zg_error_prefix(err, "%s: ", path);
    return st;
}

zg_status zg_json_load_named(const char *name_or_path, const char *what, zg_named_fn load,
                             void *out, zg_error *err) {
    if (what && (!name_or_path || !*name_or_path))
        return zg_error_set(err, ZG_ERR_INVALID, "no %s given (use --%s NAME or FILE)", what, what);
    size_t n = strlen(name_or_path);
    if (n <= 5 || strcmp(name_or_path + n - 5, ".json")) return load(name_or_path, NULL, out, err);
    return zg_json_load_file(name_or_path, load, out, err);
}

// The value under key in *v, or NULL when it is absent or null (an error only when required).
static zg_status get_item(const cJSON *obj, const char *key, int required, const char *ctx,
                          const cJSON **v, zg_error *err) {
    *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (*v && !cJSON_IsNull(*v)) return ZG_OK;
    *v = NULL;
    return required ? zg_error_set(err, ZG_ERR_INVALID, "%s: missing \"%s\"", ctx, key) : ZG_OK;
}

// "a string (\"x\")", "an object", ... for messages about a value of the wrong type.
static const char *json_kind(const cJSON *v, char *buf, size_t sz) {
    if (cJSON_IsString(v))
        snprintf(buf, sz, "a string (\"%.40s%s\")", v->valuestring,
                 strlen(v->valuestring) > 40 ? "..." : "");
    else if (cJSON_IsNumber(v))
        snprintf(buf, sz, "a number (%g)", v->valuedouble);
    else if (cJSON_IsBool(v))
        snprintf(buf, sz, "%s", cJSON_IsTrue(v) ? "true" : "false");
    else if (cJSON_IsArray(v))
        snprintf(buf, sz, "an array");
    else if (cJSON_IsObject(v))
        snprintf(buf, sz, "an object");
    else
        snprintf(buf, sz, "null");
    return buf;
}

zg_status zg_json_check_keys(const cJSON *obj, const char *const *known, const char *ctx,
                             zg_error *err) {
    for (const cJSON *it = obj ? obj->child : NULL; it; it = it->next) {
        int ok = 0;
        for (const char *const *k = known; *k && !ok; k++)
            ok = it->string && !strcmp(it->string, *k);
        if (ok) continue;
        char list[512] = "";
        size_t n = 0;
        for (const char *const *k = known; *k && n + 1 < sizeof list; k++, n = strlen(list))
            snprintf(list + n, sizeof list - n, "%s%s", k == known ? "" : ", ", *k);
        return zg_error_set(err, ZG_ERR_INVALID, "%s: unknown key \"%s\" (known keys: %s)", ctx,
                            it->string ? it->string : "", list);
    }
    return ZG_OK;
}

zg_status zg_json_get_num(const cJSON *obj, const char *key, int required, double *out,
                          const char *ctx, zg_error *err) {
    const cJSON *v;
    zg_status st = get_item(obj, key, required, ctx, &v, err);
    if (st || !v) return st;
    char kind[96];
    if (!cJSON_IsNumber(v))
        return zg_error_set(err, ZG_ERR_INVALID, "%s: \"%s\" must be a number, got %s", ctx, key,
                            json_kind(v, kind, sizeof kind));
    if (!isfinite(v->valuedouble))
        return zg_error_set(err, ZG_ERR_INVALID,
                            "%s: \"%s\" = %g is not a finite number (too large for a double)",
                            ctx, key, v->valuedouble);
    *out = v->valuedouble;
    return ZG_OK;
}

zg_status zg_json_get_int(const cJSON *obj, const char *key, int required, int64_t *out,
                          const char *ctx, zg_error *err) {
    const cJSON *v;
    zg_status st = get_item(obj, key, required, ctx, &v, err);
    if (st || !v) return st;
    char kind[96];
    if (!cJSON_IsNumber(v))
        return zg_error_set(err, ZG_ERR_INVALID, "%s: \"%s\" must be an integer, got %s", ctx,
                            key, json_kind(v, kind, sizeof kind));
    double d = v->valuedouble;
    if (isfinite(d) && d != floor(d))
        return zg_error_set(err, ZG_ERR_INVALID, "%s: \"%s\" = %g is not an integer", ctx, key,
                            d);
    if (!isfinite(d) || fabs(d) > 9007199254740992.0)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "%s: \"%s\" = %g is out of range (integers up to 2^53 = "
                            "9007199254740992 in magnitude)",
                            ctx, key, d);
    *out = (int64_t)d;
    return ZG_OK;
}

zg_status zg_json_get_str(const cJSON *obj, const char *key, int required, char *out,
                          size_t outsz, const char *ctx, zg_error *err) {
    const cJSON *v;
    zg_status st = get_item(obj, key, required, ctx, &v, err);
    if (st || !v) return st;
    char kind[96];
    if (!cJSON_IsString(v))
        return zg_error_set(err, ZG_ERR_INVALID, "%s: \"%s\" must be a string, got %s", ctx, key,
                            json_kind(v, kind, sizeof kind));
    size_t n = strlen(v->valuestring);
    if (n >= outsz)
        return zg_error_set(err, ZG_ERR_INVALID, "%s: \"%s\" is too long (%zu chars, max %zu)",
                            ctx, key, n, outsz - 1);
    memcpy(out, v->valuestring, n + 1);
    return ZG_OK;
}
