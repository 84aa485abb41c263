// option_cache.c — exact cross-step cache of priced options (plan.h, zg_option_cache), on the
// core memo (core/hmap.c). A miss makes exactly the calls of an uncached build
// (zg_options_enumerate, then the whole price) and stores their results; a hit returns them
// after re-pricing the whole option and one probe.
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"

#define OPTION_CACHE_DEFAULT_BUDGET ((size_t)32 << 20)

typedef struct pentry {
    zg_seq key;     // its price key fields (zg_seq_price_key_eq)
    zg_option *opts;
    int32_t n_opts;
    zg_price whole;
    int32_t probe;  // index of an option priced by a direct call (not a shifted copy)
} pentry;

struct zg_option_cache {
    zg_plan_ctx_key key;  // context fingerprint (plan/plan.h)
    int32_t rpn;
    zg_memo memo;         // price key -> pentry
    int32_t *ranks;       // scratch: a probe's rank list
    int32_t ranks_cap;
};

static void free_entry(void *v) {
    pentry *e = v;
    free(e->opts);
    free(e);
}

zg_option_cache *zg_option_cache_new(void) {
    zg_option_cache *c = calloc(1, sizeof *c);
    if (c) zg_memo_init(&c->memo, OPTION_CACHE_DEFAULT_BUDGET, free_entry);
    return c;
}

void zg_option_cache_clear(zg_option_cache *c) {
    if (!c) return;
    zg_memo_clear(&c->memo);
    c->key.valid = 0;
}

void zg_option_cache_free(zg_option_cache *c) {
    if (!c) return;
    zg_memo_free(&c->memo);
    free(c->ranks);
    free(c);
}

void zg_option_cache_set_budget(zg_option_cache *c, size_t max_bytes) {
    if (c) c->memo.budget = max_bytes;
}

zg_option_cache_stats zg_option_cache_get_stats(const zg_option_cache *c) {
    return zg_memo_get_stats(c ? &c->memo : NULL);
}

zg_status zg_option_cache_begin(zg_option_cache *c, const zg_plan_ctx *ctx, zg_error *err) {
    if (!c || !ctx || !ctx->model || !ctx->cluster || !ctx->pricer)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "option cache: needs a cache and a full planner context");
    if (!zg_plan_ctx_key_same(&c->key, ctx)) {
        if (c->key.valid || zg_memo_count(&c->memo)) zg_option_cache_clear(c);
        zg_plan_ctx_key_set(&c->key, ctx);
        int32_t w = ctx->cluster->world_size, rpn = ctx->cluster->ranks_per_node;
        c->rpn = rpn > 0 && rpn <= w ? rpn : (w > 0 ? w : 1);
    }
    zg_memo_begin(&c->memo);
    return ZG_OK;
}

static int key_eq(int64_t entry, const void *key, const void *ctx) {
    const zg_memo *m = ctx;
    return zg_seq_price_key_eq(&((const pentry *)m->val[entry])->key, key);
}

// The probe: the first option with the last option's config and offset (start % rpn). The
// enumeration prices the first legal start of every (config, offset) by a direct call and gives
// the later ones of that offset the same price, so this option's price is a direct call's.
static int32_t pick_probe(const zg_option *o, int32_t n, int32_t rpn) {
    if (n == 0) return -1;
    const zg_option *last = &o[n - 1];
    for (int32_t k = 0; k < n; k++)
        if (zg_config_eq(o[k].config, last->config) && o[k].start % rpn == last->start % rpn)
            return k;
    return n - 1;
}

static int same_price(zg_price a, double t, double m) {
    return !memcmp(&a.time, &t, sizeof t) && !memcmp(&a.mem, &m, sizeof m);
}

// A hit is still valid: the whole option and the probe re-priced bitwise equal.
static zg_status still_valid(zg_option_cache *c, const zg_plan_ctx *ctx, const zg_seq *s,
                             const pentry *e, zg_price *whole, int *ok, zg_error *err) {
    int32_t r0 = 0;
    zg_status st = zg_pricer_price(ctx->pricer, s, (zg_config){1, 1, 1}, &r0, 1, whole, err);
    if (st) return st;
    *ok = same_price(*whole, e->whole.time, e->whole.mem);
    if (!*ok || e->probe < 0) return ZG_OK;
    const zg_option *o = &e->opts[e->probe];
    int32_t d = zg_option_degree(o);
    if (d > c->ranks_cap) {
        int32_t *t = realloc(c->ranks, sizeof *t * (size_t)d);
        if (!t) return zg_error_set(err, ZG_ERR_NOMEM, "option cache: out of memory");
        c->ranks = t, c->ranks_cap = d;
    }
    for (int32_t i = 0; i < d; i++)
        c->ranks[i] = o->start + i;
    zg_price p;
    st = zg_pricer_price(ctx->pricer, s, o->config, c->ranks, d, &p, err);
    if (st) return st;
    *ok = same_price(p, o->time, o->mem);
    return ZG_OK;
}

zg_status zg_option_cache_options(zg_option_cache *c, const zg_plan_ctx *ctx, const zg_seq *s,
                                  const zg_option **opts, int32_t *n_opts, zg_price *whole,
                                  zg_error *err) {
    *opts = NULL;
    *n_opts = 0;
    uint64_t h = zg_seq_price_key_hash(s);
    pentry *e = zg_memo_find(&c->memo, h, key_eq, s, &c->memo);
    if (e) {
        int ok = 0;
        zg_status st = still_valid(c, ctx, s, e, whole, &ok, err);
        if (st) return st;
        if (ok) {
            c->memo.hits++;
            *opts = e->opts;
            *n_opts = e->n_opts;
            return ZG_OK;
        }
        // the pricer changed in place: nothing cached is trusted any more. Entries may be in
        // use by this build (earlier hits), so they are retired and freed at the next begin.
        if ((st = zg_memo_retire_all(&c->memo, err))) return st;
    }
    c->memo.misses++;
    zg_option *o = NULL;
    int32_t n = 0;
    zg_status st = zg_options_enumerate(ctx, s, &o, &n, err);
    if (st) return st;
    int32_t r0 = 0;
    st = zg_pricer_price(ctx->pricer, s, (zg_config){1, 1, 1}, &r0, 1, whole, err);
    if (st || n == 0) {  // n == 0: no option fits: not cached; the caller reports the sequence
        free(o);
        return st;
    }
    e = calloc(1, sizeof *e);
    if (!e) {
        free(o);
        return zg_error_set(err, ZG_ERR_NOMEM, "option cache: out of memory");
    }
    e->key = *s;
    e->opts = o;
    e->n_opts = n;
    e->whole = *whole;
    e->probe = pick_probe(o, n, c->rpn);
    if ((st = zg_memo_add(&c->memo, h, e, sizeof *e + sizeof *o * (size_t)n, err))) {
        free_entry(e);
        return st;
    }
    *opts = o;
    *n_opts = n;
    return ZG_OK;
}
