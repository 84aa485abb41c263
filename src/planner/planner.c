// planner.c — planner objects by policy name: init/plan/free with timing, evaluation,
// validation and the --fallback policy.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "planner/planner.h"

static const zg_planner_vtable *find_policy(const char *name) {
    for (const zg_planner_vtable *const *v = zg_planner_policies(); *v; v++)
        if (!strcmp((*v)->name, name)) return *v;
    return NULL;
}

static zg_status unknown_policy(const char *name, zg_error *err) {
    char list[256] = "";
    size_t at = 0;
    for (const zg_planner_vtable *const *v = zg_planner_policies(); *v && at < sizeof list; v++)
        at += (size_t)snprintf(list + at, sizeof list - at, "%s%s", at ? ", " : "", (*v)->name);
    return zg_error_set(err, ZG_ERR_INVALID, "unknown policy '%s' (policies: %s)", name, list);
}

zg_status zg_planner_init(zg_planner *pl, const char *policy, const zg_plan_ctx *ctx,
                          zg_error *err) {
    memset(pl, 0, sizeof *pl);
    if (!policy) return unknown_policy("(null)", err);
    const zg_planner_vtable *vt = find_policy(policy);
    if (!vt) return unknown_policy(policy, err);
    if (!ctx || !ctx->model || !ctx->cluster || !ctx->pricer)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "planner '%s' needs a model, a cluster and a pricer", policy);
    if (ctx->cluster->world_size < 1)
        return zg_error_set(err, ZG_ERR_INVALID, "cluster '%s' has %d ranks; need at least 1",
                            ctx->cluster->name, ctx->cluster->world_size);
    const zg_planner_opts *o = &ctx->opts;
    if (!(o->time_limit_s > 0) || !isfinite(o->time_limit_s))
        return zg_error_set(err, ZG_ERR_INVALID,
                            "time limit %g s: give a positive number of seconds (default 60)",
                            o->time_limit_s);
    const zg_budget *bud[3] = {&o->anchor_nodes, &o->anchor_lns_nodes, &o->anchor_first_nodes};
    static const char *const bud_name[3] = {"anchor-nodes", "lns-nodes", "first-nodes"};
    for (int k = 0; k < 3; k++)
        if (bud[k]->given && bud[k]->nodes < (k == 1 ? 0 : 1))
            return zg_error_set(err, ZG_ERR_INVALID,
                                "%s budget %lld: give at least %d node%s, or leave it out for "
                                "the built-in rule",
                                bud_name[k], (long long)bud[k]->nodes, k == 1 ? 0 : 1,
                                k == 1 ? "s (0 turns the search off)" : "");
    if (ctx->opts.fallback[0] && !find_policy(ctx->opts.fallback)) {
        unknown_policy(ctx->opts.fallback, err);
        return zg_error_prefix(err, "--fallback: ");
    }
    if (ctx->opts.fallback[0] && !strcmp(ctx->opts.fallback, policy))
        return zg_error_set(err, ZG_ERR_INVALID, "--fallback '%s' is the policy itself",
                            policy);
    pl->vt = vt;
    pl->ctx = *ctx;
    if (vt->init) {
        zg_status st = vt->init(pl, err);
        if (st) {
            memset(pl, 0, sizeof *pl);
            return st;
        }
    }
    return ZG_OK;
}

void zg_planner_free(zg_planner *pl) {
    if (!pl) return;
    if (pl->vt && pl->vt->free) pl->vt->free(pl);
    memset(pl, 0, sizeof *pl);
}

// Runs the fallback policy for a batch the main policy found infeasible.
static zg_status run_fallback(zg_planner *pl, const zg_batch *b, zg_plan *out,
                              const zg_error *why, zg_error *err) {
    zg_plan_ctx fctx = pl->ctx;
    fctx.opts.fallback[0] = '\0';
    zg_planner fb;
    zg_status st = zg_planner_init(&fb, pl->ctx.opts.fallback, &fctx, err);
    if (st) return st;
    st = fb.vt->plan(&fb, b, out, err);
    zg_planner_free(&fb);
    if (st)
        return zg_error_prefix(err, "%s failed (%s), and fallback %s failed too: ",
                               pl->vt->name, why->msg, pl->ctx.opts.fallback);
    zg_log(ZG_LOG_WARN, "policy %s found no plan (%s); using fallback %s", pl->vt->name,
           why->msg, pl->ctx.opts.fallback);
    snprintf(out->policy, sizeof out->policy, "%s", pl->ctx.opts.fallback);
    snprintf(out->fallback_from, sizeof out->fallback_from, "%s", pl->vt->name);
    return ZG_OK;
}

zg_status zg_planner_plan(zg_planner *pl, const zg_batch *b, zg_plan *out, zg_error *err) {
    if (!pl || !pl->vt) return zg_error_set(err, ZG_ERR_INVALID, "planner not initialized");
    if (!b) return zg_error_set(err, ZG_ERR_INVALID, "planner: no batch");
    for (int64_t i = 0; i < b->n; i++)
        if (b->seqs[i].tokens <= 0)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "sequence %lld has %lld tokens; tokens must be positive",
                                (long long)b->seqs[i].id, (long long)b->seqs[i].tokens);
    zg_error e = {ZG_OK, ""};
    double t0 = zg_time_now();
    zg_status st = pl->vt->plan(pl, b, out, &e);
    // A policy that ignores memory: its plan as its real counterpart would place it. Over the
    // cap it is marked over_cap, or, with --fallback, infeasible so the fallback plans instead.
    int over = 0;
    if (!st && pl->vt->ignores_memory && pl->ctx.pricer) {
        st = zg_plan_evaluate(out, b, pl->ctx.pricer, NULL, &e);
        over = !st && zg_plan_over_cap_ranks(out, NULL, 0) > 0;
        if (over && pl->ctx.opts.fallback[0]) {
            char why[256];
            zg_plan_over_cap_describe(out, why, sizeof why);
            st = zg_error_set(&e, ZG_ERR_INFEASIBLE, "%s: %s (it ignores memory)", pl->vt->name,
                              why);
            over = 0;
        }
    }
    if (st == ZG_ERR_INFEASIBLE && pl->ctx.opts.fallback[0]) {
        zg_error why = e;
        st = run_fallback(pl, b, out, &why, &e);
    } else if (!st) {
        snprintf(out->policy, sizeof out->policy, "%s", pl->vt->name);
    }
    if (st) return zg_error_set(err, st, "%s", e.msg);
    out->plan_time_ms = (zg_time_now() - t0) * 1e3;
    st = zg_plan_evaluate(out, b, pl->ctx.pricer, NULL, &e);
    out->over_cap = over;
    if (!st) st = zg_plan_validate(out, b, pl->ctx.model, &e);
    if (st)
        return zg_error_set(err, ZG_ERR_INTERNAL, "policy %s produced an invalid plan: %s",
                            out->policy, e.msg);
    return ZG_OK;
}
