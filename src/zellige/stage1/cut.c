// stage1/cut.c — the anchor/filler catalog cut (reference §5.1): the contiguous split of the
// ascending whole prices that minimises the within-class dispersion of log price (two-class
// 1-D k-means / Jenks natural breaks), ties to the smallest k.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zellige/internal.h"

int32_t zel_cut_index(const double *w, int32_t n) {
    if (n < 2) return 0;
    // prefix sums of log w and (log w)^2
    double *s1 = malloc(sizeof(double) * 2 * (size_t)(n + 1));
    if (!s1) return 0;
    double *s2 = s1 + n + 1;
    s1[0] = s2[0] = 0;
    for (int32_t i = 0; i < n; i++) {
        double x = log(w[i]);
        s1[i + 1] = s1[i] + x;
        s2[i + 1] = s2[i] + x * x;
    }
    int32_t best = 0;
    double best_v = INFINITY;
    for (int32_t k = 1; k < n; k++) {
        double a1 = s1[k], a2 = s2[k], b1 = s1[n] - s1[k], b2 = s2[n] - s2[k];
        double v = (a2 - a1 * a1 / k) + (b2 - b1 * b1 / (n - k));
        if (best == 0 || v < best_v - ZEL_STRICT * (fabs(best_v) + 1e-300)) best_v = v, best = k;
    }
    free(s1);
    if (w[0] == w[n - 1]) return 0;  // one price: no cut
    return best;
}

static int dbl_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

// Sorts, removes duplicates, cuts; threshold = geometric mean of the two prices at the cut.
static double cut_of(double *w, int32_t n) {
    qsort(w, (size_t)n, sizeof *w, dbl_cmp);
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++)
        if (w[i] > 0 && (m == 0 || w[i] != w[m - 1])) w[m++] = w[i];
    int32_t k = zel_cut_index(w, m);
    if (k == 0) return -1;
    return sqrt(w[k - 1] * w[k]);
}

zg_status zel_cut_threshold(const zg_plan_ctx *ctx, const zg_problem *pr, double *thr,
                            zg_error *err) {
    if (ctx && ctx->opts.anchor_cut_s > 0) {
        *thr = ctx->opts.anchor_cut_s;
        return ZG_OK;
    }
    const zg_catalog *cat = ctx ? ctx->catalog : NULL;
    int32_t n = cat ? cat->n : pr->n_groups;
    double *w = zg_calloc((size_t)(n > 0 ? n : 1), sizeof(double), err);
    if (!w) return ZG_ERR_NOMEM;
    if (cat) {
        for (int32_t i = 0; i < n; i++) {
            const zg_bucket *bk = &cat->buckets[i];
            w[i] = -1;
            for (int32_t g = 0; g < pr->n_groups; g++)  // a batch sequence of the bucket
                if (!strcmp(pr->groups[g].bucket, bk->name)) {
                    w[i] = pr->groups[g].whole_time;
                    break;
                }
            if (w[i] >= 0) continue;
            zg_seq s;
            zg_seq_init(&s);
            s.tokens = bk->tokens;
            s.kind = bk->kind;
            s.frames = bk->frames, s.height = bk->height, s.width = bk->width;
            s.text_tokens = ctx->model ? ctx->model->text_len : 0;
            snprintf(s.bucket, sizeof s.bucket, "%s", bk->name);
            zg_price p;
            int32_t r0 = 0;
            zg_status st = zg_pricer_price(ctx->pricer, &s, (zg_config){1, 1, 1}, &r0, 1, &p, err);
            if (st) {
                free(w);
                return zg_error_prefix(err, "zellige catalog cut, bucket %s: ", bk->name);
            }
            w[i] = p.time;
        }
    } else {
        for (int32_t g = 0; g < n; g++) w[g] = pr->groups[g].whole_time;
    }
    *thr = cut_of(w, n);
    free(w);
    return ZG_OK;
}
