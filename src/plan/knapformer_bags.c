// knapformer_bags.c — KnapFormer's bag spec (reference §2.1) and cost model w(L) (§2.2).
#include <stdlib.h>
#include <string.h>

#include "plan/knapformer.h"

#define KNAP_SPEC_EXAMPLES "e.g. \"g1n32\", \"g4n8\", \"g1n2+g2n1+g4n1\""
#define KNAP_MAX_INT 1048576 // G, N and P bound (keeps every product in int32)

// Reads a decimal integer in [1, KNAP_MAX_INT] at *p; advances *p. -1 on no digits / overflow.
static int32_t read_int(const char **p) {
    const char *s = *p;
    int64_t v = 0;
    if (*s < '0' || *s > '9') return -1;
    while (*s >= '0' && *s <= '9') {
        v = v * 10 + (*s - '0');
        if (v > KNAP_MAX_INT) return -1;
        s++;
    }
    *p = s;
    return (int32_t)v;
}

void zg_knap_layout_free(zg_knap_layout *l) {
    free(l->bag_size);
    free(l->bag_first);
    free(l->gpu_bag);
    memset(l, 0, sizeof *l);
}

zg_status zg_knap_layout_parse(const char *spec, zg_knap_layout *l, zg_error *err) {
    memset(l, 0, sizeof *l);
    if (!spec || !*spec)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "knapformer needs a bag spec g{G}n{N}+... (" KNAP_SPEC_EXAMPLES ")");
    const char *p = spec;
    for (;;) {
        const char *term = p;
        int32_t g = -1, cnt = -1;
        if (*p == 'g') {
            p++;
            g = read_int(&p);
        }
        if (g > 0 && *p == 'n') {
            p++;
            cnt = read_int(&p);
        }
        if (g <= 0 || cnt <= 0 || (*p != '+' && *p != '\0')) {
            size_t tl = strcspn(term, "+");
            return zg_error_set(err, ZG_ERR_PARSE,
                                "bag spec \"%s\": term \"%.*s\" is not g{G}n{N} with G, N in "
                                "1..%d (" KNAP_SPEC_EXAMPLES ")",
                                spec, (int)tl, term, KNAP_MAX_INT);
        }
        for (int32_t i = 0; i < l->n_sizes; i++)
            if (l->size[i] == g)
                return zg_error_set(err, ZG_ERR_INVALID,
                                    "bag spec \"%s\": G=%d appears twice; every bag size must be "
                                    "distinct (merge the terms, e.g. g1n2+g1n3 -> g1n5)",
                                    spec, g);
        if (l->n_sizes == ZG_KNAP_MAX_SIZES)
            return zg_error_set(err, ZG_ERR_INVALID, "bag spec \"%s\": more than %d bag sizes",
                                spec, ZG_KNAP_MAX_SIZES);
        // insert keeping G ascending (the reference sorts the terms by G)
        int32_t at = l->n_sizes;
        while (at > 0 && l->size[at - 1] > g) {
            l->size[at] = l->size[at - 1];
            l->count[at] = l->count[at - 1];
            at--;
        }
        l->size[at] = g;
        l->count[at] = cnt;
        l->n_sizes++;
        int64_t gpus = (int64_t)l->group + (int64_t)g * cnt;
        if (gpus > KNAP_MAX_INT)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "bag spec \"%s\": more than %d GPUs in one balance group", spec,
                                KNAP_MAX_INT);
        l->group = (int32_t)gpus;
        l->n_bags += cnt;
        if (*p == '\0') break;
        p++; // '+'
    }
    l->bag_size = zg_calloc((size_t)l->n_bags, sizeof *l->bag_size, err);
    l->bag_first = zg_calloc((size_t)l->n_bags, sizeof *l->bag_first, err);
    l->gpu_bag = zg_calloc((size_t)l->group, sizeof *l->gpu_bag, err);
    if (!l->bag_size || !l->bag_first || !l->gpu_bag) {
        zg_knap_layout_free(l);
        return ZG_ERR_NOMEM;
    }
    int32_t b = 0, gpu = 0;
    for (int32_t i = 0; i < l->n_sizes; i++)
        for (int32_t c = 0; c < l->count[i]; c++, b++) {
            l->bag_size[b] = l->size[i];
            l->bag_first[b] = gpu;
            for (int32_t k = 0; k < l->size[i]; k++)
                l->gpu_bag[gpu++] = b;
        }
    return ZG_OK;
}

zg_status zg_knap_layout_replicas(const zg_knap_layout *l, int32_t world_size, int32_t *replicas,
                                  zg_error *err) {
    char name[160];
    if (world_size <= 0 || l->group <= 0 || world_size % l->group != 0)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "bag spec %s covers %d GPUs, which does not divide world size %d; "
                            "pick bags whose sum G*N divides it",
                            zg_knap_layout_name(l, name, sizeof name), l->group, world_size);
    *replicas = world_size / l->group;
    return ZG_OK;
}

const char *zg_knap_layout_name(const zg_knap_layout *l, char *buf, size_t bufsz) {
    size_t used = 0;
    if (bufsz) buf[0] = '\0';
    for (int32_t i = 0; i < l->n_sizes && used < bufsz; i++) {
        int k =
            snprintf(buf + used, bufsz - used, "%sg%dn%d", i ? "+" : "", l->size[i], l->count[i]);
        if (k < 0) break;
        used += (size_t)k;
    }
    return buf;
}

// --- layout enumeration ---------------------------------------------------------------------

typedef struct {
    int32_t sizes[ZG_KNAP_MAX_SIZES], n_sizes, counts[ZG_KNAP_MAX_SIZES];
    int32_t want_distinct, cap, n;
    char (*out)[128];
} layout_walk;

// Chooses counts for sizes[i..] (descending sizes) with `left` GPUs to fill and `used` distinct
// sizes so far; emits layouts with exactly want_distinct distinct sizes.
static void layout_rec(layout_walk *w, int32_t i, int32_t left, int32_t used) {
    if (w->n >= w->cap) return;
    if (left == 0) {
        if (used != w->want_distinct) return;
        char *b = w->out[w->n];
        size_t at = 0;
        b[0] = 0;
        for (int32_t j = w->n_sizes - 1; j >= 0; j--)  // ascending G in the spec
            if (w->counts[j] && at < 120)
                at += (size_t)snprintf(b + at, 128 - at, "%sg%dn%d", at ? "+" : "",
                                       w->sizes[j], w->counts[j]);
        w->n++;
        return;
    }
    if (i >= w->n_sizes || used > w->want_distinct) return;
    int32_t g = w->sizes[i];
    for (int32_t c = left / g; c >= 0; c--) {  // larger counts of larger bags first
        if (c > 0 && used + 1 > w->want_distinct) continue;
        w->counts[i] = c;
        layout_rec(w, i + 1, left - c * g, used + (c > 0));
        w->counts[i] = 0;
    }
}

int32_t zg_knap_layouts_enumerate(int32_t world, int32_t n_heads, int32_t max_distinct,
                                  char (*out)[128], int32_t cap) {
    if (world <= 0 || n_heads <= 0 || cap <= 0) return 0;
    layout_walk w;
    memset(&w, 0, sizeof w);
    w.out = out;
    w.cap = cap;
    for (int32_t g = world; g >= 1 && w.n_sizes < ZG_KNAP_MAX_SIZES; g--)
        if (n_heads % g == 0) w.sizes[w.n_sizes++] = g;
    for (int32_t k = 1; k <= max_distinct && w.n < cap; k++) {
        w.want_distinct = k;
        layout_rec(&w, 0, world, 0);
    }
    return w.n;
}

// --- w(L) -------------------------------------------------------------------------------------

zg_status zg_knap_workload_check(int64_t L, int64_t d, zg_error *err) {
    // L*L < 2^63 needs L < 3.03e9; 24*L*d*d < 2^63 needs L*d*d < 3.8e17
    if (L < 1 || L > 3000000000LL)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "sequence length %lld is out of range 1..3e9 for w(L)", (long long)L);
    if (d < 1 || d > 1000000)
        return zg_error_set(err, ZG_ERR_INVALID, "model width d=%lld is out of range 1..1e6",
                            (long long)d);
    if (L > INT64_MAX / 24 / (d * d))
        return zg_error_set(err, ZG_ERR_INVALID,
                            "w(L) of length %lld at d=%lld overflows the exact 24*L*d^2 term",
                            (long long)L, (long long)d);
    return ZG_OK;
}

double zg_knap_workload(int64_t L, int64_t d, double gamma) {
    int64_t linear = 24 * L * (d * d);                       // Python int: exact
    double attn = gamma * 4.0 * (double)(L * L) * (double)d; // ((g*4)*LL)*d, left to right
    return ((double)linear + attn) / 1e12;                   // int + float -> float
}
