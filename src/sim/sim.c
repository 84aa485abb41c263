// sim.c — `zellige simulate` as a library (sim.h): seeded batches of the paper's mixes planned
// under several policies with the same analytic prices; per (mix, policy) cells, the text
// tables and the JSON line (the HTML report: report.c).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan/knapformer.h"
#include "planner/planner.h"
#include "report/report.h"
#include "sim/sim.h"

void zg_sim_opts_default(zg_sim_opts *o) {
    *o = (zg_sim_opts){.model = "wan2.1-1.3b", .cluster = "16xA800", .mixes = "all",
              .policies = "zellige,knapformer,megatron,usp,adaptive,dp,static",
              .tokens_per_rank = 350000, .video_seconds = 15, .steps = 3, .seed = 1, .gamma = 1.0,
              .time_limit_s = 10, .family = "node"};
}

double zg_sim_cell_makespan(const zg_sim_cell *c) {
    return c->ok ? c->makespan_sum / (double)c->ok : NAN;
}

void zg_sim_result_free(zg_sim_result *r) {
    if (!r) return;
    if (r->gantt_plans)
        for (int32_t p = 0; p < r->n_pol; p++)
            zg_plan_free(&r->gantt_plans[p]);
    free(r->gantt_plans);
    free(r->cells);
    zg_batch_free(&r->gantt_batch);
    memset(r, 0, sizeof *r);
    zg_batch_init(&r->gantt_batch);
}

// Splits a comma list into out[max][len]; returns the count, or -1 (err) on a name too long.
static int32_t split_names(const char *list, const char *what, char *out, size_t len, int32_t max,
                           zg_error *err) {
    int32_t n = 0;
    const char *s = list;
    while (*s && n < max) {
        size_t l = strcspn(s, ",");
        if (l >= len) {
            zg_error_set(err, ZG_ERR_INVALID, "%s '%.*s' is too long (at most %zu characters)",
                         what, (int)l, s, len - 1);
            return -1;
        }
        if (l) {
            memcpy(out + (size_t)n * len, s, l);
            out[(size_t)n * len + l] = 0;
            n++;
        }
        s += l;
        if (*s) s++;
    }
    return n;
}

// Checks the options and fills r's names (mixes, policies, knapformer column).
static zg_status check_opts(const zg_sim_opts *o, zg_sim_result *r, zg_error *err) {
    if (o->steps <= 0)
        return zg_error_set(err, ZG_ERR_INVALID, "--steps: '%lld' is out of range (>= 1)",
                            (long long)o->steps);
    if (o->tokens_per_rank <= 0)
        return zg_error_set(err, ZG_ERR_INVALID, "--load: '%lld' is out of range (>= 1)",
                            (long long)o->tokens_per_rank);
    if (o->video_seconds != 10 && o->video_seconds != 15)
        return zg_error_set(err, ZG_ERR_INVALID, "--video-seconds: '%lld' is not one of 10, 15",
                            (long long)o->video_seconds);
    const char *mixes =
        !o->mixes || !strcmp(o->mixes, "all") ? "V35,V40,V45,V50,V55,V60" : o->mixes;
    r->n_mix = split_names(mixes, "mix", r->mixes[0], sizeof r->mixes[0], ZG_SIM_MAX_MIX, err);
    if (r->n_mix < 0) return ZG_ERR_INVALID;
    r->n_pol = split_names(o->policies ? o->policies : "", "policy", r->policies[0],
                           sizeof r->policies[0], ZG_SIM_MAX_POL, err);
    if (r->n_pol < 0) return ZG_ERR_INVALID;
    if (r->n_mix == 0 || r->n_pol == 0)
        return zg_error_set(err, ZG_ERR_INVALID, "no %s given", r->n_mix ? "policy" : "mix");
    r->knap_index = -1;
    for (int32_t p = 0; p < r->n_pol; p++) {
        int known = 0;
        for (const zg_planner_vtable *const *vt = zg_planner_policies(); *vt; vt++)
            if (!strcmp((*vt)->name, r->policies[p])) known = 1;
        if (!known)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "--policies: unknown policy '%s' (zellige, joint, knapformer, "
                                "megatron, usp, adaptive, dp, static)",
                                r->policies[p]);
        if (!strcmp(r->policies[p], "knapformer")) r->knap_index = p;
    }
    return ZG_OK;
}

// The shared inputs of every (mix, policy) run.
typedef struct sim_env {
    const zg_sim_opts *o;
    zg_sim_result *r;
    zg_catalog catalog;
    zg_pricer pricer;
    zg_planner_opts base;
    char (*layouts)[128];
    int32_t n_layouts;
    int64_t done, total;
} sim_env;

// Plans every step of one mix under policy p with layout t (knapformer) into *c; step 0 of the
// Gantt mix goes to *shown.
static void plan_policy(sim_env *e, int32_t m, int32_t p, int32_t t, zg_batch *batches,
                        zg_sim_cell *c, zg_plan *shown) {
    zg_sim_result *r = e->r;
    int knap = p == r->knap_index;
    // KnapFormer never looks at memory: zg_planner_plan returns its plan as the real KnapFormer
    // would place it, marked over_cap when a rank is over the cap; such plans are counted and
    // shown with their reason, and never serve as the speed-up reference (docs/planners.md).
    zg_plan_ctx ctx = {&r->model, &r->cluster, &e->pricer, &e->catalog, e->base};
    if (knap) snprintf(ctx.opts.bags, sizeof ctx.opts.bags, "%.127s", e->layouts[t]);
    zg_planner pl;
    zg_error perr;
    memset(c, 0, sizeof *c);
    c->communicators = -1;
    // communicators: from the policy and world alone, or (static, usp) from each step's plan
    int comm_from_plan = !strcmp(r->policies[p], "static") || !strcmp(r->policies[p], "usp");
    zg_comm_count cc;
    if (!comm_from_plan &&
        !zg_comm_count_policy(r->policies[p], r->cluster.world_size, NULL,
                              knap ? e->layouts[t] : NULL, &cc, &perr))
        c->communicators = cc.total, c->comm_per_rank = cc.per_rank_max,
        c->comm_bytes_per_rank = cc.bytes_per_rank_max;
    if (zg_planner_init(&pl, r->policies[p], &ctx, &perr)) {
        c->failed = r->steps;
        snprintf(c->first_err, sizeof c->first_err, "%.255s", perr.msg);
    } else {
        for (int64_t s = 0; s < r->steps; s++) {
            zg_plan plan;
            zg_plan_init(&plan);
            zg_plan_stats st;
            zg_status ps = zg_planner_plan(&pl, &batches[s], &plan, &perr);
            if (!ps) ps = zg_plan_evaluate(&plan, &batches[s], ctx.pricer, &st, &perr);
            if (ps) {
                if (!c->failed) snprintf(c->first_err, sizeof c->first_err, "%.255s", perr.msg);
                c->failed++;
            } else {
                c->ok++;
                if (comm_from_plan && !zg_comm_count_policy(r->policies[p], r->cluster.world_size,
                                                            &plan, NULL, &cc, &perr) &&
                    cc.total > c->communicators)
                    c->communicators = cc.total, c->comm_per_rank = cc.per_rank_max,
                    c->comm_bytes_per_rank = cc.bytes_per_rank_max;
                c->makespan_sum += st.makespan;
                c->balance_sum += st.balance;
                c->comm_sum += st.comm.allgather + st.comm.alltoall + st.comm.ring;
                c->plan_ms_sum += plan.plan_time_ms;
                if (plan.over_cap && !c->over_cap++)
                    zg_plan_over_cap_describe(&plan, c->over_cap_why, sizeof c->over_cap_why);
                if (st.peak_mem > c->peak_mem_max) c->peak_mem_max = st.peak_mem;
                if (m == r->gantt_mix && s == 0) {
                    *shown = plan; // keep; ownership moves
                    zg_plan_init(&plan);
                }
            }
            zg_plan_free(&plan);
        }
        zg_planner_free(&pl);
    }
    snprintf(c->bags, sizeof c->bags, "%.127s", knap ? e->layouts[t] : "");
}

// 1 when cell c beats the best so far: fewest failures, then (unless memory is ignored) fewest
// plans over the memory cap (a user would not pick a layout that runs out of memory), then the
// lowest mean makespan.
static int better(const zg_sim_cell *c, const zg_sim_cell *best, int ignore_mem) {
    double mean = c->ok ? c->makespan_sum / c->ok : INFINITY;
    double best_mean = best->ok ? best->makespan_sum / best->ok : INFINITY;
    return c->failed < best->failed ||
           (c->failed == best->failed && !ignore_mem && c->over_cap < best->over_cap) ||
           (c->failed == best->failed && (ignore_mem || c->over_cap == best->over_cap) &&
            mean < best_mean);
}

// Every policy (every layout for knapformer) on the steps of mix m.
static zg_status run_mix(sim_env *e, int32_t m, double share, zg_error *err) {
    zg_sim_result *r = e->r;
    zg_mix_spec spec = {share, r->tokens_per_rank, r->video_seconds, r->cluster.world_size,
                        e->o->seed};
    zg_batch *batches = zg_calloc((size_t)r->steps, sizeof *batches, err);
    if (!batches) return ZG_ERR_NOMEM;
    zg_status st = ZG_OK;
    for (int64_t s = 0; s < r->steps; s++)
        zg_batch_init(&batches[s]);
    for (int64_t s = 0; s < r->steps && !st; s++)
        st = zg_workload_mix(&r->model, &spec, s, &batches[s], err);
    if (!st && m == r->gantt_mix)
        for (int64_t i = 0; i < batches[0].n && !st; i++)
            st = zg_batch_push(&r->gantt_batch, &batches[0].seqs[i], err);
    for (int32_t p = 0; p < r->n_pol && !st; p++) {
        int32_t n_try = p == r->knap_index ? e->n_layouts : 1;
        zg_sim_cell best, c;
        memset(&best, 0, sizeof best);
        for (int32_t t = 0; t < n_try; t++) {
            zg_plan shown; // step 0 of the Gantt mix under this policy/layout
            zg_plan_init(&shown);
            plan_policy(e, m, p, t, batches, &c, &shown);
            if (t == 0 || better(&c, &best, e->o->knap_ignore_memory)) {
                best = c;
                if (m == r->gantt_mix) {
                    zg_plan_free(&r->gantt_plans[p]);
                    r->gantt_plans[p] = shown;
                    zg_plan_init(&shown);
                }
            }
            zg_plan_free(&shown);
            if (e->o->progress) e->o->progress(e->o->progress_ctx, ++e->done, e->total);
        }
        r->cells[(size_t)m * r->n_pol + p] = best;
    }
    for (int64_t s = 0; s < r->steps; s++)
        zg_batch_free(&batches[s]);
    free(batches);
    return st;
}

zg_status zg_sim_pricer_init(const zg_sim_result *r, zg_pricer *pr, zg_error *err) {
    zg_cost_opts copts;
    zg_cost_opts_default(&copts);
    copts.dev = r->dev;
    return zg_cost_analytic_init(pr, &r->model, &r->cluster, &copts, err);
}

zg_status zg_sim_run(const zg_sim_opts *o, zg_sim_result *r, zg_error *err) {
    memset(r, 0, sizeof *r);
    zg_batch_init(&r->gantt_batch);
    sim_env e;
    memset(&e, 0, sizeof e);
    e.o = o, e.r = r;
    zg_status st = check_opts(o, r, err);
    r->tokens_per_rank = o->tokens_per_rank, r->steps = o->steps;
    r->video_seconds = o->video_seconds;
    if (!st) st = zg_model_load(o->model, &r->model, err);
    if (!st) st = zg_cluster_load(o->cluster, &r->cluster, err);
    if (!st && o->tokens_per_rank > 4000000000LL / r->cluster.world_size) // the mixes' limit
        st = zg_error_set(err, ZG_ERR_INVALID,
                          "--load: '%lld' tokens per rank x %d ranks is over 4000000000 tokens "
                          "per step; give a smaller --load or cluster",
                          (long long)o->tokens_per_rank, r->cluster.world_size);
    if (!st) st = zg_catalog_default(&r->model, &e.catalog, err);
    if (!st && o->device_row) {
        st = zg_cost_device_row_load(o->device_row, r->cluster.device, &r->dev, err);
        if (st) zg_error_prefix(err, "--device-row: ");
        else snprintf(r->device_row, sizeof r->device_row, "%s", o->device_row);
    }
    if (!st) st = zg_sim_pricer_init(r, &e.pricer, err);
    r->mem_cap = st ? 0 : e.pricer.mem_cap;
    r->mem_base = st ? 0 : e.pricer.mem_base;
    double shares[ZG_SIM_MAX_MIX];
    for (int32_t m = 0; m < r->n_mix && !st; m++) {
        st = zg_mix_paper_share(r->mixes[m], &shares[m], err);
        if (st) zg_error_prefix(err, "--mix: ");
    }
    zg_planner_opts_default(&e.base);
    e.base.gamma = o->gamma;
    e.base.time_limit_s = o->time_limit_s;
    e.base.seed = o->seed;
    e.base.max_seqlen_per_rank = o->max_seqlen_per_rank;
    if (!st && !(o->time_limit_s > 0 && o->time_limit_s < 1e9))
        st = zg_error_set(err, ZG_ERR_INVALID,
                          "--time-limit %g: give a positive number of seconds (default 10)",
                          o->time_limit_s);
    if (!st) st = zg_rankset_family_parse(o->family ? o->family : "node", &e.base.family, err);
    if (!st && !(e.layouts = zg_calloc(ZG_SIM_MAX_LAYOUTS, sizeof *e.layouts, err)))
        st = ZG_ERR_NOMEM;
    if (!st && o->bags) { // a bad spec fails here, before any planning
        zg_knap_layout kl;
        int32_t replicas = 0;
        st = zg_knap_layout_parse(o->bags, &kl, err);
        if (!st) st = zg_knap_layout_replicas(&kl, r->cluster.world_size, &replicas, err);
        zg_knap_layout_free(&kl);
        if (st) zg_error_prefix(err, "--bags: ");
    }
    if (!st && o->bags)
        snprintf(e.layouts[e.n_layouts++], 128, "%s", o->bags);
    else if (!st) // KnapFormer's best layout per setting: every layout with <= 3 bag sizes
        e.n_layouts = zg_knap_layouts_enumerate(r->cluster.world_size, r->model.n_heads, 3,
                                                e.layouts, ZG_SIM_MAX_LAYOUTS);
    if (!st) {
        r->cells = zg_calloc((size_t)r->n_mix * (size_t)r->n_pol, sizeof *r->cells, err);
        r->gantt_plans = zg_calloc((size_t)r->n_pol, sizeof *r->gantt_plans, err);
        if (!r->cells || !r->gantt_plans) st = ZG_ERR_NOMEM;
    }
    for (int32_t p = 0; !st && p < r->n_pol; p++)
        zg_plan_init(&r->gantt_plans[p]);
    for (int32_t m = 0; m < r->n_mix; m++)
        if (!strcmp(r->mixes[m], "V50")) r->gantt_mix = m;
    e.total =
        (int64_t)r->n_mix * r->steps * (r->n_pol + (r->knap_index >= 0 ? e.n_layouts - 1 : 0));
    for (int32_t m = 0; m < r->n_mix && !st; m++)
        st = run_mix(&e, m, shares[m], err);
    free(e.layouts);
    zg_pricer_free(&e.pricer);
    zg_catalog_free(&e.catalog);
    if (st) zg_sim_result_free(r);
    return st;
}

// ---- output -------------------------------------------------------------------------------------

// The speed-up reference of a mix's row: knapformer's mean makespan, or NaN when it is absent,
// planned nothing, or has plans over the memory cap (a run that would not finish is no reference).
static double knap_reference(const zg_sim_result *r, const zg_sim_cell *row) {
    if (r->knap_index < 0 || row[r->knap_index].over_cap) return NAN;
    return zg_sim_cell_makespan(&row[r->knap_index]);
}

// "memory cap 76.0 GiB per rank (80.0 GiB x 0.95; base 2.5 GiB in every peak)"
static void cap_line(const zg_sim_result *r, char *buf, size_t n) {
    char c[32], d[32], b[32];
    snprintf(buf, n, "memory cap %s per rank (%s x %.2f; base %s in every peak)",
             zg_fmt_bytes(r->mem_cap, c, sizeof c), zg_fmt_bytes(r->cluster.mem_bytes, d, sizeof d),
             r->cluster.mem_usable_frac, zg_fmt_bytes(r->mem_base, b, sizeof b));
}

// The lines under mix m's table: each failed policy's first error, each over-cap policy's reason.
static void mix_notes(const zg_sim_result *r, int32_t m, FILE *f) {
    char line[640];
    for (int32_t p = 0; p < r->n_pol; p++) {
        const zg_sim_cell *c = &r->cells[(size_t)m * r->n_pol + p];
        for (int k = 0; k < 2; k++) {
            if (k == 0 && c->failed && c->first_err[0])
                snprintf(line, sizeof line, "%s", c->first_err);
            else if (k == 1 && c->over_cap)
                snprintf(line, sizeof line,
                         "%s: %lld of %lld plans over the cap (it ignores memory: the real run "
                         "would run out of memory; no speed-up is taken over it): %s",
                         r->policies[p], (long long)c->over_cap, (long long)r->steps,
                         c->over_cap_why);
            else
                continue;
            fprintf(f, "  %s\n", line);
        }
    }
}

zg_status zg_sim_mix_table(const zg_sim_result *r, int32_t m, zg_table *t, zg_error *err) {
    const char *hdr[] = {"policy",   "makespan s", "vs knapformer", "max/mean", "comm GB",
                         "peak GiB", "plan ms",    "failed",        "over cap"};
    zg_status st = zg_table_init(t, 9, hdr, err);
    const zg_sim_cell *row = r->cells + (size_t)m * r->n_pol;
    double knap = knap_reference(r, row);
    for (int32_t p = 0; p < r->n_pol && !st; p++) {
        const zg_sim_cell *c = &row[p];
        char b[9][64], name[160];
        double ms = zg_sim_cell_makespan(c), ok = (double)(c->ok ? c->ok : 1);
        snprintf(name, sizeof name, "%.20s%s%.127s%s", r->policies[p], c->bags[0] ? " (" : "",
                 c->bags, c->bags[0] ? ")" : "");
        snprintf(b[1], 64, c->ok ? "%.2f" : "-", ms);
        snprintf(b[2], 64, c->ok && isfinite(knap) ? "%.3fx" : "-", knap / ms);
        snprintf(b[3], 64, c->ok ? "%.3f" : "-", c->balance_sum / ok);
        snprintf(b[4], 64, c->ok ? "%.2f" : "-", c->comm_sum / ok / 1e9);
        snprintf(b[5], 64, c->ok ? "%.1f" : "-", c->peak_mem_max / 1073741824.0);
        snprintf(b[6], 64, c->ok ? "%.2f" : "-", c->plan_ms_sum / ok);
        snprintf(b[7], 64, "%lld/%lld", (long long)c->failed, (long long)r->steps);
        snprintf(b[8], 64, "%lld/%lld", (long long)c->over_cap, (long long)r->steps);
        const char *cells[] = {name, b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8]};
        st = zg_table_add_row(t, cells, err);
    }
    return st;
}

zg_status zg_sim_print(const zg_sim_result *r, FILE *f, zg_error *err) {
    fprintf(f,
            "zellige simulate: %s on %s, %lld tokens/rank, %llds videos, %lld steps per mix "
            "(modelled with the analytic cost model)\n",
            r->model.name, r->cluster.name, (long long)r->tokens_per_rank,
            (long long)r->video_seconds, (long long)r->steps);
    char cl[160];
    cap_line(r, cl, sizeof cl);
    fprintf(f, "%s\n", cl);
    if (r->device_row[0])
        fprintf(f,
                "device row: measured (%s): attention fwd %.3f / bwd %.3f of peak, half %.0f "
                "tokens; GEMMs %.3f, half %.0f tokens\n",
                r->device_row, r->dev.attn_fwd_eff, r->dev.attn_bwd_eff, r->dev.attn_half,
                r->dev.gemm_eff, r->dev.gemm_half);
    for (int32_t m = 0; m < r->n_mix; m++) {
        zg_table t;
        zg_status st = zg_sim_mix_table(r, m, &t, err);
        if (!st) {
            fprintf(f, "\n%s\n", r->mixes[m]);
            zg_table_print(&t, f);
            mix_notes(r, m, f);
        }
        zg_table_free(&t);
        if (st) return st;
    }
    return ZG_OK;
}

cJSON *zg_sim_to_json(const zg_sim_result *r) {
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    cJSON_AddStringToObject(j, "model", r->model.name);
    cJSON_AddStringToObject(j, "cluster", r->cluster.name);
    cJSON_AddNumberToObject(j, "tokens_per_rank", (double)r->tokens_per_rank);
    cJSON_AddNumberToObject(j, "video_seconds", (double)r->video_seconds);
    cJSON_AddNumberToObject(j, "steps", (double)r->steps);
    cJSON_AddNumberToObject(j, "mem_cap", r->mem_cap);  // the one cap, bytes per rank
    cJSON_AddNumberToObject(j, "mem_base", r->mem_base);
    if (r->device_row[0]) cJSON_AddStringToObject(j, "device_row", r->device_row);
    cJSON *jmixes = cJSON_AddObjectToObject(j, "mixes");
    for (int32_t m = 0; m < r->n_mix && jmixes; m++) {
        cJSON *jm = cJSON_AddObjectToObject(jmixes, r->mixes[m]);
        const zg_sim_cell *row = r->cells + (size_t)m * r->n_pol;
        double knap = knap_reference(r, row);
        for (int32_t p = 0; p < r->n_pol && jm; p++) {
            const zg_sim_cell *c = &row[p];
            double ms = zg_sim_cell_makespan(c);
            cJSON *jp = cJSON_AddObjectToObject(jm, r->policies[p]);
            if (c->ok) {
                cJSON_AddNumberToObject(jp, "makespan_s", ms);
                cJSON_AddNumberToObject(jp, "balance", c->balance_sum / c->ok);
                cJSON_AddNumberToObject(jp, "comm_bytes", c->comm_sum / c->ok);
                cJSON_AddNumberToObject(jp, "plan_ms", c->plan_ms_sum / c->ok);
                if (isfinite(knap)) cJSON_AddNumberToObject(jp, "speedup_vs_knapformer", knap / ms);
            }
            cJSON_AddNumberToObject(jp, "failed", (double)c->failed);
            cJSON_AddNumberToObject(jp, "over_cap", (double)c->over_cap);
            if (c->over_cap) cJSON_AddStringToObject(jp, "over_cap_reason", c->over_cap_why);
            if (c->ok) cJSON_AddNumberToObject(jp, "peak_mem_bytes", c->peak_mem_max);
            if (c->bags[0]) cJSON_AddStringToObject(jp, "bags", c->bags);
            if (c->communicators >= 0) {
                cJSON_AddNumberToObject(jp, "communicators", (double)c->communicators);
                cJSON_AddNumberToObject(jp, "communicators_per_rank", c->comm_per_rank);
                cJSON_AddNumberToObject(jp, "communicator_bytes_per_rank",
                                        c->comm_bytes_per_rank);
            }
            if (c->failed && c->first_err[0])
                cJSON_AddStringToObject(jp, "first_error", c->first_err);
        }
    }
    return j;
}
