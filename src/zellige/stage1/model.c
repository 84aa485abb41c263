// stage1/model.c — the min-max model of the Zellige exact solver: ECF groups with Pareto-pruned
// options, rank-tile symmetries, solution helpers, the root lower bound and the greedy incumbent.
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zellige/internal.h"
#include "zellige/rmq.h"

static int opt_cmp(const void *pa, const void *pb) {
    const zel_opt *a = pa, *b = pb;
    if (a->degree != b->degree) return a->degree < b->degree ? -1 : 1;
    if (a->start != b->start) return a->start < b->start ? -1 : 1;
    if (a->time != b->time) return a->time < b->time ? -1 : 1;
    if (a->mem != b->mem) return a->mem < b->mem ? -1 : 1;
    return (a->src > b->src) - (a->src < b->src);
}

// Sorts a[0..n) by opt_cmp into out[0..n) (0 <= start < N, 1 <= degree <= N). opt_cmp is a
// total order (src breaks every tie), so this is the array qsort gave, for O(n + N) instead of
// O(n log n) indirect calls: two stable counting passes on indices (by start, then by degree),
// one gather, then insertion sort by opt_cmp inside each (degree, start) block (a few options).
// ix: 2 n ints, cnt: N + 2 ints of scratch.
static void opt_sort(const zel_opt *a, zel_opt *out, int32_t n, int32_t N, int32_t *ix,
                     int32_t *cnt) {
    int32_t *i1 = ix, *i2 = ix + n;
    memset(cnt, 0, sizeof(int32_t) * (size_t)(N + 2));
    for (int32_t i = 0; i < n; i++) cnt[a[i].start + 1]++;
    for (int32_t v = 0; v <= N; v++) cnt[v + 1] += cnt[v];
    for (int32_t i = 0; i < n; i++) i1[cnt[a[i].start]++] = i;
    memset(cnt, 0, sizeof(int32_t) * (size_t)(N + 2));
    for (int32_t i = 0; i < n; i++) cnt[a[i].degree]++;
    for (int32_t v = 0; v <= N; v++) cnt[v + 1] += cnt[v];
    for (int32_t i = 0; i < n; i++) {
        int32_t x = i1[i];
        i2[cnt[a[x].degree - 1]++] = x;
    }
    for (int32_t i = 0; i < n; i++) out[i] = a[i2[i]];
    for (int32_t i = 1; i < n; i++) {
        if (out[i].degree != out[i - 1].degree || out[i].start != out[i - 1].start) continue;
        zel_opt x = out[i];
        int32_t j = i;
        while (j > 0 && opt_cmp(&out[j - 1], &x) > 0) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = x;
    }
}

// Finds the option of G with block (start, degree) and exactly this time and memory.
static int32_t find_opt(const zel_grp *G, int32_t start, int32_t degree, double time, double mem) {
    int32_t lo = 0, hi = G->n_opts;
    zel_opt key = {0, start, degree, 0, time, mem, 0};
    while (lo < hi) {  // first option >= key, ignoring src
        int32_t mid = (lo + hi) / 2;
        zel_opt probe = G->opts[mid];
        probe.src = 0;
        if (opt_cmp(&probe, &key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < G->n_opts) {
        const zel_opt *o = &G->opts[lo];
        if (o->start == start && o->degree == degree && o->time == time && o->mem == mem) return lo;
    }
    return -1;
}

// Is the swap of X = [a, a+s) and Y = [a+s, a+2s) a symmetry of group G? Fills map.
static int sym_check(const zel_grp *G, int32_t a, int32_t s, int32_t *map) {
    for (int32_t i = 0; i < G->n_opts; i++) {
        const zel_opt *o = &G->opts[i];
        int32_t b0 = o->start, b1 = o->start + o->degree;
        if (b1 <= a || b0 >= a + 2 * s || (b0 <= a && b1 >= a + 2 * s)) {
            map[i] = i;
        } else if (b0 >= a && b1 <= a + s) {
            map[i] = find_opt(G, b0 + s, o->degree, o->time, o->mem);
            if (map[i] < 0) return 0;
        } else if (b0 >= a + s && b1 <= a + 2 * s) {
            map[i] = find_opt(G, b0 - s, o->degree, o->time, o->mem);
            if (map[i] < 0) return 0;
        } else {
            return 0;
        }
    }
    return 1;
}

// Is the reflection r -> N-1-r a symmetry of group G (block [b, b+d) -> [N-b-d, N-b) with the
// same time and memory)? Fills map.
static int rev_check(const zel_grp *G, int32_t N, int32_t *map) {
    for (int32_t i = 0; i < G->n_opts; i++) {
        const zel_opt *o = &G->opts[i];
        map[i] = find_opt(G, N - o->start - o->degree, o->degree, o->time, o->mem);
        if (map[i] < 0) return 0;
    }
    return 1;
}

static zg_status oom(zg_error *err) {
    return zg_error_set(err, ZG_ERR_NOMEM, "zellige: out of memory building the solver model");
}

zg_status zel_model_build(const zg_problem *pr, const int32_t *grp_idx, int32_t n,
                          const double *base_load, const double *base_mem, zel_model *m,
                          zg_error *err) {
    memset(m, 0, sizeof *m);
    zg_arena_init(&m->arena, 1 << 16);
    int32_t N = pr->world_size;
    m->n_ranks = N;
    m->mem_room = pr->mem_room;
    m->n_grps = n;
    m->grps = zg_arena_alloc(&m->arena, sizeof(zel_grp) * (size_t)(n > 0 ? n : 1));
    m->unit0 = zg_arena_alloc(&m->arena, sizeof(int64_t) * (size_t)(n + 1));
    m->base_load = zg_arena_alloc(&m->arena, sizeof(double) * (size_t)N);
    m->base_mem = zg_arena_alloc(&m->arena, sizeof(double) * (size_t)N);
    if (!m->grps || !m->unit0 || !m->base_load || !m->base_mem) return oom(err);
    for (int32_t r = 0; r < N; r++) {
        m->base_load[r] = base_load ? base_load[r] : 0.0;
        m->base_mem[r] = base_mem ? base_mem[r] : 0.0;
    }
    int64_t units = 0;
    size_t no = 1;  // one sort buffer for every group: the largest option count
    for (int32_t i = 0; i < n; i++)
        if ((size_t)pr->groups[grp_idx[i]].n_opts > no) no = (size_t)pr->groups[grp_idx[i]].n_opts;
    zel_opt *tmp = malloc(sizeof(zel_opt) * 2 * no + sizeof(int32_t) * (2 * no + (size_t)N + 2));
    if (!tmp) return oom(err);
    for (int32_t i = 0; i < n; i++) {
        const zg_group *g = &pr->groups[grp_idx[i]];
        zel_grp *G = &m->grps[i];
        G->g = grp_idx[i];
        G->count = g->count;
        m->unit0[i] = units;
        units += g->count;
        int32_t k = 0;
        for (int32_t j = 0; j < g->n_opts; j++) {
            const zg_option *o = &g->opts[j];
            int32_t d = zg_option_degree(o);
            if (d < 1 || o->start < 0 || o->start + d > N) continue;  // not on this world
            if (o->mem > pr->mem_room) continue;
            tmp[k++] = (zel_opt){j, o->start, d, d > 1, o->time, o->mem, o->time * d};
        }
        zel_opt *srt = tmp + no;
        opt_sort(tmp, srt, k, N, (int32_t *)(srt + no), (int32_t *)(srt + no) + 2 * no);
        // Pareto front per block: sorted by time then mem, keep strictly decreasing mem
        // (compacted in place, then copied to the arena at its size).
        int32_t kept = 0;
        double best_mem = INFINITY;
        for (int32_t j = 0; j < k; j++) {
            if (j == 0 || srt[j].start != srt[j - 1].start || srt[j].degree != srt[j - 1].degree)
                best_mem = INFINITY;
            if (srt[j].mem < best_mem) {
                best_mem = srt[j].mem;
                srt[kept++] = srt[j];
            }
        }
        G->opts = zg_arena_alloc(&m->arena, sizeof(zel_opt) * (size_t)(kept > 0 ? kept : 1));
        if (!G->opts) {
            free(tmp);
            return oom(err);
        }
        if (kept > 0) memcpy(G->opts, srt, sizeof(zel_opt) * (size_t)kept);
        G->n_opts = kept;
        G->blk = zg_arena_alloc(&m->arena, sizeof(int32_t) * (size_t)(kept + 1));
        if (!G->blk) {
            free(tmp);
            return oom(err);
        }
        G->n_blocks = 0;
        for (int32_t j = 0; j < kept; j++)
            if (j == 0 || G->opts[j].start != G->opts[j - 1].start ||
                G->opts[j].degree != G->opts[j - 1].degree)
                G->blk[G->n_blocks++] = j;
        G->blk[G->n_blocks] = kept;
        G->n_whole = 0;
        G->min_area = INFINITY;
        for (int32_t j = 0; j < kept; j++) {
            if (G->opts[j].degree == 1) G->n_whole = j + 1;
            if (G->opts[j].area < G->min_area) G->min_area = G->opts[j].area;
        }
    }
    free(tmp);
    m->unit0[n] = units;
    m->n_units = units;
    m->grp_of = zg_arena_alloc(&m->arena, sizeof(int32_t) * (size_t)(units > 0 ? units : 1));
    if (!m->grp_of) return oom(err);
    for (int32_t i = 0; i < n; i++)
        for (int64_t u = m->unit0[i]; u < m->unit0[i + 1]; u++) m->grp_of[u] = i;

    // Rank-tile symmetries (small worlds only: detection is O(world * options)).
    if (N <= 64 && n > 0) {
        int32_t cap_sym = 2 * N + 1;
        m->sym = zg_arena_alloc(&m->arena, sizeof(zel_sym) * (size_t)cap_sym);
        if (!m->sym) return oom(err);
        // A slot whose candidate failed keeps its map arrays for the next candidate (sym_check
        // writes every entry it keeps), so failed candidates cost no arena memory.
        for (int32_t s = 1; 2 * s <= N; s *= 2) {
            for (int32_t a = 0; a + 2 * s <= N; a += s) {
                zel_sym *y = &m->sym[m->n_sym];
                y->a = a;
                y->s = s;
                if (!y->map) y->map = zg_arena_alloc(&m->arena, sizeof(int32_t *) * (size_t)n);
                if (!y->map) return oom(err);
                int ok = 1;
                for (int32_t i = 0; i < n && ok; i++) {
                    if (!y->map[i])
                        y->map[i] = zg_arena_alloc(
                            &m->arena, sizeof(int32_t) * (size_t)(m->grps[i].n_opts + 1));
                    if (!y->map[i]) return oom(err);
                    ok = sym_check(&m->grps[i], a, s, y->map[i]);
                }
                if (ok && m->n_sym < cap_sym) m->n_sym++;
            }
        }
        // The reflection of the world (sliding blocks break the tile swaps, not this one).
        if (N >= 2 && m->n_sym < cap_sym) {
            zel_sym *y = &m->sym[m->n_sym];
            y->a = y->s = 0;
            y->rev = 1;
            if (!y->map) y->map = zg_arena_alloc(&m->arena, sizeof(int32_t *) * (size_t)n);
            if (!y->map) return oom(err);
            int ok = 1;
            for (int32_t i = 0; i < n && ok; i++) {
                if (!y->map[i])
                    y->map[i] = zg_arena_alloc(&m->arena,
                                               sizeof(int32_t) * (size_t)(m->grps[i].n_opts + 1));
                if (!y->map[i]) return oom(err);
                ok = rev_check(&m->grps[i], N, y->map[i]);
            }
            if (ok) m->n_sym++;
        }
    }
    return ZG_OK;
}

void zel_model_free(zel_model *m) {
    zg_arena_free(&m->arena);
    memset(m, 0, sizeof *m);
}

zg_status zel_sol_alloc(const zel_model *m, zel_sol *s, zg_error *err) {
    s->opt = zg_calloc((size_t)(m->n_units > 0 ? m->n_units : 1), sizeof(int32_t), err);
    s->T = INFINITY;
    s->K = 0;
    return s->opt ? ZG_OK : ZG_ERR_NOMEM;
}

void zel_sol_free(zel_sol *s) {
    free(s->opt);
    s->opt = NULL;
}

void zel_sol_copy(const zel_model *m, zel_sol *dst, const zel_sol *src) {
    if (m->n_units > 0) memcpy(dst->opt, src->opt, sizeof(int32_t) * (size_t)m->n_units);
    dst->T = src->T;
    dst->K = src->K;
}

int zel_sol_eval(const zel_model *m, const int32_t *opt, double *L, double *H, double *T,
                 int64_t *K) {
    int32_t N = m->n_ranks;
    double *l = L, *h = H, *own = NULL;
    if (!l || !h) {
        own = malloc(sizeof(double) * 2 * (size_t)N);
        if (!own) return 0;
        if (!l) l = own;
        if (!h) h = own + N;
    }
    memcpy(l, m->base_load, sizeof(double) * (size_t)N);
    memcpy(h, m->base_mem, sizeof(double) * (size_t)N);
    int64_t k = 0;
    for (int64_t u = 0; u < m->n_units; u++) {
        const zel_opt *o = &m->grps[m->grp_of[u]].opts[opt[u]];
        for (int32_t r = o->start; r < o->start + o->degree; r++) {
            l[r] += o->time;
            h[r] += o->mem;
        }
        k += o->split;
    }
    int ok = 1;
    for (int32_t r = 0; r < N; r++)
        if (h[r] > m->mem_room) ok = 0;
    if (T) *T = zel_objective(m, l, h, NULL);  // (needs no scratch)
    if (K) *K = k;
    free(own);
    return ok;
}

static int i32_cmp(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

void zel_sol_canon(const zel_model *m, zel_sol *s) {
    for (int32_t i = 0; i < m->n_grps; i++)
        qsort(s->opt + m->unit0[i], (size_t)(m->unit0[i + 1] - m->unit0[i]), sizeof(int32_t),
              i32_cmp);
}

// ---- memory-aware fluid filler model --------------------------------------------------------

// h(T) = sum_r min(T - L_r, tau c_r) is concave, increasing and piecewise linear in T >= max L
// (breakpoints b_r = L_r + tau c_r). Newton's method from the left on a concave function never
// overshoots the root, and on a piecewise-linear one it ends as soon as the tangent's root lies
// on the current piece (no breakpoint before it); every other step passes at least one
// breakpoint, so at most N + 1 steps of O(N) each, no sorting (typically 1-3 steps).
// The Newton iteration of zel_fluid_T_more from T = maxL, for demand A at density tau.
static double fluid_newton(const zel_model *m, const double *L, const double *H, double A,
                           double tau, double maxL) {
    int32_t N = m->n_ranks;
    double T = maxL;
    for (int32_t it = 0; it <= N + 1; it++) {
        double h = 0, next = INFINITY;
        int32_t active = 0;
        for (int32_t r = 0; r < N; r++) {
            double c = m->mem_room - H[r];
            double tc = c > 0 ? tau * c : 0, b = L[r] + tc;
            if (b <= T) {
                h += tc;
            } else {
                h += T - L[r];
                active++;
                if (b < next) next = b;
            }
        }
        if (h >= A || active == 0) return T;  // met at T (or all saturated: tot >= A)
        double t = T + (A - h) / active;
        if (t <= next) return t;
        T = t;  // t <= root (concavity): keep going from there
    }
    return T;
}

// max(t, every extra fluid variant's T) for ledgers L, H (maxL: their largest load).
static double xfl_max(const zel_model *m, const double *L, const double *H, double maxL,
                      double t) {
    for (int32_t j = 0; j < m->n_xfl && t < INFINITY; j++) {
        double A = m->extra_area - m->xfl_free[j], X = m->xfl_mem[j];
        if (A <= 0 || X <= 0) continue;
        double tau = A / X, tot = 0;
        for (int32_t r = 0; r < m->n_ranks; r++) {
            double c = m->mem_room - H[r];
            if (c > 0) tot += tau * c;
        }
        double f = tot < A * (1 - ZEL_STRICT) ? INFINITY : fluid_newton(m, L, H, A, tau, maxL);
        if (f > t) t = f;
    }
    return t;
}

double zel_fluid_T_more(const zel_model *m, const double *L, const double *H, double more) {
    int32_t N = m->n_ranks;
    double A0 = zel_mem_area(m), X = m->fill_mem;
    if (A0 <= 0 || X <= 0 || N <= 0) return 0;
    double tau = A0 / X, A = A0 + (more > 0 ? more : 0), maxL = 0, tot = 0;
    for (int32_t r = 0; r < N; r++) {
        double c = m->mem_room - H[r];
        if (c > 0) tot += tau * c;
        if (L[r] > maxL) maxL = L[r];
    }
    if (tot < A * (1 - ZEL_STRICT)) return INFINITY;
    double t = fluid_newton(m, L, H, A, tau, maxL);
    return m->n_xfl ? xfl_max(m, L, H, maxL, t) : t;
}

double zel_fluid_T(const zel_model *m, const double *L, const double *H, double *scratch) {
    (void)scratch;
    return zel_fluid_T_more(m, L, H, 0);
}

// One pass over the ranks for the max, the sum and the fluid's capacity (zel_fluid_T's first
// pass, fused: the same values in the same order), then its Newton iteration; skipped (returns
// INFINITY) when the max or the mean load already exceed `above` (the objective is at least
// both, so it would exceed `above` too).
static double objective_below(const zel_model *m, const double *L, const double *H,
                              double above) {
    int32_t N = m->n_ranks;
    double t = 0, sum = m->extra_area, tot = 0;
    double A0 = zel_mem_area(m), X = m->fill_mem;
    int fluid = X > 0 && A0 > 0 && N > 0;
    double tau = fluid ? A0 / X : 0;
    for (int32_t r = 0; r < N; r++) {
        if (L[r] > t) t = L[r];
        sum += L[r];
        if (fluid) {
            double c = m->mem_room - H[r];
            if (c > 0) tot += tau * c;
        }
    }
    double maxL = t;
    if (N > 0 && sum / N > t) t = sum / N;
    if (t > above) return INFINITY;
    if (fluid) {
        double f = tot < A0 * (1 - ZEL_STRICT) ? INFINITY : fluid_newton(m, L, H, A0, tau, maxL);
        if (f > t) t = f;
    }
    return m->n_xfl ? xfl_max(m, L, H, maxL, t) : t;
}

double zel_objective(const zel_model *m, const double *L, const double *H, double *scratch) {
    (void)scratch;
    return objective_below(m, L, H, INFINITY);
}

// ---- lower bound ------------------------------------------------------------------------------

typedef struct bp {
    double e, area;
    int32_t g;
} bp;

// Restores the min-heap order on e below position i of h[0..n).
static void bp_sift(bp *h, size_t n, size_t i) {
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, sm = i;
        if (l < n && h[l].e < h[sm].e) sm = l;
        if (r < n && h[r].e < h[sm].e) sm = r;
        if (sm == i) return;
        bp t = h[i];
        h[i] = h[sm];
        h[sm] = t;
        i = sm;
    }
}

// Shared with exact/bb.c through zel_model_lower_bound only.
void zel_model_set_densities(zel_model *m, const double *rho, const double *work, int32_t nt,
                             const double *theta, int32_t n_theta) {
    m->n_xfl = 0;
    for (int32_t v = 0; v < n_theta; v++) {
        double D = 0;
        for (int32_t k = 0; k < nt && theta[v] > 0; k++)
            D += rho[k] > theta[v] ? work[k] * (theta[v] / rho[k]) : work[k];
        double fa = m->extra_area - D, fm = D > 0 ? D / theta[v] : 0;
        if (v == 0)
            m->free_area = fa, m->fill_mem = fm;
        else if (D > 0 && m->n_xfl < ZEL_MAX_XFL)
            m->xfl_free[m->n_xfl] = fa, m->xfl_mem[m->n_xfl++] = fm;
    }
}

double zel_model_lower_bound(const zel_model *m) {
    int32_t N = m->n_ranks;
    double lb = 0, sum = m->extra_area;
    for (int32_t r = 0; r < N; r++) {
        if (m->base_load[r] > lb) lb = m->base_load[r];
        sum += m->base_load[r];
    }
    if (N > 0 && sum / N > lb) lb = sum / N;
    if (m->fill_mem > 0 && N > 0) {  // the fluid bound only grows as anchors are added
        double *scr = malloc(sizeof(double) * 2 * (size_t)N);
        if (scr) {
            double f = zel_fluid_T(m, m->base_load, m->base_mem, scr);
            if (f > lb) lb = f;
            free(scr);
        }
    }
    if (m->n_grps == 0 || N == 0) return lb;
    zel_rmq rl = {N, zel_rmq_levels(N), NULL, NULL}, rh = rl;
    size_t tsz = (size_t)rl.levels * (size_t)N;
    size_t n_bp = 0;
    for (int32_t i = 0; i < m->n_grps; i++) n_bp += (size_t)m->grps[i].n_opts;
    double *tables = malloc(sizeof(double) * 2 * tsz);
    int32_t *lg = malloc(sizeof(int32_t) * (size_t)(N + 1));
    bp *pts = malloc(sizeof(bp) * (n_bp + 1));
    double *garea = malloc(sizeof(double) * (size_t)m->n_grps);
    if (!tables || !lg || !pts || !garea) {
        free(tables), free(lg), free(pts), free(garea);
        return lb;  // a weaker (still valid) bound
    }
    rl.t = tables, rh.t = tables + tsz, rl.log2 = rh.log2 = lg;
    zel_rmq_init_log(&rl);
    zel_rmq_build(&rl, m->base_load);
    zel_rmq_build(&rh, m->base_mem);
    // One point per rank block of a group: its first option that fits the memory left. Inside
    // a block the options go by time ascending and memory descending (Pareto), so the fitting
    // ones are a suffix and the first has both the least e and the least area: the others never
    // lower a group's area below its own, and a point that changes no area leaves the bound
    // where it is (the area term is the same step function of T with or without it).
    size_t k = 0;
    for (int32_t i = 0; i < m->n_grps; i++) {
        const zel_grp *G = &m->grps[i];
        garea[i] = INFINITY;
        for (int32_t b = 0; b < G->n_blocks; b++) {
            const zel_opt *o0 = &G->opts[G->blk[b]];
            double hmax = zel_rmq_max(&rh, o0->start, o0->degree);
            for (int32_t j = G->blk[b]; j < G->blk[b + 1]; j++) {
                const zel_opt *o = &G->opts[j];
                if (hmax + o->mem > m->mem_room) continue;
                pts[k++] = (bp){zel_rmq_max(&rl, o->start, o->degree) + o->time, o->area, i};
                break;
            }
        }
    }
    // Sweep breakpoints in ascending e: for T in [e_i, e_{i+1}) each group's cheapest usable
    // area is fixed; the smallest T with sum + sum_g count_g * area_g <= N * T in that interval
    // is the bound. Nothing can end the sweep before T0 = max_g (least e of group g), where the
    // last group gets covered, so everything up to T0 is taken in one linear pass; and the
    // sweep ends at the latest at the first breakpoint >= T1 = F(T0) (the area term only falls
    // with T, so there max(e, F) = e < the next breakpoint). Only the points in (T0, T1] are
    // swept in order, from a binary min-heap on e (the sweep usually stops after a few). Points
    // with equal e are all taken before the test, and their order does not matter (a minimum
    // per group): the same result as a full sort of every point (tested against one).
    double result = INFINITY, T0 = -INFINITY;
    for (int32_t g = 0; g < m->n_grps; g++) garea[g] = INFINITY;  // least e of each group
    for (size_t i = 0; i < k; i++)
        if (pts[i].e < garea[pts[i].g]) garea[pts[i].g] = pts[i].e;
    for (int32_t g = 0; g < m->n_grps; g++)
        if (garea[g] > T0) T0 = garea[g];
    if (T0 < INFINITY) {
        for (int32_t g = 0; g < m->n_grps; g++) garea[g] = INFINITY;
        double next = INFINITY;
        for (size_t i = 0; i < k; i++) {
            if (pts[i].e <= T0) {
                if (pts[i].area < garea[pts[i].g]) garea[pts[i].g] = pts[i].area;
            } else if (pts[i].e < next) {
                next = pts[i].e;
            }
        }
        double f = sum;
        for (int32_t g = 0; g < m->n_grps; g++) f += (double)m->grps[g].count * garea[g];
        double t = f / N > T0 ? f / N : T0;
        if (next == INFINITY || t < next) {
            result = t;
        } else {
            // t = F(T0) >= next > T0: sweep the points in (T0, t] that can still lower their
            // group's area (the others change no area: see above); `after` is the first e > t
            double T1 = t, after = INFINITY;
            size_t n = 0;
            for (size_t i = 0; i < k; i++) {
                if (pts[i].e <= T0) continue;
                if (pts[i].e > T1) {
                    if (pts[i].e < after) after = pts[i].e;
                } else if (pts[i].area < garea[pts[i].g]) {
                    pts[n++] = pts[i];
                }
            }
            if (n == 0) result = T1;  // no area falls before `after` > T1: F(T) = T1 there
            for (size_t i = n / 2; i-- > 0;) bp_sift(pts, n, i);
            while (n > 0) {
                double e = pts[0].e;
                while (n > 0 && pts[0].e == e) {
                    int32_t g = pts[0].g;
                    if (pts[0].area < garea[g]) garea[g] = pts[0].area;
                    pts[0] = pts[--n];
                    bp_sift(pts, n, 0);
                }
                f = sum;
                for (int32_t g = 0; g < m->n_grps; g++) f += (double)m->grps[g].count * garea[g];
                t = f / N > e ? f / N : e;
                double nx = n > 0 ? pts[0].e : after;
                if (nx == INFINITY || t < nx) {
                    result = t;
                    break;
                }
            }
            // (not reached without a result: at the last point e <= T1, t <= T1 < after)
        }
    }
    free(tables), free(lg), free(pts), free(garea);
    return result > lb ? result : lb;
}

// ---- greedy incumbent -------------------------------------------------------------------------

// Scratch of try_option: range maxima of the current L, H (rebuilt when they change) and room
// to save a block.
typedef struct probe {
    zel_rmq rl, rh;
    double *sv;  // 2 * n_ranks
    double *buf;
    int32_t *lg;
} probe;

static int probe_init(probe *p, int32_t N) {
    int32_t n = N > 0 ? N : 1, levels = zel_rmq_levels(n);
    size_t tsz = (size_t)levels * (size_t)n;
    p->buf = malloc(sizeof(double) * (2 * tsz + 2 * (size_t)n));
    p->lg = malloc(sizeof(int32_t) * ((size_t)n + 1));
    if (!p->buf || !p->lg) {
        free(p->buf), free(p->lg);
        return 0;
    }
    p->rl = (zel_rmq){n, levels, p->buf, p->lg};
    p->rh = (zel_rmq){n, levels, p->buf + tsz, p->lg};
    p->sv = p->buf + 2 * tsz;
    zel_rmq_init_log(&p->rl);
    return 1;
}

static void probe_free(probe *p) { free(p->buf), free(p->lg); }

// L, H changed on o's block: refreshes the range maxima (the values of a full rebuild).
static void probe_update(probe *p, const double *L, const double *H, const zel_opt *o) {
    zel_rmq_update(&p->rl, L, o->start, o->start + o->degree);
    zel_rmq_update(&p->rh, H, o->start, o->start + o->degree);
}

// Objective of the state with option o added on top of L, H (restored exactly afterwards: the
// block's values are saved, not subtracted back). Returns 0 without evaluating when o does not
// fit the memory cap or when its block's new maximum load already exceeds `above` (the
// objective is at least that maximum, so the caller would reject it). Both tests read the
// range maxima of p (built on this L, H): max_r (x_r + c) = (max_r x_r) + c exactly, rounding
// being monotone, so they decide as a scan of the block would.
static int try_option(const zel_model *m, const zel_opt *o, double *L, double *H, probe *p,
                      double above, double *t) {
    int32_t s0 = o->start, d = o->degree;
    if (zel_rmq_max(&p->rh, s0, d) + o->mem > m->mem_room) return 0;
    double v = zel_rmq_max(&p->rl, s0, d) + o->time, mx = v > 0 ? v : 0;
    if (mx > above) return 0;
    double *sv = p->sv;
    for (int32_t i = 0; i < d; i++) {
        sv[i] = L[s0 + i], sv[d + i] = H[s0 + i];
        L[s0 + i] += o->time, H[s0 + i] += o->mem;
    }
    *t = objective_below(m, L, H, above);  // INFINITY: above `above`, rejected by the caller
    for (int32_t i = 0; i < d; i++) L[s0 + i] = sv[i], H[s0 + i] = sv[d + i];
    return 1;
}

// One greedy pass with target `tgt`; returns 1 and fills opt/T/K if every unit got an option.
// *above: the least block result e > tgt among the options it looked at (INFINITY: none). A
// pass with a target in [tgt, *above) classes every option alike, so it makes the same choices.
// Units [0, n_pre) take the options pre[] instead (0 if one does not fit the memory).
static int greedy_pass(const zel_model *m, double tgt, double *L, double *H, zel_rmq *rl,
                       zel_rmq *rh, int32_t *opt, double *T, int64_t *K, double *above,
                       double t_end, const int32_t *pre, int64_t n_pre) {
    int32_t N = m->n_ranks;
    *above = INFINITY;
    memcpy(L, m->base_load, sizeof(double) * (size_t)N);
    memcpy(H, m->base_mem, sizeof(double) * (size_t)N);
    int64_t k = 0;
    zel_rmq_build(rl, L);
    zel_rmq_build(rh, H);
    for (int64_t u = 0; u < m->n_units; u++) {
        if (t_end > 0 && (u & 255) == 0 && zg_time_now() > t_end) return 0;
        const zel_grp *G = &m->grps[m->grp_of[u]];
        int32_t best = -1, best_cls = 2;
        double best_a = 0, best_b = 0;
        if (u < n_pre) {
            const zel_opt *o = &G->opts[pre[u]];
            if (zel_rmq_max(rh, o->start, o->degree) + o->mem > m->mem_room) return 0;
            best = pre[u];
        }
        for (int32_t j = 0; j < G->n_opts && u >= n_pre; j++) {
            const zel_opt *o = &G->opts[j];
            if (zel_rmq_max(rh, o->start, o->degree) + o->mem > m->mem_room) continue;
            double e = zel_rmq_max(rl, o->start, o->degree) + o->time;
            int cls = e <= tgt ? 0 : 1;
            if (cls && e < *above) *above = e;
            double a = cls == 0 ? o->area : e, b = cls == 0 ? e : o->area;
            if (cls < best_cls || (cls == best_cls && (a < best_a || (a == best_a && b < best_b)))) {
                best = j, best_cls = cls, best_a = a, best_b = b;
            }
        }
        if (best < 0) return 0;
        const zel_opt *o = &G->opts[best];
        for (int32_t r = o->start; r < o->start + o->degree; r++) {
            L[r] += o->time;
            H[r] += o->mem;
        }
        zel_rmq_update(rl, L, o->start, o->start + o->degree);  // = a full rebuild
        zel_rmq_update(rh, H, o->start, o->start + o->degree);
        k += o->split;
        opt[u] = best;
    }
    // rl->t and rh->t are contiguous (2 * levels * N >= 2N doubles) and free scratch here
    *T = zel_objective(m, L, H, rl->t);
    *K = k;
    return 1;
}

// Objective-driven greedy (for the memory-aware model, where block heights alone say little):
// units in group order, each to the option with the lowest model objective of the partial
// state, the later units counted as fluid area; ties by area, then index.
static int greedy_objective_run(const zel_model *m, double *L, double *H, double *scr,
                                probe *pb, int32_t *opt, double *T, int64_t *K) {
    int32_t N = m->n_ranks;
    memcpy(L, m->base_load, sizeof(double) * (size_t)N);
    memcpy(H, m->base_mem, sizeof(double) * (size_t)N);
    double rest = 0;
    for (int32_t i = 0; i < m->n_grps; i++) rest += (double)m->grps[i].count * m->grps[i].min_area;
    zel_model mm = *m;
    int64_t k = 0;
    zel_rmq_build(&pb->rl, L);
    zel_rmq_build(&pb->rh, H);
    for (int64_t u = 0; u < m->n_units; u++) {
        const zel_grp *G = &m->grps[m->grp_of[u]];
        rest -= G->min_area;
        mm.extra_area = m->extra_area + (rest > 0 ? rest : 0);
        int32_t best = -1;
        double bt = INFINITY, ba = INFINITY;
        for (int32_t j = 0; j < G->n_opts; j++) {
            const zel_opt *o = &G->opts[j];
            double t;
            if (!try_option(&mm, o, L, H, pb, bt * (1 + ZEL_STRICT), &t)) continue;
            if (t < bt * (1 - ZEL_STRICT) || (t <= bt * (1 + ZEL_STRICT) && o->area < ba)) {
                if (t < bt) bt = t;
                ba = o->area, best = j;
            }
        }
        if (best < 0) return 0;
        const zel_opt *o = &G->opts[best];
        for (int32_t r = o->start; r < o->start + o->degree; r++) L[r] += o->time, H[r] += o->mem;
        zel_rmq_update(&pb->rl, L, o->start, o->start + o->degree);
        zel_rmq_update(&pb->rh, H, o->start, o->start + o->degree);
        k += o->split;
        opt[u] = best;
    }
    *T = zel_objective(m, L, H, scr);
    *K = k;
    return 1;
}

static int greedy_objective(const zel_model *m, double *L, double *H, double *scr, int32_t *opt,
                            double *T, int64_t *K) {
    probe pb;
    if (!probe_init(&pb, m->n_ranks)) return 0;
    int done = greedy_objective_run(m, L, H, scr, &pb, opt, T, K);
    probe_free(&pb);
    return done;
}

// 1-opt descent: moves one unit to another option of its group while that lowers (T, K);
// deterministic (units and options in order, best move per sweep). max_sweeps bounds the work.
void zel_local_improve(const zel_model *m, zel_sol *s, int32_t max_sweeps) {
    int32_t N = m->n_ranks;
    if (m->n_units == 0 || s->T == INFINITY) return;
    double *L = malloc(sizeof(double) * 4 * (size_t)N);
    probe pb;
    if (!L || !probe_init(&pb, N)) {
        free(L);
        return;
    }
    double *H = L + N, *scr = H + N;
    if (!zel_sol_eval(m, s->opt, L, H, NULL, NULL)) {
        free(L), probe_free(&pb);
        return;
    }
    double T = zel_objective(m, L, H, scr);
    int64_t K = s->K;
    zel_rmq_build(&pb.rl, L);
    zel_rmq_build(&pb.rh, H);
    for (int32_t sweep = 0; sweep < max_sweeps; sweep++) {
        int64_t bu = -1;
        int32_t bj = -1;
        double bT = T;
        int64_t bK = K;
        for (int64_t u = 0; u < m->n_units; u++) {
            const zel_grp *G = &m->grps[m->grp_of[u]];
            const zel_opt *a = &G->opts[s->opt[u]];
            for (int32_t r = a->start; r < a->start + a->degree; r++) L[r] -= a->time, H[r] -= a->mem;
            probe_update(&pb, L, H, a);
            for (int32_t j = 0; j < G->n_opts; j++) {
                if (j == s->opt[u]) continue;
                const zel_opt *o = &G->opts[j];
                double t;
                if (!try_option(m, o, L, H, &pb, bT * (1 + ZEL_STRICT), &t)) continue;
                int64_t k = K - a->split + o->split;
                if (t < bT * (1 - ZEL_STRICT) || (t <= bT * (1 + ZEL_STRICT) && k < bK)) {
                    bT = t < bT ? t : bT;
                    bK = k, bu = u, bj = j;
                }
            }
            for (int32_t r = a->start; r < a->start + a->degree; r++) L[r] += a->time, H[r] += a->mem;
            probe_update(&pb, L, H, a);
        }
        if (bu < 0) break;
        const zel_grp *G = &m->grps[m->grp_of[bu]];
        const zel_opt *a = &G->opts[s->opt[bu]], *o = &G->opts[bj];
        for (int32_t r = a->start; r < a->start + a->degree; r++) L[r] -= a->time, H[r] -= a->mem;
        for (int32_t r = o->start; r < o->start + o->degree; r++) L[r] += o->time, H[r] += o->mem;
        probe_update(&pb, L, H, a);
        probe_update(&pb, L, H, o);
        s->opt[bu] = bj;
        T = zel_objective(m, L, H, scr);
        K = bK;
    }
    free(L), probe_free(&pb);
    zel_sol_canon(m, s);
    zel_sol_eval(m, s->opt, NULL, NULL, &s->T, &s->K);
}

int zel_heuristic(const zel_model *m, double lb, zel_sol *out) {
    return zel_heuristic_until(m, lb, 0, out);
}

// The ladder: the full one, or (quick) the short one without the objective-driven pass and
// the local search, with units [0, n_pre) fixed to pre[].
static int heuristic_run(const zel_model *m, double lb, double t_end, const int32_t *pre,
                         int64_t n_pre, int quick, zel_sol *out) {
    int32_t N = m->n_ranks;
    out->T = INFINITY;
    out->K = 0;
    if (m->n_units == 0) {
        zel_sol_eval(m, out->opt, NULL, NULL, &out->T, &out->K);
        return 1;
    }
    zel_rmq rl = {N, zel_rmq_levels(N), NULL, NULL}, rh = rl;
    size_t tsz = (size_t)rl.levels * (size_t)N;
    double *buf = malloc(sizeof(double) * (2 * tsz + 2 * (size_t)N));
    int32_t *lg = malloc(sizeof(int32_t) * (size_t)(N + 1));
    int32_t *opt = malloc(sizeof(int32_t) * (size_t)m->n_units);
    if (!buf || !lg || !opt) {
        free(buf), free(lg), free(opt);
        return 0;
    }
    rl.t = buf, rh.t = buf + tsz, rl.log2 = rh.log2 = lg;
    zel_rmq_init_log(&rl);
    double *L = buf + 2 * tsz, *H = L + N;
    static const double ladder[] = {0, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0, INFINITY};
    static const double short_ladder[] = {0, 3e-3, 3e-2, INFINITY};
    static const double quick_ladder[] = {3e-3};
    size_t work = 0;
    for (int32_t i = 0; i < m->n_grps; i++)
        work += (size_t)m->grps[i].count * (size_t)(m->grps[i].n_opts + N);
    int shrt = work > 4000000;
    const double *steps = quick ? quick_ladder : shrt ? short_ladder : ladder;
    size_t n_steps = quick  ? sizeof quick_ladder / sizeof *quick_ladder
                     : shrt ? sizeof short_ladder / sizeof *short_ladder
                            : sizeof ladder / sizeof *ladder;
    int found = 0;
    double prev_tgt = INFINITY, prev_above = -INFINITY;  // the last pass run: none yet
    for (size_t i = 0; i <= n_steps; i++) {
        double T;
        int64_t K;
        if (t_end > 0 && zg_time_now() > t_end) break;
        if (i == n_steps) {
            // memory-aware model only, and only where the work stays small
            if (quick || m->fill_mem <= 0 || work * (size_t)(N > 1 ? N : 1) > 2000000) continue;
            if (!greedy_objective(m, L, H, buf, opt, &T, &K)) continue;
        } else {
            double tgt = steps[i] == INFINITY ? INFINITY : lb * (1 + steps[i]);
            // the same choices as the last pass run (nothing it looked at lies in
            // (prev_tgt, tgt]): its result is already counted, and equal does not replace
            if (tgt >= prev_tgt && (prev_above == INFINITY || tgt < prev_above)) continue;
            int ok = greedy_pass(m, tgt, L, H, &rl, &rh, opt, &T, &K, &prev_above, t_end, pre,
                                 n_pre);
            prev_tgt = tgt;
            if (!ok) continue;
        }
        if (!found || T < out->T || (T == out->T && K < out->K)) {
            memcpy(out->opt, opt, sizeof(int32_t) * (size_t)m->n_units);
            out->T = T;
            out->K = K;
            found = 1;
        }
    }
    free(buf), free(lg), free(opt);
    if (found) {
        zel_sol_canon(m, out);
        if (!quick && out->T > lb * (1 + ZEL_REL_TOL) && m->fill_mem > 0 &&
            m->n_units * N <= 1024)
            zel_local_improve(m, out, 4 * (int32_t)(m->n_units < 64 ? m->n_units : 64));
    }
    return found;
}

int zel_heuristic_until(const zel_model *m, double lb, double t_end, zel_sol *out) {
    return heuristic_run(m, lb, t_end, NULL, 0, 0, out);
}

int zel_heuristic_prefix(const zel_model *m, double lb, const int32_t *pre, int64_t n_pre,
                         zel_sol *out) {
    return heuristic_run(m, lb, 0, pre, n_pre, 1, out);
}
