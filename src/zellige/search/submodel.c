// submodel.c — a sub-model of the stage-1 model: some units free, the others fixed where a
// solution puts them and folded into per-rank ledgers (internal.h, zel_sub). The LNS
// (lns.c) and the column layers (column.c) both re-solve such sub-models.
#include <stdlib.h>
#include <string.h>

#include "zellige/internal.h"

int zel_sub_init(zel_sub *q, const zel_model *m) {
    memset(q, 0, sizeof *q);
    q->m = *m;
    q->m.n_sym = 0;  // tile swaps need not be symmetries of the fixed ledgers
    q->m.sym = NULL;
    memset(&q->m.arena, 0, sizeof q->m.arena);
    size_t nu = (size_t)(m->n_units > 0 ? m->n_units : 1), N = (size_t)m->n_ranks;
    q->m.grps = malloc(sizeof(zel_grp) * (size_t)(m->n_grps > 0 ? m->n_grps : 1));
    q->m.unit0 = malloc(sizeof(int64_t) * ((size_t)m->n_grps + 1));
    q->m.grp_of = malloc(sizeof(int32_t) * nu);
    q->unit = malloc(sizeof(int64_t) * nu);
    q->L = malloc(sizeof(double) * 2 * (N > 0 ? N : 1));
    if (!q->m.grps || !q->m.unit0 || !q->m.grp_of || !q->unit || !q->L) return 0;
    q->H = q->L + N;
    q->m.base_load = q->L;
    q->m.base_mem = q->H;
    return 1;
}

void zel_sub_free(zel_sub *q) {
    free(q->m.grps), free(q->m.unit0), free(q->m.grp_of), free(q->unit), free(q->L);
    memset(q, 0, sizeof *q);
}

int64_t zel_sub_build(zel_sub *q, const zel_model *m, const zel_sol *s, const uint8_t *free_u) {
    int32_t N = m->n_ranks;
    zel_model *sm = &q->m;
    memcpy(q->L, m->base_load, sizeof(double) * (size_t)N);
    memcpy(q->H, m->base_mem, sizeof(double) * (size_t)N);
    int32_t ng = 0;
    int64_t nu = 0;
    for (int32_t g = 0; g < m->n_grps; g++) {
        int64_t cnt = 0;
        for (int64_t u = m->unit0[g]; u < m->unit0[g + 1]; u++) {
            if (free_u[u]) {
                q->unit[nu + cnt] = u;
                cnt++;
                continue;
            }
            const zel_opt *o = &m->grps[g].opts[s->opt[u]];
            for (int32_t r = o->start; r < o->start + o->degree; r++)
                q->L[r] += o->time, q->H[r] += o->mem;
        }
        if (cnt == 0) continue;
        sm->grps[ng] = m->grps[g];
        sm->grps[ng].count = cnt;
        sm->unit0[ng] = nu;
        for (int64_t k = 0; k < cnt; k++) sm->grp_of[nu + k] = ng;
        nu += cnt;
        ng++;
    }
    sm->n_grps = ng;
    sm->n_units = nu;
    sm->unit0[ng] = nu;
    return nu;
}
