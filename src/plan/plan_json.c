// plan_json.c — plan <-> JSON (docs/formats.md). The reader checks structure (types, sizes,
// array lengths) so a read plan is safe to walk; zg_plan_validate checks the semantics.
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"

#define PLAN_MAX_WORLD 65536  // largest world size the reader accepts

static int add_num(cJSON *o, const char *k, double v) {
    return cJSON_AddNumberToObject(o, k, v) != NULL;
}

cJSON *zg_plan_to_json(const zg_plan *p) {
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    int ok = add_num(j, "version", p->version ? p->version : 1) &&
             cJSON_AddStringToObject(j, "policy", p->policy) &&
             cJSON_AddStringToObject(j, "fallback_from", p->fallback_from) &&
             cJSON_AddStringToObject(j, "summary", p->summary) &&
             add_num(j, "world_size", p->world_size) && add_num(j, "makespan", p->makespan) &&
             add_num(j, "plan_time_ms", p->plan_time_ms) &&
             add_num(j, "lower_bound", p->lower_bound) &&
             cJSON_AddBoolToObject(j, "optimal", p->optimal != 0) &&
             add_num(j, "mem_base", p->mem_base) && add_num(j, "mem_cap", p->mem_cap);
    if (ok && p->over_cap) {  // the ranks over the cap (zg_plan.over_cap)
        cJSON *oc = cJSON_AddArrayToObject(j, "over_cap_ranks");
        int32_t *r = calloc((size_t)p->world_size, sizeof *r);
        int32_t k = r ? zg_plan_over_cap_ranks(p, r, p->world_size) : 0;
        ok = oc && r;
        for (int32_t i = 0; ok && i < k; i++) {
            cJSON *x = cJSON_CreateNumber(r[i]);
            ok = x && cJSON_AddItemToArray(oc, x);
        }
        free(r);
    }
    cJSON *seqs = ok ? cJSON_AddArrayToObject(j, "sequences") : NULL;
    if (!seqs) goto fail;
    for (int64_t i = 0; i < p->n; i++) {
        const zg_placement *pl = &p->p[i];
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(seqs, o)) goto fail;
        cJSON *cfg;
        if (!add_num(o, "id", (double)pl->id) || !add_num(o, "tokens", (double)pl->tokens) ||
            (pl->round != 0 && !add_num(o, "round", pl->round)) ||
            !(cfg = cJSON_AddObjectToObject(o, "config")) || !add_num(cfg, "q", pl->config.q) ||
            !add_num(cfg, "h", pl->config.h) || !add_num(cfg, "k", pl->config.k))
            goto fail;
        cJSON *rk = cJSON_AddArrayToObject(o, "ranks");
        cJSON *sh = cJSON_AddArrayToObject(o, "shards");
        if (!rk || !sh) goto fail;
        for (int32_t r = 0; r < pl->n_ranks; r++) {
            cJSON *x = cJSON_CreateNumber(pl->ranks[r]);
            if (!x || !cJSON_AddItemToArray(rk, x)) goto fail;
            cJSON *s = cJSON_CreateObject();
            if (!s || !cJSON_AddItemToArray(sh, s) || !add_num(s, "rank", pl->shards[r].rank) ||
                !add_num(s, "start", (double)pl->shards[r].start) ||
                !add_num(s, "end", (double)pl->shards[r].end))
                goto fail;
        }
        if (!add_num(o, "time", pl->time) || !add_num(o, "mem", pl->mem)) goto fail;
    }
    cJSON *ranks = cJSON_AddArrayToObject(j, "ranks");
    if (!ranks) goto fail;
    for (int32_t r = 0; r < p->world_size && p->ranks; r++) {
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(ranks, o) || !add_num(o, "rank", r) ||
            !add_num(o, "time", p->ranks[r].time) || !add_num(o, "memory", p->ranks[r].mem) ||
            !add_num(o, "tokens", (double)p->ranks[r].tokens))
            goto fail;
    }
    return j;
fail:
    cJSON_Delete(j);
    return NULL;
}

static zg_status get_i32(const cJSON *o, const char *key, int required, int32_t lo, int32_t hi,
                         int32_t *out, const char *ctx, zg_error *err) {
    int64_t v = *out;
    zg_status st = zg_json_get_int(o, key, required, &v, ctx, err);
    if (st) return st;
    if (v < lo || v > hi)
        return zg_error_set(err, ZG_ERR_INVALID, "%s: \"%s\" = %lld is out of range %d..%d", ctx,
                            key, (long long)v, lo, hi);
    *out = (int32_t)v;
    return ZG_OK;
}

static zg_status read_placement(const cJSON *o, zg_plan *p, int64_t i, zg_error *err) {
    char ctx[64];
    snprintf(ctx, sizeof ctx, "plan sequence %lld", (long long)i);
    if (!cJSON_IsObject(o)) return zg_error_set(err, ZG_ERR_INVALID, "%s: not an object", ctx);
    zg_placement *pl = &p->p[i];
    int64_t id = i, tokens = 0;
    zg_status st = zg_json_get_int(o, "id", 1, &id, ctx, err);
    if (!st) st = zg_json_get_int(o, "tokens", 1, &tokens, ctx, err);
    if (st) return st;
    if (tokens < 1)
        return zg_error_set(err, ZG_ERR_INVALID, "%s: \"tokens\" = %lld; must be positive", ctx,
                            (long long)tokens);
    int32_t round = 0;  // absent: 0; at most one round per sequence
    int32_t last_round = p->n - 1 < INT32_MAX ? (int32_t)(p->n - 1) : INT32_MAX;
    if ((st = get_i32(o, "round", 0, 0, last_round, &round, ctx, err))) return st;
    const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(o, "config");
    if (!cJSON_IsObject(cfg))
        return zg_error_set(err, ZG_ERR_INVALID, "%s: missing \"config\" object", ctx);
    zg_config c = {1, 1, 1};
    int32_t w = p->world_size;
    if ((st = get_i32(cfg, "q", 1, 1, w, &c.q, ctx, err)) ||
        (st = get_i32(cfg, "h", 1, 1, w, &c.h, ctx, err)) ||
        (st = get_i32(cfg, "k", 1, 1, w, &c.k, ctx, err)))
        return st;
    if ((int64_t)c.q * c.h * c.k > w)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "%s: config (%d,%d,%d) has degree %lld > world size %d", ctx, c.q,
                            c.h, c.k, (long long)c.q * c.h * c.k, w);
    int32_t d = zg_config_degree(c);
    const cJSON *rk = cJSON_GetObjectItemCaseSensitive(o, "ranks");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(o, "shards");
    if (!cJSON_IsArray(rk) || !cJSON_IsArray(sh))
        return zg_error_set(err, ZG_ERR_INVALID, "%s: needs \"ranks\" and \"shards\" arrays",
                            ctx);
    if (cJSON_GetArraySize(rk) != d || cJSON_GetArraySize(sh) != d)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "%s: config degree %d but %d ranks and %d shards", ctx, d,
                            cJSON_GetArraySize(rk), cJSON_GetArraySize(sh));
    pl->ranks = zg_arena_alloc(&p->arena, (size_t)d * sizeof *pl->ranks);
    pl->shards = zg_arena_alloc(&p->arena, (size_t)d * sizeof *pl->shards);
    if (!pl->ranks || !pl->shards) return zg_error_set(err, ZG_ERR_NOMEM, "out of memory");
    int32_t r = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, rk) {
        double v = cJSON_IsNumber(x) ? x->valuedouble : 0.5;
        if (!cJSON_IsNumber(x) || !(v >= INT32_MIN && v <= INT32_MAX) || v != (double)(int32_t)v)
            return zg_error_set(err, ZG_ERR_INVALID, "%s: ranks[%d] is not a rank number", ctx,
                                r);
        pl->ranks[r++] = (int32_t)v;
    }
    r = 0;
    cJSON_ArrayForEach(x, sh) {
        char sctx[96];
        snprintf(sctx, sizeof sctx, "%s shard %d", ctx, r);
        if (!cJSON_IsObject(x)) return zg_error_set(err, ZG_ERR_INVALID, "%s: not an object", sctx);
        zg_shard s = {0, 0, 0};
        if ((st = get_i32(x, "rank", 1, INT32_MIN, INT32_MAX, &s.rank, sctx, err)) ||
            (st = zg_json_get_int(x, "start", 1, &s.start, sctx, err)) ||
            (st = zg_json_get_int(x, "end", 1, &s.end, sctx, err)))
            return st;
        pl->shards[r++] = s;
    }
    pl->seq = i;
    pl->id = id;
    pl->tokens = tokens;
    pl->round = round;
    pl->config = c;
    pl->n_ranks = d;
    if ((st = zg_json_get_num(o, "time", 0, &pl->time, ctx, err)) ||
        (st = zg_json_get_num(o, "mem", 0, &pl->mem, ctx, err)))
        return st;
    return ZG_OK;
}

zg_status zg_plan_from_json(const cJSON *j, zg_plan *p, zg_error *err) {
    zg_plan_init(p);
    if (!cJSON_IsObject(j)) return zg_error_set(err, ZG_ERR_INVALID, "plan: not a JSON object");
    int64_t version = 1;
    int32_t w = 0;
    zg_status st = zg_json_get_int(j, "version", 1, &version, "plan", err);
    if (st) return st;
    if (version != 1)
        return zg_error_set(err, ZG_ERR_INVALID, "plan: version %lld is not supported (1)",
                            (long long)version);
    if ((st = get_i32(j, "world_size", 1, 1, PLAN_MAX_WORLD, &w, "plan", err))) return st;
    const cJSON *seqs = cJSON_GetObjectItemCaseSensitive(j, "sequences");
    if (!cJSON_IsArray(seqs))
        return zg_error_set(err, ZG_ERR_INVALID, "plan: missing \"sequences\" array");
    int64_t n = cJSON_GetArraySize(seqs);
    if ((st = zg_plan_alloc(p, n, w, err))) return st;
    if ((st = zg_json_get_str(j, "policy", 0, p->policy, sizeof p->policy, "plan", err)) ||
        (st = zg_json_get_str(j, "fallback_from", 0, p->fallback_from, sizeof p->fallback_from,
                              "plan", err)) ||
        (st = zg_json_get_str(j, "summary", 0, p->summary, sizeof p->summary, "plan", err)) ||
        (st = zg_json_get_num(j, "makespan", 0, &p->makespan, "plan", err)) ||
        (st = zg_json_get_num(j, "plan_time_ms", 0, &p->plan_time_ms, "plan", err)) ||
        (st = zg_json_get_num(j, "lower_bound", 0, &p->lower_bound, "plan", err)) ||
        (st = zg_json_get_num(j, "mem_base", 0, &p->mem_base, "plan", err)) ||
        (st = zg_json_get_num(j, "mem_cap", 0, &p->mem_cap, "plan", err)))
        goto fail;
    const cJSON *opt = cJSON_GetObjectItemCaseSensitive(j, "optimal");
    if (opt && !cJSON_IsBool(opt) && !cJSON_IsNumber(opt)) {
        st = zg_error_set(err, ZG_ERR_INVALID, "plan: \"optimal\" must be true or false");
        goto fail;
    }
    p->optimal = opt && (cJSON_IsTrue(opt) || (cJSON_IsNumber(opt) && opt->valuedouble != 0));
    const cJSON *oc = cJSON_GetObjectItemCaseSensitive(j, "over_cap_ranks");
    if (oc && !cJSON_IsArray(oc)) {
        st = zg_error_set(err, ZG_ERR_INVALID,
                          "plan: \"over_cap_ranks\" must be an array of rank numbers");
        goto fail;
    }
    p->over_cap = oc && cJSON_GetArraySize(oc) > 0;  // the ranks themselves follow from memory
    int64_t i = 0;
    const cJSON *o;
    cJSON_ArrayForEach(o, seqs) {
        if ((st = read_placement(o, p, i, err))) goto fail;
        i++;
    }
    const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(j, "ranks");
    if (ranks) {
        if (!cJSON_IsArray(ranks) || cJSON_GetArraySize(ranks) != w) {
            st = zg_error_set(err, ZG_ERR_INVALID,
                              "plan: \"ranks\" must be an array of world_size (%d) entries", w);
            goto fail;
        }
        int32_t r = 0;
        cJSON_ArrayForEach(o, ranks) {
            char ctx[32];
            snprintf(ctx, sizeof ctx, "plan rank %d", r);
            int32_t rr = r;
            if (!cJSON_IsObject(o)) {
                st = zg_error_set(err, ZG_ERR_INVALID, "%s: not an object", ctx);
                goto fail;
            }
            if ((st = get_i32(o, "rank", 0, r, r, &rr, ctx, err)) ||
                (st = zg_json_get_num(o, "time", 0, &p->ranks[r].time, ctx, err)) ||
                (st = zg_json_get_num(o, "memory", 0, &p->ranks[r].mem, ctx, err)) ||
                (st = zg_json_get_int(o, "tokens", 0, &p->ranks[r].tokens, ctx, err)))
                goto fail;
            r++;
        }
    }
    return ZG_OK;
fail:
    zg_plan_free(p);
    return st;
}

// --- streaming writer: one sequence per line; much faster than a cJSON tree for big plans ---

typedef struct sbuf {
    char *p;
    size_t len, cap;
    int oom;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 4096;
        while (nc < b->len + n + 1) nc *= 2;
        char *t = realloc(b->p, nc);
        if (!t) {
            b->oom = 1;
            return;
        }
        b->p = t;
        b->cap = nc;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_lit(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...) {
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    sb_put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

// A double as the shortest of %.15g / %.17g that reads back exactly (integers without a dot).
static void sb_num(sbuf *b, double d) {
    char tmp[64];
    if (!isfinite(d)) {
        sb_put(b, "null", 4);
        return;
    }
    if (d == floor(d) && fabs(d) < 9007199254740992.0) {
        snprintf(tmp, sizeof tmp, "%.0f", d);
    } else {
        snprintf(tmp, sizeof tmp, "%.15g", d);
        if (strtod(tmp, NULL) != d) snprintf(tmp, sizeof tmp, "%.17g", d);
    }
    sb_put(b, tmp, strlen(tmp));
}

static void sb_str(sbuf *b, const char *s) {
    sb_put(b, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            sb_put(b, e, 2);
        } else if (c < 0x20) {
            sb_printf(b, "\\u%04x", c);
        } else {
            sb_put(b, (const char *)&c, 1);
        }
    }
    sb_put(b, "\"", 1);
}

static void sb_key_num(sbuf *b, const char *key, double v) {
    sb_printf(b, "\"%s\":", key);
    sb_num(b, v);
}

zg_status zg_plan_write_file(const char *path, const zg_plan *p, zg_error *err) {
    sbuf b = {NULL, 0, 0, 0};
    sb_printf(&b, "{\"version\":%d,\"policy\":", p->version ? p->version : 1);
    sb_str(&b, p->policy);
    sb_lit(&b, ",\"fallback_from\":");
    sb_str(&b, p->fallback_from);
    sb_lit(&b, ",\"summary\":");
    sb_str(&b, p->summary);
    sb_printf(&b, ",\"world_size\":%d,", p->world_size);
    sb_key_num(&b, "makespan", p->makespan);
    sb_lit(&b, ",");
    sb_key_num(&b, "plan_time_ms", p->plan_time_ms);
    sb_lit(&b, ",");
    sb_key_num(&b, "lower_bound", p->lower_bound);
    sb_printf(&b, ",\"optimal\":%s,", p->optimal ? "true" : "false");
    sb_key_num(&b, "mem_base", p->mem_base);
    sb_lit(&b, ",");
    sb_key_num(&b, "mem_cap", p->mem_cap);
    if (p->over_cap) {  // the ranks over the cap (zg_plan.over_cap)
        int32_t *oc = calloc((size_t)p->world_size, sizeof *oc);
        int32_t k = oc ? zg_plan_over_cap_ranks(p, oc, p->world_size) : 0;
        if (!oc) b.oom = 1;
        sb_lit(&b, ",\"over_cap_ranks\":[");
        for (int32_t i = 0; i < k; i++) sb_printf(&b, "%s%d", i ? "," : "", oc[i]);
        sb_lit(&b, "]");
        free(oc);
    }
    sb_lit(&b, ",\n\"sequences\":[");
    for (int64_t i = 0; i < p->n && !b.oom; i++) {
        const zg_placement *pl = &p->p[i];
        sb_printf(&b, "%s\n{\"id\":%lld,\"tokens\":%lld,", i ? "," : "", (long long)pl->id,
                  (long long)pl->tokens);
        if (pl->round != 0) sb_printf(&b, "\"round\":%d,", pl->round);
        sb_printf(&b, "\"config\":{\"q\":%d,\"h\":%d,\"k\":%d},\"ranks\":[", pl->config.q,
                  pl->config.h, pl->config.k);
        for (int32_t r = 0; r < pl->n_ranks; r++) sb_printf(&b, "%s%d", r ? "," : "", pl->ranks[r]);
        sb_lit(&b, "],\"shards\":[");
        for (int32_t r = 0; r < pl->n_ranks; r++)
            sb_printf(&b, "%s{\"rank\":%d,\"start\":%lld,\"end\":%lld}", r ? "," : "",
                      pl->shards[r].rank, (long long)pl->shards[r].start,
                      (long long)pl->shards[r].end);
        sb_lit(&b, "],");
        sb_key_num(&b, "time", pl->time);
        sb_lit(&b, ",");
        sb_key_num(&b, "mem", pl->mem);
        sb_lit(&b, "}");
    }
    sb_lit(&b, "],\n\"ranks\":[");
    for (int32_t r = 0; r < p->world_size && p->ranks && !b.oom; r++) {
        sb_printf(&b, "%s\n{\"rank\":%d,", r ? "," : "", r);
        sb_key_num(&b, "time", p->ranks[r].time);
        sb_lit(&b, ",");
        sb_key_num(&b, "memory", p->ranks[r].mem);
        sb_printf(&b, ",\"tokens\":%lld}", (long long)p->ranks[r].tokens);
    }
    sb_lit(&b, "]}\n");
    zg_status st;
    if (b.oom) st = zg_error_set(err, ZG_ERR_NOMEM, "out of memory writing plan '%s'", path);
    else st = zg_file_write_atomic(path, b.p, b.len, err);
    free(b.p);
    return st;
}

zg_status zg_plan_read_file(const char *path, zg_plan *p, zg_error *err) {
    cJSON *j = NULL;
    zg_plan_init(p);
    zg_status st = zg_json_read_file(path, &j, err);
    if (st) return st;
    st = zg_plan_from_json(j, p, err);
    cJSON_Delete(j);
    if (st) zg_error_prefix(err, "%s: ", path);
    return st;
}
