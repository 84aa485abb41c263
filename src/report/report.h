// report — text tables and a self-contained HTML page with inline SVG charts (per-rank Gantt
// of a plan, grouped bars), for `zellige simulate --report` and the benchmarks.
//
// May include: plan, cost, topo, workload, model, core.
#ifndef ZG_REPORT_H
#define ZG_REPORT_H

#include "plan/plan.h"

// Growable string buffer.
typedef struct zg_sbuf {
    char *data;
    size_t len, cap;
    int oom;  // set when an allocation failed; later appends are dropped
} zg_sbuf;
void zg_sbuf_init(zg_sbuf *s);
void zg_sbuf_free(zg_sbuf *s);
void zg_sbuf_printf(zg_sbuf *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void zg_sbuf_puts(zg_sbuf *s, const char *str);
void zg_sbuf_escape_html(zg_sbuf *s, const char *str);

// ---- text tables --------------------------------------------------------------------------------
// A table of n_cols columns; cells are strings; columns right-aligned except the first.
typedef struct zg_table {
    int32_t n_cols, n_rows, cap_rows;
    char **cells;  // n_rows * n_cols, row-major; row 0 is the header
} zg_table;
zg_status zg_table_init(zg_table *t, int32_t n_cols, const char *const *header, zg_error *err);
zg_status zg_table_add_row(zg_table *t, const char *const *cells, zg_error *err);
void zg_table_print(const zg_table *t, FILE *f);
void zg_table_free(zg_table *t);

// ---- HTML page ----------------------------------------------------------------------------------
typedef struct zg_html {
    zg_sbuf body;
} zg_html;
void zg_html_init(zg_html *h);
void zg_html_free(zg_html *h);
void zg_html_heading(zg_html *h, int level, const char *text);
void zg_html_paragraph(zg_html *h, const char *text);
void zg_html_table(zg_html *h, const zg_table *t);
// Per-rank Gantt of one step: one row per rank; what the rank does over time, in the engine's
// order (rounds one after another, inside a round wider placements first, then plan order).
// Each placement is its compute followed by its exposed communication (o->comm_s); after its
// last placement of a round a rank is idle until the round's slowest rank ends. Adjacent spans
// of the same kind on a rank are merged into one box (whole sequences, shards of split
// sequences, communication, idle), and a run of boxes narrower than ZG_GANTT_MIN_PX pixels
// becomes one "mixed" box (its compute, then its communication), so a chart holds at most a
// few hundred shapes per rank however many sequences the batch has. A box that is one shard of
// one split sequence is outlined and, when wide enough, labelled with its id and θ = (q,h,k).
// Every box has a tooltip (<title>) with what it holds. The svg has class 'gantt' and
// data-axis-s = the axis end; charts drawn with the same o->axis_s share the time axis (same
// pixels per second, same ticks), so their bars are comparable.
#define ZG_GANTT_MIN_PX 3.0
typedef struct zg_gantt_opts {
    double axis_s;         // right end of the time axis (s); 0 or less, or shorter than this
                           // plan's makespan: the makespan
    const double *comm_s;  // p->n entries: seconds of each placement's per-rank price that are
                           // exposed communication (0 .. time); NULL: all compute
    const char *note;      // appended to the caption (escaped); NULL: none
    const char *css_class; // extra class of the figure (e.g. "over-cap"); NULL: none
} zg_gantt_opts;
// Writes the colour key of zg_html_gantt's boxes (an HTML list, id 'gantt-legend') with the
// θ = (q,h,k) notation explained; put it once above the charts.
void zg_html_gantt_legend(zg_html *h);
void zg_html_gantt(zg_html *h, const char *title, const zg_plan *p, const zg_gantt_opts *o);
// Grouped bars: n_groups groups (e.g. mixes) × n_series bars (e.g. policies); values[g*n_series
// + s]; NaN or <= 0 draws an "n/a" marker (infeasible).
void zg_html_bars(zg_html *h, const char *title, const char *y_label, int32_t n_groups,
                  const char *const *groups, int32_t n_series, const char *const *series,
                  const double *values);
// Writes the whole page atomically.
zg_status zg_html_write(const zg_html *h, const char *title, const char *path, zg_error *err);

#endif
