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
// Per-rank Gantt of one step: one row per rank, one box per placement on the rank (width =
// per-rank price), boxes of one sequence share a colour across ranks; split sequences are
// outlined and labelled with their config so shards are visibly split. Runs in engine order
// (descending degree, then plan order).
void zg_html_gantt(zg_html *h, const char *title, const zg_plan *p, const zg_batch *b);
// Grouped bars: n_groups groups (e.g. mixes) × n_series bars (e.g. policies); values[g*n_series
// + s]; NaN or <= 0 draws an "n/a" marker (infeasible).
void zg_html_bars(zg_html *h, const char *title, const char *y_label, int32_t n_groups,
                  const char *const *groups, int32_t n_series, const char *const *series,
                  const double *values);
// Writes the whole page atomically.
zg_status zg_html_write(const zg_html *h, const char *title, const char *path, zg_error *err);

#endif
