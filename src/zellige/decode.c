// decode.c — ECF counts -> concrete placements. The units of group g, in canonical order
// (option indices ascending), go to the group's members in ascending batch order, so the plan
// is a deterministic function of the count vector; every option is a contiguous block with
// even token chunks (zg_plan_set_option), so per-rank loads equal the counts' loads.
#include <stdlib.h>
#include <string.h>

#include "zellige/internal.h"

void zel_sol_to_choice(const zel_model *m, const zg_problem *pr, const zel_sol *s,
                       int32_t *choice) {
    for (int32_t i = 0; i < m->n_grps; i++) {
        const zel_grp *G = &m->grps[i];
        const zg_group *pg = &pr->groups[G->g];
        for (int64_t j = 0; j < G->count; j++)
            choice[pg->members[j]] = G->opts[s->opt[m->unit0[i] + j]].src;
    }
}

double zel_choice_makespan(const zg_problem *pr, const int32_t *choice, double *L, double *H) {
    int32_t N = pr->world_size;
    double *l = L, *h = H, *own = NULL;
    if (!l || !h) {
        own = calloc(2 * (size_t)N, sizeof(double));
        if (!own) return -1;
        if (!l) l = own;
        if (!h) h = own + N;
    }
    for (int32_t r = 0; r < N; r++) l[r] = h[r] = 0;
    for (int64_t i = 0; i < pr->n_seqs; i++) {
        const zg_option *o = &pr->groups[pr->group_of[i]].opts[choice[i]];
        for (int32_t r = o->start; r < o->start + zg_option_degree(o); r++) {
            l[r] += o->time;
            h[r] += o->mem;
        }
    }
    double t = 0;
    for (int32_t r = 0; r < N; r++)
        if (l[r] > t) t = l[r];
    free(own);
    return t;
}

zg_status zel_decode(const zg_problem *pr, const zg_batch *b, const int32_t *choice,
                     const char *policy, zg_plan *out, zg_error *err) {
    if (b->n != pr->n_seqs)
        return zg_error_set(err, ZG_ERR_INTERNAL, "zellige decode: batch has %lld sequences, "
                            "problem %lld", (long long)b->n, (long long)pr->n_seqs);
    zg_status st = zg_plan_alloc(out, pr->n_seqs, pr->world_size, err);
    if (st) return st;
    snprintf(out->policy, sizeof out->policy, "%s", policy);
    out->mem_cap = pr->mem_cap;
    out->mem_base = pr->mem_base;
    for (int64_t i = 0; i < pr->n_seqs; i++) {
        const zg_group *G = &pr->groups[pr->group_of[i]];
        if (choice[i] < 0 || choice[i] >= G->n_opts)
            return zg_error_set(err, ZG_ERR_INTERNAL, "zellige decode: sequence %lld has no "
                                "option", (long long)b->seqs[i].id);
        st = zg_plan_set_option(out, i, &b->seqs[i], i, &G->opts[choice[i]], err);
        if (st) return st;
    }
    out->makespan = zel_choice_makespan(pr, choice, NULL, NULL);
    return ZG_OK;
}
