// test_zel_library.c — stage-1 layouts remembered across steps (search/library.c) and their
// replay by the two-stage planner: a stored layout comes back option for option with its ratio;
// the first lookup and every 8th ask for a refresh; duplicates are not stored twice, so they do
// not push the oldest layout out; another multiset or another context finds nothing; the
// least recently used multiset makes room for a new one. End to
// end: planning the same batch again replays the remembered layout (never a slower plan), the
// refresh steps search, remember_layouts = 0 turns it off, and two planners fed the same steps
// agree byte for byte. A multiset's first step searches deeper (anchor_first_nodes).
#include "zgtest.h"
#include "zel_env.h"
#include "zel_testlib.h"

#include "workload/workload.h"
#include "planner/planner.h"

// Three solutions of m with distinct objectives, best first: the heuristic's and two greedy
// perturbations of it (each unit of the first group on its group's whole-width option in turn).
static int three_layouts(const zel_model *m, zel_sol s[3]) {
    double lb = zel_model_lower_bound(m);
    if (!zel_heuristic(m, lb, &s[0])) return 0;
    int n = 1;
    for (int32_t j = 0; j < m->grps[0].n_opts && n < 3; j++) {
        zel_sol_copy(m, &s[n], &s[n - 1]);
        s[n].opt[0] = j;
        zel_sol_canon(m, &s[n]);
        double T;
        int64_t K;
        if (!zel_sol_eval(m, s[n].opt, NULL, NULL, &T, &K)) continue;
        if (T <= s[n - 1].T * (1 + 1e-9)) continue;
        s[n].T = T, s[n].K = K;
        n++;
    }
    return n == 3;
}

ZG_TEST(library_stores_refreshes_dedups_and_clears) {
    env e, other;
    zg_error err;
    CHECK_OK(env_init(&e, "16xA800", &err), &err);
    CHECK_OK(env_init(&other, "32xA6000", &err), &err);
    zg_rng rng;
    zg_rng_init(&rng, 7);
    int tried = 0;
    for (int trial = 0; trial < 40 && tried < 12; trial++) {
        int32_t idx[3];
        zg_problem pr = trand_problem(&rng, 8, 3, 3, idx);
        zel_model m;
        CHECK_OK(zel_model_build(&pr, idx, 3, NULL, NULL, &m, &err), &err);
        zel_sol s[3], got;
        for (int i = 0; i < 3; i++) CHECK_OK(zel_sol_alloc(&m, &s[i], &err), &err);
        CHECK_OK(zel_sol_alloc(&m, &got, &err), &err);
        if (three_layouts(&m, s)) {
            tried++;
            zel_library *lib = zel_library_new();
            CHECK(lib != NULL);
            double ratio;
            int refresh;
            CHECK(!zel_library_best(lib, &e.ctx, &m, &pr, &got, &ratio, &refresh));
            zel_library_store(lib, &e.ctx, &m, &pr, &s[1], 1.25);
            // lookups 1..16: the layout option for option, a refresh on the 1st, 8th and 16th
            for (int k = 1; k <= 16; k++) {
                CHECK(zel_library_best(lib, &e.ctx, &m, &pr, &got, &ratio, &refresh));
                CHECK_EQ_INT(refresh, k == 1 || k % 8 == 0);
                CHECK(ratio == 1.25);
                CHECK(got.T == s[1].T && got.K == s[1].K);
                for (int64_t u = 0; u < m.n_units; u++) CHECK_EQ_INT(got.opt[u], s[1].opt[u]);
            }
            // the best of the layouts held wins; duplicates of s[2] do not evict s[0]
            zel_library_store(lib, &e.ctx, &m, &pr, &s[0], 1.0);
            for (int k = 0; k < 4; k++) zel_library_store(lib, &e.ctx, &m, &pr, &s[2], 1.5);
            CHECK(zel_library_best(lib, &e.ctx, &m, &pr, &got, &ratio, &refresh));
            CHECK(got.T == s[0].T && ratio == 1.0);
            // a new layout fills the fourth slot, the next pushes out the oldest (s[1]), the
            // third s[0]: the best left is s[2]
            zel_sol t;
            CHECK_OK(zel_sol_alloc(&m, &t, &err), &err);
            int stored = 0;
            for (int32_t g = 0; g < m.n_grps && stored < 3; g++) {
                for (int32_t j = 0; j < m.grps[g].n_opts && stored < 3; j++) {
                    zel_sol_copy(&m, &t, &s[2]);
                    t.opt[m.unit0[g]] = j;
                    zel_sol_canon(&m, &t);
                    double T;
                    int64_t K;
                    if (!zel_sol_eval(&m, t.opt, NULL, NULL, &T, &K) || T <= s[2].T) continue;
                    int same = 0;
                    for (int i = 0; i < 3; i++)
                        same |= !memcmp(t.opt, s[i].opt, sizeof(int32_t) * (size_t)m.n_units);
                    if (same) continue;
                    t.T = T, t.K = K;
                    zel_library_store(lib, &e.ctx, &m, &pr, &t, 2.0);
                    stored++;
                    // a stored layout is never the best while s[2] is held
                    CHECK(zel_library_best(lib, &e.ctx, &m, &pr, &got, &ratio, &refresh));
                    if (stored < 3) CHECK(got.T == s[0].T);
                    else CHECK(got.T == s[2].T);
                }
            }
            zel_sol_free(&t);
            // another multiset (one unit fewer in a group) finds nothing
            if (pr.groups[0].count > 1) {
                zg_problem p2 = pr;
                zg_group *gs = malloc(sizeof(zg_group) * 3);
                memcpy(gs, pr.groups, sizeof(zg_group) * 3);
                gs[0].count--;
                p2.groups = gs;
                zel_model m2;
                CHECK_OK(zel_model_build(&p2, idx, 3, NULL, NULL, &m2, &err), &err);
                zel_sol g2;
                CHECK_OK(zel_sol_alloc(&m2, &g2, &err), &err);
                CHECK(!zel_library_best(lib, &e.ctx, &m2, &p2, &g2, &ratio, &refresh));
                zel_sol_free(&g2);
                zel_model_free(&m2);
                free(gs);
            }
            // another planning context clears the library
            CHECK(!zel_library_best(lib, &other.ctx, &m, &pr, &got, &ratio, &refresh));
            CHECK(!zel_library_best(lib, &e.ctx, &m, &pr, &got, &ratio, &refresh));
            zel_library_free(lib);
        }
        for (int i = 0; i < 3; i++) zel_sol_free(&s[i]);
        zel_sol_free(&got);
        zel_model_free(&m);
        tprob_free(&pr);
    }
    CHECK(tried >= 6);
    zg_pricer_free(&e.pricer);
    zg_pricer_free(&other.pricer);
}

// The library holds 256 multisets: the 257th pushes out the least recently used one (a lookup
// counts as a use), not the oldest stored.
ZG_TEST(library_drops_the_least_recently_used_multiset) {
    env e;
    zg_error err;
    CHECK_OK(env_init(&e, "16xA800", &err), &err);
    zel_library *lib = zel_library_new();
    CHECK(lib != NULL);
    enum { M = 257 };
    zg_problem pr[M];
    zel_model m[M];
    zel_sol s[M];
    for (int i = 0; i < M; i++) {  // multiset i: two units of whole price 1 + i / 100
        tgroup tg = {2, 1.0 + 0.01 * i, 0.1, 1.0};
        pr[i] = tprob_make(4, 4.0, &tg, 1, 4, 0);
        int32_t idx = 0;
        CHECK_OK(zel_model_build(&pr[i], &idx, 1, NULL, NULL, &m[i], &err), &err);
        CHECK_OK(zel_sol_alloc(&m[i], &s[i], &err), &err);
        CHECK(zel_heuristic(&m[i], zel_model_lower_bound(&m[i]), &s[i]));
    }
    double ratio;
    int refresh;
    for (int i = 0; i < M - 1; i++) zel_library_store(lib, &e.ctx, &m[i], &pr[i], &s[i], 1.0);
    for (int i = 0; i < M - 1; i++)  // every one is held (s[M - 1]: room for 2 units)
        CHECK(zel_library_best(lib, &e.ctx, &m[i], &pr[i], &s[M - 1], &ratio, &refresh));
    // use 0 again and store the 257th: 1 is the least recently used
    CHECK(zel_library_best(lib, &e.ctx, &m[0], &pr[0], &s[M - 1], &ratio, &refresh));
    CHECK(zel_heuristic(&m[M - 1], zel_model_lower_bound(&m[M - 1]), &s[M - 1]));
    zel_library_store(lib, &e.ctx, &m[M - 1], &pr[M - 1], &s[M - 1], 1.0);
    zel_sol t;
    CHECK_OK(zel_sol_alloc(&m[0], &t, &err), &err);
    CHECK(zel_library_best(lib, &e.ctx, &m[0], &pr[0], &t, &ratio, &refresh));
    CHECK(!zel_library_best(lib, &e.ctx, &m[1], &pr[1], &t, &ratio, &refresh));
    CHECK(zel_library_best(lib, &e.ctx, &m[2], &pr[2], &t, &ratio, &refresh));
    CHECK(zel_library_best(lib, &e.ctx, &m[M - 1], &pr[M - 1], &t, &ratio, &refresh));
    zel_sol_free(&t);
    for (int i = 0; i < M; i++) zel_sol_free(&s[i]), zel_model_free(&m[i]), tprob_free(&pr[i]);
    zel_library_free(lib);
    zg_pricer_free(&e.pricer);
}

// A 16-rank batch of the bench's V35 mix at high load (anchors and fillers).
static void mix_batch(const env *e, int64_t step, zg_batch *b, zg_error *err) {
    zg_mix_spec spec = {zg_mix_share_from_name("V35"), 350000, 15, e->cluster.world_size, 3};
    zg_batch_init(b);
    if (zg_workload_mix(&e->model, &spec, step, b, err)) zg_batch_free(b);
}

ZG_TEST(planner_replays_remembered_layouts) {
    env e;
    zg_error err;
    CHECK_OK(env_init(&e, "16xA800", &err), &err);
    zg_batch b;
    mix_batch(&e, 3, &b, &err);
    CHECK(b.n > 0);
    for (int off = 0; off < 2; off++) {
        zg_planner pl;
        e.ctx.opts.remember_layouts = !off;
        CHECK_OK(zg_planner_init(&pl, "zellige", &e.ctx, &err), &err);
        double first = 0;
        for (int step = 0; step < 9; step++) {
            zg_plan p;
            zg_plan_init(&p);
            CHECK_OK(zg_planner_plan(&pl, &b, &p, &err), &err);
            CHECK_OK(zg_plan_validate(&p, &b, &e.model, &err), &err);
            int replayed = strstr(p.summary, "replayed") != NULL;
            // step 0 searches (nothing remembered), step 1 (1st lookup) and step 8 (8th) refresh
            // by a full search, steps 2-7 replay
            CHECK_EQ_INT(replayed, !off && step >= 2 && step <= 7);
            if (step == 0) first = p.makespan;
            else CHECK(p.makespan <= first * (1 + 1e-12));
            zg_plan_free(&p);
        }
        zg_planner_free(&pl);
    }
    e.ctx.opts.remember_layouts = 1;
    // two planners fed the same steps (repeats included) agree byte for byte
    static const int64_t steps[8] = {3, 4, 3, 5, 3, 4, 3, 3};
    char *first[8] = {0};
    for (int run = 0; run < 2; run++) {
        zg_planner pl;
        CHECK_OK(zg_planner_init(&pl, "zellige", &e.ctx, &err), &err);
        for (int k = 0; k < 8; k++) {
            zg_batch bk;
            mix_batch(&e, steps[k], &bk, &err);
            zg_plan p;
            zg_plan_init(&p);
            CHECK_OK(zg_planner_plan(&pl, &bk, &p, &err), &err);
            char *s = plan_text(&p);
            if (run == 0) {
                first[k] = s;
            } else {
                CHECK_STR(s, first[k]);
                free(s);
            }
            zg_plan_free(&p);
            zg_batch_free(&bk);
        }
        zg_planner_free(&pl);
    }
    for (int k = 0; k < 8; k++) free(first[k]);
    zg_batch_free(&b);
    zg_pricer_free(&e.pricer);
}

// The first step of an anchor multiset searches deeper (anchor_first_nodes): on 16xA800 V45 step
// 6 at high load (bench_planner_quality --settings 16xA800:high, batch 38) the default first
// budget finds a plan 0.068 % faster than the ordinary budget does (181.537 vs 181.661 s;
// asserted: 0.03 %). The batch used before (V50 step 11, batch 69: 0.047 % in the eighteenth
// pass) plans at 278.629 s with either budget since stage 2 by density (nineteenth pass).
// deeper_first_visit = 0 and an explicit anchor_nodes both give the ordinary search's plan, and
// an explicit first budget equal to the default gives the default's plan, byte for byte.
ZG_TEST(first_visit_searches_deeper) {
    env e;
    zg_error err;
    CHECK_OK(env_init(&e, "16xA800", &err), &err);
    zg_mix_spec spec = {zg_mix_share_from_name("V45"), 350000, 15, e.cluster.world_size, 3};
    zg_batch b;
    zg_batch_init(&b);
    CHECK_OK(zg_workload_mix(&e.model, &spec, 6, &b, &err), &err);
    // default, no deeper first visit, explicit ordinary anchor budget (10000 / 16), explicit
    // first budget 200000 (0: absent)
    static const int64_t first[4] = {0, 0, 0, 200000}, nodes[4] = {0, 0, 625, 0};
    static const int deeper[4] = {1, 0, 1, 1};
    char *text[4];
    double ms[4];
    for (int v = 0; v < 4; v++) {
        e.ctx.opts.anchor_first_nodes = (zg_budget){first[v] > 0, first[v]};
        e.ctx.opts.anchor_nodes = (zg_budget){nodes[v] > 0, nodes[v]};
        e.ctx.opts.deeper_first_visit = deeper[v];
        zg_planner pl;
        CHECK_OK(zg_planner_init(&pl, "zellige", &e.ctx, &err), &err);
        zg_plan p;
        zg_plan_init(&p);
        CHECK_OK(zg_planner_plan(&pl, &b, &p, &err), &err);
        CHECK_OK(zg_plan_validate(&p, &b, &e.model, &err), &err);
        ms[v] = p.makespan;
        text[v] = plan_text(&p);
        zg_plan_free(&p);
        zg_planner_free(&pl);
    }
    CHECK_MSG(ms[0] < ms[1] * (1 - 3e-4), "first visit %.9g, ordinary %.9g", ms[0], ms[1]);
    CHECK_STR(text[2], text[1]);
    CHECK_STR(text[3], text[0]);
    for (int v = 0; v < 4; v++) free(text[v]);
    e.ctx.opts.anchor_first_nodes = e.ctx.opts.anchor_nodes = (zg_budget){0, 0};
    e.ctx.opts.deeper_first_visit = 1;
    zg_batch_free(&b);
    zg_pricer_free(&e.pricer);
}

ZG_TEST_MAIN()
