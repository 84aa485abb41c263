// lower.c — our SPMD "compiler": (graph, sharding candidate) -> the per-device program as
// evidence: compute ops with FLOPs and HBM bytes, collectives over logical replica groups or
// source->target pairs, with overlap windows. Ranks are laid out row-major over the axes
// (dp, ring, uly, tp), tp fastest.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aoizora/aoizora.h"

typedef struct lctx {
    const zg_aoi_graph *g;
    const zg_aoi_cand *c;
    zg_aoi_evidence *ev;
    zg_error *err;
    int32_t sz[4];        // dp, ring, uly, tp
    double bl, nloc, np;  // local batch, local sequence, padded sequence
    double d, f, text;
    int32_t *grp[16];     // groups per axis mask (1 dp, 2 ring, 4 uly, 8 tp)
    int32_t gsz[16];
    int32_t *ring_pairs;  // (N, 2)
} lctx;

// Groups of the axes in `mask`: ranks that share every coordinate outside the mask.
static int32_t *make_groups(const int32_t sz[4], int mask, int32_t *gsize, zg_error *err) {
    int32_t N = sz[0] * sz[1] * sz[2] * sz[3], S = 1;
    for (int a = 0; a < 4; a++)
        if (mask >> a & 1) S *= sz[a];
    int32_t *m = zg_calloc((size_t)N, sizeof *m, err);
    if (!m) return NULL;
    int32_t k = 0;
    // outer loop over coordinates not in mask, inner over those in mask (both row-major)
    for (int32_t outer = 0; outer < N / S; outer++)
        for (int32_t inner = 0; inner < S; inner++) {
            int32_t co[4], o = outer, in = inner;
            for (int a = 3; a >= 0; a--) {
                if (mask >> a & 1) co[a] = in % sz[a], in /= sz[a];
                else co[a] = o % sz[a], o /= sz[a];
            }
            m[k++] = ((co[0] * sz[1] + co[1]) * sz[2] + co[2]) * sz[3] + co[3];
        }
    *gsize = S;
    return m;
}

static zg_status coll(lctx *x, const char *name, zg_coll_kind k, double bytes, int mask,
                      int32_t overlap) {
    int32_t N = x->ev->num_devices;
    if (x->gsz[mask] <= 1 || bytes <= 0) return ZG_OK;
    return zg_aoi_evidence_coll(x->ev, name, k, bytes, N / x->gsz[mask], x->gsz[mask],
                                x->grp[mask], overlap, x->err);
}

static zg_status comp(lctx *x, const char *name, double flops, double bytes) {
    return zg_aoi_evidence_compute(x->ev, name, flops, bytes, x->err);
}

#define TRY(e)                                \
    do {                                      \
        zg_status st_ = (e);                  \
        if (st_) return st_;                  \
    } while (0)

// Forward (bwd = 0) or backward (bwd = 1) of one node.
static zg_status node(lctx *x, const zg_aoi_node *n, int bwd) {
    const double t = x->sz[3], u = x->sz[2], r = x->sz[1], B2 = 2.0;  // bf16
    const double mult = bwd ? 2.0 : 1.0;
    char nm[48];
    snprintf(nm, sizeof nm, "%s%s", n->name, bwd ? "_bwd" : "");
    if (n->kind == ZG_AOI_ELEM) {
        double e = x->bl * x->nloc * n->elem_width;
        return comp(x, nm, mult * e * 4, mult * e * B2);
    }
    if (n->kind == ZG_AOI_GEMM) {
        double rows = n->text_rows ? x->bl * x->text : x->bl * x->nloc;
        double k = n->tp == ZG_AOI_TP_ROW ? n->k / t : (double)n->k;
        double o = n->tp == ZG_AOI_TP_COL ? n->n / t : (double)n->n;
        double fl = 2 * rows * k * o, by = B2 * (rows * k + k * o + rows * o);
        if (bwd) {
            // backward: the input-gradient all-reduce of a column-parallel GEMM (tp), and the
            // ulysses all-to-all of the q,k,v gradients come before the GEMM's own backward
            if (n->qkv) TRY(coll(x, "a2a_dqkv", ZG_COLL_ALL_TO_ALL, x->bl * x->nloc * 3 * x->d / t * B2, 4, 0));
            TRY(comp(x, nm, 2 * fl, 2 * by));
            if (n->tp == ZG_AOI_TP_COL) TRY(coll(x, "ar_dx_tp", ZG_COLL_ALL_REDUCE, rows * n->k * B2, 8, 0));
            return ZG_OK;
        }
        TRY(comp(x, nm, fl, by));
        if (n->qkv) TRY(coll(x, "a2a_qkv", ZG_COLL_ALL_TO_ALL, x->bl * x->nloc * 3 * x->d / t * B2, 4, 0));
        if (n->tp == ZG_AOI_TP_ROW) TRY(coll(x, "ar_out_tp", ZG_COLL_ALL_REDUCE, rows * n->n * B2, 8, 0));
        return ZG_OK;
    }
    // attention
    double dl = x->d / t;  // q width per device before ulysses
    if (n->cross) {
        double fl = 4 * x->bl * x->nloc * x->text * dl;
        double by = B2 * x->bl * (2 * x->nloc * dl + 2 * x->text * dl);
        return comp(x, nm, (bwd ? 2.5 : 1) * fl, mult * by);
    }
    double hw = dl / u;              // head width per device after ulysses
    double qn = x->bl * x->np / r;   // query tokens per device after ulysses
    double kv = x->np / r;           // kv tokens per ring chunk
    double chunk_fl = 4 * qn * kv * hw * (bwd ? 2.5 : 1);
    double chunk_by = B2 * (2 * qn * hw + 2 * x->bl * kv * hw) * mult;
    if (bwd && u > 1) TRY(coll(x, "a2a_dout", ZG_COLL_ALL_TO_ALL, x->bl * x->nloc * dl * B2, 4, 0));
    for (int32_t s = 0; s < x->sz[1]; s++) {
        if (s + 1 < x->sz[1]) {
            double kvb = 2 * x->bl * kv * hw * B2 * (bwd ? 2 : 1);  // k,v (and dk,dv)
            TRY(zg_aoi_evidence_coll(x->ev, bwd ? "ring_kv_dkv" : "ring_kv", ZG_COLL_PERMUTE, kvb,
                                     x->ev->num_devices, 2, x->ring_pairs, 1, x->err));
        }
        TRY(comp(x, nm, chunk_fl, chunk_by));
    }
    if (!bwd && u > 1) TRY(coll(x, "a2a_out", ZG_COLL_ALL_TO_ALL, x->bl * x->nloc * dl * B2, 4, 0));
    return ZG_OK;
}

static int32_t seg_compute_ops(const zg_aoi_segment *s) {
    int32_t k = 0;
    for (int32_t i = 0; i < s->n_ops; i++) k += !s->ops[i].is_coll;
    return k;
}

// Block segment; phase 0 = inference forward, 1 = training forward, 2 = training backward
// (recompute the forward, then backward, then the gradient sync).
static zg_status block(lctx *x, const zg_aoi_block *b, int phase) {
    char nm[48];
    snprintf(nm, sizeof nm, "%s%s", b->name, phase == 2 ? "_bwd" : phase == 1 ? "_fwd" : "");
    TRY(zg_aoi_evidence_segment(x->ev, nm, b->repeat, x->err));
    zg_aoi_segment *seg = &x->ev->segs[x->ev->n_segs - 1];
    int32_t ag_at = -1;
    double wbytes = b->weight_params * 2.0 / x->sz[3];
    int data_mask = 1 | 2 | 4, fmask = zg_aoi_cand_fsdp_mask(x->c), rest = data_mask & ~fmask;
    int fsdp = fmask && x->gsz[fmask] > 1;
    if (fsdp) {
        ag_at = seg->n_ops;
        TRY(coll(x, "fsdp_ag_weights", ZG_COLL_ALL_GATHER, wbytes, fmask, 1));
    }
    for (int i = 0; i < b->n_nodes; i++) TRY(node(x, &b->nodes[i], 0));
    if (phase == 2) {
        for (int i = b->n_nodes - 1; i >= 0; i--) TRY(node(x, &b->nodes[i], 1));
        // gradient sync: reduce-scatter inside the FSDP group, all-reduce of the shards across
        // the other data axes (plain all-reduce without FSDP)
        if (fsdp) {
            TRY(coll(x, "fsdp_rs_grads", ZG_COLL_REDUCE_SCATTER, wbytes, fmask, seg_compute_ops(seg)));
            if (rest && x->gsz[rest] > 1)
                TRY(coll(x, "ar_grad_shards", ZG_COLL_ALL_REDUCE, wbytes / x->gsz[fmask], rest,
                         seg_compute_ops(seg)));
        } else if (x->gsz[data_mask] > 1) {
            TRY(coll(x, "ar_grads", ZG_COLL_ALL_REDUCE, wbytes, data_mask, seg_compute_ops(seg)));
        }
    }
    // the weight all-gather is a prefetch: it may overlap the whole previous block
    if (ag_at >= 0) seg->ops[ag_at].overlap = seg_compute_ops(seg);
    // the gradient sync overlaps the next block's backward: set its window to a full block
    if (phase == 2)
        for (int32_t i = 0; i < seg->n_ops; i++)
            if (seg->ops[i].is_coll && strstr(seg->ops[i].name, "grad")) seg->ops[i].overlap = seg_compute_ops(seg);
    return ZG_OK;
}

static zg_status lower(lctx *x) {
    const zg_aoi_graph *g = x->g;
    const zg_model *m = &g->work.model;
    double pin = (double)m->in_channels * m->patch[0] * m->patch[1] * m->patch[2];
    TRY(zg_aoi_evidence_segment(x->ev, "embed", 1, x->err));
    TRY(comp(x, "patch_embed", 2 * x->bl * x->nloc * pin * x->d,
             2 * (x->bl * x->nloc * (pin + x->d) + pin * x->d)));
    TRY(comp(x, "text_embed", 2 * x->bl * x->text * m->text_dim * x->d * 2,
             2 * (x->bl * x->text * (m->text_dim + x->d) + m->text_dim * x->d + x->d * x->d)));
    for (int i = 0; i < g->n_blocks; i++)
        TRY(block(x, &g->blocks[i], g->work.training ? 1 : 0));
    if (g->work.training)
        for (int i = g->n_blocks - 1; i >= 0; i--) TRY(block(x, &g->blocks[i], 2));
    TRY(zg_aoi_evidence_segment(x->ev, "head", 1, x->err));
    TRY(comp(x, "head", 2 * x->bl * x->nloc * x->d * pin, 2 * (x->bl * x->nloc * (x->d + pin) + pin * x->d)));
    if (!g->work.training) {
        // gather the predicted noise over the sequence axes, then combine the CFG branches
        TRY(coll(x, "ag_output_seq", ZG_COLL_ALL_GATHER, x->bl * x->np * pin * 2, 2 | 4, 0));
        TRY(coll(x, "ag_output_cfg", ZG_COLL_ALL_GATHER, g->work.batch * x->np * pin * 2, 1, 0));
        TRY(comp(x, "cfg_combine", 3 * x->np * pin, 4 * x->np * pin * 2));
    } else {
        double ploc = g->params / (x->sz[3] * zg_aoi_cand_fsdp_size(x->c));
        TRY(zg_aoi_evidence_segment(x->ev, "optimizer", 1, x->err));
        TRY(comp(x, "adamw", 12 * ploc, 28 * ploc));
    }
    return ZG_OK;
}

zg_status zg_aoi_lower(const zg_aoi_graph *g, const zg_aoi_cand *c, zg_aoi_evidence *ev,
                       zg_error *err) {
    lctx x;
    memset(&x, 0, sizeof x);
    x.g = g, x.c = c, x.err = err, x.ev = ev;
    x.sz[0] = c->dp, x.sz[1] = c->ring, x.sz[2] = c->uly, x.sz[3] = c->tp;
    int32_t N = c->dp * c->ring * c->uly * c->tp;
    if (c->dp < 1 || c->ring < 1 || c->uly < 1 || c->tp < 1 || N > 4096)
        return zg_error_set(err, ZG_ERR_INVALID, "lower: bad degrees dp %d ring %d uly %d tp %d",
                            c->dp, c->ring, c->uly, c->tp);
    x.bl = g->work.batch / c->dp;
    x.nloc = ceil((double)g->seq / (c->ring * c->uly));
    x.np = x.nloc * c->ring * c->uly;
    x.d = g->work.model.dim, x.f = g->work.model.ffn_dim, x.text = (double)g->text;
    zg_aoi_evidence_init(ev, "aoizora-lowering", N);
    ev->n_axes = c->n_axes;
    for (int a = 0; a < c->n_axes; a++) {
        ev->mesh_shape[a] = c->shape[a];
        snprintf(ev->axis_names[a], sizeof ev->axis_names[a], "%s", c->names[a]);
    }
    ev->peak_mem_bytes = c->mem_bytes;
    snprintf(ev->peak_mem_source, sizeof ev->peak_mem_source, "lowering");
    zg_status st = ZG_OK;
    for (int mask = 1; mask < 16 && !st; mask++)
        if (!(x.grp[mask] = make_groups(x.sz, mask, &x.gsz[mask], err))) st = err ? err->status : ZG_ERR_NOMEM;
    if (!st) {
        x.ring_pairs = zg_calloc((size_t)N * 2, sizeof *x.ring_pairs, err);
        if (!x.ring_pairs) st = err ? err->status : ZG_ERR_NOMEM;
    }
    if (!st) {
        int32_t stride = c->uly * c->tp;
        for (int32_t rk = 0; rk < N; rk++) {
            int32_t rc = (rk / stride) % c->ring;
            x.ring_pairs[2 * rk] = rk;
            x.ring_pairs[2 * rk + 1] = rk + ((rc + 1) % c->ring - rc) * stride;
        }
        st = lower(&x);
    }
    if (!st) st = zg_aoi_evidence_finalize(ev, err);
    for (int mask = 1; mask < 16; mask++) free(x.grp[mask]);
    free(x.ring_pairs);
    if (st) zg_aoi_evidence_free(ev);
    return st;
}
