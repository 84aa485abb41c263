// problem.c — the planner's instance: every sequence's options, grouped into solver-equivalent
// classes (Exact Compact Formulation), and its JSON export for external solvers.
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"
#include "plan/plan.h"

// One distinct "pricing key" (sequences the pricer cannot tell apart), then merged by options.
typedef struct proto {
    int64_t first;     // smallest batch index in the proto (after merging: of the group)
    int64_t *members;  // ascending
    int64_t count;
    const zg_option *opts;
    int32_t n_opts;
    int32_t own;       // 1: opts is ours to free (0: it belongs to the option cache)
    double whole_time, whole_mem;
} proto;

static int cmp_i64(int64_t a, int64_t b) { return (a > b) - (a < b); }

// Orders batch indices by the fields the pricer may look at, then by index (stable).
static int cmp_price_key(const void *pa, const void *pb, void *ctx) {
    const zg_seq *seqs = ctx;
    const zg_seq *a = &seqs[*(const int64_t *)pa], *b = &seqs[*(const int64_t *)pb];
    int c;
    if ((c = cmp_i64(a->tokens, b->tokens))) return c;
    if ((c = cmp_i64(a->kind, b->kind))) return c;
    if ((c = cmp_i64(a->frames, b->frames))) return c;
    if ((c = cmp_i64(a->height, b->height))) return c;
    if ((c = cmp_i64(a->width, b->width))) return c;
    if ((c = cmp_i64(a->text_tokens, b->text_tokens))) return c;
    return strncmp(a->bucket, b->bucket, ZG_BUCKET_NAME_MAX);
}

// order[0..n) = the batch indices stably sorted by cmp_price_key (equal keys keep ascending
// index order), computed by hashing the keys into classes, sorting only the distinct keys and
// placing every index after its class's predecessors: O(n + k log k) instead of O(n log n)
// comparisons, the same array as zg_sort_stable would give.
typedef struct key_ctx {
    const zg_seq *seqs;
    const int64_t *rep;  // first batch index of each class
} key_ctx;

static int same_key(int64_t cls, const void *key, const void *ctx) {
    const key_ctx *k = ctx;
    return zg_seq_price_key_eq(&k->seqs[k->rep[cls]], key);
}

static zg_status price_key_order(const zg_batch *b, int64_t *order, zg_error *err) {
    int64_t n = b->n;
    int64_t *cls = zg_calloc((size_t)n, sizeof *cls, err);      // class of each index
    int64_t *rep = zg_calloc((size_t)n, sizeof *rep, err);      // first index of a class
    int64_t *cnt = zg_calloc((size_t)n + 1, sizeof *cnt, err);  // members of a class
    int64_t *pos = zg_calloc((size_t)n, sizeof *pos, err);      // class -> sorted position
    zg_status st = (!cls || !rep || !cnt || !pos) ? ZG_ERR_NOMEM : ZG_OK;
    zg_hmap classes;  // price key -> class
    zg_hmap_init(&classes);
    key_ctx kc = {b->seqs, rep};
    for (int64_t i = 0; !st && i < n; i++) {
        uint64_t h = zg_seq_price_key_hash(&b->seqs[i]);
        int64_t c = zg_hmap_find(&classes, h, same_key, &b->seqs[i], &kc);
        if (c < 0) {
            if ((c = zg_hmap_add(&classes, h, err)) < 0) {
                st = ZG_ERR_NOMEM;
                break;
            }
            rep[c] = i;
        }
        cls[i] = c;
        cnt[c]++;
    }
    int64_t k = classes.n;
    zg_hmap_free(&classes);
    // the distinct keys in key order (their first indices, all keys different: no ties)
    int64_t *sorted = order;  // the first k entries, rewritten below
    if (!st) {
        memcpy(sorted, rep, sizeof *rep * (size_t)k);
        st = zg_sort_stable(sorted, (size_t)k, sizeof *sorted, cmp_price_key, b->seqs, err);
    }
    if (!st) {
        // class of each sorted representative: the representative is its class's first index
        int64_t at = 0;
        for (int64_t q = 0; q < k; q++) {
            int64_t c = cls[sorted[q]];
            pos[c] = at;
            at += cnt[c];
        }
        for (int64_t i = 0; i < n; i++) order[pos[cls[i]]++] = i;
    }
    free(cls), free(rep), free(cnt), free(pos);
    return st;
}

// Orders protos by the group key: tokens, bucket, whole price, options (bitwise), then first.
static int cmp_group_key(const void *pa, const void *pb, void *ctx) {
    const zg_seq *seqs = ctx;
    const proto *a = pa, *b = pb;
    const zg_seq *sa = &seqs[a->first], *sb = &seqs[b->first];
    int c;
    if ((c = cmp_i64(sa->tokens, sb->tokens))) return c;
    if ((c = strncmp(sa->bucket, sb->bucket, ZG_BUCKET_NAME_MAX))) return c;
    if ((c = memcmp(&a->whole_time, &b->whole_time, sizeof(double)))) return c;
    if ((c = memcmp(&a->whole_mem, &b->whole_mem, sizeof(double)))) return c;
    if ((c = cmp_i64(a->n_opts, b->n_opts))) return c;
    if (a->n_opts && (c = memcmp(a->opts, b->opts, (size_t)a->n_opts * sizeof(zg_option))))
        return c;
    return cmp_i64(a->first, b->first);
}

static int same_group(const proto *a, const proto *b, const zg_seq *seqs) {
    const zg_seq *sa = &seqs[a->first], *sb = &seqs[b->first];
    return sa->tokens == sb->tokens && !strncmp(sa->bucket, sb->bucket, ZG_BUCKET_NAME_MAX) &&
           !memcmp(&a->whole_time, &b->whole_time, sizeof(double)) &&
           !memcmp(&a->whole_mem, &b->whole_mem, sizeof(double)) && a->n_opts == b->n_opts &&
           (!a->n_opts || !memcmp(a->opts, b->opts, (size_t)a->n_opts * sizeof(zg_option)));
}

// Final group order: whole_time descending, then tokens descending, then first member.
static int cmp_group_order(const void *pa, const void *pb, void *ctx) {
    (void)ctx;
    const zg_group *a = pa, *b = pb;
    if (a->whole_time != b->whole_time) return a->whole_time > b->whole_time ? -1 : 1;
    if (a->tokens != b->tokens) return a->tokens > b->tokens ? -1 : 1;
    return cmp_i64(a->members[0], b->members[0]);
}

static int cmp_members(const void *pa, const void *pb) {
    return cmp_i64(*(const int64_t *)pa, *(const int64_t *)pb);
}

zg_status zg_batch_price_classes(const zg_batch *b, int32_t *class_of, int32_t *n_classes,
                                 zg_error *err) {
    *n_classes = 0;
    if (b->n == 0) return ZG_OK;
    if (b->n > INT32_MAX)
        return zg_error_set(err, ZG_ERR_INVALID, "batch of %lld sequences is too large",
                            (long long)b->n);
    int64_t *order = zg_calloc((size_t)b->n, sizeof *order, err);
    int32_t *first_class = zg_calloc((size_t)b->n, sizeof *first_class, err);
    zg_status st = (!order || !first_class) ? ZG_ERR_NOMEM : ZG_OK;
    if (!st) {
        for (int64_t i = 0; i < b->n; i++) order[i] = i;
        st = zg_sort_stable(order, (size_t)b->n, sizeof *order, cmp_price_key, b->seqs, err);
    }
    if (!st) {
        // run r of equal keys -> provisional id r; renumber by first appearance
        int32_t runs = 0;
        for (int64_t k = 0; k < b->n; k++) {
            if (k > 0 && cmp_price_key(&order[k - 1], &order[k], b->seqs) != 0) runs++;
            class_of[order[k]] = runs;
        }
        for (int32_t r = 0; r <= runs; r++) first_class[r] = -1;
        int32_t next = 0;
        for (int64_t i = 0; i < b->n; i++) {
            int32_t r = class_of[i];
            if (first_class[r] < 0) first_class[r] = next++;
            class_of[i] = first_class[r];
        }
        *n_classes = next;
    }
    free(order);
    free(first_class);
    return st;
}

void zg_problem_free(zg_problem *pr) {
    if (!pr) return;
    zg_arena_free(&pr->arena);
    memset(pr, 0, sizeof *pr);
}

zg_status zg_problem_build(const zg_plan_ctx *ctx, const zg_batch *b, zg_problem *pr,
                           zg_error *err) {
    return zg_problem_build_cached(ctx, b, NULL, pr, err);
}

// The options and whole price of s: enumerated and priced, or from the cache (same values).
static zg_status proto_price(const zg_plan_ctx *ctx, const zg_seq *s, zg_option_cache *cache,
                             proto *p, zg_error *err) {
    zg_price whole;
    zg_status st;
    if (cache) {
        st = zg_option_cache_options(cache, ctx, s, &p->opts, &p->n_opts, &whole, err);
    } else {
        zg_option *o = NULL;
        st = zg_options_enumerate(ctx, s, &o, &p->n_opts, err);
        p->opts = o;
        p->own = 1;
        int32_t r0 = 0;
        if (!st) st = zg_pricer_price(ctx->pricer, s, (zg_config){1, 1, 1}, &r0, 1, &whole, err);
    }
    if (st) return st;
    p->whole_time = whole.time;
    p->whole_mem = whole.mem;
    return ZG_OK;
}

zg_status zg_problem_build_cached(const zg_plan_ctx *ctx, const zg_batch *b, zg_option_cache *cache,
                                  zg_problem *pr, zg_error *err) {
    memset(pr, 0, sizeof *pr);
    zg_arena_init(&pr->arena, 1 << 16);
    if (!ctx || !ctx->model || !ctx->cluster || !ctx->pricer || !b)
        return zg_error_set(err, ZG_ERR_INVALID, "problem: needs a model, cluster, pricer and "
                                                 "batch");
    pr->world_size = ctx->cluster->world_size;
    pr->mem_cap = ctx->pricer->mem_cap;
    pr->mem_base = ctx->pricer->mem_base;
    pr->mem_room = zg_pricer_mem_room(ctx->pricer);
    pr->n_seqs = b->n;
    for (int64_t i = 0; i < b->n; i++)
        if (b->seqs[i].tokens <= 0)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "sequence %lld has %lld tokens; tokens must be positive",
                                (long long)b->seqs[i].id, (long long)b->seqs[i].tokens);
    if (b->n == 0) return ZG_OK;

    zg_status st = cache ? zg_option_cache_begin(cache, ctx, err) : ZG_OK;
    if (st) return st;
    int64_t n = b->n, n_protos = 0, bad = -1;
    int64_t *order = zg_calloc((size_t)n, sizeof *order, err);
    proto *protos = zg_calloc((size_t)n, sizeof *protos, err);
    if (!order || !protos) {
        st = ZG_ERR_NOMEM;
        goto done;
    }
    st = price_key_order(b, order, err);
    if (st) goto done;

    // price each distinct key once
    for (int64_t lo = 0; lo < n;) {
        int64_t hi = lo + 1;
        while (hi < n && cmp_price_key(&order[lo], &order[hi], b->seqs) == 0) hi++;
        proto *p = &protos[n_protos++];
        p->count = hi - lo;
        p->members = zg_calloc((size_t)p->count, sizeof *p->members, err);
        if (!p->members) {
            st = ZG_ERR_NOMEM;
            goto done;
        }
        memcpy(p->members, order + lo, (size_t)p->count * sizeof *order);  // ascending (stable)
        p->first = p->members[0];
        const zg_seq *s = &b->seqs[p->first];
        st = proto_price(ctx, s, cache, p, err);
        if (st) goto done;
        if (p->n_opts == 0 && (bad < 0 || p->first < bad)) bad = p->first;
        lo = hi;
    }
    if (bad >= 0) {
        st = zg_options_infeasible(ctx, &b->seqs[bad], NULL, err);
        goto done;
    }

    // merge protos with identical group keys
    st = zg_sort_stable(protos, (size_t)n_protos, sizeof *protos, cmp_group_key, b->seqs, err);
    if (st) goto done;
    int64_t n_groups = 0;
    for (int64_t i = 0; i < n_protos; i++)
        if (i == 0 || !same_group(&protos[i - 1], &protos[i], b->seqs)) n_groups++;
    pr->groups = zg_arena_alloc(&pr->arena, (size_t)n_groups * sizeof *pr->groups);
    pr->group_of = zg_arena_alloc(&pr->arena, (size_t)n * sizeof *pr->group_of);
    if (!pr->groups || !pr->group_of) {
        st = zg_error_set(err, ZG_ERR_NOMEM, "out of memory building the problem");
        goto done;
    }
    for (int64_t i = 0, g = -1; i < n_protos; i++) {
        proto *p = &protos[i];
        zg_group *G;
        if (i == 0 || !same_group(&protos[i - 1], p, b->seqs)) {
            int64_t cnt = 0;
            for (int64_t j = i; j < n_protos && (j == i || same_group(&protos[i], &protos[j],
                                                                       b->seqs));
                 j++)
                cnt += protos[j].count;
            G = &pr->groups[++g];
            const zg_seq *s = &b->seqs[p->first];
            G->tokens = s->tokens;
            memcpy(G->bucket, s->bucket, ZG_BUCKET_NAME_MAX);
            G->bucket[ZG_BUCKET_NAME_MAX - 1] = '\0';
            G->n_opts = p->n_opts;
            G->opts = zg_arena_dup(&pr->arena, p->opts, (size_t)p->n_opts * sizeof *G->opts);
            G->members = zg_arena_alloc(&pr->arena, (size_t)cnt * sizeof *G->members);
            if ((!G->opts && p->n_opts) || !G->members) {
                st = zg_error_set(err, ZG_ERR_NOMEM, "out of memory building the problem");
                goto done;
            }
            G->whole_time = p->whole_time;
            G->whole_mem = p->whole_mem;
        } else {
            G = &pr->groups[g];
        }
        memcpy(G->members + G->count, p->members, (size_t)p->count * sizeof *p->members);
        G->count += p->count;
    }
    pr->n_groups = (int32_t)n_groups;
    for (int32_t g = 0; g < pr->n_groups; g++) {  // (a group of one proto is sorted already)
        const int64_t *mb = pr->groups[g].members;
        int64_t m = 1;
        while (m < pr->groups[g].count && mb[m - 1] < mb[m]) m++;
        if (m < pr->groups[g].count)
            qsort(pr->groups[g].members, (size_t)pr->groups[g].count, sizeof(int64_t),
                  cmp_members);
    }
    st = zg_sort_stable(pr->groups, (size_t)pr->n_groups, sizeof *pr->groups, cmp_group_order,
                        NULL, err);
    if (st) goto done;
    for (int32_t g = 0; g < pr->n_groups; g++)
        for (int64_t m = 0; m < pr->groups[g].count; m++)
            pr->group_of[pr->groups[g].members[m]] = g;

done:
    if (protos)
        for (int64_t i = 0; i < n_protos; i++) {
            free(protos[i].members);
            if (protos[i].own) free((void *)protos[i].opts);
        }
    free(protos);
    free(order);
    if (st) zg_problem_free(pr);
    return st;
}

cJSON *zg_problem_to_json(const zg_problem *pr) {
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    cJSON_AddNumberToObject(j, "version", 1);
    cJSON_AddNumberToObject(j, "world_size", pr->world_size);
    cJSON_AddNumberToObject(j, "mem_cap", pr->mem_cap);
    cJSON_AddNumberToObject(j, "mem_base", pr->mem_base);
    cJSON_AddNumberToObject(j, "n_seqs", (double)pr->n_seqs);
    cJSON *groups = cJSON_AddArrayToObject(j, "groups");
    if (!groups) goto fail;
    for (int32_t g = 0; g < pr->n_groups; g++) {
        const zg_group *G = &pr->groups[g];
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(groups, o)) goto fail;
        cJSON_AddNumberToObject(o, "count", (double)G->count);
        cJSON *mem = cJSON_AddArrayToObject(o, "members");
        if (!mem) goto fail;
        for (int64_t m = 0; m < G->count; m++)
            cJSON_AddItemToArray(mem, cJSON_CreateNumber((double)G->members[m]));
        cJSON_AddNumberToObject(o, "tokens", (double)G->tokens);
        cJSON_AddStringToObject(o, "bucket", G->bucket);
        cJSON_AddNumberToObject(o, "whole_time", G->whole_time);
        cJSON_AddNumberToObject(o, "whole_mem", G->whole_mem);
        cJSON *opts = cJSON_AddArrayToObject(o, "options");
        if (!opts) goto fail;
        for (int32_t k = 0; k < G->n_opts; k++) {
            const zg_option *op = &G->opts[k];
            cJSON *oj = cJSON_CreateObject();
            if (!oj || !cJSON_AddItemToArray(opts, oj)) goto fail;
            cJSON_AddNumberToObject(oj, "q", op->config.q);
            cJSON_AddNumberToObject(oj, "h", op->config.h);
            cJSON_AddNumberToObject(oj, "k", op->config.k);
            cJSON *rk = cJSON_AddArrayToObject(oj, "ranks");
            if (!rk) goto fail;
            int32_t d = zg_option_degree(op);
            for (int32_t r = 0; r < d; r++)
                cJSON_AddItemToArray(rk, cJSON_CreateNumber(op->start + r));
            cJSON_AddNumberToObject(oj, "time", op->time);
            cJSON_AddNumberToObject(oj, "mem", op->mem);
        }
    }
    return j;
fail:
    cJSON_Delete(j);
    return NULL;
}
