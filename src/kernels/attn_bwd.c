// attn_bwd.c — fast backward (FlashAttention-2 style recompute from O and LSE), deterministic.
//
// FA2 accumulates dQ with atomics from key-block-major work; here dQ is done in its own pass
// so that every output row is owned by exactly one work item and results are bit-identical
// for any thread count:
//   pass 0: delta = rowsum(dO * O) per (row, head); Q^T and dO^T per head (D, Tq) so query
//           blocks are GEMM operands in place.
//   pass A: items = (key group, head, block of BK keys). A key group is a maximal set of
//           slices whose key ranges overlap, taken in slice order, so keys shared by several
//           slices are owned by one item. For each slice and query block: S^T = K Q^T,
//           P^T = exp(scale S^T - lse), dP^T = V dO^T, dV += P^T dO, dS^T = P^T (dP^T - delta),
//           dK += dS^T Q; then dk += scale dK, dv += dV.
//   pass B: items = (query group, head, block of BQ rows); recomputes P^T and dS^T per key
//           block and does dQ += dS^T^T K; then dq += scale dQ.
// Cost: 7 tile GEMMs instead of FA2's 5 (the price of determinism without atomics). When the
// list has enough (component, head) items to balance the threads (12 heads of one sequence
// on 2 cores, or a pack), one pass in FA2's loop order does 5 GEMMs instead: an item owns all
// rows of its component of slices (linked by shared queries or keys) in one head, so it
// accumulates dQ, dK, dV in place with no race (bwd_item_whole).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/attn_internal.h"

typedef struct bwd_ctx {
    const zg_attn_slice *slices;
    zg_attn_shape shape;
    const zg_attn_ops *ops;
    const float *q, *k, *v, *o, *lse, *dout; // q/o/dout are (Tq, H, D), k/v (Tk, H, D)
    float *dq, *dk, *dv;
    int64_t tq, ldt; // rows of Q used; row length of the transposed copies (tq + 8)
    float *qt, *dot; // (H, D, ldt) transposed Q and dO, zero padded
    float *delta;    // (tq, H) rowsum(dO * O)
    float *kh, *vh;  // head-major copies of the keys used: (H, tk, D)
    int64_t tk;
    const int32_t *order; // slice indices grouped: group g is order[gbeg[g] .. gbeg[g+1])
    const int64_t *gbeg;
} bwd_ctx;

enum { BWD_BK = ZG_ATTN_BK, BWD_BQ = ZG_ATTN_BQ };

static size_t bwd_scratch_floats(int64_t D) {
    return (size_t)(2 * BWD_BK * BWD_BQ // st, dpt: (BK, BQp) P^T and dP^T / dS^T tiles
                    + 2 * BWD_BK * D    // acc1, acc2: (BK, D) dK/dV (or dQ) accumulators
                    + 3 * BWD_BK * D    // packed GEMM operand rows: Q, dO (BQ, D), K (BK, D)
                    + 3 * BWD_BQ);      // lse, delta, dummy sums: (BQp,)
}

// The per-thread scratch, split (one layout for every item kind).
typedef struct bwd_tiles {
    float *st, *dpt;               // (BK, BQp) P^T and dP^T / dS^T
    float *dka, *dva;              // (BK, D) each; the query pass uses both as one (2 BK, D) dQ
    float *lse_c, *delta_c, *sums; // (BQp,) each
    float *qpk, *dopk;             // (BK, D) packed Q and dO rows
} bwd_tiles;

static bwd_tiles bwd_tiles_at(float *scr, int64_t D) {
    bwd_tiles t;
    t.st = scr, t.dpt = t.st + BWD_BK * BWD_BQ, t.dka = t.dpt + BWD_BK * BWD_BQ;
    t.dva = t.dka + BWD_BK * D, t.lse_c = t.dva + BWD_BK * D, t.delta_c = t.lse_c + BWD_BQ;
    t.sums = t.delta_c + BWD_BQ, t.qpk = t.sums + BWD_BQ, t.dopk = t.qpk + BWD_BK * D;
    return t;
}

// Shared tile step: for keys [j0, j0+kn) and queries [i0, i0+qn) of head h, leaves P^T in st
// and dS^T in dpt, both (kn, qp).
static void bwd_tile(const bwd_ctx *c, int64_t h, int64_t j0, int64_t kn, int64_t i0, int64_t qn,
                     const bwd_tiles *t) {
    float *st = t->st, *dpt = t->dpt, *lse_c = t->lse_c, *delta_c = t->delta_c, *sums = t->sums;
    const int64_t H = c->shape.n_heads, D = c->shape.head_dim;
    const int64_t qp = (qn + 7) / 8 * 8;
    for (int64_t r = 0; r < qp; r++) {
        float l = r < qn ? c->lse[(i0 + r) * H + h] : INFINITY;
        lse_c[r] = l == -INFINITY ? INFINITY : l; // a row with no keys anywhere: p = 0
        delta_c[r] = r < qn ? c->delta[(i0 + r) * H + h] : 0.0f;
        sums[r] = 0.0f;
    }
    const float *kb = c->kh + (h * c->tk + j0) * D, *vb = c->vh + (h * c->tk + j0) * D; // (kn, D)
    const float *qt = c->qt + h * D * c->ldt + i0, *dot = c->dot + h * D * c->ldt + i0;
    c->ops->gemm(kn, qp, D, kb, 1, D, qt, c->ldt, st, qp, 0);   // S^T
    c->ops->col_exp(st, kn, qp, c->shape.scale, lse_c, sums);   // P^T
    c->ops->gemm(kn, qp, D, vb, 1, D, dot, c->ldt, dpt, qp, 0); // dP^T
}

// bwd_tile, then dV += P^T dO into dv_l and dK += dS^T Q into dk_l (both (kn, D)); leaves dS^T
// in t->dpt for a dQ update.
static void bwd_tile_dkdv(const bwd_ctx *c, int64_t h, int64_t j0, int64_t kn, int64_t i0,
                          int64_t qn, const bwd_tiles *t, float *dk_l, float *dv_l) {
    const int64_t D = c->shape.head_dim, ld = c->shape.n_heads * D, qp = (qn + 7) / 8 * 8;
    const zg_attn_ops *ops = c->ops;
    bwd_tile(c, h, j0, kn, i0, qn, t);
    zg_attn_pack_rows(t->dopk, c->dout + i0 * ld + h * D, qn, D, ld); // (qn, D)
    zg_attn_pack_rows(t->qpk, c->q + i0 * ld + h * D, qn, D, ld);     // (qn, D)
    ops->gemm(kn, D, qn, t->st, 1, qp, t->dopk, D, dv_l, D, 1);       // dV += P^T dO
    ops->col_ds(t->st, t->dpt, kn, qp, t->delta_c, c->shape.scale);
    ops->gemm(kn, D, qn, t->dpt, 1, qp, t->qpk, D, dk_l, D, 1); // dK += dS^T Q
}

// out rows [r0, r0+n) of head h += acc, an (n, D) tile; out is (T, H, D).
static void bwd_add_rows(const bwd_ctx *c, float *out, int64_t h, int64_t r0, int64_t n,
                         const float *acc) {
    const int64_t D = c->shape.head_dim, ld = c->shape.n_heads * D;
    for (int64_t i = 0; i < n; i++) {
        float *row = out + (r0 + i) * ld + h * D;
        for (int64_t d = 0; d < D; d++)
            row[d] += acc[i * D + d];
    }
}

static void bwd_item_keys(const void *ctx, const zg_attn_item *it, float *scr) {
    const bwd_ctx *c = ctx;
    const int64_t D = c->shape.head_dim, h = it->head;
    const bwd_tiles t = bwd_tiles_at(scr, D);
    float *dka = t.dka, *dva = t.dva;
    const int64_t b0 = it->r0, b1 = it->r0 + it->rn; // global key rows of this block
    memset(dka, 0, (size_t)(2 * BWD_BK * D) * sizeof(float));
    for (int64_t g = c->gbeg[it->group]; g < c->gbeg[it->group + 1]; g++) {
        const zg_attn_slice s = c->slices[c->order[g]];
        int64_t j0 = s.k_start > b0 ? s.k_start : b0;
        int64_t j1 = s.k_start + s.k_len < b1 ? s.k_start + s.k_len : b1;
        if (j0 >= j1) continue;
        const int64_t kn = j1 - j0;
        for (int64_t i0 = s.q_start; i0 < s.q_start + s.q_len; i0 += BWD_BQ) {
            const int64_t qn =
                s.q_start + s.q_len - i0 < BWD_BQ ? s.q_start + s.q_len - i0 : BWD_BQ;
            bwd_tile_dkdv(c, h, j0, kn, i0, qn, &t, dka + (j0 - b0) * D, dva + (j0 - b0) * D);
        }
    }
    bwd_add_rows(c, c->dk, h, b0, it->rn, dka);
    bwd_add_rows(c, c->dv, h, b0, it->rn, dva);
}

static void bwd_item_queries(const void *ctx, const zg_attn_item *it, float *scr) {
    const bwd_ctx *c = ctx;
    const int64_t D = c->shape.head_dim, h = it->head;
    const zg_attn_ops *ops = c->ops;
    const bwd_tiles t = bwd_tiles_at(scr, D);
    float *st = t.st, *dpt = t.dpt, *dqa = t.dka, *delta_c = t.delta_c; // dqa: (2 BK, D)
    const int64_t b0 = it->r0, b1 = it->r0 + it->rn; // global query rows of this block
    memset(dqa, 0, (size_t)(it->rn * D) * sizeof(float));
    for (int64_t g = c->gbeg[it->group]; g < c->gbeg[it->group + 1]; g++) {
        const zg_attn_slice s = c->slices[c->order[g]];
        int64_t i0 = s.q_start > b0 ? s.q_start : b0;
        int64_t i1 = s.q_start + s.q_len < b1 ? s.q_start + s.q_len : b1;
        if (i0 >= i1) continue;
        const int64_t qn = i1 - i0, qp = (qn + 7) / 8 * 8;
        for (int64_t j0 = s.k_start; j0 < s.k_start + s.k_len; j0 += BWD_BK) {
            const int64_t kn =
                s.k_start + s.k_len - j0 < BWD_BK ? s.k_start + s.k_len - j0 : BWD_BK;
            bwd_tile(c, h, j0, kn, i0, qn, &t);
            ops->col_ds(st, dpt, kn, qp, delta_c, c->shape.scale);
            const float *kpk = c->kh + (h * c->tk + j0) * D;                     // (kn, D)
            ops->gemm(qn, D, kn, dpt, qp, 1, kpk, D, dqa + (i0 - b0) * D, D, 1); // dQ += dS K
        }
    }
    bwd_add_rows(c, c->dq, h, b0, it->rn, dqa);
}

typedef struct group_key {
    const zg_attn_slice *sl;
    int use_k;
} group_key;

static int cmp_start(const void *a, const void *b, void *ctx) {
    const group_key *g = ctx;
    const zg_attn_slice *x = &g->sl[*(const int32_t *)a], *y = &g->sl[*(const int32_t *)b];
    int64_t xs = g->use_k ? x->k_start : x->q_start, ys = g->use_k ? y->k_start : y->q_start;
    return (xs > ys) - (xs < ys);
}

// One-pass item (FA2 loop order, used when there are enough (component, head) items to keep
// every thread busy): the item owns every row that its component of slices touches in this
// head, so dQ, dK and dV are accumulated straight into the outputs in a fixed order.
static void bwd_item_whole(const void *ctx, const zg_attn_item *it, float *scr) {
    const bwd_ctx *c = ctx;
    const int64_t H = c->shape.n_heads, D = c->shape.head_dim, ld = H * D, h = it->head;
    const zg_attn_ops *ops = c->ops;
    const bwd_tiles t = bwd_tiles_at(scr, D);
    float *dka = t.dka, *dva = t.dva;
    for (int64_t g = c->gbeg[it->group]; g < c->gbeg[it->group + 1]; g++) {
        const zg_attn_slice s = c->slices[c->order[g]];
        for (int64_t j0 = s.k_start; j0 < s.k_start + s.k_len; j0 += BWD_BK) {
            const int64_t kn =
                s.k_start + s.k_len - j0 < BWD_BK ? s.k_start + s.k_len - j0 : BWD_BK;
            const float *kpk = c->kh + (h * c->tk + j0) * D; // (kn, D)
            memset(dka, 0, (size_t)(2 * BWD_BK * D) * sizeof(float));
            for (int64_t i0 = s.q_start; i0 < s.q_start + s.q_len; i0 += BWD_BQ) {
                const int64_t qn =
                    s.q_start + s.q_len - i0 < BWD_BQ ? s.q_start + s.q_len - i0 : BWD_BQ;
                const int64_t qp = (qn + 7) / 8 * 8;
                bwd_tile_dkdv(c, h, j0, kn, i0, qn, &t, dka, dva);
                ops->gemm(qn, D, kn, t.dpt, qp, 1, kpk, D, c->dq + i0 * ld + h * D, ld, 1); // dQ
            }
            bwd_add_rows(c, c->dk, h, j0, kn, dka);
            bwd_add_rows(c, c->dv, h, j0, kn, dva);
        }
    }
}

// Connected components of slices linked by overlapping q or k ranges (union-find), members
// in slice order, components ordered by their first member. Returns the count, -1 on OOM.
static int64_t components(const zg_attn_slice *sl, int32_t n, int32_t *order, int64_t *gbeg,
                          int64_t *lo, int64_t *hi, zg_error *err);

// Groups slices whose [start, start+len) ranges (keys: use_k, else queries) overlap. Fills
// order (slice indices, grouped, by start then index: a stable sort), gbeg (n_groups+1) and
// the union range of each group in lo/hi. Slices without work are left out. Returns the group
// count, or -1 when the sort's scratch could not be allocated.
static int64_t group_slices(const zg_attn_slice *sl, int32_t n, int use_k, int32_t *order,
                            int64_t *gbeg, int64_t *lo, int64_t *hi, zg_error *err) {
    int64_t m = 0;
    for (int32_t i = 0; i < n; i++)
        if (sl[i].q_len > 0 && sl[i].k_len > 0) order[m++] = i;
    group_key key = {sl, use_k};
    if (zg_sort_stable(order, (size_t)m, sizeof *order, cmp_start, &key, err)) return -1;
    int64_t ng = 0;
    for (int64_t a = 0; a < m; a++) {
        const zg_attn_slice *s = &sl[order[a]];
        int64_t st = use_k ? s->k_start : s->q_start, en = st + (use_k ? s->k_len : s->q_len);
        if (ng > 0 && st < hi[ng - 1]) {
            if (en > hi[ng - 1]) hi[ng - 1] = en;
        } else {
            gbeg[ng] = a, lo[ng] = st, hi[ng] = en;
            ng++;
        }
    }
    gbeg[ng] = m;
    return ng;
}

static int32_t uf_find(int32_t *parent, int32_t x) {
    while (parent[x] != x)
        x = parent[x] = parent[parent[x]];
    return x;
}

static int64_t components(const zg_attn_slice *sl, int32_t n, int32_t *order, int64_t *gbeg,
                          int64_t *lo, int64_t *hi, zg_error *err) {
    int32_t *parent = zg_calloc((size_t)(n > 0 ? n : 1), sizeof *parent, err);
    if (!parent) return -1;
    for (int32_t i = 0; i < n; i++)
        parent[i] = i;
    for (int use_k = 0; use_k < 2; use_k++) {
        int64_t ng = group_slices(sl, n, use_k, order, gbeg, lo, hi, err);
        if (ng < 0) {
            free(parent);
            return -1;
        }
        for (int64_t g = 0; g < ng; g++)
            for (int64_t a = gbeg[g] + 1; a < gbeg[g + 1]; a++) {
                int32_t x = uf_find(parent, order[gbeg[g]]), y = uf_find(parent, order[a]);
                if (x != y) parent[x > y ? x : y] = x < y ? x : y; // root = smallest index
            }
    }
    // bucket members by root (counting sort): slice order inside, components by root index,
    // which is each component's first member
    int64_t m = 0, ng = 0;
    for (int32_t i = 0; i < n; i++)
        lo[i] = 0; // lo[r]: member count of root r
    for (int32_t i = 0; i < n; i++)
        if (sl[i].q_len > 0 && sl[i].k_len > 0) lo[uf_find(parent, i)]++;
    for (int32_t r = 0; r < n; r++)
        if (lo[r] > 0) {
            gbeg[ng++] = m;
            hi[r] = m; // hi[r]: next free position of root r's members
            m += lo[r];
        }
    for (int32_t i = 0; i < n; i++)
        if (sl[i].q_len > 0 && sl[i].k_len > 0) order[hi[uf_find(parent, i)]++] = i;
    gbeg[ng] = m;
    free(parent);
    return ng;
}

// Builds the items of one pass: per group, per head, blocks of `blk` rows of the union range;
// cost = rows * (work of the group's slices per row), a simple proxy.
static zg_attn_item *make_items(const zg_attn_slice *sl, const int32_t *order, const int64_t *gbeg,
                                const int64_t *lo, const int64_t *hi, int64_t ng, int32_t H,
                                int64_t blk, int64_t *n_out, zg_error *err) {
    int64_t n = 0;
    for (int64_t g = 0; g < ng; g++)
        n += (hi[g] - lo[g] + blk - 1) / blk * H;
    zg_attn_item *items = zg_calloc((size_t)(n ? n : 1), sizeof *items, err);
    if (!items) return NULL;
    n = 0;
    for (int64_t g = 0; g < ng; g++) {
        double work = 0.0; // pairs per row of the union range, averaged
        for (int64_t a = gbeg[g]; a < gbeg[g + 1]; a++)
            work += (double)sl[order[a]].q_len * (double)sl[order[a]].k_len;
        work /= (double)(hi[g] - lo[g]);
        for (int32_t h = 0; h < H; h++)
            for (int64_t r0 = lo[g]; r0 < hi[g]; r0 += blk) {
                int64_t rn = hi[g] - r0 < blk ? hi[g] - r0 : blk;
                items[n++] = (zg_attn_item){(int32_t)g, h, r0, rn, (double)rn * (work + 16.0)};
            }
    }
    *n_out = n;
    return items;
}

zg_status zg_attn_backward_opts(const zg_attn_slice *slices, int32_t n_slices, zg_attn_shape shape,
                                const float *q, const float *k, const float *v, const float *o,
                                const float *lse, const float *dout, float *dq, float *dk,
                                float *dv, const zg_attn_opts *opts, zg_error *err) {
    zg_status st = zg_attn_check_shape(shape, err);
    if (!st) st = zg_attn_check_slices(slices, n_slices, 0, err);
    const void *bufs[] = {q, k, v, o, lse, dout, dq, dk, dv};
    const char *names[] = {"q", "k", "v", "o", "lse", "dout", "dq", "dk", "dv"};
    if (!st) st = zg_attn_check_bufs(slices, n_slices, bufs, names, 9, err);
    bwd_ctx c = {.slices = slices,
                 .shape = shape,
                 .q = q,
                 .k = k,
                 .v = v,
                 .o = o,
                 .lse = lse,
                 .dout = dout,
                 .dq = dq,
                 .dk = dk,
                 .dv = dv};
    if (!st) st = zg_attn_ops_pick(opts ? opts->isa : 0, shape.head_dim, &c.ops, err);
    if (st) return st;
    for (int32_t i = 0; i < n_slices; i++)
        if (slices[i].q_len > 0 && slices[i].k_len > 0 &&
            slices[i].q_start + slices[i].q_len > c.tq)
            c.tq = slices[i].q_start + slices[i].q_len;
    if (c.tq == 0) return ZG_OK;
    const int64_t H = shape.n_heads, D = shape.head_dim, ld = H * D;
    const int nt = ZG_ATTN_THREADS(opts);
    c.ldt = c.tq + 8;
    size_t nn = (size_t)(n_slices > 0 ? n_slices : 1);
    int32_t *order = zg_calloc(nn, sizeof *order, err);
    int64_t *gbeg = zg_calloc(nn + 1, sizeof *gbeg, err);
    int64_t *lo = zg_calloc(nn, sizeof *lo, err), *hi = zg_calloc(nn, sizeof *hi, err);
    c.qt = zg_calloc((size_t)(2 * H * D * c.ldt), sizeof(float), err);
    c.tk = zg_attn_keys_used(slices, n_slices);
    c.kh = zg_calloc((size_t)(2 * H * D * c.tk + 1), sizeof(float), err);
    c.delta = zg_calloc((size_t)(c.tq * H), sizeof(float), err);
    zg_attn_item *items = NULL;
    int failed = 0;
    if (!order || !gbeg || !lo || !hi || !c.qt || !c.delta || !c.kh) goto nomem;
    c.vh = c.kh + H * D * c.tk;
    zg_attn_head_major(c.kh, k, c.tk, H, D, nt);
    zg_attn_head_major(c.vh, v, c.tk, H, D, nt);
    c.dot = c.qt + H * D * c.ldt;
    c.order = order, c.gbeg = gbeg;
    // pass 0: transposes and delta (rows outside every slice stay zero and are never read)
#ifdef ZG_HAVE_OPENMP
#pragma omp parallel for num_threads(nt) schedule(static) if (c.tq * ld > 65536)
#endif
    for (int64_t i = 0; i < c.tq; i++)
        for (int64_t h = 0; h < H; h++) {
            const float *qr = q + i * ld + h * D, *dr = dout + i * ld + h * D;
            for (int64_t d = 0; d < D; d++) {
                c.qt[(h * D + d) * c.ldt + i] = qr[d];
                c.dot[(h * D + d) * c.ldt + i] = dr[d];
            }
            c.delta[i * H + h] = c.ops->dot(dr, o + i * ld + h * D, D);
        }
    const size_t scr_n = bwd_scratch_floats(D);
    // One pass over (component, head) items when they are many and small enough to balance
    // (largest <= 1/8 of the total); else two passes split by key and query blocks. The
    // choice depends on the slice list only, never on the thread count, so results do not.
    int64_t n = 0, ng = components(slices, n_slices, order, gbeg, lo, hi, err);
    if (ng < 0) goto nomem;
    double total = 0.0, largest = 0.0;
    for (int64_t g = 0; g < ng; g++) {
        double w = 0.0;
        for (int64_t a = gbeg[g]; a < gbeg[g + 1]; a++)
            w += (double)slices[order[a]].q_len * (double)slices[order[a]].k_len;
        total += w * (double)H;
        if (w > largest) largest = w;
    }
    const int32_t plan = opts ? opts->bwd_plan : ZG_ATTN_BWD_AUTO;
    if (plan < ZG_ATTN_BWD_AUTO || plan > ZG_ATTN_BWD_TWO_PASS) {
        free(order), free(gbeg), free(lo), free(hi), free(c.qt), free(c.delta), free(c.kh);
        return zg_error_set(err, ZG_ERR_INVALID,
                            "attention backward: bwd_plan %d is unknown; use 0 (auto), 1 (one "
                            "pass) or 2 (two passes)",
                            (int)plan);
    }
    if (plan == ZG_ATTN_BWD_ONE_PASS || (plan == ZG_ATTN_BWD_AUTO && largest * 8.0 <= total)) {
        items = zg_calloc((size_t)(ng * H), sizeof *items, err);
        if (!items) goto nomem;
        for (int64_t g = 0; g < ng; g++) {
            double w = 0.0;
            for (int64_t a = gbeg[g]; a < gbeg[g + 1]; a++)
                w += (double)slices[order[a]].q_len * (double)slices[order[a]].k_len;
            for (int32_t h = 0; h < H; h++)
                items[n++] = (zg_attn_item){(int32_t)g, h, 0, 0, w};
        }
        failed |= zg_attn_items_run(&c, items, n, bwd_item_whole, scr_n, nt);
    } else {
        ng = group_slices(slices, n_slices, 1, order, gbeg, lo, hi, err);
        if (ng < 0) goto nomem;
        items = make_items(slices, order, gbeg, lo, hi, ng, (int32_t)H, BWD_BK, &n, err);
        if (!items) goto nomem;
        failed |= zg_attn_items_run(&c, items, n, bwd_item_keys, scr_n, nt);
        free(items);
        ng = group_slices(slices, n_slices, 0, order, gbeg, lo, hi, err);
        if (ng < 0) goto nomem;
        items = make_items(slices, order, gbeg, lo, hi, ng, (int32_t)H, BWD_BQ, &n, err);
        if (!items) goto nomem;
        failed |= zg_attn_items_run(&c, items, n, bwd_item_queries, scr_n, nt);
    }
    free(items), free(order), free(gbeg), free(lo), free(hi), free(c.qt), free(c.delta), free(c.kh);
    if (failed)
        return zg_error_set(err, ZG_ERR_NOMEM, "attention backward: no memory for %zu-byte tiles",
                            scr_n * sizeof(float));
    return ZG_OK;
nomem:
    free(items), free(order), free(gbeg), free(lo), free(hi), free(c.qt), free(c.delta), free(c.kh);
    return zg_error_set(err, ZG_ERR_NOMEM,
                        "attention backward: no memory for %lld query rows x %lld heads x %lld "
                        "dims of transposed Q/dO",
                        (long long)c.tq, (long long)H, (long long)D);
}
