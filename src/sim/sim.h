// sim — `zellige simulate` as a library: plans many seeded batches of the paper's image+video
// mixes under several placement policies with the same prices (the analytic cost model) and
// compares them per (mix, policy) cell. All numbers are modelled. The CLI and the Python binding
// call zg_sim_run, then print (zg_sim_print), serialise (zg_sim_to_json) or write the HTML
// report (zg_sim_write_report) of the same result.
//
// May include: planner, zellige, report, plan, cost, topo, workload, model, core.
#ifndef ZG_SIM_H
#define ZG_SIM_H

#include "plan/plan.h"

#define ZG_SIM_MAX_MIX 16
#define ZG_SIM_MAX_POL 12
#define ZG_SIM_MAX_LAYOUTS 256

typedef struct zg_sim_opts {
    const char *model;          // preset or JSON file (default "wan2.1-1.3b")
    const char *cluster;        // preset or JSON file (default "16xA800")
    const char *mixes;          // comma list of V35..V60, or "all" (default "all")
    const char *policies;       // comma list (default "zellige,knapformer,megatron,usp,
                                // adaptive,dp,static")
    int64_t tokens_per_rank;    // per step (default 350000)
    int32_t video_seconds;      // 10 or 15 (default 15)
    int64_t steps;              // batches per mix (default 3)
    uint64_t seed;              // workload and planner seed (default 1)
    const char *bags;           // KnapFormer layout; NULL: the best of every layout with at most 3
                                // distinct bag sizes, chosen per mix (fewest failures, then fewest
                                // plans over the memory cap, then lowest mean makespan)
    int32_t knap_ignore_memory; // 1: choose KnapFormer's layout by makespan alone
    double gamma;               // KnapFormer attention weight (default 1.0)
    double time_limit_s;        // per joint solve (default 10)
    const char *family;         // rank sets: node | aligned | sliding (default "node")
    const char *device_row;     // measured device row file (zellige profile-device) for the
                                // cluster's device; NULL: the built-in row
    zg_opt_tokens max_seqlen_per_rank; // megatron's knob; absent (default): per batch the
                                       // largest that fits memory (policy_megatron.c)
    // Called after every (mix, policy, layout) is planned (may be NULL).
    void (*progress)(void *ctx, int64_t done, int64_t total);
    void *progress_ctx;
} zg_sim_opts;
void zg_sim_opts_default(zg_sim_opts *o);

// One (mix, policy) cell: sums over the steps that planned (ok), so means are sum / ok.
typedef struct zg_sim_cell {
    double makespan_sum, balance_sum, comm_sum, plan_ms_sum;
    int64_t ok, failed;
    int64_t over_cap;    // plans over the memory cap (knapformer only: it ignores memory; such a
                         // cell is shown, never a speedup's reference; docs/planners.md)
    char over_cap_why[256]; // the first such plan's ranks, peaks and the cap (zg_plan_over_cap_describe)
    double peak_mem_max; // bytes
    int64_t communicators; // NCCL communicators the policy needs on this world (zg_comm_count
                           // _policy; static, usp: the most of any step's plan); -1: unknown
    int32_t comm_per_rank; // the most any rank is a member of
    double comm_bytes_per_rank; // their per-GPU memory at the cited figures (plan.h)
    char bags[128];      // knapformer: the layout used
    char first_err[256]; // the first failure's message
} zg_sim_cell;
// Mean makespan (s) of a cell; NaN when no step planned.
double zg_sim_cell_makespan(const zg_sim_cell *c);

typedef struct zg_sim_result {
    zg_model model;
    zg_cluster cluster;
    int64_t tokens_per_rank, steps;
    int32_t video_seconds;
    int32_t n_mix, n_pol;
    char mixes[ZG_SIM_MAX_MIX][16];
    char policies[ZG_SIM_MAX_POL][32];
    int32_t knap_index;   // the knapformer column, -1 when absent
    zg_sim_cell *cells;   // n_mix x n_pol, cells[m * n_pol + p]
    int32_t gantt_mix;    // V50 when run, else the first mix
    zg_plan *gantt_plans; // n_pol: step 0 of the Gantt mix (n == 0 when it failed)
    zg_batch gantt_batch; // that step's batch
    double mem_cap;       // the memory cap per rank (zg_cluster_mem_cap_bytes), bytes
    double mem_base;      // the pricer's base per rank (inside every peak), bytes
    zg_cost_device dev;   // the analytic model's device row overrides: the measured row of
                          // opts.device_row, or all 0 (the built-in row)
    char device_row[256]; // the row's file ("" when none)
} zg_sim_result;

// Plans opts->steps batches of every mix under every policy. Fails (nothing allocated) on bad
// options, unknown names, or out of memory; a policy that fails to plan a step is counted in
// its cell (failed, first_err), not an error.
zg_status zg_sim_run(const zg_sim_opts *o, zg_sim_result *r, zg_error *err);
// The pricer a result was priced with (the analytic model, default options with r->dev as the
// device row, on r->model and r->cluster): zg_sim_run prices with it and the report splits compute
// from communication with it. Free with zg_pricer_free.
zg_status zg_sim_pricer_init(const zg_sim_result *r, zg_pricer *pr, zg_error *err);
void zg_sim_result_free(zg_sim_result *r);

// The text report: a title line, the memory cap line (printed once), then per mix its table
// (policy, makespan, speed-up over knapformer, max/mean, comm, peak, plan time, failed, over cap),
// each failed policy's first error and each over-cap policy's reason. Speed-ups over a knapformer
// cell with plans over the cap are not given ("-").
zg_status zg_sim_print(const zg_sim_result *r, FILE *f, zg_error *err);
// {"model", "cluster", "tokens_per_rank", "video_seconds", "steps", "mem_cap", "mem_base",
// "mixes": {mix: {policy: {makespan_s, balance, comm_bytes, plan_ms, speedup_vs_knapformer,
// failed, over_cap, over_cap_reason, peak_mem_bytes, bags, first_error, communicators,
// communicators_per_rank,
// communicator_bytes_per_rank}}}} (fields of cells without a plan are left out). NULL on OOM.
cJSON *zg_sim_to_json(const zg_sim_result *r);
// The table of mix m (the columns of zg_sim_print) into t (zg_table_free it, also on failure).
typedef struct zg_table zg_table;
zg_status zg_sim_mix_table(const zg_sim_result *r, int32_t m, zg_table *t, zg_error *err);
// A self-contained HTML page (report.c, docs/cli.md "The HTML report"): a headline (the fastest
// policy that planned every step of the Gantt mix within the memory cap, its makespan and
// speed-up over each other policy, the setting and the cap), the Gantt of every policy's first
// step of that mix on one shared time axis with their legend, every failure's and over-cap
// cell's reason, then per mix the table and the makespan bars. Written atomically.
zg_status zg_sim_write_report(const zg_sim_result *r, const char *path, zg_error *err);

#endif
