// fast/cache.c — exact cross-step cache of the fast path's compact options (fast/fast.h): the
// configs and legal starts of the context (once per model/cluster/family/max degree), and per
// price key (tokens, kind, frames, height, width, text_tokens, bucket) the class's Pareto
// fronts, priced once. Every cached value is what an uncached build computes (same pricer calls,
// same order, same arithmetic), so plans are byte-identical with and without the cache.
//
// Invalidation: the whole cache resets when anything a price or the template structure depends
// on changes: the model or cluster (by value), the pricer (its address, functions incl. the
// block entry, impl pointer, mem_base, mem_room), the rank-set family, the max degree or
// exact_rank_prices. Templates are priced on contiguous blocks, through the pricer's block entry
// when it has one (cost.h, zg_pricer_price_block: bit-identical to the list). Against a pricer
// mutated in place (same object, new numbers), every cache hit re-prices its class's whole
// option and one split probe and compares them bitwise; any difference resets the cache.
// zel_cache_clear does it explicitly. Memory: a byte budget; least recently used entries are
// evicted at the start of a build (never the ones the current build uses): the core memo
// (core/hmap.c) keeps the entries.
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"
#include "zellige/fast/fast.h"


typedef struct probe {
    zg_config cfg;
    int32_t start;
    zg_price p;
} probe;

typedef struct centry {
    zg_seq key;         // its price key fields (zg_seq_price_key_eq)
    zel_tclass v;       // template fields only (rep, count, members unused)
    int32_t has_probe;  // probe: a split template, re-priced on every hit
    probe pr;
    size_t bytes;
    zg_arena arena;     // front, tpl
} centry;

struct zel_cache {
    zg_plan_ctx_key key;  // context fingerprint (plan/plan.h)
    // context structure
    zg_arena ctx_arena;
    int32_t nc;
    zg_config *cfgs;      // zg_config_enumerate order (degree ascending)
    int32_t *cfg_di;      // degree index of each config
    uint8_t *cfg_ok;      // legal apart from the token count (zg_config_check)
    int32_t n_degs, N, rpn;
    zel_tdeg *degs;
    int32_t *iota;        // N entries: iota[r] = r
    zg_memo memo;         // price key -> centry (core/hmap.c)
    // scratch for pricing one class
    void *buf;
    int64_t bufcap;
    zel_tpl *tbuf;
    int64_t tbufcap;
    void *sbuf;      // tent: one degree's entries sorted (emit_degree)
    int64_t sbufcap;
    int64_t *obuf;   // per offset: bucket starts (emit_degree)
    int64_t obufcap;
};

static void free_entry(void *v) {
    centry *e = v;
    zg_arena_free(&e->arena);
    free(e);
}

zel_cache *zel_cache_new(void) {
    zel_cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    zg_memo_init(&c->memo, ZEL_FAST_CACHE_BUDGET, free_entry);
    zg_arena_init(&c->ctx_arena, 1 << 16);
    return c;
}

void zel_cache_clear(zel_cache *c) {
    if (!c) return;
    zg_memo_clear(&c->memo);
    zg_arena_free(&c->ctx_arena);
    zg_arena_init(&c->ctx_arena, 1 << 16);
    c->key.valid = 0;
}

void zel_cache_free(zel_cache *c) {
    if (!c) return;
    zg_memo_free(&c->memo);
    zg_arena_free(&c->ctx_arena);
    free(c->buf), free(c->tbuf);
    free(c->sbuf), free(c->obuf);
    free(c);
}

void zel_cache_set_budget(zel_cache *c, size_t max_bytes) {
    if (c) c->memo.budget = max_bytes;
}

zel_cache_stats zel_cache_get_stats(const zel_cache *c) {
    return zg_memo_get_stats(c ? &c->memo : NULL);
}

// ---- context ---------------------------------------------------------------------------------


// Degrees of the configs, their legal starts and offsets (start % rpn) and the first start of
// each offset (where that offset is priced).
static zg_status build_degrees(zel_cache *c, const zg_plan_ctx *ctx, zg_error *err) {
    int32_t N = c->N, nc = c->nc;
    int32_t *starts = zg_calloc((size_t)N, sizeof(int32_t), err);
    char *seen = zg_calloc((size_t)c->rpn, 1, err);
    c->degs = zg_arena_alloc(&c->ctx_arena, sizeof(zel_tdeg) * (size_t)(nc > 0 ? nc : 1));
    if (!starts || !seen || !c->degs) {
        free(starts), free(seen);
        return zg_error_set(err, ZG_ERR_NOMEM, "zellige: out of memory (templates)");
    }
    for (int32_t ci = 0; ci < nc; ci++) {
        int32_t d = zg_config_degree(c->cfgs[ci]);
        if (c->n_degs && c->degs[c->n_degs - 1].d == d) {
            c->cfg_di[ci] = c->n_degs - 1;
            continue;
        }
        c->cfg_di[ci] = c->n_degs;
        zel_tdeg *D = &c->degs[c->n_degs++];
        D->d = d;
        D->n_starts = zg_rankset_starts(ctx->cluster, ctx->opts.family, d, starts);
        D->starts = zg_arena_alloc(&c->ctx_arena, sizeof(int32_t) * (size_t)(D->n_starts + 1));
        D->offs = zg_arena_alloc(&c->ctx_arena, sizeof(int32_t) * (size_t)(c->rpn + 1));
        D->off_start = zg_arena_alloc(&c->ctx_arena, sizeof(int32_t) * (size_t)(c->rpn + 1));
        if (!D->starts || !D->offs || !D->off_start) {
            free(starts), free(seen);
            return zg_error_set(err, ZG_ERR_NOMEM, "zellige: out of memory (templates)");
        }
        memcpy(D->starts, starts, sizeof(int32_t) * (size_t)D->n_starts);
        memset(seen, 0, (size_t)c->rpn);
        // the first start of every offset, in one pass (starts ascend)
        int32_t *first = D->off_start;  // indexed by offset first, compacted below
        for (int32_t o = 0; o < c->rpn; o++) first[o] = -1;
        for (int32_t i = 0; i < D->n_starts; i++) {
            int32_t o = starts[i] % c->rpn;
            if (!seen[o]) seen[o] = 1, first[o] = starts[i];
        }
        for (int32_t o = 0; o < c->rpn; o++)
            if (seen[o]) {
                D->off_start[D->n_offs] = first[o];  // n_offs <= o: never overwrites unread
                D->offs[D->n_offs++] = o;
            }
    }
    free(starts), free(seen);
    return ZG_OK;
}

// Makes the cache's context match ctx (resets everything when it does not).
static zg_status prepare(zel_cache *c, const zg_plan_ctx *ctx, zg_error *err) {
    if (zg_plan_ctx_key_same(&c->key, ctx)) return ZG_OK;
    if (c->key.valid || zg_memo_count(&c->memo)) zel_cache_clear(c);
    const zg_cluster *cl = ctx->cluster;
    zg_plan_ctx_key_set(&c->key, ctx);
    c->key.valid = 0;  // until the degrees below are built
    c->N = cl->world_size;
    c->rpn = cl->ranks_per_node > 0 && cl->ranks_per_node <= c->N ? cl->ranks_per_node : c->N;
    c->n_degs = 0;
    zg_config *cfgs = NULL;
    zg_status st = zg_config_enumerate(ctx->model, c->key.max_degree, &cfgs, &c->nc, err);
    if (st) return st;
    size_t nc1 = (size_t)c->nc + 1;
    c->cfgs = zg_arena_alloc(&c->ctx_arena, sizeof(zg_config) * nc1);
    c->cfg_di = zg_arena_alloc(&c->ctx_arena, sizeof(int32_t) * nc1);
    c->cfg_ok = zg_arena_alloc(&c->ctx_arena, nc1);
    c->iota = zg_arena_alloc(&c->ctx_arena, sizeof(int32_t) * (size_t)(c->N + 1));
    if (!c->cfgs || !c->cfg_di || !c->cfg_ok || !c->iota) {
        free(cfgs);
        return zg_error_set(err, ZG_ERR_NOMEM, "zellige: out of memory (templates)");
    }
    if (c->nc) memcpy(c->cfgs, cfgs, sizeof(zg_config) * (size_t)c->nc);
    free(cfgs);
    for (int32_t r = 0; r < c->N; r++) c->iota[r] = r;
    // zg_config_check's rules apart from "tokens >= degree", checked per class
    for (int32_t ci = 0; ci < c->nc; ci++)
        c->cfg_ok[ci] = zg_config_check(ctx->model, c->N, c->cfgs[ci], INT64_MAX, NULL) == ZG_OK;
    if ((st = build_degrees(c, ctx, err))) {
        zel_cache_clear(c);
        return st;
    }
    c->key.valid = 1;
    return ZG_OK;
}

// ---- entries ---------------------------------------------------------------------------------

static int key_eq(int64_t entry, const void *key, const void *ctx) {
    const zg_memo *m = ctx;
    return zg_seq_price_key_eq(&((const centry *)m->val[entry])->key, key);
}

// ---- pricing one class -----------------------------------------------------------------------

typedef struct tent {
    int32_t oi;
    zel_tpl t;
} tent;

// (offset, time, memory, q, k, h): within one degree the same order as the uncached build.
static int cmp_tent(const void *pa, const void *pb) {
    const tent *a = pa, *b = pb;
    if (a->oi != b->oi) return a->oi < b->oi ? -1 : 1;
    if (a->t.time != b->t.time) return a->t.time < b->t.time ? -1 : 1;
    if (a->t.mem != b->t.mem) return a->t.mem < b->t.mem ? -1 : 1;
    if (a->t.cfg.q != b->t.cfg.q) return a->t.cfg.q < b->t.cfg.q ? -1 : 1;
    if (a->t.cfg.k != b->t.cfg.k) return a->t.cfg.k < b->t.cfg.k ? -1 : 1;
    return (a->t.cfg.h > b->t.cfg.h) - (a->t.cfg.h < b->t.cfg.h);
}

static int grow(void **p, int64_t *cap, int64_t need, size_t size, zg_error *err) {
    if (need <= *cap) return 1;
    int64_t ncap = *cap ? *cap : 1024;
    while (ncap < need) ncap *= 2;
    void *t = zg_realloc_array(*p, (size_t)ncap, size, err);
    if (!t) return 0;
    *p = t, *cap = ncap;
    return 1;
}

// v[0..n) sorted by cmp_tent into c->sbuf: a stable counting sort by offset, then insertion
// sort within each offset (one entry per config of the degree: a few dozen at most). cmp_tent
// is a total order on distinct (offset, config) entries, so this is qsort's exact order, at a
// fraction of its cost (qsort was ~10% of a cold build at 1024 ranks).
static tent *sort_tents(zel_cache *c, const tent *v, int64_t n, int32_t n_offs, zg_error *err) {
    if (!grow(&c->sbuf, &c->sbufcap, n, sizeof(tent), err) ||
        !grow((void **)&c->obuf, &c->obufcap, (int64_t)n_offs + 1, sizeof(int64_t), err))
        return NULL;
    tent *o = c->sbuf;
    int64_t *at = c->obuf;
    memset(at, 0, sizeof(int64_t) * ((size_t)n_offs + 1));
    for (int64_t i = 0; i < n; i++) at[v[i].oi + 1]++;
    for (int32_t k = 0; k < n_offs; k++) at[k + 1] += at[k];
    for (int64_t i = 0; i < n; i++) o[at[v[i].oi]++] = v[i];  // at[k]: end of bucket k now
    int64_t lo = 0;
    for (int32_t k = 0; k < n_offs; lo = at[k], k++)
        for (int64_t i = lo + 1; i < at[k]; i++) {
            tent x = o[i];
            int64_t j = i;
            for (; j > lo && cmp_tent(&o[j - 1], &x) > 0; j--) o[j] = o[j - 1];
            o[j] = x;
        }
    return o;
}

// The Pareto fronts of one degree from its n priced entries (sorted here) into c->tbuf.
static zg_status emit_degree(zel_cache *c, centry *e, int32_t di, const tent *u, int64_t n,
                             zg_error *err) {
    if (n == 0) return ZG_OK;
    const zel_tdeg *D = &c->degs[di];
    const tent *v = sort_tents(c, u, n, D->n_offs, err);
    if (!v) return zg_error_set(err, ZG_ERR_NOMEM, "zellige: out of memory (templates)");
    zel_tclass *t = &e->v;
    int32_t *f = zg_arena_alloc(&e->arena, sizeof(int32_t) * (size_t)(D->n_offs + 1));
    if (!f || !grow((void **)&c->tbuf, &c->tbufcap, t->n_tpl + n, sizeof(zel_tpl), err))
        return zg_error_set(err, ZG_ERR_NOMEM, "zellige: out of memory (templates)");
    t->front[di] = f;
    int64_t i = 0;
    for (int32_t oi = 0; oi < D->n_offs; oi++) {
        f[oi] = t->n_tpl;
        double last = INFINITY;
        for (; i < n && v[i].oi == oi; i++) {
            const zel_tpl *p = &v[i].t;
            if (p->mem >= last) continue;  // dominated: slower and no less memory
            last = p->mem;
            c->tbuf[t->n_tpl++] = *p;
            if (p->time < t->min_time) t->min_time = p->time;
            if (p->time * D->d < t->min_area) t->min_area = p->time * D->d;
            if (zg_config_is_whole(p->cfg)) t->has_whole = 1;
        }
    }
    f[D->n_offs] = t->n_tpl;
    return ZG_OK;
}

// Stable merge sort of n (time, area) pairs, time then area ascending; tmp holds 2n doubles.
// A stable sort's order under one comparator is unique, so this is the order of the qsort it
// replaces (glibc's merge sort) for every input, up to exact duplicates (the same bits anyway).
// Inline comparisons: qsort's indirect calls were ~6% of a cold build at 1024 ranks.
static int pair_le(const double *a, const double *b) {
    return a[0] < b[0] || (a[0] == b[0] && !(a[1] > b[1]));
}

static void sort_pairs(double *v, double *tmp, int64_t n) {
    const int64_t run = 16;
    for (int64_t lo = 0; lo < n; lo += run) {  // insertion sort of runs
        int64_t hi = lo + run < n ? lo + run : n;
        for (int64_t i = lo + 1; i < hi; i++) {
            double x[2] = {v[2 * i], v[2 * i + 1]};
            int64_t j = i;
            for (; j > lo && !pair_le(&v[2 * (j - 1)], x); j--)
                v[2 * j] = v[2 * (j - 1)], v[2 * j + 1] = v[2 * (j - 1) + 1];
            v[2 * j] = x[0], v[2 * j + 1] = x[1];
        }
    }
    double *src = v, *dst = tmp;
    for (int64_t w = run; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) {
                const double *x = pair_le(&src[2 * i], &src[2 * j]) ? &src[2 * i++] : &src[2 * j++];
                dst[2 * k] = x[0], dst[2 * k + 1] = x[1], k++;
            }
            while (i < mid) dst[2 * k] = src[2 * i], dst[2 * k + 1] = src[2 * i + 1], k++, i++;
            while (j < hi) dst[2 * k] = src[2 * j], dst[2 * k + 1] = src[2 * j + 1], k++, j++;
        }
        double *t = src;
        src = dst, dst = t;
    }
    if (src != v) memcpy(v, src, sizeof(double) * 2 * (size_t)n);
}

// The entry's fastest template per degree and its area staircase (zel_tclass).
static zg_status summarise(zel_cache *c, centry *e, zg_error *err) {
    zel_tclass *t = &e->v;
    double *fast = zg_arena_alloc(&e->arena, sizeof(double) * (size_t)(c->n_degs + 1));
    double *pairs = malloc(sizeof(double) * 4 * (size_t)(t->n_tpl + 1));  // + sort scratch
    if (!fast || !pairs) {
        free(pairs);
        return zg_error_set(err, ZG_ERR_NOMEM, "zellige: out of memory (templates)");
    }
    int64_t n = 0;
    for (int32_t di = 0; di < c->n_degs; di++) {
        fast[di] = INFINITY;
        const int32_t *f = t->front[di];
        if (!f) continue;
        const zel_tdeg *D = &c->degs[di];
        for (int32_t k = 0; k < D->n_offs; k++)
            if (f[k] < f[k + 1] && t->tpl[f[k]].time < fast[di]) fast[di] = t->tpl[f[k]].time;
        for (int32_t i = f[0]; i < f[D->n_offs]; i++, n++)
            pairs[2 * n] = t->tpl[i].time, pairs[2 * n + 1] = t->tpl[i].time * D->d;
    }
    if (n > 1) sort_pairs(pairs, pairs + 2 * (size_t)(t->n_tpl + 1), n);
    int64_t m = 0;
    double cur = INFINITY;
    for (int64_t i = 0; i < n; i++)
        if (pairs[2 * i + 1] < cur) {
            cur = pairs[2 * i + 1];
            pairs[2 * m] = pairs[2 * i], pairs[2 * m + 1] = cur;
            m++;
        }
    double *stair = zg_arena_alloc(&e->arena, sizeof(double) * 2 * (size_t)(m + 1));
    if (!stair) {
        free(pairs);
        return zg_error_set(err, ZG_ERR_NOMEM, "zellige: out of memory (templates)");
    }
    if (m) memcpy(stair, pairs, sizeof(double) * 2 * (size_t)m);
    free(pairs);
    t->fastest = fast;
    t->stair = stair;
    t->n_stair = (int32_t)m;
    return ZG_OK;
}

// Price of cf on the block [start, start + d): the pricer's block entry when it has one paired
// with its price (zg_pricer_price_block), else price() on the cached identity list — a wrapper
// that replaced price is always called. Same doubles either way (cost.h).
static zg_status price_at(const zel_cache *c, const zg_pricer *p, const zg_seq *s, zg_config cf,
                          int32_t start, int32_t d, zg_price *out, zg_error *err) {
    if (zg_pricer_has_block(p)) return p->price_block(p, s, cf, start, d, out, err);
    return zg_pricer_price(p, s, cf, c->iota + start, d, out, err);
}

// Prices sequence s's templates into a new entry: every config legal for its tokens x every
// offset of its degree, priced on the offset's first start; over-cap prices dropped.
static zg_status build_entry(zel_cache *c, const zg_plan_ctx *ctx, const zg_seq *s,
                             zg_price whole, centry **out, zg_error *err) {
    *out = NULL;
    centry *e = calloc(1, sizeof *e);
    if (!e) return zg_error_set(err, ZG_ERR_NOMEM, "zellige: out of memory (templates)");
    zg_arena_init(&e->arena, 1 << 14);
    zel_tclass *t = &e->v;
    t->whole_time = whole.time, t->whole_mem = whole.mem;
    t->min_time = t->min_area = INFINITY;
    t->front = zg_arena_alloc(&e->arena, sizeof(int32_t *) * (size_t)(c->n_degs + 1));
    zg_status st = t->front ? ZG_OK
                            : zg_error_set(err, ZG_ERR_NOMEM, "zellige: out of memory (templates)");
    int64_t n = 0;
    int32_t cur_di = -1;
    for (int32_t ci = 0; ci < c->nc && !st; ci++) {
        zg_config cf = c->cfgs[ci];
        int32_t d = zg_config_degree(cf);
        if (s->tokens < d) break;  // configs ascend by degree: no later one is legal
        if (!c->cfg_ok[ci]) continue;
        int32_t di = c->cfg_di[ci];
        if (di != cur_di) {
            if (cur_di >= 0 && (st = emit_degree(c, e, cur_di, c->buf, n, err))) break;
            cur_di = di, n = 0;
        }
        const zel_tdeg *D = &c->degs[di];
        if (!grow(&c->buf, &c->bufcap, n + D->n_offs, sizeof(tent), err)) {
            st = ZG_ERR_NOMEM;
            break;
        }
        tent *v = c->buf;
        for (int32_t oi = 0; oi < D->n_offs; oi++) {
            zg_price p;
            st = price_at(c, ctx->pricer, s, cf, D->off_start[oi], d, &p, err);
            if (st) break;
            t->n_priced++;
            if (!isfinite(p.time) || !isfinite(p.mem) || p.time < 0 || p.mem < 0) {
                st = zg_error_set(err, ZG_ERR_INTERNAL,
                                  "pricer returned time %g s, memory %g B for sequence %lld; "
                                  "prices must be finite and non-negative",
                                  p.time, p.mem, (long long)s->id);
                break;
            }
            if (p.mem > c->key.mem_room) continue;
            v[n++] = (tent){oi, {cf, p.time, p.mem}};
        }
    }
    if (!st && cur_di >= 0) st = emit_degree(c, e, cur_di, c->buf, n, err);
    if (!st) {
        t->tpl = zg_arena_alloc(&e->arena, sizeof(zel_tpl) * (size_t)(t->n_tpl + 1));
        if (!t->tpl) st = zg_error_set(err, ZG_ERR_NOMEM, "zellige: out of memory (templates)");
        else if (t->n_tpl) memcpy(t->tpl, c->tbuf, sizeof(zel_tpl) * (size_t)t->n_tpl);
    }
    if (!st) st = summarise(c, e, err);
    if (st) {
        zg_arena_free(&e->arena);
        free(e);
        return st;
    }
    // the probe: the last template (largest degree and offset), usually a node-crossing one
    if (t->n_tpl) {
        int32_t di = c->n_degs - 1;
        while (!t->front[di]) di--;
        const zel_tdeg *D = &c->degs[di];
        e->has_probe = 1;
        e->pr = (probe){t->tpl[t->n_tpl - 1].cfg, 0,
                        {t->tpl[t->n_tpl - 1].time, t->tpl[t->n_tpl - 1].mem}};
        // the last template belongs to the last non-empty offset of degree di
        for (int32_t oi = D->n_offs - 1; oi >= 0; oi--)
            if (t->front[di][oi] < t->front[di][oi + 1]) {
                e->pr.start = D->off_start[oi];
                break;
            }
    }
    e->key = *s;
    e->bytes = sizeof *e + e->arena.used_total;
    *out = e;
    return ZG_OK;
}

static int same_price(zg_price a, zg_price b) {
    return !memcmp(&a.time, &b.time, sizeof(double)) && !memcmp(&a.mem, &b.mem, sizeof(double));
}

// A hit is still valid: its whole price (just computed) and its probe re-priced match.
static zg_status still_valid(const zel_cache *c, const zg_plan_ctx *ctx, const zg_seq *s,
                             const centry *e, zg_price whole, int *ok, zg_error *err) {
    *ok = same_price(whole, (zg_price){e->v.whole_time, e->v.whole_mem});
    if (!*ok || !e->has_probe) return ZG_OK;
    zg_price p;
    zg_status st = price_at(c, ctx->pricer, s, e->pr.cfg, e->pr.start,
                            zg_config_degree(e->pr.cfg), &p, err);
    if (st) return st;
    *ok = same_price(p, e->pr.p);
    return ZG_OK;
}

// Fills the template fields of ts's classes (rep, count, members set) and ts->degs from the
// cache, pricing the classes it does not hold. Used by zel_tset_build_cached.
zg_status zel_cache_fill(zel_cache *c, const zg_plan_ctx *ctx, const zg_batch *b, zel_tset *ts,
                         zg_error *err) {
    zg_status st = prepare(c, ctx, err);
    if (st) return st;
    zg_memo_begin(&c->memo);
    ts->n_degs = c->n_degs;
    ts->degs = c->degs;
    centry **hit = zg_calloc((size_t)ts->n_classes + 1, sizeof *hit, err);
    zg_price *whole = zg_calloc((size_t)ts->n_classes + 1, sizeof *whole, err);
    if (!hit || !whole) {
        free(hit), free(whole);
        return ZG_ERR_NOMEM;
    }
    // pass 1: whole prices, lookups and the validity of the hits
    int stale = 0;
    for (int32_t k = 0; k < ts->n_classes && !st; k++) {
        const zg_seq *s = &b->seqs[ts->cls[k].rep];
        if (s->tokens <= 0) {
            st = zg_error_set(err, ZG_ERR_INVALID,
                              "sequence %lld has %lld tokens; tokens must be positive",
                              (long long)s->id, (long long)s->tokens);
            break;
        }
        int32_t r0 = 0;
        if ((st = zg_pricer_price(ctx->pricer, s, (zg_config){1, 1, 1}, &r0, 1, &whole[k], err)))
            break;
        hit[k] = zg_memo_find(&c->memo, zg_seq_price_key_hash(s), key_eq, s, &c->memo);
        int ok = 1;
        if (hit[k] && !(st = still_valid(c, ctx, s, hit[k], whole[k], &ok, err)) && !ok)
            stale = 1;
    }
    if (!st && stale) {  // the pricer changed in place: nothing cached can be trusted
        zg_memo_clear(&c->memo);
        for (int32_t k = 0; k < ts->n_classes; k++) hit[k] = NULL;
    }
    // pass 2: price the misses (a class repeated in the batch is one class: one entry)
    for (int32_t k = 0; k < ts->n_classes && !st; k++) {
        const zg_seq *s = &b->seqs[ts->cls[k].rep];
        centry *e = hit[k];
        if (e) {
            c->memo.hits++;
        } else {
            c->memo.misses++;
            if ((st = build_entry(c, ctx, s, whole[k], &e, err))) break;
            if ((st = zg_memo_add(&c->memo, zg_seq_price_key_hash(s), e, e->bytes, err))) {
                free_entry(e);
                break;
            }
            ts->n_priced += e->v.n_priced;
        }
        zel_tclass *t = &ts->cls[k];
        t->whole_time = e->v.whole_time, t->whole_mem = e->v.whole_mem;
        t->has_whole = e->v.has_whole;
        t->front = e->v.front;
        t->tpl = e->v.tpl;
        t->n_tpl = e->v.n_tpl;
        t->min_time = e->v.min_time, t->min_area = e->v.min_area;
        t->fastest = e->v.fastest;
        t->stair = e->v.stair, t->n_stair = e->v.n_stair;
        t->n_priced = hit[k] ? 0 : e->v.n_priced;
    }
    free(hit), free(whole);
    return st;
}
