// zellige/rmq.h — range-maximum over per-rank ledgers (sparse table), used by the Zellige solver
// to read "the largest load on an option's rank block" in O(1).
#ifndef ZG_ZEL_RMQ_H
#define ZG_ZEL_RMQ_H

#include <stdint.h>

typedef struct zel_rmq {
    int32_t n, levels;
    double *t;        // levels x n: t[k*n + i] = max of v[i .. i + 2^k)
    int32_t *log2;    // n + 1 entries: floor(log2(len))
} zel_rmq;

static inline int32_t zel_rmq_levels(int32_t n) {
    int32_t k = 1;
    while ((1 << k) <= n) k++;
    return k;
}

// Builds the table of v[0..n) into r (t and log2 preallocated: levels*n and n+1 entries).
static inline void zel_rmq_build(zel_rmq *r, const double *v) {
    int32_t n = r->n;
    for (int32_t i = 0; i < n; i++) r->t[i] = v[i];
    for (int32_t k = 1; k < r->levels; k++) {
        const double *prev = r->t + (size_t)(k - 1) * n;
        double *cur = r->t + (size_t)k * n;
        int32_t half = 1 << (k - 1), lim = n - (1 << k);
        for (int32_t i = 0; i <= lim; i++) {
            double a = prev[i], b = prev[i + half];
            cur[i] = a > b ? a : b;
        }
    }
}

// v[lo .. hi) changed: refreshes the entries that cover them, O(levels * (hi - lo) + n) at
// worst and O(hi - lo + 2^levels) in total over the levels (same values as a full build).
static inline void zel_rmq_update(zel_rmq *r, const double *v, int32_t lo, int32_t hi) {
    int32_t n = r->n;
    if (lo < 0) lo = 0;
    if (hi > n) hi = n;
    if (lo >= hi) return;
    for (int32_t i = lo; i < hi; i++) r->t[i] = v[i];
    for (int32_t k = 1; k < r->levels; k++) {
        const double *prev = r->t + (size_t)(k - 1) * n;
        double *cur = r->t + (size_t)k * n;
        int32_t half = 1 << (k - 1), a = lo - (1 << k) + 1, b = hi - 1, lim = n - (1 << k);
        if (a < 0) a = 0;
        if (b > lim) b = lim;
        for (int32_t i = a; i <= b; i++) {
            double x = prev[i], y = prev[i + half];
            cur[i] = x > y ? x : y;
        }
    }
}

// max of v[a .. a + len), len >= 1
static inline double zel_rmq_max(const zel_rmq *r, int32_t a, int32_t len) {
    int32_t k = r->log2[len];
    const double *row = r->t + (size_t)k * r->n;
    double x = row[a], y = row[a + len - (1 << k)];
    return x > y ? x : y;
}

static inline void zel_rmq_init_log(zel_rmq *r) {
    r->log2[0] = 0;
    if (r->n >= 1) r->log2[1] = 0;
    for (int32_t i = 2; i <= r->n; i++) r->log2[i] = r->log2[i / 2] + 1;
}

#endif
