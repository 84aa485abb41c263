// search/beam.c — a beam over the first units' options.
//
// Why. The branch-and-bound is depth-first: on 32xA6000 high-load batches it never leaves the
// subtree of its first choices for the largest anchors (batch 9: 64 million nodes from 203.29
// find nothing, while the stage-1 optimum 202.26 has the 1080p video on [14,28) instead of
// [0,16) and a 219 600-token video on [0,8)). Fixing those few units right and letting the
// greedy ladder place the rest finds the optimum. So: for the first `levels` units (the
// largest anchors, in model order), keep the `width` best prefixes, each scored by the quick
// greedy completion (zel_heuristic_prefix), extending one unit per level over all its options
// (units of one group take non-decreasing option indices: the others are permutations).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zellige/internal.h"

typedef struct cand {
    double T;
    int64_t K;
    int32_t parent, opt;  // prefix = beam[parent] + opt
} cand;

static int cand_cmp(const void *pa, const void *pb) {
    const cand *a = pa, *b = pb;
    if (a->T != b->T) return a->T < b->T ? -1 : 1;
    if (a->K != b->K) return a->K < b->K ? -1 : 1;
    if (a->parent != b->parent) return a->parent < b->parent ? -1 : 1;
    return (a->opt > b->opt) - (a->opt < b->opt);
}

int zel_beam_incumbent(const zel_model *m, double lb, int32_t levels, int32_t width,
                       zel_sol *out) {
    out->T = INFINITY, out->K = 0;
    if (levels > m->n_units) levels = (int32_t)m->n_units;
    if (levels <= 0 || width <= 0) return 0;
    int32_t maxo = 0;
    for (int32_t u = 0; u < levels; u++)
        if (m->grps[m->grp_of[u]].n_opts > maxo) maxo = m->grps[m->grp_of[u]].n_opts;
    size_t ncap = (size_t)width * (size_t)maxo;
    int32_t *beam = malloc(sizeof(int32_t) * (size_t)width * (size_t)levels);
    int32_t *next = malloc(sizeof(int32_t) * (size_t)width * (size_t)levels);
    cand *cs = malloc(sizeof(cand) * ncap);
    int32_t *pre = malloc(sizeof(int32_t) * (size_t)levels);
    zel_sol t = {0};
    zg_error err;
    int found = 0;
    if (!beam || !next || !cs || !pre || zel_sol_alloc(m, &t, &err)) goto done;
    int32_t nb = 1;  // the empty prefix
    for (int32_t lv = 0; lv < levels; lv++) {
        const zel_grp *G = &m->grps[m->grp_of[lv]];
        int same = lv > 0 && m->grp_of[lv - 1] == m->grp_of[lv];
        size_t nc = 0;
        for (int32_t b = 0; b < nb; b++) {
            memcpy(pre, beam + (size_t)b * levels, sizeof(int32_t) * (size_t)lv);
            for (int32_t j = same ? pre[lv - 1] : 0; j < G->n_opts; j++) {
                pre[lv] = j;
                if (!zel_heuristic_prefix(m, lb, pre, lv + 1, &t)) continue;
                cs[nc++] = (cand){t.T, t.K, b, j};
                if (!found || t.T < out->T || (t.T == out->T && t.K < out->K)) {
                    zel_sol_copy(m, out, &t);
                    found = 1;
                }
            }
        }
        if (nc == 0) break;
        qsort(cs, nc, sizeof *cs, cand_cmp);
        int32_t nn = nc < (size_t)width ? (int32_t)nc : width;
        for (int32_t i = 0; i < nn; i++) {
            int32_t *p = next + (size_t)i * levels;
            memcpy(p, beam + (size_t)cs[i].parent * levels, sizeof(int32_t) * (size_t)lv);
            p[lv] = cs[i].opt;
        }
        int32_t *sw = beam;
        beam = next, next = sw, nb = nn;
    }
done:
    zel_sol_free(&t);
    free(beam), free(next), free(cs), free(pre);
    return found;
}
