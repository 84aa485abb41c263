// report.c — zg_sim_write_report: the HTML page of a `zellige simulate` result (sim.h). Top to
// bottom: the headline (who wins the Gantt mix, by how much over each other policy, in which
// setting and under which memory cap), the Gantt of every policy's first step of that mix on one
// shared time axis with the legend, the failures and plans over the memory cap with their
// reasons, then per mix the table and the makespan bars.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cost/cost.h"
#include "report/report.h"
#include "sim/sim.h"

// ---- the memory cap, failures and over-cap facts: the only place the report reads them ------
// The cap is the result's (r->mem_cap, zg_cluster_mem_cap_bytes: the usable device memory per
// rank), of which r->mem_base is placement-independent (weights, gradients, optimizer state,
// framework); a plan is over the cap when a rank's peak (base included) exceeds it. A cell's
// over_cap counts its plans over the cap (only a policy that ignores memory has any:
// docs/planners.md §4b).

typedef struct cap_facts {
    double cap, base; // bytes per rank
} cap_facts;

// The pricer zg_sim_run used: for the comm/compute split. The cap and base come from the
// result, as stdout and --json print them.
static zg_status report_pricer(const zg_sim_result *r, zg_pricer *pr, cap_facts *cf,
                               zg_error *err) {
    zg_status st = zg_sim_pricer_init(r, pr, err);
    cf->cap = r->mem_cap, cf->base = r->mem_base;
    return st;
}

// 1 when the cell's plans could run: every step planned, none over the memory cap.
static int cell_runs(const zg_sim_cell *c) {
    return c->ok > 0 && !c->failed && !c->over_cap;
}

// Why the cell's plans could not all run ("" when they could).
static void cell_problem(const zg_sim_result *r, int32_t p, const zg_sim_cell *c,
                         const cap_facts *cf, char *buf, size_t n) {
    char peak[32], cap[32];
    buf[0] = 0;
    if (c->failed)
        snprintf(buf, n, "no plan for %lld of %lld steps: %s", (long long)c->failed,
                 (long long)r->steps, c->first_err[0] ? c->first_err : "(no message)");
    else if (c->over_cap)
        snprintf(buf, n,
                 "%lld of %lld plans exceed the memory cap: peak %s per rank > cap %s (%ssuch a "
                 "step would run out of memory)",
                 (long long)c->over_cap, (long long)r->steps,
                 zg_fmt_bytes(c->peak_mem_max, peak, sizeof peak),
                 zg_fmt_bytes(cf->cap, cap, sizeof cap),
                 p == r->knap_index ? "KnapFormer plans without looking at memory; " : "");
    else if (!c->ok)
        snprintf(buf, n, "no step planned");
}

// The peak memory of one plan (bytes, base included): its busiest rank.
static double plan_peak(const zg_plan *p) {
    double peak = 0;
    for (int32_t k = 0; p->ranks && k < p->world_size; k++)
        if (p->ranks[k].mem > peak) peak = p->ranks[k].mem;
    return peak;
}

// ---- page parts ----------------------------------------------------------------------------

static void policy_label(const zg_sim_result *r, int32_t m, int32_t p, char *buf, size_t n) {
    const zg_sim_cell *c = &r->cells[(size_t)m * r->n_pol + p];
    snprintf(buf, n, "%.31s%s%.127s%s", r->policies[p], c->bags[0] ? " (" : "", c->bags,
             c->bags[0] ? ")" : "");
}

// The fastest cell of mix m whose plans could all run; -1 when none.
static int32_t mix_winner(const zg_sim_result *r, int32_t m) {
    int32_t w = -1;
    for (int32_t p = 0; p < r->n_pol; p++) {
        const zg_sim_cell *c = &r->cells[(size_t)m * r->n_pol + p];
        if (cell_runs(c) &&
            (w < 0 ||
             zg_sim_cell_makespan(c) < zg_sim_cell_makespan(&r->cells[(size_t)m * r->n_pol + w])))
            w = p;
    }
    return w;
}

static void headline(zg_html *h, const zg_sim_result *r, const cap_facts *cf) {
    zg_sbuf *s = &h->body;
    int32_t m = r->gantt_mix, w = mix_winner(r, m);
    const zg_sim_cell *row = &r->cells[(size_t)m * r->n_pol];
    char lab[192], cap[32], base[32], avail[32];
    zg_sbuf_puts(s, "<section id='headline'>\n<h1>");
    if (w >= 0) {
        zg_sbuf_printf(s, "%s is fastest on %s: %.2f s per step", r->policies[w], r->mixes[m],
                       zg_sim_cell_makespan(&row[w]));
    } else {
        zg_sbuf_printf(s, "No policy planned every step of %s within the memory cap", r->mixes[m]);
    }
    zg_sbuf_puts(s, "</h1>\n<ul class='speedups'>\n");
    for (int32_t p = 0; p < r->n_pol; p++) {
        if (p == w) continue;
        const zg_sim_cell *c = &row[p];
        char why[400];
        policy_label(r, m, p, lab, sizeof lab);
        cell_problem(r, p, c, cf, why, sizeof why);
        zg_sbuf_printf(s, "<li class='%s'>",
                       c->failed     ? "failed"
                       : c->over_cap ? "over-cap"
                                     : "ok");
        if (w >= 0 && c->ok && !c->over_cap)  // a plan over the cap is no speed-up's reference
            zg_sbuf_printf(s, "<b>%.3f×</b> faster than ",
                           zg_sim_cell_makespan(c) / zg_sim_cell_makespan(&row[w]));
        zg_sbuf_escape_html(s, lab);
        if (c->ok) zg_sbuf_printf(s, " (%.2f s)", zg_sim_cell_makespan(c));
        if (why[0]) {
            zg_sbuf_puts(s, c->failed ? " — failed: " : " — over the memory cap: ");
            zg_sbuf_escape_html(s, why);
        }
        zg_sbuf_puts(s, "</li>\n");
    }
    zg_sbuf_printf(s,
                   "</ul>\n<p class='setting'>Cluster <b>%s</b> (%d ranks of %s), model <b>%s</b>, "
                   "mix <b>%s</b> (%.0f%% of the tokens in videos), %lld tokens per rank per step, "
                   "%d s videos, mean of %lld seeded steps; memory cap <b>%s per rank</b> (%s for "
                   "sequences after %s of weights, gradients, optimizer state and framework). All "
                   "times are modelled: per-rank prices from the analytic cost model "
                   "(docs/cost-model.md), the same for every policy.%s</p>\n",
                   r->cluster.name, r->cluster.world_size, r->cluster.device, r->model.name,
                   r->mixes[m], 100 * zg_mix_share_from_name(r->mixes[m]),
                   (long long)r->tokens_per_rank, r->video_seconds, (long long)r->steps,
                   zg_fmt_bytes(cf->cap, cap, sizeof cap),
                   zg_fmt_bytes(cf->cap - cf->base, avail, sizeof avail),
                   zg_fmt_bytes(cf->base, base, sizeof base),
                   r->knap_index < 0 ? ""
                                     : " KnapFormer plans without looking at memory (as in its "
                                       "paper); a policy with plans over the cap does not win.");
    if (r->n_mix > 1) {
        zg_sbuf_puts(s, "<p class='per-mix'>Fastest runnable policy per mix (speed-up over the "
                        "fastest other runnable one): ");
        for (int32_t k = 0; k < r->n_mix; k++) {
            int32_t wk = mix_winner(r, k), second = -1;
            const zg_sim_cell *rk = &r->cells[(size_t)k * r->n_pol];
            for (int32_t p = 0; p < r->n_pol; p++)
                if (p != wk && cell_runs(&rk[p]) &&
                    (second < 0 ||
                     zg_sim_cell_makespan(&rk[p]) < zg_sim_cell_makespan(&rk[second])))
                    second = p;
            zg_sbuf_printf(s, "%s%s ", k ? "; " : "", r->mixes[k]);
            if (wk < 0)
                zg_sbuf_puts(s, "none");
            else if (second < 0)
                zg_sbuf_printf(s, "%s (the only one)", r->policies[wk]);
            else
                zg_sbuf_printf(s, "%s (%.3f× over %s)", r->policies[wk],
                               zg_sim_cell_makespan(&rk[second]) / zg_sim_cell_makespan(&rk[wk]),
                               r->policies[second]);
        }
        zg_sbuf_puts(s, ".</p>\n");
    }
    zg_sbuf_puts(s, "</section>\n");
}

// Every policy's step 0 of the Gantt mix on one time axis: the slowest of them.
static zg_status gantts(zg_html *h, const zg_sim_result *r, const zg_pricer *pr,
                        const cap_facts *cf, zg_error *err) {
    zg_sbuf *s = &h->body;
    int32_t m = r->gantt_mix;
    double axis = 0;
    for (int32_t p = 0; p < r->n_pol; p++)
        if (r->gantt_plans[p].n && r->gantt_plans[p].makespan > axis)
            axis = r->gantt_plans[p].makespan;
    char title[256];
    snprintf(title, sizeof title, "One step per rank: %s step 0 under every policy, one time axis",
             r->mixes[m]);
    zg_sbuf_puts(s, "<section id='gantts'>\n");
    zg_html_heading(h, 2, title);
    zg_html_gantt_legend(h);
    for (int32_t p = 0; p < r->n_pol; p++) {
        const zg_plan *pl = &r->gantt_plans[p];
        const zg_sim_cell *c = &r->cells[(size_t)m * r->n_pol + p];
        char lab[192], why[400], note[160], peak[32], cap[32];
        policy_label(r, m, p, lab, sizeof lab);
        if (!pl->n) {
            cell_problem(r, p, c, cf, why, sizeof why);
            zg_sbuf_puts(s, "<figure class='gantt-missing'><figcaption>");
            zg_sbuf_escape_html(s, lab);
            zg_sbuf_puts(s, " — no plan for this step</figcaption><p class='failure'>");
            zg_sbuf_escape_html(s, why[0] ? why : "the policy failed on this step");
            zg_sbuf_puts(s, "</p></figure>\n");
            continue;
        }
        // each placement's exposed communication: its price's share in the analytic terms
        double *comm = zg_calloc((size_t)pl->n, sizeof *comm, err);
        if (!comm) return ZG_ERR_NOMEM;
        for (int64_t i = 0; i < pl->n; i++) {
            const zg_placement *a = &pl->p[i];
            zg_cost_terms t;
            zg_error terr;
            if (a->seq < 0 || a->seq >= r->gantt_batch.n ||
                zg_cost_analytic_terms(pr, &r->gantt_batch.seqs[a->seq], a->config, a->ranks,
                                       a->n_ranks, &t, &terr) ||
                !(t.time > 0))
                continue;
            comm[i] = a->time * (t.alltoall + t.allgather + t.ring) / t.time;
        }
        double pk = plan_peak(pl);
        int over = pk > cf->cap;
        snprintf(note, sizeof note,
                 over ? "peak %s per rank, OVER the %s memory cap"
                      : "peak %s per rank of the %s cap",
                 zg_fmt_bytes(pk, peak, sizeof peak), zg_fmt_bytes(cf->cap, cap, sizeof cap));
        zg_gantt_opts go = {axis, comm, note, over ? "over-cap" : NULL};
        zg_html_gantt(h, lab, pl, &go);
        free(comm);
    }
    zg_sbuf_puts(s, "</section>\n");
    return ZG_OK;
}

static void problems(zg_html *h, const zg_sim_result *r, const cap_facts *cf) {
    zg_sbuf *s = &h->body;
    int any = 0;
    zg_sbuf_puts(s, "<section id='problems'>\n");
    zg_html_heading(h, 2, "Failures and plans over the memory cap");
    for (int32_t m = 0; m < r->n_mix; m++)
        for (int32_t p = 0; p < r->n_pol; p++) {
            const zg_sim_cell *c = &r->cells[(size_t)m * r->n_pol + p];
            char why[400], lab[192];
            cell_problem(r, p, c, cf, why, sizeof why);
            if (!why[0]) continue;
            if (!any++)
                zg_sbuf_puts(s, "<table class='problems'><tr><th>mix</th><th>policy</th><th>"
                                "failed</th><th>over cap</th><th>reason</th></tr>\n");
            policy_label(r, m, p, lab, sizeof lab);
            zg_sbuf_printf(s, "<tr class='%s'><td>%s</td><td>", c->failed ? "failed" : "over-cap",
                           r->mixes[m]);
            zg_sbuf_escape_html(s, lab);
            zg_sbuf_printf(s, "</td><td>%lld/%lld</td><td>%lld/%lld</td><td class='reason'>",
                           (long long)c->failed, (long long)r->steps, (long long)c->over_cap,
                           (long long)r->steps);
            zg_sbuf_escape_html(s, why);
            zg_sbuf_puts(s, "</td></tr>\n");
        }
    if (any)
        zg_sbuf_puts(s, "</table>\n");
    else
        zg_html_paragraph(h, "Every policy planned every step of every mix within the memory cap.");
    zg_sbuf_puts(s, "</section>\n");
}

zg_status zg_sim_write_report(const zg_sim_result *r, const char *path, zg_error *err) {
    zg_pricer pr;
    cap_facts cf;
    zg_status st = report_pricer(r, &pr, &cf, err);
    if (st) return st;
    zg_html html;
    zg_html_init(&html);
    headline(&html, r, &cf);
    st = gantts(&html, r, &pr, &cf, err);
    if (!st) problems(&html, r, &cf);
    if (!st) zg_html_heading(&html, 2, "Every mix");
    for (int32_t m = 0; m < r->n_mix && !st; m++) {
        zg_table t;
        st = zg_sim_mix_table(r, m, &t, err);
        if (!st) {
            zg_html_heading(&html, 3, r->mixes[m]);
            zg_html_table(&html, &t);
        }
        zg_table_free(&t);
    }
    double *bars = st ? NULL : zg_calloc((size_t)r->n_mix * r->n_pol, sizeof *bars, err);
    const char *groups[ZG_SIM_MAX_MIX], *series[ZG_SIM_MAX_POL];
    if (!st && !bars) st = ZG_ERR_NOMEM;
    for (int32_t m = 0; m < r->n_mix && !st; m++) {
        groups[m] = r->mixes[m];
        for (int32_t p = 0; p < r->n_pol; p++)
            bars[m * r->n_pol + p] = zg_sim_cell_makespan(&r->cells[(size_t)m * r->n_pol + p]);
    }
    for (int32_t p = 0; p < r->n_pol; p++)
        series[p] = r->policies[p];
    if (!st) {
        zg_html_bars(&html, "Mean modelled step makespan per mix (seconds; n/a: failed)",
                     "makespan (s)", r->n_mix, groups, r->n_pol, series, bars);
        char title[256];
        snprintf(title, sizeof title, "zellige simulate — %s on %s, %s", r->model.name,
                 r->cluster.name, r->mixes[r->gantt_mix]);
        st = zg_html_write(&html, title, path, err);
    }
    free(bars);
    zg_html_free(&html);
    zg_pricer_free(&pr);
    return st;
}
