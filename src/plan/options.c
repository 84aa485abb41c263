// options.c — placement options: legal configurations x rank sets of a family, priced.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"

int32_t zg_rankset_starts(const zg_cluster *c, zg_rankset_family f, int32_t degree,
                          int32_t *starts) {
    int32_t w = c->world_size;
    int32_t rpn = c->ranks_per_node > 0 ? c->ranks_per_node : w;
    if (degree < 1 || degree > w) return 0;
    int32_t n = 0;
    for (int32_t s = 0; s + degree <= w; s++) {
        int ok;
        switch (f) {
        case ZG_RANKSETS_SLIDING: ok = 1; break;
        case ZG_RANKSETS_ALIGNED: ok = s % degree == 0; break;
        default:  // NODE
            ok = s % degree == 0 ||
                 (degree < rpn ? s / rpn == (s + degree - 1) / rpn : s % rpn == 0);
            break;
        }
        if (ok) starts[n++] = s;
    }
    return n;
}

int32_t zg_plan_ctx_max_degree(const zg_plan_ctx *ctx) {
    int32_t w = ctx->cluster->world_size;
    int32_t md = ctx->opts.max_degree;
    return md > 0 && md < w ? md : w;
}

static zg_status check_ctx(const zg_plan_ctx *ctx, const zg_seq *s, zg_error *err) {
    if (!ctx || !ctx->model || !ctx->cluster || !ctx->pricer)
        return zg_error_set(err, ZG_ERR_INVALID, "planner context needs a model, a cluster and "
                                                 "a pricer");
    if (ctx->cluster->world_size < 1)
        return zg_error_set(err, ZG_ERR_INVALID, "cluster '%s' has %d ranks; need at least 1",
                            ctx->cluster->name, ctx->cluster->world_size);
    if (s && s->tokens <= 0)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "sequence %lld has %lld tokens; tokens must be positive",
                            (long long)s->id, (long long)s->tokens);
    return ZG_OK;
}

zg_status zg_options_enumerate_all(const zg_plan_ctx *ctx, const zg_seq *s, int keep_over_cap,
                                   zg_option **out, int32_t *n, zg_error *err) {
    *out = NULL;
    *n = 0;
    zg_status st = check_ctx(ctx, s, err);
    if (st) return st;
    const zg_cluster *cl = ctx->cluster;
    const zg_pricer *pr = ctx->pricer;
    int32_t w = cl->world_size;
    zg_config *cfgs = NULL;
    int32_t nc = 0;
    st = zg_config_enumerate(ctx->model, zg_plan_ctx_max_degree(ctx), &cfgs, &nc, err);
    if (st) return st;
    int32_t *starts = zg_calloc((size_t)w, sizeof *starts, err);
    int32_t *ranks = zg_calloc((size_t)w, sizeof *ranks, err);
    // price memo per offset (start % ranks_per_node) for the current config: memo_gen[o] == ci+1
    int32_t rpn = cl->ranks_per_node > 0 && cl->ranks_per_node <= w ? cl->ranks_per_node : w;
    int reuse = !ctx->opts.exact_rank_prices;
    zg_price *memo = zg_calloc((size_t)rpn, sizeof *memo, err);
    int32_t *memo_gen = zg_calloc((size_t)rpn, sizeof *memo_gen, err);
    zg_option *opts = NULL;
    int32_t cap = 0, cnt = 0, ns = 0, ns_degree = -1;
    if (!starts || !ranks || !memo || !memo_gen) {
        st = ZG_ERR_NOMEM;
        goto done;
    }
    for (int32_t ci = 0; ci < nc; ci++) {
        zg_config c = cfgs[ci];
        int32_t d = zg_config_degree(c);
        if (zg_config_check(ctx->model, w, c, s->tokens, NULL) != ZG_OK) continue;
        if (d != ns_degree) {
            ns = zg_rankset_starts(cl, ctx->opts.family, d, starts);
            ns_degree = d;
        }
        for (int32_t si = 0; si < ns; si++) {
            int32_t off = starts[si] % rpn;
            zg_price p;
            if (reuse && memo_gen[off] == ci + 1) {
                p = memo[off];
            } else {
                for (int32_t i = 0; i < d; i++) ranks[i] = starts[si] + i;
                st = zg_pricer_price(pr, s, c, ranks, d, &p, err);
                if (st) goto done;
                memo[off] = p;
                memo_gen[off] = ci + 1;
            }
            if (!isfinite(p.time) || !isfinite(p.mem) || p.time < 0 || p.mem < 0) {
                char cb[32];
                st = zg_error_set(err, ZG_ERR_INTERNAL,
                                  "pricer '%s' returned time %g s, memory %g B for sequence "
                                  "%lld under %s; prices must be finite and non-negative",
                                  pr->kind ? pr->kind : "?", p.time, p.mem, (long long)s->id,
                                  zg_config_name(c, cb, sizeof cb));
                goto done;
            }
            if (!keep_over_cap && p.mem > zg_pricer_mem_room(pr)) continue;
            if (cnt == cap) {
                int32_t ncap = cap ? 2 * cap : 64;
                zg_option *t = zg_realloc_array(opts, (size_t)ncap, sizeof *opts, err);
                if (!t) {
                    st = ZG_ERR_NOMEM;
                    goto done;
                }
                opts = t;
                cap = ncap;
            }
            opts[cnt++] = (zg_option){c, starts[si], p.time, p.mem};
        }
    }
done:
    free(cfgs);
    free(starts);
    free(ranks);
    free(memo);
    free(memo_gen);
    if (st) {
        free(opts);
        return st;
    }
    *out = opts;
    *n = cnt;
    return ZG_OK;
}

zg_status zg_options_enumerate(const zg_plan_ctx *ctx, const zg_seq *s, zg_option **out,
                               int32_t *n, zg_error *err) {
    return zg_options_enumerate_all(ctx, s, 0, out, n, err);
}

zg_status zg_options_infeasible(const zg_plan_ctx *ctx, const zg_seq *s, const char *who,
                                zg_error *err) {
    zg_option *opts = NULL;
    int32_t n = 0;
    zg_status st = zg_options_enumerate_all(ctx, s, 1, &opts, &n, err);
    if (st) return st;
    if (!who) who = "";
    if (n == 0) {
        free(opts);
        return zg_error_set(err, ZG_ERR_INFEASIBLE,
                            "%ssequence %lld (%lld tokens) has no legal configuration on %d ranks "
                            "(max degree %d)",
                            who, (long long)s->id, (long long)s->tokens,
                            ctx->cluster->world_size, zg_plan_ctx_max_degree(ctx));
    }
    int32_t best = 0, maxd = 0;
    for (int32_t i = 0; i < n; i++) {
        if (opts[i].mem < opts[best].mem) best = i;
        int32_t d = zg_option_degree(&opts[i]);
        if (d > maxd) maxd = d;
    }
    char need[80], capb[32], cb[32];
    zg_option o = opts[best];
    free(opts);
    return zg_error_set(err, ZG_ERR_INFEASIBLE,
                        "%ssequence %lld (%lld tokens) fits no option: needs %s on one rank with "
                        "the best option %s, cap %s, and degree %d is the largest legal (use "
                        "more ranks, more memory per rank, or --fallback)",
                        who, (long long)s->id, (long long)s->tokens,
                        zg_plan_fmt_need(ctx->pricer, o.mem, need, sizeof need),
                        zg_config_name(o.config, cb, sizeof cb),
                        zg_fmt_bytes(ctx->pricer->mem_cap, capb, sizeof capb), maxd);
}

zg_status zg_plan_whole_prices(const zg_plan_ctx *ctx, const zg_batch *b, zg_price *out,
                               zg_error *err) {
    zg_status st = check_ctx(ctx, NULL, err);
    if (st) return st;
    int32_t r0 = 0;
    for (int64_t i = 0; i < b->n; i++) {
        const zg_seq *s = &b->seqs[i];
        if ((st = check_ctx(ctx, s, err))) return st;
        st = zg_pricer_price(ctx->pricer, s, (zg_config){1, 1, 1}, &r0, 1, &out[i], err);
        if (st) return zg_error_prefix(err, "pricing sequence %lld whole: ", (long long)s->id);
    }
    return ZG_OK;
}
