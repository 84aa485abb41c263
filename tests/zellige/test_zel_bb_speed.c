// test_zel_bb_speed.c — the exact branch-and-bound's constant-cost shortcuts (exact/bb.c: one
// buffer per call, per-chunk and per-block children scan, range maxima refreshed over the
// changed ranks only, fluid keys that stop above the incumbent, the fluid bound last in
// node_bound, no root bound without stats; exact/bound_fluid.c: block terms computed once per
// child) give exactly what the plain search gave before them: below, that search restated as
// it was (every option tested in turn, tables rebuilt per node, a full Newton solve per child),
// run side by side with zel_solve_minmax / zel_solve_minsplit on a few hundred random models:
// the same solution, T and K bit for bit, the same node count, completion flag and bound.
#include "zgtest.h"
#include "zel_testlib.h"
#include "zellige/rmq.h"

// ---- the reference: zel_fluid_T_child and exact/bb.c as they were ---------------------------------
// (comments dropped; docs/planner-zellige.md and the git history explain them)

static double ref_fluid_T_child(const zel_fluid_ctx *f, const zel_model *m, const double *L,
                         const double *H, const zel_opt *o, double more) {
    int32_t N = f->n, s = o->start, e = o->start + o->degree;
    double A0 = m->extra_area, X = m->fill_mem;
    if (A0 <= 0 || X <= 0 || N <= 0) return 0;
    double tau = f->tau, A = A0 + (more > 0 ? more : 0);
    double tot = f->tot, maxL = f->maxL;
    for (int32_t r = s; r < e; r++) {
        double c = m->mem_room - (H[r] + o->mem);
        tot += (c > 0 ? tau * c : 0) - f->tc[r];
        if (L[r] + o->time > maxL) maxL = L[r] + o->time;
    }
    if (tot < A * (1 - 1e-12)) return INFINITY;
    double T = maxL;
    for (int32_t it = 0; it <= N + 1; it++) {
        int32_t lo = 0, hi = N;
        while (lo < hi) {
            int32_t mid = (lo + hi) / 2;
            if (f->bs[mid] <= T)
                lo = mid + 1;
            else
                hi = mid;
        }
        int32_t k = lo;
        double h = f->pre_tc[k] + (double)(N - k) * T - (f->sumL - f->pre_L[k]);
        int32_t active = N - k;
        double next = INFINITY;
        for (int32_t i = k; i < N; i++) {
            if (f->rk[i] < s || f->rk[i] >= e) {
                next = f->bs[i];
                break;
            }
        }
        for (int32_t r = s; r < e; r++) {
            double b0 = L[r] + f->tc[r];
            if (b0 <= T) {
                h -= f->tc[r];
            } else {
                h -= T - L[r];
                active--;
            }
            double c = m->mem_room - (H[r] + o->mem);
            double tc = c > 0 ? tau * c : 0, l1 = L[r] + o->time, b1 = l1 + tc;
            if (b1 <= T) {
                h += tc;
            } else {
                h += T - l1;
                active++;
                if (b1 < next) next = b1;
            }
        }
        if (h >= A || active == 0) return T;
        double t = T + (A - h) / active;
        if (t <= next) return t;
        T = t;
    }
    return T;
}

typedef struct ref_cand {
    double k1, k2;
    int32_t o, cls;
} ref_cand;

typedef struct ref_bb {
    const zel_model *m;
    int phase;
    double tcap;
    zel_sol *best;
    int32_t *cur;
    double *L, *H, sumL;
    int64_t kcur;
    zel_rmq rl, rh;
    ref_cand *cs;
    size_t cs_n, cs_cap;
    ref_cand *ctmp;
    uint8_t *inv;
    int32_t *tmp;
    double *scr;
    int64_t nodes, max_nodes;
    int64_t skipped;
    double t0, time_limit;
    int stop, oom;
    double gap;
    double **sfl;
    double *gfl;
    double fl_rest;
    zel_fluid_ctx fc;
    int fc_ok;
    double **suf;
} ref_bb;

static double ref_cap_of(const ref_bb *c) {
    return c->phase == 1 ? c->best->T * (1 - c->gap) : c->tcap * (1 + 1e-12);
}
static int ref_fits(const ref_bb *c, double e, double lim) { return c->phase == 1 ? e < lim : e <= lim; }

static inline int ref_cand_less(const ref_cand *a, const ref_cand *b) {
    if (a->cls != b->cls) return a->cls < b->cls;
    if (a->k1 != b->k1) return a->k1 < b->k1;
    if (a->k2 != b->k2) return a->k2 < b->k2;
    return a->o < b->o;
}

static void ref_cand_sort(ref_cand *a, size_t n, ref_cand *tmp) {
    enum { RUN = 16 };
    for (size_t lo = 0; lo < n; lo += RUN) {
        size_t hi = lo + RUN < n ? lo + RUN : n;
        for (size_t i = lo + 1; i < hi; i++) {
            ref_cand x = a[i];
            size_t j = i;
            for (; j > lo && ref_cand_less(&x, &a[j - 1]); j--) a[j] = a[j - 1];
            a[j] = x;
        }
    }
    ref_cand *src = a, *dst = tmp;
    for (size_t w = RUN; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) dst[k++] = ref_cand_less(&src[j], &src[i]) ? src[j++] : src[i++];
            while (i < mid) dst[k++] = src[i++];
            while (j < hi) dst[k++] = src[j++];
        }
        ref_cand *t = src;
        src = dst, dst = t;
    }
    if (src != a) memcpy(a, src, sizeof *a * n);
}

static void ref_apply(ref_bb *c, const zel_opt *o, double sign) {
    for (int32_t r = o->start; r < o->start + o->degree; r++) {
        c->L[r] += sign * o->time;
        c->H[r] += sign * o->mem;
    }
    c->sumL += sign * o->area;
    c->kcur += sign > 0 ? o->split : -o->split;
}

static int ref_canonical(ref_bb *c, const zel_sym *y, int32_t gi, const int32_t *v, int64_t n) {
    int32_t *w = c->tmp;
    for (int64_t i = 0; i < n; i++) {
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

static void ref_leaf(ref_bb *c) {
    const zel_model *m = c->m;
    double t = zel_objective(m, c->L, c->H, c->scr);
    if (c->phase == 1) {
        if (t < c->best->T * (1 - ZEL_REL_TOL)) {
            memcpy(c->best->opt, c->cur, sizeof(int32_t) * (size_t)m->n_units);
            c->best->T = t;
            c->best->K = c->kcur;
        }
    } else if (c->kcur < c->best->K && t <= c->tcap * (1 + 1e-12)) {
        memcpy(c->best->opt, c->cur, sizeof(int32_t) * (size_t)m->n_units);
        c->best->T = t;
        c->best->K = c->kcur;
    }
}

static int ref_node_bound(ref_bb *c, int64_t u, int32_t gi, int32_t lo) {
    const zel_model *m = c->m;
    int32_t N = m->n_ranks;
    double lim = ref_cap_of(c), cap = m->mem_room;
    double lb = 0, area = c->sumL + m->extra_area;
    for (int32_t r = 0; r < N; r++)
        if (c->L[r] > lb) lb = c->L[r];
    int64_t klb = 0;
    double fl_rem = 0, fl_u = 0;
    if (!ref_fits(c, lb, lim)) return 0;
    for (int32_t g = gi; g < m->n_grps; g++) {
        const zel_grp *G = &m->grps[g];
        int64_t rem = g == gi ? m->unit0[g + 1] - u : G->count;
        int32_t o0 = g == gi ? lo : 0;
        double best_e = INFINITY, min_area = INFINITY, min_fl = INFINITY;
        int64_t wcap = 0;
        if (c->gfl && g > gi && c->phase == 1) {
            area += (double)rem * G->min_area;
            if (c->sfl) fl_rem += (double)rem * c->gfl[g];
            continue;
        }
        if (c->suf && g == gi && c->phase == 1) {
            area += (double)rem * c->suf[g][o0];
            min_fl = c->suf[g][G->n_opts + o0];
            fl_rem += (double)rem * min_fl;
            fl_u = min_fl;
            continue;
        }
        int quick = c->suf && c->phase == 2;
        if (quick) {
            area += (double)rem * c->suf[g][o0];
            min_fl = c->suf[g][G->n_opts + o0];
            fl_rem += (double)rem * min_fl;
            if (g == gi) fl_u = min_fl;
            if (G->n_whole == 0) klb += rem;
        }
        for (int32_t bk = 0; bk < G->n_blocks; bk++) {
            int32_t j0 = G->blk[bk], j1 = G->blk[bk + 1];
            if (quick && j0 >= G->n_whole) break;
            if (j1 <= o0) continue;
            if (j0 < o0) j0 = o0;
            const zel_opt *f = &G->opts[j0];
            double hm = zel_rmq_max(&c->rh, f->start, f->degree);
            int32_t j = j0;
            while (j < j1 && hm + G->opts[j].mem > cap) j++;
            if (j == j1) continue;
            const zel_opt *o = &G->opts[j];
            double e = zel_rmq_max(&c->rl, o->start, o->degree) + o->time;
            if (!ref_fits(c, e, lim)) continue;
            if (e < best_e) best_e = e;
            if (o->area < min_area) min_area = o->area;
            if (!quick && c->sfl && c->sfl[g][j] < min_fl) min_fl = c->sfl[g][j];
            if (c->phase == 2 && !o->split && wcap < rem) {
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
        area += (double)rem * min_area;
        if (c->sfl) {
            fl_rem += (double)rem * min_fl;
            if (g == gi) fl_u = min_fl;
        }
        if (c->phase == 2 && wcap < rem) klb += rem - wcap;
    }
    c->fl_rest = fl_rem - fl_u;
    if (m->fill_mem > 0) {
        double f0 = zel_fluid_T_more(m, c->L, c->H, fl_rem);
        if (f0 > lb) lb = f0;
    }
    if (c->phase == 1) {
        if (area / N > lb) lb = area / N;
        if (lb >= lim) return 0;
        return 1;
    }
    if (area > (double)N * lim || lb > lim) return 0;
    return c->kcur + klb < c->best->K;
}

#define ref_SKIP_PER_NODE 64

typedef struct ref_skipper {
    int on, same;
    double r1, rest;
    int64_t k;
    const double *suf;
} ref_skipper;

static void ref_skip_prep(const ref_bb *c, int64_t u, int32_t gi, ref_skipper *sk) {
    const zel_model *m = c->m;
    sk->on = c->suf && u + 1 < m->n_units && (c->phase == 2 || c->gfl);
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

static inline int ref_skip_child(const ref_bb *c, const ref_skipper *sk, int32_t j, const zel_opt *o,
                             double lim) {
    if (!sk->on) return 0;
    double area = c->sumL + o->area + c->m->extra_area + sk->r1 * sk->suf[sk->same ? j : 0] +
                  sk->rest;
    if (c->phase == 1) return area / c->m->n_ranks >= lim;
    return area > (double)c->m->n_ranks * lim || sk->k + o->split >= c->best->K;
}

static void ref_node(ref_bb *c, int64_t u) {
    const zel_model *m = c->m;
    if (c->stop) return;
    c->nodes++;
    if (c->max_nodes > 0 && c->nodes + c->skipped / ref_SKIP_PER_NODE > c->max_nodes) {
        c->stop = 1;
        return;
    }
    if (c->time_limit > 0 && (c->nodes & 255) == 0 && zg_time_now() - c->t0 > c->time_limit) {
        c->stop = 1;
        return;
    }
    if (u == m->n_units) {
        ref_leaf(c);
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
    int late = c->phase == 1 && c->suf && c->gfl;
    if (!late) {
        zel_rmq_build(&c->rl, c->L);
        zel_rmq_build(&c->rh, c->H);
    }
    if (!ref_node_bound(c, u, gi, lo)) return;
    if (late) {
        zel_rmq_build(&c->rl, c->L);
        zel_rmq_build(&c->rh, c->H);
    }

    double lim = ref_cap_of(c);
    ref_skipper sk = {0, 0, 0, 0, 0, NULL};
    ref_skip_prep(c, u, gi, &sk);
    int fc_set = 0;
    size_t base = c->cs_n;
    if (c->cs_cap - c->cs_n < (size_t)G->n_opts) {
        size_t nc = c->cs_cap * 2 + (size_t)G->n_opts;
        ref_cand *ns = realloc(c->cs, sizeof(ref_cand) * nc);
        if (!ns) {
            c->oom = c->stop = 1;
            return;
        }
        c->cs = ns, c->cs_cap = nc;
    }
    for (int32_t j = lo; j < G->n_opts; j++) {
        const zel_opt *o = &G->opts[j];
        if (ref_skip_child(c, &sk, j, o, lim)) {
            c->skipped++;
            continue;
        }
        if (zel_rmq_max(&c->rh, o->start, o->degree) + o->mem > m->mem_room) continue;
        double e = zel_rmq_max(&c->rl, o->start, o->degree) + o->time;
        if (!ref_fits(c, e, lim)) continue;
        if (m->fill_mem > 0) {
            double fl;
            if (c->fc_ok) {
                if (!fc_set) zel_fluid_ctx_set(&c->fc, m, c->L, c->H), fc_set = 1;
                fl = ref_fluid_T_child(&c->fc, m, c->L, c->H, o, c->fl_rest);
            } else {
                for (int32_t r = o->start; r < o->start + o->degree; r++)
                    c->L[r] += o->time, c->H[r] += o->mem;
                fl = zel_fluid_T_more(m, c->L, c->H, c->fl_rest);
                for (int32_t r = o->start; r < o->start + o->degree; r++)
                    c->L[r] -= o->time, c->H[r] -= o->mem;
            }
            if (fl > e) e = fl;
            if (!ref_fits(c, e, lim)) continue;
        }
        c->cs[c->cs_n++] = (ref_cand){e, o->area, j, c->phase == 2 ? o->split : 0};
    }
    size_t n = c->cs_n - base;
    ref_cand_sort(c->cs + base, n, c->ctmp);
    for (size_t i = 0; i < n && !c->stop; i++) {
        ref_cand cd = c->cs[base + i];
        if (!ref_fits(c, cd.k1, ref_cap_of(c))) {
            if (c->phase == 1) break;
            continue;
        }
        const zel_opt *o = &G->opts[cd.o];
        c->cur[u] = cd.o;
        if (u == last && m->n_sym) {
            int ok = 1;
            for (int32_t k = 0; k < m->n_sym && ok; k++)
                if (c->inv[(size_t)gi * (size_t)m->n_sym + (size_t)k])
                    ok = ref_canonical(c, &m->sym[k], gi, c->cur + first, last - first + 1);
            if (!ok) continue;
        }
        if (ref_skip_child(c, &sk, cd.o, o, ref_cap_of(c))) continue;
        ref_apply(c, o, 1);
        ref_node(c, u + 1);
        ref_apply(c, o, -1);
        if (c->phase == 2 && c->kcur >= c->best->K) break;
    }
    c->cs_n = base;
}

static zg_status ref_run(const zel_model *m, int phase, double tcap, zel_sol *best,
                     const zel_limits *lim, zel_stats *st, zg_error *err) {
    int32_t N = m->n_ranks;
    ref_bb c;
    memset(&c, 0, sizeof c);
    c.m = m, c.phase = phase, c.tcap = tcap, c.best = best;
    c.max_nodes = lim ? lim->max_nodes : 0;
    c.time_limit = lim ? lim->time_limit_s : 0;
    c.gap = lim && lim->rel_gap > ZEL_REL_TOL ? lim->rel_gap : ZEL_REL_TOL;
    c.t0 = zg_time_now();
    int64_t maxc = 1;
    for (int32_t i = 0; i < m->n_grps; i++)
        if (m->grps[i].count > maxc) maxc = m->grps[i].count;
    int32_t levels = zel_rmq_levels(N > 0 ? N : 1);
    size_t tsz = (size_t)levels * (size_t)N;
    double *buf = malloc(sizeof(double) * (2 * tsz + 4 * (size_t)N + 1));
    int32_t *lg = malloc(sizeof(int32_t) * (size_t)(N + 1));
    c.cur = malloc(sizeof(int32_t) * (size_t)(m->n_units + 1));
    c.tmp = malloc(sizeof(int32_t) * (size_t)maxc);
    c.inv = calloc((size_t)m->n_grps * (size_t)m->n_sym + 1, 1);
    int32_t maxo = 1;
    for (int32_t i = 0; i < m->n_grps; i++)
        if (m->grps[i].n_opts > maxo) maxo = m->grps[i].n_opts;
    c.ctmp = malloc(sizeof(ref_cand) * (size_t)maxo);
    if (!buf || !lg || !c.cur || !c.tmp || !c.inv || !c.ctmp) {
        free(buf), free(lg), free(c.cur), free(c.tmp), free(c.inv), free(c.ctmp);
        return zg_error_set(err, ZG_ERR_NOMEM, "zellige: out of memory in the exact search");
    }
    c.rl = (zel_rmq){N, levels, buf, lg};
    c.rh = (zel_rmq){N, levels, buf + tsz, lg};
    zel_rmq_init_log(&c.rl);
    c.L = buf + 2 * tsz;
    c.H = c.L + N;
    c.scr = c.H + N;
    memcpy(c.L, m->base_load, sizeof(double) * (size_t)N);
    memcpy(c.H, m->base_mem, sizeof(double) * (size_t)N);
    for (int32_t r = 0; r < N; r++) c.sumL += m->base_load[r];
    double *sfl_buf = NULL, *suf_buf = NULL;
    size_t tot = 0;
    if (m->fill_mem > 0 && m->extra_area > 0) {
        for (int32_t i = 0; i < m->n_grps; i++) tot += (size_t)m->grps[i].n_opts;
        c.sfl = malloc(sizeof(double *) * (size_t)(m->n_grps + 1));
        sfl_buf = malloc(sizeof(double) * (tot + 1));
        if (!c.sfl || !sfl_buf) {
            free(c.sfl), free(sfl_buf);
            c.sfl = NULL, sfl_buf = NULL;
        } else {
            double tau = m->extra_area / m->fill_mem;
            double *p = sfl_buf;
            for (int32_t i = 0; i < m->n_grps; i++) {
                const zel_grp *G = &m->grps[i];
                c.sfl[i] = p;
                for (int32_t bk = 0; bk < G->n_blocks; bk++)
                    for (int32_t j = G->blk[bk + 1] - 1; j >= G->blk[bk]; j--) {
                        const zel_opt *o = &G->opts[j];
                        double v = o->degree * (o->time < tau * o->mem ? o->time : tau * o->mem);
                        p[j] = j + 1 < G->blk[bk + 1] && p[j + 1] < v ? p[j + 1] : v;
                    }
                p += G->n_opts;
            }
            c.gfl = malloc(sizeof(double) * (size_t)(m->n_grps + 1));
            if (c.gfl)
                for (int32_t i = 0; i < m->n_grps; i++) {
                    c.gfl[i] = INFINITY;
                    for (int32_t j = 0; j < m->grps[i].n_opts; j++)
                        if (c.sfl[i][j] < c.gfl[i]) c.gfl[i] = c.sfl[i][j];
                }
            if (!c.gfl) free(c.sfl), free(sfl_buf), c.sfl = NULL, sfl_buf = NULL;
        }
        if (c.sfl) {
            c.suf = malloc(sizeof(double *) * (size_t)(m->n_grps + 1));
            suf_buf = malloc(sizeof(double) * (2 * tot + 1));
            if (!c.suf || !suf_buf) {
                free(c.suf), free(suf_buf);
                c.suf = NULL, suf_buf = NULL;
            } else {
                double *p = suf_buf;
                for (int32_t i = 0; i < m->n_grps; i++) {
                    const zel_grp *G = &m->grps[i];
                    int32_t n = G->n_opts;
                    c.suf[i] = p;
                    for (int32_t j = n - 1; j >= 0; j--) {
                        double a = G->opts[j].area, f = c.sfl[i][j];
                        p[j] = j + 1 < n && p[j + 1] < a ? p[j + 1] : a;
                        p[n + j] = j + 1 < n && p[n + j + 1] < f ? p[n + j + 1] : f;
                    }
                    p += 2 * n;
                }
            }
        }
    }
    if (m->fill_mem > 0) c.fc_ok = zel_fluid_ctx_init(&c.fc, m);
    ref_node(&c, 0);
    if (c.fc_ok) zel_fluid_ctx_free(&c.fc);
    free(c.sfl), free(sfl_buf), free(c.gfl), free(c.suf), free(suf_buf);
    free(buf), free(lg), free(c.cur), free(c.tmp), free(c.inv), free(c.cs), free(c.ctmp);
    if (c.oom) return zg_error_set(err, ZG_ERR_NOMEM, "zellige: out of memory in the search");
    if (st) {
        st->nodes = c.nodes;
        st->complete = !c.stop;
        st->seconds = zg_time_now() - c.t0;
    }
    return ZG_OK;
}

static zg_status ref_solve_minmax(const zel_model *m, zel_sol *best, const zel_limits *lim,
                           zel_stats *st, zg_error *err) {
    zel_stats s = {0};
    zg_status rc = ref_run(m, 1, 0, best, lim, &s, err);
    if (rc) return rc;
    double root = zel_model_lower_bound(m);
    double gap = lim && lim->rel_gap > ZEL_REL_TOL ? lim->rel_gap : 0;
    s.lb = s.complete ? best->T * (1 - gap) : root;
    if (s.complete && root > s.lb) s.lb = root;
    if (s.complete && best->T == INFINITY) s.lb = INFINITY;
    if (s.lb > best->T) s.lb = best->T;
    if (st) *st = s;
    return ZG_OK;
}

static zg_status ref_solve_minsplit(const zel_model *m, double tcap, zel_sol *best,
                             const zel_limits *lim, zel_stats *st, zg_error *err) {
    zel_stats s = {0};
    zg_status rc = ref_run(m, 2, tcap, best, lim, &s, err);
    if (rc) return rc;
    s.lb = s.complete ? (double)best->K : 0;
    if (st) *st = s;
    return ZG_OK;
}

// ---- random models -------------------------------------------------------------------------------

// A problem on N ranks whose groups have degrees 1..maxd on aligned or sliding starts and 1..3
// configs per degree (time and memory trade off, so a rank block keeps several Pareto options),
// at times with quantised times (ties).
static zg_problem bprob_make(zg_rng *rng, int32_t N, int32_t ng, double cap, int sliding) {
    int64_t cnt[8];
    for (int32_t g = 0; g < ng; g++) cnt[g] = zg_rng_int(rng, 1, 4);
    zg_problem pr = tprob_shell(N, cap, ng, cnt, 'q');
    int quant = (int)zg_rng_int(rng, 0, 2) == 0;
    int32_t maxd = N < 8 ? N : 8;
    for (int32_t g = 0; g < ng; g++) {
        zg_group *G = &pr.groups[g];
        double w = quant ? (double)zg_rng_int(rng, 2, 12) : zg_rng_range(rng, 1.0, 10.0);
        double mw = zg_rng_range(rng, 0.2, 1.5) * cap;
        int32_t nk = (int32_t)zg_rng_int(rng, 1, 3);
        G->opts = calloc((size_t)N * (size_t)maxd * 3 + 1, sizeof(zg_option));
        for (int32_t d = 1; d <= maxd; d++)
            for (int32_t s = 0; s + d <= N; s++) {
                if (!sliding && s % d) continue;
                for (int32_t k = 0; k < nk; k++) {
                    zg_option *o = &G->opts[G->n_opts];
                    o->config = k == 0 ? (zg_config){1, d, 1} : k == 1 ? (zg_config){d, 1, 1}
                                                                         : (zg_config){1, 1, d};
                    o->start = s;
                    o->time = w / d * (1 + 0.15 * (k + 1) * (d - 1));
                    if (quant) o->time = round(o->time * 4) / 4;
                    o->mem = mw / d * (1.0 - 0.2 * k);
                    if (o->mem <= cap) G->n_opts++;
                }
            }
        G->whole_time = w;
        G->whole_mem = mw;
    }
    return pr;
}

// A random model over random ledgers, most with fluid area and fluid memory (the skip tables
// and fluid keys), some with fluid area only or neither. Free with tmodel_free.
static zg_status bmodel(zg_rng *rng, int trial, tmodel *t, zg_error *err) {
    int32_t N = (int32_t)zg_rng_int(rng, 2, trial % 7 == 0 ? 16 : 8);
    int32_t ng = (int32_t)zg_rng_int(rng, 1, 4);
    double cap = zg_rng_range(rng, 1.0, 4.0);
    if (trial % 3 == 0) {
        tgroup tg[8];
        for (int32_t g = 0; g < ng; g++) tg[g] = tgroup_rand(rng, zg_rng_int(rng, 1, 3));
        t->pr = tprob_make(N, cap, tg, ng, N < 8 ? N : 8, (int)zg_rng_int(rng, 0, 1));
    } else {
        t->pr = bprob_make(rng, N, ng, cap, (int)zg_rng_int(rng, 0, 1));
    }
    double bl[16], bm[16];
    int led = trial % 4;
    trand_ledgers(rng, N, led == 1, 8, cap * 0.6, bl, bm);
    zg_status st = tmodel_build(t, led ? bl : NULL, led ? bm : NULL, err);
    int kind = trial % 5;
    if (!st && kind < 4) t->m.extra_area = zg_rng_range(rng, 0.5, 2.0 * N);
    if (!st && kind < 3) t->m.fill_mem = zg_rng_range(rng, 0.2, 0.8 * N * cap);
    return st;
}

// Same solution (options, T and K bit for bit) and statistics (seconds aside).
static int same_run(const zel_model *m, const zel_sol *a, const zel_sol *b, const zel_stats *x,
                    const zel_stats *y) {
    return memcmp(a->opt, b->opt, sizeof(int32_t) * (size_t)m->n_units) == 0 &&
           memcmp(&a->T, &b->T, sizeof a->T) == 0 && a->K == b->K && x->nodes == y->nodes &&
           x->complete == y->complete && memcmp(&x->lb, &y->lb, sizeof x->lb) == 0;
}

// zel_solve_minmax then zel_solve_minsplit against the reference on random models: from no
// incumbent and from a budget-limited one, under node budgets (the skipped children count
// against them), gaps and split caps. Counts the runs that stopped on the budget and those
// with fluid keys so that both paths were exercised.
ZG_TEST(zel_bb_speed_matches_plain_search) {
    zg_rng rng = trng(20261201);
    static const int64_t budgets[] = {0, 3, 25, 400};
    static const double gaps[] = {0, 1e-4, 2e-2};
    int runs = 0, cut = 0, fluid = 0, split = 0;
    for (int trial = 0; trial < 400; trial++) {
        tmodel t;
        zg_error err;
        CHECK_OK(bmodel(&rng, trial, &t, &err), &err);
        zel_model *m = &t.m;
        zel_sol a, b, z;
        CHECK(tsols(m, &a, &b, &z));
        for (int pass = 0; pass < 3; pass++) {
            int64_t nb = budgets[(trial + pass) % 4];
            if (nb == 0 && (m->n_units > 7 || m->n_ranks > 8)) nb = 5000;
            zel_limits lim = {nb, 0, gaps[(trial / 4 + pass) % 3], 0, 0};
            if (pass == 0) {  // no incumbent
                for (int64_t u = 0; u < m->n_units; u++) a.opt[u] = b.opt[u] = 0;
                a.T = b.T = INFINITY, a.K = b.K = 0;
            } else {  // the last result as the incumbent (the same in both)
                zel_sol_copy(m, &b, &a);
                b.T = a.T, b.K = a.K;
            }
            zel_stats x, y;
            zel_sol_copy(m, &z, &b);  // (the same start as a and b)
            z.T = b.T, z.K = b.K;
            CHECK_OK(zel_solve_minmax(m, &z, &lim, NULL, &err), &err);  // no stats: no bound
            CHECK_OK(zel_solve_minmax(m, &a, &lim, &x, &err), &err);
            CHECK_OK(ref_solve_minmax(m, &b, &lim, &y, &err), &err);
            CHECK_MSG(same_run(m, &a, &b, &x, &y),
                      "trial %d pass %d (N %d, %lld units, fill %g): minmax T %.17g / %.17g, "
                      "nodes %lld / %lld, complete %d / %d, lb %.17g / %.17g",
                      trial, pass, m->n_ranks, (long long)m->n_units, m->fill_mem, a.T, b.T,
                      (long long)x.nodes, (long long)y.nodes, x.complete, y.complete, x.lb, y.lb);
            CHECK_MSG(memcmp(z.opt, a.opt, sizeof(int32_t) * (size_t)m->n_units) == 0 &&
                          memcmp(&z.T, &a.T, sizeof z.T) == 0 && z.K == a.K,
                      "trial %d pass %d: without stats %.17g, with %.17g", trial, pass, z.T, a.T);
            runs++;
            cut += !x.complete;
            fluid += m->fill_mem > 0 && m->extra_area > 0 && x.nodes > 1;
            if (a.T == INFINITY) continue;
            double tcap = a.T * (1 + 0.01 * pass);
            zel_sol_copy(m, &b, &a);
            b.T = a.T, b.K = a.K;
            CHECK_OK(zel_solve_minsplit(m, tcap, &a, &lim, &x, &err), &err);
            CHECK_OK(ref_solve_minsplit(m, tcap, &b, &lim, &y, &err), &err);
            CHECK_MSG(same_run(m, &a, &b, &x, &y),
                      "trial %d pass %d: minsplit K %lld / %lld, nodes %lld / %lld", trial, pass,
                      (long long)a.K, (long long)b.K, (long long)x.nodes, (long long)y.nodes);
            split += x.nodes > 1;
        }
        tsols_free(&a, &b, &z);
        tmodel_free(&t);
    }
    CHECK(runs == 1200);
    CHECK_MSG(cut > 150 && fluid > 100 && split > 90, "cut %d fluid %d split %d", cut, fluid,
              split);
}

// zel_fluid_T_child equals the plain per-step version bit for bit; with a cut it returns the
// same value when that is <= cut, else a value above cut and not above the full one.
ZG_TEST(zel_bb_speed_fluid_child_matches_plain) {
    zg_rng rng = trng(8086);
    int64_t above = 0, below = 0;
    for (int trial = 0; trial < 150; trial++) {
        int32_t N = (int32_t)zg_rng_int(&rng, 1, trial % 10 ? 40 : 100);  // blocks over 64 ranks
        zel_model m;
        memset(&m, 0, sizeof m);
        m.n_ranks = N, m.mem_room = 10;
        m.extra_area = zg_rng_range(&rng, 5, 55), m.fill_mem = zg_rng_range(&rng, 1, 21);
        if (N > 40) m.extra_area = zg_rng_range(&rng, 4, 12) * N;  // several Newton steps
        double L[100], H[100];
        int quant = trial % 2;
        zel_fluid_ctx f;
        CHECK(zel_fluid_ctx_init(&f, &m));
        for (int step = 0; step < 20; step++) {
            for (int32_t r = 0; r < N; r++) {
                L[r] = quant ? (double)zg_rng_int(&rng, 0, 3) : zg_rng_range(&rng, 0, 10);
                H[r] = quant ? 4.0 * (double)zg_rng_int(&rng, 0, 2) : zg_rng_range(&rng, 0, 12);
            }
            zel_fluid_ctx_set(&f, &m, L, H);
            for (int c = 0; c < 6; c++) {
                int32_t d = (int32_t)zg_rng_int(&rng, 1, N < 8 || c == 5 ? N : 8);
                zel_opt o = {0, (int32_t)zg_rng_int(&rng, 0, N - d), d, d > 1,
                             zg_rng_range(&rng, 0, 3), zg_rng_range(&rng, 0, 3), 0};
                o.area = o.time * d;
                double more = c == 0 ? 0 : zg_rng_range(&rng, 0, 10);
                double want = ref_fluid_T_child(&f, &m, L, H, &o, more);
                double got = zel_fluid_T_child(&f, &m, L, H, &o, more);
                CHECK_MSG(memcmp(&got, &want, sizeof got) == 0,
                          "trial %d step %d: %.17g, plain %.17g", trial, step, got, want);
                double cut = want < INFINITY ? want * zg_rng_range(&rng, 0.9, 1.1) : 5;
                double g2 = zel_fluid_T_child_cut(&f, &m, L, H, &o, more, cut);
                if (want <= cut) {
                    CHECK_MSG(memcmp(&g2, &want, sizeof g2) == 0, "trial %d: cut %.17g", trial,
                              g2);
                    below++;
                } else {
                    CHECK_MSG(g2 == want || (g2 > cut && g2 <= want),
                              "trial %d: cut %.17g above %.17g, full %.17g", trial, g2, cut, want);
                    above += g2 != want;
                }
            }
        }
        zel_fluid_ctx_free(&f);
    }
    CHECK_MSG(above > 250 && below > 4000, "above %lld below %lld", (long long)above,
              (long long)below);
}

ZG_TEST_MAIN()
