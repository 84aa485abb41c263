// autoshard_solve.c — exact solvers for the Alpa-style auto-sharding problem (autoshard.c):
// COIN-OR CBC on the ILP (one-hot strategy variables, edge variables over layout pairs that
// linearize the resharding term, a memory row), and a Pareto dynamic program over the block's
// chain with residual skip edges and the loop wrap edge. The DP is exact: the cyclic wrap is
// handled by fixing the last op's strategy, the state carries the residual anchor, and each
// state keeps every (cost, memory) pair not dominated, so the memory constraint is exact too.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef ZG_HAVE_CBC
#include <Cbc_C_Interface.h>
#endif

#include "aoizora/aoizora.h"

// Edge cost tables by (producer layout, consumer layout), training multipliers and repeat in.
typedef struct edge_tabs {
    double main[ZG_AOI_MAX_NODES][16][16];
    double skip[ZG_AOI_MAX_NODES][16][16];
} edge_tabs;

static void make_tabs(const zg_aoi_as_problem *p, int b, edge_tabs *t) {
    const zg_aoi_as_block *blk = &p->blocks[b];
    double mult = zg_aoi_as_edge_mult(p) * blk->repeat;
    double full = 2.0 * p->g->work.batch * (double)p->g->seq;
    for (int j = 0; j < blk->n_ops; j++) {
        int32_t pj = j ? j - 1 : blk->n_ops - 1, an = zg_aoi_as_anchor(blk, j);
        for (int a = 0; a < 16; a++)
            for (int c = 0; c < 16; c++) {
                t->main[j][a][c] = mult * zg_aoi_as_reshard_s(p, a, c, full * blk->ops[pj].out_width);
                t->skip[j][a][c] = blk->ops[j].res
                                       ? mult * zg_aoi_as_reshard_s(p, a, c, full * blk->ops[an].out_width)
                                       : 0;
            }
    }
}

// ---- Pareto DP ----------------------------------------------------------------------------------

typedef struct ent {
    int32_t state;   // s_j * n_anchor + s_anchor
    int32_t prev;    // index into the previous op's entries (-1 at op 0)
    double c, m;
} ent;

typedef struct ents {
    ent *e;
    int32_t n;
} ents;

static int cmp_ent(const void *a, const void *b) {
    const ent *x = a, *y = b;
    if (x->state != y->state) return x->state < y->state ? -1 : 1;
    if (x->c != y->c) return x->c < y->c ? -1 : 1;
    if (x->m != y->m) return x->m < y->m ? -1 : 1;
    return (x->prev > y->prev) - (x->prev < y->prev);
}

typedef struct bfront {
    double c, m;
    int32_t start, entry;
} bfront;

static int cmp_bf(const void *a, const void *b) {
    const bfront *x = a, *y = b;
    if (x->c != y->c) return x->c < y->c ? -1 : 1;
    if (x->m != y->m) return x->m < y->m ? -1 : 1;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return (x->entry > y->entry) - (x->entry < y->entry);
}

// After-op anchor: the op whose output is the residual stream seen by op j + 1.
static int32_t after_anchor(const zg_aoi_as_block *blk, int32_t j) {
    return blk->ops[j].res ? j : zg_aoi_as_anchor(blk, j);
}

typedef struct dp_block {
    ents *tab;        // (n_starts * n_ops)
    int32_t n_starts;
    bfront *front;
    int32_t n_front;
} dp_block;

// ub: an upper bound on this block's optimal cost (INFINITY if unknown); entries whose cost
// plus the cheapest possible rest exceed it are dropped (costs are non-negative).
static zg_status dp_run_block(const zg_aoi_as_problem *p, int b, double mem_other_min,
                              double mem_other_max, double ub, dp_block *out, zg_error *err) {
    const zg_aoi_as_block *blk = &p->blocks[b];
    int32_t m = blk->n_ops, last = m - 1, ns = blk->ops[last].n_strat;
    edge_tabs *t = zg_calloc(1, sizeof *t, err);
    double rest_min[ZG_AOI_MAX_NODES + 1], rest_max[ZG_AOI_MAX_NODES + 1];
    double cost_rest[ZG_AOI_MAX_NODES + 1];
    out->tab = zg_calloc((size_t)ns * m, sizeof *out->tab, err);
    out->n_starts = ns;
    if (!t || !out->tab) {
        free(t);
        return err ? err->status : ZG_ERR_NOMEM;
    }
    make_tabs(p, b, t);
    rest_min[m] = mem_other_min + p->mem_fixed, rest_max[m] = mem_other_max + p->mem_fixed;
    cost_rest[m] = 0;
    for (int j = m - 1; j >= 0; j--) {
        double cl = INFINITY;
        for (int k = 0; k < blk->ops[j].n_strat; k++)
            if (blk->ops[j].s[k].node_s < cl) cl = blk->ops[j].s[k].node_s;
        cost_rest[j] = cost_rest[j + 1] + cl;
    }
    for (int j = m - 1; j >= 0; j--) {
        double lo = INFINITY, hi = 0;
        for (int k = 0; k < blk->ops[j].n_strat; k++) {
            if (blk->ops[j].s[k].mem < lo) lo = blk->ops[j].s[k].mem;
            if (blk->ops[j].s[k].mem > hi) hi = blk->ops[j].s[k].mem;
        }
        rest_min[j] = rest_min[j + 1] + lo, rest_max[j] = rest_max[j + 1] + hi;
    }
    zg_status st = ZG_OK;
    size_t fcap = 64;
    out->front = zg_calloc(fcap, sizeof *out->front, err);
    if (!out->front) st = err ? err->status : ZG_ERR_NOMEM;
    for (int32_t a0 = 0; a0 < ns && !st; a0++) {
        ents *row = out->tab + (size_t)a0 * m;
        for (int32_t j = 0; j < m && !st; j++) {
            const zg_aoi_as_op *op = &blk->ops[j];
            int32_t pj = j ? j - 1 : last, pa = j ? after_anchor(blk, j - 1) : last;
            int32_t na_prev = blk->ops[pa].n_strat;
            int32_t an_now = after_anchor(blk, j), na_now = blk->ops[an_now].n_strat;
            ent start = {a0 * blk->ops[last].n_strat + a0, -1, 0, 0};
            const ent *pe = j ? row[j - 1].e : &start;
            int32_t npe = j ? row[j - 1].n : 1;
            size_t cap = (size_t)npe * op->n_strat + 1, n = 0;
            ent *cand = zg_calloc(cap, sizeof *cand, err);
            if (!cand) {
                st = err ? err->status : ZG_ERR_NOMEM;
                break;
            }
            for (int32_t i = 0; i < npe; i++) {
                int32_t sp = pe[i].state / na_prev, sa = pe[i].state % na_prev;
                int lp = blk->ops[pj].s[sp].lout;
                int la = op->res ? blk->ops[zg_aoi_as_anchor(blk, j)].s[sa].lout : 0;
                for (int32_t k = 0; k < op->n_strat; k++) {
                    if (j == last && k != a0) continue;
                    const zg_aoi_as_strat *s = &op->s[k];
                    double c = pe[i].c + s->node_s + t->main[j][lp][s->lin];
                    if (op->res) c += t->skip[j][la][s->lin];
                    double mm = pe[i].m + s->mem;
                    if (mm + rest_min[j + 1] > p->mem_cap) continue;
                    if (c + cost_rest[j + 1] > ub * (1 + 1e-12)) continue;
                    int32_t anc = an_now == j ? k : sa;
                    cand[n++] = (ent){k * na_now + anc, j ? i : -1, c, mm};
                }
            }
            qsort(cand, n, sizeof *cand, cmp_ent);
            // Pareto filter per state, plus the slack rule: once an entry fits with the most
            // memory-hungry completion, costlier entries of the state are useless
            size_t w = 0;
            for (size_t i = 0; i < n;) {
                size_t e = i;
                double best_m = INFINITY;
                int slack = 0;
                while (e < n && cand[e].state == cand[i].state) {
                    if (!slack && cand[e].m < best_m) {
                        best_m = cand[e].m;
                        cand[w++] = cand[e];
                        if (cand[e].m + rest_max[j + 1] <= p->mem_cap) slack = 1;
                    }
                    e++;
                }
                i = e;
            }
            row[j].e = cand, row[j].n = (int32_t)w;
        }
        if (st) break;
        for (int32_t i = 0; i < row[last].n; i++) {
            if ((size_t)out->n_front == fcap) {
                bfront *nf = zg_realloc_array(out->front, fcap * 2, sizeof *nf, err);
                if (!nf) {
                    st = err ? err->status : ZG_ERR_NOMEM;
                    break;
                }
                out->front = nf, fcap *= 2;
            }
            out->front[out->n_front++] = (bfront){row[last].e[i].c, row[last].e[i].m, a0, i};
            // a complete solution that fits with the other blocks' largest choice bounds the rest
            if (row[last].e[i].m + rest_max[m] <= p->mem_cap && row[last].e[i].c < ub) ub = row[last].e[i].c;
        }
    }
    free(t);
    if (st) return st;
    qsort(out->front, (size_t)out->n_front, sizeof *out->front, cmp_bf);
    int32_t w = 0;
    double best_m = INFINITY;
    for (int32_t i = 0; i < out->n_front; i++)
        if (out->front[i].m < best_m) best_m = out->front[i].m, out->front[w++] = out->front[i];
    out->n_front = w;
    return ZG_OK;
}

static void dp_free_block(const zg_aoi_as_problem *p, int b, dp_block *d) {
    if (d->tab)
        for (int32_t i = 0; i < d->n_starts * p->blocks[b].n_ops; i++) free(d->tab[i].e);
    free(d->tab);
    free(d->front);
    memset(d, 0, sizeof *d);
}

static void dp_backtrack(const zg_aoi_as_problem *p, int b, const dp_block *d, const bfront *f,
                         int32_t *pick) {
    const zg_aoi_as_block *blk = &p->blocks[b];
    int32_t m = blk->n_ops;
    const ents *row = d->tab + (size_t)f->start * m;
    int32_t idx = f->entry;
    for (int32_t j = m - 1; j >= 0; j--) {
        const ent *e = &row[j].e[idx];
        pick[j] = e->state / blk->ops[after_anchor(blk, j)].n_strat;
        idx = e->prev;
    }
}

static void mem_range(const zg_aoi_as_problem *p, int b, double *lo, double *hi) {
    *lo = *hi = 0;
    for (int j = 0; j < p->blocks[b].n_ops; j++) {
        double a = INFINITY, z = 0;
        for (int k = 0; k < p->blocks[b].ops[j].n_strat; k++) {
            double v = p->blocks[b].ops[j].s[k].mem;
            if (v < a) a = v;
            if (v > z) z = v;
        }
        *lo += a, *hi += z;
    }
}

zg_status zg_aoi_as_solve_dp(const zg_aoi_as_problem *p, zg_aoi_as_solution *sol, zg_error *err) {
    memset(sol, 0, sizeof *sol);
    snprintf(sol->solver, sizeof sol->solver, "dp");
    dp_block d[2];
    memset(d, 0, sizeof d);
    double lo[2] = {0, 0}, hi[2] = {0, 0};
    for (int b = 0; b < p->n_blocks; b++) mem_range(p, b, &lo[b], &hi[b]);
    zg_status st = ZG_OK;
    for (int b = 0; b < p->n_blocks && !st; b++)
        st = dp_run_block(p, b, p->n_blocks == 2 ? lo[1 - b] : 0, p->n_blocks == 2 ? hi[1 - b] : 0,
                          p->n_blocks == 1 ? p->cutoff_s : INFINITY, &d[b], err);
    if (!st) {
        double best = INFINITY;
        int32_t bi[2] = {-1, -1};
        if (p->n_blocks == 1) {
            for (int32_t i = 0; i < d[0].n_front; i++)
                if (d[0].front[i].m + p->mem_fixed <= p->mem_cap && d[0].front[i].c < best)
                    best = d[0].front[i].c, bi[0] = i;
        } else {
            for (int32_t i = 0; i < d[0].n_front; i++)
                for (int32_t k = 0; k < d[1].n_front; k++) {
                    double c = d[0].front[i].c + d[1].front[k].c;
                    if (d[0].front[i].m + d[1].front[k].m + p->mem_fixed <= p->mem_cap && c < best)
                        best = c, bi[0] = i, bi[1] = k;
                }
        }
        if (bi[0] >= 0 && best > p->cutoff_s * (1 + 1e-9)) bi[0] = -1;
        if (bi[0] < 0 && isfinite(p->cutoff_s)) sol->cut = 1;
        if (bi[0] >= 0) {
            sol->feasible = 1;
            for (int b = 0; b < p->n_blocks; b++) dp_backtrack(p, b, &d[b], &d[b].front[bi[b]], sol->pick[b]);
            zg_aoi_as_eval(p, (const int32_t(*)[ZG_AOI_MAX_NODES])sol->pick, &sol->cost_s, &sol->mem);
        }
    }
    for (int b = 0; b < p->n_blocks; b++) dp_free_block(p, b, &d[b]);
    return st;
}

// ---- CBC ------------------------------------------------------------------------------------------

int zg_aoi_as_have_cbc(void) {
#ifdef ZG_HAVE_CBC
    return 1;
#else
    return 0;
#endif
}

#ifdef ZG_HAVE_CBC
typedef struct ilp {
    Cbc_Model *m;
    int32_t ncols;
    int32_t *ri;      // row scratch
    double *rv;
    int32_t rcap;
} ilp;

static int32_t ilp_col(ilp *q, double obj, int integer) {
    Cbc_addCol(q->m, "", 0.0, 1.0, obj, (char)integer, 0, NULL, NULL);
    return q->ncols++;
}

// Edge between producer op `pr` (strategies -> lout) and consumer op `co` (-> lin): flow
// variables over layout pairs with marginals tied to the strategy variables.
static void ilp_edge(ilp *q, const zg_aoi_as_op *pr, int32_t pr_col0, const zg_aoi_as_op *co,
                     int32_t co_col0, double tab[16][16]) {
    int used_a[16] = {0}, used_b[16] = {0};
    for (int k = 0; k < pr->n_strat; k++) used_a[pr->s[k].lout] = 1;
    for (int k = 0; k < co->n_strat; k++) used_b[co->s[k].lin] = 1;
    int32_t col[16][16];
    for (int a = 0; a < 16; a++)
        for (int c = 0; c < 16; c++) col[a][c] = used_a[a] && used_b[c] ? ilp_col(q, tab[a][c] * 1e6, 0) : -1;
    for (int a = 0; a < 16; a++) {
        if (!used_a[a]) continue;
        int32_t n = 0;
        for (int c = 0; c < 16; c++)
            if (col[a][c] >= 0) q->ri[n] = col[a][c], q->rv[n++] = 1;
        for (int k = 0; k < pr->n_strat; k++)
            if (pr->s[k].lout == a) q->ri[n] = pr_col0 + k, q->rv[n++] = -1;
        Cbc_addRow(q->m, "", n, q->ri, q->rv, 'E', 0.0);
    }
    for (int c = 0; c < 16; c++) {
        if (!used_b[c]) continue;
        int32_t n = 0;
        for (int a = 0; a < 16; a++)
            if (col[a][c] >= 0) q->ri[n] = col[a][c], q->rv[n++] = 1;
        for (int k = 0; k < co->n_strat; k++)
            if (co->s[k].lin == c) q->ri[n] = co_col0 + k, q->rv[n++] = -1;
        Cbc_addRow(q->m, "", n, q->ri, q->rv, 'E', 0.0);
    }
}
#endif

zg_status zg_aoi_as_solve_cbc(const zg_aoi_as_problem *p, zg_aoi_as_solution *sol, zg_error *err) {
    memset(sol, 0, sizeof *sol);
    snprintf(sol->solver, sizeof sol->solver, "cbc");
#ifndef ZG_HAVE_CBC
    (void)p;
    return zg_error_set(err, ZG_ERR_UNSUPPORTED,
                        "autoshard: built without COIN-OR CBC; use the dp solver (install coinor-libcbc-dev and rebuild)");
#else
    ilp q = {Cbc_newModel(), 0, NULL, NULL, 4096};
    q.ri = zg_calloc((size_t)q.rcap, sizeof *q.ri, err);
    q.rv = zg_calloc((size_t)q.rcap, sizeof *q.rv, err);
    edge_tabs *t = zg_calloc(1, sizeof *t, err);
    if (!q.m || !q.ri || !q.rv || !t) {
        if (q.m) Cbc_deleteModel(q.m);
        free(q.ri), free(q.rv), free(t);
        return zg_error_set(err, ZG_ERR_NOMEM, "autoshard: out of memory building the ILP");
    }
    Cbc_setLogLevel(q.m, 0);
    Cbc_setAllowableGap(q.m, 0.0);
    Cbc_setAllowableFractionGap(q.m, 0.0);
    Cbc_setObjSense(q.m, 1.0);
    int32_t col0[2][ZG_AOI_MAX_NODES];
    for (int b = 0; b < p->n_blocks; b++)
        for (int j = 0; j < p->blocks[b].n_ops; j++) {
            const zg_aoi_as_op *op = &p->blocks[b].ops[j];
            col0[b][j] = q.ncols;
            for (int k = 0; k < op->n_strat; k++) ilp_col(&q, op->s[k].node_s * 1e6, 1);
            int32_t n = 0;
            for (int k = 0; k < op->n_strat; k++) q.ri[n] = col0[b][j] + k, q.rv[n++] = 1;
            Cbc_addRow(q.m, "", n, q.ri, q.rv, 'E', 1.0);
        }
    for (int b = 0; b < p->n_blocks; b++) {
        const zg_aoi_as_block *blk = &p->blocks[b];
        make_tabs(p, b, t);
        for (int j = 0; j < blk->n_ops; j++) {
            int32_t pj = j ? j - 1 : blk->n_ops - 1;
            ilp_edge(&q, &blk->ops[pj], col0[b][pj], &blk->ops[j], col0[b][j], t->main[j]);
            if (blk->ops[j].res) {
                int32_t an = zg_aoi_as_anchor(blk, j);
                ilp_edge(&q, &blk->ops[an], col0[b][an], &blk->ops[j], col0[b][j], t->skip[j]);
            }
        }
    }
    // memory (GiB): sum of strategy memory <= cap - fixed
    int32_t n = 0;
    for (int b = 0; b < p->n_blocks; b++)
        for (int j = 0; j < p->blocks[b].n_ops; j++)
            for (int k = 0; k < p->blocks[b].ops[j].n_strat && n < q.rcap; k++)
                q.ri[n] = col0[b][j] + k, q.rv[n++] = p->blocks[b].ops[j].s[k].mem / 1073741824.0;
    Cbc_addRow(q.m, "mem", n, q.ri, q.rv, 'L', (p->mem_cap - p->mem_fixed) / 1073741824.0);
    // primal heuristics and cut generation cost more than they save on these small ILPs
    // (measured: 14B on v5e-4 3.8 s -> 0.7 s CPU); the search still proves optimality
    Cbc_setParameter(q.m, "heuristics", "off");
    Cbc_setParameter(q.m, "cuts", "off");
    if (isfinite(p->cutoff_s)) Cbc_setCutoff(q.m, p->cutoff_s * 1e6 * (1 + 1e-9));
    Cbc_solve(q.m);
    zg_status st = ZG_OK;
    if (Cbc_isProvenOptimal(q.m)) {
        const double *x = Cbc_getColSolution(q.m);
        sol->feasible = 1;
        for (int b = 0; b < p->n_blocks; b++)
            for (int j = 0; j < p->blocks[b].n_ops; j++) {
                int32_t best = 0;
                for (int k = 1; k < p->blocks[b].ops[j].n_strat; k++)
                    if (x[col0[b][j] + k] > x[col0[b][j] + best]) best = k;
                sol->pick[b][j] = best;
            }
        zg_aoi_as_eval(p, (const int32_t(*)[ZG_AOI_MAX_NODES])sol->pick, &sol->cost_s, &sol->mem);
    } else if (Cbc_isProvenInfeasible(q.m) && isfinite(p->cutoff_s)) {
        sol->cut = 1;  // nothing fits, or nothing beats the cutoff
    } else if (!Cbc_isProvenInfeasible(q.m)) {
        st = zg_error_set(err, ZG_ERR_INTERNAL, "autoshard: CBC stopped without a proof (status %d, secondary %d)",
                          Cbc_status(q.m), Cbc_secondaryStatus(q.m));
    }
    Cbc_deleteModel(q.m);
    free(q.ri), free(q.rv), free(t);
    return st;
#endif
}

zg_status zg_aoi_autoshard_run(const zg_aoi_graph *g, const zg_net *net, const char *solver,
                               zg_aoi_autoshard *out, zg_error *err) {
    memset(out, 0, sizeof *out);
    int use_cbc;
    if (!solver || !strcmp(solver, "auto")) use_cbc = zg_aoi_as_have_cbc();
    else if (!strcmp(solver, "cbc")) use_cbc = 1;
    else if (!strcmp(solver, "dp")) use_cbc = 0;
    else return zg_error_set(err, ZG_ERR_INVALID, "autoshard solver '%s': use auto, cbc or dp", solver);
    double t0 = zg_time_now();
    int32_t N = net->n_devices;
    for (int32_t m0 = 1; m0 * m0 <= N; m0++) {
        if (N % m0) continue;
        zg_aoi_as_problem p;
        zg_status st = zg_aoi_as_build(g, net, m0, N / m0, &p, err);
        if (st == ZG_ERR_INFEASIBLE) continue;
        if (st) return st;
        // later mesh shapes only matter if they beat the best so far: let the solver prune
        if (out->found) p.cutoff_s = out->sol.cost_s;
        zg_aoi_as_solution s;
        st = use_cbc ? zg_aoi_as_solve_cbc(&p, &s, err) : zg_aoi_as_solve_dp(&p, &s, err);
        zg_aoi_as_free(&p);
        if (st) return st;
        out->n_meshes++;
        if (s.feasible && (!out->found || s.cost_s < out->sol.cost_s * (1 - 1e-9))) {
            out->found = 1, out->sol = s, out->mesh[0] = m0, out->mesh[1] = N / m0;
        }
    }
    out->solve_s = zg_time_now() - t0;
    return ZG_OK;
}
