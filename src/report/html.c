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

// ---- Gantt ---------------------------------------------------------------------------------

// What a box on a rank's row holds.
enum { BOX_WHOLE, BOX_SHARD, BOX_COMM, BOX_IDLE, BOX_MIXED, BOX_KINDS };
static const char *const box_fill[BOX_KINDS] = {"#9ecae1", "#2171b5", "#f28e2b", "#e4e4e4",
                                                "#b4a7d6"};
static const char *const box_name[BOX_KINDS] = {
    "compute: whole sequences", "compute: shard of a split sequence",
    "communication (exposed)", "idle", "mixed: too narrow to draw one by one"};

typedef struct gantt_item {
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

// One box on a rank's row: [t0, t1) seconds; compute and comm seconds inside it (a mixed box
// has both); n spans merged; first = the placement of the first one (-1 for idle), pos = the
// rank's position in it.
typedef struct gbox {
    int kind;
    double t0, t1, compute, comm;
    int64_t n, tokens, first;
    int32_t pos;
} gbox;

typedef struct gantt_draw {
    zg_sbuf *s;
    const zg_plan *p;
    double left, top, row_h, pps; // pixels per second
    int32_t n_rounds;
    gbox *acc;                    // per rank: the box being built (kind < 0: none)
    int64_t shapes;
} gantt_draw;

static double box_px(const gantt_draw *d, const gbox *b) { return (b->t1 - b->t0) * d->pps; }

static void box_title(const gantt_draw *d, int32_t r, const gbox *b) {
    zg_sbuf *s = d->s;
    const zg_placement *pl = b->first >= 0 ? &d->p->p[b->first] : NULL;
    char cfg[48] = "";
    if (pl) zg_config_name(pl->config, cfg, sizeof cfg);
    zg_sbuf_printf(s, "<title>r%d %.4g–%.4g s: ", r, b->t0, b->t1);
    switch (b->kind) {
    case BOX_WHOLE:
        if (b->n == 1)
            zg_sbuf_printf(s, "seq %lld (%lld tokens) whole, %.3g s compute", (long long)pl->id,
                           (long long)pl->tokens, b->compute);
        else
            zg_sbuf_printf(s, "%lld whole sequences (%lld tokens), %.3g s compute",
                           (long long)b->n, (long long)b->tokens, b->compute);
        break;
    case BOX_SHARD:
        if (b->n == 1)
            zg_sbuf_printf(s, "seq %lld (%lld tokens) θ=%s, shard %d/%d [%lld,%lld), %.3g s "
                              "compute",
                           (long long)pl->id, (long long)pl->tokens, cfg, b->pos + 1, pl->n_ranks,
                           (long long)pl->shards[b->pos].start, (long long)pl->shards[b->pos].end,
                           b->compute);
        else
            zg_sbuf_printf(s, "%lld shards of split sequences (%lld tokens), %.3g s compute",
                           (long long)b->n, (long long)b->tokens, b->compute);
        break;
    case BOX_COMM:
        if (b->n == 1)
            zg_sbuf_printf(s, "seq %lld θ=%s, %.3g s exposed communication", (long long)pl->id,
                           cfg, b->comm);
        else
            zg_sbuf_printf(s, "exposed communication of %lld shards, %.3g s", (long long)b->n,
                           b->comm);
        break;
    case BOX_IDLE:
        zg_sbuf_printf(s, "idle %.3g s, waiting for the %s slowest rank", b->t1 - b->t0,
                       d->n_rounds > 1 ? "round's" : "step's");
        break;
    default:
        zg_sbuf_printf(s, "%lld spans too narrow to draw one by one (%lld tokens): %.3g s compute, "
                          "then %.3g s exposed communication (totals)",
                       (long long)b->n, (long long)b->tokens, b->compute, b->comm);
    }
    zg_sbuf_puts(s, "</title>");
}

static void draw_rect(gantt_draw *d, int32_t r, const gbox *b, int kind, double t0, double t1,
                      int outline) {
    // rows of 12 px and more: a 2 px gap and outlined shards; thinner rows: a 1 px gap, no outline
    double x = d->left + t0 * d->pps, w = (t1 - t0) * d->pps, gap = d->row_h >= 12 ? 2 : 1;
    double y = d->top + r * d->row_h + gap / 2;
    zg_sbuf_printf(d->s, "<rect x='%.2f' y='%.1f' width='%.2f' height='%.1f' fill='%s'%s>",
                   x, y, w > 0.3 ? w : 0.3, d->row_h - gap, box_fill[kind],
                   outline && gap > 1 ? " stroke='#08306b' stroke-width='1'" : "");
    box_title(d, r, b);
    zg_sbuf_puts(d->s, "</rect>\n");
    d->shapes++;
}

static void box_draw(gantt_draw *d, int32_t r, const gbox *b) {
    if (b->kind != BOX_MIXED) {
        int one_shard = b->kind == BOX_SHARD && b->n == 1;
        draw_rect(d, r, b, b->kind, b->t0, b->t1, one_shard);
        double w = box_px(d, b);
        if (one_shard && w > 80 && d->row_h >= 12) {
            const zg_placement *pl = &d->p->p[b->first];
            char cfg[48];
            zg_sbuf_printf(d->s,
                           "<text x='%.1f' y='%.1f' fill='#fff' pointer-events='none'>s%lld "
                           "θ=%s</text>\n",
                           d->left + b->t0 * d->pps + 3, d->top + r * d->row_h + d->row_h * 0.65,
                           (long long)pl->id, zg_config_name(pl->config, cfg, sizeof cfg));
        }
        return;
    }
    double split = b->t0 + (b->t1 - b->t0) * b->compute / (b->compute + b->comm);
    draw_rect(d, r, b, BOX_MIXED, b->t0, split, 0);
    if (b->comm > 0) draw_rect(d, r, b, BOX_COMM, split, b->t1, 0);
}

// Adds span b to rank r's row: merged into the box being built when both are the same kind
// (shards of different sequences only when one is narrow), or when both are narrow (a mixed
// box; idle never mixes); otherwise the box is drawn and b starts the next one.
static void box_push(gantt_draw *d, int32_t r, gbox b) {
    if (!(b.t1 > b.t0)) return;
    gbox *a = &d->acc[r];
    if (a->kind >= 0) {
        int narrow_a = box_px(d, a) < ZG_GANTT_MIN_PX, narrow_b = box_px(d, &b) < ZG_GANTT_MIN_PX;
        int same = a->kind == b.kind && (b.kind != BOX_SHARD || narrow_a || narrow_b);
        int mix = a->kind != BOX_IDLE && b.kind != BOX_IDLE && narrow_b &&
                  (narrow_a || a->kind == BOX_MIXED);
        if (same || mix) {
            if (!same) a->kind = BOX_MIXED;
            a->t1 = b.t1;
            a->compute += b.compute;
            a->comm += b.comm;
            a->n += b.n;
            a->tokens += b.tokens;
            return;
        }
        box_draw(d, r, a);
    }
    *a = b;
}

static void box_flush(gantt_draw *d, int32_t R) {
    for (int32_t r = 0; r < R; r++) {
        if (d->acc[r].kind >= 0) box_draw(d, r, &d->acc[r]);
        d->acc[r].kind = -1;
    }
}

// Closes a round: every rank's clock moves to the round's end (its slowest rank); returns it.
static double round_end(double *x_at, int32_t R) {
    double end = 0;
    for (int32_t r = 0; r < R; r++)
        if (x_at[r] > end) end = x_at[r];
    for (int32_t r = 0; r < R; r++) x_at[r] = end;
    return end;
}

// The smallest tick step of 1, 2 or 5 times a power of ten with at most 6 steps on the axis.
static double tick_step(double axis) {
    double base = pow(10, floor(log10(axis / 6)));
    const double m[] = {1, 2, 5, 10};
    for (int i = 0; i < 4; i++)
        if (axis / (m[i] * base) <= 6) return m[i] * base;
    return 10 * base;
}

void zg_html_gantt_legend(zg_html *h) {
    zg_sbuf *s = &h->body;
    zg_sbuf_puts(s, "<ul class='legend' id='gantt-legend'>");
    for (int k = 0; k < BOX_KINDS; k++) {
        zg_sbuf_printf(s, "<li><span class='swatch' style='background:%s%s'></span>",
                       box_fill[k], k == BOX_SHARD ? ";outline:1px solid #08306b" : "");
        zg_sbuf_escape_html(s, box_name[k]);
        zg_sbuf_puts(s, "</li>");
    }
    zg_sbuf_puts(
        s, "<li><span class='swatch' style='border-left:2px dashed #c00;width:2px'></span>this "
           "policy's makespan</li></ul>\n<p class='note'>Each row is one rank; every chart uses "
           "the same time axis, so bars compare across policies. A sequence runs either whole on "
           "one rank or split over λ = q·h·k ranks by a configuration <b>θ = (q,h,k)</b>: q query "
           "shards (all-gather context parallelism: each rank gathers the full K/V), h head "
           "groups (Ulysses all-to-all), k key/value shards (ring attention). A split "
           "sequence's shards are outlined and labelled <i>s&lt;id&gt; θ=(q,h,k)</i> where they "
           "are wide enough; its exposed communication (the time the model does not overlap "
           "with compute) follows its compute. A rank is idle from its last placement until the "
           "slowest rank ends (with rounds, each round's slowest rank). Spans narrower than a "
           "few pixels are drawn merged: adjacent spans of one kind as one box, a run of mixed "
           "kinds as one 'mixed' box (its compute, then its communication); hover a box for "
           "what it holds.</p>\n");
}

// Per rank, its placements in engine order, each as compute then exposed communication, and
// idle until the round's end; rounds (megatron's microbatch groups) one after another on the
// time axis, each starting when the previous round's slowest rank ends, with a thin separator
// and the round's number at each boundary.
void zg_html_gantt(zg_html *h, const char *title, const zg_plan *p, const zg_gantt_opts *o) {
    static const zg_gantt_opts none = {0};
    if (!o) o = &none;
    zg_sbuf *s = &h->body;
    int32_t R = p->world_size;
    const double W = 900, left = 44, top = 18;
    const double row_h = R > 64 ? 4 : (R > 32 ? 8 : (R > 16 ? 12 : 18));
    double height = top + R * row_h + 22;
    gantt_item *items = malloc(sizeof *items * (size_t)(p->n ? p->n : 1));
    double *x_at = calloc(2 * (size_t)(R > 0 ? R : 1), sizeof *x_at), *ends = x_at + R;
    gbox *acc = calloc((size_t)(R > 0 ? R : 1), sizeof *acc);
    zg_sbuf_printf(s, "<figure class='gantt-fig%s%s'><figcaption>", o->css_class ? " " : "",
                   o->css_class ? o->css_class : "");
    zg_sbuf_escape_html(s, title);
    if (!items || !x_at || !acc) {
        free(items);
        free(x_at);
        free(acc);
        s->oom = 1; // the page is not written
        zg_sbuf_puts(s, "</figcaption></figure>\n");
        return;
    }
    for (int64_t i = 0; i < p->n; i++)
        items[i] = (gantt_item){i, p->p[i].round, p->p[i].n_ranks};
    qsort(items, (size_t)p->n, sizeof *items, cmp_engine_order);
    int32_t n_rounds = p->n ? items[p->n - 1].round + 1 : 1;
    // the makespan: the sum over rounds of the slowest rank
    double makespan = 0, busy = 0, comm = 0;
    for (int64_t t = 0; t < p->n; t++) {
        const zg_placement *pl = &p->p[items[t].idx];
        if (t > 0 && pl->round != items[t - 1].round) round_end(x_at, R);
        double c = o->comm_s ? o->comm_s[items[t].idx] : 0;
        c = c > 0 ? (c < pl->time ? c : pl->time) : 0;
        for (int32_t j = 0; j < pl->n_ranks; j++) {
            if (pl->ranks[j] < 0 || pl->ranks[j] >= R) continue;
            x_at[pl->ranks[j]] += pl->time;
            busy += pl->time, comm += c;
        }
    }
    makespan = round_end(x_at, R);
    // a shared axis shorter than this plan (beyond rounding) would cut its bars: use the plan's
    double axis = o->axis_s > 0 && makespan <= o->axis_s * (1 + 1e-9) ? o->axis_s : makespan;
    if (!(axis > 0)) axis = 1;
    gantt_draw d = {s, p, left, top, row_h, W / axis, n_rounds, acc, 0};
    double total = makespan * (R > 0 ? R : 1);
    zg_sbuf_printf(s, " — makespan %.4g s", makespan);
    if (n_rounds > 1) zg_sbuf_printf(s, ", %d rounds run one after another", n_rounds);
    double idle = total - busy > 0 ? total - busy : 0; // rounding can leave -1e-13
    if (total > 0)
        zg_sbuf_printf(s, "; rank time: %.1f%% compute, %.1f%% communication, %.1f%% idle",
                       100 * (busy - comm) / total, 100 * comm / total, 100 * idle / total);
    if (o->note) {
        zg_sbuf_puts(s, "; ");
        zg_sbuf_escape_html(s, o->note);
    }
    zg_sbuf_printf(s,
                   "</figcaption>\n<svg class='gantt' data-axis-s='%.6g' data-makespan-s='%.6g' "
                   "xmlns='http://www.w3.org/2000/svg' width='%.0f' height='%.0f' "
                   "font-family='sans-serif' font-size='10'>\n",
                   axis, makespan, left + W + 30, height);
    // the shared axis: grid lines and ticks at the same seconds in every chart of this axis
    double step = tick_step(axis);
    zg_sbuf_puts(s, "<g class='axis'>");
    for (int k = 0; k * step <= axis * (1 + 1e-9); k++) {
        double x = left + W * k * step / axis;
        zg_sbuf_printf(s,
                       "<line x1='%.1f' y1='%.0f' x2='%.1f' y2='%.0f' stroke='#eee'/><text "
                       "class='tick' x='%.1f' y='%.0f' text-anchor='middle'>%.4g s</text>",
                       x, top, x, top + R * row_h, x, top + R * row_h + 13, k * step);
    }
    zg_sbuf_puts(s, "</g>\n");
    for (int32_t r = 0; r < R; r++) {
        if (R <= 32 || r % 8 == 0)
            zg_sbuf_printf(s, "<text x='%.0f' y='%.1f' text-anchor='end'>r%d</text>\n", left - 4,
                           top + r * row_h + row_h * 0.7, r);
        x_at[r] = 0;
        acc[r].kind = -1;
    }
    // the boxes
    for (int64_t t = 0; t <= p->n; t++) {
        const zg_placement *pl = t < p->n ? &p->p[items[t].idx] : NULL;
        if (t > 0 && (!pl || pl->round != items[t - 1].round)) {
            for (int32_t r = 0; r < R; r++) ends[r] = x_at[r];
            double end = round_end(x_at, R);
            for (int32_t r = 0; r < R; r++)
                box_push(&d, r, (gbox){BOX_IDLE, ends[r], end, 0, 0, 1, 0, -1, 0});
            if (pl) {
                double x = left + W * end / axis;
                zg_sbuf_printf(s,
                               "<line x1='%.2f' y1='%.0f' x2='%.2f' y2='%.0f' stroke='#555' "
                               "stroke-width='0.8'/><text x='%.2f' y='%.0f'>round %d</text>\n",
                               x, top - 12, x, top + R * row_h, x + 2, top - 3, pl->round);
            }
        }
        if (!pl) break;
        double c = o->comm_s ? o->comm_s[items[t].idx] : 0;
        c = c > 0 ? (c < pl->time ? c : pl->time) : 0;
        int split = pl->n_ranks > 1;
        for (int32_t j = 0; j < pl->n_ranks; j++) {
            int32_t r = pl->ranks[j];
            if (r < 0 || r >= R) continue;
            int64_t tok = pl->shards[j].end - pl->shards[j].start;
            double t0 = x_at[r], t1 = t0 + pl->time - c;
            box_push(&d, r, (gbox){split ? BOX_SHARD : BOX_WHOLE, t0, t1, pl->time - c, 0, 1, tok,
                                   items[t].idx, j});
            box_push(&d, r, (gbox){BOX_COMM, t1, t0 + pl->time, 0, c, 1, 0, items[t].idx, j});
            x_at[r] += pl->time;
        }
    }
    box_flush(&d, R);
    // this plan's makespan
    zg_sbuf_printf(s,
                   "<line class='makespan' x1='%.2f' y1='%.0f' x2='%.2f' y2='%.0f' stroke='#c00' "
                   "stroke-dasharray='4 3'/>\n</svg>\n",
                   left + W * makespan / axis, top - 6, left + W * makespan / axis,
                   top + R * row_h);
    zg_sbuf_puts(s, "</figure>\n");
    free(items);
    free(x_at);
    free(acc);
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
                 "bottom:4px}.note{font-size:0.85em;color:#555}h1{font-size:1.6em}ul.legend{list-"
                 "style:none;padding:0;display:flex;flex-wrap:wrap;gap:4px 18px;font-size:0.9em}"
                 ".swatch{display:inline-block;width:16px;height:11px;margin-right:5px;vertical-"
                 "align:middle}.failed,.over-cap,.failure,.over-cap figcaption{color:#b00000}"
                 "table.problems td,table.problems th{text-align:left}td.reason{max-width:640px}"
                 "</style></head><body>\n");
    zg_sbuf_puts(&page, h->body.data ? h->body.data : "");
    zg_sbuf_puts(&page, "</body></html>\n");
    zg_status st = page.oom || h->body.oom
                       ? zg_error_set(err, ZG_ERR_NOMEM, "out of memory building %s", path)
                       : zg_file_write_atomic(path, page.data, page.len, err);
    zg_sbuf_free(&page);
    return st;
}
