// run.c — a training run (train.h, zg_train_run): model, cluster and prices, one planner and
// one trainer per policy, then every step's batch planned and trained under each policy in turn.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "planner/planner.h"
#include "train/train.h"

void zg_train_run_opts_default(zg_train_run_opts *o) {
    *o = (zg_train_run_opts){.model = "tiny", .policies = "zellige", .tokens_per_rank = 512,
              .video_share = 0.5, .steps = 10, .act_ckpt = 1, .lr = 1e-3, .seed = 1,
              .mix_load = 350000, .mix_divisor = 1, .video_seconds = 15};
}

zg_status zg_train_run_batch(const zg_train_run_opts *o, const zg_model *m, int32_t n_ranks,
                             int64_t step, zg_batch *out, zg_error *err) {
    if (!o->mix)
        return zg_train_synthetic_batch(m, n_ranks, o->tokens_per_rank, o->video_share, o->seed,
                                        step, out, err);
    zg_batch_init(out);
    zg_mix_spec spec = {.tokens_per_rank = o->mix_load, .video_seconds = o->video_seconds,
                        .world_size = n_ranks, .seed = o->seed};
    zg_status st = zg_mix_paper_share(o->mix, &spec.video_share, err);
    if (st) return zg_error_prefix(err, "--mix: ");
    return zg_workload_mix_divided(m, &spec, o->mix_divisor, step, out, err);
}

void zg_train_run_result_free(zg_train_run_result *r) {
    if (!r) return;
    for (int32_t p = 0; p < ZG_TRAIN_MAX_POL; p++)
        free(r->pol[p].times), free(r->pol[p].pred);
    memset(r, 0, sizeof *r);
}

// The planners and trainers of a run.
typedef struct run_state {
    zg_planner pl[ZG_TRAIN_MAX_POL];
    zg_trainer tr[ZG_TRAIN_MAX_POL];
    int have_pl[ZG_TRAIN_MAX_POL], have_tr[ZG_TRAIN_MAX_POL];
    zg_pricer pr;
    zg_batch fixed;
} run_state;

static zg_status check_opts(const zg_train_run_opts *o, zg_train_run_result *r, zg_error *err) {
    zg_status st = zg_check_i64("--tokens-per-rank", o->tokens_per_rank, 1, INT64_MAX, err);
    if (!st) st = zg_check_i64("--steps", o->steps, 1, 10000000, err);
    if (!st) st = zg_check_i64("--act-ckpt", o->act_ckpt, 0, 1, err);
    if (!st) st = zg_check_i64("--max-degree", o->max_degree, 0, INT32_MAX, err);
    if (!st) st = zg_check_f64("--video-share", o->video_share, 0, 1, err);
    if (!st) st = zg_check_i64("--mix-load", o->mix_load, 1, INT64_MAX, err);
    if (!st) st = zg_check_i64("--mix-divisor", o->mix_divisor, 1, ZG_MIX_DIVISOR_MAX, err);
    if (!st && o->mix && o->video_seconds != 5 && o->video_seconds != 10 && o->video_seconds != 15)
        st = zg_error_set(err, ZG_ERR_INVALID, "--video-seconds is %d; expected 5, 10 or 15",
                          o->video_seconds);
    if (!st && o->mix && o->batch)
        st = zg_error_set(err, ZG_ERR_INVALID,
                          "--mix and --batch both given; the batch comes from one of them");
    double share;
    if (!st && o->mix && (st = zg_mix_paper_share(o->mix, &share, err)))
        zg_error_prefix(err, "--mix: ");
    if (st) return st;
    if (!(o->lr >= 0 && o->lr < 1e3))
        return zg_error_set(err, ZG_ERR_INVALID, "--lr is %g, must be >= 0 and < 1000", o->lr);
    const char *s = o->policies ? o->policies : "";
    while (*s) {
        size_t l = strcspn(s, ",");
        if (l && r->n_pol == ZG_TRAIN_MAX_POL)
            return zg_error_set(err, ZG_ERR_INVALID, "--policy: at most %d policies",
                                ZG_TRAIN_MAX_POL);
        if (l >= sizeof r->pol[0].name)
            return zg_error_set(err, ZG_ERR_INVALID, "--policy: unknown policy '%.*s'", (int)l, s);
        if (l) memcpy(r->pol[r->n_pol++].name, s, l);
        s += l + (s[l] != 0);
    }
    if (r->n_pol < 1) return zg_error_set(err, ZG_ERR_INVALID, "--policy is empty");
    return ZG_OK;
}

// KnapFormer's layout: the uniform g{G}n{N/G} (G | N, G | heads) with the lowest predicted
// makespan on the first batch (ties: smaller G).
static zg_status pick_bags(const zg_plan_ctx *ctx, const zg_train_run_opts *o,
                           const zg_batch *fixed, char *out, zg_error *err) {
    int32_t N = ctx->cluster->world_size;
    const zg_model *m = ctx->model;
    zg_batch gen;
    zg_batch_init(&gen);
    const zg_batch *b = fixed;
    if (!o->batch) {
        zg_status st = zg_train_run_batch(o, m, N, 0, &gen, err);
        if (st) return st;
        b = &gen;
    }
    double best = INFINITY;
    for (int32_t G = 1; G <= N; G++) {
        if (N % G || m->n_heads % G) continue;
        zg_plan_ctx c = *ctx;
        snprintf(c.opts.bags, sizeof c.opts.bags, "g%dn%d", G, N / G);
        zg_planner pl;
        zg_plan plan;
        zg_plan_init(&plan);
        if (!zg_planner_init(&pl, "knapformer", &c, NULL)) {
            // a layout whose plan is over the memory cap is never chosen (docs/planners.md §4b)
            if (!zg_planner_plan(&pl, b, &plan, NULL) && !plan.over_cap && plan.makespan < best) {
                best = plan.makespan;
                snprintf(out, 128, "%s", c.opts.bags);
            }
            zg_planner_free(&pl);
        }
        zg_plan_free(&plan);
    }
    zg_batch_free(&gen);
    if (!out[0])
        return zg_error_set(err, ZG_ERR_INFEASIBLE,
                            "knapformer: no uniform bag layout plans the first batch on %d ranks "
                            "under the memory cap; give --bags",
                            N);
    return ZG_OK;
}

// Model, cluster, prices and the fixed batch.
static zg_status load_inputs(const zg_train_run_opts *o, const zg_comm *comm,
                             zg_train_run_result *r, run_state *s, zg_error *err) {
    char cname[64];
    snprintf(cname, sizeof cname, "cpu:%d", comm->size);
    zg_status st = zg_model_load(o->model, &r->model, err);
    if (!st && !o->cluster && o->plan_only && o->profile) { // plan-only: the profile's cluster
        zg_cost_table pt;
        st = zg_cost_table_load(o->profile, &pt, err);
        if (!st && pt.cluster[0]) snprintf(cname, sizeof cname, "%s", pt.cluster);
        if (!st) zg_cost_table_free(&pt);
    }
    if (!st) st = zg_cluster_load(o->cluster ? o->cluster : cname, &r->cluster, err);
    if (!st && !o->plan_only && r->cluster.world_size != comm->size)
        st =
            zg_error_set(err, ZG_ERR_INVALID,
                         "cluster %s has %d ranks but the run has %d (start with mpirun -np "
                         "%d, or --plan-only)",
                         r->cluster.name, r->cluster.world_size, comm->size, r->cluster.world_size);
    if (!st && r->model.arch != ZG_ARCH_WAN)
        st = zg_error_set(err, ZG_ERR_UNSUPPORTED,
                          "model '%s' has arch %s; the C DiT trains arch wan only", r->model.name,
                          zg_arch_name(r->model.arch));
    if (!st && o->profile && o->device_row)
        st = zg_error_set(err, ZG_ERR_INVALID,
                          "--device-row prices the analytic model, which --profile's measured "
                          "table replaces: give one of them");
    if (!st && o->profile) {
        zg_cost_table t;
        st = zg_cost_table_load(o->profile, &t, err);
        if (!st) {
            r->overhead_s = t.overhead_s;
            if (strcmp(t.model, r->model.name))
                st = zg_error_set(err, ZG_ERR_INVALID, "%s was measured for model '%s', not '%s'",
                                  o->profile, t.model, r->model.name);
            else
                st = zg_cost_table_init(&s->pr, &t, &r->model, &r->cluster, err);
            zg_cost_table_free(&t);
        }
    } else if (!st) {
        zg_cost_opts co;
        zg_cost_opts_default(&co);
        co.act_ckpt = o->act_ckpt;
        co.act_bytes = 4;
        co.shard_weights = 0;
        if (o->device_row) {
            st = zg_cost_device_row_load(o->device_row, r->cluster.device, &co.dev, err);
            if (st) zg_error_prefix(err, "--device-row: ");
        }
        if (!st) st = zg_cost_analytic_init(&s->pr, &r->model, &r->cluster, &co, err);
    }
    if (!st && o->batch) st = zg_batch_read_file(o->batch, &r->model, &s->fixed, err);
    r->ranks = o->plan_only ? r->cluster.world_size : comm->size;
    r->n_params = zg_model_param_count(&r->model);
    return st;
}

// A planner (and, unless plan_only, a trainer) per policy; knapformer gets its layout.
static zg_status init_policies(const zg_train_run_opts *o, zg_comm *comm, zg_train_run_result *r,
                               run_state *s, zg_error *err) {
    zg_plan_ctx ctx = {&r->model, &r->cluster, &s->pr, NULL, {0}};
    zg_planner_opts_default(&ctx.opts);
    ctx.opts.max_degree = o->max_degree;
    ctx.opts.seed = o->seed;
    zg_train_opts to;
    zg_train_opts_default(&to);
    to.act_ckpt = o->act_ckpt;
    to.seed = o->seed;
    to.adam.lr = (float)o->lr;
    zg_status st = ZG_OK;
    if (o->bags) snprintf(r->bags, sizeof r->bags, "%s", o->bags);
    for (int32_t p = 0; p < r->n_pol && !st && !o->bags; p++)
        if (!strcmp(r->pol[p].name, "knapformer")) st = pick_bags(&ctx, o, &s->fixed, r->bags, err);
    for (int32_t p = 0; p < r->n_pol && !st; p++) {
        zg_train_run_policy *rp = &r->pol[p];
        zg_plan_ctx pctx = ctx;
        if (!strcmp(rp->name, "knapformer"))
            snprintf(pctx.opts.bags, sizeof pctx.opts.bags, "%s", r->bags);
        rp->times = zg_calloc((size_t)o->steps, sizeof *rp->times, err);
        rp->pred = zg_calloc((size_t)o->steps, sizeof *rp->pred, err);
        if (!rp->times || !rp->pred) st = ZG_ERR_NOMEM;
        if (!st && !(st = zg_planner_init(&s->pl[p], rp->name, &pctx, err))) s->have_pl[p] = 1;
        if (!st && !o->plan_only && !(st = zg_trainer_init(&s->tr[p], &r->model, comm, &to, err)))
            s->have_tr[p] = 1;
        if (!st && o->resume && s->have_tr[p]) st = zg_trainer_load(&s->tr[p], o->resume, err);
    }
    r->step0 = s->have_tr[0] ? s->tr[0].step : 0;
    return st;
}

// Step s of the run: the batch, then each policy's plan (and training step).
static zg_status run_step(const zg_train_run_opts *o, zg_train_run_result *r, run_state *rs,
                          int64_t s, zg_error *err) {
    zg_batch gen, *b = &rs->fixed;
    zg_batch_init(&gen);
    zg_status st = ZG_OK;
    if (!o->batch) {
        st = zg_train_run_batch(o, &r->model, r->cluster.world_size, r->step0 + s, &gen, err);
        b = &gen;
    }
    for (int32_t p = 0; p < r->n_pol && !st; p++) {
        zg_train_run_policy *rp = &r->pol[p];
        zg_plan plan;
        zg_plan_init(&plan);
        zg_plan_stats ps;
        zg_train_stats ts;
        memset(&ts, 0, sizeof ts);
        st = zg_planner_plan(&rs->pl[p], b, &plan, err);
        if (!st && plan.over_cap) {  // a baseline that ignores memory: run as its real run would
            char why[256];
            zg_plan_over_cap_describe(&plan, why, sizeof why);
            zg_log(ZG_LOG_WARN, "step %lld: %s's plan is over the memory cap (%s); on GPUs its "
                   "real run would run out of memory", (long long)(r->step0 + s), plan.policy,
                   why);
        }
        if (!st) st = zg_plan_evaluate(&plan, NULL, NULL, &ps, err);
        if (!st && !o->plan_only) st = zg_trainer_step(&rs->tr[p], b, &plan, &ts, err);
        if (!st) {
            rp->pred[s] = plan.makespan + r->overhead_s;
            rp->times[s] = o->plan_only ? rp->pred[s] : ts.slowest_s;
            rp->last_loss = ts.loss;
            rp->n_ok++;
            zg_train_step_info info = {r->step0 + s, p, b, &plan, &ps, &ts, rp->pred[s]};
            if (o->on_step) o->on_step(o->ctx, r, &info);
        }
        zg_plan_free(&plan);
    }
    zg_batch_free(&gen);
    return st;
}

zg_status zg_train_run(const zg_train_run_opts *o, zg_comm *comm, zg_train_run_result *r,
                       zg_error *err) {
    memset(r, 0, sizeof *r);
    run_state *s = zg_calloc(1, sizeof *s, err);
    if (!s) return ZG_ERR_NOMEM;
    zg_batch_init(&s->fixed);
    zg_status st = check_opts(o, r, err);
    // The checkpoint path is checked before training, not found unwritable after it.
    if (!st && o->save && comm->rank == 0 && (st = zg_file_check_writable(o->save, err)))
        zg_error_prefix(err, "--save: ");
    if (!st) st = load_inputs(o, comm, r, s, err);
    if (!st) st = init_policies(o, comm, r, s, err);
    if (!st && o->on_start) o->on_start(o->ctx, r);
    for (int64_t k = 0; k < o->steps && !st; k++) {
        st = run_step(o, r, s, k, err);
        if (!st) r->steps = k + 1;
    }
    if (!st && o->save && s->have_tr[0]) st = zg_trainer_save(&s->tr[0], o->save, err);
    for (int32_t p = 0; p < ZG_TRAIN_MAX_POL; p++) {
        if (s->have_pl[p]) zg_planner_free(&s->pl[p]);
        if (s->have_tr[p]) zg_trainer_free(&s->tr[p]);
    }
    zg_batch_free(&s->fixed);
    zg_pricer_free(&s->pr);
    free(s);
    return st;
}
