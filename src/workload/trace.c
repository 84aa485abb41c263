// trace.c — JSONL traces (one sample per line) and content-based detection of batch JSON vs
// JSONL for files.
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "workload/workload.h"

static int is_blank(const char *p, const char *end) {
    for (; p < end; p++)
        if (!isspace((unsigned char)*p)) return 0;
    return 1;
}

zg_status zg_batch_from_jsonl(const char *text, const char *what, const zg_model *model,
                              zg_batch *b, zg_error *err) {
    zg_batch_init(b);
    if (!what) what = "trace";
    if (!text) return zg_error_set(err, ZG_ERR_INVALID, "%s: no text given", what);
    size_t len = strlen(text);
    char *buf = malloc(len + 1); // one line at a time, NUL-terminated for cJSON
    if (!buf) return zg_error_set(err, ZG_ERR_NOMEM, "out of memory reading %s", what);
    zg_status st = ZG_OK;
    int64_t line = 0, index = 0;
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *eol = nl ? nl : end;
        line++;
        if (!is_blank(p, eol)) {
            size_t n = (size_t)(eol - p);
            memcpy(buf, p, n);
            buf[n] = '\0';
            const char *stop = NULL;
            cJSON *j = cJSON_ParseWithOpts(buf, &stop, 1);
            if (!j) {
                size_t col = stop && stop >= buf && stop <= buf + n ? (size_t)(stop - buf) + 1 : 1;
                st = zg_error_set(err, ZG_ERR_PARSE,
                                  "%s line %lld, column %zu: malformed JSON (a JSONL trace holds "
                                  "one sample object per line)",
                                  what, (long long)line, col);
                break;
            }
            zg_seq s;
            st = zg_seq_from_json(j, model, index, &s, err);
            cJSON_Delete(j);
            if (st) {
                zg_error_prefix(err, "%s line %lld: ", what, (long long)line);
                break;
            }
            if ((st = zg_batch_push(b, &s, err))) break;
            index++;
        }
        p = nl ? nl + 1 : end;
    }
    free(buf);
    if (!st && b->n == 0)
        st = zg_error_set(err, ZG_ERR_INVALID, "%s: no samples (every line is blank)", what);
    if (!st) {
        st = zg_batch_validate(b, 0, err);
        if (st) zg_error_prefix(err, "%s: ", what);
    }
    if (st) zg_batch_free(b);
    return st;
}

zg_status zg_batch_parse(const char *text, const char *what, const zg_model *model, zg_batch *b,
                         zg_error *err) {
    zg_batch_init(b);
    if (!what) what = "batch";
    if (!text) return zg_error_set(err, ZG_ERR_INVALID, "%s: no text given", what);
    const char *body = text;
    if ((unsigned char)body[0] == 0xEF && (unsigned char)body[1] == 0xBB &&
        (unsigned char)body[2] == 0xBF)
        body += 3; // UTF-8 byte-order mark
    const char *p = body;
    while (isspace((unsigned char)*p))
        p++;
    if (!*p)
        return zg_error_set(err, ZG_ERR_PARSE,
                            "%s is empty; expected a batch JSON object or a JSONL trace", what);
    cJSON *j = cJSON_ParseWithOpts(p, NULL, 1);
    zg_status st;
    if (j) {
        if (cJSON_IsObject(j) && !cJSON_GetObjectItemCaseSensitive(j, "sequences")) {
            // a one-sample trace (possibly spread over several lines)
            zg_seq s;
            st = zg_seq_from_json(j, model, 0, &s, err);
            if (!st) st = zg_batch_push(b, &s, err);
        } else if (cJSON_IsObject(j) || cJSON_IsArray(j)) {
            st = zg_batch_from_json(j, model, b, err);
        } else {
            st = zg_error_set(err, ZG_ERR_INVALID,
                              "expected a batch object {\"sequences\":[...]}, an array of "
                              "samples or a JSONL trace");
        }
        cJSON_Delete(j);
        if (st) {
            zg_error_prefix(err, "%s: ", what);
            zg_batch_free(b);
        }
        return st;
    }
    // Not one JSON value: a JSONL trace if the first non-blank line alone is a JSON object.
    const char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t)(nl - p) : strlen(p);
    char *first = malloc(n + 1);
    if (!first) return zg_error_set(err, ZG_ERR_NOMEM, "out of memory reading %s", what);
    memcpy(first, p, n);
    first[n] = '\0';
    cJSON *fj = cJSON_ParseWithOpts(first, NULL, 1);
    int jsonl = fj && cJSON_IsObject(fj);
    cJSON_Delete(fj);
    free(first);
    if (jsonl) return zg_batch_from_jsonl(body, what, model, b, err);
    // report the whole-document error with its line and column
    st = zg_json_parse(body, what, &j, err);
    cJSON_Delete(j);
    return st ? st : zg_error_set(err, ZG_ERR_INTERNAL, "%s: parse state mismatch", what);
}

zg_status zg_batch_read_file(const char *path, const zg_model *model, zg_batch *b, zg_error *err) {
    zg_batch_init(b);
    char *text = NULL;
    size_t len = 0;
    zg_status st = zg_file_read(path, &text, &len, err);
    if (st) return st;
    size_t slen = strlen(text);
    if (slen != len)
        st = zg_error_set(err, ZG_ERR_PARSE, "'%s': NUL byte at offset %zu; expected JSON text",
                          path, slen);
    else
        st = zg_batch_parse(text, path, model, b, err);
    free(text);
    return st;
}
