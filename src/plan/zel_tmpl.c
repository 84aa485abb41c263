// zel_tmpl.c — compact options for large worlds: per price class, every legal config priced
// once per (degree, start offset within a node), Pareto-pruned on (time, memory); legal starts
// are kept once per degree for the whole cluster (zel_fast.h).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan/zel_fast.h"

typedef struct tent {
    int32_t di, oi;
    zel_tpl t;
} tent;

static int cmp_tent(const void *pa, const void *pb) {
    const tent *a = pa, *b = pb;
    if (a->di != b->di) return a->di < b->di ? -1 : 1;
    if (a->oi != b->oi) return a->oi < b->oi ? -1 : 1;
    if (a->t.time != b->t.time) return a->t.time < b->t.time ? -1 : 1;
    if (a->t.mem != b->t.mem) return a->t.mem < b->t.mem ? -1 : 1;
    if (a->t.cfg.q != b->t.cfg.q) return a->t.cfg.q < b->t.cfg.q ? -1 : 1;
    if (a->t.cfg.k != b->t.cfg.k) return a->t.cfg.k < b->t.cfg.k ? -1 : 1;
    return (a->t.cfg.h > b->t.cfg.h) - (a->t.cfg.h < b->t.cfg.h);
}

static int cmp_class(const void *pa, const void *pb) {
    const zel_tclass *a = pa, *b = pb;
    if (a->whole_time != b->whole_time) return a->whole_time > b->whole_time ? -1 : 1;
    return (a->rep > b->rep) - (a->rep < b->rep);
}

void zel_tset_free(zel_tset *ts) {
    zg_arena_free(&ts->arena);
    memset(ts, 0, sizeof *ts);
}

int32_t zel_tset_off(const zel_tset *ts, int32_t di, int32_t start) {
    const zel_tdeg *D = &ts->degs[di];
    int32_t o = start % ts->rpn;
    for (int32_t i = 0; i < D->n_offs; i++)
        if (D->offs[i] == o) return i;
    return -1;
}

const zel_tpl *zel_tset_fit(const zel_tset *ts, const zel_tclass *c, int32_t di, int32_t oi,
                            double room) {
    if (!c->front[di]) return NULL;
    int32_t lo = c->front[di][oi], hi = c->front[di][oi + 1];
    // memory strictly descends along the front: the first entry with mem <= room
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (c->tpl[mid].mem <= room) hi = mid;
        else lo = mid + 1;
    }
    return lo < c->front[di][oi + 1] ? &c->tpl[lo] : NULL;
}

// Degrees of cfgs and their legal starts / offsets.
static zg_status build_degrees(const zg_plan_ctx *ctx, zel_tset *ts, const zg_config *cfgs,
                               int32_t nc, zg_error *err) {
    int32_t N = ts->N;
    int32_t *starts = zg_calloc((size_t)N, sizeof(int32_t), err);
    char *seen = zg_calloc((size_t)ts->rpn, 1, err);
    ts->degs = zg_arena_alloc(&ts->arena, sizeof(zel_tdeg) * (size_t)(nc > 0 ? nc : 1));
    if (!starts || !seen || !ts->degs) {
        free(starts), free(seen);
        return ZG_ERR_NOMEM;
    }
    for (int32_t ci = 0; ci < nc; ci++) {
        int32_t d = zg_config_degree(cfgs[ci]);
        if (ts->n_degs && ts->degs[ts->n_degs - 1].d == d) continue;
        zel_tdeg *D = &ts->degs[ts->n_degs++];
        D->d = d;
        D->n_starts = zg_rankset_starts(ctx->cluster, ctx->opts.family, d, starts);
        D->starts = zg_arena_alloc(&ts->arena, sizeof(int32_t) * (size_t)(D->n_starts + 1));
        D->offs = zg_arena_alloc(&ts->arena, sizeof(int32_t) * (size_t)(ts->rpn + 1));
        D->off_start = zg_arena_alloc(&ts->arena, sizeof(int32_t) * (size_t)(ts->rpn + 1));
        if (!D->starts || !D->offs || !D->off_start) {
            free(starts), free(seen);
            return zg_error_set(err, ZG_ERR_NOMEM, "zellige: out of memory (templates)");
        }
        memcpy(D->starts, starts, sizeof(int32_t) * (size_t)D->n_starts);
        memset(seen, 0, (size_t)ts->rpn);
        for (int32_t i = 0; i < D->n_starts; i++) seen[starts[i] % ts->rpn] = 1;
        for (int32_t o = 0; o < ts->rpn; o++)
            if (seen[o]) D->offs[D->n_offs++] = o;
        for (int32_t oi = 0; oi < D->n_offs; oi++) {
            D->off_start[oi] = -1;
            for (int32_t i = 0; i < D->n_starts && D->off_start[oi] < 0; i++)
                if (D->starts[i] % ts->rpn == D->offs[oi]) D->off_start[oi] = D->starts[i];
        }
    }
    free(starts), free(seen);
    return ZG_OK;
}

static int32_t deg_index(const zel_tset *ts, int32_t d) {
    for (int32_t i = 0; i < ts->n_degs; i++)
        if (ts->degs[i].d == d) return i;
    return -1;
}

// Prices class c's templates (configs legal for its tokens x offsets of their degree).
// cfg_di[ci]: degree index of config ci; iota[r] = r (a block [st0, st0 + d) is iota + st0).
static zg_status build_class(const zg_plan_ctx *ctx, const zg_seq *s, zel_tset *ts,
                             zel_tclass *c, const zg_config *cfgs, const int32_t *cfg_di,
                             int32_t nc, tent **buf, int64_t *bufcap, const int32_t *iota,
                             zg_error *err) {
    int64_t n = 0;
    for (int32_t ci = 0; ci < nc; ci++) {
        zg_config cf = cfgs[ci];
        int32_t d = zg_config_degree(cf);
        if (zg_config_check(ctx->model, ts->N, cf, s->tokens, NULL) != ZG_OK) continue;
        int32_t di = cfg_di[ci];
        const zel_tdeg *D = &ts->degs[di];
        for (int32_t oi = 0; oi < D->n_offs; oi++) {
            zg_price p;
            zg_status st =
                zg_pricer_price(ctx->pricer, s, cf, iota + D->off_start[oi], d, &p, err);
            if (st) return st;
            c->n_priced++;
            if (!isfinite(p.time) || !isfinite(p.mem) || p.time < 0 || p.mem < 0)
                return zg_error_set(err, ZG_ERR_INTERNAL,
                                    "pricer returned time %g s, memory %g B for sequence %lld; "
                                    "prices must be finite and non-negative",
                                    p.time, p.mem, (long long)s->id);
            if (p.mem > ts->mem_cap) continue;
            if (n == *bufcap) {
                int64_t ncap = *bufcap ? 2 * *bufcap : 1024;
                tent *t = zg_realloc_array(*buf, (size_t)ncap, sizeof(tent), err);
                if (!t) return ZG_ERR_NOMEM;
                *buf = t, *bufcap = ncap;
            }
            (*buf)[n++] = (tent){di, oi, {cf, p.time, p.mem}};
        }
    }
    if (n > 1) qsort(*buf, (size_t)n, sizeof(tent), cmp_tent);  // *buf is NULL when n == 0
    c->tpl = zg_arena_alloc(&ts->arena, sizeof(zel_tpl) * (size_t)(n > 0 ? n : 1));
    c->front = zg_arena_alloc(&ts->arena, sizeof(int32_t *) * (size_t)ts->n_degs);
    if (!c->tpl || !c->front) return zg_error_set(err, ZG_ERR_NOMEM, "zellige: out of memory");
    memset(c->front, 0, sizeof(int32_t *) * (size_t)ts->n_degs);
    c->min_time = c->min_area = INFINITY;
    for (int64_t i = 0; i < n;) {
        int32_t di = (*buf)[i].di;
        const zel_tdeg *D = &ts->degs[di];
        int32_t *f = zg_arena_alloc(&ts->arena, sizeof(int32_t) * (size_t)(D->n_offs + 1));
        if (!f) return zg_error_set(err, ZG_ERR_NOMEM, "zellige: out of memory");
        c->front[di] = f;
        for (int32_t oi = 0; oi < D->n_offs; oi++) {
            f[oi] = c->n_tpl;
            double last = INFINITY;
            for (; i < n && (*buf)[i].di == di && (*buf)[i].oi == oi; i++) {
                const zel_tpl *t = &(*buf)[i].t;
                if (t->mem >= last) continue;  // dominated: slower and no less memory
                last = t->mem;
                c->tpl[c->n_tpl++] = *t;
                if (t->time < c->min_time) c->min_time = t->time;
                if (t->time * D->d < c->min_area) c->min_area = t->time * D->d;
                if (zg_config_is_whole(t->cfg)) c->has_whole = 1;
            }
        }
        f[D->n_offs] = c->n_tpl;
    }
    return ZG_OK;
}

zg_status zel_tset_build(const zg_plan_ctx *ctx, const zg_batch *b, zel_tset *ts,
                         zg_error *err) {
    memset(ts, 0, sizeof *ts);
    zg_arena_init(&ts->arena, 1 << 16);
    const zg_cluster *cl = ctx->cluster;
    ts->N = cl->world_size;
    ts->rpn = cl->ranks_per_node > 0 && cl->ranks_per_node <= ts->N ? cl->ranks_per_node : ts->N;
    ts->mem_cap = ctx->pricer->mem_cap;
    ts->mem_base = ctx->pricer->mem_base;
    ts->n_seqs = b->n;
    zg_config *cfgs = NULL;
    int32_t nc = 0;
    tent *buf = NULL;
    int64_t bufcap = 0;
    int32_t *ranks = NULL, *cnt = NULL;
    zg_status st = zg_config_enumerate(ctx->model, zg_plan_ctx_max_degree(ctx), &cfgs, &nc, err);
    if (!st) st = build_degrees(ctx, ts, cfgs, nc, err);
    if (st) goto done;
    ts->class_of = zg_arena_alloc(&ts->arena, sizeof(int32_t) * (size_t)(b->n + 1));
    ranks = zg_calloc((size_t)ts->N + (size_t)nc, sizeof(int32_t), err);
    if (!ts->class_of || !ranks) {
        st = ZG_ERR_NOMEM;
        goto done;
    }
    int32_t *cfg_di = ranks + ts->N;  // ranks = iota
    for (int32_t r = 0; r < ts->N; r++) ranks[r] = r;
    for (int32_t ci = 0; ci < nc; ci++) cfg_di[ci] = deg_index(ts, zg_config_degree(cfgs[ci]));
    if ((st = zg_batch_price_classes(b, ts->class_of, &ts->n_classes, err))) goto done;
    ts->cls = zg_arena_alloc(&ts->arena, sizeof(zel_tclass) * (size_t)(ts->n_classes + 1));
    cnt = zg_calloc((size_t)ts->n_classes + 1, sizeof(int32_t), err);
    if (!ts->cls || !cnt) {
        st = ZG_ERR_NOMEM;
        goto done;
    }
    memset(ts->cls, 0, sizeof(zel_tclass) * (size_t)ts->n_classes);
    for (int64_t i = 0; i < b->n; i++) ts->cls[ts->class_of[i]].count++;
    for (int32_t k = 0; k < ts->n_classes; k++) {
        ts->cls[k].members = zg_arena_alloc(&ts->arena, sizeof(int64_t) * (size_t)ts->cls[k].count);
        ts->cls[k].rep = -1;
        if (!ts->cls[k].members) {
            st = ZG_ERR_NOMEM;
            goto done;
        }
    }
    for (int64_t i = 0; i < b->n; i++) {
        zel_tclass *c = &ts->cls[ts->class_of[i]];
        if (c->rep < 0) c->rep = i;
        c->members[cnt[ts->class_of[i]]++] = i;
    }
    for (int32_t k = 0; k < ts->n_classes; k++) {
        zel_tclass *c = &ts->cls[k];
        const zg_seq *s = &b->seqs[c->rep];
        if (s->tokens <= 0) {
            st = zg_error_set(err, ZG_ERR_INVALID,
                              "sequence %lld has %lld tokens; tokens must be positive",
                              (long long)s->id, (long long)s->tokens);
            goto done;
        }
        zg_price w;
        int32_t r0 = 0;
        if ((st = zg_pricer_price(ctx->pricer, s, (zg_config){1, 1, 1}, &r0, 1, &w, err)))
            goto done;
        c->whole_time = w.time, c->whole_mem = w.mem;
        st = build_class(ctx, s, ts, c, cfgs, ranks + ts->N, nc, &buf, &bufcap, ranks, err);
        if (st) goto done;
        ts->n_priced += c->n_priced;
    }
    // the first sequence (batch order) of a class without options names the failure
    int64_t bad = -1;
    for (int32_t k = 0; k < ts->n_classes; k++)
        if (ts->cls[k].n_tpl == 0 && (bad < 0 || ts->cls[k].rep < bad)) bad = ts->cls[k].rep;
    if (bad >= 0) {
        st = zg_options_infeasible(ctx, &b->seqs[bad], NULL, err);
        goto done;
    }
    qsort(ts->cls, (size_t)ts->n_classes, sizeof(zel_tclass), cmp_class);
    for (int32_t k = 0; k < ts->n_classes; k++)
        for (int64_t m = 0; m < ts->cls[k].count; m++) ts->class_of[ts->cls[k].members[m]] = k;
done:
    free(cfgs), free(buf), free(ranks), free(cnt);
    if (st) zel_tset_free(ts);
    return st;
}
