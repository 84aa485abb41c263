// misc.c — time, progress bar, arena, count parsing, byte formatting, stable sort.
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"

double zg_time_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// --- progress ------------------------------------------------------------------------------

void zg_progress_init(zg_progress *p, const char *label, int64_t total) {
    const char *force = getenv("ZG_PROGRESS");
    p->label = label;
    p->total = total > 0 ? total : 1;
    p->done = 0;
    p->start = p->last_draw = zg_time_now();
    p->enabled = force ? atoi(force) != 0 : isatty(STDERR_FILENO);
}

static void progress_draw(zg_progress *p) {
    double frac = (double)p->done / (double)p->total;
    if (frac > 1) frac = 1;
    int width = 30, fill = (int)(frac * width + 0.5);
    double el = zg_time_now() - p->start;
    double eta = frac > 0 ? el * (1 - frac) / frac : 0;
    fprintf(stderr, "\r%-12s [", p->label ? p->label : "");
    for (int i = 0; i < width; i++) fputc(i < fill ? '#' : '.', stderr);
    fprintf(stderr, "] %5.1f%% %lld/%lld  %.1fs, eta %.1fs ", 100 * frac, (long long)p->done,
            (long long)p->total, el, eta);
    fflush(stderr);
}

void zg_progress_update(zg_progress *p, int64_t done) {
    p->done = done;
    if (!p->enabled) return;
    double now = zg_time_now();
    if (now - p->last_draw < 0.1 && done < p->total) return;
    p->last_draw = now;
    progress_draw(p);
}

void zg_progress_finish(zg_progress *p) {
    if (!p->enabled) return;
    p->done = p->total;
    progress_draw(p);
    fputc('\n', stderr);
}

// --- arena ---------------------------------------------------------------------------------

struct zg_arena_block {
    zg_arena_block *next;
    size_t size, used;
    _Alignas(16) unsigned char data[];
};

void zg_arena_init(zg_arena *a, size_t block_size) {
    a->head = NULL;
    a->block_size = block_size ? block_size : (1 << 20);
    a->used_total = 0;
}

// The next size bytes of the arena (16-byte aligned), not cleared; NULL on OOM.
static void *arena_take(zg_arena *a, size_t size) {
    size = (size + 15) & ~(size_t)15;
    if (!a->head || a->head->used + size > a->head->size) {
        size_t bs = size > a->block_size ? size : a->block_size;
        zg_arena_block *b = malloc(sizeof *b + bs);
        if (!b) return NULL;
        b->size = bs;
        b->used = 0;
        b->next = a->head;
        a->head = b;
    }
    void *p = a->head->data + a->head->used;
    a->head->used += size;
    a->used_total += size;
    return p;
}

void *zg_arena_alloc(zg_arena *a, size_t size) {
    void *p = arena_take(a, size);
    if (p) memset(p, 0, size);
    return p;
}

void *zg_arena_dup(zg_arena *a, const void *src, size_t size) {
    void *p = arena_take(a, size);
    if (p && size) memcpy(p, src, size);
    return p;
}

void zg_arena_reset(zg_arena *a) {
    while (a->head && a->head->next) {
        zg_arena_block *n = a->head->next;
        free(a->head);
        a->head = n;
    }
    if (a->head) a->head->used = 0;
    a->used_total = 0;
}

void zg_arena_free(zg_arena *a) {
    while (a->head) {
        zg_arena_block *n = a->head->next;
        free(a->head);
        a->head = n;
    }
    a->used_total = 0;
}

// --- parsing / formatting ------------------------------------------------------------------

int64_t zg_parse_count(const char *s) {
    if (!s || !*s) return -1;
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s || !(v > 0)) return -1;
    double mult = 1;
    if (*end) {
        char c = (char)toupper((unsigned char)*end);
        if (c == 'K') mult = 1e3;
        else if (c == 'M') mult = 1e6;
        else if (c == 'G') mult = 1e9;
        else return -1;
        if (end[1]) return -1;
    }
    v *= mult;
    if (v > 9.2e18) return -1;
    return (int64_t)(v + 0.5);
}

const char *zg_fmt_bytes(double bytes, char *buf, size_t bufsz) {
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    while (bytes >= 1024 && i < 4) {
        bytes /= 1024;
        i++;
    }
    snprintf(buf, bufsz, i ? "%.1f %s" : "%.0f %s", bytes, u[i]);
    return buf;
}

static void merge_pass(char *a, char *tmp, size_t lo, size_t mid, size_t hi, size_t sz,
                       int (*cmp)(const void *, const void *, void *), void *ctx) {
    size_t i = lo, j = mid, k = lo;
    while (i < mid && j < hi) {
        if (cmp(a + j * sz, a + i * sz, ctx) < 0) memcpy(tmp + (k++) * sz, a + (j++) * sz, sz);
        else memcpy(tmp + (k++) * sz, a + (i++) * sz, sz);
    }
    while (i < mid) memcpy(tmp + (k++) * sz, a + (i++) * sz, sz);
    while (j < hi) memcpy(tmp + (k++) * sz, a + (j++) * sz, sz);
    memcpy(a + lo * sz, tmp + lo * sz, (hi - lo) * sz);
}

zg_status zg_sort_stable(void *base, size_t n, size_t size,
                         int (*cmp)(const void *, const void *, void *), void *ctx,
                         zg_error *err) {
    if (n < 2) return ZG_OK;
    char *tmp = zg_calloc(n, size, err);
    if (!tmp) return ZG_ERR_NOMEM;
    for (size_t w = 1; w < n; w *= 2)
        for (size_t lo = 0; lo < n - w; lo += 2 * w) {
            size_t hi = lo + 2 * w < n ? lo + 2 * w : n;
            merge_pass(base, tmp, lo, lo + w, hi, size, cmp, ctx);
        }
    free(tmp);
    return ZG_OK;
}
