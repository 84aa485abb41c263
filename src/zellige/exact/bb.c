// exact/bb.c — exact depth-first branch-and-bound over ECF counts for the min-max model.
//
// Units are placed group by group; inside a group the option index never decreases, so every
// ECF count vector u_{g,o} is visited exactly once (no permutation symmetry). At each node:
//   * every remaining group must still have an option that fits (memory on its block, and load
//     below the incumbent / the cap) -> else prune;
//   * lower bound = max(current max load, for each remaining group the lowest block-max + price
//     over its fitting options, (current total load + sum of remaining counts x cheapest
//     fitting area) / N)  -> prune if >= incumbent (min-max phase);
//   * memory-aware model (phase 1): children whose area term already reaches the incumbent are
//     dropped when they are generated (skip_child), not entered. The cover bound
//     (exact/bound_cover.c) is no longer evaluated per node: once those children are gone it cost
//     more than it saved; stage1/anchor.c still uses it for
//     the reported bound when the node budget ends a search;
//   * split phase: units that cannot go whole (by per-rank capacity counting) must split ->
//     prune if current splits + that count >= incumbent;
//   * rank-tile symmetries (swap two equal tiles whose option sets map onto each other) and the
//     reflection r -> N-1-r of the world (when every option maps onto one): when
//     the state at a group's start is invariant under a swap, only the lexicographically
//     smaller of {M_g, swap(M_g)} is kept (M_g = the group's option multiset). The image of an
//     optimal completion under the swap is an optimal completion, so an optimum survives.
// Everything is exact: pruning only discards subtrees that provably hold no better solution.
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zellige/internal.h"
#include "zellige/rmq.h"

typedef struct cand {
    double k1, k2;
    int32_t o, cls;
} cand;

// A run of consecutive whole rank blocks of one degree (at most CHUNK options unless one block
// has more): the children scan tests the run's least and largest area first, and most runs are
// decided whole for skip_child (all skipped, or none).
enum { CHUNK = 32 };
typedef struct chunk {
    int32_t b0, b1;   // blocks [b0, b1) of the group
    int32_t j0, j1;   // options [j0, j1)
    int32_t split, degree;  // (one degree)
    double min_a, max_a;
} chunk;

typedef struct bb {
    const zel_model *m;
    int phase;     // 1 = min T, 2 = min K under tcap
    double tcap;
    zel_sol *best;
    int32_t *cur;
    double *L, *H, sumL;
    int64_t kcur;
    zel_rmq rl, rh;
    cand *cs;
    size_t cs_n, cs_cap;
    cand *ctmp;     // max group n_opts: cand_sort's buffer
    uint8_t *inv;   // n_grps x n_sym
    int32_t *tmp;   // max group count
    double *scr;    // 2 * n_ranks scratch for the fluid model
    int64_t nodes, max_nodes;
    int64_t skipped;  // children dropped by skip_child: ZEL_SKIP_PER_NODE of them count as a node
    double t0, time_limit;
    int64_t clock_mask;  // the clock is read when (nodes & clock_mask) == 0
    int stop, oom;
    double gap;     // phase 1 prunes subtrees whose bound is >= best * (1 - gap)
    int fl_on;      // the fluid-loss terms below are set (memory-aware model with fluid area)
    double *gfl;    // per group: its least fluid loss over all options
    double fl_rest; // node_bound: remaining units' least fluid loss, excluding unit u
    zel_fluid_ctx fc;  // the children's fluid bound (fc_ok: allocated)
    int fc_ok;
    double **suf;   // per group, per option j: min over options >= j of area (suf[g]) and of
                    // the fluid loss (suf[g] + n_opts); NULL: off. The fluid loss of option j
                    // is the least d*min(t, tau*m) over options j.. of its block.
    chunk **ck;     // per group: its options in runs of whole blocks of one degree
    int32_t *n_ck;  // per group: chunks
    int cs_own;     // cs was malloc'ed (else it lies in the call's buffer)
    int32_t dlo, dhi;  // ranks [dlo, dhi) changed since the rl / rh tables were made
} bb;

static double cap_of(const bb *c) {
    return c->phase == 1 ? c->best->T * (1 - c->gap) : c->tcap * (1 + ZEL_STRICT);
}
// Usable block result e under the current phase.
static int fits(const bb *c, double e, double lim) { return c->phase == 1 ? e < lim : e <= lim; }

// Children order: class, then k1, then k2, then the option index (a total order).
static inline int cand_less(const cand *a, const cand *b) {
    if (a->cls != b->cls) return a->cls < b->cls;
    if (a->k1 != b->k1) return a->k1 < b->k1;
    if (a->k2 != b->k2) return a->k2 < b->k2;
    return a->o < b->o;
}

// Sorts a[0..n) by cand_less (a total order: the option index breaks every tie, so any
// correct sort gives the same array as the qsort it replaces). Insertion sort on runs of 16,
// then bottom-up merges through tmp (n entries); inlined comparisons instead of qsort's
// indirect calls.
static void cand_sort(cand *a, size_t n, cand *tmp) {
    enum { RUN = 16 };
    for (size_t lo = 0; lo < n; lo += RUN) {
        size_t hi = lo + RUN < n ? lo + RUN : n;
        for (size_t i = lo + 1; i < hi; i++) {
            cand x = a[i];
            size_t j = i;
            for (; j > lo && cand_less(&x, &a[j - 1]); j--) a[j] = a[j - 1];
            a[j] = x;
        }
    }
    cand *src = a, *dst = tmp;
    for (size_t w = RUN; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) dst[k++] = cand_less(&src[j], &src[i]) ? src[j++] : src[i++];
            while (i < mid) dst[k++] = src[i++];
            while (j < hi) dst[k++] = src[j++];
        }
        cand *t = src;
        src = dst, dst = t;
    }
    if (src != a) memcpy(a, src, sizeof *a * n);
}

// Ranks of o's block changed since the range-maximum tables were last brought up to date.
static inline void mark_dirty(bb *c, const zel_opt *o) {
    if (o->start < c->dlo) c->dlo = o->start;
    if (o->start + o->degree > c->dhi) c->dhi = o->start + o->degree;
}

static void apply(bb *c, const zel_opt *o, double sign) {
    for (int32_t r = o->start; r < o->start + o->degree; r++) {
        c->L[r] += sign * o->time;
        c->H[r] += sign * o->mem;
    }
    c->sumL += sign * o->area;
    c->kcur += sign > 0 ? o->split : -o->split;
    mark_dirty(c, o);
}

// 1 if the group's option multiset v[0..n) (sorted) is <= its image under symmetry y.
static int canonical(bb *c, const zel_sym *y, int32_t gi, const int32_t *v, int64_t n) {
    int32_t *w = c->tmp;
    for (int64_t i = 0; i < n; i++) {  // insertion sort: groups are small where this runs
        int32_t x = y->map[gi][v[i]];
        int64_t j = i;
        while (j > 0 && w[j - 1] > x) {
            w[j] = w[j - 1];
            j--;
        }
        w[j] = x;
    }
    for (int64_t i = 0; i < n; i++)
        if (v[i] != w[i]) return v[i] < w[i];
    return 1;
}

static void leaf(bb *c) {
    const zel_model *m = c->m;
    double t = zel_objective(m, c->L, c->H, c->scr);
    if (c->phase == 1) {
        if (t < c->best->T * (1 - ZEL_REL_TOL)) {
            memcpy(c->best->opt, c->cur, sizeof(int32_t) * (size_t)m->n_units);
            c->best->T = t;
            c->best->K = c->kcur;
        }
    } else if (c->kcur < c->best->K && t <= c->tcap * (1 + ZEL_STRICT)) {
        memcpy(c->best->opt, c->cur, sizeof(int32_t) * (size_t)m->n_units);
        c->best->T = t;
        c->best->K = c->kcur;
    }
}

// Bound at the node before unit u (group gi, options >= lo). Returns 0 to prune.
static int node_bound(bb *c, int64_t u, int32_t gi, int32_t lo) {
    const zel_model *m = c->m;
    int32_t N = m->n_ranks;
    double lim = cap_of(c), cap = m->mem_room;
    double lb = 0, area = c->sumL + m->extra_area;
    for (int32_t r = 0; r < N; r++)
        if (c->L[r] > lb) lb = c->L[r];
    int64_t klb = 0;
    double fl_rem = 0, fl_u = 0;
    if (!fits(c, lb, lim)) return 0;
    for (int32_t g = gi; g < m->n_grps; g++) {
        const zel_grp *G = &m->grps[g];
        int64_t rem = g == gi ? m->unit0[g + 1] - u : G->count;
        int32_t o0 = g == gi ? lo : 0;
        double best_e = INFINITY, min_area = INFINITY, min_fl = INFINITY;
        int64_t wcap = 0;
        if (c->fl_on && g > gi && c->phase == 1) {
            // later groups: their static least area / fluid loss (a weaker, cheaper bound)
            area += (double)rem * G->min_area;
            fl_rem += (double)rem * c->gfl[g];
            continue;
        }
        if (c->suf && g == gi && c->phase == 1) {
            // the current group too, over its options >= lo: feasibility and the block
            // maxima are left to the children (which check every option)
            area += (double)rem * c->suf[g][o0];
            min_fl = c->suf[g][G->n_opts + o0];
            fl_rem += (double)rem * min_fl;
            fl_u = min_fl;
            continue;
        }
        // Split phase, memory-aware model: static least area / fluid loss over options >= o0,
        // and only the whole blocks are scanned (for the split count bound); the children
        // check every option's fit.
        int quick = c->suf && c->phase == 2;
        if (quick) {
            area += (double)rem * c->suf[g][o0];
            min_fl = c->suf[g][G->n_opts + o0];
            fl_rem += (double)rem * min_fl;
            if (g == gi) fl_u = min_fl;
            if (G->n_whole == 0) klb += rem;  // no whole option: every unit splits
        }
        // Per block, options run time-ascending / memory-descending (Pareto): the first one
        // that fits the memory has the block's lowest time and so its lowest e and area.
        for (int32_t bk = 0; bk < G->n_blocks; bk++) {
            int32_t j0 = G->blk[bk], j1 = G->blk[bk + 1];
            if (quick && j0 >= G->n_whole) break;  // whole blocks come first
            if (j1 <= o0) continue;
            if (j0 < o0) j0 = o0;
            const zel_opt *f = &G->opts[j0];
            double hm = zel_rmq_max(&c->rh, f->start, f->degree);
            int32_t j = j0;
            while (j < j1 && hm + G->opts[j].mem > cap) j++;
            if (j == j1) continue;
            const zel_opt *o = &G->opts[j];
            double e = zel_rmq_max(&c->rl, o->start, o->degree) + o->time;
            if (!fits(c, e, lim)) continue;
            if (e < best_e) best_e = e;
            if (o->area < min_area) min_area = o->area;
            if (c->phase == 2 && !o->split && wcap < rem) {
                // units of this group that rank o->start can still take whole: at most the
                // room over the block's least time and over its least memory
                double room_t = lim - c->L[o->start], room_m = cap - c->H[o->start];
                double tmin = o->time, mmin = G->opts[j1 - 1].mem;
                double nt = tmin > 0 ? floor(room_t / tmin) : (double)rem;
                double nm = mmin > 0 ? floor(room_m / mmin) : (double)rem;
                double n1 = nt < nm ? nt : nm;
                wcap += n1 >= (double)rem ? rem : (int64_t)n1;
            }
        }
        if (quick) {
            if (G->n_whole > 0 && wcap < rem) klb += rem - wcap;
            continue;
        }
        if (best_e == INFINITY) return 0;
        if (best_e > lb) lb = best_e;
        area += (double)rem * min_area;  // (no fluid-loss terms here: those need suf)
        if (c->phase == 2 && wcap < rem) klb += rem - wcap;
    }
    c->fl_rest = fl_rem - fl_u;
    // The fluid bound last, and only when the other terms keep the node: the node is pruned
    // iff any term reaches lim (exceeds it in the split phase), whatever their order.
    if (c->phase == 1) {
        if (area / N > lb) lb = area / N;
        if (lb >= lim) return 0;
    } else if (area > (double)N * lim || lb > lim || c->kcur + klb >= c->best->K) {
        return 0;
    }
    if (m->fill_mem > 0) {
        double f0 = zel_fluid_T_more(m, c->L, c->H, fl_rem);
        if (c->phase == 1 ? f0 >= lim : f0 > lim) return 0;
    }
    return 1;
}

// 1 if the child "unit u takes option j (o)" is an inner node that node_bound would prune on
// its area term in the min-T phase, or on its area or no-whole-option split count in the split
// phase (the same terms as node_bound's, memory-aware model; the later groups' part is summed
// once per node). Such a child is dropped when the children are generated, before its block
// maxima and fluid key, like a child whose key reaches the incumbent: it is not a node. Most
// nodes of an 8-rank proof were such children (entered only to be pruned); the nodes that
// remain, their order and every incumbent are the same as before (up to rounding in the
// reassociated sum), so a search that completes returns the same solution.
// Node budget accounting: a dropped child costs an area sum (no block maxima, no fluid key,
// no node set-up), so ZEL_SKIP_PER_NODE of them count as one node against max_nodes; the reported
// node count stays the nodes entered. Not counting them at all let the budget-limited 16 / 32-
// rank searches run 1.3-1.6x longer; 4 or 16 per node cut their real search so much that plans
// got worse (up to +14 % / +1.8 % makespan on single 32xA6000 batches); 64 was faster than
// before and as good or better on 116 of 120 batches.

typedef struct skipper {
    int on, same;      // on: the test applies; same: unit u + 1 is in u's group
    double r1, rest;   // units of the next unit's group left; later groups' least area
    int64_t k;         // split phase: splits so far + units of groups without a whole option
    const double *suf; // least area over options >= j of the next unit's group
} skipper;

static void skip_prep(const bb *c, int64_t u, int32_t gi, skipper *sk) {
    const zel_model *m = c->m;
    sk->on = c->suf && u + 1 < m->n_units && (c->phase == 2 || c->fl_on);
    if (!sk->on) return;
    int32_t g1 = m->grp_of[u + 1];
    int64_t r1 = g1 == gi ? m->unit0[gi + 1] - (u + 1) : m->grps[g1].count;
    sk->same = g1 == gi;
    sk->r1 = (double)r1;
    sk->suf = c->suf[g1];
    sk->rest = 0;
    sk->k = c->kcur + (m->grps[g1].n_whole == 0 ? r1 : 0);
    for (int32_t g = g1 + 1; g < m->n_grps; g++) {
        sk->rest += (double)m->grps[g].count * (c->phase == 1 ? m->grps[g].min_area : c->suf[g][0]);
        if (m->grps[g].n_whole == 0) sk->k += m->grps[g].count;
    }
}

// skip_child's test for an option of area a and split flag `split` whose next unit's least
// area is s. Non-decreasing in a and in s (each rounded operation is monotone), so a test on
// the least (largest) a and s of a run of options holds for all (none) of them.
static inline int skip_test(const bb *c, const skipper *sk, double a, double s, int32_t split,
                            double lim) {
    double area = c->sumL + a + c->m->extra_area + sk->r1 * s + sk->rest;
    if (c->phase == 1) return area / c->m->n_ranks >= lim;
    return area > (double)c->m->n_ranks * lim || sk->k + split >= c->best->K;
}

static inline int skip_child(const bb *c, const skipper *sk, int32_t j, const zel_opt *o,
                             double lim) {
    if (!sk->on) return 0;
    return skip_test(c, sk, o->area, sk->suf[sk->same ? j : 0], o->split, lim);
}

// Brings the range-maximum tables of L and H up to date: a refresh of the entries over the
// ranks changed since the last call (apply's blocks, one range) when that range covers at most
// 3/4 of the ranks, else a full build. Maxima are exact: the same tables either way.
static void maxima_build(bb *c) {
    int32_t N = c->m->n_ranks;
    if (c->dlo >= c->dhi) return;  // nothing changed
    if (4 * (c->dhi - c->dlo) <= 3 * N) {
        zel_rmq_update(&c->rl, c->L, c->dlo, c->dhi);
        zel_rmq_update(&c->rh, c->H, c->dlo, c->dhi);
    } else {
        zel_rmq_build(&c->rl, c->L);
        zel_rmq_build(&c->rh, c->H);
    }
    c->dlo = N, c->dhi = 0;
}

// The chunk of group gi holding option lo (lo < n_opts).
static int32_t chunk_of(const bb *c, int32_t gi, int32_t lo) {
    const chunk *ck = c->ck[gi];
    int32_t a = 0, b = c->n_ck[gi] - 1;
    while (a < b) {
        int32_t mid = a + (b - a + 1) / 2;
        if (ck[mid].j0 <= lo)
            a = mid;
        else
            b = mid - 1;
    }
    return a;
}

static void node(bb *c, int64_t u) {
    const zel_model *m = c->m;
    if (c->stop) return;
    c->nodes++;
    if (c->max_nodes > 0 && c->nodes + c->skipped / ZEL_SKIP_PER_NODE > c->max_nodes) {
        c->stop = 1;
        return;
    }
    if (c->time_limit > 0 && (c->nodes & c->clock_mask) == 0 &&
        zg_time_now() - c->t0 > c->time_limit) {
        c->stop = 1;
        return;
    }
    if (u == m->n_units) {
        leaf(c);
        return;
    }
    int32_t gi = m->grp_of[u];
    const zel_grp *G = &m->grps[gi];
    int64_t first = m->unit0[gi], last = m->unit0[gi + 1] - 1;
    int32_t lo = u == first ? 0 : c->cur[u - 1];
    if (u == first) {
        for (int32_t k = 0; k < m->n_sym; k++) {
            const zel_sym *y = &m->sym[k];
            int inv = 1;
            if (y->rev)
                for (int32_t i = 0; i < m->n_ranks / 2 && inv; i++)
                    inv = c->L[i] == c->L[m->n_ranks - 1 - i] &&
                          c->H[i] == c->H[m->n_ranks - 1 - i];
            else
                for (int32_t i = 0; i < y->s && inv; i++)
                    inv = c->L[y->a + i] == c->L[y->a + y->s + i] &&
                          c->H[y->a + i] == c->H[y->a + y->s + i];
            c->inv[(size_t)gi * (size_t)m->n_sym + (size_t)k] = (uint8_t)inv;
        }
    }
    // Block maxima for the children (and the bound's block scan). In phase 1 with the static
    // per-group terms (suf, gfl) the bound reads no block maximum, so the tables are built only
    // for nodes the bound keeps.
    int late = c->phase == 1 && c->suf && c->gfl;
    if (!late) {
        maxima_build(c);
    }
    if (!node_bound(c, u, gi, lo)) return;
    if (late) {
        maxima_build(c);
    }

    // Children: options >= lo that fit, best first.
    double lim = cap_of(c);
    skipper sk = {0, 0, 0, 0, 0, NULL};
    skip_prep(c, u, gi, &sk);
    int fc_set = 0;
    size_t base = c->cs_n;
    if (c->cs_cap - c->cs_n < (size_t)G->n_opts) {
        size_t nc = c->cs_cap * 2 + (size_t)G->n_opts;
        cand *ns = c->cs_own ? realloc(c->cs, sizeof(cand) * nc) : malloc(sizeof(cand) * nc);
        if (!ns) {
            c->oom = c->stop = 1;
            return;
        }
        if (!c->cs_own) memcpy(ns, c->cs, sizeof(cand) * c->cs_n);
        c->cs = ns, c->cs_cap = nc, c->cs_own = 1;
    }
    // By chunk (runs of whole blocks of one degree), then by block. Inside a block the options
    // run time-ascending / memory-descending (stage1/model.c's Pareto front), so area-ascending:
    // the skipped children are a suffix of the block (skip_test grows with the area and with
    // the least area over options >= j), the ones over the memory a prefix and the ones whose
    // block maximum + time misses lim a suffix. A chunk whose least area is skipped is skipped
    // whole; one whose largest area is not has no skipped option. Block maxima are read once
    // per block (the loads first: the time test fails far more often than the memory one), and
    // only the options left get a fluid key, which stops once it is above lim (the child is
    // dropped either way): the same children, keys and skip count as testing every option in
    // turn.
    const chunk *ck = c->ck[gi];
    for (int32_t q = lo > 0 ? chunk_of(c, gi, lo) : 0; q < c->n_ck[gi]; q++) {
        const chunk *K = &ck[q];
        int32_t jlo = K->j0 > lo ? K->j0 : lo;
        int none = 1;  // no option of the chunk is skipped
        if (sk.on) {
            double s_lo = sk.suf[sk.same ? jlo : 0], s_hi = sk.suf[sk.same ? K->j1 - 1 : 0];
            if (skip_test(c, &sk, K->min_a, s_lo, K->split, lim)) {
                c->skipped += K->j1 - jlo;
                continue;
            }
            none = !skip_test(c, &sk, K->max_a, s_hi, K->split, lim);
        }
        for (int32_t bk = K->b0; bk < K->b1; bk++) {
            int32_t j0 = G->blk[bk], j1 = G->blk[bk + 1];
            if (j1 <= lo) continue;
            if (j0 < lo) j0 = lo;
            int32_t js = j1;  // first skipped option of the block
            if (!none) {
                if (skip_child(c, &sk, j0, &G->opts[j0], lim)) {
                    c->skipped += j1 - j0;
                    continue;
                }
                int32_t a = j0 + 1;
                while (a < js) {
                    int32_t mid = a + (js - a) / 2;
                    if (skip_child(c, &sk, mid, &G->opts[mid], lim))
                        js = mid;
                    else
                        a = mid + 1;
                }
                c->skipped += j1 - js;
            }
            const zel_opt *f = &G->opts[j0];
            double lm = zel_rmq_max(&c->rl, f->start, f->degree);
            if (!fits(c, lm + f->time, lim)) continue;  // the block's fastest option misses lim
            double hm = zel_rmq_max(&c->rh, f->start, f->degree);
            int32_t j = j0;
            while (j < js && hm + G->opts[j].mem > m->mem_room) j++;
            for (; j < js; j++) {
                const zel_opt *o = &G->opts[j];
                double e = lm + o->time;
                if (!fits(c, e, lim)) break;  // the rest of the block is slower
                if (m->fill_mem > 0) {
                    // memory-aware order (and bound): the fluid T once this option is placed
                    double fl;
                    if (c->fc_ok) {
                        if (!fc_set) zel_fluid_ctx_set(&c->fc, m, c->L, c->H), fc_set = 1;
                        // (a key above lim drops the child whatever its value)
                        fl = zel_fluid_T_child_cut(&c->fc, m, c->L, c->H, o, c->fl_rest, lim);
                    } else {
                        for (int32_t r = o->start; r < o->start + o->degree; r++)
                            c->L[r] += o->time, c->H[r] += o->mem;
                        fl = zel_fluid_T_more(m, c->L, c->H, c->fl_rest);
                        for (int32_t r = o->start; r < o->start + o->degree; r++)
                            c->L[r] -= o->time, c->H[r] -= o->mem;
                        mark_dirty(c, o);  // (the round trip may change the last bits)
                    }
                    if (fl > e) e = fl;
                    if (!fits(c, e, lim)) continue;
                }
                c->cs[c->cs_n++] = (cand){e, o->area, j, c->phase == 2 ? o->split : 0};
            }
        }
    }
    size_t n = c->cs_n - base;
    cand_sort(c->cs + base, n, c->ctmp);
    for (size_t i = 0; i < n && !c->stop; i++) {
        cand cd = c->cs[base + i];
        if (!fits(c, cd.k1, cap_of(c))) {
            if (c->phase == 1) break;  // sorted by e: the rest do not fit the new incumbent
            continue;
        }
        const zel_opt *o = &G->opts[cd.o];
        c->cur[u] = cd.o;
        if (u == last && m->n_sym) {
            int ok = 1;
            for (int32_t k = 0; k < m->n_sym && ok; k++)
                if (c->inv[(size_t)gi * (size_t)m->n_sym + (size_t)k])
                    ok = canonical(c, &m->sym[k], gi, c->cur + first, last - first + 1);
            if (!ok) continue;
        }
        if (skip_child(c, &sk, cd.o, o, cap_of(c))) continue;  // the incumbent improved
        apply(c, o, 1);
        node(c, u + 1);
        apply(c, o, -1);
        if (c->phase == 2 && c->kcur >= c->best->K) break;
    }
    c->cs_n = base;
}

// Carves n bytes (16-aligned) off *p.
static void *carve(char **p, size_t n) {
    void *r = *p;
    *p += (n + 15) & ~(size_t)15;
    return r;
}

// Per group: the fluid loss and area suffix minima (suf, gfl; fl_on) and the chunks. One pass
// backwards over the options: the fluid loss of option j is the least d*min(t, tau*m) over
// options j.. of its block, suf[j] / suf[n + j] the least area / fluid loss over options >= j,
// gfl the least fluid loss of the group (= suf[n], the same minimum).
static void tables_build(bb *c, const zel_model *m) {
    double tau = c->fl_on ? zel_mem_area(m) / m->fill_mem : 0;
    for (int32_t i = 0; i < m->n_grps; i++) {
        const zel_grp *G = &m->grps[i];
        int32_t n = G->n_opts;
        if (c->fl_on) {
            double *p = c->suf[i];
            for (int32_t bk = G->n_blocks - 1; bk >= 0; bk--) {
                int32_t e = G->blk[bk + 1];
                double fb = 0;  // the block's least fluid loss over options j + 1 ..
                for (int32_t j = e - 1; j >= G->blk[bk]; j--) {
                    const zel_opt *o = &G->opts[j];
                    double v = o->degree * (o->time < tau * o->mem ? o->time : tau * o->mem);
                    double f = j + 1 < e && fb < v ? fb : v;
                    fb = f;
                    double a = o->area;
                    p[j] = j + 1 < n && p[j + 1] < a ? p[j + 1] : a;
                    p[n + j] = j + 1 < n && p[n + j + 1] < f ? p[n + j + 1] : f;
                }
            }
            c->gfl[i] = n > 0 ? p[n] : INFINITY;
        }
        // chunks: a block's first option has its least time and area, its last the largest area
        chunk *ck = c->ck[i], *K = NULL;
        int32_t nc = 0;
        for (int32_t bk = 0; bk < G->n_blocks; bk++) {
            int32_t j0 = G->blk[bk], j1 = G->blk[bk + 1];
            const zel_opt *f = &G->opts[j0], *l = &G->opts[j1 - 1];
            if (!K || K->degree != f->degree || j1 - K->j0 > CHUNK) {
                K = &ck[nc++];
                *K = (chunk){bk, bk, j0, j0, f->split, f->degree, f->area, l->area};
            }
            K->b1 = bk + 1, K->j1 = j1;
            if (f->area < K->min_a) K->min_a = f->area;
            if (l->area > K->max_a) K->max_a = l->area;
        }
        c->n_ck[i] = nc;
    }
}

static zg_status run(const zel_model *m, int phase, double tcap, zel_sol *best,
                     const zel_limits *lim, zel_stats *st, zg_error *err) {
    int32_t N = m->n_ranks, ng = m->n_grps;
    bb c;
    memset(&c, 0, sizeof c);
    c.m = m, c.phase = phase, c.tcap = tcap, c.best = best;
    c.max_nodes = lim ? lim->max_nodes : 0;
    c.time_limit = lim ? lim->time_limit_s : 0;
    c.gap = lim && lim->rel_gap > ZEL_REL_TOL ? lim->rel_gap : ZEL_REL_TOL;
    c.t0 = zg_time_now();
    c.fl_on = m->fill_mem > 0 && zel_mem_area(m) > 0;
    int64_t maxc = 1;
    int32_t maxo = 1;
    size_t tot = 0, tot_blk = 0;
    for (int32_t i = 0; i < ng; i++) {
        const zel_grp *G = &m->grps[i];
        if (G->count > maxc) maxc = G->count;
        if (G->n_opts > maxo) maxo = G->n_opts;
        tot += (size_t)G->n_opts;
        tot_blk += (size_t)G->n_blocks;
    }
    // every 256 nodes, or every node where one looks at many options (1024xH100 with ~30 000
    // sequences: ~190 000 per group, 256 nodes took 0.6 s)
    c.clock_mask = tot > 65536 ? 0 : 255;
    int32_t levels = zel_rmq_levels(N > 0 ? N : 1);
    size_t tsz = (size_t)levels * (size_t)N, gp = (size_t)ng + 1;
    size_t cs0 = 2 * (size_t)maxo + 16;  // the children's first stack (grows on the heap)
    // One buffer for the call: rmq tables, L, H, scratch | suf, gfl | pointers | chunks |
    // candidates | ints | bytes (each part 16-aligned).
    size_t dbl = 2 * tsz + 4 * (size_t)N + 1 + (c.fl_on ? 2 * tot + 1 + gp : 0);
    size_t sz = 0;
    size_t parts[] = {sizeof(double) * dbl, 2 * sizeof(void *) * gp,
                      sizeof(chunk) * (tot_blk + 1), sizeof(cand) * ((size_t)maxo + cs0),
                      sizeof(int32_t) * ((size_t)N + 1), sizeof(int32_t) * ((size_t)m->n_units + 1),
                      sizeof(int32_t) * (size_t)maxc, sizeof(int32_t) * gp,
                      (size_t)ng * (size_t)m->n_sym + 1};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) sz += (parts[i] + 15) & ~(size_t)15;
    char *mem = malloc(sz), *p = mem;
    if (!mem) return zg_error_set(err, ZG_ERR_NOMEM, "zellige: out of memory in the exact search");
    double *buf = carve(&p, parts[0]);
    void **ptrs = carve(&p, parts[1]);
    chunk *cks = carve(&p, parts[2]);
    cand *cands = carve(&p, parts[3]);
    int32_t *lg = carve(&p, parts[4]);
    c.cur = carve(&p, parts[5]);
    c.tmp = carve(&p, parts[6]);
    int32_t *ints = carve(&p, parts[7]);
    c.inv = carve(&p, parts[8]);
    memset(c.inv, 0, parts[8]);
    c.ctmp = cands;
    c.cs = cands + maxo, c.cs_cap = cs0;
    c.rl = (zel_rmq){N, levels, buf, lg};
    c.rh = (zel_rmq){N, levels, buf + tsz, lg};
    zel_rmq_init_log(&c.rl);
    c.L = buf + 2 * tsz;
    c.H = c.L + N;
    c.scr = c.H + N;
    memcpy(c.L, m->base_load, sizeof(double) * (size_t)N);
    memcpy(c.H, m->base_mem, sizeof(double) * (size_t)N);
    for (int32_t r = 0; r < N; r++) c.sumL += m->base_load[r];
    c.ck = (chunk **)ptrs;
    c.n_ck = ints;
    for (int32_t i = 0; i < ng; i++) {
        c.ck[i] = cks;
        cks += m->grps[i].n_blocks;
    }
    if (c.fl_on) {
        double *sp = c.scr + 2 * (size_t)N + 1;
        c.suf = (double **)(ptrs + gp);
        for (int32_t i = 0; i < ng; i++) {
            c.suf[i] = sp;
            sp += 2 * (size_t)m->grps[i].n_opts;
        }
        c.gfl = sp + 1;
    }
    tables_build(&c, m);
    c.dlo = 0, c.dhi = N;  // no tables yet
    if (m->fill_mem > 0) c.fc_ok = zel_fluid_ctx_init(&c.fc, m);  // else the direct pass
    node(&c, 0);
    if (c.fc_ok) zel_fluid_ctx_free(&c.fc);
    if (c.cs_own) free(c.cs);
    free(mem);
    if (c.oom) return zg_error_set(err, ZG_ERR_NOMEM, "zellige: out of memory in the search");
    if (st) {
        st->nodes = c.nodes;
        st->complete = !c.stop;
        st->seconds = zg_time_now() - c.t0;
    }
    return ZG_OK;
}

zg_status zel_solve_minmax(const zel_model *m, zel_sol *best, const zel_limits *lim,
                           zel_stats *st, zg_error *err) {
    zel_stats s = {0};
    zg_status rc = run(m, 1, 0, best, lim, &s, err);
    if (rc || !st) return rc;  // (the root bound below only goes into *st)
    if (lim && lim->no_lb) {
        *st = s;
        return ZG_OK;
    }
    double root = zel_model_lower_bound(m);
    double gap = lim && lim->rel_gap > ZEL_REL_TOL ? lim->rel_gap : 0;
    s.lb = s.complete ? best->T * (1 - gap) : root;  // what the pruning (cap_of) proved
    if (s.complete && root > s.lb) s.lb = root;
    if (s.complete && best->T == INFINITY) s.lb = INFINITY;  // proven infeasible
    if (s.lb > best->T) s.lb = best->T;
    *st = s;
    return ZG_OK;
}

zg_status zel_solve_minsplit(const zel_model *m, double tcap, zel_sol *best,
                             const zel_limits *lim, zel_stats *st, zg_error *err) {
    zel_stats s = {0};
    zg_status rc = run(m, 2, tcap, best, lim, &s, err);
    if (rc) return rc;
    s.lb = s.complete ? (double)best->K : 0;
    if (st) *st = s;
    return ZG_OK;
}
