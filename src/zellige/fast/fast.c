// fast/fast.c — the Zellige two-stage planner for large worlds on compact options (fast/fast.h):
// anchors by a target-driven greedy over block max-load queries on a segment tree, fillers by
// the §5.3 rule with a heap, then a move local search; certified against a lower bound.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zellige/fast/fast.h"
#include "zellige/internal.h"
#include "zellige/rmq.h"

// ---- segment tree over ranks: max load, min load, max memory -----------------------------------

typedef struct seg {
    int32_t P, N, logP;
    double *mx, *mn, *hm;  // 2P each; leaves at P + r
} seg;

static int seg_init(seg *t, int32_t N) {
    t->N = N;
    t->P = 1, t->logP = 0;
    while (t->P < N) t->P <<= 1, t->logP++;
    t->mx = malloc(sizeof(double) * 6 * (size_t)t->P);
    if (!t->mx) return 0;
    t->mn = t->mx + 2 * t->P, t->hm = t->mn + 2 * t->P;
    return 1;
}

static void seg_pull(seg *t, int32_t i) {
    int32_t a = 2 * i, b = a + 1;
    t->mx[i] = t->mx[a] > t->mx[b] ? t->mx[a] : t->mx[b];
    t->mn[i] = t->mn[a] < t->mn[b] ? t->mn[a] : t->mn[b];
    t->hm[i] = t->hm[a] > t->hm[b] ? t->hm[a] : t->hm[b];
}

static void seg_load(seg *t, const double *L, const double *H) {
    for (int32_t i = 0; i < t->P; i++) {
        int in = i < t->N;
        t->mx[t->P + i] = in ? L[i] : -INFINITY;
        t->mn[t->P + i] = in ? L[i] : INFINITY;
        t->hm[t->P + i] = in ? H[i] : -INFINITY;
    }
    for (int32_t i = t->P - 1; i >= 1; i--) seg_pull(t, i);
}

// Leaves [s, s + d) were changed in L/H: refresh them and their ancestors, O(d + log N).
static void seg_refresh(seg *t, const double *L, const double *H, int32_t s, int32_t d) {
    for (int32_t r = s; r < s + d; r++)
        t->mx[t->P + r] = t->mn[t->P + r] = L[r], t->hm[t->P + r] = H[r];
    for (int32_t lo = (t->P + s) >> 1, hi = (t->P + s + d - 1) >> 1; lo >= 1; lo >>= 1, hi >>= 1)
        for (int32_t i = lo; i <= hi; i++) seg_pull(t, i);
}

// Rank with the largest (smallest) load; ties to the lowest rank. O(log N).
static int32_t seg_argmax(const seg *t) {
    int32_t i = 1;
    while (i < t->P) i = t->mx[2 * i] >= t->mx[2 * i + 1] ? 2 * i : 2 * i + 1;
    return i - t->P;
}
static int32_t seg_argmin(const seg *t) {
    int32_t i = 1;
    while (i < t->P) i = t->mn[2 * i] <= t->mn[2 * i + 1] ? 2 * i : 2 * i + 1;
    return i - t->P;
}

// ---- state --------------------------------------------------------------------------------------

typedef struct fst {
    const zel_tset *ts;
    int32_t N;
    double cap;
    double *L, *H;       // N each
    seg t;
    zg_option *opt;      // n_seqs: the chosen option of every sequence
    int32_t *oidx;       // n_degs * rpn: offset index of (degree, start % rpn), -1 = none
    // O(1) block maxima of L and H for best_block (sparse tables), brought up to date lazily:
    // ranks [dlo, dhi) changed since the last sync
    zel_rmq rl, rh;
    int32_t dlo, dhi;
} fst;

static void mark(fst *f, int32_t s, int32_t d) {
    if (s < f->dlo) f->dlo = s;
    if (s + d > f->dhi) f->dhi = s + d;
}

static void sync_rmq(fst *f) {
    if (f->dlo >= f->dhi) return;
    zel_rmq_update(&f->rl, f->L, f->dlo, f->dhi);
    zel_rmq_update(&f->rh, f->H, f->dlo, f->dhi);
    f->dlo = f->N, f->dhi = 0;
}

static void put(fst *f, int64_t i, const zel_tpl *tp, int32_t s) {
    int32_t d = zg_config_degree(tp->cfg);
    for (int32_t r = s; r < s + d; r++) f->L[r] += tp->time, f->H[r] += tp->mem;
    seg_refresh(&f->t, f->L, f->H, s, d);
    mark(f, s, d);
    f->opt[i] = (zg_option){tp->cfg, s, tp->time, tp->mem};
}

// zel_tset_fit with the common case first: the fastest template of the front fits.
static inline const zel_tpl *fit(const zel_tset *ts, const zel_tclass *c, int32_t di,
                                 int32_t oi, double room) {
    const int32_t *f = c->front[di];
    if (f[oi] < f[oi + 1] && c->tpl[f[oi]].mem <= room) return &c->tpl[f[oi]];
    return zel_tset_fit(ts, c, di, oi, room);
}

// Best block for a unit of class c: among placements finishing <= target the least area
// (then the earliest finish), else the earliest finish (then the least area); ties to the
// smaller degree, then the lower start. Returns 0 if no block has the memory.
static int best_block(fst *f, const zel_tclass *c, double target, const zel_tpl **bt,
                      int32_t *bs) {
    const zel_tset *ts = f->ts;
    sync_rmq(f);
    int found = 0, bclass = 2;
    double bk1 = INFINITY, bk2 = INFINITY;
    for (int32_t di = 0; di < ts->n_degs; di++) {
        if (!c->front[di]) continue;
        const zel_tdeg *D = &ts->degs[di];
        const int32_t *oi = f->oidx + (size_t)di * ts->rpn;
        double fastest = c->fastest[di];  // fronts are time-ascending: their first entries
        if (fastest == INFINITY) continue;
        // no block of this degree can beat the incumbent: finish >= min load + fastest
        if (bclass == 1 && f->t.mn[1] + fastest >= bk1) continue;
        if (bclass == 0 && (fastest * D->d > bk1 || f->t.mn[1] + fastest > target)) continue;
        for (int32_t k = 0; k < D->n_starts; k++) {
            int32_t s = D->starts[k];
            double ml = zel_rmq_max(&f->rl, s, D->d);
            // this block cannot beat the incumbent (its finish is >= ml + fastest): a finish
            // over the target loses to a class-0 incumbent, one over bk1 to a class-1 one
            if ((bclass == 0 && ml + fastest > target) || (bclass == 1 && ml + fastest > bk1))
                continue;
            const zel_tpl *tp = fit(ts, c, di, oi[s % ts->rpn], f->cap - zel_rmq_max(&f->rh, s, D->d));
            if (!tp) continue;
            double fin = ml + tp->time, area = tp->time * D->d;
            int cls = fin <= target ? 0 : 1;
            double k1 = cls ? fin : area, k2 = cls ? area : fin;
            if (cls < bclass || (cls == bclass && (k1 < bk1 || (k1 == bk1 && k2 < bk2)))) {
                bclass = cls, bk1 = k1, bk2 = k2, *bt = tp, *bs = s, found = 1;
            }
        }
    }
    return found;
}

// ---- fillers: §5.3 rule with a max-heap of ranks -----------------------------------------------

typedef struct heap {
    int32_t n;
    int32_t *r;      // heap of ranks
    double *key;     // N: current key of each rank
} heap;

static int hless(const heap *h, int32_t a, int32_t b) {  // a above b
    return h->key[a] > h->key[b] || (h->key[a] == h->key[b] && a < b);
}
static void hdown(heap *h, int32_t i) {
    for (;;) {
        int32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && hless(h, h->r[l], h->r[m])) m = l;
        if (r < h->n && hless(h, h->r[r], h->r[m])) m = r;
        if (m == i) return;
        int32_t x = h->r[i];
        h->r[i] = h->r[m], h->r[m] = x, i = m;
    }
}
static void hpop(heap *h) {
    h->r[0] = h->r[--h->n];
    hdown(h, 0);
}

// Places class c's members whole: key_r = min((F - L_r - p)/F, (cap - H_r - m)/cap) (mode 0,
// the paper's rule) or the memory headroom alone (mode 1). A rank without the memory for this
// class's size never gets it back within the class (memory only grows), so it leaves the heap.
// Members no whole rank can hold take their best block. Returns 0 if one fits nowhere (*bad).
static int fill_class(fst *f, const zel_tclass *c, double F, int mode, heap *h, int64_t *bad) {
    const zel_tset *ts = f->ts;
    int32_t d1 = ts->n_degs > 0 && ts->degs[0].d == 1 && c->front[0] ? 0 : -1;
    const zel_tpl *w = NULL;
    if (d1 == 0) {
        for (int32_t k = c->front[0][0]; k < c->front[0][ts->degs[0].n_offs]; k++)
            if (zg_config_is_whole(c->tpl[k].cfg) && (!w || c->tpl[k].mem < w->mem)) w = &c->tpl[k];
    }
    double p = w ? w->time : 0, m = w ? w->mem : 0, cap = f->cap;
    h->n = 0;
    if (w) {
        for (int32_t r = 0; r < f->N; r++) {
            if (f->H[r] + m > cap) continue;
            double rc = (F - f->L[r] - p) / F, rm = (cap - f->H[r] - m) / cap;
            h->key[r] = mode ? rm : (rc < rm ? rc : rm);
            h->r[h->n++] = r;
        }
        for (int32_t i = h->n / 2 - 1; i >= 0; i--) hdown(h, i);
    }
    for (int64_t j = 0; j < c->count; j++) {
        int64_t i = c->members[j];
        while (h->n && f->H[h->r[0]] + m > cap) hpop(h);
        if (h->n) {
            int32_t r = h->r[0];
            put(f, i, w, r);
            double rc = (F - f->L[r] - p) / F, rm = (cap - f->H[r] - m) / cap;
            h->key[r] = mode ? rm : (rc < rm ? rc : rm);
            hdown(h, 0);
            continue;
        }
        const zel_tpl *tp;
        int32_t s;
        if (!best_block(f, c, -INFINITY, &tp, &s)) {
            *bad = i;
            return 0;
        }
        put(f, i, tp, s);
    }
    return 1;
}

// ---- local search: move whole units off the most loaded rank -----------------------------------

static int64_t local_search(fst *f, const zg_batch *b, int64_t max_moves) {
    const zel_tset *ts = f->ts;
    int64_t n = ts->n_seqs, moves = 0;
    int32_t N = f->N;
    int64_t *head = malloc(sizeof(int64_t) * ((size_t)N + 2 * (size_t)n + 1));
    if (!head || ts->n_degs == 0 || ts->degs[0].d != 1) {
        free(head);
        return 0;
    }
    int64_t *nxt = head + N, *prv = nxt + n;
    for (int32_t r = 0; r < N; r++) head[r] = -1;
    for (int64_t i = n - 1; i >= 0; i--) {
        if (zg_option_degree(&f->opt[i]) != 1) continue;
        int32_t r = f->opt[i].start;
        nxt[i] = head[r], prv[i] = -1;
        if (head[r] >= 0) prv[head[r]] = i;
        head[r] = i;
    }
    const int32_t *oi = f->oidx;  // degree index 0 is degree 1
    while (moves < max_moves) {
        int32_t hi = seg_argmax(&f->t), lo = seg_argmin(&f->t);
        double gap = f->L[hi] - f->L[lo], room = f->cap - f->H[lo];
        int64_t bi = -1;
        const zel_tpl *btp = NULL;
        double bmax = f->L[hi] * (1 - ZEL_STRICT);
        for (int64_t i = head[hi]; i >= 0; i = nxt[i]) {
            const zel_tclass *c = &ts->cls[ts->class_of[i]];
            if (f->opt[i].time >= gap || !c->front[0]) continue;
            const zel_tpl *tp = zel_tset_fit(ts, c, 0, oi[lo % ts->rpn], room);
            if (!tp || !zg_config_is_whole(tp->cfg)) continue;
            double a = f->L[hi] - f->opt[i].time, z = f->L[lo] + tp->time;
            double mx = a > z ? a : z;
            if (mx < bmax) bmax = mx, bi = i, btp = tp;
        }
        if (bi < 0) break;
        // unlink from hi, undo its load, place it on lo
        if (prv[bi] >= 0) nxt[prv[bi]] = nxt[bi];
        else head[hi] = nxt[bi];
        if (nxt[bi] >= 0) prv[nxt[bi]] = prv[bi];
        f->L[hi] -= f->opt[bi].time, f->H[hi] -= f->opt[bi].mem;
        seg_refresh(&f->t, f->L, f->H, hi, 1);
        mark(f, hi, 1);
        put(f, bi, btp, lo);
        nxt[bi] = head[lo], prv[bi] = -1;
        if (head[lo] >= 0) prv[head[lo]] = bi;
        head[lo] = bi;
        moves++;
    }
    (void)b;
    free(head);
    return moves;
}

// Anchor iff above the catalog cut, without a whole option, or (beyond the paper, for sparse
// batches: a few sequences per rank) whole-slower than the lower bound, where running it whole
// would stick out above every rank's level.
static int is_anchor(const zel_tclass *c, const zel_fast_stats *stats) {
    return stats->cut < 0 || !c->has_whole || c->whole_time > stats->cut ||
           c->whole_time > stats->lower_bound;
}

// One greedy pass from empty ranks with anchor target `target`: anchors in descending whole
// price, each to its least-area block that finishes by the target (the level the fillers will
// top the ranks up to), else the earliest; fillers by the §5.3 heap rule (memory-first redo
// when it strands one); then the move local search. *bad = a sequence that fits nowhere.
static void run_once(fst *f, const zg_batch *b, double target, double F, double *L0, heap *h,
                     zel_fast_stats *stats, int64_t *bad) {
    const zel_tset *ts = f->ts;
    int32_t N = f->N;
    memset(f->L, 0, sizeof(double) * 2 * (size_t)N);
    seg_load(&f->t, f->L, f->H);
    mark(f, 0, N);
    stats->n_anchors = stats->n_split = 0;
    stats->memory_first = 0;
    *bad = -1;
    double t1 = zg_time_now();
    for (int32_t k = 0; k < ts->n_classes && *bad < 0; k++) {
        const zel_tclass *c = &ts->cls[k];
        if (!is_anchor(c, stats)) continue;
        for (int64_t j = 0; j < c->count; j++) {
            const zel_tpl *tp;
            int32_t s;
            if (!best_block(f, c, target, &tp, &s)) {
                *bad = c->members[j];
                break;
            }
            put(f, c->members[j], tp, s);
            stats->n_anchors++;
            stats->n_split += zg_config_degree(tp->cfg) > 1;
        }
    }
    double t2 = zg_time_now();
    stats->anchor_ms += (t2 - t1) * 1e3;
    if (*bad < 0) {
        memcpy(L0, f->L, sizeof(double) * 2 * (size_t)N);
        for (int mode = 0; mode < 2; mode++) {
            *bad = -1;
            if (mode) {
                memcpy(f->L, L0, sizeof(double) * 2 * (size_t)N);
                seg_load(&f->t, f->L, f->H);
                mark(f, 0, N);
                stats->memory_first = 1;
            }
            for (int32_t k = 0; k < ts->n_classes && *bad < 0; k++) {
                const zel_tclass *c = &ts->cls[k];
                if (is_anchor(c, stats)) continue;
                fill_class(f, c, F, mode, h, bad);
            }
            if (*bad < 0) break;
        }
    }
    double t3 = zg_time_now();
    stats->filler_ms += (t3 - t2) * 1e3;
    if (*bad >= 0) return;
    stats->ls_moves = local_search(f, b, 4 * (int64_t)N);
    stats->ls_ms += (zg_time_now() - t3) * 1e3;
    stats->makespan = f->t.mx[1];
}

// ---- lower bound --------------------------------------------------------------------------------

typedef struct bpt {
    double t;      // a template's time
    double area;   // its time * degree
    int32_t cls;
} bpt;

static int cmp_bpt(const void *pa, const void *pb) {
    const bpt *a = pa, *b = pb;
    if (a->t != b->t) return a->t < b->t ? -1 : 1;
    if (a->area != b->area) return a->area < b->area ? -1 : 1;
    return (a->cls > b->cls) - (a->cls < b->cls);
}

// Memory-blind lower bound with the makespan's own height cut: in a plan of makespan T every
// sequence runs an option of time <= T (its ranks' loads are at least that), so its area is at
// least A_c(T) = min{time * degree : template of its class with time <= T}, and the areas fit
// in N * T. LB = the least T >= max_c min_time_c with sum_c count_c A_c(T) <= N T. A_c is a
// nonincreasing staircase: sweep every template time ascending (O(P log P), P templates).
// Templates pruned as (time, memory)-dominated have no less area than a kept one on the same
// block, so they never lower A_c. Returns INFINITY only if a class has no template.
static double area_cut_bound(const zel_tset *ts, zg_error *err, int *nomem) {
    int64_t P = 0;
    for (int32_t k = 0; k < ts->n_classes; k++) P += ts->cls[k].n_stair;
    bpt *v = malloc(sizeof(bpt) * (size_t)(P + 1));
    double *cur = malloc(sizeof(double) * (size_t)(ts->n_classes + 1));
    if (!v || !cur) {
        free(v), free(cur);
        *nomem = 1;
        zg_error_set(err, ZG_ERR_NOMEM, "zellige: out of memory (lower bound)");
        return INFINITY;
    }
    int64_t n = 0;
    // Only each class's staircase (templates that lower its running least area in (time, area)
    // order; fast/cache.c) can change A, and skipping the others gives the same bound: between
    // two staircase times A is constant, so T = max(A / N, t) is found at the same value.
    for (int32_t k = 0; k < ts->n_classes; k++) {
        const zel_tclass *c = &ts->cls[k];
        for (int32_t i = 0; i < c->n_stair; i++)
            v[n++] = (bpt){c->stair[2 * i], c->stair[2 * i + 1], k};
        cur[k] = INFINITY;
    }
    qsort(v, (size_t)n, sizeof(bpt), cmp_bpt);
    double lb = INFINITY, A = 0;
    int32_t missing = ts->n_classes;
    for (int64_t i = 0; i < n;) {
        double t = v[i].t;
        for (; i < n && v[i].t == t; i++) {  // every template of time t joins
            int32_t k = v[i].cls;
            if (v[i].area < cur[k]) {
                if (cur[k] == INFINITY) missing--;
                else A -= (double)ts->cls[k].count * cur[k];
                cur[k] = v[i].area;
                A += (double)ts->cls[k].count * cur[k];
            }
        }
        if (missing) continue;
        double next = i < n ? v[i].t : INFINITY;
        double T = A / ts->N > t ? A / ts->N : t;  // least feasible T on [t, next)
        if (T < next) {
            lb = T;
            break;
        }
    }
    free(v), free(cur);
    return lb;
}

// ---- the planner -------------------------------------------------------------------------------

// Catalog cut over the classes' whole prices (zel_cut_threshold reads bucket and whole_time).
static zg_status fast_cut(const zg_plan_ctx *ctx, const zg_batch *b, const zel_tset *ts,
                          double *cut, zg_error *err) {
    zg_problem pr;
    memset(&pr, 0, sizeof pr);
    pr.world_size = ts->N;
    pr.n_groups = ts->n_classes;
    pr.groups = calloc((size_t)ts->n_classes + 1, sizeof(zg_group));
    if (!pr.groups) return zg_error_set(err, ZG_ERR_NOMEM, "zellige: out of memory");
    for (int32_t k = 0; k < ts->n_classes; k++) {
        const zg_seq *s = &b->seqs[ts->cls[k].rep];
        pr.groups[k].tokens = s->tokens;
        memcpy(pr.groups[k].bucket, s->bucket, ZG_BUCKET_NAME_MAX);
        pr.groups[k].bucket[ZG_BUCKET_NAME_MAX - 1] = '\0';
        pr.groups[k].whole_time = ts->cls[k].whole_time;
        pr.groups[k].count = ts->cls[k].count;
    }
    zg_status st = zel_cut_threshold(ctx, &pr, cut, err);
    free(pr.groups);
    return st;
}

zg_status zel_fast_plan(const zg_plan_ctx *ctx, const zg_batch *b, zg_plan *out,
                        zel_fast_stats *stats, zg_error *err) {
    return zel_fast_plan_cached(ctx, b, NULL, out, stats, err);
}

zg_status zel_fast_plan_cached(const zg_plan_ctx *ctx, const zg_batch *b, zel_cache *cache,
                               zg_plan *out, zel_fast_stats *stats, zg_error *err) {
    zel_fast_stats dummy;
    if (!stats) stats = &dummy;
    memset(stats, 0, sizeof *stats);
    double t0 = zg_time_now();
    zel_tset ts;
    zg_status st = zel_tset_build_cached(ctx, b, cache, &ts, err);
    if (st) return st;
    stats->n_priced = ts.n_priced;
    for (int32_t k = 0; k < ts.n_classes; k++) {
        if (ts.cls[k].n_priced) stats->cache_misses++;
        else stats->cache_hits++;
    }
    double t1 = zg_time_now(); (void)t1;
    stats->build_ms = (t1 - t0) * 1e3;
    int32_t N = ts.N;
    fst f;
    memset(&f, 0, sizeof f);
    f.ts = &ts, f.N = N, f.cap = ts.mem_room;
    double *L0 = NULL;
    heap h = {0};
    int64_t bad = -1;
    f.L = calloc(4 * (size_t)N, sizeof(double));
    f.opt = calloc((size_t)b->n + 1, sizeof(zg_option));
    f.oidx = malloc(sizeof(int32_t) * (size_t)(ts.n_degs * ts.rpn + 1));
    h.r = malloc(sizeof(int32_t) * (size_t)N);
    h.key = malloc(sizeof(double) * (size_t)N);
    int32_t levels = zel_rmq_levels(N > 0 ? N : 1);
    double *rbuf = malloc(sizeof(double) * 2 * (size_t)levels * (size_t)(N > 0 ? N : 1));
    int32_t *rlog = malloc(sizeof(int32_t) * ((size_t)N + 2));
    f.rl = (zel_rmq){N, levels, rbuf, rlog};
    f.rh = (zel_rmq){N, levels, rbuf ? rbuf + (size_t)levels * (size_t)N : NULL, rlog};
    f.dlo = 0, f.dhi = N;
    if (!f.L || !f.opt || !f.oidx || !h.r || !h.key || !rbuf || !rlog || !seg_init(&f.t, N)) {
        st = zg_error_set(err, ZG_ERR_NOMEM, "zellige: out of memory (fast path)");
        goto done;
    }
    f.H = f.L + N, L0 = f.H + N;
    zel_rmq_init_log(&f.rl);
    for (int32_t di = 0; di < ts.n_degs; di++)
        for (int32_t o = 0; o < ts.rpn; o++) f.oidx[di * ts.rpn + o] = -1;
    for (int32_t di = 0; di < ts.n_degs; di++)
        for (int32_t k = 0; k < ts.degs[di].n_offs; k++)
            f.oidx[di * ts.rpn + ts.degs[di].offs[k]] = k;
    seg_load(&f.t, f.L, f.H);

    // lower bound (ignores memory): every sequence's fastest time; total least area / N
    double area = 0, F = 0;
    for (int32_t k = 0; k < ts.n_classes; k++) {
        const zel_tclass *c = &ts.cls[k];
        area += (double)c->count * c->min_area;
        F += (double)c->count * c->whole_time;
        if (c->min_time > stats->lower_bound) stats->lower_bound = c->min_time;
    }
    if (area / N > stats->lower_bound) stats->lower_bound = area / N;
    {
        int nomem = 0;
        double lbc = area_cut_bound(&ts, err, &nomem);
        if (nomem) {
            st = ZG_ERR_NOMEM;
            goto done;
        }
        if (lbc < INFINITY && lbc > stats->lower_bound) stats->lower_bound = lbc;
    }
    F /= N;
    if ((st = fast_cut(ctx, b, &ts, &stats->cut, err))) goto done;

    // greedy passes over a ladder of anchor targets above the lower bound; the fastest plan
    // wins (ties: the lower target). Deterministic: the ladder is fixed.
    static const double ladder[] = {1.0, 1.01, 1.03, 1.06, 1.1, 1.2};
    double best = INFINITY;
    zel_fast_stats keep = *stats;
    zg_option *bopt = malloc(sizeof(zg_option) * (size_t)(b->n + 1));
    if (!bopt) {
        st = zg_error_set(err, ZG_ERR_NOMEM, "zellige: out of memory (fast path)");
        goto done;
    }
    for (size_t q = 0; q < sizeof ladder / sizeof ladder[0]; q++) {
        run_once(&f, b, stats->lower_bound * ladder[q], F, L0, &h, stats, &bad);
        if (bad >= 0) continue;
        if (stats->makespan < best * (1 - ZEL_STRICT)) {
            best = stats->makespan;
            keep = *stats;
            memcpy(bopt, f.opt, sizeof(zg_option) * (size_t)b->n);
        }
    }
    if (best < INFINITY) {
        double am = stats->anchor_ms, fm = stats->filler_ms, lm = stats->ls_ms;
        *stats = keep;
        stats->anchor_ms = am, stats->filler_ms = fm, stats->ls_ms = lm;
        memcpy(f.opt, bopt, sizeof(zg_option) * (size_t)b->n);
        bad = -1;
    }
    free(bopt);
    if (bad >= 0) {
        const zg_seq *s = &b->seqs[bad];
        char cb[32], bb[32];
        st = zg_error_set(err, ZG_ERR_INFEASIBLE,
                          "zellige: sequence %lld (%lld tokens) fits on no rank: every option "
                          "needs more memory than the ranks have left (cap %s per rank, base "
                          "%s included); lower the load per rank",
                          (long long)s->id, (long long)s->tokens,
                          zg_fmt_bytes(ts.mem_cap, cb, sizeof cb),
                          zg_fmt_bytes(ts.mem_base, bb, sizeof bb));
        goto done;
    }

    if ((st = zg_plan_alloc(out, b->n, N, err))) goto done;
    snprintf(out->policy, sizeof out->policy, "zellige");
    out->mem_cap = ts.mem_cap;
    out->mem_base = ts.mem_base;
    for (int64_t i = 0; i < b->n && !st; i++)
        st = zg_plan_set_option(out, i, &b->seqs[i], i, &f.opt[i], err);
    if (st) goto done;
    out->makespan = stats->makespan;
    out->lower_bound = stats->lower_bound;
    out->optimal = 0;
    snprintf(out->summary, sizeof out->summary,
             "fast path (%d ranks): cut %.4g s, %lld anchors (%lld split), greedy + %lld "
             "local-search moves; certified gap %.3f%% to the lower bound %.6g s (memory "
             "ignored)%s",
             N, stats->cut, (long long)stats->n_anchors, (long long)stats->n_split,
             (long long)stats->ls_moves,
             100 * (stats->makespan / stats->lower_bound - 1), stats->lower_bound,
             stats->memory_first ? "; fillers placed memory-first" : "");
done:
    free(f.L), free(f.opt), free(f.oidx), free(f.t.mx), free(h.r), free(h.key);
    free(rbuf), free(rlog);
    zel_tset_free(&ts);
    return st;
}
