// search/library.c — stage-1 layouts remembered across training steps, per anchor multiset.
//
// A training run draws its batches from one data distribution, so the anchor multiset of a step
// (which sequence shapes are anchors, how many of each) recurs: over 200 steps of the bench's
// 32-rank mixes 58-85 % of the steps replay one (bench_planner_latency's `replayed`). The
// stage-1 model of a multiset differs
// between steps only in the fillers' fluid work (extra_area, fill_mem), so the layouts stage 1
// ended on for it before are strong candidates now, and the search's effort accumulates across
// steps. two_stage.c decides what to do with them.
//
// An entry is keyed by the world size, the memory cap and each anchor group's (tokens, bucket,
// count, whole price); it holds up to ZEL_LIB_LAYOUTS layouts (the newest replace the oldest),
// each as every unit's (config, start) in the entry's unit order, canonical within a group, with
// its objective / root-bound ratio when stored. On use a layout is mapped back onto the model's
// options (the same block with the same or dominating prices; a layout with a unit that does not
// map is skipped). The library is cleared when the planning context changes (plan/plan.h).
// Deterministic: a function of the steps planned before, like the warm start.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"
#include "zellige/internal.h"

// The first lookup of an entry and every ZEL_LIB_REFRESH-th ask for a full search (two_stage.c):
// a multiset's first search can fail where a search under another step's fillers does not, and
// the remembered layouts keep improving for the fillers of later steps.

typedef struct lib_grp {
    int64_t tokens;
    char bucket[ZG_BUCKET_NAME_MAX];
    int64_t count;
    double whole_time;
    int64_t unit0;  // first unit of this group in a layout
} lib_grp;

typedef struct lib_ent {
    int32_t n_ranks, n_grps;
    double mem_room;
    lib_grp *grps;
    int64_t n_units;
    int32_t n_lay, next;  // layouts held; slot the next store overwrites when full
    zg_config *cfg;       // ZEL_LIB_LAYOUTS * n_units
    int32_t *start;
    double *ratio;        // ZEL_LIB_LAYOUTS: objective / root bound when stored
    uint64_t used;        // clock of the last lookup or store (least recently used goes)
    int64_t hits;         // lookups that found the entry
} lib_ent;

struct zel_library {
    zg_plan_ctx_key key;
    int32_t n;
    uint64_t clock;
    lib_ent e[ZEL_LIB_ENTRIES];
};

zel_library *zel_library_new(void) { return calloc(1, sizeof(zel_library)); }

static void ent_free(lib_ent *e) {
    free(e->grps), free(e->cfg), free(e->start), free(e->ratio);
    memset(e, 0, sizeof *e);
}

static void lib_clear(zel_library *lib) {
    for (int32_t i = 0; i < lib->n; i++) ent_free(&lib->e[i]);
    lib->n = 0;
}

void zel_library_free(zel_library *lib) {
    if (!lib) return;
    lib_clear(lib);
    free(lib);
}

// The entry's group of model group G's shape, or NULL.
static const lib_grp *ent_grp(const lib_ent *e, const zel_grp *G, const zg_problem *pr) {
    const zg_group *pg = &pr->groups[G->g];
    for (int32_t k = 0; k < e->n_grps; k++) {
        const lib_grp *q = &e->grps[k];
        if (q->tokens == pg->tokens && q->count == G->count && q->whole_time == pg->whole_time &&
            !strcmp(q->bucket, pg->bucket))
            return q;
    }
    return NULL;
}

// The entry of m's anchor multiset, or NULL.
static lib_ent *ent_find(zel_library *lib, const zel_model *m, const zg_problem *pr) {
    for (int32_t i = 0; i < lib->n; i++) {
        lib_ent *e = &lib->e[i];
        if (e->n_ranks != m->n_ranks || e->mem_room != m->mem_room || e->n_grps != m->n_grps ||
            e->n_units != m->n_units)
            continue;
        int ok = 1;
        for (int32_t g = 0; g < m->n_grps && ok; g++) ok = ent_grp(e, &m->grps[g], pr) != NULL;
        if (ok) return e;
    }
    return NULL;
}

int32_t zel_opt_map(const zel_grp *G, const zg_group *pg, zg_config c, int32_t start) {
    for (int32_t j = 0; j < pg->n_opts; j++) {
        const zg_option *o = &pg->opts[j];
        if (o->start != start || !zg_config_eq(o->config, c)) continue;
        int32_t d = zg_option_degree(o);
        for (int32_t k = 0; k < G->n_opts; k++)
            if (G->opts[k].start == start && G->opts[k].degree == d && G->opts[k].time <= o->time &&
                G->opts[k].mem <= o->mem)
                return k;
    }
    return -1;
}

// The context is part of every key: a new one empties the library.
static void lib_check_ctx(zel_library *lib, const zg_plan_ctx *ctx) {
    if (zg_plan_ctx_key_same(&lib->key, ctx)) return;
    lib_clear(lib);
    zg_plan_ctx_key_set(&lib->key, ctx);
}

int zel_library_best(zel_library *lib, const zg_plan_ctx *ctx, const zel_model *m,
                     const zg_problem *pr, zel_sol *out, double *ratio, int *refresh) {
    *ratio = INFINITY;
    *refresh = 0;
    if (!lib || m->n_units == 0) return 0;
    lib_check_ctx(lib, ctx);
    lib_ent *e = ent_find(lib, m, pr);
    if (!e) return 0;
    e->used = ++lib->clock;
    ++e->hits;
    *refresh = e->hits == 1 || e->hits % ZEL_LIB_REFRESH == 0;
    int32_t *v = malloc(sizeof(int32_t) * (size_t)m->n_units);
    if (!v) return 0;
    zel_sol s = {v, INFINITY, 0};
    int found = 0;
    for (int32_t l = 0; l < e->n_lay; l++) {
        int ok = 1;
        for (int32_t g = 0; g < m->n_grps && ok; g++) {
            const zel_grp *G = &m->grps[g];
            const lib_grp *q = ent_grp(e, G, pr);
            for (int64_t j = 0; j < G->count && ok; j++) {
                size_t at = (size_t)l * (size_t)e->n_units + (size_t)(q->unit0 + j);
                int32_t k = zel_opt_map(G, &pr->groups[G->g], e->cfg[at], e->start[at]);
                v[m->unit0[g] + j] = k;
                ok = k >= 0;
            }
        }
        if (!ok) continue;
        zel_sol_canon(m, &s);
        if (!zel_sol_eval(m, v, NULL, NULL, &s.T, &s.K)) continue;
        if (!found || s.T < out->T || (s.T == out->T && s.K < out->K)) {
            zel_sol_copy(m, out, &s);
            out->T = s.T, out->K = s.K;
            *ratio = e->ratio[l];
            found = 1;
        }
    }
    free(v);
    return found;
}

// A new entry for m's multiset (the least recently used one makes room); NULL when out of
// memory.
static lib_ent *ent_new(zel_library *lib, const zel_model *m, const zg_problem *pr) {
    lib_ent *e;
    if (lib->n < ZEL_LIB_ENTRIES) {
        e = &lib->e[lib->n++];
    } else {
        e = &lib->e[0];
        for (int32_t i = 1; i < lib->n; i++)
            if (lib->e[i].used < e->used) e = &lib->e[i];
        ent_free(e);
    }
    size_t nu = (size_t)m->n_units;
    e->grps = malloc(sizeof(lib_grp) * (size_t)m->n_grps);
    e->cfg = malloc(sizeof(zg_config) * ZEL_LIB_LAYOUTS * nu);
    e->start = malloc(sizeof(int32_t) * ZEL_LIB_LAYOUTS * nu);
    e->ratio = malloc(sizeof(double) * ZEL_LIB_LAYOUTS);
    if (!e->grps || !e->cfg || !e->start || !e->ratio) {
        ent_free(e);  // an entry with no groups and no units matches no model with anchors
        return NULL;
    }
    e->n_ranks = m->n_ranks;
    e->mem_room = m->mem_room;
    e->n_grps = m->n_grps;
    e->n_units = m->n_units;
    for (int32_t g = 0; g < m->n_grps; g++) {
        const zg_group *pg = &pr->groups[m->grps[g].g];
        lib_grp *q = &e->grps[g];
        q->tokens = pg->tokens;
        memcpy(q->bucket, pg->bucket, sizeof q->bucket);
        q->count = m->grps[g].count;
        q->whole_time = pg->whole_time;
        q->unit0 = m->unit0[g];
    }
    return e;
}

void zel_library_store(zel_library *lib, const zg_plan_ctx *ctx, const zel_model *m,
                       const zg_problem *pr, const zel_sol *s, double ratio) {
    if (!lib || m->n_units == 0 || s->T == INFINITY) return;
    lib_check_ctx(lib, ctx);
    lib_ent *e = ent_find(lib, m, pr);
    if (!e && !(e = ent_new(lib, m, pr))) return;
    e->used = ++lib->clock;
    size_t nu = (size_t)e->n_units;
    zg_config *cfg = malloc(sizeof(zg_config) * nu);
    int32_t *start = malloc(sizeof(int32_t) * nu);
    if (!cfg || !start) {
        free(cfg), free(start);
        return;
    }
    for (int32_t g = 0; g < m->n_grps; g++) {
        const zel_grp *G = &m->grps[g];
        const zg_group *pg = &pr->groups[G->g];
        const lib_grp *q = ent_grp(e, G, pr);
        for (int64_t j = 0; j < G->count; j++) {
            const zg_option *o = &pg->opts[G->opts[s->opt[m->unit0[g] + j]].src];
            cfg[q->unit0 + j] = o->config;
            start[q->unit0 + j] = o->start;
        }
    }
    int dup = 0;  // a layout already held (both canonical) is not stored twice
    for (int32_t l = 0; l < e->n_lay && !dup; l++)
        dup = !memcmp(e->start + (size_t)l * nu, start, sizeof(int32_t) * nu) &&
              !memcmp(e->cfg + (size_t)l * nu, cfg, sizeof(zg_config) * nu);
    if (!dup) {
        size_t slot;
        if (e->n_lay < ZEL_LIB_LAYOUTS) {
            slot = (size_t)e->n_lay++;
        } else {
            slot = (size_t)e->next;
            e->next = (e->next + 1) % ZEL_LIB_LAYOUTS;
        }
        memcpy(e->cfg + slot * nu, cfg, sizeof(zg_config) * nu);
        memcpy(e->start + slot * nu, start, sizeof(int32_t) * nu);
        e->ratio[slot] = ratio;
    }
    free(cfg), free(start);
}
