// test_zel_fast_cache.c — the fast path's cross-step template cache (fast/cache.c): cached and
// uncached builds give identical template sets and byte-identical plans over several steps;
// the fronts equal a from-scratch reference (every config x offset priced, sorted, Pareto);
// the plan's lower bound equals the full template sweep (the cached staircase is exact); the
// cache resets when the pricer (also in place), the memory cap, the cluster or the family
// changes, evicts under a budget, and survives an infeasible batch; templates priced through the
// pricer's block entry equal a wrapper's rank-list prices (the wrapper is never bypassed);
// zel_rmq_update equals a full build.
#include <math.h>

#include "zgtest.h"
#include "zel_env.h"
#include "zellige/fast/fast.h"
#include "zellige/rmq.h"

// Step `step` of mix `name` at tpr tokens per rank (15 s videos, seed 1); 0 on success.
static int mix(const env *e, const char *name, int64_t tpr, uint64_t step, zg_batch *b,
               zg_error *err) {
    return env_batch(e, zg_mix_share_from_name(name), tpr, 15, 1, step, b, err) != ZG_OK;
}

// Exact equality of two template sets (every field the planner reads).
static int same_tset(const zel_tset *a, const zel_tset *b) {
    if (a->N != b->N || a->n_degs != b->n_degs || a->n_classes != b->n_classes ||
        a->n_seqs != b->n_seqs)
        return 0;
    for (int32_t d = 0; d < a->n_degs; d++) {
        const zel_tdeg *x = &a->degs[d], *y = &b->degs[d];
        if (x->d != y->d || x->n_starts != y->n_starts || x->n_offs != y->n_offs ||
            memcmp(x->starts, y->starts, sizeof(int32_t) * (size_t)x->n_starts) ||
            memcmp(x->offs, y->offs, sizeof(int32_t) * (size_t)x->n_offs) ||
            memcmp(x->off_start, y->off_start, sizeof(int32_t) * (size_t)x->n_offs))
            return 0;
    }
    if (memcmp(a->class_of, b->class_of, sizeof(int32_t) * (size_t)a->n_seqs)) return 0;
    for (int32_t k = 0; k < a->n_classes; k++) {
        const zel_tclass *x = &a->cls[k], *y = &b->cls[k];
        if (x->rep != y->rep || x->count != y->count || x->n_tpl != y->n_tpl ||
            x->has_whole != y->has_whole || x->n_stair != y->n_stair ||
            memcmp(x->members, y->members, sizeof(int64_t) * (size_t)x->count) ||
            memcmp(&x->whole_time, &y->whole_time, sizeof(double)) ||
            memcmp(&x->whole_mem, &y->whole_mem, sizeof(double)) ||
            memcmp(&x->min_time, &y->min_time, sizeof(double)) ||
            memcmp(&x->min_area, &y->min_area, sizeof(double)) ||
            memcmp(x->stair, y->stair, sizeof(double) * 2 * (size_t)x->n_stair) ||
            memcmp(x->fastest, y->fastest, sizeof(double) * (size_t)a->n_degs))
            return 0;
        for (int32_t i = 0; i < x->n_tpl; i++)
            if (!zg_config_eq(x->tpl[i].cfg, y->tpl[i].cfg) ||
                memcmp(&x->tpl[i].time, &y->tpl[i].time, sizeof(double)) ||
                memcmp(&x->tpl[i].mem, &y->tpl[i].mem, sizeof(double)))
                return 0;
        for (int32_t d = 0; d < a->n_degs; d++) {
            if (!x->front[d] != !y->front[d]) return 0;
            if (x->front[d] && memcmp(x->front[d], y->front[d],
                                      sizeof(int32_t) * (size_t)(a->degs[d].n_offs + 1)))
                return 0;
        }
    }
    return 1;
}

// Plans b uncached and through cache; 1 if both succeed with byte-identical plans.
static int same_plans(const env *e, const zg_batch *b, zel_cache *cache, zel_fast_stats *fw) {
    zg_plan p1, p2;
    zg_plan_init(&p1), zg_plan_init(&p2);
    zg_error err;
    int ok = zel_fast_plan(&e->ctx, b, &p1, NULL, &err) == ZG_OK &&
             zel_fast_plan_cached(&e->ctx, b, cache, &p2, fw, &err) == ZG_OK;
    ok = ok && plan_texts_equal(&p1, &p2);
    zg_plan_free(&p1), zg_plan_free(&p2);
    return ok;
}

ENV_TEST(cached_equals_uncached_across_steps, "64xH100") {
    zg_error err;
    zel_cache *cache = zel_cache_new();
    CHECK(cache != NULL);
    static const char *mixes[] = {"V35", "V60"};
    for (int step = 0; step < 3; step++)
        for (int m = 0; m < 2; m++) {
            zg_batch b;
            CHECK(!mix(e, mixes[m], 125000, (uint64_t)step, &b, &err));
            zel_tset t1, t2;
            CHECK_OK(zel_tset_build(&e->ctx, &b, &t1, &err), &err);
            CHECK_OK(zel_tset_build_cached(&e->ctx, &b, cache, &t2, &err), &err);
            CHECK(same_tset(&t1, &t2));
            CHECK(t1.n_priced > 0);
            if (step > 0) CHECK_EQ_INT(t2.n_priced, 0);  // every shape seen at step 0
            zel_tset_free(&t1), zel_tset_free(&t2);
            zel_fast_stats fw;
            CHECK(same_plans(e, &b, cache, &fw));
            CHECK_EQ_INT(fw.cache_misses, 0);
            CHECK(fw.cache_hits > 0);
            zg_batch_free(&b);
        }
    zel_cache_stats cs = zel_cache_get_stats(cache);
    CHECK(cs.hits > 0 && cs.misses > 0 && cs.n_entries == cs.misses && cs.bytes > 0);
    CHECK_EQ_INT(cs.resets, 0);
    zel_cache_free(cache);
}

static int cmp_tpl(const void *pa, const void *pb) {
    const double *a = pa, *b = pb;  // (offset, time, mem, q, k, h)
    for (int i = 0; i < 6; i++)
        if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
    return 0;
}

// Reference fronts: every legal config x every offset of its degree priced on the offset's
// first legal start (zg_rankset_starts), sorted, Pareto-pruned; compared with the set's.
ENV_TEST(fronts_equal_reference_pricing, "16xA800") {
    zg_error err;
    zg_batch b;
    CHECK(!mix(e, "V45", 125000, 0, &b, &err));
    zel_tset ts;
    CHECK_OK(zel_tset_build(&e->ctx, &b, &ts, &err), &err);
    zg_config *cfgs = NULL;
    int32_t nc = 0, N = ts.N, rpn = ts.rpn;
    CHECK_OK(zg_config_enumerate(&e->model, N, &cfgs, &nc, &err), &err);
    int32_t *starts = calloc((size_t)N, sizeof(int32_t)), *ranks = calloc((size_t)N, sizeof(int32_t));
    double *v = calloc((size_t)nc * (size_t)rpn * 6, sizeof(double));
    int64_t compared = 0;
    for (int32_t k = 0; k < ts.n_classes; k++) {
        const zel_tclass *c = &ts.cls[k];
        const zg_seq *s = &b.seqs[c->rep];
        for (int32_t di = 0; di < ts.n_degs; di++) {
            const zel_tdeg *D = &ts.degs[di];
            int32_t ns = zg_rankset_starts(&e->cluster, e->ctx.opts.family, D->d, starts), n = 0;
            CHECK_EQ_INT(ns, D->n_starts);
            for (int32_t ci = 0; ci < nc; ci++) {
                if (zg_config_degree(cfgs[ci]) != D->d) continue;
                if (zg_config_check(&e->model, N, cfgs[ci], s->tokens, NULL)) continue;
                for (int32_t oi = 0; oi < D->n_offs; oi++) {
                    int32_t st0 = -1;
                    for (int32_t i = 0; i < ns && st0 < 0; i++)
                        if (starts[i] % rpn == D->offs[oi]) st0 = starts[i];
                    CHECK_EQ_INT(st0, D->off_start[oi]);
                    for (int32_t i = 0; i < D->d; i++) ranks[i] = st0 + i;
                    zg_price p;
                    CHECK_OK(zg_pricer_price(&e->pricer, s, cfgs[ci], ranks, D->d, &p, &err), &err);
                    if (p.mem > zg_pricer_mem_room(&e->pricer)) continue;
                    double *r = v + 6 * n++;
                    r[0] = oi, r[1] = p.time, r[2] = p.mem;
                    r[3] = cfgs[ci].q, r[4] = cfgs[ci].k, r[5] = cfgs[ci].h;
                }
            }
            CHECK((n == 0) == (c->front[di] == NULL));
            if (!n) continue;
            qsort(v, (size_t)n, 6 * sizeof(double), cmp_tpl);
            int32_t i = 0;
            for (int32_t oi = 0; oi < D->n_offs; oi++) {
                int32_t at = c->front[di][oi];
                double last = INFINITY;
                for (; i < n && v[6 * i] == oi; i++) {
                    if (v[6 * i + 2] >= last) continue;
                    last = v[6 * i + 2];
                    CHECK(at < c->front[di][oi + 1]);
                    const zel_tpl *t = &c->tpl[at++];
                    CHECK(t->time == v[6 * i + 1] && t->mem == v[6 * i + 2] &&
                          t->cfg.q == (int32_t)v[6 * i + 3] && t->cfg.k == (int32_t)v[6 * i + 4]);
                    compared++;
                }
                CHECK_EQ_INT(at, c->front[di][oi + 1]);
            }
        }
    }
    CHECK(compared > 100);
    free(cfgs), free(starts), free(ranks), free(v);
    zel_tset_free(&ts);
    zg_batch_free(&b);
}

typedef struct { double t, area; int32_t k; } sweep_pt;
static int cmp_sweep(const void *pa, const void *pb) {
    const sweep_pt *a = pa, *b = pb;
    if (a->t != b->t) return a->t < b->t ? -1 : 1;
    if (a->area != b->area) return a->area < b->area ? -1 : 1;
    return (a->k > b->k) - (a->k < b->k);
}

// The plan's lower bound is max(fastest time, least-area bound, height-cut sweep over every
// template); the planner sweeps only the cached staircases and must get the same double.
static int cmp_time_area(const void *pa, const void *pb) {
    const double *a = pa, *b = pb;
    if (a[0] != b[0]) return a[0] < b[0] ? -1 : 1;
    return (a[1] > b[1]) - (a[1] < b[1]);
}

// Class k's staircase from scratch (qsort of every template's (time, area), running least
// area) equals the cached one bit for bit.
static int stair_matches(const zel_tset *ts, int32_t k) {
    const zel_tclass *c = &ts->cls[k];
    double *v = calloc(2 * (size_t)c->n_tpl + 2, sizeof(double));
    int64_t n = 0, m = 0;
    for (int32_t di = 0; di < ts->n_degs; di++)
        if (c->front[di])
            for (int32_t i = c->front[di][0]; i < c->front[di][ts->degs[di].n_offs]; i++, n++)
                v[2 * n] = c->tpl[i].time, v[2 * n + 1] = c->tpl[i].time * ts->degs[di].d;
    qsort(v, (size_t)n, 2 * sizeof(double), cmp_time_area);
    double cur = INFINITY;
    int ok = 1;
    for (int64_t i = 0; i < n; i++)
        if (v[2 * i + 1] < cur) {
            cur = v[2 * i + 1];
            ok = ok && m < c->n_stair && !memcmp(&c->stair[2 * m], &v[2 * i], 2 * sizeof(double));
            m++;
        }
    free(v);
    return ok && m == c->n_stair;
}

ENV_TEST(lower_bound_equals_full_sweep, "64xH100") {
    zg_error err;
    for (int m = 0; m < 2; m++) {
        zg_batch b;
        CHECK(!mix(e, m ? "V60" : "V35", m ? 350000 : 125000, 1, &b, &err));
        zel_tset ts;
        CHECK_OK(zel_tset_build(&e->ctx, &b, &ts, &err), &err);
        int64_t P = 0;
        for (int32_t k = 0; k < ts.n_classes; k++) P += ts.cls[k].n_tpl;
        sweep_pt *v = calloc((size_t)P + 1, sizeof *v);
        double *cur = calloc((size_t)ts.n_classes + 1, sizeof(double));
        int64_t n = 0;
        double lb = 0, area = 0;
        for (int32_t k = 0; k < ts.n_classes; k++) {
            const zel_tclass *c = &ts.cls[k];
            for (int32_t di = 0; di < ts.n_degs; di++)
                if (c->front[di])
                    for (int32_t i = c->front[di][0]; i < c->front[di][ts.degs[di].n_offs]; i++)
                        v[n++] = (sweep_pt){c->tpl[i].time, c->tpl[i].time * ts.degs[di].d, k};
            CHECK(stair_matches(&ts, k));
            cur[k] = INFINITY;
            area += (double)c->count * c->min_area;
            if (c->min_time > lb) lb = c->min_time;
        }
        if (area / ts.N > lb) lb = area / ts.N;
        qsort(v, (size_t)n, sizeof *v, cmp_sweep);
        double A = 0, cut = INFINITY;
        int32_t missing = ts.n_classes;
        for (int64_t i = 0; i < n;) {
            double t = v[i].t;
            for (; i < n && v[i].t == t; i++)
                if (v[i].area < cur[v[i].k]) {
                    if (cur[v[i].k] == INFINITY) missing--;
                    else A -= (double)ts.cls[v[i].k].count * cur[v[i].k];
                    cur[v[i].k] = v[i].area;
                    A += (double)ts.cls[v[i].k].count * cur[v[i].k];
                }
            if (missing) continue;
            double next = i < n ? v[i].t : INFINITY, T = A / ts.N > t ? A / ts.N : t;
            if (T < next) {
                cut = T;
                break;
            }
        }
        if (cut < INFINITY && cut > lb) lb = cut;
        zg_plan p;
        zg_plan_init(&p);
        CHECK_OK(zel_fast_plan(&e->ctx, &b, &p, NULL, &err), &err);
        CHECK(!memcmp(&p.lower_bound, &lb, sizeof(double)));
        zg_plan_free(&p);
        free(v), free(cur);
        zel_tset_free(&ts);
        zg_batch_free(&b);
    }
}

ENV_TEST(cache_resets_on_changes, "64xH100") {
    zg_error err;
    zel_cache *cache = zel_cache_new();
    zg_batch b;
    CHECK(!mix(e, "V50", 125000, 0, &b, &err));
    zel_fast_stats fw;
    CHECK(same_plans(e, &b, cache, &fw));
    CHECK(fw.cache_misses > 0);
    int64_t r0 = zel_cache_get_stats(cache).resets;
    // memory cap
    double cap = e->pricer.mem_cap;
    e->pricer.mem_cap = cap * 0.9;
    CHECK(same_plans(e, &b, cache, &fw));
    CHECK(fw.cache_misses > 0 && fw.cache_hits == 0);
    CHECK(zel_cache_get_stats(cache).resets > r0);
    e->pricer.mem_cap = cap;
    CHECK(same_plans(e, &b, cache, &fw));
    // family
    e->ctx.opts.family = ZG_RANKSETS_ALIGNED;
    CHECK(same_plans(e, &b, cache, &fw));
    CHECK(fw.cache_misses > 0 && fw.cache_hits == 0);
    e->ctx.opts.family = ZG_RANKSETS_NODE;
    // a pricer changed in place: the probes see it
    scaled sc = {&e->pricer, 1.0, 1.0, 1.0};
    zg_pricer wrap = wrap_pricer(&e->pricer, &sc, scaled_price);
    e->ctx.pricer = &wrap;
    CHECK(same_plans(e, &b, cache, &fw));
    CHECK(same_plans(e, &b, cache, &fw));
    CHECK(fw.cache_hits > 0 && fw.cache_misses == 0);
    int64_t r1 = zel_cache_get_stats(cache).resets;
    sc.split_scale = 1.1;  // whole prices unchanged: the split probe sees it
    CHECK(same_plans(e, &b, cache, &fw));
    CHECK(fw.cache_misses > 0 && fw.cache_hits == 0);
    CHECK(zel_cache_get_stats(cache).resets == r1 + 1);
    r1++;
    sc.time_scale = 1.25;
    CHECK(same_plans(e, &b, cache, &fw));
    CHECK(fw.cache_misses > 0 && fw.cache_hits == 0);
    CHECK(zel_cache_get_stats(cache).resets == r1 + 1);
    sc.mem_scale = 0.5;
    CHECK(same_plans(e, &b, cache, &fw));
    CHECK(fw.cache_hits == 0);
    e->ctx.pricer = &e->pricer;
    // another cluster through the same cache
    env e2;
    CHECK(!env_init(&e2, "16xA800", &err));
    zg_batch b2;
    CHECK(!mix(&e2, "V50", 125000, 0, &b2, &err));
    CHECK(same_plans(&e2, &b2, cache, &fw));
    CHECK(fw.cache_hits == 0);
    CHECK(same_plans(e, &b, cache, &fw));
    CHECK(fw.cache_hits == 0);
    // explicit clear
    zel_cache_clear(cache);
    CHECK_EQ_INT(zel_cache_get_stats(cache).n_entries, 0);
    CHECK(same_plans(e, &b, cache, &fw));
    CHECK(fw.cache_hits == 0);
    zg_batch_free(&b), zg_batch_free(&b2);
    zel_cache_free(cache);
    zg_pricer_free(&e2.pricer);
}

// A wrapper that copies the pricer struct and replaces price (cost.h, zg_pricer_price_block):
// the fast path prices every template through it (the analytic block entry is not used under a
// wrapper), and the block-priced templates and plans equal the wrapper's list-priced ones.
typedef struct counted {
    const zg_pricer *inner;
    int64_t calls, split_calls;
} counted;
static zg_status counted_price(const zg_pricer *p, const zg_seq *s, zg_config c,
                               const int32_t *ranks, int32_t n, zg_price *out, zg_error *err) {
    counted *x = p->impl;
    x->calls++;
    if (n > 1) x->split_calls++;
    return zg_pricer_price(x->inner, s, c, ranks, n, out, err);
}

ZG_TEST(block_pricing_equals_wrapped_list_pricing) {
    static const char *clusters[] = {"64xH100", "1024xH100"};
    for (int ci = 0; ci < 2; ci++) {
        env e;
        zg_error err;
        CHECK(!env_init(&e, clusters[ci], &err));
        CHECK(zg_pricer_has_block(&e.pricer));
        counted cn = {&e.pricer, 0, 0};
        zg_pricer wrap = wrap_pricer(&e.pricer, &cn, counted_price);
        CHECK(!zg_pricer_has_block(&wrap));
        zg_batch b;
        CHECK(!mix(&e, "V45", ci ? 12000 : 125000, 1, &b, &err));
        zel_tset t1, t2;
        CHECK_OK(zel_tset_build(&e.ctx, &b, &t1, &err), &err);  // block entry
        e.ctx.pricer = &wrap;
        CHECK_OK(zel_tset_build(&e.ctx, &b, &t2, &err), &err);  // the wrapper, on rank lists
        CHECK(same_tset(&t1, &t2));
        CHECK(t2.n_priced > 0);
        // every template price and every class's whole price went through the wrapper
        CHECK_EQ_INT(cn.calls, t2.n_priced + t2.n_classes);
        CHECK(cn.split_calls > 0);
        zel_tset_free(&t1), zel_tset_free(&t2);
        if (ci == 0) {  // plans through the wrapper equal the plain pricer's, cached or not
            zg_plan p1, p2;
            zg_plan_init(&p1), zg_plan_init(&p2);
            CHECK_OK(zel_fast_plan(&e.ctx, &b, &p2, NULL, &err), &err);
            e.ctx.pricer = &e.pricer;
            CHECK_OK(zel_fast_plan(&e.ctx, &b, &p1, NULL, &err), &err);
            CHECK(plan_texts_equal(&p1, &p2));
            zg_plan_free(&p1), zg_plan_free(&p2);
        }
        e.ctx.pricer = &e.pricer;
        zg_batch_free(&b);
        zg_pricer_free(&e.pricer);
    }
}

ENV_TEST(cache_budget_and_infeasible, "64xH100") {
    zg_error err;
    zel_cache *cache = zel_cache_new();
    zel_cache_set_budget(cache, 1);  // every build evicts what earlier builds left
    zel_fast_stats fw;
    for (int step = 0; step < 3; step++) {
        zg_batch b;
        CHECK(!mix(e, step % 2 ? "V40" : "V55", 125000, (uint64_t)step, &b, &err));
        CHECK(same_plans(e, &b, cache, &fw));
        CHECK_EQ_INT(fw.cache_hits, 0);
        zg_batch_free(&b);
    }
    zel_cache_stats cs = zel_cache_get_stats(cache);
    CHECK(cs.evictions > 0);
    zel_cache_set_budget(cache, (size_t)1 << 30);
    // an infeasible batch fails the same way and leaves the cache usable
    zg_batch b;
    CHECK(!mix(e, "V35", 125000, 0, &b, &err));
    double cap = e->pricer.mem_cap;
    e->pricer.mem_cap = 1;
    zg_plan p;
    zg_plan_init(&p);
    CHECK(zel_fast_plan_cached(&e->ctx, &b, cache, &p, NULL, &err) == ZG_ERR_INFEASIBLE);
    CHECK(strstr(err.msg, "sequence") != NULL);
    e->pricer.mem_cap = cap;
    CHECK(same_plans(e, &b, cache, &fw));
    CHECK(same_plans(e, &b, cache, &fw));
    CHECK(fw.cache_hits > 0 && fw.cache_misses == 0);
    zg_plan_free(&p);
    // bad input: NULL caches are accepted where documented
    zel_cache_free(NULL);
    zel_cache_clear(NULL);
    CHECK_EQ_INT(zel_cache_get_stats(NULL).hits, 0);
    zg_batch_free(&b);
    zel_cache_free(cache);
}

ZG_TEST(rmq_update_equals_build) {
    int32_t n = 37, levels = zel_rmq_levels(n);
    double v[37], *t1 = calloc((size_t)(levels * n), sizeof(double));
    double *t2 = calloc((size_t)(levels * n), sizeof(double));
    int32_t lg[38];
    zel_rmq a = {n, levels, t1, lg}, b = {n, levels, t2, lg};
    zel_rmq_init_log(&a);
    uint64_t x = 12345;
    for (int32_t i = 0; i < n; i++) v[i] = (double)(i * 7 % 11);
    zel_rmq_build(&a, v);
    zel_rmq_build(&b, v);
    for (int it = 0; it < 200; it++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        int32_t lo = (int32_t)((x >> 33) % (uint64_t)n), len = 1 + (int32_t)((x >> 13) % 5);
        for (int32_t i = lo; i < lo + len && i < n; i++) v[i] += (double)((x >> 40) % 9);
        zel_rmq_update(&a, v, lo, lo + len);
        zel_rmq_build(&b, v);
        for (int32_t s = 0; s < n; s++)
            for (int32_t d = 1; s + d <= n; d++) {
                double m = v[s];
                for (int32_t i = s; i < s + d; i++) m = v[i] > m ? v[i] : m;
                CHECK(zel_rmq_max(&a, s, d) == m && zel_rmq_max(&b, s, d) == m);
            }
    }
    free(t1), free(t2);
}

ZG_TEST_MAIN()
