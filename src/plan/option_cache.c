// option_cache.c — exact cross-step cache of priced options for the exact path (plan.h).
// A miss makes exactly the calls of an uncached build (zg_options_enumerate, then the whole
// price) and stores their results; a hit returns them after re-pricing the whole option and one
// probe. Entries live in their own malloc blocks, found through a hash table.
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"

#define ZEL_PCACHE_DEFAULT_BUDGET ((size_t)32 << 20)

typedef struct pentry {
    // key: the fields the pricer may look at
    int64_t tokens;
    int32_t kind, frames, height, width, text_tokens;
    char bucket[ZG_BUCKET_NAME_MAX];
    uint64_t hash;
    // value
    zg_option *opts;
    int32_t n_opts;
    zg_price whole;
    int32_t probe; // index of an option priced by a direct call (not a shifted copy)
    uint64_t used; // stamp of the last build that used it
    size_t bytes;
    struct pentry *next; // in the retired list
} pentry;

struct zg_option_cache {
    zg_plan_ctx_key key;  // context fingerprint (plan/plan.h)
    int32_t rpn;
    // entries
    int32_t n_ent, cap_ent;
    pentry **ent;
    int32_t n_slots; // power of two, > 2 * n_ent
    int32_t *slot;   // open addressing: index into ent, -1 empty
    size_t bytes, budget;
    uint64_t stamp;
    zg_option_cache_stats st;
    pentry *retired; // dropped during a build while its options may be in use; freed later
    int32_t *ranks;  // scratch: a probe's rank list
    int32_t ranks_cap;
};

zg_option_cache *zg_option_cache_new(void) {
    zg_option_cache *c = calloc(1, sizeof *c);
    if (c) c->budget = ZEL_PCACHE_DEFAULT_BUDGET;
    return c;
}

static void free_retired(zg_option_cache *c) {
    while (c->retired) {
        pentry *e = c->retired;
        c->retired = e->next;
        free(e->opts);
        free(e);
    }
}

static void drop_entries(zg_option_cache *c) {
    free_retired(c);
    for (int32_t i = 0; i < c->n_ent; i++) {
        free(c->ent[i]->opts);
        free(c->ent[i]);
    }
    c->n_ent = 0;
    c->bytes = 0;
    for (int32_t i = 0; i < c->n_slots; i++)
        c->slot[i] = -1;
}

void zg_option_cache_clear(zg_option_cache *c) {
    if (!c) return;
    drop_entries(c);
    c->key.valid = 0;
    c->st.resets++;
}

void zg_option_cache_free(zg_option_cache *c) {
    if (!c) return;
    drop_entries(c);
    free(c->ent), free(c->slot), free(c->ranks);
    free(c);
}

void zg_option_cache_set_budget(zg_option_cache *c, size_t max_bytes) {
    if (c) c->budget = max_bytes;
}

zg_option_cache_stats zg_option_cache_get_stats(const zg_option_cache *c) {
    zg_option_cache_stats s;
    memset(&s, 0, sizeof s);
    if (!c) return s;
    s = c->st;
    s.n_entries = c->n_ent;
    s.bytes = c->bytes;
    return s;
}

// ---- context ---------------------------------------------------------------------------------


static int cmp_used(const void *pa, const void *pb) {
    const pentry *a = *(pentry *const *)pa, *b = *(pentry *const *)pb;
    return (a->used > b->used) - (a->used < b->used);
}

static void rehash(zg_option_cache *c) {
    for (int32_t i = 0; i < c->n_slots; i++)
        c->slot[i] = -1;
    uint32_t mask = (uint32_t)c->n_slots - 1;
    for (int32_t i = 0; i < c->n_ent; i++) {
        uint32_t j = (uint32_t)c->ent[i]->hash & mask;
        while (c->slot[j] >= 0)
            j = (j + 1) & mask;
        c->slot[j] = i;
    }
}

zg_status zg_option_cache_begin(zg_option_cache *c, const zg_plan_ctx *ctx, zg_error *err) {
    if (!c || !ctx || !ctx->model || !ctx->cluster || !ctx->pricer)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "option cache: needs a cache and a full "
                            "planner context");
    if (!zg_plan_ctx_key_same(&c->key, ctx)) {
        if (c->key.valid || c->n_ent) zg_option_cache_clear(c);
        zg_plan_ctx_key_set(&c->key, ctx);
        int32_t w = ctx->cluster->world_size, rpn = ctx->cluster->ranks_per_node;
        c->rpn = rpn > 0 && rpn <= w ? rpn : (w > 0 ? w : 1);
    }
    free_retired(c);
    c->stamp++;
    if (c->bytes > c->budget && c->n_ent > 0) {
        // least recently used first (ties in any order: that only decides what is re-priced)
        qsort(c->ent, (size_t)c->n_ent, sizeof *c->ent, cmp_used);
        int32_t k = 0;
        while (k < c->n_ent && c->bytes > c->budget / 4 * 3) {
            c->bytes -= c->ent[k]->bytes;
            free(c->ent[k]->opts);
            free(c->ent[k]);
            k++, c->st.evicted++;
        }
        memmove(c->ent, c->ent + k, sizeof *c->ent * (size_t)(c->n_ent - k));
        c->n_ent -= k;
        rehash(c);
    }
    return ZG_OK;
}

// ---- entries ---------------------------------------------------------------------------------

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 1099511628211ULL;
    return h;
}

static uint64_t key_hash(const zg_seq *s) {
    uint64_t h = 1469598103934665603ULL;
    int32_t k[5] = {(int32_t)s->kind, s->frames, s->height, s->width, s->text_tokens};
    h = fnv(h, &s->tokens, sizeof s->tokens);
    h = fnv(h, k, sizeof k);
    return fnv(h, s->bucket, strnlen(s->bucket, ZG_BUCKET_NAME_MAX));
}

static int key_eq(const pentry *e, const zg_seq *s, uint64_t h) {
    return e->hash == h && e->tokens == s->tokens && e->kind == (int32_t)s->kind &&
           e->frames == s->frames && e->height == s->height && e->width == s->width &&
           e->text_tokens == s->text_tokens && !strncmp(e->bucket, s->bucket, ZG_BUCKET_NAME_MAX);
}

static pentry *lookup(const zg_option_cache *c, const zg_seq *s, uint64_t h) {
    if (!c->n_slots) return NULL;
    uint32_t mask = (uint32_t)c->n_slots - 1;
    for (uint32_t j = (uint32_t)h & mask; c->slot[j] >= 0; j = (j + 1) & mask)
        if (key_eq(c->ent[c->slot[j]], s, h)) return c->ent[c->slot[j]];
    return NULL;
}

// Adds e; returns 0 (cache unchanged, caller keeps e) when out of memory.
static int insert(zg_option_cache *c, pentry *e) {
    if (c->n_ent == c->cap_ent) {
        int32_t ncap = c->cap_ent ? 2 * c->cap_ent : 16;
        pentry **t = realloc(c->ent, sizeof *t * (size_t)ncap);
        if (!t) return 0;
        c->ent = t, c->cap_ent = ncap;
    }
    if (2 * (c->n_ent + 1) >= c->n_slots) {
        int32_t want = c->n_slots ? 2 * c->n_slots : 64;
        int32_t *t = realloc(c->slot, sizeof *t * (size_t)want);
        if (!t) return 0;
        c->slot = t, c->n_slots = want;
        rehash(c);
    }
    uint32_t mask = (uint32_t)c->n_slots - 1, j = (uint32_t)e->hash & mask;
    while (c->slot[j] >= 0)
        j = (j + 1) & mask;
    c->slot[j] = c->n_ent;
    c->ent[c->n_ent++] = e;
    c->bytes += e->bytes;
    return 1;
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
    uint64_t h = key_hash(s);
    pentry *e = lookup(c, s, h);
    if (e) {
        int ok = 0;
        zg_status st = still_valid(c, ctx, s, e, whole, &ok, err);
        if (st) return st;
        if (ok) {
            e->used = c->stamp;
            c->st.hits++;
            *opts = e->opts;
            *n_opts = e->n_opts;
            return ZG_OK;
        }
        // the pricer changed in place: nothing cached is trusted any more. Entries may be in
        // use by this build (earlier hits), so they are retired and freed at the next begin.
        for (int32_t i = 0; i < c->n_ent; i++) {
            c->ent[i]->next = c->retired;
            c->retired = c->ent[i];
        }
        c->n_ent = 0;
        c->bytes = 0;
        for (int32_t i = 0; i < c->n_slots; i++)
            c->slot[i] = -1;
        c->st.resets++;
    }
    c->st.misses++;
    zg_option *o = NULL;
    int32_t n = 0;
    zg_status st = zg_options_enumerate(ctx, s, &o, &n, err);
    if (st) return st;
    int32_t r0 = 0;
    st = zg_pricer_price(ctx->pricer, s, (zg_config){1, 1, 1}, &r0, 1, whole, err);
    if (st) {
        free(o);
        return st;
    }
    if (n == 0) { // no option fits: not cached; the caller reports the sequence
        free(o);
        return ZG_OK;
    }
    e = calloc(1, sizeof *e);
    if (e) {
        e->tokens = s->tokens;
        e->kind = (int32_t)s->kind;
        e->frames = s->frames, e->height = s->height, e->width = s->width;
        e->text_tokens = s->text_tokens;
        memcpy(e->bucket, s->bucket, ZG_BUCKET_NAME_MAX);
        e->hash = h;
        e->opts = o;
        e->n_opts = n;
        e->whole = *whole;
        e->probe = pick_probe(o, n, c->rpn);
        e->used = c->stamp;
        e->bytes = sizeof *e + sizeof *o * (size_t)n;
        if (insert(c, e)) {
            *opts = o;
            *n_opts = n;
            return ZG_OK;
        }
        free(e);
    }
    free(o);
    return zg_error_set(err, ZG_ERR_NOMEM, "option cache: out of memory");
}
