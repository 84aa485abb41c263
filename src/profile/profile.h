// profile — the hardware profiler and the fidelity harness (docs/profiler.md).
//
// Profiler: for every (bucket, configuration) it runs real training steps (zg_trainer_step:
// dispatch, DiT forward/backward with attention through the coalesced engine, gradient
// all-reduce, AdamW) of a plan that places ONE sequence of that bucket with that config on
// ranks 0..λ-1 (other ranks idle), and an EMPTY plan (no sequence) as the baseline. Steps are
// measured in rounds (every item once per round, after warm-up rounds), so slow drifts of a
// shared machine hit every item alike. Per round, price = step makespan (slowest rank) of the
// item - makespan of the empty plan in the same round; the stored price is the median over
// rounds. The empty plan's median makespan is the placement-independent host overhead (engine
// set-up, gradient all-reduce, AdamW, statistics), stored once as overhead_s.
// Memory: the tracked peak of every measured run plus calibration runs with several sequences
// per rank fit base + per_token * local tokens + per_text * text rows + per_sample * samples
// (least squares). The result is a zg_cost_table (cost.h) written as the profile JSON.
//
// Fidelity: a rotation design of mixed plans (each holds one video of each resolution of a
// block, with configurations rotated so every (video bucket x configuration) pair runs once
// per block, plus whole images packed greedily) and corner plans with everything whole, run for
// real; predicted makespan = table makespan + overhead_s, predicted peak = base + Σ memory.
//
// Everything collective takes the world communicator; every rank must call with equal inputs.
//
// May include: train planner zellige engine dit comm kernels plan cost topo workload model core.
#ifndef ZG_PROFILE_H
#define ZG_PROFILE_H

#include "train/train.h"

// ---- catalogs ---------------------------------------------------------------------------------
// The CPU catalog (small buckets for this machine; pixel sizes under the model's token math):
// images 64x64, 128x128, 192x256; videos 128x192, 192x256, 256x320 at 5 and 9 frames
// (2 and 3 latent frames). Names "64p-img", ..., "128p-5f", "128p-9f", ...
zg_status zg_profile_cpu_catalog(const zg_model *m, zg_catalog *c, zg_error *err);
// "cpu" (above), "default" (zg_catalog_default), "mix:SECONDS:DIVISOR" (zg_catalog_mix: the
// buckets of a paper mix shrunk for `zellige train --mix ... --mix-divisor`) or a JSON file
// {"buckets":[{"name":"a","kind":"video","frames":5,"height":128,"width":192}, ...]}
// (tokens computed from the model; "tokens" may be given instead of frames/height/width).
zg_status zg_profile_catalog_load(const char *spec, const zg_model *m, zg_catalog *c,
                                  zg_error *err);

// Sets OpenMP and OpenBLAS threads per rank (n <= 0: 1 when world > 1, else leave as is).
void zg_profile_set_threads(int32_t n, int32_t world);

// ---- measurement rounds ----------------------------------------------------------------------
// Clocks: WALL = step makespan in wall time (slowest rank, as zg_trainer_step reports it);
// CPU = the largest per-rank process CPU time of the step (CLOCK_PROCESS_CPUTIME_ID around
// zg_trainer_step, max over ranks). On a dedicated machine with busy-polling MPI the two agree;
// on a shared machine CPU time leaves out the time other users' processes held the core.
typedef enum { ZG_PROFILE_CLOCK_WALL = 0, ZG_PROFILE_CLOCK_CPU } zg_profile_clock;
const char *zg_profile_clock_name(zg_profile_clock c);
zg_status zg_profile_clock_parse(const char *s, zg_profile_clock *c, zg_error *err);

// One item = a batch and a plan for it.
typedef struct zg_profile_item {
    zg_batch batch;
    zg_plan plan;
} zg_profile_item;

// Runs `warmup` unmeasured rounds then `reps` measured rounds; in each round every item runs
// one trainer step. times[i * reps + r] = makespan of item i in round r under `clock`;
// peaks[i] = the tracked peak bytes (max over ranks) of item i's last run. Collective.
// progress(ctx, done, total) is called on every rank after each step (may be NULL).
typedef void (*zg_profile_progress_fn)(void *ctx, int64_t done, int64_t total);
zg_status zg_profile_run_rounds(zg_trainer *tr, zg_profile_item *items, int32_t n,
                                int32_t warmup, int32_t reps, zg_profile_clock clock,
                                double *times, double *peaks,
                                zg_profile_progress_fn progress, void *pctx, zg_error *err);
// One unmeasured step of the item with the most tokens (*primed = its index; may be NULL), then
// one of item 0, the first measured (the profiler's empty plan): what rounds without a warm-up
// round need first, or the trainer's one-time costs (buffers grown to the largest step and first
// touched, the engine's first exchanges) land on the first items measured. Collective.
zg_status zg_profile_prime(zg_trainer *tr, zg_profile_item *items, int32_t n, int32_t *primed,
                           zg_error *err);

// Median of n values (copies; n >= 1).
double zg_profile_median(const double *v, int32_t n);
// How rounds are summarised: MEDIAN (default) or MIN. On a shared machine interference only
// adds time, so the minimum over rounds estimates the uncontended step (as benchmark tools do).
typedef enum { ZG_PROFILE_STAT_MEDIAN = 0, ZG_PROFILE_STAT_MIN } zg_profile_stat;
double zg_profile_stat_of(const double *v, int32_t n, zg_profile_stat s);  // n >= 1
const char *zg_profile_stat_name(zg_profile_stat s);
zg_status zg_profile_stat_parse(const char *str, zg_profile_stat *s, zg_error *err);

// ---- prices in context (calib.c) -------------------------------------------------------------
// Non-negative least squares: x minimising |A x - y|^2 with x_j >= 0 unless free_col[j]
// (free_col may be NULL). A is rows x cols, row-major. Deterministic; an all-zero column gets 0.
zg_status zg_profile_nnls(const double *A, const double *y, int32_t rows, int32_t cols,
                          const uint8_t *free_col, double *x, zg_error *err);

// The mixed calibration design. Unknowns: every legal (bucket, config) pair of degree <= world.
// Each plan holds several sequences: 1..`splits` split ones (dealt from a shuffled deck of the
// split unknowns, on ranks 0..λ-1), 0..`videos` whole videos (deck) and 0..`images` whole
// images (random) on rank 0, each whole one copied onto each other rank with probability
// `mirror` (default 1: every rank computes rank 0's whole sequences too, the balanced context
// planners aim for). Every other rank's work is a sub-multiset of rank 0's, so rank 0 is the
// critical rank and the makespan is linear in rank 0's counts:
//   makespan = fixed + Σ_u counts[u] · price[u].
typedef struct zg_calib_opts {
    int32_t plans;        // calibration plans (0 = 3 x unknowns; the profiler's HYBRID: max(24, U))
    int32_t images;       // at most this many whole images on rank 0 per plan (default 12)
    int32_t videos;       // at most this many whole videos on rank 0 (default 2)
    int32_t splits;       // at most this many split sequences (default 3)
    int32_t min_splits;   // at least this many (default 1; the profiler's HYBRID 0), <= splits
    double mirror;        // probability of a copy of a whole sequence on each other rank (1)
    int32_t text_tokens;  // text rows (0 = the model's text_len)
    uint64_t seed;        // design seed (default 1; the fidelity design uses other streams)
} zg_calib_opts;
void zg_calib_opts_default(zg_calib_opts *o);

typedef struct zg_calib {
    int32_t n_plans, n_unknowns;
    zg_profile_item *items;  // n_plans
    double *counts;          // n_plans x n_unknowns: rank 0's count of each unknown
    int32_t *unk_bucket;     // catalog index of unknown u
    zg_config *unk_cfg;      // configuration of unknown u
} zg_calib;
zg_status zg_calib_design(const zg_model *m, int32_t world, const zg_catalog *cat,
                          const zg_config *cfgs, int32_t nc, const zg_calib_opts *o,
                          zg_calib *out, zg_error *err);
void zg_calib_free(zg_calib *c);
// Fits fixed (>= 0) and prices[n_unknowns] (>= 0) to times[n_plans] by NNLS; rmse (s) and the
// largest relative residual of the fit (may be NULL).
zg_status zg_calib_fit(const zg_calib *c, const double *times, double *fixed, double *prices,
                       double *rmse, double *max_rel, zg_error *err);
// The hybrid method: per-sequence prices base[u] measured one sequence at a time, corrected in
// context by four coefficients fitted on the calibration plans (least squares, fixed >= 0):
//   makespan = fixed + a · Σ_u count_u base_u + b_whole · n_whole + b_split · n_split
// (n_whole / n_split: rank 0's whole / split sequences). prices[u] = max(0, a base_u + b_class);
// coef = {a, b_whole, b_split}; rmse / max_rel are those of the stored prices (may be NULL).
zg_status zg_calib_fit_hybrid(const zg_calib *c, const double *times, const double *base,
                              double *fixed, double coef[3], double *prices, double *rmse,
                              double *max_rel, zg_error *err);

// ---- profiler -----------------------------------------------------------------------------------
// SINGLE: one sequence per step, price = its step minus the same round's empty step (the
// sequence's price in isolation). MIXED: prices in context, fitted over mixed calibration plans
// (zg_calib_fit, one price per pair); overhead_s = the fitted fixed time of a non-empty step.
// HYBRID: the SINGLE prices, corrected in context by zg_calib_fit_hybrid (4 coefficients fitted
// on the calibration plans, so few plans suffice and the per-pair prices keep the precision of
// direct measurement).
typedef enum { ZG_PROFILE_MIXED = 0, ZG_PROFILE_SINGLE, ZG_PROFILE_HYBRID } zg_profile_method;
const char *zg_profile_method_name(zg_profile_method m);
zg_status zg_profile_method_parse(const char *s, zg_profile_method *m, zg_error *err);

typedef struct zg_profile_opts {
    int32_t warmup;       // warm-up rounds (default 1)
    int32_t reps;         // measured rounds (default 5)
    int32_t max_degree;   // largest degree measured (0 = world size)
    int32_t act_ckpt;     // activation checkpointing in the measured steps (default 1)
    int32_t text_tokens;  // text rows of profiled sequences (0 = model text_len)
    uint64_t seed;        // trainer seed (default 1)
    zg_profile_clock clock;  // default WALL
    zg_profile_method method;  // default HYBRID
    zg_profile_stat stat;      // summary of rounds (default MEDIAN)
    zg_calib_opts calib;       // the MIXED design (plans, images, ...)
    zg_profile_progress_fn progress;
    void *progress_ctx;
} zg_profile_opts;
void zg_profile_opts_default(zg_profile_opts *o);

// Measures every (bucket, legal config of degree <= max_degree) pair; fills *out (model,
// cluster name, world size, overhead, prices, memory fit, "machine" and "settings" in extra).
zg_status zg_profile_measure(zg_comm *comm, const zg_model *m, const zg_cluster *cl,
                             const zg_catalog *cat, const zg_profile_opts *o,
                             zg_cost_table *out, zg_error *err);

// Machine description: cpu model, logical cores, world size, UTC date, `git describe` when
// available, OpenBLAS/OpenMP thread counts. Never fails (unknown fields are "unknown").
cJSON *zg_profile_machine_json(int32_t world_size);

// Memory calibration: one observation per run (busiest rank's local tokens, text rows and
// samples, and its tracked peak). Fits the coefficients of t (least squares; a feature that
// does not vary is dropped and its coefficient set to 0) and t->mem_fit_max_err.
typedef struct zg_mem_obs {
    double tokens, text_rows, samples, peak;
} zg_mem_obs;
zg_status zg_profile_fit_memory(const zg_mem_obs *obs, int32_t n, zg_cost_table *t,
                                zg_error *err);

// ---- fidelity -------------------------------------------------------------------------------------
typedef struct zg_fidelity_plan {
    char name[64];        // "mixed-03", "corner-whole-1"
    zg_profile_item item;
    double pred_time;     // table makespan + overhead (s)
    double pred_mem;      // max over ranks: base + Σ memory prices (bytes)
    double meas_time;     // median makespan over rounds (s)
    double meas_lo, meas_hi;
    double meas_mem;      // tracked peak, max over ranks (bytes)
} zg_fidelity_plan;

typedef struct zg_fidelity_opts {
    int32_t images;       // whole images per plan (default 12)
    int32_t min_mixed;    // at least this many mixed plans (default 18)
    int32_t corners;      // corner plans (default 3)
    uint64_t seed;        // image draw (default 1)
} zg_fidelity_opts;
void zg_fidelity_opts_default(zg_fidelity_opts *o);

// Builds the plans (not collective; deterministic). Video buckets of the catalog are grouped by
// frames (a block per duration); configs are the table's measured configs of degree <= world.
// Needs at least one image and one video bucket.
zg_status zg_fidelity_design(const zg_model *m, const zg_cluster *cl, const zg_catalog *cat,
                             const zg_pricer *table, double overhead_s,
                             const zg_fidelity_opts *o, zg_fidelity_plan **plans, int32_t *n,
                             zg_error *err);
void zg_fidelity_free(zg_fidelity_plan *plans, int32_t n);

typedef struct zg_fidelity_summary {
    int32_t plans;
    double mae_time, mape_time, max_ape_time;  // s, %, %
    double mape_time_net;  // % on (makespan - overhead): the placement-dependent part only
    double mae_mem, mape_mem, max_ape_mem;     // bytes, %, %
} zg_fidelity_summary;
void zg_fidelity_summarize(const zg_fidelity_plan *plans, int32_t n, double overhead_s,
                           zg_fidelity_summary *s);
// The measurement's own repeatability (the noise floor of any prediction): mean over items of
// |stat(odd rounds) - stat(even rounds)| / stat(all rounds), in %. times[i * reps + r].
// 0 when reps < 2.
double zg_fidelity_repeat_pct(const double *times, int32_t n, int32_t reps, zg_profile_stat st);

// ---- runs: what `zellige profile` and `zellige fidelity` do (run.c) ---------------------------
// Options mirror the CLI; clock / method / stat are names ("wall", "hybrid", "median", ...).
// Both are collective over the world communicator; files are written atomically by rank 0.
typedef struct zg_profile_run_opts {
    const char *model;     // preset or JSON (default "tiny")
    const char *cluster;   // name to record (NULL: cpu:<ranks>); must have <ranks> ranks
    const char *catalog;   // "cpu" (default) | "default" | FILE.json
    const char *out;       // profile JSON to write (NULL: not written)
    int32_t warmup, reps;  // rounds (default 1 and 6)
    int32_t max_degree;    // largest degree measured (0: all ranks)
    int32_t text_tokens;   // text rows of profiled sequences (0: the model's text_len)
    int32_t act_ckpt;      // default 1
    uint64_t seed;         // parameter and design seed (default 1)
    const char *clock;     // "wall" (default) | "cpu"
    const char *method;    // "hybrid" (default) | "mixed" | "single"
    const char *stat;      // "median" (default) | "min"
    zg_calib_opts calib;   // calibration plans (plans, images, videos, splits, mirror)
    zg_profile_progress_fn progress;
    void *progress_ctx;
} zg_profile_run_opts;
void zg_profile_run_opts_default(zg_profile_run_opts *o);

typedef struct zg_profile_run_result {
    zg_model model;
    zg_cluster cluster;
    zg_profile_clock clock;
    zg_profile_method method;
    zg_profile_stat stat;
    zg_cost_table table;   // the measured profile
    double elapsed_s;      // measurement and writing
} zg_profile_run_result;
zg_status zg_profile_run(const zg_profile_run_opts *o, zg_comm *comm, zg_profile_run_result *r,
                         zg_error *err);
void zg_profile_run_result_free(zg_profile_run_result *r);

typedef struct zg_fidelity_run_opts {
    const char *profile;   // measured profile (required)
    const char *model;     // NULL: the profile's model_spec
    const char *cluster;   // NULL: cpu:<ranks>
    const char *catalog;   // "cpu" (default) | "default" | FILE.json (the profiled catalog)
    const char *out;       // per-plan results JSON to write (NULL: not written)
    int32_t warmup, reps;  // rounds (default 1 and 7)
    const char *clock;     // "wall" | "cpu" (NULL: the profile's)
    const char *stat;      // "median" | "min" (NULL: the profile's)
    zg_fidelity_opts design;  // images, min_mixed, corners, seed
    zg_profile_progress_fn progress;
    void *progress_ctx;
} zg_fidelity_run_opts;
void zg_fidelity_run_opts_default(zg_fidelity_run_opts *o);

typedef struct zg_fidelity_run_result {
    zg_model model;
    int32_t world_size;
    zg_profile_clock clock;
    zg_profile_stat stat;
    double overhead_s;         // the profile's host overhead
    int32_t n, reps;
    zg_fidelity_plan *plans;   // n, measured
    double *times;             // n x reps: times[i * reps + r]
    zg_fidelity_summary sum;
    double repeat_pct;         // zg_fidelity_repeat_pct of the rounds
    double elapsed_s;          // the measured rounds
} zg_fidelity_run_result;
zg_status zg_fidelity_run(const zg_fidelity_run_opts *o, zg_comm *comm, zg_fidelity_run_result *r,
                          zg_error *err);
void zg_fidelity_run_result_free(zg_fidelity_run_result *r);
// {"plans", "mape_time_pct", "mape_mem_pct", "mae_time_s", "mae_mem_bytes", "max_ape_time_pct",
// "max_ape_mem_pct", "mape_time_net_pct", "repeat_time_pct", "overhead_s", "clock", "stat",
// "world_size", "reps", "model"} and, with per_plan, "per_plan": [{name, sequences, split,
// pred_s, meas_s, meas_lo_s, meas_hi_s, meas_rounds_s, pred_mem, meas_mem, plan}].
cJSON *zg_fidelity_run_json(const zg_fidelity_run_result *r, int per_plan);

// ---- measured device rows (device.c; docs/profiler.md "Device rows") -------------------------
// The analytic model's per-device row (zg_cost_device) from the real kernels on one device:
// for the model's attention shape (n_heads x head_dim, one whole sequence of n tokens) and its
// DiT block's linear layers (forward Y = X W, backward dX = dY W^T and dW = X^T dY), at a list of
// local token counts n, the achieved FLOP/s with FLOPs counted as src/cost/analytic.c counts
// them: attention forward 4 n^2 H D, backward 2.5x that; GEMMs 3 x 2 n K N summed over the
// block's layers (their forward sum is the model's per-layer linear FLOPs at n tokens). Then
// eff and half of rate(n) = peak * eff * n / (n + half) are fitted per family (attention
// forward and backward share one half, as in the row) relative to the cluster device's peak.
// Backends: "cpu" (the fast CPU attention kernels and OpenBLAS SGEMM, fp32, `threads` threads)
// and "cuda" (the bf16 tensor-core attention kernels of src/kernels/cuda and cuBLAS bf16 GemmEx
// with fp32 accumulation; ZG_ERR_UNSUPPORTED naming the reason in a build without CUDA or on a
// machine without a GPU). Times are wall clock around windows of back-to-back calls (synchronised
// on the GPU), at least min_window_s long; the per-call time is the stat over `reps` windows.

#define ZG_DEVROW_MAX_SAMPLES 32
#define ZG_DEVROW_MAX_GEMMS 8

// One linear layer of a block: X (tokens, k) @ W (k, n).
typedef struct zg_devrow_gemm {
    char name[16];
    int32_t k, n;
} zg_devrow_gemm;
// The block's linear layers per token of model m (text K/V projections of cross-attention are
// priced on text rows, not local tokens, and are left out): Wan q,k,v,o, cross q,o, ffn up and
// down; MMDiT/Hunyuan q,k,v,o, mlp up, down; plain q,k,v,o, SwiGLU gate, up, down.
int32_t zg_devrow_gemms(const zg_model *m, zg_devrow_gemm *g);

// eff and half fitted to rate(n) = peak * eff * n / (n + half): weighted least squares on the
// relative residual (eff * g(n) - y) / y with y = rate / peak (a point's error in rate is its
// error in time), half over [0, 1e9] (a log grid, then golden section around the best point),
// eff in closed form for each half and capped at 1 (no device runs above its peak; without the
// cap, samples on the curve's linear part fit any large half). n_fam families (1 or 2) share the
// half; rates[f][i] is family f's rate at tokens[i]. Deterministic. Needs >= 2 distinct token
// counts and positive rates. max_rel[f] = the largest |fit - rate| / rate of family f.
zg_status zg_devrow_fit(const double *tokens, const double *const *rates, int32_t n_fam, int32_t n,
                        double peak, double *eff, double *half, double *max_rel, zg_error *err);

typedef struct zg_devrow_sample {
    int64_t tokens;
    double attn_fwd_s, attn_bwd_s, gemm_s;             // seconds per call (stat over windows)
    double attn_fwd_flops, attn_bwd_flops, gemm_flops; // the cost model's FLOPs per call
} zg_devrow_sample;

typedef struct zg_devrow_opts {
    const char *model;     // preset or JSON (default "wan2.1-1.3b")
    const char *cluster;   // the device and peak the row is for (default: cpu:1 for cpu; 1x<GPU>
                           // for cuda, the GPU's name matched against the device table)
    const char *backend;   // "cpu" (default) | "cuda"
    const int64_t *tokens; // local token counts (NULL: the backend's list, see device.c)
    int32_t n_tokens;
    int32_t warmup, reps; // unmeasured calls per point (< 0: cpu 1, cuda 2); windows (3)
    const char *stat;     // "median" (default) | "min"
    double min_window_s;  // shortest timed window (default 0.02 cpu, 0.005 cuda)
    int32_t threads;      // cpu: OpenMP and OpenBLAS threads (default 1: a cpu:N rank's core)
    int32_t device;       // cuda: device index (default 0)
    uint64_t seed;        // input values (default 1)
    // Called after every measured token count (may be NULL).
    void (*on_sample)(void *ctx, const zg_devrow_sample *s, int32_t i, int32_t n, double peak);
    void *ctx;
} zg_devrow_opts;
void zg_devrow_opts_default(zg_devrow_opts *o);

typedef struct zg_devrow_result {
    zg_model model;
    zg_cluster cluster;
    char backend[8], dtype[8], attn_kernel[16];
    char gpu[160];          // cuda: the device's name, SMs and memory ("" for cpu)
    zg_cost_device row;     // fitted; framework_bytes is the built-in row's
    zg_cost_device builtin; // the built-in row of the cluster's device
    double max_rel[3];      // fit residuals: attention fwd, attention bwd, GEMM
    int32_t n;
    zg_devrow_sample s[ZG_DEVROW_MAX_SAMPLES];
    int32_t n_gemms;
    zg_devrow_gemm gemms[ZG_DEVROW_MAX_GEMMS];
    zg_devrow_opts opts; // as run, defaults filled (tokens NULL: the samples hold them)
    double elapsed_s;
} zg_devrow_result;

// Measures and fits. Fails without output on bad options, an unsupported backend (the reason
// named), a cluster whose device does not match the backend or the GPU, or a measured rate
// above the cluster's peak_flops (named with the rate, and what to do).
zg_status zg_devrow_run(const zg_devrow_opts *o, zg_devrow_result *r, zg_error *err);
// The device row file (docs/profiler.md "Device rows"); zg_cost_device_row_from_json reads it.
cJSON *zg_devrow_to_json(const zg_devrow_result *r);

#endif
