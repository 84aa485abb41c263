// html.c — `aoizora explain --html`: a self-contained SVG page of per-link loads (chosen
// placement vs the default device order). 2-D grids draw one grid; 3-D grids (v5p) draw one
// 2-D grid per z-layer side by side, with the z-links drawn as arcs between the layers (dashed
// for wraparound links of a torus).
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_aoi.h"

#define CELL 110
#define MARGIN 40
#define GAP 70

typedef struct buf {
    char *h;
    size_t len, cap;
} buf;

static void put(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(buf *b, const char *fmt, ...) {
    if (!b->h) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->h + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0) return;
        if (b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        char *nh = realloc(b->h, b->cap * 2 + (size_t)n);
        if (!nh) {
            free(b->h);
            b->h = NULL;
            return;
        }
        b->h = nh, b->cap = b->cap * 2 + (size_t)n;
    }
}

// Pixel position of a chip: layer z is a panel to the right of layer z-1.
static void pos(const zg_net *net, const int32_t c[3], double *x, double *y) {
    double panel = net->dims[0] * CELL + GAP;
    *x = MARGIN + c[2] * panel + c[0] * CELL;
    *y = MARGIN + 30 + c[1] * CELL;
}

static void shade_of(double load, double mx, int *s) { *s = (int)(230 - 230 * load / mx); }

static void draw(buf *b, const zg_net *net, const double *load, double mx, const char *name) {
    int32_t X = net->dims[0], Y = net->dims[1], Z = net->dims[2], nl = zg_net_n_links(net);
    int W = (int)(2 * MARGIN + Z * (X * CELL + GAP) - GAP - CELL + 40);
    int H = (Y - 1) * CELL + 2 * MARGIN + 90;
    put(b, "<div style=\"margin:8px\"><h3>%s</h3><svg width=\"%d\" height=\"%d\">", name, W, H);
    if (Z > 1)
        for (int32_t z = 0; z < Z; z++) {
            int32_t c0[3] = {0, 0, z};
            double x, y;
            pos(net, c0, &x, &y);
            put(b, "<text x=\"%.0f\" y=\"%d\" font-size=\"13\">z = %d</text>", x - 14, MARGIN, z);
        }
    for (int32_t l = 0; l < nl; l++) {
        if (load[l] <= 0 || zg_net_link_bw(net, l) <= 0) continue;
        int32_t dev = l / (2 * ZG_NET_MAX_DIMS), d = (l / 2) % ZG_NET_MAX_DIMS, dir = l % 2, c[3];
        zg_net_coords(net, dev, c);
        int32_t e[3] = {c[0], c[1], c[2]};
        e[d] = (c[d] + (dir ? net->dims[d] - 1 : 1)) % net->dims[d];
        int wrapped = dir ? c[d] == 0 : c[d] == net->dims[d] - 1;
        double x1, y1, x2, y2, off = dir ? 6 : -6;
        pos(net, c, &x1, &y1);
        pos(net, e, &x2, &y2);
        int sh;
        shade_of(load[l], mx, &sh);
        if (d < 2 && !wrapped) {
            if (d == 0) y1 += off, y2 += off;
            else x1 += off, x2 += off;
            put(b, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"rgb(255,%d,%d)\" "
                   "stroke-width=\"5\"><title>%.4g B</title></line>", x1, y1, x2, y2, sh, sh, load[l]);
        } else {
            // z-links between layer panels, and wraparound links: arcs, up for +, down for -
            double lift = (dir ? 1 : -1) * (d == 2 ? 26 + 18.0 * c[0] : 30);
            double cx = (x1 + x2) / 2, cy = (y1 + y2) / 2 - lift;
            if (d == 1) cx = (x1 + x2) / 2 + lift, cy = (y1 + y2) / 2;
            put(b, "<path d=\"M%.0f,%.0f Q%.0f,%.0f %.0f,%.0f\" fill=\"none\" stroke=\"rgb(255,%d,%d)\" "
                   "stroke-width=\"4\"%s><title>%.4g B</title></path>", x1, y1, cx, cy, x2, y2, sh, sh,
                wrapped ? " stroke-dasharray=\"6,4\"" : "", load[l]);
        }
    }
    for (int32_t z = 0; z < Z; z++)
        for (int32_t y = 0; y < Y; y++)
            for (int32_t x = 0; x < X; x++) {
                int32_t c[3] = {x, y, z};
                double px, py;
                pos(net, c, &px, &py);
                put(b, "<circle cx=\"%.0f\" cy=\"%.0f\" r=\"14\" fill=\"#468\"/><text x=\"%.0f\" y=\"%.0f\" "
                       "fill=\"white\" font-size=\"11\" text-anchor=\"middle\">%d</text>",
                    px, py, px, py + 4, zg_net_device_at(net, c));
            }
    put(b, "</svg></div>");
}

zg_status aoi_write_html(const char *path, const zg_net *net, const double *chosen,
                         const double *dflt, const char *title, zg_error *err) {
    if (net->kind != ZG_NET_GRID)
        return zg_error_set(err, ZG_ERR_UNSUPPORTED,
                            "--html draws TPU grids (2-D and 3-D); %s is a switched GPU network", net->name);
    int32_t nl = zg_net_n_links(net);
    double mx = 1;
    for (int32_t l = 0; l < nl; l++) {
        if (chosen[l] > mx) mx = chosen[l];
        if (dflt[l] > mx) mx = dflt[l];
    }
    buf b = {malloc(65536), 0, 65536};
    put(&b, "<!doctype html><html><head><meta charset=\"utf-8\"><title>aoizora explain</title></head>"
            "<body style=\"font-family:sans-serif\"><h2>%s</h2><p>Link loads on %s (bytes per step per "
            "directed link, darker = heavier, max %.3g B; hover a link for its bytes).%s Predictions of "
            "an uncalibrated model.</p>", title, net->name, mx,
        net->dims[2] > 1 ? " One panel per z-layer; arcs between panels are z-links (dashed: "
                           "wraparound)." : "");
    draw(&b, net, chosen, mx, "chosen placement");
    draw(&b, net, dflt, mx, "default device order");
    put(&b, "</body></html>\n");
    if (!b.h) return zg_error_set(err, ZG_ERR_NOMEM, "html: out of memory");
    zg_status st = zg_file_write_atomic(path, b.h, b.len, err);
    free(b.h);
    return st;
}
