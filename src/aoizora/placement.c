// placement.c — placement search: network symmetries (reflections, swaps of equal dimensions,
// torus translations), exhaustive enumeration of canonical permutations for small slices,
// structured seeds (logical mesh digits mapped onto physical axis digits) plus swap local
// search for large ones. Every placement is priced from the same evidence.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aoizora/aoizora.h"

zg_status zg_aoi_symmetries(const zg_net *net, int32_t **out, int32_t *n_out, zg_error *err) {
    int32_t N = net->n_devices, nd = ZG_NET_MAX_DIMS;
    *out = NULL, *n_out = 0;
    if (net->kind != ZG_NET_GRID) {
        int32_t *id = zg_calloc((size_t)N, sizeof *id, err);
        if (!id) return err ? err->status : ZG_ERR_NOMEM;
        for (int32_t i = 0; i < N; i++) id[i] = i;
        *out = id, *n_out = 1;
        return ZG_OK;
    }
    static const int p3[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    int64_t ntrans = 1;
    for (int d = 0; d < nd; d++)
        if (net->wrap[d]) ntrans *= net->dims[d];
    int64_t cap = 6 * 8 * ntrans;
    int32_t *g = zg_calloc((size_t)(cap * N), sizeof *g, err);
    if (!g) return err ? err->status : ZG_ERR_NOMEM;
    int32_t cnt = 0;
    for (int p = 0; p < 6; p++) {
        int ok = 1;
        for (int d = 0; d < nd; d++) {
            int e = p3[p][d];
            if (net->dims[e] != net->dims[d] || net->wrap[e] != net->wrap[d]) ok = 0;
        }
        if (!ok) continue;
        for (int refl = 0; refl < 8; refl++) {
            int skip = 0;
            for (int d = 0; d < nd; d++)
                if ((refl >> d & 1) && net->dims[d] < 2) skip = 1;
            if (skip) continue;
            for (int64_t t = 0; t < ntrans; t++) {
                int32_t shift[ZG_NET_MAX_DIMS] = {0, 0, 0};
                int64_t tt = t;
                for (int d = 0; d < nd; d++)
                    if (net->wrap[d]) shift[d] = (int32_t)(tt % net->dims[d]), tt /= net->dims[d];
                int32_t *row = g + (size_t)cnt * N;
                for (int32_t dev = 0; dev < N; dev++) {
                    int32_t c[ZG_NET_MAX_DIMS], o[ZG_NET_MAX_DIMS];
                    zg_net_coords(net, dev, c);
                    for (int d = 0; d < nd; d++) {
                        int32_t v = (refl >> d & 1) ? net->dims[d] - 1 - c[d] : c[d];
                        v = (v + shift[d]) % net->dims[d];
                        o[p3[p][d]] = v;
                    }
                    row[dev] = zg_net_device_at(net, o);
                }
                cnt++;
            }
        }
    }
    *out = g, *n_out = cnt;
    return ZG_OK;
}

int zg_aoi_perm_is_canonical(const int32_t *perm, int32_t n, const int32_t *syms, int32_t ns) {
    for (int32_t s = 0; s < ns; s++) {
        const int32_t *g = syms + (size_t)s * n;
        for (int32_t i = 0; i < n; i++) {
            int32_t a = perm[i], b = g[perm[i]];
            if (b < a) return 0;
            if (b > a) break;
        }
    }
    return 1;
}

static int next_perm(int32_t *a, int32_t n) {
    int32_t i = n - 2;
    while (i >= 0 && a[i] >= a[i + 1]) i--;
    if (i < 0) return 0;
    int32_t j = n - 1;
    while (a[j] <= a[i]) j--;
    int32_t t = a[i];
    a[i] = a[j], a[j] = t;
    for (int32_t l = i + 1, r = n - 1; l < r; l++, r--) t = a[l], a[l] = a[r], a[r] = t;
    return 1;
}

typedef struct sctx {
    const zg_aoi_evidence *ev;
    const zg_net *net;
    zg_aoi_pattern_cost *pc;
    zg_error *err;
    int64_t priced;
} sctx;

static zg_status price(sctx *s, const int32_t *perm, zg_aoi_price *out) {
    if (zg_aoi_pattern_costs(s->ev, s->net, perm, s->pc, s->err)) return s->err->status;
    zg_aoi_walk(s->ev, s->net, s->pc, 1, out);
    s->priced++;
    return ZG_OK;
}

static int better(double a, double b) { return a < b * (1 - 1e-12); }

// Structured seeds: logical digits (mesh axes factored into primes, most significant first)
// mapped one-to-one onto physical digits (each dimension factored into primes).
typedef struct digit {
    int32_t prime, dim, weight;  // physical: dimension and coordinate weight; logical: weight
} digit;

static int32_t factor(int32_t v, int32_t *pr) {
    int32_t k = 0;
    for (int32_t p = 2; v > 1 && k < 16;)
        if (v % p == 0) pr[k++] = p, v /= p;
        else p++;
    return k;
}

static zg_status seeds(const zg_aoi_evidence *ev, const zg_net *net, int32_t max_seeds,
                       int32_t **out, int32_t *n_out, zg_error *err) {
    int32_t N = net->n_devices, nl = 0, np = 0, pr[16];
    digit L[24], P[24];
    // logical digits, least significant first: axes from the last (fastest) to the first
    int32_t shape[ZG_AOI_MAX_AXES], na = ev->n_axes ? ev->n_axes : 1;
    for (int a = 0; a < na; a++) shape[a] = ev->n_axes ? ev->mesh_shape[a] : N;
    int32_t w = 1;
    for (int a = na - 1; a >= 0; a--) {
        int32_t k = factor(shape[a], pr);
        for (int32_t i = 0; i < k && nl < 24; i++) L[nl].prime = pr[i], L[nl].weight = w, w *= pr[i], nl++;
    }
    for (int d = 0; d < ZG_NET_MAX_DIMS; d++) {
        int32_t k = factor(net->dims[d], pr), ww = 1;
        for (int32_t i = 0; i < k && np < 24; i++) P[np].prime = pr[i], P[np].dim = d, P[np].weight = ww, ww *= pr[i], np++;
    }
    int32_t *res = zg_calloc((size_t)(max_seeds + 1) * N, sizeof *res, err);
    if (!res) return err ? err->status : ZG_ERR_NOMEM;
    int32_t cnt = 0;
    for (int32_t i = 0; i < N; i++) res[i] = i;  // the default order first
    cnt = 1;
    if (w == N && nl == np && nl <= 12) {
        int32_t idx[24];
        for (int32_t i = 0; i < np; i++) idx[i] = i;
        do {
            int ok = 1;
            for (int32_t i = 0; i < nl && ok; i++) ok = L[i].prime == P[idx[i]].prime;
            if (!ok) continue;
            int32_t *row = res + (size_t)cnt * N;
            for (int32_t r = 0; r < N; r++) {
                int32_t c[ZG_NET_MAX_DIMS] = {0, 0, 0};
                for (int32_t i = 0; i < nl; i++) {
                    int32_t dig = (r / L[i].weight) % L[i].prime;
                    c[P[idx[i]].dim] += dig * P[idx[i]].weight;
                }
                row[r] = zg_net_device_at(net, c);
            }
            cnt++;
        } while (cnt <= max_seeds && next_perm(idx, np));
    }
    *out = res, *n_out = cnt;
    return ZG_OK;
}

zg_status zg_aoi_search(const zg_aoi_evidence *ev, const zg_net *net,
                        const zg_aoi_search_opts *o, zg_aoi_search_result *res, zg_error *err) {
    memset(res, 0, sizeof *res);
    int32_t N = net->n_devices;
    if (ev->num_devices != N)
        return zg_error_set(err, ZG_ERR_INVALID, "evidence has %d devices, network %s has %d",
                            ev->num_devices, net->name, N);
    sctx s = {ev, net, NULL, err, 0};
    s.pc = zg_calloc((size_t)ev->n_patterns + 1, sizeof *s.pc, err);
    int32_t *syms = NULL, nsym = 0, *cur = zg_calloc((size_t)N, sizeof *cur, err);
    res->perm = zg_calloc((size_t)N, sizeof *res->perm, err);
    zg_status st = (!s.pc || !cur || !res->perm) ? (err ? err->status : ZG_ERR_NOMEM) : ZG_OK;
    if (!st) st = zg_aoi_symmetries(net, &syms, &nsym, err);
    res->price.total_s = INFINITY;
    zg_aoi_price pr;
    if (!st && net->kind == ZG_NET_GRID && N <= o->exhaustive_max) {
        for (int32_t i = 0; i < N; i++) cur[i] = i;
        do {
            if (!zg_aoi_perm_is_canonical(cur, N, syms, nsym)) {
                res->skipped_sym++;
                continue;
            }
            if ((st = price(&s, cur, &pr))) break;
            if (better(pr.total_s, res->price.total_s)) {
                res->price = pr;
                memcpy(res->perm, cur, (size_t)N * sizeof *cur);
            }
        } while (next_perm(cur, N));
    } else if (!st) {
        int32_t *sd = NULL, nsd = 0;
        st = seeds(ev, net, 2000, &sd, &nsd, err);
        int32_t top[3] = {-1, -1, -1};
        double topv[3] = {INFINITY, INFINITY, INFINITY};
        for (int32_t k = 0; k < nsd && !st; k++) {
            const int32_t *p = sd + (size_t)k * N;
            if (k > 0 && (int64_t)nsym * N <= 4000000 && !zg_aoi_perm_is_canonical(p, N, syms, nsym)) {
                res->skipped_sym++;
                continue;
            }
            if ((st = price(&s, p, &pr))) break;
            for (int t = 0; t < 3; t++)
                if (better(pr.total_s, topv[t])) {
                    for (int u = 2; u > t; u--) topv[u] = topv[u - 1], top[u] = top[u - 1];
                    topv[t] = pr.total_s, top[t] = k;
                    break;
                }
        }
        zg_rng rng;
        zg_rng_init(&rng, o->seed);
        for (int t = 0; t < 3 && !st && top[t] >= 0; t++) {
            memcpy(cur, sd + (size_t)top[t] * N, (size_t)N * sizeof *cur);
            double curv = topv[t];
            int64_t pairs = (int64_t)N * (N - 1) / 2;
            for (int32_t round = 0; round < o->local_rounds && !st; round++) {
                int improved = 0;
                int64_t tries = pairs <= 2016 ? pairs : 2016;
                for (int64_t q = 0; q < tries && !st; q++) {
                    int32_t i, j;
                    if (pairs <= 2016) {
                        // q -> (i, j), i < j, in order
                        i = 0;
                        int64_t rem = q;
                        while (rem >= N - 1 - i) rem -= N - 1 - i, i++;
                        j = i + 1 + (int32_t)rem;
                    } else {
                        i = (int32_t)zg_rng_int(&rng, 0, N - 1);
                        j = (int32_t)zg_rng_int(&rng, 0, N - 1);
                        if (i == j) continue;
                    }
                    int32_t tmp = cur[i];
                    cur[i] = cur[j], cur[j] = tmp;
                    if ((st = price(&s, cur, &pr))) break;
                    if (better(pr.total_s, curv)) {
                        curv = pr.total_s, improved = 1;
                    } else {
                        cur[j] = cur[i], cur[i] = tmp;
                    }
                }
                if (!improved) break;
            }
            if (!st && better(curv, res->price.total_s)) {
                st = price(&s, cur, &res->price);
                memcpy(res->perm, cur, (size_t)N * sizeof *cur);
            }
        }
        free(sd);
    }
    res->priced = s.priced;
    free(s.pc), free(syms), free(cur);
    if (st) zg_aoi_search_result_free(res);
    return st;
}

void zg_aoi_search_result_free(zg_aoi_search_result *res) {
    free(res->perm);
    res->perm = NULL;
}
