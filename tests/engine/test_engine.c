// Unit tests of the engine without MPI: the self backend end to end, plan checks (a 1-token
// sequence split over 2 ranks is rejected), bad input, and the global ordering rule checked on
// every rank's schedule of random 4-rank plans (no two ranks order shared collectives
// differently, which is what makes overlapping rank sets deadlock-free).
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "zgtest.h"

static const zg_attn_shape SHAPE = {12, 16, 0.25f};

ZG_TEST(self_backend_matches_reference) {
    zg_error err = {0};
    zg_comm c;
    CHECK_OK(zg_comm_self_init(&c, &err), &err);
    for (uint64_t s = 0; s < 3; s++) {
        zg_plan plan;
        zg_plan_init(&plan);
        CHECK_OK(zg_engine_random_plan(1, 12, 6, 33, -1, -1, s, &plan, &err), &err);
        zg_engine_check res;
        zg_status st = zg_engine_check_plan(&c, &plan, SHAPE, NULL, s, 1e-4, &res, &err);
        zg_plan_free(&plan);
        CHECK_OK(st, &err);
        CHECK(res.passed && res.bit_identical);
        CHECK(res.max_rel_err_fwd <= 1e-5 && res.max_rel_err_bwd <= 1e-5);
        CHECK_EQ_INT(res.kernel_calls, 1); // every whole sequence in one call
    }
    zg_comm_free(&c);
}

ZG_TEST(one_token_over_two_ranks_rejected) {
    zg_error err = {0};
    zg_plan plan;
    zg_plan_init(&plan);
    CHECK_OK(zg_plan_alloc(&plan, 1, 2, &err), &err);
    zg_seq s = {.id = 0, .tokens = 2};
    int32_t ranks[2] = {0, 1};
    int64_t lens[2] = {1, 1};
    CHECK_OK(zg_plan_set_ranks(&plan, 0, &s, 0, (zg_config){1, 1, 2}, ranks, lens, 2, &err), &err);
    // shrink to 1 token: the second rank's shard is empty
    plan.p[0].tokens = 1;
    plan.p[0].shards[1].start = plan.p[0].shards[1].end = 1;
    zg_batch b;
    zg_batch_init(&b);
    s.tokens = 1;
    CHECK_OK(zg_batch_push(&b, &s, &err), &err);
    zg_model m;
    CHECK_OK(zg_model_preset("tiny", &m, &err), &err);
    CHECK(zg_plan_validate(&plan, &b, &m, &err) != ZG_OK);
    zg_comm c;
    CHECK_OK(zg_comm_self_init(&c, &err), &err);
    zg_engine *e = NULL;
    CHECK(zg_engine_init(&e, &c, &plan, SHAPE, NULL, &err) == ZG_ERR_INVALID);
    CHECK(strstr(err.msg, ">= 1 token") != NULL);
    CHECK(e == NULL);
    // and zg_plan_set_ranks refuses to build it
    int64_t bad[2] = {1, 0};
    CHECK(zg_plan_set_ranks(&plan, 0, &s, 0, (zg_config){1, 1, 2}, ranks, bad, 2, &err) != ZG_OK);
    zg_comm_free(&c);
    zg_batch_free(&b);
    zg_plan_free(&plan);
}

ZG_TEST(bad_input) {
    zg_error err = {0};
    zg_comm c;
    CHECK_OK(zg_comm_self_init(&c, &err), &err);
    zg_plan plan;
    zg_plan_init(&plan);
    CHECK_OK(zg_engine_random_plan(2, 12, 3, 20, 0, -1, 1, &plan, &err), &err);
    zg_engine *e = NULL;
    CHECK(zg_engine_init(&e, &c, &plan, SHAPE, NULL, &err) == ZG_ERR_INVALID);
    CHECK(strstr(err.msg, "mpirun -np 2") != NULL);
    zg_plan_free(&plan);
    zg_plan_init(&plan);
    CHECK_OK(zg_plan_alloc(&plan, 1, 1, &err), &err);
    zg_seq s = {.id = 5, .tokens = 4};
    int32_t r0 = 0;
    int64_t l = 4;
    CHECK_OK(zg_plan_set_ranks(&plan, 0, &s, 0, (zg_config){1, 1, 1}, &r0, &l, 1, &err), &err);
    plan.p[0].config.h = 5; // 5 does not divide 12 heads (and degree mismatch)
    CHECK(zg_engine_init(&e, &c, &plan, SHAPE, NULL, &err) == ZG_ERR_INVALID);
    plan.p[0].config.h = 1;
    CHECK_OK(zg_engine_init(&e, &c, &plan, SHAPE, NULL, &err), &err);
    int32_t origin[1] = {3};
    float x[4];
    CHECK(zg_engine_dispatch(e, origin, 1, x, NULL, x, NULL, &err) == ZG_ERR_INVALID);
    CHECK(strstr(err.msg, "origin rank 3") != NULL);
    zg_engine_free(e);
    zg_plan_free(&plan);
    zg_comm_free(&c);
}

// Collective signature: class and rank list.
typedef struct sig {
    int cls;
    int32_t n;
    int32_t ranks[8];
} sig;

static int sig_eq(const sig *a, const sig *b) {
    return a->cls == b->cls && a->n == b->n &&
           memcmp(a->ranks, b->ranks, (size_t)a->n * sizeof(int32_t)) == 0;
}

static int32_t schedule(const zg_engine *e, sig *out) {
    int32_t n = 0;
    for (int32_t i = 0; i < e->n_ub; i++)
        if (e->ub[i].n > 1) {
            out[n] = (sig){0, e->ub[i].n, {0}};
            memcpy(out[n++].ranks, e->ub[i].ranks, (size_t)e->ub[i].n * 4);
        }
    for (int32_t i = 0; i < e->n_gb; i++) {
        out[n] = (sig){1, e->gb[i].n, {0}};
        memcpy(out[n++].ranks, e->gb[i].ranks, (size_t)e->gb[i].n * 4);
    }
    return n;
}

ZG_TEST(global_order_is_consistent_across_ranks) {
    zg_error err = {0};
    const int32_t P = 4;
    int checked = 0;
    for (uint64_t seed = 0; seed < 40; seed++) {
        zg_plan plan;
        zg_plan_init(&plan);
        CHECK_OK(zg_engine_random_plan(P, 12, 10, 40, (int32_t)(seed % 13), -1, seed, &plan, &err),
                 &err);
        sig s[4][256];
        int32_t ns[4];
        for (int32_t r = 0; r < P; r++) {
            zg_comm fake = {0};
            fake.rank = r;
            fake.size = P; // schedule building sends no messages
            zg_engine *e = NULL;
            CHECK_OK(zg_engine_init(&e, &fake, &plan, SHAPE, NULL, &err), &err);
            ns[r] = schedule(e, s[r]);
            zg_engine_free(e);
        }
        // for every pair of ranks: the collectives both take part in appear in the same order
        for (int32_t a = 0; a < P; a++)
            for (int32_t b = a + 1; b < P; b++) {
                sig ca[256], cb[256];
                int32_t na = 0, nb = 0;
                for (int32_t i = 0; i < ns[a]; i++)
                    if (zg_comm_rank_index(s[a][i].ranks, s[a][i].n, b) >= 0) ca[na++] = s[a][i];
                for (int32_t i = 0; i < ns[b]; i++)
                    if (zg_comm_rank_index(s[b][i].ranks, s[b][i].n, a) >= 0) cb[nb++] = s[b][i];
                CHECK_EQ_INT(na, nb);
                for (int32_t i = 0; i < na; i++)
                    CHECK(sig_eq(&ca[i], &cb[i]));
                checked += na;
            }
        zg_plan_free(&plan);
    }
    CHECK(checked > 50);
}

ZG_TEST(configs_enumerated) {
    zg_config c[64];
    CHECK_EQ_INT(zg_engine_configs(1, 12, c, 64), 1);
    CHECK_EQ_INT(zg_engine_configs(4, 12, c, 64), 13); // 1 + 3 + 3 + 6
    CHECK_EQ_INT(zg_engine_configs(4, 1, c, 64), 8);   // no Ulysses: (q,1,k) with qk <= 4
    CHECK(c[0].q == 1 && c[0].h == 1 && c[0].k == 1);
}

// ---- schedule export (zg_engine_sched) ---------------------------------------------------------

// Marks rows [lo, hi) of idx in a count array of n rows; 0 if a row is out of range.
static int mark(int32_t *cnt, int64_t n, const int64_t *idx, int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; i++) {
        if (idx[i] < 0 || idx[i] >= n) return 0;
        cnt[idx[i]]++;
    }
    return 1;
}

static int all_once(const int32_t *cnt, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (cnt[i] != 1) return 0;
    return 1;
}

// Index list f of member m of exchange x.
static int64_t ilen(const zg_engine_sched *s, int64_t m, int f) {
    return s->m_ioff[3 * m + f + 1] - s->m_ioff[3 * m + f];
}

// Every rank's exported schedule of random 4-rank plans (every config, overlapping rank sets,
// an idle rank) is consistent: the row lists cover the plan layout, the work space and the
// loader layout exactly once, what a rank sends to a peer the peer receives (same length, same
// exchange in the global order), ring postings pair up phase by phase, and the slices are the
// engine's own.
ZG_TEST(schedule_export_is_consistent) {
    zg_error err = {0};
    const int32_t P = 4, H = 12;
    for (uint64_t seed = 0; seed < 26; seed++) {
        zg_plan plan;
        zg_plan_init(&plan);
        int32_t idle = seed % 3 == 0 ? (int32_t)(seed % 4) : -1;
        CHECK_OK(zg_engine_random_plan(P, H, 8, 37, (int32_t)(seed % 13), idle, seed, &plan, &err),
                 &err);
        int32_t origin[64];
        for (int64_t i = 0; i < plan.n; i++)
            origin[i] = (int32_t)((i * 7 + seed) % P);
        zg_engine_sched sc[4];
        zg_engine *eng[4];
        for (int32_t r = 0; r < P; r++) {
            zg_comm fake = {0};
            fake.rank = r;
            fake.size = P;
            CHECK_OK(zg_engine_init(&eng[r], &fake, &plan, SHAPE, NULL, &err), &err);
            CHECK_OK(zg_engine_sched_export(eng[r], origin, &sc[r], &err), &err);
        }
        for (int32_t r = 0; r < P; r++) {
            const zg_engine_sched *s = &sc[r];
            CHECK_EQ_INT(s->t_local, zg_engine_local_tokens(eng[r]));
            CHECK_EQ_INT(s->loader_tokens, zg_engine_loader_tokens(eng[r], origin, r));
            // dispatch rows: a permutation of each layout; counts agree pairwise
            int32_t *cl = calloc((size_t)s->loader_tokens + 1, 4),
                    *cp = calloc((size_t)s->t_local + 1, 4);
            CHECK(mark(cl, s->loader_tokens, s->d_lrows, 0, s->d_loff[P]));
            CHECK(mark(cp, s->t_local, s->d_prows, 0, s->d_poff[P]));
            CHECK(all_once(cl, s->loader_tokens) && all_once(cp, s->t_local));
            free(cl);
            free(cp);
            for (int32_t q = 0; q < P; q++)
                CHECK_EQ_INT(s->d_loff[q + 1] - s->d_loff[q],
                             sc[q].d_poff[r + 1] - sc[q].d_poff[r]);
            // exchanges: Ulysses f0 covers X once, f1 covers Q once; f2 plus the all-gather
            // sections of the other members cover KV once
            int64_t nx = s->t_local * H;
            int32_t *cx = calloc((size_t)nx + 1, 4), *cq = calloc((size_t)s->q_rows + 1, 4),
                    *ck = calloc((size_t)s->kv_rows + 1, 4);
            for (int64_t x = 0; x < s->n_x; x++)
                for (int64_t m = s->x_moff[x]; m < s->x_moff[x + 1]; m++) {
                    const int64_t *o = &s->m_ioff[3 * m];
                    if (s->x_kind[x] == ZG_SCHED_ULYSSES) {
                        CHECK(mark(cx, nx, s->idx, o[0], o[1]));
                        CHECK(mark(cq, s->q_rows, s->idx, o[1], o[2]));
                        CHECK(mark(ck, s->kv_rows, s->idx, o[2], o[3]));
                        CHECK_EQ_INT(o[2] - o[1], o[3] - o[2]);
                    } else if (m - s->x_moff[x] != s->x_me[x]) {
                        CHECK(mark(ck, s->kv_rows, s->idx, o[0], o[1]));
                    }
                    // the peer has the same exchange at the same place among those it shares
                    // with r, and receives from r what r sends it
                    int32_t q = (int32_t)s->m_rank[m];
                    int64_t nth = 0, at = -1;
                    for (int64_t y = 0; y < x; y++)
                        for (int64_t mm = s->x_moff[y]; mm < s->x_moff[y + 1]; mm++)
                            nth += s->m_rank[mm] == q;
                    const zg_engine_sched *t = &sc[q];
                    for (int64_t y = 0, seen = 0; y < t->n_x && at < 0; y++)
                        for (int64_t mm = t->x_moff[y]; mm < t->x_moff[y + 1]; mm++)
                            if (t->m_rank[mm] == r && seen++ == nth) at = y;
                    CHECK(at >= 0);
                    if (at < 0) continue;
                    CHECK_EQ_INT(t->x_kind[at], s->x_kind[x]);
                    CHECK_EQ_INT(t->x_moff[at + 1] - t->x_moff[at],
                                 s->x_moff[x + 1] - s->x_moff[x]);
                    int64_t mr = t->x_moff[at] + s->x_me[x]; // r as a member of the peer's copy
                    CHECK_EQ_INT(t->m_rank[mr], r);
                    int64_t mine = s->x_moff[x] + s->x_me[x];
                    if (s->x_kind[x] == ZG_SCHED_ULYSSES)
                        CHECK_EQ_INT(ilen(s, m, 0), ilen(t, mr, 1));
                    else
                        CHECK_EQ_INT(ilen(s, mine, 0), ilen(t, mr, 0));
                }
            CHECK(all_once(cx, nx) && all_once(cq, s->q_rows) && all_once(ck, s->kv_rows));
            free(cx);
            free(cq);
            free(ck);
            // slices: the engine's own, step by step
            for (int32_t st = 0; st < s->k_max; st++) {
                int64_t n = zg_eng_step_slices(eng[r], st, NULL, NULL);
                CHECK_EQ_INT(s->sl_off[st + 1] - s->sl_off[st], n);
                zg_attn_slice *sl = calloc((size_t)n + 1, sizeof *sl);
                zg_eng_step_slices(eng[r], st, sl, NULL);
                for (int64_t i = 0; i < n; i++) {
                    const int64_t *v = &s->sl[4 * (s->sl_off[st] + i)];
                    CHECK(v[0] == sl[i].q_start && v[1] == sl[i].q_len && v[2] == sl[i].k_start &&
                          v[3] == sl[i].k_len);
                    CHECK(v[0] + v[1] <= s->q_rows);
                    CHECK(v[2] + v[3] <= (st == 0 ? s->kv_rows : s->ring_rows));
                }
                free(sl);
            }
        }
        // ring: per phase and kind, the rows r sends to q equal the rows q receives from r
        for (int32_t r = 0; r < P; r++)
            for (int32_t q = 0; q < P; q++)
                for (int64_t ph = 1; ph <= 4; ph++)
                    for (int kind = 0; kind < 2; kind++) {
                        int64_t sent = 0, got = 0;
                        const int send_k = kind ? ZG_SCHED_ACC_SEND : ZG_SCHED_KV_SEND;
                        const int recv_k = kind ? ZG_SCHED_ACC_RECV : ZG_SCHED_KV_RECV;
                        for (int64_t i = 0; i < sc[r].n_ring; i++) {
                            const int64_t *v = &sc[r].ring[ZG_SCHED_RING_FIELDS * i];
                            if (v[0] == ph && v[1] == send_k && v[2] == q) sent += v[5];
                        }
                        for (int64_t i = 0; i < sc[q].n_ring; i++) {
                            const int64_t *v = &sc[q].ring[ZG_SCHED_RING_FIELDS * i];
                            if (v[0] == ph && v[1] == recv_k && v[2] == r) got += v[5];
                        }
                        CHECK_EQ_INT(sent, got);
                    }
        for (int32_t r = 0; r < P; r++) {
            zg_engine_sched_free(&sc[r]);
            zg_engine_free(eng[r]);
        }
        zg_plan_free(&plan);
    }
}

ZG_TEST(schedule_export_rejects_rounds) {
    zg_error err = {0};
    zg_plan plan;
    zg_plan_init(&plan);
    CHECK_OK(zg_engine_random_plan(1, 12, 3, 20, 0, -1, 1, &plan, &err), &err);
    plan.p[plan.n - 1].round = 1;
    zg_comm fake = {0};
    fake.size = 1;
    zg_engine *e = NULL;
    CHECK_OK(zg_engine_init(&e, &fake, &plan, SHAPE, NULL, &err), &err);
    zg_engine_sched s;
    CHECK(zg_engine_sched_export(e, NULL, &s, &err) == ZG_ERR_UNSUPPORTED);
    CHECK(strstr(err.msg, "rounds") != NULL);
    zg_engine_free(e);
    zg_plan_free(&plan);
}

ZG_TEST_MAIN()
