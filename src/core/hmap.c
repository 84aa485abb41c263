// hmap.c — the tree's one hash table (core.h): an open-addressing index from 64-bit hashes to
// entry numbers, and the memo built on it (budgeted, least recently used first out).
// Linear probing over a power-of-two slot table kept at most half full: keys here are a few
// dozen to a few thousand sequence shapes, so a lookup is one or two probes.
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

uint64_t zg_hash_words(uint64_t h, const int64_t *w, size_t n) {
    for (size_t i = 0; i < n; i++) {
        h = (h ^ (uint64_t)w[i]) * 0x9E3779B97F4A7C15ULL;
        h ^= h >> 29;
    }
    return h;
}

uint64_t zg_hash_bytes(uint64_t h, const void *p, size_t n) {
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 1099511628211ULL;
    return h;
}

void zg_hmap_init(zg_hmap *m) { memset(m, 0, sizeof *m); }

void zg_hmap_free(zg_hmap *m) {
    free(m->hash);
    free(m->slot);
    memset(m, 0, sizeof *m);
}

void zg_hmap_clear(zg_hmap *m) {
    m->n = 0;
    for (int64_t i = 0; i < m->n_slots; i++) m->slot[i] = -1;
}

static void place(zg_hmap *m, int64_t e) {
    uint64_t mask = (uint64_t)m->n_slots - 1, j = m->hash[e] & mask;
    while (m->slot[j] >= 0) j = (j + 1) & mask;
    m->slot[j] = e;
}

static void reindex(zg_hmap *m) {
    for (int64_t i = 0; i < m->n_slots; i++) m->slot[i] = -1;
    for (int64_t e = 0; e < m->n; e++) place(m, e);
}

int64_t zg_hmap_find(const zg_hmap *m, uint64_t h, zg_hmap_eq eq, const void *key,
                     const void *ctx) {
    if (!m->n_slots) return -1;
    uint64_t mask = (uint64_t)m->n_slots - 1;
    for (uint64_t j = h & mask; m->slot[j] >= 0; j = (j + 1) & mask) {
        int64_t e = m->slot[j];
        if (m->hash[e] == h && eq(e, key, ctx)) return e;
    }
    return -1;
}

int64_t zg_hmap_add(zg_hmap *m, uint64_t h, zg_error *err) {
    if (m->n == m->cap) {
        int64_t cap = m->cap ? 2 * m->cap : 16;
        uint64_t *t = zg_realloc_array(m->hash, (size_t)cap, sizeof *t, err);
        if (!t) return -1;
        m->hash = t, m->cap = cap;
    }
    if (2 * (m->n + 1) + 2 > m->n_slots) {
        int64_t want = m->n_slots ? 2 * m->n_slots : 64;
        while (2 * (m->n + 1) + 2 > want) want *= 2;
        int64_t *t = zg_realloc_array(m->slot, (size_t)want, sizeof *t, err);
        if (!t) return -1;
        m->slot = t, m->n_slots = want;
        reindex(m);
    }
    int64_t e = m->n++;
    m->hash[e] = h;
    place(m, e);
    return e;
}

zg_status zg_hmap_keep(zg_hmap *m, const int64_t *keep, int64_t k, zg_error *err) {
    uint64_t *h = zg_calloc((size_t)(k > 0 ? k : 1), sizeof *h, err);
    if (!h) return ZG_ERR_NOMEM;
    for (int64_t i = 0; i < k; i++) h[i] = m->hash[keep[i]];
    memcpy(m->hash, h, sizeof *h * (size_t)k);
    free(h);
    m->n = k;
    reindex(m);
    return ZG_OK;
}

// ---- memo ------------------------------------------------------------------------------------

void zg_memo_init(zg_memo *m, size_t budget, void (*free_val)(void *)) {
    memset(m, 0, sizeof *m);
    zg_hmap_init(&m->index);
    m->budget = budget;
    m->free_val = free_val;
}

static void free_retired(zg_memo *m) {
    for (int64_t i = 0; i < m->n_retired; i++) m->free_val(m->retired[i]);
    m->n_retired = 0;
}

static void drop_all(zg_memo *m) {
    for (int64_t e = 0; e < m->index.n; e++) m->free_val(m->val[e]);
    zg_hmap_clear(&m->index);
    m->total = 0;
}

void zg_memo_free(zg_memo *m) {
    free_retired(m);
    drop_all(m);
    zg_hmap_free(&m->index);
    free(m->val), free(m->used), free(m->bytes), free(m->retired);
    memset(m, 0, sizeof *m);
}

void zg_memo_clear(zg_memo *m) {
    free_retired(m);
    drop_all(m);
    m->resets++;
}

zg_status zg_memo_retire_all(zg_memo *m, zg_error *err) {
    int64_t need = m->n_retired + m->index.n;
    if (need > m->cap_retired) {
        void **t = zg_realloc_array(m->retired, (size_t)need, sizeof *t, err);
        if (!t) return ZG_ERR_NOMEM;
        m->retired = t, m->cap_retired = need;
    }
    for (int64_t e = 0; e < m->index.n; e++) m->retired[m->n_retired++] = m->val[e];
    zg_hmap_clear(&m->index);
    m->total = 0;
    m->resets++;
    return ZG_OK;
}

static int cmp_used(const void *pa, const void *pb, void *ctx) {
    const uint64_t *used = ctx;
    uint64_t a = used[*(const int64_t *)pa], b = used[*(const int64_t *)pb];
    return (a > b) - (a < b);
}

// Moves the values order[0..k) to the front, in that order, and renumbers the index to match.
static zg_status keep_values(zg_memo *m, const int64_t *order, int64_t k, zg_error *err) {
    size_t n1 = (size_t)(k > 0 ? k : 1);
    void **v = zg_calloc(n1, sizeof *v, err);
    uint64_t *u = zg_calloc(n1, sizeof *u, err);
    size_t *b = zg_calloc(n1, sizeof *b, err);
    zg_status st = v && u && b ? zg_hmap_keep(&m->index, order, k, err) : ZG_ERR_NOMEM;
    if (!st) {
        for (int64_t i = 0; i < k; i++)
            v[i] = m->val[order[i]], u[i] = m->used[order[i]], b[i] = m->bytes[order[i]];
        memcpy(m->val, v, sizeof *v * (size_t)k);
        memcpy(m->used, u, sizeof *u * (size_t)k);
        memcpy(m->bytes, b, sizeof *b * (size_t)k);
    }
    free(v), free(u), free(b);
    return st;
}

void zg_memo_begin(zg_memo *m) {
    free_retired(m);
    m->stamp++;
    int64_t n = m->index.n;
    if (m->total <= m->budget || n == 0) return;
    zg_error err;
    int64_t *order = zg_calloc((size_t)n, sizeof *order, &err);
    // oldest build first (a stable sort: ties keep their order)
    for (int64_t e = 0; order && e < n; e++) order[e] = e;
    if (!order || zg_sort_stable(order, (size_t)n, sizeof *order, cmp_used, m->used, &err)) {
        free(order);  // out of memory: no eviction this time, the memo stays valid and larger
        return;
    }
    int64_t k = 0;
    while (k < n && m->total > m->budget / 4 * 3) {
        m->total -= m->bytes[order[k]];
        m->free_val(m->val[order[k]]);
        k++, m->evictions++;
    }
    // the survivors, oldest first, renumbered 0..; out of memory: forget them too (a valid,
    // emptier memo)
    if (keep_values(m, order + k, n - k, &err)) {
        for (int64_t i = k; i < n; i++) m->free_val(m->val[order[i]]);
        zg_hmap_clear(&m->index);
        m->total = 0;
    }
    free(order);
}

void *zg_memo_find(zg_memo *m, uint64_t h, zg_hmap_eq eq, const void *key, const void *ctx) {
    int64_t e = zg_hmap_find(&m->index, h, eq, key, ctx);
    if (e < 0) return NULL;
    m->used[e] = m->stamp;
    return m->val[e];
}

zg_status zg_memo_add(zg_memo *m, uint64_t h, void *val, size_t bytes, zg_error *err) {
    int64_t n = m->index.n;
    if (n == m->val_cap) {
        int64_t cap = n ? 2 * n : 16;
        void **v = zg_realloc_array(m->val, (size_t)cap, sizeof *v, err);
        if (!v) return ZG_ERR_NOMEM;
        m->val = v;
        uint64_t *u = zg_realloc_array(m->used, (size_t)cap, sizeof *u, err);
        if (!u) return ZG_ERR_NOMEM;
        m->used = u;
        size_t *b = zg_realloc_array(m->bytes, (size_t)cap, sizeof *b, err);
        if (!b) return ZG_ERR_NOMEM;
        m->bytes = b;
        m->val_cap = cap;
    }
    int64_t e = zg_hmap_add(&m->index, h, err);
    if (e < 0) return ZG_ERR_NOMEM;
    m->val[e] = val, m->used[e] = m->stamp, m->bytes[e] = bytes;
    m->total += bytes;
    return ZG_OK;
}

zg_memo_stats zg_memo_get_stats(const zg_memo *m) {
    zg_memo_stats s;
    memset(&s, 0, sizeof s);
    if (!m) return s;
    s.hits = m->hits, s.misses = m->misses, s.resets = m->resets, s.evictions = m->evictions;
    s.n_entries = m->index.n;
    s.bytes = m->total;
    return s;
}
