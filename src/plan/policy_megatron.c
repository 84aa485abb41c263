// policy_megatron.c — the 'megatron' placement policy: Megatron-Core's dynamic ("hybrid")
// context parallelism, i.e. BalancedCPScheduler.get_groups_and_subsamples of megatron-core
// 0.16.1 (megatron.h, a faithful port) on the batch, mapped to a plan:
//   * the scheduler's sample ids are the batch indices 0..n-1 (Megatron's global ids), its
//     lengths the sequences' tokens, its world the cluster's ranks;
//   * microbatch group g -> round g (groups run one after another, a barrier between them);
//   * a sample's ranks are the ranks whose list holds it in its group (ascending), its CP size
//     their count (a power of two: gpus_needed, or more where fill_empty_gpus widened it);
//   * config (1,1,cp): Megatron's context parallelism is the ring (Transformer Engine's default
//     cp_comm_type "p2p"); shards are even contiguous chunks in rank order (the first
//     tokens % cp ranks get one token more), as the other baselines cut them.
// The decision uses only token counts; the placements are then priced with ctx.pricer, and a
// plan with a round over a rank's memory cap is reported infeasible (named), as the other
// baselines do. Ignores opts.max_degree and the rank-set family: the scheduler picks the ranks.
//
// max_seqlen_per_rank (opts.max_seqlen_per_rank), the scheduler's one knob: given, it is used as
// is. Absent, it is the largest value that fits memory, as a Megatron user sets
// max_seqlen_per_dp_cp_rank ("the maximum sequence length each rank can handle without
// overflowing the memory"), found from the pricer per batch:
//   1. per sequence (one per price class), the smallest power of two cp <= world whose (1,1,cp)
//      price on ranks 0..cp-1 fits the cap, and M0 = the largest M at which every sequence gets
//      at least that cp from gpus_needed (the longest sequence's tokens when all fit whole);
//   2. the schedule depends on M only through every sequence's gpus_needed, which changes at
//      finitely many M; from M0 down, the first of those values whose plan fits the cap in
//      every round (rank by rank, the memory prices of its samples of the group summed) is taken.
//      Smaller M only raises CP sizes; the search stops when a sequence would need more ranks
//      than the world (then no plan: infeasible, naming why the largest candidate failed).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/megatron.h"
#include "plan/plan.h"

static zg_status megatron_init(zg_planner *pl, zg_error *err) {
    const zg_opt_tokens *m = &pl->ctx.opts.max_seqlen_per_rank;
    if (m->given && m->tokens < 1)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "megatron: max_seqlen_per_rank %lld: give a positive number of tokens, "
                            "or leave it out for the largest that fits memory",
                            (long long)m->tokens);
    return ZG_OK;
}

// The largest M with gpus_needed(len, M) >= cp (cp >= 2): M < 2*len/cp, checked with the
// function itself (its division and log2 are in double).
static int64_t largest_seqlen_for(int64_t len, int64_t cp) {
    int64_t m = (2 * len + cp - 1) / cp - 1;
    if (m < 1) m = 1;
    while (m > 1 && zg_megatron_gpus_needed(len, m) < cp) m--;
    while (zg_megatron_gpus_needed(len, m + 1) >= cp) m++;
    return m;
}

// Step 1 of the default: M0 from every sequence's smallest CP size that fits memory alone.
static zg_status seqlen_bound(const zg_plan_ctx *ctx, const zg_batch *b, const int32_t *cls,
                              int32_t n_cls, int64_t *out, zg_error *err) {
    int32_t W = ctx->cluster->world_size;
    double cap = zg_pricer_mem_room(ctx->pricer);  // for the placements (base apart)
    unsigned char *done = zg_calloc((size_t)(n_cls ? n_cls : 1), 1, err);
    if (!done) return ZG_ERR_NOMEM;
    zg_status st = ZG_OK;
    int64_t best = 0, longest = 0;
    for (int64_t i = 0; i < b->n && !st; i++) {
        const zg_seq *s = &b->seqs[i];
        if (s->tokens > longest) longest = s->tokens;
        if (done[cls[i]]) continue;
        done[cls[i]] = 1;
        int64_t cp = 0, least_cp = 1;
        double least = -1;
        for (int64_t c = 1; c <= W && c <= s->tokens && !cp; c *= 2) {
            zg_price pr;
            if ((st = zg_pricer_price_block(ctx->pricer, s, (zg_config){1, 1, (int32_t)c}, 0,
                                            (int32_t)c, &pr, err))) {
                zg_error_prefix(err, "megatron: pricing sequence %lld: ", (long long)s->id);
                break;
            }
            if (least < 0 || pr.mem < least) {
                least = pr.mem;
                least_cp = c;
            }
            if (pr.mem <= cap) cp = c;
        }
        if (st) break;
        if (!cp) {
            char a[80], c[32];
            st = zg_error_set(err, ZG_ERR_INFEASIBLE,
                              "megatron: sequence %lld (%lld tokens) fits no CP size: needs %s "
                              "per rank at best (cp %lld of %d ranks), cap %s",
                              (long long)s->id, (long long)s->tokens,
                              zg_plan_fmt_need(ctx->pricer, least, a, sizeof a),
                              (long long)least_cp, W, zg_fmt_bytes(ctx->pricer->mem_cap, c, sizeof c));
            break;
        }
        if (cp > 1) {
            int64_t m = largest_seqlen_for(s->tokens, cp);
            if (!best || m < best) best = m;
        }
    }
    free(done);
    if (!st) *out = best ? best : (longest > 0 ? longest : 1);
    return st;
}

// Why a build failed: the next smaller candidate may fit (memory, an empty chunk), or none can
// (a sequence needs more ranks than the world), or something else (stop and report).
typedef enum { BUILD_OK = 0, BUILD_TRY_SMALLER, BUILD_TOO_MANY_RANKS, BUILD_ERROR } build_why;

// The plan of max_seqlen_per_rank M into out (allocated here), priced, memory checked per round.
static zg_status megatron_build(const zg_plan_ctx *ctx, const zg_batch *b, int64_t M,
                                zg_plan *out, int32_t *n_groups, build_why *why, zg_error *err) {
    int32_t W = ctx->cluster->world_size;
    int64_t n = b->n;
    size_t N = (size_t)(n ? n : 1);
    *why = BUILD_ERROR;
    for (int64_t i = 0; i < n; i++) {
        const zg_seq *s = &b->seqs[i];
        if (s->tokens > ZG_MEGATRON_MAX_LEN)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "megatron: sequence %lld has %lld tokens; the scheduler port "
                                "takes at most %d",
                                (long long)s->id, (long long)s->tokens, ZG_MEGATRON_MAX_LEN);
        int64_t cp = zg_megatron_gpus_needed(s->tokens, M);
        if (cp > W) {
            *why = BUILD_TOO_MANY_RANKS;
            return zg_error_set(err, ZG_ERR_INFEASIBLE,
                                "megatron: sequence %lld (%lld tokens) needs %lld ranks at "
                                "max_seqlen_per_rank %lld, more than the %d ranks (Megatron "
                                "raises AssertionError); raise max_seqlen_per_rank",
                                (long long)s->id, (long long)s->tokens, (long long)cp,
                                (long long)M, W);
        }
    }
    zg_megatron_sample *smp = zg_calloc(N, sizeof *smp, err);
    if (!smp) return ZG_ERR_NOMEM;
    for (int64_t i = 0; i < n; i++) smp[i] = (zg_megatron_sample){i, b->seqs[i].tokens};
    zg_megatron_groups g;
    zg_status st = zg_megatron_schedule(smp, n, M, W, &g, err);
    free(smp);
    if (st) {
        zg_megatron_groups_free(&g);
        return st;
    }
    *n_groups = g.n_groups;
    // per sample: its group, its CP size, its ranks ascending (offsets into one array)
    int32_t *round = zg_calloc(N, sizeof *round, err), *cnt = zg_calloc(N, sizeof *cnt, err);
    int64_t *at = zg_calloc(N + 1, sizeof *at, err);
    int64_t *lens = zg_calloc((size_t)W, sizeof *lens, err);
    int32_t *rk = zg_calloc((size_t)(g.off[(int64_t)g.n_groups * W] + 1), sizeof *rk, err);
    double *mem = zg_calloc((size_t)W * (size_t)(g.n_groups ? g.n_groups : 1), sizeof *mem, err);
    if (!round || !cnt || !at || !lens || !rk || !mem) st = ZG_ERR_NOMEM;
    if (!st) st = zg_plan_alloc(out, n, W, err);
    for (int32_t k = 0; k < g.n_groups && !st; k++)
        for (int64_t j = g.off[(int64_t)k * W]; j < g.off[(int64_t)(k + 1) * W]; j++) {
            round[g.items[j].id] = k;
            cnt[g.items[j].id]++;
        }
    for (int64_t i = 0; i < n && !st; i++) {
        if (cnt[i] == 0)
            st = zg_error_set(err, ZG_ERR_INTERNAL, "megatron: sample %lld is in no group",
                              (long long)i);
        at[i + 1] = at[i] + cnt[i];
        cnt[i] = 0;
    }
    for (int32_t k = 0; k < g.n_groups && !st; k++)
        for (int32_t r = 0; r < W; r++)
            for (int64_t j = g.off[(int64_t)k * W + r]; j < g.off[(int64_t)k * W + r + 1]; j++) {
                int64_t i = g.items[j].id;
                if (round[i] != k)
                    st = zg_error_set(err, ZG_ERR_INTERNAL,
                                      "megatron: sample %lld is in groups %d and %d", (long long)i,
                                      round[i], k);
                else rk[at[i] + cnt[i]++] = r;
            }
    for (int64_t i = 0; i < n && !st; i++) {
        const zg_seq *s = &b->seqs[i];
        int32_t cp = cnt[i];
        const int32_t *ranks = &rk[at[i]];
        if (s->tokens < cp) {
            *why = BUILD_TRY_SMALLER;
            st = zg_error_set(err, ZG_ERR_INFEASIBLE,
                              "megatron: sequence %lld (%lld tokens) is spread over %d ranks "
                              "(fill_empty_gpus widened its group); a rank would get no token",
                              (long long)s->id, (long long)s->tokens, cp);
            break;
        }
        for (int32_t p = 0; p < cp; p++) lens[p] = s->tokens / cp + (p < s->tokens % cp ? 1 : 0);
        zg_config c = {1, 1, cp};
        if ((st = zg_plan_set_ranks(out, i, s, i, c, ranks, lens, cp, err))) break;
        out->p[i].round = round[i];
        zg_price pr;
        if ((st = zg_pricer_price(ctx->pricer, s, c, ranks, cp, &pr, err))) {
            zg_error_prefix(err, "megatron: pricing sequence %lld: ", (long long)s->id);
            break;
        }
        out->p[i].time = pr.time;
        out->p[i].mem = pr.mem;
        for (int32_t p = 0; p < cp; p++) mem[(size_t)round[i] * W + ranks[p]] += pr.mem;
    }
    // memory, round by round: a rank's samples of one group together
    double cap = zg_pricer_mem_room(ctx->pricer);  // for the placements (base apart)
    for (int32_t k = 0; k < g.n_groups && !st && cap > 0; k++)
        for (int32_t r = 0; r < W && !st; r++)
            if (mem[(size_t)k * W + r] > cap * (1 + 1e-12)) {
                char a[80], c[32];
                int64_t here = g.off[(int64_t)k * W + r + 1] - g.off[(int64_t)k * W + r];
                *why = BUILD_TRY_SMALLER;
                st = zg_error_set(err, ZG_ERR_INFEASIBLE,
                                  "megatron: rank %d needs %s with its %lld samples of "
                                  "microbatch group %d, over the memory cap of %s "
                                  "(max_seqlen_per_rank %lld)",
                                  r, zg_plan_fmt_need(ctx->pricer, mem[(size_t)k * W + r], a, sizeof a),
                                  (long long)here, k,
                                  zg_fmt_bytes(ctx->pricer->mem_cap, c, sizeof c),
                                  (long long)M);
            }
    if (!st) *why = BUILD_OK;
    free(round);
    free(cnt);
    free(at);
    free(lens);
    free(rk);
    free(mem);
    zg_megatron_groups_free(&g);
    return st;
}

static int cmp_desc(const void *pa, const void *pb) {
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    return (a < b) - (a > b);
}

// The default: step 2, candidates from M0 down (see the top of the file).
static zg_status megatron_default(const zg_plan_ctx *ctx, const zg_batch *b, zg_plan *out,
                                  int64_t *M_out, int32_t *n_groups, zg_error *err) {
    int32_t W = ctx->cluster->world_size;
    int32_t *cls = zg_calloc((size_t)(b->n ? b->n : 1), sizeof *cls, err), n_cls = 0;
    if (!cls) return ZG_ERR_NOMEM;
    int64_t M0 = 1, *cand = NULL, n_cand = 0;
    zg_status st = zg_batch_price_classes(b, cls, &n_cls, err);
    if (!st) st = seqlen_bound(ctx, b, cls, n_cls, &M0, err);
    // every M where some sequence's gpus_needed changes, below M0 (one per class and cp)
    int32_t log_w = 0;
    while (((int64_t)1 << log_w) < W) log_w++;
    if (!st && !(cand = zg_calloc((size_t)n_cls * (size_t)(log_w + 1) + 1, sizeof *cand, err)))
        st = ZG_ERR_NOMEM;
    if (!st) {
        unsigned char *seen = zg_calloc((size_t)(n_cls ? n_cls : 1), 1, err);
        if (!seen) st = ZG_ERR_NOMEM;
        cand[n_cand++] = M0;
        for (int64_t i = 0; i < b->n && !st; i++) {
            if (seen[cls[i]]) continue;
            seen[cls[i]] = 1;
            for (int64_t cp = 2; cp <= ((int64_t)1 << log_w); cp *= 2) {
                int64_t m = largest_seqlen_for(b->seqs[i].tokens, cp);
                if (m < M0) cand[n_cand++] = m;
            }
        }
        free(seen);
    }
    if (!st) qsort(cand, (size_t)n_cand, sizeof *cand, cmp_desc);
    zg_error first = {ZG_OK, ""};  // why the largest candidate failed
    int found = 0;
    for (int64_t k = 0; k < n_cand && !st && !found; k++) {
        if (k > 0 && cand[k] == cand[k - 1]) continue;
        zg_error e = {ZG_OK, ""};
        build_why why;
        zg_status bs = megatron_build(ctx, b, cand[k], out, n_groups, &why, &e);
        if (!bs) {
            *M_out = cand[k];
            found = 1;
        } else if (why == BUILD_ERROR) {
            st = zg_error_set(err, bs, "%s", e.msg);
        } else {
            if (!first.status) first = e;
            if (why == BUILD_TOO_MANY_RANKS) break;  // smaller M only needs more ranks
        }
    }
    if (!st && !found)
        st = zg_error_set(err, ZG_ERR_INFEASIBLE,
                          "%s; no smaller max_seqlen_per_rank fits either (the largest that fits "
                          "every sequence alone is %lld)",
                          first.msg, (long long)M0);
    free(cls);
    free(cand);
    return st;
}

static zg_status megatron_plan(zg_planner *pl, const zg_batch *b, zg_plan *out, zg_error *err) {
    const zg_plan_ctx *ctx = &pl->ctx;
    zg_status st = megatron_init(pl, err);
    if (st) return st;
    const zg_opt_tokens *opt = &ctx->opts.max_seqlen_per_rank;
    int64_t M = opt->tokens;
    int32_t n_groups = 0;
    build_why why;
    if (opt->given) st = megatron_build(ctx, b, M, out, &n_groups, &why, err);
    else st = megatron_default(ctx, b, out, &M, &n_groups, err);
    if (!st)
        snprintf(out->summary, sizeof out->summary,
                 "max_seqlen_per_rank %lld (%s), %d microbatch groups", (long long)M,
                 opt->given ? "given" : "largest that fits memory", n_groups);
    return st;
}

const zg_planner_vtable zg_policy_megatron = {
    "megatron",
    "Megatron-Core 0.16.1 dynamic CP (faithful port of BalancedCPScheduler): power-of-two ring "
    "groups, microbatch groups as rounds",
    megatron_init, megatron_plan, NULL, 0};
