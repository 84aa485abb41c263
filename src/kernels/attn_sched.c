// attn_sched.c — work-item ordering and scratch allocation shared by the fast kernels.
#include <stdlib.h>
#include <string.h>

#include "kernels/attn_internal.h"

static int cmp_item(const void *a, const void *b) {
    const zg_attn_item *x = a, *y = b;
    if (x->cost != y->cost) return x->cost > y->cost ? -1 : 1;
    if (x->group != y->group) return x->group < y->group ? -1 : 1;
    if (x->head != y->head) return x->head < y->head ? -1 : 1;
    return (x->r0 > y->r0) - (x->r0 < y->r0);
}

void zg_attn_items_sort(zg_attn_item *items, int64_t n) {
    if (n > 1) qsort(items, (size_t)n, sizeof *items, cmp_item);
}

int zg_attn_items_run(const void *ctx, zg_attn_item *items, int64_t n, zg_attn_item_fn fn,
                      size_t scr_n, int nt) {
    int failed = 0;
    zg_attn_items_sort(items, n);
    (void)nt;
#ifdef ZG_HAVE_OPENMP
#pragma omp parallel num_threads(nt) if (n > 1)
#endif
    {
        float *scr = zg_attn_scratch(scr_n);
        if (!scr) {
#ifdef ZG_HAVE_OPENMP
#pragma omp atomic write
#endif
            failed = 1;
        }
#ifdef ZG_HAVE_OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
        for (int64_t i = 0; i < n; i++)
            if (scr) fn(ctx, &items[i], scr);
        free(scr);
    }
    return failed;
}

float *zg_attn_scratch(size_t n_floats) {
    size_t bytes = (n_floats * sizeof(float) + 63) / 64 * 64;
    return aligned_alloc(64, bytes ? bytes : 64);
}

void zg_attn_pack_rows(float *dst, const float *src, int64_t n, int64_t D, int64_t ld) {
    for (int64_t r = 0; r < n; r++)
        memcpy(dst + r * D, src + r * ld, (size_t)D * sizeof(float));
}

void zg_attn_head_major(float *dst, const float *src, int64_t n, int64_t H, int64_t D, int nt) {
    (void)nt;
#ifdef ZG_HAVE_OPENMP
#pragma omp parallel for num_threads(nt) schedule(static) if (n * H * D > 65536)
#endif
    for (int64_t t = 0; t < n; t++)
        for (int64_t h = 0; h < H; h++)
            memcpy(dst + (h * n + t) * D, src + (t * H + h) * D, (size_t)D * sizeof(float));
}

int64_t zg_attn_keys_used(const zg_attn_slice *slices, int32_t n_slices) {
    int64_t tk = 0;
    for (int32_t i = 0; i < n_slices; i++)
        if (slices[i].q_len > 0 && slices[i].k_start + slices[i].k_len > tk)
            tk = slices[i].k_start + slices[i].k_len;
    return tk;
}
