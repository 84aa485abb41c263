// sbuf.c — growable string buffer and text tables.
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"

void zg_sbuf_init(zg_sbuf *s) { memset(s, 0, sizeof *s); }

void zg_sbuf_free(zg_sbuf *s) {
    free(s->data);
    memset(s, 0, sizeof *s);
}

static int sbuf_reserve(zg_sbuf *s, size_t extra) {
    if (s->oom) return 0;
    if (s->len + extra + 1 <= s->cap) return 1;
    size_t cap = s->cap ? s->cap : 4096;
    while (cap < s->len + extra + 1) cap *= 2;
    char *d = realloc(s->data, cap);
    if (!d) {
        s->oom = 1;
        return 0;
    }
    s->data = d;
    s->cap = cap;
    return 1;
}

void zg_sbuf_printf(zg_sbuf *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !sbuf_reserve(s, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(s->data + s->len, s->cap - s->len, fmt, ap);
    va_end(ap);
    s->len += (size_t)n;
}

void zg_sbuf_puts(zg_sbuf *s, const char *str) {
    size_t n = strlen(str);
    if (!sbuf_reserve(s, n)) return;
    memcpy(s->data + s->len, str, n + 1);
    s->len += n;
}

void zg_sbuf_escape_html(zg_sbuf *s, const char *str) {
    for (; *str; str++) {
        switch (*str) {
        case '<': zg_sbuf_puts(s, "&lt;"); break;
        case '>': zg_sbuf_puts(s, "&gt;"); break;
        case '&': zg_sbuf_puts(s, "&amp;"); break;
        case '"': zg_sbuf_puts(s, "&quot;"); break;
        default: {
            char c[2] = {*str, 0};
            zg_sbuf_puts(s, c);
        }
        }
    }
}

zg_status zg_table_init(zg_table *t, int32_t n_cols, const char *const *header, zg_error *err) {
    memset(t, 0, sizeof *t);
    if (n_cols <= 0) return zg_error_set(err, ZG_ERR_INVALID, "table needs columns");
    t->n_cols = n_cols;
    return zg_table_add_row(t, header, err);
}

zg_status zg_table_add_row(zg_table *t, const char *const *cells, zg_error *err) {
    if (t->n_rows == t->cap_rows) {
        int32_t cap = t->cap_rows ? 2 * t->cap_rows : 16;
        char **c = zg_realloc_array(t->cells, (size_t)cap * t->n_cols, sizeof *c, err);
        if (!c) return ZG_ERR_NOMEM;
        t->cells = c;
        t->cap_rows = cap;
    }
    for (int32_t j = 0; j < t->n_cols; j++) {
        const char *v = cells[j] ? cells[j] : "";
        char *d = strdup(v);
        if (!d) return zg_error_set(err, ZG_ERR_NOMEM, "out of memory");
        t->cells[(size_t)t->n_rows * t->n_cols + j] = d;
    }
    t->n_rows++;
    return ZG_OK;
}

void zg_table_print(const zg_table *t, FILE *f) {
    int w[64] = {0};
    int nc = t->n_cols < 64 ? t->n_cols : 64;
    for (int32_t i = 0; i < t->n_rows; i++)
        for (int j = 0; j < nc; j++) {
            int len = (int)strlen(t->cells[(size_t)i * t->n_cols + j]);
            if (len > w[j]) w[j] = len;
        }
    for (int32_t i = 0; i < t->n_rows; i++) {
        for (int j = 0; j < nc; j++) {
            const char *c = t->cells[(size_t)i * t->n_cols + j];
            if (j == 0) fprintf(f, "%-*s", w[j], c);
            else fprintf(f, "  %*s", w[j], c);
        }
        fputc('\n', f);
        if (i == 0) {
            int total = 0;
            for (int j = 0; j < nc; j++) total += w[j] + (j ? 2 : 0);
            for (int k = 0; k < total; k++) fputc('-', f);
            fputc('\n', f);
        }
    }
}

void zg_table_free(zg_table *t) {
    for (size_t i = 0; i < (size_t)t->n_rows * t->n_cols; i++) free(t->cells[i]);
    free(t->cells);
    memset(t, 0, sizeof *t);
}
