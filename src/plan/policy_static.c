// policy_static.c — static disjoint groups (the paper's disjoint-group family, §1.3): the world
// is tiled by contiguous groups, each with one fixed config whose degree is the group size;
// every sequence goes whole-group to one group and inherits its config.
//
// Layout search (deterministic; the first best wins ties):
//   1. uniform: W/s groups of size s, for every divisor s of W (<= max degree) and every legal
//      config of degree s;
//   2. mixes of two sizes s1 < s2 (both divisors): a groups of s1 then b groups of s2, with
//      a*s1 + b*s2 = W and a*s1 a multiple of s2 (so the big groups stay aligned), each size
//      with its best config (fewest sequences it cannot hold, then least total price).
// Each layout is scored by greedy LPT: sequences in descending whole price go to the group
// where they would finish earliest (group load + the sequence's price under the group's
// config; ties: smaller groups, then lower ranks), subject to the group's memory (sum of the
// per-rank memory of its sequences <= cap) and legality (tokens >= group size). Prices in the
// search are taken on ranks 0..s-1 for every group of size s; the final plan re-prices at the
// real ranks. Groups are laid out smallest first from rank 0 (as KnapFormer's bags). The
// chosen layout is written in the plan summary, e.g. "g1n4(1,1,1)+g4n1(1,4,1)" (g = group
// size, n = number of groups).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"

typedef struct cand {  // one (group size, config) with its prices for every price class
    int32_t size;
    zg_config cfg;
    double *time, *mem;  // n_classes entries
    unsigned char *ok;   // legal for the class and fits alone under the cap
} cand;

typedef struct layout {
    int32_t n_cls;
    int32_t count[2];
    int32_t cand[2];  // index into cands; class 0 has the smaller size
} layout;

typedef struct search {
    const zg_plan_ctx *ctx;
    const zg_batch *b;
    int32_t world;
    double cap;
    cand *cands;
    int32_t n_cands;
    int64_t *order;  // LPT order
    int32_t *cls;    // n entries: price class of each sequence (zg_batch_price_classes)
    int32_t n_classes;
    int64_t *rep;    // n_classes entries: first member of each class
    // per-layout scratch (world entries)
    double *load, *mem;
    int32_t *heap, *pos, *group_cls;
    int32_t *assign;  // n entries: group of each sequence (last evaluation)
} search;

// --- a min-heap of groups keyed by (load, index), one contiguous segment per class ----------

static int grp_less(const search *S, int32_t a, int32_t b) {
    if (S->load[a] != S->load[b]) return S->load[a] < S->load[b];
    return a < b;
}

static void heap_sift_down(search *S, int32_t *h, int32_t n, int32_t i) {
    for (;;) {
        int32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && grp_less(S, h[l], h[m])) m = l;
        if (r < n && grp_less(S, h[r], h[m])) m = r;
        if (m == i) return;
        int32_t t = h[i];
        h[i] = h[m];
        h[m] = t;
        S->pos[h[i]] = i;
        S->pos[h[m]] = m;
        i = m;
    }
}

// Evaluates layout L: returns its makespan, or -1 if some sequence fits no group (its batch
// index in *fail, the LPT rank of the failure in *placed), or -2 as soon as a group's load
// reaches `bound` (>= 0; the layout cannot beat the best one found).
static double eval_layout(search *S, const layout *L, double bound, int64_t *fail,
                          int64_t *placed) {
    int32_t first[3] = {0, 0, 0};
    for (int32_t c = 0; c < L->n_cls; c++) first[c + 1] = first[c] + L->count[c];
    int32_t G = first[L->n_cls];
    for (int32_t g = 0; g < G; g++) {
        S->load[g] = 0;
        S->mem[g] = 0;
        S->heap[g] = g;  // all loads 0: index order is a valid heap
        S->pos[g] = g - (g >= first[1] && L->n_cls > 1 ? first[1] : 0);
        S->group_cls[g] = g >= first[1] && L->n_cls > 1 ? 1 : 0;
    }
    double mk = 0;
    for (int64_t k = 0; k < S->b->n; k++) {
        int64_t i = S->order[k];
        int32_t ci = S->cls[i];
        int32_t best = -1;
        double best_fin = 0;
        for (int32_t c = 0; c < L->n_cls; c++) {
            const cand *cd = &S->cands[L->cand[c]];
            if (!cd->ok[ci]) continue;
            int32_t *h = S->heap + first[c];
            int32_t g = h[0];
            if (S->mem[g] + cd->mem[ci] > S->cap) {  // rare: scan the class for room
                g = -1;
                for (int32_t x = first[c]; x < first[c + 1]; x++)
                    if (S->mem[x] + cd->mem[ci] <= S->cap && (g < 0 || grp_less(S, x, g)))
                        g = x;
                if (g < 0) continue;
            }
            double fin = S->load[g] + cd->time[ci];
            if (best < 0 || fin < best_fin) {
                best = g;
                best_fin = fin;
            }
        }
        if (best < 0) {
            *fail = i;
            *placed = k;
            return -1;
        }
        int32_t c = S->group_cls[best];
        const cand *cd = &S->cands[L->cand[c]];
        if (bound >= 0 && best_fin >= bound) return -2;
        S->load[best] = best_fin;
        S->mem[best] += cd->mem[ci];
        S->assign[i] = best;
        if (best_fin > mk) mk = best_fin;
        heap_sift_down(S, S->heap + first[c], first[c + 1] - first[c], S->pos[best]);
    }
    *fail = -1;
    *placed = S->b->n;
    return mk;
}

static void layout_name(const search *S, const layout *L, char *buf, size_t sz) {
    size_t at = 0;
    buf[0] = '\0';
    for (int32_t c = 0; c < L->n_cls && at < sz; c++) {
        const cand *cd = &S->cands[L->cand[c]];
        char cb[32];
        at += (size_t)snprintf(buf + at, sz - at, "%sg%dn%d%s", c ? "+" : "", cd->size,
                               L->count[c], zg_config_name(cd->cfg, cb, sizeof cb));
    }
}

typedef struct {
    const zg_batch *b;
    const zg_price *pr;
} st_order_ctx;

static int cmp_lpt(const void *pa, const void *pb, void *vctx) {
    const st_order_ctx *c = vctx;
    int64_t a = *(const int64_t *)pa, d = *(const int64_t *)pb;
    if (c->pr[a].time != c->pr[d].time) return c->pr[a].time > c->pr[d].time ? -1 : 1;
    int64_t ta = c->b->seqs[a].tokens, td = c->b->seqs[d].tokens;
    if (ta != td) return ta > td ? -1 : 1;
    return (a > d) - (a < d);
}

// Prices every price class under every candidate (size divides W, legal config of that
// degree), on ranks 0..size-1.
static zg_status build_cands(search *S, zg_error *err) {
    const zg_plan_ctx *ctx = S->ctx;
    int64_t n = S->n_classes;
    zg_config *cfgs = NULL;
    int32_t nc = 0;
    zg_status st = zg_config_enumerate(ctx->model, zg_plan_ctx_max_degree(ctx), &cfgs, &nc, err);
    if (st) return st;
    S->cands = zg_calloc((size_t)nc, sizeof *S->cands, err);
    int32_t *ranks = zg_calloc((size_t)S->world, sizeof *ranks, err);
    if (!S->cands || !ranks) {
        st = ZG_ERR_NOMEM;
        goto done;
    }
    for (int32_t r = 0; r < S->world; r++) ranks[r] = r;
    for (int32_t ci = 0; ci < nc; ci++) {
        int32_t d = zg_config_degree(cfgs[ci]);
        if (S->world % d != 0) continue;
        cand *cd = &S->cands[S->n_cands++];
        cd->size = d;
        cd->cfg = cfgs[ci];
        cd->time = zg_calloc((size_t)n, sizeof *cd->time, err);
        cd->mem = zg_calloc((size_t)n, sizeof *cd->mem, err);
        cd->ok = zg_calloc((size_t)n, 1, err);
        if (!cd->time || !cd->mem || !cd->ok) {
            st = ZG_ERR_NOMEM;
            goto done;
        }
        for (int64_t i = 0; i < n; i++) {
            const zg_seq *s = &S->b->seqs[S->rep[i]];
            if (zg_config_check(ctx->model, S->world, cd->cfg, s->tokens, NULL) != ZG_OK)
                continue;
            zg_price p;
            if ((st = zg_pricer_price(ctx->pricer, s, cd->cfg, ranks, d, &p, err))) goto done;
            cd->time[i] = p.time;
            cd->mem[i] = p.mem;
            cd->ok[i] = p.mem <= S->cap;
        }
    }
done:
    free(cfgs);
    free(ranks);
    return st;
}

// Best candidate of a size: fewest sequences it cannot hold, then least total price.
static int32_t best_cand_of_size(const search *S, int32_t size) {
    int32_t best = -1;
    int64_t best_unfit = 0;
    double best_total = 0;
    for (int32_t c = 0; c < S->n_cands; c++) {
        const cand *cd = &S->cands[c];
        if (cd->size != size) continue;
        int64_t unfit = 0;
        double total = 0;
        for (int64_t i = 0; i < S->b->n; i++) {
            if (!cd->ok[S->cls[i]]) unfit++;
            else total += cd->time[S->cls[i]];
        }
        if (best < 0 || unfit < best_unfit || (unfit == best_unfit && total < best_total)) {
            best = c;
            best_unfit = unfit;
            best_total = total;
        }
    }
    return best;
}

typedef struct {
    layout best;
    double best_mk;
    int64_t n_tried;
    layout worst_fail;  // the infeasible layout that placed the most sequences
    int64_t fail_seq, fail_placed;
} search_result;

static void try_layout(search *S, const layout *L, search_result *R) {
    int64_t fail, placed;
    double mk = eval_layout(S, L, R->best_mk, &fail, &placed);
    R->n_tried++;
    if (mk == -2) return;  // pruned: cannot beat the best
    if (mk < 0) {
        if (R->fail_seq < 0 || placed > R->fail_placed) {
            R->worst_fail = *L;
            R->fail_seq = fail;
            R->fail_placed = placed;
        }
        return;
    }
    if (R->best_mk < 0 || mk < R->best_mk) {
        R->best = *L;
        R->best_mk = mk;
    }
}

static void search_layouts(search *S, search_result *R) {
    int32_t W = S->world;
    R->best_mk = -1;
    R->n_tried = 0;
    R->fail_seq = -1;
    R->fail_placed = -1;
    for (int32_t c = 0; c < S->n_cands; c++) {  // 1. uniform, every config
        layout L = {1, {W / S->cands[c].size, 0}, {c, 0}};
        try_layout(S, &L, R);
    }
    for (int32_t s1 = 1; s1 <= W; s1++) {  // 2. two sizes, best config per size
        if (W % s1) continue;
        int32_t c1 = best_cand_of_size(S, s1);
        if (c1 < 0) continue;
        for (int32_t s2 = s1 + 1; s2 < W; s2++) {
            if (W % s2) continue;
            int32_t c2 = best_cand_of_size(S, s2);
            if (c2 < 0) continue;
            for (int32_t nb = 1; nb * s2 < W; nb++) {
                int32_t rest = W - nb * s2;
                if (rest % s1 || rest % s2) continue;
                layout L = {2, {rest / s1, nb}, {c1, c2}};
                try_layout(S, &L, R);
            }
        }
    }
}

static zg_status place_final(search *S, const layout *L, zg_plan *out, zg_error *err) {
    int64_t fail, placed;
    eval_layout(S, L, -1, &fail, &placed);  // fills assign[]
    int32_t first[3] = {0, 0, 0}, rank_of[2] = {0, 0};
    for (int32_t c = 0; c < L->n_cls; c++) first[c + 1] = first[c] + L->count[c];
    if (L->n_cls > 1) rank_of[1] = L->count[0] * S->cands[L->cand[0]].size;
    int32_t *ranks = zg_calloc((size_t)S->world, sizeof *ranks, err);
    double *mem = zg_calloc((size_t)S->world, sizeof *mem, err);
    zg_status st = (!ranks || !mem) ? ZG_ERR_NOMEM : ZG_OK;
    for (int64_t i = 0; i < S->b->n && !st; i++) {
        int32_t g = S->assign[i], c = S->group_cls[g];
        const cand *cd = &S->cands[L->cand[c]];
        int32_t start = rank_of[c] + (g - first[c]) * cd->size;
        for (int32_t r = 0; r < cd->size; r++) ranks[r] = start + r;
        const zg_seq *s = &S->b->seqs[i];
        zg_price p;
        if ((st = zg_pricer_price(S->ctx->pricer, s, cd->cfg, ranks, cd->size, &p, err))) break;
        mem[g] += p.mem;
        if (mem[g] > S->cap * (1 + 1e-12)) {  // the search summed in LPT order
            char a[32], cb[32], name[128];
            layout_name(S, L, name, sizeof name);
            st = zg_error_set(err, ZG_ERR_INFEASIBLE,
                              "static: layout %s: group at ranks %d..%d needs more than the %s "
                              "cap at its real ranks (sequence %lld under %s)",
                              name, start, start + cd->size - 1,
                              zg_fmt_bytes(S->ctx->pricer->mem_cap, a, sizeof a), (long long)s->id,
                              zg_config_name(cd->cfg, cb, sizeof cb));
            break;
        }
        zg_option o = {cd->cfg, start, p.time, p.mem};
        st = zg_plan_set_option(out, i, s, i, &o, err);
    }
    free(ranks);
    free(mem);
    return st;
}

static zg_status plan_static(zg_planner *pl, const zg_batch *b, zg_plan *out, zg_error *err) {
    const zg_plan_ctx *ctx = &pl->ctx;
    search S;
    memset(&S, 0, sizeof S);
    S.ctx = ctx;
    S.b = b;
    S.world = ctx->cluster->world_size;
    S.cap = zg_pricer_mem_room(ctx->pricer);  // for the placements (base apart)
    zg_status st = zg_plan_alloc(out, b->n, S.world, err);
    if (st) return st;
    size_t n = (size_t)b->n, w = (size_t)S.world;
    zg_price *whole = zg_calloc(n, sizeof *whole, err);
    S.order = zg_calloc(n, sizeof *S.order, err);
    S.assign = zg_calloc(n, sizeof *S.assign, err);
    S.load = zg_calloc(w, sizeof *S.load, err);
    S.mem = zg_calloc(w, sizeof *S.mem, err);
    S.heap = zg_calloc(w, sizeof *S.heap, err);
    S.pos = zg_calloc(w, sizeof *S.pos, err);
    S.group_cls = zg_calloc(w, sizeof *S.group_cls, err);
    S.cls = zg_calloc(n, sizeof *S.cls, err);
    S.rep = zg_calloc(n, sizeof *S.rep, err);
    if (!whole || !S.order || !S.assign || !S.load || !S.mem || !S.heap || !S.pos ||
        !S.group_cls || !S.cls || !S.rep) {
        st = ZG_ERR_NOMEM;
        goto done;
    }
    if ((st = zg_batch_price_classes(b, S.cls, &S.n_classes, err))) goto done;
    for (int64_t i = (int64_t)n - 1; i >= 0; i--) S.rep[S.cls[i]] = i;
    if ((st = zg_plan_whole_prices(ctx, b, whole, err))) goto done;
    for (int64_t i = 0; i < b->n; i++) S.order[i] = i;
    st_order_ctx oc = {b, whole};
    if ((st = zg_sort_stable(S.order, n, sizeof *S.order, cmp_lpt, &oc, err))) goto done;
    if ((st = build_cands(&S, err))) goto done;
    search_result R;
    search_layouts(&S, &R);
    char name[160];
    if (R.best_mk < 0) {
        if (R.fail_seq < 0) {
            st = zg_error_set(err, ZG_ERR_INFEASIBLE,
                              "static: no legal group layout for %d ranks", S.world);
            goto done;
        }
        const zg_seq *s = &b->seqs[R.fail_seq];
        double need = -1;  // smallest per-rank memory the sequence needs in any group size
        for (int32_t c = 0; c < S.n_cands; c++)
            if (zg_config_check(ctx->model, S.world, S.cands[c].cfg, s->tokens, NULL) == ZG_OK &&
                (need < 0 || S.cands[c].mem[S.cls[R.fail_seq]] < need))
                need = S.cands[c].mem[S.cls[R.fail_seq]];
        char a[80], cb[32];
        layout_name(&S, &R.worst_fail, name, sizeof name);
        st = zg_error_set(err, ZG_ERR_INFEASIBLE,
                          "static: no layout of disjoint groups holds the batch (%lld tried); "
                          "the closest, %s, has no group with room for sequence %lld (%lld "
                          "tokens, needs at least %s per rank in any group; cap %s)",
                          (long long)R.n_tried, name, (long long)s->id, (long long)s->tokens,
                          zg_plan_fmt_need(ctx->pricer, need, a, sizeof a),
                          zg_fmt_bytes(ctx->pricer->mem_cap, cb, sizeof cb));
        goto done;
    }
    if ((st = place_final(&S, &R.best, out, err))) goto done;
    layout_name(&S, &R.best, name, sizeof name);
    snprintf(out->summary, sizeof out->summary, "layout %s (best of %lld layouts)", name,
             (long long)R.n_tried);
done:
    if (S.cands)
        for (int32_t c = 0; c < S.n_cands; c++) {
            free(S.cands[c].time);
            free(S.cands[c].mem);
            free(S.cands[c].ok);
        }
    free(S.cands);
    free(whole);
    free(S.order);
    free(S.assign);
    free(S.load);
    free(S.mem);
    free(S.heap);
    free(S.pos);
    free(S.group_cls);
    free(S.cls);
    free(S.rep);
    return st;
}

const zg_planner_vtable zg_policy_static = {
    "static", "static disjoint groups, one config each; searches the best layout", NULL,
    plan_static, NULL, 0};
