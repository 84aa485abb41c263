// test_megatron.c — the port of Megatron-Core 0.16.1's BalancedCPScheduler (src/plan/megatron.c)
// against the real code's output (tests/fixtures/megatron_groups.json, written by
// scripts/gen_megatron_vectors.py): every case's CP sizes, first buckets, groups (per group, per
// rank, the sample ids and lengths in order) and exec_times, exactly; the cases where the real
// code raises fail here too. Plus gpus_needed at the powers of two and bad input, and the
// `megatron` policy: plans follow the scheduler's groups (round = group), validate, price as the
// sum over rounds of the slowest rank; its default max_seqlen_per_rank; bad option values.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan/megatron.h"
#include "plan/plan.h"
#include "planner/planner.h"
#include "plan_testlib.h"
#include "zgtest.h"

#define FIXTURE "tests/fixtures/megatron_groups.json"

static int64_t jint(const cJSON *x) {
    return (int64_t)x->valuedouble;
}

// Reads a case's samples ([[id, len], ...]) into a new array; *n gets the count.
static zg_megatron_sample *read_samples(const cJSON *arr, int64_t *n) {
    *n = cJSON_GetArraySize(arr);
    zg_megatron_sample *s = calloc((size_t)(*n ? *n : 1), sizeof *s);
    int64_t i = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, arr) {
        s[i].id = jint(cJSON_GetArrayItem(x, 0));
        s[i].len = jint(cJSON_GetArrayItem(x, 1));
        i++;
    }
    return s;
}

// Compares one case; returns 1 when equal, else 0 with why[] filled.
static int check_case(const cJSON *c, char *why, size_t whysz) {
    const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
    int32_t world = (int32_t)jint(cJSON_GetObjectItem(c, "world"));
    int64_t M = jint(cJSON_GetObjectItem(c, "max_seqlen_per_rank"));
    int64_t n;
    zg_megatron_sample *s = read_samples(cJSON_GetObjectItem(c, "samples"), &n);
    zg_megatron_groups g;
    zg_error err = {ZG_OK, ""};
    zg_status st = zg_megatron_schedule(s, n, M, world, &g, &err);
    int ok = 0;
    const cJSON *error = cJSON_GetObjectItem(c, "error");
    if (error) {
        if (st == ZG_ERR_INFEASIBLE)
            ok = 1;
        else
            snprintf(why, whysz, "%s: the reference raises %s, the port returns %d (%s)", name,
                     error->valuestring, (int)st, err.msg);
        goto out;
    }
    if (st) {
        snprintf(why, whysz, "%s: the port fails: %s", name, err.msg);
        goto out;
    }
    // gpus_needed per sample
    const cJSON *cp = cJSON_GetObjectItem(c, "cp");
    for (int64_t i = 0; i < n; i++) {
        int64_t want = jint(cJSON_GetArrayItem(cp, (int)i));
        int64_t got = zg_megatron_gpus_needed(s[i].len, M);
        if (got != want) {
            snprintf(why, whysz, "%s: gpus_needed(%lld) = %lld, reference %lld", name,
                     (long long)s[i].len, (long long)got, (long long)want);
            goto out;
        }
    }
    // make_buckets_equal on the sorted batch (the concatenation of the reference's buckets)
    const cJSON *bk = cJSON_GetObjectItem(c, "buckets");
    zg_megatron_sample *sorted = calloc((size_t)n, sizeof *sorted);
    int64_t *want_end = calloc((size_t)n, sizeof *want_end), *end = calloc((size_t)n, sizeof *end);
    int64_t at = 0;
    int32_t nbw = 0, nb = 0;
    const cJSON *b, *x;
    cJSON_ArrayForEach(b, bk) {
        cJSON_ArrayForEach(x, b) {
            sorted[at].id = jint(cJSON_GetArrayItem(x, 0));
            sorted[at].len = jint(cJSON_GetArrayItem(x, 1));
            at++;
        }
        want_end[nbw++] = at;
    }
    int bad = at != n || zg_megatron_buckets(sorted, n, M, end, &nb, &err) != ZG_OK || nb != nbw;
    for (int32_t i = 0; i < nb && !bad; i++)
        bad = end[i] != want_end[i];
    free(sorted);
    free(want_end);
    free(end);
    if (bad) {
        snprintf(why, whysz,
                 "%s: make_buckets_equal gives %d buckets, reference %d (or bounds "
                 "differ)",
                 name, nb, nbw);
        goto out;
    }
    // groups, rank by rank
    const cJSON *ids = cJSON_GetObjectItem(c, "sample_id_groups");
    const cJSON *lens = cJSON_GetObjectItem(c, "groups");
    const cJSON *times = cJSON_GetObjectItem(c, "exec_times");
    if (g.n_groups != cJSON_GetArraySize(ids) || g.world != world) {
        snprintf(why, whysz, "%s: %d groups, reference %d", name, g.n_groups,
                 cJSON_GetArraySize(ids));
        goto out;
    }
    for (int32_t k = 0; k < g.n_groups; k++) {
        const cJSON *gi = cJSON_GetArrayItem(ids, k), *gl = cJSON_GetArrayItem(lens, k);
        const cJSON *gt = cJSON_GetArrayItem(times, k);
        if (cJSON_GetArraySize(gi) != world) {
            snprintf(why, whysz, "%s: group %d has %d ranks in the fixture", name, k,
                     cJSON_GetArraySize(gi));
            goto out;
        }
        for (int32_t r = 0; r < world; r++) {
            const cJSON *ri = cJSON_GetArrayItem(gi, r), *rl = cJSON_GetArrayItem(gl, r);
            int64_t lo = g.off[(int64_t)k * world + r], hi = g.off[(int64_t)k * world + r + 1];
            if (hi - lo != cJSON_GetArraySize(ri)) {
                snprintf(why, whysz, "%s: group %d rank %d holds %lld samples, reference %d", name,
                         k, r, (long long)(hi - lo), cJSON_GetArraySize(ri));
                goto out;
            }
            for (int64_t j = lo; j < hi; j++) {
                int64_t wid = jint(cJSON_GetArrayItem(ri, (int)(j - lo)));
                int64_t wlen = jint(cJSON_GetArrayItem(rl, (int)(j - lo)));
                if (g.items[j].id != wid || g.items[j].len != wlen) {
                    snprintf(why, whysz,
                             "%s: group %d rank %d position %lld: sample %lld (%lld tokens), "
                             "reference %lld (%lld)",
                             name, k, r, (long long)(j - lo), (long long)g.items[j].id,
                             (long long)g.items[j].len, (long long)wid, (long long)wlen);
                    goto out;
                }
            }
            double wt = cJSON_GetArrayItem(gt, r)->valuedouble;
            double gt_ = g.exec_times[(int64_t)k * world + r];
            if (gt_ != wt) {
                snprintf(why, whysz, "%s: group %d rank %d exec time %.17g, reference %.17g", name,
                         k, r, gt_, wt);
                goto out;
            }
        }
    }
    ok = 1;
out:
    zg_megatron_groups_free(&g);
    free(s);
    return ok;
}

ZG_TEST(real_scheduler_vectors) {
    cJSON *j = NULL;
    zg_error err;
    CHECK_OK(zg_json_read_file(FIXTURE, &j, &err), &err);
    CHECK_STR(cJSON_GetObjectItem(j, "megatron_core")->valuestring, "0.16.1");
    const cJSON *cases = cJSON_GetObjectItem(j, "cases");
    int n = 0, n_err = 0, n_groups = 0, failed = 0;
    const cJSON *c;
    char why[512];
    cJSON_ArrayForEach(c, cases) {
        n++;
        if (cJSON_GetObjectItem(c, "error"))
            n_err++;
        else
            n_groups += cJSON_GetArraySize(cJSON_GetObjectItem(c, "groups"));
        if (!check_case(c, why, sizeof why)) {
            if (failed++ < 5) fprintf(stderr, "  %s\n", why);
        }
    }
    cJSON_Delete(j);
    printf("  %d cases (%d where the reference raises), %d groups; %d differ\n", n, n_err, n_groups,
           failed);
    CHECK(n >= 100);
    CHECK_EQ_INT(failed, 0);
}

ZG_TEST(gpus_needed_and_workload) {
    // ceil(log2(L / M)) at and around the powers of two
    CHECK_EQ_INT(zg_megatron_gpus_needed(1, 8192), 1);
    CHECK_EQ_INT(zg_megatron_gpus_needed(8192, 8192), 1);
    CHECK_EQ_INT(zg_megatron_gpus_needed(8193, 8192), 2);
    CHECK_EQ_INT(zg_megatron_gpus_needed(16384, 8192), 2);
    CHECK_EQ_INT(zg_megatron_gpus_needed(16385, 8192), 4);
    CHECK_EQ_INT(zg_megatron_gpus_needed(3 * 8192, 8192), 4);
    CHECK_EQ_INT(zg_megatron_gpus_needed(ZG_MEGATRON_MAX_LEN, 1), (int64_t)1 << 27);
    CHECK(zg_megatron_workload(1000, 4) == 250000.0);
    CHECK(zg_megatron_workload(ZG_MEGATRON_MAX_LEN, 1) ==
          (double)((int64_t)ZG_MEGATRON_MAX_LEN * ZG_MEGATRON_MAX_LEN));
}

ZG_TEST(bad_input) {
    zg_megatron_sample s[2] = {{0, 1000}, {1, 2000}};
    zg_megatron_groups g;
    zg_error err;
    CHECK(zg_megatron_schedule(s, 2, 0, 8, &g, &err) == ZG_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "max_seqlen_per_rank 0") != NULL, "%s", err.msg);
    CHECK(zg_megatron_schedule(s, 2, -5, 8, &g, &err) == ZG_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "max_seqlen_per_rank -5") != NULL, "%s", err.msg);
    CHECK(zg_megatron_schedule(s, 2, 1024, 0, &g, &err) == ZG_ERR_INVALID);
    s[1].len = 0;
    CHECK(zg_megatron_schedule(s, 2, 1024, 8, &g, &err) == ZG_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "sample 1 has 0 tokens") != NULL, "%s", err.msg);
    s[1].len = ZG_MEGATRON_MAX_LEN + 1LL;
    CHECK(zg_megatron_schedule(s, 2, 1024, 8, &g, &err) == ZG_ERR_INVALID);
    // a sample that needs more ranks than the world: the reference's AssertionError
    s[1].len = 9 * 1024;
    CHECK(zg_megatron_schedule(s, 2, 1024, 8, &g, &err) == ZG_ERR_INFEASIBLE);
    CHECK_MSG(strstr(err.msg, "AssertionError") != NULL, "%s", err.msg);
    zg_megatron_groups_free(&g);
    // an empty batch: no groups
    CHECK_OK(zg_megatron_schedule(s, 0, 1024, 8, &g, &err), &err);
    CHECK_EQ_INT(g.n_groups, 0);
    zg_megatron_groups_free(&g);
}

// ---- the policy ------------------------------------------------------------------------------

// test pricer: time = 1e-6 * L^2 / λ + 1e-3 * L / λ, mem = L / λ bytes
static zg_status mega_price(const zg_pricer *p, const zg_seq *s, zg_config c, const int32_t *ranks,
                          int32_t n, zg_price *out, zg_error *err) {
    (void)p, (void)c, (void)ranks, (void)err;
    double L = (double)s->tokens;
    out->time = 1e-6 * L * L / n + 1e-3 * L / n;
    out->mem = L / n;
    return ZG_OK;
}

// plan_testlib.h's fixture on one node of `world` ranks, priced by mega_price (no comm
// price, no base memory) with memory cap `cap`.
static void mfx_init(fixture *f, int32_t world, double cap) {
    fx_init(f, world, world, cap);
    f->p.impl = NULL;
    f->p.price = mega_price;
    f->p.comm = NULL;
    f->p.mem_base = 0;
    f->p.mem_cap = cap;  // no base: the cap is all room
}

static zg_status run(fixture *f, zg_plan *p, zg_error *err) {
    zg_planner pl;
    zg_plan_init(p);
    zg_status st = zg_planner_init(&pl, "megatron", &f->ctx, err);
    if (st) return st;
    st = zg_planner_plan(&pl, &f->b, p, err);
    zg_planner_free(&pl);
    return st;
}

// Σ over rounds of the slowest rank's time in the round, from the placements.
static double rounds_makespan(const zg_plan *p) {
    int32_t R = 0;
    for (int64_t i = 0; i < p->n; i++)
        if (p->p[i].round + 1 > R) R = p->p[i].round + 1;
    double *t = calloc((size_t)R * p->world_size + 1, sizeof *t), mk = 0;
    for (int64_t i = 0; i < p->n; i++)
        for (int32_t k = 0; k < p->p[i].n_ranks; k++)
            t[(size_t)p->p[i].round * p->world_size + p->p[i].ranks[k]] += p->p[i].time;
    for (int32_t g = 0; g < R; g++) {
        double slowest = 0;
        for (int32_t r = 0; r < p->world_size; r++)
            if (t[(size_t)g * p->world_size + r] > slowest)
                slowest = t[(size_t)g * p->world_size + r];
        mk += slowest;
    }
    free(t);
    return mk;
}

// Plans seeded batches with a given max_seqlen_per_rank; each plan is the scheduler's groups:
// placement i is in round g on exactly the ranks whose list in group g holds sample i,
// config (1,1,cp), even chunks; it validates and its makespan is the sum over rounds.
ZG_TEST(policy_follows_the_scheduler) {
    int multi = 0;
    for (int seed = 0; seed < 12; seed++) {
        fixture f;
        int32_t world = seed % 3 == 0 ? 4 : seed % 3 == 1 ? 8 : 16;
        mfx_init(&f, world, 1e12);
        zg_rng rng;
        zg_rng_init(&rng, (uint64_t)seed);
        int64_t M = 4096;
        int n = (int)zg_rng_int(&rng, 5, 80);
        for (int i = 0; i < n; i++) {
            double u = zg_rng_uniform(&rng);
            fx_push(&f, u < 0.6 ? zg_rng_int(&rng, 256, 2048)
                                : u < 0.9 ? zg_rng_int(&rng, 2048, M)
                                          : zg_rng_int(&rng, M, (world < 8 ? world : 8) * M),
                    NULL);
        }
        f.ctx.opts.max_seqlen_per_rank = zg_opt_tokens_of(M);
        zg_plan p;
        zg_error err;
        CHECK_OK(run(&f, &p, &err), &err);  // zg_planner_plan validates the plan
        zg_megatron_sample *smp = calloc((size_t)n, sizeof *smp);
        for (int i = 0; i < n; i++) smp[i] = (zg_megatron_sample){i, f.b.seqs[i].tokens};
        zg_megatron_groups g;
        CHECK_OK(zg_megatron_schedule(smp, n, M, world, &g, &err), &err);
        free(smp);
        int *seen = calloc((size_t)n, sizeof *seen);
        for (int32_t k = 0; k < g.n_groups; k++)
            for (int32_t r = 0; r < world; r++)
                for (int64_t j = g.off[(int64_t)k * world + r];
                     j < g.off[(int64_t)k * world + r + 1]; j++) {
                    const zg_placement *pl = &p.p[g.items[j].id];
                    CHECK_EQ_INT(pl->round, k);
                    CHECK_EQ_INT(pl->ranks[seen[g.items[j].id]++], r);
                }
        for (int i = 0; i < n; i++) {
            const zg_placement *pl = &p.p[i];
            CHECK_EQ_INT(seen[i], pl->n_ranks);
            CHECK(pl->config.q == 1 && pl->config.h == 1 && pl->config.k == pl->n_ranks);
            CHECK((pl->n_ranks & (pl->n_ranks - 1)) == 0);             // a power of two
            CHECK_EQ_INT(pl->ranks[0] % pl->n_ranks, 0);                // an aligned block
            CHECK_EQ_INT(pl->ranks[pl->n_ranks - 1] - pl->ranks[0], pl->n_ranks - 1);
            CHECK(pl->n_ranks >= zg_megatron_gpus_needed(pl->tokens, M));
            int64_t len0 = pl->shards[0].end - pl->shards[0].start;
            CHECK_EQ_INT(len0, (pl->tokens + pl->n_ranks - 1) / pl->n_ranks);
        }
        free(seen);
        if (g.n_groups > 1) multi++;
        CHECK_NEAR(p.makespan, rounds_makespan(&p), 0, 1e-12);
        CHECK_MSG(strstr(p.summary, "max_seqlen_per_rank 4096 (given)") != NULL, "%s", p.summary);
        zg_megatron_groups_free(&g);
        zg_plan_free(&p);
        zg_batch_free(&f.b);
    }
    CHECK(multi >= 3);  // several rounds in some of them
}

// The default knob: the largest max_seqlen_per_rank that fits memory, exactly. mem = L/λ bytes.
ZG_TEST(policy_default_max_seqlen_per_rank) {
    fixture f;
    mfx_init(&f, 8, 1000);
    int64_t tok[] = {3000, 500, 400, 300};
    for (int i = 0; i < 4; i++) fx_push(&f, tok[i], NULL);
    zg_plan p;
    zg_error err;
    // 3000 tokens need 4 ranks (750 B each; 2 ranks: 1500 B > 1000): the largest M with
    // gpus_needed(3000, M) >= 4 is 1499 (3000/1500 = 2 gives 2 ranks)
    CHECK_OK(run(&f, &p, &err), &err);
    CHECK_STR(p.summary,
              "max_seqlen_per_rank 1499 (largest that fits memory), 1 microbatch groups");
    CHECK_EQ_INT(p.p[0].n_ranks, 4);
    zg_plan_free(&p);
    fx_set_room(&f, 700);  // now 8 ranks (375 B): M < 750; the others wait for a second group
    CHECK_OK(run(&f, &p, &err), &err);
    CHECK_STR(p.summary,
              "max_seqlen_per_rank 749 (largest that fits memory), 2 microbatch groups");
    CHECK_EQ_INT(p.p[0].n_ranks, 8);
    CHECK_EQ_INT(p.p[0].round, 0);
    CHECK_EQ_INT(p.p[1].round, 1);
    zg_plan_free(&p);
    fx_set_room(&f, 300);  // 3000/8 = 375 B: fits no CP size
    CHECK(run(&f, &p, &err) == ZG_ERR_INFEASIBLE);
    CHECK_MSG(strstr(err.msg, "megatron: sequence 0 (3000 tokens) fits no CP size: needs 375 B "
                              "per rank at best (cp 8 of 8 ranks), cap 300 B") != NULL,
              "%s", err.msg);
    zg_plan_free(&p);
    fx_set_room(&f, 1e9);  // everything fits whole: M = the longest sequence, one rank each
    CHECK_OK(run(&f, &p, &err), &err);
    CHECK_STR(p.summary,
              "max_seqlen_per_rank 3000 (largest that fits memory), 1 microbatch groups");
    zg_plan_free(&p);
    zg_batch_free(&f.b);
}

// A given max_seqlen_per_rank: bad values are errors naming them; too small for the world and
// over memory in a round are infeasible, named.
ZG_TEST(policy_bad_and_infeasible_options) {
    fixture f;
    mfx_init(&f, 4, 1e9);
    for (int i = 0; i < 6; i++) fx_push(&f, 1000 + 100 * i, NULL);
    zg_plan p;
    zg_error err;
    int64_t bad[] = {0, -7};
    for (int k = 0; k < 2; k++) {
        f.ctx.opts.max_seqlen_per_rank = zg_opt_tokens_of(bad[k]);
        zg_planner pl;
        CHECK(zg_planner_init(&pl, "megatron", &f.ctx, &err) == ZG_ERR_INVALID);
        char want[64];
        snprintf(want, sizeof want, "megatron: max_seqlen_per_rank %lld:", (long long)bad[k]);
        CHECK_MSG(strstr(err.msg, want) != NULL, "%s", err.msg);
    }
    f.ctx.opts.max_seqlen_per_rank = zg_opt_tokens_of(200);  // 1000 tokens need 8 > 4 ranks
    CHECK(run(&f, &p, &err) == ZG_ERR_INFEASIBLE);
    CHECK_MSG(strstr(err.msg, "sequence 0 (1000 tokens) needs 8 ranks at max_seqlen_per_rank "
                              "200, more than the 4 ranks") != NULL,
              "%s", err.msg);
    zg_plan_free(&p);
    f.ctx.opts.max_seqlen_per_rank = zg_opt_tokens_of(100000);  // all whole, all in group 0
    fx_set_room(&f, 2000);  // two samples on one rank in group 0: more than 2000 B
    CHECK(run(&f, &p, &err) == ZG_ERR_INFEASIBLE);
    CHECK_MSG(strstr(err.msg, "rank 2 needs 2.2 KiB with its 2 samples of microbatch group 0, "
                              "over the memory cap of 2.0 KiB") != NULL,
              "%s", err.msg);
    zg_plan_free(&p);
    fx_set_room(&f, 1e9);
    CHECK_OK(run(&f, &p, &err), &err);
    zg_plan_free(&p);
    zg_batch_free(&f.b);
}

// The paper's setting under the analytic pricer (8 A800, V35 at 350K tokens per rank): the
// largest max_seqlen_per_rank at which each sequence fits alone overflows a round, so the
// default goes lower; the plan has several rounds, validates, and prices as the sum over rounds.
ZG_TEST(policy_on_analytic_pricer) {
    zg_model m;
    zg_cluster c;
    zg_pricer pr;
    zg_error err;
    CHECK_OK(zg_model_preset("wan2.1-1.3b", &m, &err), &err);
    CHECK_OK(zg_cluster_preset("8xA800", &c, &err), &err);
    zg_cost_opts co;
    zg_cost_opts_default(&co);
    CHECK_OK(zg_cost_analytic_init(&pr, &m, &c, &co, &err), &err);
    zg_mix_spec spec = {0.35, 350000, 15, 8, 1};
    zg_batch b;
    CHECK_OK(zg_workload_mix(&m, &spec, 0, &b, &err), &err);
    zg_plan_ctx ctx = {&m, &c, &pr, NULL, {0}};
    zg_planner_opts_default(&ctx.opts);
    zg_planner pl;
    zg_plan p, q;
    zg_plan_init(&p);
    zg_plan_init(&q);
    CHECK_OK(zg_planner_init(&pl, "megatron", &ctx, &err), &err);
    CHECK_OK(zg_planner_plan(&pl, &b, &p, &err), &err);
    CHECK_OK(zg_planner_plan(&pl, &b, &q, &err), &err);
    zg_plan_stats st;
    CHECK_OK(zg_plan_evaluate(&p, &b, &pr, &st, &err), &err);
    CHECK(st.n_rounds >= 2);
    CHECK(st.peak_mem <= pr.mem_cap * (1 + 1e-9));
    CHECK_NEAR(p.makespan, rounds_makespan(&p), 0, 1e-12);
    printf("  %s: makespan %.2f s, %d rounds, peak %.1f GiB\n", p.summary, st.makespan,
           st.n_rounds, st.peak_mem / (1 << 30));
    p.plan_time_ms = q.plan_time_ms = 0;  // deterministic otherwise
    cJSON *a = zg_plan_to_json(&p), *bj = zg_plan_to_json(&q);
    char *sa = cJSON_PrintUnformatted(a), *sb = cJSON_PrintUnformatted(bj);
    CHECK_STR(sa, sb);
    CHECK(strstr(sa, "\"round\":1,") != NULL);
    free(sa);
    free(sb);
    cJSON_Delete(a);
    cJSON_Delete(bj);
    zg_planner_free(&pl);
    zg_plan_free(&p);
    zg_plan_free(&q);
    zg_batch_free(&b);
    zg_pricer_free(&pr);
}

ZG_TEST_MAIN()
