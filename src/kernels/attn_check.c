// attn_check.c — argument validation shared by the reference and fast attention kernels, and
// the partial-result merge (which both use).
#include <math.h>
#include <stdlib.h>

#include "kernels/attn_internal.h"

zg_status zg_attn_check_shape(zg_attn_shape shape, zg_error *err) {
    if (shape.n_heads < 1)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "attention: n_heads %d is not positive; pass the number of heads",
                            (int)shape.n_heads);
    if (shape.head_dim < 1 || shape.head_dim > ZG_ATTN_MAX_HEAD_DIM)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "attention: head_dim %d is outside 1..%d; split larger heads",
                            (int)shape.head_dim, ZG_ATTN_MAX_HEAD_DIM);
    if (!isfinite(shape.scale))
        return zg_error_set(err, ZG_ERR_INVALID,
                            "attention: scale %g is not finite; use 1/sqrt(head_dim)",
                            (double)shape.scale);
    return ZG_OK;
}

// Sort helper for the overlap check: slice indices ordered by q_start.
static int cmp_q_start(const void *a, const void *b, void *ctx) {
    const zg_attn_slice *s = ctx;
    int64_t qa = s[*(const int32_t *)a].q_start, qb = s[*(const int32_t *)b].q_start;
    return (qa > qb) - (qa < qb);
}

zg_status zg_attn_check_slices(const zg_attn_slice *slices, int32_t n_slices, int q_disjoint,
                               zg_error *err) {
    if (n_slices < 0)
        return zg_error_set(err, ZG_ERR_INVALID, "attention: n_slices %d is negative",
                            (int)n_slices);
    if (n_slices > 0 && !slices)
        return zg_error_set(err, ZG_ERR_INVALID, "attention: slices is NULL but n_slices is %d",
                            (int)n_slices);
    for (int32_t i = 0; i < n_slices; i++) {
        const zg_attn_slice *s = &slices[i];
        if (s->q_start < 0 || s->q_len < 0 || s->k_start < 0 || s->k_len < 0 ||
            s->q_start > INT64_MAX - s->q_len || s->k_start > INT64_MAX - s->k_len)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "attention: slice %d has q=[%lld,+%lld) k=[%lld,+%lld); "
                                "starts and lengths must be >= 0",
                                (int)i, (long long)s->q_start, (long long)s->q_len,
                                (long long)s->k_start, (long long)s->k_len);
    }
    if (!q_disjoint || n_slices < 2) return ZG_OK;
    int32_t *order = zg_calloc((size_t)n_slices, sizeof *order, err);
    if (!order) return ZG_ERR_NOMEM;
    for (int32_t i = 0; i < n_slices; i++)
        order[i] = i;
    zg_status st =
        zg_sort_stable(order, (size_t)n_slices, sizeof *order, cmp_q_start, (void *)slices, err);
    int64_t end = INT64_MIN;
    int32_t prev = -1;
    for (int32_t j = 0; st == ZG_OK && j < n_slices; j++) {
        const zg_attn_slice *s = &slices[order[j]];
        if (s->q_len == 0) continue;
        if (s->q_start < end) {
            st = zg_error_set(err, ZG_ERR_INVALID,
                              "attention: q ranges of slices %d [%lld,%lld) and %d [%lld,%lld) "
                              "overlap; each output row must belong to one slice in forward",
                              (int)prev, (long long)slices[prev].q_start,
                              (long long)(slices[prev].q_start + slices[prev].q_len), (int)order[j],
                              (long long)s->q_start, (long long)(s->q_start + s->q_len));
            break;
        }
        end = s->q_start + s->q_len;
        prev = order[j];
    }
    free(order);
    return st;
}

zg_status zg_attn_check_bufs(const zg_attn_slice *slices, int32_t n_slices, const void *const *bufs,
                             const char *const *names, int n_bufs, zg_error *err) {
    int work = 0;
    for (int32_t s = 0; s < n_slices && !work; s++)
        work = slices[s].q_len > 0;
    if (!work) return ZG_OK; // nothing is read or written
    for (int j = 0; j < n_bufs; j++)
        if (!bufs[j])
            return zg_error_set(err, ZG_ERR_INVALID,
                                "attention: buffer '%s' is NULL; pass the packed tensor", names[j]);
    return ZG_OK;
}

void zg_attn_merge(int64_t rows, zg_attn_shape shape, float *o1, float *lse1, const float *o2,
                   const float *lse2) {
    const int64_t H = shape.n_heads, D = shape.head_dim;
    for (int64_t r = 0; r < rows * H; r++) {
        float *a = o1 + r * D;       // a is (D,)
        const float *b = o2 + r * D; // b is (D,)
        float l1 = lse1[r], l2 = lse2[r];
        if (l2 == -INFINITY) continue; // nothing to add
        if (l1 == -INFINITY) {
            for (int64_t d = 0; d < D; d++)
                a[d] = b[d];
            lse1[r] = l2;
            continue;
        }
        double m = l1 > l2 ? l1 : l2;
        double lse = m + log(exp((double)l1 - m) + exp((double)l2 - m));
        double w1 = exp((double)l1 - lse), w2 = exp((double)l2 - lse);
        for (int64_t d = 0; d < D; d++)
            a[d] = (float)(w1 * a[d] + w2 * b[d]);
        lse1[r] = (float)lse;
    }
}
