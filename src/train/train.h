// train — the distributed DiT training step: per step a placement plan decides where every
// sequence's tokens live; tokens go from the data loader's layout to the plan's layout in one
// all-to-all(v) (engine dispatch), the DiT runs forward/backward with self-attention through
// the coalesced attention engine, gradients are all-reduced in a fixed order, AdamW updates.
// Loss and gradients equal the single-process step over the same batch (fp32 tolerance).
//
// Data: synthetic latents, deterministic in (seed, sample id): each sample is a latent grid
// (frames x rows x cols) of patch vectors x0 and noise, a timestep t and text rows. Rectified
// flow: x_t = (1 - t) x0 + t noise, target v = noise - x0. Any rank can regenerate any sample's
// per-sample conditioning (t, text) from its id; the per-token data travels by dispatch.
//
// May include: planner zellige engine dit comm kernels plan cost topo workload model core.
#ifndef ZG_TRAIN_H
#define ZG_TRAIN_H

#include "dit/dit.h"
#include "engine/engine.h"

typedef struct zg_train_opts {
    int32_t act_ckpt;   // activation checkpointing per block
    uint64_t seed;      // parameters and data
    zg_adamw adam;
    int32_t use_ref_kernels;  // engine uses reference kernels (checks)
} zg_train_opts;
void zg_train_opts_default(zg_train_opts *o);

// Latent grid of a sequence: from frames/height/width via the model's token math when they give
// exactly `tokens`, else a (1, 1, tokens) strip. (frames, rows, cols) in latent patches.
void zg_train_seq_grid(const zg_model *m, const zg_seq *s, int32_t grid[3]);

// Per-step statistics (identical on every rank after the step's reductions).
typedef struct zg_train_stats {
    double loss;               // global mean loss of the step
    double step_s;             // wall time of this rank's step
    double slowest_s, fastest_s;  // max / min step time over ranks
    double attn_s;             // this rank's time inside the attention engine
    int64_t peak_bytes;        // max over ranks: tracked activations + params/grads/Adam
    int64_t local_tokens;      // this rank's tokens in the plan layout
    uint64_t bytes_sent;       // this rank's communication volume in the step
} zg_train_stats;

typedef struct zg_trainer {
    zg_model model;
    zg_train_opts opts;
    zg_comm *comm;
    zg_dit_params params, grads, adam_m, adam_v;
    float *flat;     // params | grads | m | v in one allocation (4 * n_params)
    int64_t step;    // completed steps
} zg_trainer;

// Initialises parameters from opts.seed (identical on every rank).
zg_status zg_trainer_init(zg_trainer *tr, const zg_model *m, zg_comm *comm,
                          const zg_train_opts *opts, zg_error *err);
void zg_trainer_free(zg_trainer *tr);

// One step on `batch` placed by `plan` (same on every rank). Sequences' origin ranks are the
// loader layout (origin_rank < 0 -> sequence index mod world). Collective over the world.
zg_status zg_trainer_step(zg_trainer *tr, const zg_batch *batch, const zg_plan *plan,
                          zg_train_stats *st, zg_error *err);

// A single-process reference step for `batch` (every sequence whole, no communication).
zg_status zg_trainer_step_local(zg_trainer *tr, const zg_batch *batch, zg_train_stats *st,
                                zg_error *err);

// Checkpoints: params, Adam moments, step counter, options. Written atomically (temp + rename)
// by rank 0; every rank loads. Binary, little-endian, versioned header with the model's name and
// parameter count (mismatches are rejected with a message).
zg_status zg_trainer_save(const zg_trainer *tr, const char *path, zg_error *err);
zg_status zg_trainer_load(zg_trainer *tr, const char *path, zg_error *err);

// A small synthetic image+video batch for CPU training runs: `n_ranks` loaders each producing
// about tokens_per_rank tokens; videos (share video_share of tokens) of 2..4 latent frames of
// 6x8..12x16 patches, images of 4x4..8x12 patches. Deterministic in (seed, step).
zg_status zg_train_synthetic_batch(const zg_model *m, int32_t n_ranks, int64_t tokens_per_rank,
                                   double video_share, uint64_t seed, int64_t step,
                                   zg_batch *out, zg_error *err);

// ---- a training run: what `zellige train` does ----------------------------------------------
// Every step: a batch (synthetic, or one fixed batch file every step), a plan from each policy
// (identical on every rank: planners are deterministic) and, unless plan_only, one training step
// per policy with its own trainer (same seed), so step times compare on the same batches
// (docs/training.md).
#define ZG_TRAIN_MAX_POL 8

typedef struct zg_train_run_result zg_train_run_result;

// One (step, policy) that planned (and trained): what a caller prints per step.
typedef struct zg_train_step_info {
    int64_t step;                // global step (a resumed run continues the count)
    int32_t policy;              // index into r->pol
    const zg_batch *batch;
    const zg_plan *plan;
    const zg_plan_stats *plan_stats;
    const zg_train_stats *train; // zeros with plan_only
    double predicted_s;          // plan makespan + the profile's host overhead
} zg_train_step_info;

typedef struct zg_train_run_opts {
    const char *model;        // preset or JSON (default "tiny"); arch wan only
    const char *policies;     // comma list of planners (default "zellige")
    const char *cluster;      // NULL: cpu:<ranks>; plan_only with a profile: the profile's
    const char *profile;      // measured price table (zellige profile); NULL: analytic prices
    const char *device_row;   // analytic prices with this measured device row (zellige
                              // profile-device) of the cluster's device; not with profile
    const char *batch;        // train on this batch file every step; NULL: synthetic batches
    const char *mix;          // the paper's mix (V35..V60) drawn every step (zg_workload_mix_
                              // divided at mix_load per rank, mix_divisor); NULL: synthetic
    int64_t mix_load;         // the mix's paper-scale load in tokens per rank (default 350K)
    int32_t mix_divisor;      // every sequence's tokens / this (default 1: the paper's sizes)
    int32_t video_seconds;    // the mix's video length: 5, 10 or 15 (default 15)
    const char *save;         // checkpoint after the last step (first policy's trainer)
    const char *resume;       // start every policy's trainer from this checkpoint
    const char *bags;         // KnapFormer layout; NULL: the uniform g{G}n{N/G} with the lowest
                              // predicted makespan on the first batch
    int64_t tokens_per_rank;  // synthetic batch load (default 512)
    double video_share;       // token share of videos, 0..1 (default 0.5)
    int64_t steps;            // default 10
    int32_t act_ckpt;         // 0 | 1 (default 1)
    double lr;                // AdamW learning rate, [0, 1e3) (default 1e-3)
    int32_t max_degree;       // planner's largest degree (0: all ranks)
    uint64_t seed;            // data and parameter seed (default 1)
    int32_t plan_only;        // only plan: no trainers, no communication
    // Called on every rank (may be NULL): once after set-up, then after every (step, policy).
    void (*on_start)(void *ctx, const zg_train_run_result *r);
    void (*on_step)(void *ctx, const zg_train_run_result *r, const zg_train_step_info *s);
    void *ctx;
} zg_train_run_opts;
void zg_train_run_opts_default(zg_train_run_opts *o);
// The generated batch of global step `step` (o->batch unset): the shrunk paper mix when o->mix
// is set, else the synthetic batch (zg_train_synthetic_batch); n_ranks loaders. Deterministic
// in (o->seed, step).
zg_status zg_train_run_batch(const zg_train_run_opts *o, const zg_model *m, int32_t n_ranks,
                             int64_t step, zg_batch *out, zg_error *err);

typedef struct zg_train_run_policy {
    char name[32];
    double *times;     // per step: measured makespan (slowest rank); predicted with plan_only
    double *pred;      // per step: predicted makespan
    double last_loss;
    int64_t n_ok;      // steps done
} zg_train_run_policy;

struct zg_train_run_result {
    zg_model model;
    zg_cluster cluster;
    int32_t ranks;          // ranks trained on (plan_only: the cluster's)
    int64_t n_params;
    int64_t step0, steps;   // first global step; steps run
    char bags[128];         // KnapFormer's layout ("" when no knapformer)
    double overhead_s;      // the profile's host overhead (0: analytic)
    int32_t n_pol;
    zg_train_run_policy pol[ZG_TRAIN_MAX_POL];
};

// Runs the steps. Collective over comm unless plan_only (then comm is only asked its size).
// On failure r keeps the steps done so far (free it either way).
zg_status zg_train_run(const zg_train_run_opts *o, zg_comm *comm, zg_train_run_result *r,
                       zg_error *err);
void zg_train_run_result_free(zg_train_run_result *r);

#endif
