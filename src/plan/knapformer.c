// knapformer.c — KnapFormer's plan_routing, bit-faithful (reference §2.3-2.7, §2.10): greedy
// bag assignment with the persistent in-place fallback order, chunking with the remainder at
// seq_id mod G, receipts in chunk-id order, and the modelled original/balanced loads.
#include <stdlib.h>
#include <string.h>

#include "plan/knapformer.h"

zg_status zg_knap_balancer_init(zg_knap_balancer *b, const zg_knap_layout *l, int64_t d,
                                double gamma, zg_knap_cost cost, zg_error *err) {
    memset(b, 0, sizeof *b);
    if (!l || l->n_sizes < 1 || l->n_bags < 1)
        return zg_error_set(err, ZG_ERR_INVALID, "knapformer balancer needs a parsed bag spec");
    if (!(gamma >= 0.0) || gamma > 1e6)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "knapformer gamma %g is out of range; use a value in [0, 1e6] "
                            "(the reference default is 1.0, its README uses 0.4)",
                            gamma);
    if (cost == ZG_KNAP_COST_FLOPS && (d < 1 || d > 1000000))
        return zg_error_set(err, ZG_ERR_INVALID, "knapformer d_model %lld is out of range 1..1e6",
                            (long long)d);
    b->layout = l;
    b->d = d;
    b->gamma = gamma;
    b->cost = cost;
    // options2bag_ids[G_max]: the bag ids of the largest size, ascending, at construction
    b->n_fallback = l->count[l->n_sizes - 1];
    b->fallback = zg_calloc((size_t)b->n_fallback, sizeof *b->fallback, err);
    if (!b->fallback) return ZG_ERR_NOMEM;
    for (int32_t i = 0; i < b->n_fallback; i++)
        b->fallback[i] = l->n_bags - b->n_fallback + i;
    return ZG_OK;
}

void zg_knap_balancer_free(zg_knap_balancer *b) {
    free(b->fallback);
    memset(b, 0, sizeof *b);
}

void zg_knap_routing_init(zg_knap_routing *r) {
    memset(r, 0, sizeof *r);
}

void zg_knap_routing_free(zg_knap_routing *r) {
    free(r->assign);
    free(r->w);
    free(r->cap);
    free(r->occ);
    free(r->chunk_off);
    free(r->chunk_len);
    free(r->chunk_gpu);
    free(r->chunk_src);
    free(r->recv_off);
    free(r->recv);
    free(r->orig_load);
    free(r->bal_load);
    memset(r, 0, sizeof *r);
}

// sorted(seq ids, key=w, reverse=True) is stable: w descending, equal w by ascending seq id
static int cmp_w_desc(const void *a, const void *b, void *ctx) {
    const double *w = ctx;
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    if (w[x] > w[y]) return -1;
    if (w[x] < w[y]) return 1;
    return (x > y) - (x < y);
}

// list.sort(key=occ) in place: stable insertion sort on the persistent list
static void sort_fallback_in_place(int32_t *ids, int32_t n, const double *occ) {
    for (int32_t i = 1; i < n; i++) {
        int32_t v = ids[i], j = i;
        while (j > 0 && occ[ids[j - 1]] > occ[v]) {
            ids[j] = ids[j - 1];
            j--;
        }
        ids[j] = v;
    }
}

static zg_status check_input(const zg_knap_balancer *b, const int64_t *lengths, const int32_t *gpu,
                             int64_t n, zg_error *err) {
    const zg_knap_layout *l = b->layout;
    if (n < 0 || (n > 0 && (!lengths || !gpu)))
        return zg_error_set(err, ZG_ERR_INVALID, "knapformer: bad sequence arrays (n=%lld)",
                            (long long)n);
    for (int64_t s = 0; s < n; s++) {
        if (gpu[s] < 0 || gpu[s] >= l->group)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "knapformer: sequence %lld comes from GPU %d, outside the balance "
                                "group's GPUs 0..%d",
                                (long long)s, gpu[s], l->group - 1);
        if (s > 0 && gpu[s] < gpu[s - 1])
            return zg_error_set(err, ZG_ERR_INVALID,
                                "knapformer: sequence %lld (GPU %d) follows a sequence of GPU %d; "
                                "global ids must be in (origin GPU, local index) order",
                                (long long)s, gpu[s], gpu[s - 1]);
        if (lengths[s] < 1)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "knapformer: sequence %lld has %lld tokens; need >= 1",
                                (long long)s, (long long)lengths[s]);
        if (b->cost == ZG_KNAP_COST_FLOPS) {
            zg_status st = zg_knap_workload_check(lengths[s], b->d, err);
            if (st) return zg_error_prefix(err, "knapformer: sequence %lld: ", (long long)s);
        }
    }
    return ZG_OK;
}

static zg_status alloc_routing(zg_knap_routing *r, int64_t n, const zg_knap_layout *l,
                               zg_error *err) {
    size_t sn = (size_t)n, nb = (size_t)l->n_bags, ng = (size_t)l->group;
    r->n = n;
    r->group = l->group;
    r->n_bags = l->n_bags;
    r->assign = zg_calloc(sn, sizeof *r->assign, err);
    r->w = zg_calloc(sn, sizeof *r->w, err);
    r->cap = zg_calloc(nb, sizeof *r->cap, err);
    r->occ = zg_calloc(nb, sizeof *r->occ, err);
    r->chunk_off = zg_calloc(sn + 1, sizeof *r->chunk_off, err);
    r->recv_off = zg_calloc(ng + 1, sizeof *r->recv_off, err);
    r->orig_load = zg_calloc(ng, sizeof *r->orig_load, err);
    r->bal_load = zg_calloc(ng, sizeof *r->bal_load, err);
    if (!r->assign || !r->w || !r->cap || !r->occ || !r->chunk_off || !r->recv_off ||
        !r->orig_load || !r->bal_load)
        return ZG_ERR_NOMEM;
    return ZG_OK;
}

// Pass 1 (§2.4): greedy assignment in w-descending order.
static zg_status assign_bags(zg_knap_balancer *b, const int64_t *lengths, zg_knap_routing *r,
                             zg_error *err) {
    const zg_knap_layout *l = b->layout;
    int64_t n = r->n;
    int64_t *order = zg_calloc((size_t)n, sizeof *order, err);
    if (!order) return ZG_ERR_NOMEM;
    for (int64_t s = 0; s < n; s++)
        order[s] = s;
    zg_status st = zg_sort_stable(order, (size_t)n, sizeof *order, cmp_w_desc, r->w, err);
    if (st) {
        free(order);
        return st;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t s = order[i];
        double w = r->w[s];
        int32_t best = -1;
        for (int32_t bag = 0; bag < l->n_bags; bag++) { // candidates, ascending bag id
            if (!(r->cap[bag] >= w && lengths[s] >= l->bag_size[bag])) continue;
            if (best < 0 || r->occ[bag] < r->occ[best]) best = bag; // first min wins ties
        }
        if (best < 0) { // fallback: the persistent largest-size list, sorted in place
            sort_fallback_in_place(b->fallback, b->n_fallback, r->occ);
            best = b->fallback[0];
            r->n_fallbacks++;
        }
        r->assign[s] = best;
        r->occ[best] += w / r->cap[best];
    }
    free(order);
    return ZG_OK;
}

// Pass 2 (§2.5) and the receipts of pass 3 (§2.6).
static zg_status make_chunks(const zg_knap_layout *l, const int64_t *lengths, const int32_t *gpu,
                             zg_knap_routing *r, zg_error *err) {
    int64_t n = r->n, total = 0;
    for (int64_t s = 0; s < n; s++) {
        r->chunk_off[s] = total;
        total += l->bag_size[r->assign[s]];
    }
    r->chunk_off[n] = total;
    r->n_chunks = total;
    r->chunk_len = zg_calloc((size_t)total, sizeof *r->chunk_len, err);
    r->chunk_gpu = zg_calloc((size_t)total, sizeof *r->chunk_gpu, err);
    r->chunk_src = zg_calloc((size_t)total, sizeof *r->chunk_src, err);
    r->recv = zg_calloc((size_t)total, sizeof *r->recv, err);
    if (!r->chunk_len || !r->chunk_gpu || !r->chunk_src || !r->recv) return ZG_ERR_NOMEM;
    for (int64_t s = 0; s < n; s++) {
        int32_t bag = r->assign[s], G = l->bag_size[bag];
        int64_t base = lengths[s] / G, rem = lengths[s] % G, c0 = r->chunk_off[s];
        for (int32_t k = 0; k < G; k++) {
            r->chunk_len[c0 + k] = base + (k == (int32_t)(s % G) ? rem : 0);
            r->chunk_gpu[c0 + k] = l->bag_first[bag] + k;
            r->chunk_src[c0 + k] = gpu[s];
            r->recv_off[l->bag_first[bag] + k + 1]++;
        }
    }
    for (int32_t g = 0; g < l->group; g++) {
        if (r->recv_off[g + 1] == 0)
            return zg_error_set(err, ZG_ERR_INFEASIBLE,
                                "knapformer: GPU %d (bag %d, G=%d) receives no chunk from the %lld "
                                "sequences of its balance group (the reference raises KeyError "
                                "here); use fewer or smaller bags, or more sequences",
                                g, l->gpu_bag[g], l->bag_size[l->gpu_bag[g]], (long long)n);
        r->recv_off[g + 1] += r->recv_off[g];
    }
    int64_t *fill = zg_calloc((size_t)l->group, sizeof *fill, err);
    if (!fill) return ZG_ERR_NOMEM;
    for (int64_t c = 0; c < total; c++) { // chunk-id order -> each receipt list ascending
        int32_t g = r->chunk_gpu[c];
        r->recv[r->recv_off[g] + fill[g]++] = c;
    }
    free(fill);
    return ZG_OK;
}

// §2.7: modelled loads and max/min ratios.
static zg_status compute_loads(const zg_knap_layout *l, const int32_t *gpu, zg_knap_routing *r,
                               zg_error *err) {
    for (int64_t s = 0; s < r->n; s++)
        r->orig_load[gpu[s]] += r->w[s];
    for (int32_t g = 0; g < l->group; g++) {
        int32_t bag = l->gpu_bag[g];
        r->bal_load[g] = r->cap[bag] * r->occ[bag] / l->bag_size[bag];
    }
    double omax = r->orig_load[0], omin = r->orig_load[0];
    double bmax = r->bal_load[0], bmin = r->bal_load[0];
    int32_t zero = r->orig_load[0] > 0 ? -1 : 0;
    for (int32_t g = 1; g < l->group; g++) {
        if (r->orig_load[g] > omax) omax = r->orig_load[g];
        if (r->orig_load[g] < omin) omin = r->orig_load[g];
        if (r->bal_load[g] > bmax) bmax = r->bal_load[g];
        if (r->bal_load[g] < bmin) bmin = r->bal_load[g];
        if (zero < 0 && !(r->orig_load[g] > 0)) zero = g;
    }
    if (zero >= 0)
        return zg_error_set(err, ZG_ERR_INFEASIBLE,
                            "knapformer: GPU %d of the balance group has no sequences (zero "
                            "original workload; the reference's imbalance ratio divides by "
                            "zero); give every rank at least one sequence",
                            zero);
    if (!(bmin > 0))
        return zg_error_set(err, ZG_ERR_INFEASIBLE, "knapformer: a GPU has zero balanced workload");
    r->orig_ratio = omax / omin;
    r->bal_ratio = bmax / bmin;
    return ZG_OK;
}

zg_status zg_knap_plan_routing(zg_knap_balancer *b, const int64_t *lengths, const int32_t *gpu,
                               int64_t n, zg_knap_routing *out, zg_error *err) {
    zg_knap_routing_init(out);
    if (!b || !b->layout || !b->fallback)
        return zg_error_set(err, ZG_ERR_INVALID, "knapformer: balancer is not initialised");
    zg_status st = check_input(b, lengths, gpu, n, err);
    if (st) return st;
    const zg_knap_layout *l = b->layout;
    zg_knap_routing r;
    zg_knap_routing_init(&r);
    st = alloc_routing(&r, n, l, err);
    if (st) goto fail;
    // w per sequence; total = left-to-right sum in seq-id order; C = total / N; cap = C * G
    for (int64_t s = 0; s < n; s++) {
        r.w[s] = b->cost == ZG_KNAP_COST_LINEAR ? (double)lengths[s]
                                                : zg_knap_workload(lengths[s], b->d, b->gamma);
        r.total += r.w[s];
    }
    r.capacity = r.total / l->group;
    for (int32_t bag = 0; bag < l->n_bags; bag++)
        r.cap[bag] = r.capacity * l->bag_size[bag];
    if ((st = assign_bags(b, lengths, &r, err))) goto fail;
    if ((st = make_chunks(l, lengths, gpu, &r, err))) goto fail;
    if ((st = compute_loads(l, gpu, &r, err))) goto fail;
    *out = r;
    return ZG_OK;
fail:
    zg_knap_routing_free(&r);
    return st;
}
