// html.c — a self-contained HTML page with inline SVG: per-rank Gantt charts and grouped bars.
// No scripts, no external assets: the file opens anywhere and diffs cleanly.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"

void zg_html_init(zg_html *h) { zg_sbuf_init(&h->body); }
void zg_html_free(zg_html *h) { zg_sbuf_free(&h->body); }

void zg_html_heading(zg_html *h, int level, const char *text) {
    if (level < 1 || level > 4) level = 2;
    zg_sbuf_printf(&h->body, "<h%d>", level);
    zg_sbuf_escape_html(&h->body, text);
    zg_sbuf_printf(&h->body, "</h%d>\n", level);
}

void zg_html_paragraph(zg_html *h, const char *text) {
    zg_sbuf_puts(&h->body, "<p>");
    zg_sbuf_escape_html(&h->body, text);
    zg_sbuf_puts(&h->body, "</p>\n");
}

void zg_html_table(zg_html *h, const zg_table *t) {
    zg_sbuf_puts(&h->body, "<table>\n");
    for (int32_t i = 0; i < t->n_rows; i++) {
        zg_sbuf_puts(&h->body, "<tr>");
        for (int32_t j = 0; j < t->n_cols; j++) {
            zg_sbuf_puts(&h->body, i == 0 ? "<th>" : "<td>");
            zg_sbuf_escape_html(&h->body, t->cells[(size_t)i * t->n_cols + j]);
            zg_sbuf_puts(&h->body, i == 0 ? "</th>" : "</td>");
        }
        zg_sbuf_puts(&h->body, "</tr>\n");
    }
    zg_sbuf_puts(&h->body, "</table>\n");
}

// Series colours for bar charts (distinct, colour-blind friendly; Okabe-Ito).
static const char *const series_colours[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7",
                                             "#56B4E9", "#D55E00", "#F0E442", "#000000"};

// Deterministic colour per sequence id: golden-ratio hue steps.
static void seq_colour(int64_t id, char *buf, size_t n) {
    double hue = fmod((double)(id % 100000) * 137.508, 360.0);
    snprintf(buf, n, "hsl(%.0f,62%%,62%%)", hue);
}

typedef struct {
    int64_t idx;
    int32_t round;
    int32_t degree;
} gantt_item;

// Rounds one after another; inside a round the engine's order (wider placements first).
static int cmp_engine_order(const void *a, const void *b) {
    const gantt_item *x = a, *y = b;
    if (x->round != y->round) return x->round - y->round;
    if (x->degree != y->degree) return y->degree - x->degree;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

// Closes a round: every rank's clock moves to the round's end (its slowest rank); returns it.
static double round_end(double *x_at, int32_t R) {
    double end = 0;
    for (int32_t r = 0; r < R; r++)
        if (x_at[r] > end) end = x_at[r];
    for (int32_t r = 0; r < R; r++) x_at[r] = end;
    return end;
}

// Per rank, the boxes of its placements; a plan with rounds (megatron's microbatch groups) draws
// them one after another on the time axis, each starting when the previous round's slowest rank
// ends, with a thin separator and the round's number at each boundary.
void zg_html_gantt(zg_html *h, const char *title, const zg_plan *p, const zg_batch *b) {
    zg_sbuf *s = &h->body;
    int32_t R = p->world_size;
    const double W = 900, left = 60, row_h = R > 64 ? 6 : (R > 16 ? 12 : 22), top = 28;
    double height = top + R * row_h + 30;
    gantt_item *items = malloc(sizeof *items * (size_t)(p->n ? p->n : 1));
    double *x_at = calloc((size_t)(R > 0 ? R : 1), sizeof *x_at);
    zg_sbuf_puts(s, "<figure><figcaption>");
    zg_sbuf_escape_html(s, title);
    if (!items || !x_at) {
        free(items);
        free(x_at);
        zg_sbuf_puts(s, "</figcaption></figure>\n");
        return;
    }
    for (int64_t i = 0; i < p->n; i++)
        items[i] = (gantt_item){i, p->p[i].round, p->p[i].n_ranks};
    qsort(items, (size_t)p->n, sizeof *items, cmp_engine_order);
    // pass 0: the time axis (sum over rounds of the slowest rank); pass 1: draw
    double makespan = 1;
    int32_t n_rounds = p->n ? items[p->n - 1].round + 1 : 1;
    for (int pass = 0; pass < 2; pass++) {
        for (int32_t r = 0; r < R; r++) x_at[r] = 0;
        if (pass == 1) {
            zg_sbuf_printf(s, " — makespan %.3g s", makespan);
            if (n_rounds > 1) zg_sbuf_printf(s, ", %d rounds run one after another", n_rounds);
            zg_sbuf_printf(s,
                           "</figcaption>\n<svg xmlns='http://www.w3.org/2000/svg' width='%.0f' "
                           "height='%.0f' font-family='sans-serif' font-size='10'>\n",
                           left + W + 20, height);
            for (int32_t r = 0; r < R; r++) {
                double y = top + r * row_h;
                if (R <= 64 || r % 8 == 0)
                    zg_sbuf_printf(s, "<text x='%.0f' y='%.1f' text-anchor='end'>r%d</text>\n",
                                   left - 4, y + row_h * 0.7, r);
            }
        }
        for (int64_t t = 0; t < p->n; t++) {
            const zg_placement *pl = &p->p[items[t].idx];
            if (t > 0 && pl->round != items[t - 1].round) {
                double end = round_end(x_at, R);
                if (pass == 1) {
                    double x = left + W * end / makespan;
                    zg_sbuf_printf(s,
                                   "<line x1='%.2f' y1='%.0f' x2='%.2f' y2='%.0f' stroke='#555' "
                                   "stroke-width='0.8'/><text x='%.2f' y='%.0f'>round %d</text>\n",
                                   x, top - 12, x, top + R * row_h, x + 2, top - 4, pl->round);
                }
            }
            char col[48], cfg[32], rnd[24] = "";
            if (n_rounds > 1) snprintf(rnd, sizeof rnd, ", round %d", pl->round);
            seq_colour(pl->id, col, sizeof col);
            zg_config_name(pl->config, cfg, sizeof cfg);
            int split = pl->n_ranks > 1;
            for (int32_t j = 0; j < pl->n_ranks; j++) {
                int32_t r = pl->ranks[j];
                if (r < 0 || r >= R) continue;
                double x = left + W * x_at[r] / makespan, w = W * pl->time / makespan;
                double y = top + r * row_h + 1;
                x_at[r] += pl->time;
                if (pass == 0) continue;
                zg_sbuf_printf(s,
                               "<rect x='%.2f' y='%.1f' width='%.2f' height='%.1f' fill='%s' "
                               "stroke='%s' stroke-width='%s'><title>seq %lld (%lld tokens) %s "
                               "shard %d/%d [%lld,%lld) %.3g s%s</title></rect>\n",
                               x, y, w > 0.3 ? w : 0.3, row_h - 2, col, split ? "#222" : "#fff",
                               split ? "1.2" : "0.4", (long long)pl->id, (long long)pl->tokens,
                               cfg, j, pl->n_ranks, (long long)pl->shards[j].start,
                               (long long)pl->shards[j].end, pl->time, rnd);
                if (split && w > 40 && row_h >= 12)
                    zg_sbuf_printf(s, "<text x='%.1f' y='%.1f'>s%lld %s</text>\n", x + 2,
                                   y + row_h * 0.6, (long long)pl->id, cfg);
            }
        }
        double end = round_end(x_at, R);
        if (pass == 0) makespan = end > 0 ? end : 1;
    }
    // makespan line and axis
    zg_sbuf_printf(s,
                   "<line x1='%.0f' y1='%.0f' x2='%.0f' y2='%.0f' stroke='#c00' "
                   "stroke-dasharray='4 3'/>\n",
                   left + W, top - 6, left + W, top + R * row_h);
    for (int k = 0; k <= 4; k++)
        zg_sbuf_printf(s, "<text x='%.1f' y='%.1f' text-anchor='middle'>%.3g s</text>\n",
                       left + W * k / 4, top + R * row_h + 14, makespan * k / 4);
    zg_sbuf_puts(s, "</svg>\n");
    (void)b;
    zg_sbuf_puts(s, "<p class='note'>Boxes with dark outlines are shards of split sequences "
                    "(same colour on every rank that runs them); white-edged boxes run "
                    "whole.");
    if (n_rounds > 1)
        zg_sbuf_puts(s, " Thin grey lines separate the rounds (microbatch groups): a round "
                        "starts when the previous round's slowest rank ends.");
    zg_sbuf_puts(s, "</p></figure>\n");
    free(items);
    free(x_at);
}

void zg_html_bars(zg_html *h, const char *title, const char *y_label, int32_t n_groups,
                  const char *const *groups, int32_t n_series, const char *const *series,
                  const double *values) {
    zg_sbuf *s = &h->body;
    double vmax = 0;
    for (int32_t i = 0; i < n_groups * n_series; i++)
        if (isfinite(values[i]) && values[i] > vmax) vmax = values[i];
    if (vmax <= 0) vmax = 1;
    const double left = 70, top = 30, H = 260, bar_w = 14, gap = 22;
    double group_w = n_series * bar_w + gap;
    double W = n_groups * group_w + 20;
    double legend_h = 16.0 * ((n_series + 3) / 4);
    zg_sbuf_puts(s, "<figure><figcaption>");
    zg_sbuf_escape_html(s, title);
    zg_sbuf_puts(s, "</figcaption>\n");
    zg_sbuf_printf(s,
                   "<svg xmlns='http://www.w3.org/2000/svg' width='%.0f' height='%.0f' "
                   "font-family='sans-serif' font-size='10'>\n",
                   left + (W > 500 ? W : 500) + 20, top + H + 40 + legend_h);
    for (int k = 0; k <= 4; k++) {
        double y = top + H - H * k / 4;
        zg_sbuf_printf(s,
                       "<line x1='%.0f' y1='%.1f' x2='%.0f' y2='%.1f' stroke='#ddd'/>"
                       "<text x='%.0f' y='%.1f' text-anchor='end'>%.3g</text>\n",
                       left, y, left + W, y, left - 4, y + 3, vmax * k / 4);
    }
    zg_sbuf_printf(s,
                   "<text x='12' y='%.0f' transform='rotate(-90 12 %.0f)' "
                   "text-anchor='middle'>",
                   top + H / 2, top + H / 2);
    zg_sbuf_escape_html(s, y_label);
    zg_sbuf_puts(s, "</text>\n");
    for (int32_t g = 0; g < n_groups; g++) {
        double gx = left + 10 + g * group_w;
        for (int32_t k = 0; k < n_series; k++) {
            double v = values[g * n_series + k];
            double x = gx + k * bar_w;
            const char *col = series_colours[k % 8];
            if (!isfinite(v) || v <= 0) {
                zg_sbuf_printf(s,
                               "<text x='%.1f' y='%.1f' font-size='8' transform='rotate(-90 %.1f "
                               "%.1f)'>n/a</text>\n",
                               x + 9, top + H - 2, x + 9, top + H - 2);
                continue;
            }
            double bh = H * v / vmax;
            zg_sbuf_printf(s,
                           "<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' fill='%s'>"
                           "<title>%s: %.4g</title></rect>\n",
                           x, top + H - bh, bar_w - 2, bh, col, series[k], v);
        }
        zg_sbuf_printf(s, "<text x='%.1f' y='%.0f' text-anchor='middle'>", gx + n_series * bar_w / 2,
                       top + H + 14);
        zg_sbuf_escape_html(s, groups[g]);
        zg_sbuf_puts(s, "</text>\n");
    }
    for (int32_t k = 0; k < n_series; k++) {
        const char *col = series_colours[k % 8];
        double x = left + (k % 4) * 130, y = top + H + 28 + 16 * (k / 4);
        zg_sbuf_printf(s, "<rect x='%.0f' y='%.0f' width='10' height='10' fill='%s'/>", x, y, col);
        zg_sbuf_printf(s, "<text x='%.0f' y='%.0f'>", x + 14, y + 9);
        zg_sbuf_escape_html(s, series[k]);
        zg_sbuf_puts(s, "</text>\n");
    }
    zg_sbuf_puts(s, "</svg></figure>\n");
}

zg_status zg_html_write(const zg_html *h, const char *title, const char *path, zg_error *err) {
    zg_sbuf page;
    zg_sbuf_init(&page);
    zg_sbuf_puts(&page, "<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>");
    zg_sbuf_escape_html(&page, title);
    zg_sbuf_puts(&page,
                 "</title><style>body{font-family:sans-serif;max-width:1100px;margin:2em auto;"
                 "color:#222}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid "
                 "#ccc;padding:3px 8px;text-align:right}th{background:#f3f3f3}td:first-child{"
                 "text-align:left}figure{margin:1.5em 0}figcaption{font-weight:bold;margin-"
                 "bottom:4px}.note{font-size:0.85em;color:#555}</style></head><body>\n");
    zg_sbuf_puts(&page, h->body.data ? h->body.data : "");
    zg_sbuf_puts(&page, "</body></html>\n");
    zg_status st = page.oom || h->body.oom
                       ? zg_error_set(err, ZG_ERR_NOMEM, "out of memory building %s", path)
                       : zg_file_write_atomic(path, page.data, page.len, err);
    zg_sbuf_free(&page);
    return st;
}
