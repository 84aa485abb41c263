// mpitest_train.c — one distributed training step under random legal plans (every config,
// overlapping rank sets, an idle rank) and under planner plans gives the same loss, gradients
// and updated weights as the single-process step; resume from a checkpoint is bit-exact.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/zgmpitest.h"
#include "train/train.h"

static void batch_from_plan(const zg_plan *p, int32_t world, zg_batch *b) {
    zg_batch_init(b);
    for (int64_t i = 0; i < p->n; i++) {
        zg_seq s;
        zg_seq_init(&s);
        s.id = p->p[i].id;
        s.tokens = p->p[i].tokens;
        s.origin_rank = (int32_t)((i * 7 + 3) % world);
        s.text_tokens = (int32_t)(2 + i % 5);
        zg_batch_push(b, &s, NULL);
    }
}

// max |a-b| / max |b| over n values
static double rel_err(const float *a, const float *b, int64_t n) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (d > num) num = d;
        if (fabs(b[i]) > den) den = fabs(b[i]);
    }
    return den > 0 ? num / den : num;
}

static void test_opts(zg_train_opts *o, int ckpt) {
    zg_train_opts_default(o);
    o->seed = 42;
    o->act_ckpt = ckpt;
    o->adam.lr = 1e-2f;
    o->adam.eps = 1e-2f;  // keeps the update a smooth function of the gradient (see below)
}

ZG_TEST(distributed_step_equals_single_process) {
    zg_error e = {0};
    zg_model m;
    zg_model_preset("tiny", &m, &e);
    zg_comm self;
    zg_comm_self_init(&self, &e);
    int32_t world = zgmpi_comm->size;
    double worst_loss = 0, worst_grad = 0, worst_w = 0;
    int fails = 0;
    for (int trial = 0; trial < 4; trial++) {
        zg_plan plan;
        zg_plan_init(&plan);
        int32_t idle = world > 1 && trial % 2 ? world - 1 : -1;
        if (zg_engine_random_plan(world, m.n_heads, 6, 48, trial == 0 ? -1 : trial, idle,
                                  1000 + trial, &plan, &e)) {
            fails++;
            break;
        }
        zg_batch b;
        batch_from_plan(&plan, world, &b);
        zg_trainer dist, ref;
        zg_train_opts o;
        test_opts(&o, trial % 2);
        zg_train_stats sd, sr;
        int bad = zg_trainer_init(&dist, &m, zgmpi_comm, &o, &e) ||
                  zg_trainer_init(&ref, &m, &self, &o, &e) ||
                  zg_trainer_step(&dist, &b, &plan, &sd, &e) ||
                  zg_trainer_step_local(&ref, &b, &sr, &e);
        if (bad) {
            fprintf(stderr, "[%d] trial %d: %s\n", zgmpi_comm->rank, trial, e.msg);
            fails++;
        } else {
            int64_t n = dist.params.n_params;
            double le = fabs(sd.loss - sr.loss) / fabs(sr.loss);
            double ge = rel_err(dist.flat + n, ref.flat + n, n);
            double we = rel_err(dist.flat, ref.flat, n);
            if (le > worst_loss) worst_loss = le;
            if (ge > worst_grad) worst_grad = ge;
            if (we > worst_w) worst_w = we;
        }
        zg_trainer_free(&dist);
        zg_trainer_free(&ref);
        zg_batch_free(&b);
        zg_plan_free(&plan);
    }
    zg_comm_free(&self);
    CHECK(fails == 0);
    CHECK_MSG(worst_loss < 1e-5, "loss rel err %.3g", worst_loss);
    CHECK_MSG(worst_grad < 1e-4, "gradient rel err %.3g", worst_grad);
    CHECK_MSG(worst_w < 1e-6, "updated weights rel err %.3g", worst_w);
}

ZG_TEST(resume_from_checkpoint_is_bit_exact) {
    zg_error e = {0};
    zg_model m;
    zg_model_preset("tiny", &m, &e);
    int32_t world = zgmpi_comm->size;
    char path[64];
    snprintf(path, sizeof path, "/tmp/zg_train_ckpt_%d.bin", (int)getppid());
    zg_plan plans[3];
    zg_batch batches[3];
    for (int s = 0; s < 3; s++) {
        zg_plan_init(&plans[s]);
        zg_engine_random_plan(world, m.n_heads, 5, 40, -1, -1, 77 + s, &plans[s], &e);
        batch_from_plan(&plans[s], world, &batches[s]);
    }
    zg_train_opts o;
    test_opts(&o, 1);
    zg_trainer a, r;
    zg_train_stats st;
    double la[3] = {0}, lr[3] = {0};
    int bad = zg_trainer_init(&a, &m, zgmpi_comm, &o, &e);
    for (int s = 0; s < 3 && !bad; s++) {
        bad = zg_trainer_step(&a, &batches[s], &plans[s], &st, &e);
        la[s] = st.loss;
        if (s == 0 && !bad) bad = zg_trainer_save(&a, path, &e);
        if (s == 0 && !bad) bad = zg_comm_barrier(zgmpi_comm, &e);
    }
    // a fresh trainer with another seed resumes from the checkpoint
    o.seed = 9;
    bad = bad || zg_trainer_init(&r, &m, zgmpi_comm, &o, &e) || zg_trainer_load(&r, path, &e);
    for (int s = 1; s < 3 && !bad; s++) {
        bad = zg_trainer_step(&r, &batches[s], &plans[s], &st, &e);
        lr[s] = st.loss;
    }
    int same = !bad && memcmp(a.flat, r.flat, sizeof(float) * (size_t)a.params.n_params) == 0;
    // a checkpoint of another model is rejected
    zg_model other;
    zg_model_preset("tiny", &other, &e);
    other.n_layers = 1;
    snprintf(other.name, sizeof other.name, "tiny-1");
    zg_trainer t2;
    int rejected = 0;
    if (!bad && !zg_trainer_init(&t2, &other, zgmpi_comm, &o, &e)) {
        zg_error e2;
        rejected = zg_trainer_load(&t2, path, &e2) == ZG_ERR_INVALID && strstr(e2.msg, "tiny") != NULL;
        zg_trainer_free(&t2);
    }
    if (bad) fprintf(stderr, "[%d] %s\n", zgmpi_comm->rank, e.msg);
    zg_comm_barrier(zgmpi_comm, &e);
    if (zgmpi_comm->rank == 0) unlink(path);
    zg_trainer_free(&a);
    zg_trainer_free(&r);
    for (int s = 0; s < 3; s++) {
        zg_plan_free(&plans[s]);
        zg_batch_free(&batches[s]);
    }
    CHECK(!bad);
    CHECK(la[1] == lr[1] && la[2] == lr[2]);
    CHECK(same);
    CHECK(rejected);
}

ZG_MPITEST_MAIN()
