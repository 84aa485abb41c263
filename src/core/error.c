// error.c — status codes, error messages, checked allocation.
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

zg_status zg_error_set(zg_error *err, zg_status st, const char *fmt, ...) {
    if (err) {
        err->status = st;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return st;
}

zg_status zg_error_prefix(zg_error *err, const char *fmt, ...) {
    if (!err) return ZG_OK;
    char prefix[512], old[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    snprintf(err->msg, sizeof err->msg, "%s%.*s", prefix, (int)(sizeof err->msg - 1 - strlen(prefix)), old);
    return err->status;
}

void zg_error_clear(zg_error *err) {
    if (!err) return;
    err->status = ZG_OK;
    err->msg[0] = '\0';
}

const char *zg_status_name(zg_status st) {
    switch (st) {
    case ZG_OK: return "ok";
    case ZG_ERR_INVALID: return "invalid input";
    case ZG_ERR_IO: return "i/o error";
    case ZG_ERR_PARSE: return "parse error";
    case ZG_ERR_INFEASIBLE: return "infeasible";
    case ZG_ERR_NOMEM: return "out of memory";
    case ZG_ERR_UNSUPPORTED: return "unsupported";
    case ZG_ERR_COMM: return "communication error";
    case ZG_ERR_TIMEOUT: return "time limit";
    case ZG_ERR_INTERNAL: return "internal error";
    }
    return "unknown";
}

int zg_status_exit_code(zg_status st) {
    switch (st) {
    case ZG_OK: return 0;
    case ZG_ERR_INFEASIBLE: return 3;
    case ZG_ERR_IO: return 4;
    case ZG_ERR_INTERNAL: return 70;
    default: return 2;
    }
}

void *zg_calloc(size_t nmemb, size_t size, zg_error *err) {
    if (nmemb == 0 || size == 0) nmemb = size = 1;
    if (size && nmemb > SIZE_MAX / size) {
        zg_error_set(err, ZG_ERR_NOMEM, "allocation of %zu x %zu bytes overflows", nmemb, size);
        return NULL;
    }
    void *p = calloc(nmemb, size);
    if (!p) zg_error_set(err, ZG_ERR_NOMEM, "out of memory allocating %zu bytes", nmemb * size);
    return p;
}

void *zg_realloc_array(void *ptr, size_t nmemb, size_t size, zg_error *err) {
    if (nmemb == 0 || size == 0) nmemb = size = 1;
    if (nmemb > SIZE_MAX / size) {
        zg_error_set(err, ZG_ERR_NOMEM, "allocation of %zu x %zu bytes overflows", nmemb, size);
        return NULL;
    }
    void *p = realloc(ptr, nmemb * size);
    if (!p) zg_error_set(err, ZG_ERR_NOMEM, "out of memory allocating %zu bytes", nmemb * size);
    return p;
}

void *zg_grow_array(void *ptr, int32_t n, int32_t *cap, int32_t first, size_t size, zg_error *err) {
    if (n < *cap) return ptr;
    int32_t grown = *cap ? 2 * *cap : first;
    void *p = zg_realloc_array(ptr, (size_t)grown, size, err);
    if (p) *cap = grown;
    return p;
}

zg_status zg_check_i64(const char *name, int64_t v, int64_t lo, int64_t hi, zg_error *err) {
    if (v >= lo && v <= hi) return ZG_OK;
    return zg_error_set(err, ZG_ERR_INVALID, "%s is %lld, must be %lld..%lld", name, (long long)v,
                        (long long)lo, (long long)hi);
}

zg_status zg_check_f64(const char *name, double v, double lo, double hi, zg_error *err) {
    if (v >= lo && v <= hi) return ZG_OK; // false for NaN
    return zg_error_set(err, ZG_ERR_INVALID, "%s is %g, must be %g..%g", name, v, lo, hi);
}
