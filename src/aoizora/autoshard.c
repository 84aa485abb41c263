// autoshard.c — the Alpa-style baseline's problem: per-op sharding strategies on a 2-D logical
// mesh, node costs (roofline compute + the op's collectives with XLA auto-sharding's
// alpha-beta per mesh dimension), resharding edge costs, memory; the same emitter lowers a
// solution to evidence so the network model prices exactly the program the ILP chose.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aoizora/aoizora.h"

#define LROLE(l, d) ((d) == 0 ? (l) % 4 : (l) / 4)

// ---- emitter: cost (XLA formulas, sum) or evidence -------------------------------------------

typedef struct as_emit {
    const zg_aoi_as_problem *p;
    zg_aoi_evidence *ev;  // NULL: cost only
    double cost;
    zg_error *err;
    zg_status st;
    int32_t *grp[4];      // groups per mesh-dimension mask 1, 2, 3 (rank = i0 * m1 + i1)
} as_emit;

static double coll_cost(const zg_aoi_as_problem *p, zg_coll_kind k, double bytes, int mask) {
    double n = 1, a = 0, b = 0;
    for (int d = 0; d < 2; d++)
        if ((mask >> d & 1) && p->mesh[d] > 1) {
            n *= p->mesh[d];
            if (p->alpha[d] > a) a = p->alpha[d];
            if (p->beta[d] > b) b = p->beta[d];
        }
    if (n <= 1 || bytes <= 0) return 0;
    switch (k) {
    case ZG_COLL_ALL_REDUCE: return a + b * 2 * (n - 1) / n * bytes;
    case ZG_COLL_ALL_TO_ALL: return a + b * (n - 1) / n / n * bytes * (n / 2);
    default: return a + b * (n - 1) / n * bytes;
    }
}

static int eff_mask(const zg_aoi_as_problem *p, int mask) {
    int m = 0;
    for (int d = 0; d < 2; d++)
        if ((mask >> d & 1) && p->mesh[d] > 1) m |= 1 << d;
    return m;
}

static void e_coll(as_emit *e, const char *name, zg_coll_kind k, double bytes, int mask,
                   int32_t overlap) {
    mask = eff_mask(e->p, mask);
    if (e->st || !mask || bytes <= 0) return;
    if (!e->ev) {
        e->cost += coll_cost(e->p, k, bytes, mask);
        return;
    }
    int32_t S = 1, N = e->p->mesh[0] * e->p->mesh[1];
    for (int d = 0; d < 2; d++)
        if (mask >> d & 1) S *= e->p->mesh[d];
    e->st = zg_aoi_evidence_coll(e->ev, name, k, bytes, N / S, S, e->grp[mask], overlap, e->err);
}

static double roofline(const zg_net *net, double flops, double bytes) {
    double a = flops / (net->peak_flops * net->flops_eff), b = bytes / net->hbm_bw;
    return a > b ? a : b;
}

static void e_comp(as_emit *e, const char *name, double flops, double bytes) {
    if (e->st) return;
    if (!e->ev) e->cost += roofline(e->p->net, flops, bytes);
    else e->st = zg_aoi_evidence_compute(e->ev, name, flops, bytes, e->err);
}

// ---- strategies -------------------------------------------------------------------------------

static double prod_role(const zg_aoi_as_problem *p, const zg_aoi_as_strat *s, int role) {
    double v = 1;
    for (int d = 0; d < 2; d++)
        if (s->role[d] == role) v *= p->mesh[d];
    return v;
}
static int mask_roles(const zg_aoi_as_problem *p, const zg_aoi_as_strat *s, int roles) {
    int m = 0;
    for (int d = 0; d < 2; d++)
        if (p->mesh[d] > 1 && (roles >> s->role[d] & 1)) m |= 1 << d;
    return m;
}
static double prod_mask(const zg_aoi_as_problem *p, int mask) {
    double v = 1;
    for (int d = 0; d < 2; d++)
        if (mask >> d & 1) v *= p->mesh[d];
    return v;
}

typedef struct op_dims {
    double rows, qtok, hw, weights;  // local rows (batch x sequence), head width, params (local, unsharded by FSDP)
    double bl;                       // local batch
    int fsdp_mask;
} op_dims;

static op_dims dims_of(const zg_aoi_as_problem *p, const zg_aoi_as_op *op, const zg_aoi_as_strat *s) {
    const zg_aoi_graph *g = p->g;
    op_dims o;
    o.bl = g->work.batch / prod_role(p, s, ZG_AS_B);
    o.rows = o.bl * ceil((double)g->seq / prod_role(p, s, ZG_AS_S));
    o.qtok = o.rows;
    o.hw = (double)g->work.model.dim / prod_role(p, s, ZG_AS_D);
    double wsh = prod_role(p, s, ZG_AS_D) * prod_role(p, s, ZG_AS_K);
    o.weights = op->kind == ZG_AS_GEMM ? (double)op->k * op->n / wsh
                : op->kind == ZG_AS_XATTN ? (double)op->k * op->n / wsh : 0;
    o.fsdp_mask = s->fsdp ? mask_roles(p, s, 1 << ZG_AS_R | 1 << ZG_AS_B | 1 << ZG_AS_S) : 0;
    return o;
}

// Forward (bwd = 0) or backward (bwd = 1, with the gradient sync) of one op; fsdp all-gather
// is emitted by the caller (it is a prefetch).
static void emit_node(as_emit *e, const zg_aoi_as_op *op, const zg_aoi_as_strat *s, int bwd) {
    const zg_aoi_as_problem *p = e->p;
    const zg_aoi_graph *g = p->g;
    op_dims o = dims_of(p, op, s);
    char nm[48];
    snprintf(nm, sizeof nm, "%s%s", op->name, bwd ? "_bwd" : "");
    int mD = mask_roles(p, s, 1 << ZG_AS_D), mS = mask_roles(p, s, 1 << ZG_AS_S);
    int mK = mask_roles(p, s, 1 << ZG_AS_K);
    double mult = bwd ? 2 : 1;
    switch (op->kind) {
    case ZG_AS_ELEM: {
        double el = o.rows * op->elem_width / prod_role(p, s, ZG_AS_D);
        e_comp(e, nm, mult * 4 * el, mult * 2 * el);
        e_coll(e, bwd ? "ar_norm_stats_bwd" : "ar_norm_stats", ZG_COLL_ALL_REDUCE, o.rows * 2 * 4, mD, 0);
        break;
    }
    case ZG_AS_GEMM: {
        double kl = op->k / prod_role(p, s, ZG_AS_K), nl = op->n / prod_role(p, s, ZG_AS_D);
        double fl = 2 * o.rows * kl * nl, by = 2 * (o.rows * kl + kl * nl + o.rows * nl);
        if (!bwd) {
            e_comp(e, nm, fl, by);
            e_coll(e, "ar_out_k", ZG_COLL_ALL_REDUCE, 2 * o.rows * nl, mK, 0);
        } else {
            e_comp(e, nm, 2 * fl, 2 * by);
            e_coll(e, "ar_dx_n", ZG_COLL_ALL_REDUCE, 2 * o.rows * kl, mD, 0);
        }
        break;
    }
    case ZG_AS_SATTN: {
        double kv = o.bl * (double)g->seq * o.hw;  // full-sequence k or v per device
        double fl = 4 * o.qtok * g->seq * o.hw, by = 2 * (2 * o.qtok * o.hw + 2 * kv);
        if (!bwd) {
            e_coll(e, "ag_kv_seq", ZG_COLL_ALL_GATHER, 2 * 2 * kv, mS, 0);
            e_comp(e, nm, fl, by);
        } else {
            e_comp(e, nm, 2.5 * fl, 2 * by);
            e_coll(e, "rs_dkv_seq", ZG_COLL_REDUCE_SCATTER, 2 * 2 * kv, mS, 0);
        }
        break;
    }
    case ZG_AS_XATTN: {
        double T = (double)g->text, kvl = o.bl * T * o.hw;
        double fl = 4 * o.qtok * T * o.hw + 2 * o.bl * T * op->k * (op->n / prod_role(p, s, ZG_AS_D));
        double by = 2 * (2 * o.qtok * o.hw + 2 * kvl + o.bl * T * op->k + o.weights);
        e_comp(e, nm, (bwd ? 2.5 : 1) * fl, mult * by);
        if (bwd) e_coll(e, "ar_dtext_n", ZG_COLL_ALL_REDUCE, 2 * o.bl * T * op->k, mD, 0);
        break;
    }
    }
    if (bwd && o.weights > 0) {
        int mrep = mask_roles(p, s, 1 << ZG_AS_R | 1 << ZG_AS_B | 1 << ZG_AS_S);
        if (s->fsdp) e_coll(e, "fsdp_rs_grads", ZG_COLL_REDUCE_SCATTER, 2 * o.weights, mrep, 1);
        else e_coll(e, "ar_grads", ZG_COLL_ALL_REDUCE, 2 * o.weights, mrep, 1);
    }
}

static void emit_fsdp(as_emit *e, const zg_aoi_as_op *op, const zg_aoi_as_strat *s) {
    op_dims o = dims_of(e->p, op, s);
    if (s->fsdp) e_coll(e, "fsdp_ag_weights", ZG_COLL_ALL_GATHER, 2 * o.weights, o.fsdp_mask, 1);
}

// Resharding a -> b of a full tensor of `bytes`; bwd = the reverse (gradients: b -> a).
static void emit_reshard(as_emit *e, int32_t a, int32_t b, double bytes, int bwd, const char *name) {
    const zg_aoi_as_problem *p = e->p;
    double shard_all = 1;
    for (int d = 0; d < 2; d++)
        if (LROLE(a, d) != ZG_AS_R) shard_all *= p->mesh[d];
    for (int d = 0; d < 2; d++) {
        int ra = LROLE(a, d), rb = LROLE(b, d);
        if (p->mesh[d] <= 1 || ra == rb || ra == ZG_AS_R) continue;
        int other = 1 - d;
        if (rb != ZG_AS_R && p->mesh[other] <= 1) {
            e_coll(e, name, ZG_COLL_ALL_TO_ALL, bytes / shard_all, 1 << d, 0);
        } else {
            double res = bytes / (LROLE(a, other) != ZG_AS_R ? p->mesh[other] : 1);
            e_coll(e, name, bwd ? ZG_COLL_REDUCE_SCATTER : ZG_COLL_ALL_GATHER, res, 1 << d, 0);
        }
    }
}

double zg_aoi_as_reshard_s(const zg_aoi_as_problem *p, int32_t a, int32_t b, double bytes) {
    as_emit e = {p, NULL, 0, NULL, ZG_OK, {0}};
    emit_reshard(&e, a, b, bytes, 0, "reshard");
    return e.cost;
}

double zg_aoi_as_edge_mult(const zg_aoi_as_problem *p) { return p->g->work.training ? 3.0 : 1.0; }

int32_t zg_aoi_as_anchor(const zg_aoi_as_block *blk, int32_t j) {
    for (int32_t i = j - 1; i >= 0; i--)
        if (blk->ops[i].res) return i;
    return blk->n_ops - 1;
}

static double out_bytes(const zg_aoi_as_problem *p, const zg_aoi_as_op *op) {
    return 2.0 * p->g->work.batch * (double)p->g->seq * op->out_width;
}

double zg_aoi_as_edge_s(const zg_aoi_as_problem *p, int32_t b, int32_t j, int32_t sp, int32_t sa,
                        int32_t sj) {
    const zg_aoi_as_block *blk = &p->blocks[b];
    int32_t pj = j ? j - 1 : blk->n_ops - 1;
    const zg_aoi_as_op *op = &blk->ops[j], *prev = &blk->ops[pj];
    double c = zg_aoi_as_reshard_s(p, prev->s[sp].lout, op->s[sj].lin, out_bytes(p, prev));
    if (op->res && sa >= 0) {
        const zg_aoi_as_op *an = &blk->ops[zg_aoi_as_anchor(blk, j)];
        c += zg_aoi_as_reshard_s(p, an->s[sa].lout, op->s[sj].lin, out_bytes(p, an));
    }
    return c * zg_aoi_as_edge_mult(p) * blk->repeat;
}

// ---- problem construction ---------------------------------------------------------------------

static int role_ok(const zg_aoi_as_op *op, int r) {
    switch (op->kind) {
    case ZG_AS_ELEM: return r != ZG_AS_K;
    case ZG_AS_GEMM: return 1;
    default: return r != ZG_AS_K;
    }
}

static int layout_of(const zg_aoi_as_op *op, const uint8_t role[2], int out) {
    int l[2];
    for (int d = 0; d < 2; d++) {
        int r = role[d];
        if (op->kind == ZG_AS_GEMM) {
            if (r == ZG_AS_K) r = out ? ZG_AS_R : ZG_AS_D;
            else if (r == ZG_AS_D && !out) r = ZG_AS_R;
        }
        l[d] = r;
    }
    return l[0] + 4 * l[1];
}

static int strat_legal(const zg_aoi_as_problem *p, const zg_aoi_as_op *op, const zg_aoi_as_strat *s) {
    const zg_aoi_graph *g = p->g;
    const zg_model *m = &g->work.model;
    double pb = prod_role(p, s, ZG_AS_B), ps = prod_role(p, s, ZG_AS_S);
    double pd = prod_role(p, s, ZG_AS_D), pk = prod_role(p, s, ZG_AS_K);
    if (g->work.batch % (int64_t)pb) return 0;
    if ((double)g->seq < 2 * ps) return 0;
    switch (op->kind) {
    case ZG_AS_ELEM: if (m->dim % (int64_t)pd) return 0; break;
    case ZG_AS_GEMM:
        if (op->n % (int64_t)pd || op->k % (int64_t)pk) return 0;
        if (op->qkv && m->n_heads % (int64_t)pd) return 0;
        break;
    default: if (m->n_heads % (int64_t)pd) return 0; break;
    }
    if (s->fsdp) {
        if (op->kind != ZG_AS_GEMM && op->kind != ZG_AS_XATTN) return 0;
        if (!mask_roles(p, s, 1 << ZG_AS_R | 1 << ZG_AS_B | 1 << ZG_AS_S)) return 0;
    }
    return 1;
}

static zg_status build_strats(zg_aoi_as_problem *p, zg_aoi_as_block *blk, zg_aoi_as_op *op,
                              int last, zg_error *err) {
    op->s = zg_calloc(2 * ZG_AS_NROLES * ZG_AS_NROLES, sizeof *op->s, err);
    if (!op->s) return err ? err->status : ZG_ERR_NOMEM;
    double bpp = p->g->work.training ? 16.0 : 2.0, mult = p->g->work.training ? 2.0 : 1.0;
    for (int r0 = 0; r0 < ZG_AS_NROLES; r0++)
        for (int r1 = 0; r1 < ZG_AS_NROLES; r1++)
            for (int fs = 0; fs < 2; fs++) {
                if ((p->mesh[0] == 1 && r0) || (p->mesh[1] == 1 && r1)) continue;
                if (!role_ok(op, r0) || !role_ok(op, r1)) continue;
                zg_aoi_as_strat s;
                memset(&s, 0, sizeof s);
                s.role[0] = (uint8_t)r0, s.role[1] = (uint8_t)r1, s.fsdp = (uint8_t)fs;
                if (!strat_legal(p, op, &s)) continue;
                s.lin = (uint8_t)layout_of(op, s.role, 0);
                s.lout = (uint8_t)layout_of(op, s.role, 1);
                as_emit e = {p, NULL, 0, NULL, ZG_OK, {0}};
                emit_fsdp(&e, op, &s);
                emit_node(&e, op, &s, 0);
                e.cost *= mult;  // training: forward + recomputed forward
                if (p->g->work.training) emit_node(&e, op, &s, 1);
                s.node_s = e.cost * blk->repeat;
                op_dims o = dims_of(p, op, &s);
                double w = o.weights * bpp / (s.fsdp ? prod_mask(p, o.fsdp_mask) : 1);
                double act = 2.0 * o.rows * op->out_width / prod_role(p, &s, ZG_AS_D);
                s.mem = w * blk->repeat + act;
                if (p->g->work.training && last)  // checkpointed block inputs
                    s.mem += (double)blk->repeat * act;
                op->s[op->n_strat++] = s;
            }
    return ZG_OK;
}

static void add_op(zg_aoi_as_block *b, const zg_aoi_node *n, zg_aoi_as_kind kind, double d) {
    zg_aoi_as_op *op = &b->ops[b->n_ops++];
    memset(op, 0, sizeof *op);
    snprintf(op->name, sizeof op->name, "%s", n->name);
    op->kind = kind;
    op->res = kind == ZG_AS_ELEM && !strncmp(n->name, "res", 3);
    op->k = n->k, op->n = n->n, op->qkv = n->qkv;
    op->elem_width = n->elem_width;
    op->out_width = kind == ZG_AS_GEMM ? (double)n->n : d;
    op->in_width = kind == ZG_AS_GEMM ? (double)n->k : kind == ZG_AS_SATTN ? 3 * d : d;
}

zg_status zg_aoi_as_build(const zg_aoi_graph *g, const zg_net *net, int32_t m0, int32_t m1,
                          zg_aoi_as_problem *p, zg_error *err) {
    memset(p, 0, sizeof *p);
    if (m0 < 1 || m1 < 1 || (int64_t)m0 * m1 != net->n_devices)
        return zg_error_set(err, ZG_ERR_INVALID, "autoshard: mesh %dx%d does not cover the %d devices of %s",
                            m0, m1, net->n_devices, net->name);
    p->g = g, p->net = net, p->mesh[0] = m0, p->mesh[1] = m1;
    for (int d = 0; d < 2; d++) {
        // XLA's ClusterEnvironment: one alpha and beta per mesh dimension; here from the
        // network's nominal one-link bandwidth and per-step latency (no placement, no sharing)
        p->alpha[d] = (p->mesh[d] - 1) * (net->alpha[ZG_COLL_ALL_GATHER] + net->link_lat);
        p->beta[d] = 1.0 / (net->link_bw * net->eff[ZG_COLL_ALL_GATHER]);
    }
    double d = g->work.model.dim;
    for (int bi = 0; bi < g->n_blocks; bi++) {
        const zg_aoi_block *gb = &g->blocks[bi];
        zg_aoi_as_block *b = &p->blocks[p->n_blocks++];
        snprintf(b->name, sizeof b->name, "%s", gb->name);
        b->repeat = gb->repeat;
        int64_t xk = 0, xn = 0;
        for (int i = 0; i < gb->n_nodes; i++) {
            const zg_aoi_node *n = &gb->nodes[i];
            if (n->kind == ZG_AOI_GEMM && n->text_rows) {  // folded into the cross-attention
                xk = n->k, xn = n->n;
                continue;
            }
            zg_aoi_as_kind k = n->kind == ZG_AOI_GEMM ? ZG_AS_GEMM
                               : n->kind == ZG_AOI_ELEM ? ZG_AS_ELEM
                               : n->cross ? ZG_AS_XATTN : ZG_AS_SATTN;
            add_op(b, n, k, d);
            if (k == ZG_AS_XATTN) b->ops[b->n_ops - 1].k = xk, b->ops[b->n_ops - 1].n = xn;
        }
        if (b->n_ops < 2 || !b->ops[b->n_ops - 1].res) {
            zg_aoi_as_free(p);
            return zg_error_set(err, ZG_ERR_INTERNAL, "autoshard: block %s does not end with a residual op",
                                gb->name);
        }
    }
    double bpp = g->work.training ? 16.0 : 2.0;
    p->mem_fixed = g->embed_params * bpp / net->n_devices;
    p->mem_cap = net->hbm_bytes * net->hbm_usable_frac;
    p->cutoff_s = INFINITY;
    for (int bi = 0; bi < p->n_blocks; bi++)
        for (int j = 0; j < p->blocks[bi].n_ops; j++) {
            zg_aoi_as_block *b = &p->blocks[bi];
            zg_status st = build_strats(p, b, &b->ops[j], j == b->n_ops - 1, err);
            if (!st && b->ops[j].n_strat == 0)
                st = zg_error_set(err, ZG_ERR_INFEASIBLE, "autoshard: op %s has no legal strategy on mesh %dx%d",
                                  b->ops[j].name, m0, m1);
            if (st) {
                zg_aoi_as_free(p);
                return st;
            }
        }
    return ZG_OK;
}

void zg_aoi_as_free(zg_aoi_as_problem *p) {
    for (int b = 0; b < p->n_blocks; b++)
        for (int j = 0; j < p->blocks[b].n_ops; j++) {
            free(p->blocks[b].ops[j].s);
            p->blocks[b].ops[j].s = NULL;
        }
}

void zg_aoi_as_eval(const zg_aoi_as_problem *p, const int32_t pick[2][ZG_AOI_MAX_NODES],
                    double *cost_s, double *mem) {
    double c = 0, m = p->mem_fixed;
    for (int b = 0; b < p->n_blocks; b++) {
        const zg_aoi_as_block *blk = &p->blocks[b];
        for (int j = 0; j < blk->n_ops; j++) {
            const zg_aoi_as_strat *s = &blk->ops[j].s[pick[b][j]];
            c += s->node_s;
            m += s->mem;
            int32_t pj = j ? j - 1 : blk->n_ops - 1;
            int32_t sa = blk->ops[j].res ? pick[b][zg_aoi_as_anchor(blk, j)] : -1;
            c += zg_aoi_as_edge_s(p, b, j, pick[b][pj], sa, pick[b][j]);
        }
    }
    *cost_s = c, *mem = m;
}

// ---- lowering a solution to evidence ----------------------------------------------------------

static int32_t *mesh_groups(const int32_t mesh[2], int mask, zg_error *err) {
    int32_t N = mesh[0] * mesh[1];
    int32_t *g = zg_calloc((size_t)N, sizeof *g, err);
    if (!g) return NULL;
    int32_t k = 0;
    if (mask == 1)
        for (int32_t i1 = 0; i1 < mesh[1]; i1++)
            for (int32_t i0 = 0; i0 < mesh[0]; i0++) g[k++] = i0 * mesh[1] + i1;
    else
        for (int32_t r = 0; r < N; r++) g[k++] = r;
    return g;
}

static int32_t seg_compute(const zg_aoi_segment *s) {
    int32_t k = 0;
    for (int32_t i = 0; i < s->n_ops; i++) k += !s->ops[i].is_coll;
    return k;
}

static void lower_fwd_ops(as_emit *e, const zg_aoi_as_block *blk, const int32_t *pick,
                          int32_t *ag_idx) {
    for (int j = 0; j < blk->n_ops && !e->st; j++) {
        const zg_aoi_as_op *op = &blk->ops[j];
        const zg_aoi_as_strat *s = &op->s[pick[j]];
        int32_t pj = j ? j - 1 : blk->n_ops - 1;
        const zg_aoi_as_op *prev = &blk->ops[pj];
        emit_reshard(e, prev->s[pick[pj]].lout, s->lin, out_bytes(e->p, prev), 0, "reshard");
        if (op->res) {
            const zg_aoi_as_op *an = &blk->ops[zg_aoi_as_anchor(blk, j)];
            emit_reshard(e, an->s[pick[zg_aoi_as_anchor(blk, j)]].lout, s->lin, out_bytes(e->p, an), 0,
                         "reshard_residual");
        }
        zg_aoi_segment *sg = &e->ev->segs[e->ev->n_segs - 1];
        int32_t before = sg->n_ops;
        emit_fsdp(e, op, s);
        if (s->fsdp && sg->n_ops > before) ag_idx[j] = before;
        emit_node(e, op, s, 0);
    }
}

zg_status zg_aoi_as_lower(const zg_aoi_as_problem *p, const zg_aoi_as_solution *sol,
                          zg_aoi_evidence *ev, zg_error *err) {
    const zg_aoi_graph *g = p->g;
    const zg_model *m = &g->work.model;
    int32_t N = p->mesh[0] * p->mesh[1];
    if (!sol->feasible) return zg_error_set(err, ZG_ERR_INVALID, "autoshard: lowering an infeasible solution");
    zg_aoi_evidence_init(ev, "aoizora-autoshard", N);
    ev->n_axes = 2;
    for (int d = 0; d < 2; d++) {
        ev->mesh_shape[d] = p->mesh[d];
        snprintf(ev->axis_names[d], sizeof ev->axis_names[d], "%s", d ? "m1" : "m0");
    }
    ev->peak_mem_bytes = sol->mem;
    snprintf(ev->peak_mem_source, sizeof ev->peak_mem_source, "ilp");
    as_emit e = {p, ev, 0, err, ZG_OK, {0}};
    for (int mask = 1; mask < 4 && !e.st; mask++)
        if (!(e.grp[mask] = mesh_groups(p->mesh, mask, err))) e.st = err ? err->status : ZG_ERR_NOMEM;
    const zg_aoi_as_op *first = &p->blocks[0].ops[0];
    const zg_aoi_as_strat *fs = &first->s[sol->pick[0][0]];
    double rows = g->work.batch / prod_role(p, fs, ZG_AS_B) * ceil((double)g->seq / prod_role(p, fs, ZG_AS_S));
    double pin = (double)m->in_channels * m->patch[0] * m->patch[1] * m->patch[2], d = m->dim;
    double bl = g->work.batch / prod_role(p, fs, ZG_AS_B);
    if (!e.st) e.st = zg_aoi_evidence_segment(ev, "embed", 1, err);
    e_comp(&e, "patch_embed", 2 * rows * pin * d, 2 * (rows * (pin + d) + pin * d));
    e_comp(&e, "text_embed", 2 * bl * g->text * m->text_dim * d * 2,
           2 * (bl * g->text * (m->text_dim + d) + m->text_dim * d + d * d));
    int tr = g->work.training;
    for (int b = 0; b < p->n_blocks && !e.st; b++) {
        const zg_aoi_as_block *blk = &p->blocks[b];
        char nm[48];
        int32_t ag_idx[ZG_AOI_MAX_NODES];
        for (int j = 0; j < ZG_AOI_MAX_NODES; j++) ag_idx[j] = -1;
        snprintf(nm, sizeof nm, "%s%s", blk->name, tr ? "_fwd" : "");
        if ((e.st = zg_aoi_evidence_segment(ev, nm, blk->repeat, err))) break;
        lower_fwd_ops(&e, blk, sol->pick[b], ag_idx);
        zg_aoi_segment *sg = &ev->segs[ev->n_segs - 1];
        for (int j = 0; j < blk->n_ops && !e.st; j++)
            if (ag_idx[j] >= 0) sg->ops[ag_idx[j]].overlap = seg_compute(sg);
    }
    for (int b = tr ? p->n_blocks - 1 : -1; b >= 0 && !e.st; b--) {
        const zg_aoi_as_block *blk = &p->blocks[b];
        const int32_t *pick = sol->pick[b];
        char nm[48];
        int32_t ag_idx[ZG_AOI_MAX_NODES];
        for (int j = 0; j < ZG_AOI_MAX_NODES; j++) ag_idx[j] = -1;
        snprintf(nm, sizeof nm, "%s_bwd", blk->name);
        if ((e.st = zg_aoi_evidence_segment(ev, nm, blk->repeat, err))) break;
        lower_fwd_ops(&e, blk, pick, ag_idx);  // recompute
        for (int j = blk->n_ops - 1; j >= 0 && !e.st; j--) {
            const zg_aoi_as_op *op = &blk->ops[j];
            const zg_aoi_as_strat *s = &op->s[pick[j]];
            emit_node(&e, op, s, 1);
            int32_t pj = j ? j - 1 : blk->n_ops - 1;
            const zg_aoi_as_op *prev = &blk->ops[pj];
            if (op->res) {
                int32_t a = zg_aoi_as_anchor(blk, j);
                emit_reshard(&e, blk->ops[a].s[pick[a]].lout, s->lin, out_bytes(p, &blk->ops[a]), 1,
                             "reshard_residual_bwd");
            }
            emit_reshard(&e, prev->s[pick[pj]].lout, s->lin, out_bytes(p, prev), 1, "reshard_bwd");
        }
        zg_aoi_segment *sg = &ev->segs[ev->n_segs - 1];
        int32_t nc = seg_compute(sg);
        for (int32_t i = 0; i < sg->n_ops; i++)
            if (sg->ops[i].is_coll && sg->ops[i].overlap == 1 && strstr(sg->ops[i].name, "grads"))
                sg->ops[i].overlap = nc;
        for (int j = 0; j < blk->n_ops; j++)
            if (ag_idx[j] >= 0) sg->ops[ag_idx[j]].overlap = nc;
    }
    if (!e.st) e.st = zg_aoi_evidence_segment(ev, "head", 1, err);
    const zg_aoi_as_block *lb = &p->blocks[p->n_blocks - 1];
    const zg_aoi_as_strat *ls = &lb->ops[lb->n_ops - 1].s[sol->pick[p->n_blocks - 1][lb->n_ops - 1]];
    double hrows = g->work.batch / prod_role(p, ls, ZG_AS_B) * ceil((double)g->seq / prod_role(p, ls, ZG_AS_S));
    e_comp(&e, "head", 2 * hrows * d * pin, 2 * (hrows * (d + pin) + pin * d));
    if (!tr) {
        int mask = 0;
        for (int dd = 0; dd < 2; dd++)
            if (LROLE(ls->lout, dd) == ZG_AS_B || LROLE(ls->lout, dd) == ZG_AS_S) mask |= 1 << dd;
        e_coll(&e, "ag_output", ZG_COLL_ALL_GATHER, g->work.batch * (double)g->seq * pin * 2, mask, 0);
        e_comp(&e, "cfg_combine", 3 * (double)g->seq * pin, 4 * (double)g->seq * pin * 2);
    } else {
        double ploc = g->embed_params / N;
        for (int b = 0; b < p->n_blocks; b++)
            for (int j = 0; j < p->blocks[b].n_ops; j++) {
                const zg_aoi_as_op *op = &p->blocks[b].ops[j];
                const zg_aoi_as_strat *s = &op->s[sol->pick[b][j]];
                op_dims o = dims_of(p, op, s);
                ploc += p->blocks[b].repeat * o.weights / (s->fsdp ? prod_mask(p, o.fsdp_mask) : 1);
            }
        if (!e.st) e.st = zg_aoi_evidence_segment(ev, "optimizer", 1, err);
        e_comp(&e, "adamw", 12 * ploc, 28 * ploc);
    }
    if (!e.st) e.st = zg_aoi_evidence_finalize(ev, err);
    for (int mask = 1; mask < 4; mask++) free(e.grp[mask]);
    if (e.st) zg_aoi_evidence_free(ev);
    return e.st;
}

void zg_aoi_as_label(const zg_aoi_as_problem *p, const zg_aoi_as_solution *sol, char *buf,
                     size_t n) {
    static const char R[] = "RBSDK";
    size_t l = (size_t)snprintf(buf, n, "ilp mesh %dx%d", p->mesh[0], p->mesh[1]);
    for (int b = 0; b < p->n_blocks && l < n; b++)
        for (int j = 0; j < p->blocks[b].n_ops && l < n; j++) {
            const zg_aoi_as_op *op = &p->blocks[b].ops[j];
            if (op->kind == ZG_AS_ELEM) continue;
            const zg_aoi_as_strat *s = &op->s[sol->pick[b][j]];
            l += (size_t)snprintf(buf + l, n - l, " %s:%c%c%s", op->name, R[s->role[0]], R[s->role[1]],
                                  s->fsdp ? "*" : "");
        }
}

static void axes_spec(const zg_aoi_as_strat *s, const int32_t mesh[2], int role, int extra_mask,
                      char *buf, size_t n) {
    char tmp[32] = "";
    int k = 0;
    for (int d = 0; d < 2; d++)
        if (mesh[d] > 1 && (s->role[d] == role || (extra_mask >> d & 1))) {
            size_t l = strlen(tmp);
            snprintf(tmp + l, sizeof tmp - l, "%s'm%d'", k++ ? "," : "", d);
        }
    if (k == 0) snprintf(buf, n, "None");
    else if (k == 1) snprintf(buf, n, "%s", tmp);
    else snprintf(buf, n, "(%s)", tmp);
}

void zg_aoi_as_partition_specs(const zg_aoi_as_problem *p, const zg_aoi_as_solution *sol, char *buf,
                               size_t n) {
    size_t l = 0;
    buf[0] = 0;
    for (int b = 0; b < p->n_blocks && l < n; b++)
        for (int j = 0; j < p->blocks[b].n_ops && l < n; j++) {
            const zg_aoi_as_op *op = &p->blocks[b].ops[j];
            if (op->kind == ZG_AS_ELEM) continue;
            const zg_aoi_as_strat *s = &op->s[sol->pick[b][j]];
            char bs[24], ss[24], ds[24], ks[24], ws[24];
            axes_spec(s, p->mesh, ZG_AS_B, 0, bs, sizeof bs);
            axes_spec(s, p->mesh, ZG_AS_S, 0, ss, sizeof ss);
            axes_spec(s, p->mesh, ZG_AS_D, 0, ds, sizeof ds);
            int fm = s->fsdp ? mask_roles(p, s, 1 << ZG_AS_R | 1 << ZG_AS_B | 1 << ZG_AS_S) : 0;
            axes_spec(s, p->mesh, ZG_AS_K, fm, ks, sizeof ks);
            if (op->kind == ZG_AS_GEMM) {
                axes_spec(s, p->mesh, ZG_AS_K, 0, ws, sizeof ws);
                l += (size_t)snprintf(buf + l, n - l, "%s/%s: x [B,N,in] P(%s, %s, %s), w [in,out] P(%s, %s)\n",
                                      p->blocks[b].name, op->name, bs, ss, ws, ks, ds);
            } else {
                char wkv[80] = "";
                if (op->kind == ZG_AS_XATTN) snprintf(wkv, sizeof wkv, ", w_kv [D,2D] P(%s, %s)", ks, ds);
                l += (size_t)snprintf(buf + l, n - l, "%s/%s: q,k,v [B,N,H,hd] P(%s, %s, %s, None)%s\n",
                                      p->blocks[b].name, op->name, bs, ss, ds, wkv);
            }
        }
}
