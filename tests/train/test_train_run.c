// test_train_run.c — zg_train_run (the library behind `zellige train`) on one process: a
// plan-only comparison of policies, real training steps (deterministic, resumable), and bad
// options failing with a message naming the value.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "train/train.h"
#include "zgtest.h"

typedef struct seen {
    int64_t calls, starts, last_step;
    int32_t last_policy;
    double loss[8];
} seen;

static void on_start(void *ctx, const zg_train_run_result *r) {
    seen *s = ctx;
    s->starts++;
    (void)r;
}

static void on_step(void *ctx, const zg_train_run_result *r, const zg_train_step_info *i) {
    seen *s = ctx;
    // (step, policy) in order: every policy of a step before the next step
    if (s->calls > 0 && !(i->step == s->last_step && i->policy == s->last_policy + 1) &&
        !(i->step == s->last_step + 1 && i->policy == 0))
        s->calls = -1000;
    if (i->plan->n != i->batch->n || !(i->predicted_s > 0) || i->policy >= r->n_pol)
        s->calls = -1000;
    if (i->step - r->step0 < 8) s->loss[i->step - r->step0] = i->train->loss;
    s->last_step = i->step, s->last_policy = i->policy;
    s->calls++;
}

ZG_TEST(train_run_plan_only_compares_policies) {
    zg_comm comm;
    zg_error e;
    CHECK_OK(zg_comm_self_init(&comm, &e), &e);
    zg_train_run_opts o;
    zg_train_run_opts_default(&o);
    o.policies = "zellige,dp,knapformer";
    o.cluster = "cpu:4";
    o.steps = 3;
    o.plan_only = 1;
    seen s = {0};
    o.on_start = on_start, o.on_step = on_step, o.ctx = &s;
    zg_train_run_result r;
    CHECK_OK(zg_train_run(&o, &comm, &r, &e), &e);
    CHECK_EQ_INT(s.starts, 1);
    CHECK_EQ_INT(s.calls, 9);
    CHECK_EQ_INT(r.steps, 3);
    CHECK_EQ_INT(r.n_pol, 3);
    CHECK_EQ_INT(r.ranks, 4); // plan only: the cluster's ranks
    CHECK_STR(r.pol[2].name, "knapformer");
    CHECK(r.bags[0] == 'g'); // the uniform layout picked for knapformer
    for (int32_t p = 0; p < r.n_pol; p++) {
        CHECK_EQ_INT(r.pol[p].n_ok, 3);
        for (int k = 0; k < 3; k++)
            CHECK(r.pol[p].times[k] > 0 && r.pol[p].times[k] == r.pol[p].pred[k]);
    }
    zg_train_run_result_free(&r);
    zg_comm_free(&comm);
}

// --mix: every step's batch is the paper's mix drawn on the cluster's ranks, tokens divided.
ZG_TEST(train_run_paper_mix_divided) {
    zg_comm comm;
    zg_error e;
    CHECK_OK(zg_comm_self_init(&comm, &e), &e);
    zg_train_run_opts o;
    zg_train_run_opts_default(&o);
    o.policies = "zellige,usp";
    o.cluster = "cpu:8";
    o.steps = 2;
    o.plan_only = 1;
    o.mix = "V45", o.video_seconds = 10, o.mix_divisor = 256;
    zg_model m;
    CHECK_OK(zg_model_load(o.model, &m, &e), &e);
    zg_batch b, want;
    CHECK_OK(zg_train_run_batch(&o, &m, 8, 1, &b, &e), &e);
    zg_mix_spec sp = {0.45, 350000, 10, 8, o.seed};
    CHECK_OK(zg_workload_mix_divided(&m, &sp, 256, 1, &want, &e), &e);
    CHECK_EQ_INT(b.n, want.n);
    CHECK(b.n == want.n && !memcmp(b.seqs, want.seqs, sizeof(zg_seq) * (size_t)b.n));
    CHECK_EQ_INT(zg_batch_total_tokens(&b), zg_batch_total_tokens(&want));
    zg_batch_free(&b);
    zg_batch_free(&want);
    seen s = {0};
    o.on_start = on_start, o.on_step = on_step, o.ctx = &s;
    zg_train_run_result r;
    CHECK_OK(zg_train_run(&o, &comm, &r, &e), &e);
    CHECK_EQ_INT(s.calls, 4);
    CHECK(r.pol[0].pred[0] > 0 && r.pol[1].pred[0] > 0);
    zg_train_run_result_free(&r);
    o.mix = "V42";  // not one of the paper's mixes
    CHECK(zg_train_run(&o, &comm, &r, &e) == ZG_ERR_INVALID);
    CHECK(strstr(e.msg, "--mix") && strstr(e.msg, "V42"));
    zg_train_run_result_free(&r);
    o.mix = "V45", o.batch = "x.json";
    CHECK(zg_train_run(&o, &comm, &r, &e) == ZG_ERR_INVALID);
    CHECK(strstr(e.msg, "--batch"));
    zg_train_run_result_free(&r);
    zg_comm_free(&comm);
}

// Two steps of real training on one rank; returns the losses through s.
static void train_steps(int64_t steps, const char *save, const char *resume, seen *s,
                        zg_train_run_result *r, zg_error *e, zg_status *st) {
    zg_comm comm;
    *st = zg_comm_self_init(&comm, e);
    if (*st) return;
    zg_train_run_opts o;
    zg_train_run_opts_default(&o);
    o.steps = steps;
    o.tokens_per_rank = 256;
    o.save = save, o.resume = resume;
    memset(s, 0, sizeof *s);
    o.on_step = on_step, o.ctx = s;
    *st = zg_train_run(&o, &comm, r, e);
    zg_comm_free(&comm);
}

ZG_TEST(train_run_trains_deterministically_and_resumes) {
    char ck[] = "/tmp/zg_test_train_runXXXXXX";
    int fd = mkstemp(ck);
    CHECK(fd >= 0);
    close(fd);
    seen a, b, c;
    zg_train_run_result r;
    zg_error e;
    zg_status st;
    train_steps(3, ck, NULL, &a, &r, &e, &st);
    CHECK_OK(st, &e);
    CHECK_EQ_INT(r.ranks, 1);
    CHECK_STR(r.cluster.name, "cpu:1");
    CHECK(r.n_params > 0);
    CHECK_EQ_INT(a.calls, 3);
    for (int k = 0; k < 3; k++)
        CHECK(isfinite(a.loss[k]) && a.loss[k] > 0);
    CHECK(r.pol[0].last_loss == a.loss[2]);
    zg_train_run_result_free(&r);
    train_steps(3, NULL, NULL, &b, &r, &e, &st); // the same seed: bit-identical losses
    CHECK_OK(st, &e);
    zg_train_run_result_free(&r);
    for (int k = 0; k < 3; k++)
        CHECK(a.loss[k] == b.loss[k]);
    train_steps(1, NULL, ck, &c, &r, &e, &st); // resumes at step 3
    unlink(ck);
    CHECK_OK(st, &e);
    CHECK_EQ_INT(r.step0, 3);
    CHECK_EQ_INT(c.last_step, 3);
    CHECK(isfinite(c.loss[0]) && c.loss[0] != a.loss[0]);
    zg_train_run_result_free(&r);
}

ZG_TEST(train_run_rejects_bad_options) {
    struct {
        const char *policies, *model, *cluster;
        int64_t steps;
        double share;
        int32_t plan_only;
        const char *needle;
        const char *save;
    } bad[] = {
        {"zellige", "tiny", NULL, 0, 0.5, 1, "--steps", NULL},
        {"zellige", "tiny", NULL, 2, 1.5, 1, "--video-share", NULL},
        {",", "tiny", NULL, 2, 0.5, 1, "--policy is empty", NULL},
        {"zellige,magic", "tiny", NULL, 2, 0.5, 1, "magic", NULL},
        {"zellige", "tiny-mmdit", NULL, 2, 0.5, 1, "arch wan only", NULL},
        {"zellige", "tiny", "cpu:2", 2, 0.5, 0, "mpirun -np 2", NULL},
        {"zellige", "tiny", NULL, 2, 0.5, 0, "--save: ", "/nonexistent-dir/ckpt.bin"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zg_comm comm;
        zg_error e = {0};
        CHECK_OK(zg_comm_self_init(&comm, &e), &e);
        zg_train_run_opts o;
        zg_train_run_opts_default(&o);
        o.policies = bad[i].policies, o.model = bad[i].model, o.cluster = bad[i].cluster;
        o.steps = bad[i].steps, o.video_share = bad[i].share, o.plan_only = bad[i].plan_only;
        o.save = bad[i].save;
        seen s = {0};
        o.on_start = on_start, o.ctx = &s;
        zg_train_run_result r;
        zg_status st = zg_train_run(&o, &comm, &r, &e);
        zg_train_run_result_free(&r);
        zg_comm_free(&comm);
        CHECK_MSG(st != ZG_OK, "case %zu ran", i);
        CHECK_MSG(strstr(e.msg, bad[i].needle), "case %zu: '%s' lacks '%s'", i, e.msg,
                  bad[i].needle);
        CHECK_EQ_INT(s.starts, 0);
    }
}

// zg_model_param_count (what the memory model prices) must equal what the C trainer allocates:
// a real trainer for the models it can build on a laptop (tiny, configs/cpu-small.json), the
// trainer's layout size (zg_dit_param_count, train.c allocates 4x that) for the Wan presets whose
// trainer would need tens of GiB. Per block: the model count's difference between n_layers and
// n_layers - 1 against the trainer's stride between consecutive blocks.
static int64_t count_with_layers(zg_model m, int32_t layers) {
    m.n_layers = layers;
    return zg_model_param_count(&m);
}

ZG_TEST(param_count_matches_trainer_allocation) {
    zg_error e;
    zg_comm comm;
    CHECK_OK(zg_comm_self_init(&comm, &e), &e);
    zg_train_opts to;
    zg_train_opts_default(&to);
    const char *built[] = {"tiny", "configs/cpu-small.json"};
    for (size_t i = 0; i < sizeof built / sizeof *built; i++) {
        zg_model m;
        CHECK_OK(zg_model_load(built[i], &m, &e), &e);
        zg_trainer tr;
        CHECK_OK(zg_trainer_init(&tr, &m, &comm, &to, &e), &e);
        int64_t blk = tr.params.layers[1].mod - tr.params.layers[0].mod;
        int64_t model_blk = count_with_layers(m, m.n_layers) - count_with_layers(m, m.n_layers - 1);
        CHECK_MSG(model_blk == blk,
                  "%s: zg_model_param_count counts %lld per block, the trainer "
                  "allocates %lld",
                  built[i], (long long)model_blk, (long long)blk);
        CHECK_MSG(zg_model_param_count(&m) == tr.params.n_params,
                  "%s: zg_model_param_count %lld, trainer allocates %lld", built[i],
                  (long long)zg_model_param_count(&m), (long long)tr.params.n_params);
        zg_trainer_free(&tr);
    }
    const char *presets[] = {"wan2.1-1.3b", "wan2.1-14b"};
    for (size_t i = 0; i < sizeof presets / sizeof *presets; i++) {
        zg_model m;
        CHECK_OK(zg_model_preset(presets[i], &m, &e), &e);
        CHECK_MSG(zg_model_param_count(&m) == zg_dit_param_count(&m),
                  "%s: zg_model_param_count %lld, the trainer's layout %lld", presets[i],
                  (long long)zg_model_param_count(&m), (long long)zg_dit_param_count(&m));
    }
    // the other architectures are not built by the C trainer (so there is nothing to compare)
    zg_model mm;
    CHECK_OK(zg_model_preset("tiny-mmdit", &mm, &e), &e);
    zg_trainer tr;
    CHECK(zg_trainer_init(&tr, &mm, &comm, &to, &e) == ZG_ERR_UNSUPPORTED);
    CHECK(strstr(e.msg, "not supported") != NULL);
    zg_comm_free(&comm);
}

ZG_TEST_MAIN()
