// attn_fwd.c — fast forward: FlashAttention-2 style tiled online softmax over slice lists.
// Work item = (slice, head, block of ZG_ATTN_BQ query rows). Per item: pack Q^T once (D, BQp),
// then for each block of ZG_ATTN_BK keys: S^T = K Q^T (micro-kernel GEMM reading K rows in
// place, so keys are never transposed), column-wise online softmax (one column per query:
// running max m and sum l, rescaling the output accumulator when m grows), and
// O_acc += P V. K and V are first copied head-major, (H, tk, D), so
// every item streams contiguous rows (the packed layout spreads one head over many pages). Memory:
// per-thread tiles only, O(BQ*BK).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/attn_internal.h"

typedef struct fwd_ctx {
    const zg_attn_slice *slices;
    zg_attn_shape shape;
    const zg_attn_ops *ops;
    const float *q, *k, *v; // q is (Tq, H, D); k, v are (Tk, H, D)
    float *o, *lse;         // o is (Tq, H, D); lse is (Tq, H)
    const float *kh, *vh;   // head-major copies of the keys used: (H, tk, D)
    int64_t tk;
} fwd_ctx;

// Per-thread scratch layout (floats).
static size_t fwd_scratch_floats(int64_t D) {
    return (size_t)(D * ZG_ATTN_BQ            // qt: (D, BQp) packed Q^T, zero-padded columns
                    + ZG_ATTN_BK * ZG_ATTN_BQ // st: (BK, BQp) scores^T, then probabilities^T
                    + ZG_ATTN_BQ * D          // acc: (BQ, D) unnormalized output
                    + 4 * ZG_ATTN_BQ);        // m, l, mx, alpha: (BQp,) per query column
}

static void fwd_item(const void *ctx, const zg_attn_item *it, float *scr) {
    const fwd_ctx *c = ctx;
    const zg_attn_slice sl = c->slices[it->group];
    const int64_t H = c->shape.n_heads, D = c->shape.head_dim, ld = H * D, h = it->head;
    const int64_t qn = it->rn, q0 = sl.q_start + it->r0, qp = (qn + 7) / 8 * 8;
    const float scale = c->shape.scale;
    const zg_attn_ops *ops = c->ops;
    float *qt = scr, *st = qt + D * ZG_ATTN_BQ, *acc = st + ZG_ATTN_BK * ZG_ATTN_BQ;
    float *m = acc + ZG_ATTN_BQ * D, *l = m + ZG_ATTN_BQ, *mx = l + ZG_ATTN_BQ;
    float *alpha = mx + ZG_ATTN_BQ;
    // GEMM blocking: the operand the micro-kernels sweep again and again, a (D, nc) slice of Q^T
    // or an (nc, D) slice of V, is 16 KiB at D=64 and 32 KiB at D=128, so it stays in L1 (or
    // close) instead of streaming a whole (D, BQ) / (BK, D) tile from L2 per 6-row block. Every
    // output element still sums over k in the same order: bit-identical to one big GEMM.
    const int64_t nc = 64;
    if (sl.k_len == 0) {
        for (int64_t r = 0; r < qn; r++) {
            memset(c->o + (q0 + r) * ld + h * D, 0, (size_t)D * sizeof(float));
            c->lse[(q0 + r) * H + h] = -INFINITY;
        }
        return;
    }
    for (int64_t r = 0; r < qp; r++) {
        const float *qr = c->q + (q0 + r) * ld + h * D; // qr is (D,)
        for (int64_t d = 0; d < D; d++)
            qt[d * qp + r] = r < qn ? qr[d] : 0.0f;
        m[r] = -INFINITY, l[r] = 0.0f;
    }
    memset(acc, 0, (size_t)(qn * D) * sizeof(float));
    for (int64_t k0 = 0; k0 < sl.k_len; k0 += ZG_ATTN_BK) {
        const int64_t kn = sl.k_len - k0 < ZG_ATTN_BK ? sl.k_len - k0 : ZG_ATTN_BK;
        const float *kb = c->kh + (h * c->tk + sl.k_start + k0) * D; // kb is (kn, D)
        const float *vb = c->vh + (h * c->tk + sl.k_start + k0) * D; // vb is (kn, D)
        for (int64_t n0 = 0; n0 < qp; n0 += nc) // st = kb qt: (kn, qp), nc query columns at a time
            ops->gemm(kn, qp - n0 < nc ? qp - n0 : nc, D, kb, 1, D, qt + n0, qp, st + n0, qp, 0);
        for (int64_t r = 0; r < qp; r++)
            mx[r] = m[r];
        ops->col_max(st, kn, qp, scale, mx);
        for (int64_t r = 0; r < qp; r++) {
            alpha[r] = expf(m[r] - mx[r]); // 0 on the first block (m = -inf)
            l[r] *= alpha[r];
            m[r] = mx[r];
        }
        ops->col_exp(st, kn, qp, scale, m, l);
        for (int64_t r = 0; r < qn; r++)
            if (alpha[r] != 1.0f) ops->row_scale(acc + r * D, D, alpha[r]);
        for (int64_t j0 = 0; j0 < kn; j0 += nc) // acc += st^T vb, nc keys at a time
            ops->gemm(qn, D, kn - j0 < nc ? kn - j0 : nc, st + j0 * qp, qp, 1, vb + j0 * D, D, acc,
                      D, 1);
    }
    for (int64_t r = 0; r < qn; r++) {
        float *orow = c->o + (q0 + r) * ld + h * D;
        const float inv = 1.0f / l[r];
        for (int64_t d = 0; d < D; d++)
            orow[d] = acc[r * D + d] * inv;
        c->lse[(q0 + r) * H + h] = m[r] + logf(l[r]);
    }
}

zg_status zg_attn_forward_opts(const zg_attn_slice *slices, int32_t n_slices, zg_attn_shape shape,
                               const float *q, const float *k, const float *v, float *o, float *lse,
                               const zg_attn_opts *opts, zg_error *err) {
    zg_status st = zg_attn_check_shape(shape, err);
    if (!st) st = zg_attn_check_slices(slices, n_slices, 1, err);
    const void *bufs[] = {q, k, v, o, lse};
    const char *names[] = {"q", "k", "v", "o", "lse"};
    if (!st) st = zg_attn_check_bufs(slices, n_slices, bufs, names, 5, err);
    fwd_ctx c = {.slices = slices, .shape = shape, .q = q, .k = k, .v = v, .o = o, .lse = lse};
    if (!st) st = zg_attn_ops_pick(opts ? opts->isa : 0, shape.head_dim, &c.ops, err);
    if (st) return st;
    int64_t n_items = 0;
    for (int32_t i = 0; i < n_slices; i++)
        n_items += (slices[i].q_len + ZG_ATTN_BQ - 1) / ZG_ATTN_BQ * shape.n_heads;
    if (n_items == 0) return ZG_OK;
    zg_attn_item *items = zg_calloc((size_t)n_items, sizeof *items, err);
    if (!items) return ZG_ERR_NOMEM;
    int64_t n = 0;
    for (int32_t i = 0; i < n_slices; i++)
        for (int32_t h = 0; h < shape.n_heads; h++)
            for (int64_t r0 = 0; r0 < slices[i].q_len; r0 += ZG_ATTN_BQ) {
                int64_t rn = slices[i].q_len - r0 < ZG_ATTN_BQ ? slices[i].q_len - r0 : ZG_ATTN_BQ;
                items[n++] =
                    (zg_attn_item){i, h, r0, rn, (double)rn * (double)(slices[i].k_len + 16)};
            }
    const size_t scr_n = fwd_scratch_floats(shape.head_dim);
    const int nt = ZG_ATTN_THREADS(opts);
    const int64_t HD = (int64_t)shape.n_heads * shape.head_dim;
    c.tk = zg_attn_keys_used(slices, n_slices);
    float *kvh = zg_calloc((size_t)(2 * c.tk * HD + 1), sizeof(float), err);
    if (!kvh) {
        free(items);
        return zg_error_set(err, ZG_ERR_NOMEM,
                            "attention forward: no memory for head-major K/V (%lld keys x %lld)",
                            (long long)c.tk, (long long)HD);
    }
    zg_attn_head_major(kvh, k, c.tk, shape.n_heads, shape.head_dim, nt);
    zg_attn_head_major(kvh + c.tk * HD, v, c.tk, shape.n_heads, shape.head_dim, nt);
    c.kh = kvh, c.vh = kvh + c.tk * HD;
    const int failed = zg_attn_items_run(&c, items, n, fwd_item, scr_n, nt);
    free(items), free(kvh);
    if (failed)
        return zg_error_set(err, ZG_ERR_NOMEM, "attention forward: no memory for %zu-byte tiles",
                            scr_n * sizeof(float));
    return ZG_OK;
}
