// net_price.c — collectives mapped onto directed links: per-dimension phases, ring vs line,
// contention summed over concurrent groups, alpha per step; and least-squares calibration.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "topo/network.h"

typedef struct phase_acc {
    double *load;     // (n_links) bytes per link for this phase
    double lat;       // longest path latency among the phase's flows
    zg_net_hop *hops; // (ZG_NET_MAX_HOPS) scratch
} phase_acc;

static void flow(const zg_net *n, phase_acc *p, int32_t src, int32_t dst, double bytes) {
    if (src == dst || bytes <= 0) return;
    double lat = 0;
    int32_t nh = zg_net_route(n, src, dst, p->hops, &lat);
    for (int32_t i = 0; i < nh; i++) p->load[p->hops[i].link] += bytes * p->hops[i].frac;
    if (lat > p->lat) p->lat = lat;
}

// Max over links of load / (bw * eff); *argmax gets the link.
static double phase_time(const zg_net *n, const double *load, double eff, int32_t *argmax,
                         double *maxbytes) {
    double best = 0;
    int32_t nl = zg_net_n_links(n);
    *argmax = -1, *maxbytes = 0;
    for (int32_t l = 0; l < nl; l++) {
        if (load[l] <= 0) continue;
        double bw = zg_net_link_bw(n, l);
        double t = bw > 0 ? load[l] / (bw * eff) : INFINITY;
        if (t > best) best = t, *argmax = l, *maxbytes = load[l];
    }
    return best;
}

// Bytes of a line (or ring) over positions p[0..m-1], chunk c per member (all-gather pattern).
static void chain(const zg_net *n, phase_acc *a, const int32_t *p, int32_t m, double c, int ring) {
    if (m < 2) return;
    if (ring) {
        for (int32_t i = 0; i < m; i++) {
            int32_t j = (i + 1) % m;
            flow(n, a, p[i], p[j], (m - 1) * c / 2);
            flow(n, a, p[j], p[i], (m - 1) * c / 2);
        }
        return;
    }
    for (int32_t i = 0; i + 1 < m; i++) {
        flow(n, a, p[i], p[i + 1], (i + 1) * c);
        flow(n, a, p[i + 1], p[i], (m - 1 - i) * c);
    }
}

typedef struct group_shape {
    int cart;                       // members form a Cartesian product of coordinates
    int32_t ext[ZG_NET_MAX_DIMS];   // distinct coordinates per dimension
} group_shape;

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static void shape_of(const zg_net *n, const int32_t *mem, int32_t S, int32_t *tmp,
                     group_shape *g) {
    int64_t prod = 1;
    for (int d = 0; d < ZG_NET_MAX_DIMS; d++) {
        for (int32_t i = 0; i < S; i++) {
            int32_t c[ZG_NET_MAX_DIMS];
            zg_net_coords(n, mem[i], c);
            tmp[i] = c[d];
        }
        qsort(tmp, (size_t)S, sizeof *tmp, cmp_i32);
        int32_t u = S ? 1 : 0;
        for (int32_t i = 1; i < S; i++) u += tmp[i] != tmp[i - 1];
        g->ext[d] = u;
        prod *= u;
    }
    g->cart = prod == S;  // members are distinct, so equality means the full product
}

// One phase along dimension d for every group: lines of members sharing the other coords.
static void dim_phase(const zg_net *n, phase_acc *a, const int32_t *members, int32_t G, int32_t S,
                      int d, double c, int32_t *line, int32_t *key) {
    for (int32_t g = 0; g < G; g++) {
        const int32_t *mem = members + (size_t)g * S;
        for (int32_t i = 0; i < S; i++) {
            int32_t co[ZG_NET_MAX_DIMS];
            zg_net_coords(n, mem[i], co);
            co[d] = 0;
            key[i] = zg_net_device_at(n, co);
        }
        for (int32_t i = 0; i < S; i++) {
            int first = 1;
            for (int32_t j = 0; j < i; j++)
                if (key[j] == key[i]) first = 0;
            if (!first) continue;
            int32_t m = 0;
            for (int32_t j = 0; j < S; j++)
                if (key[j] == key[i]) line[m++] = mem[j];
            // sort the line by coordinate along d (device ids order the same way)
            qsort(line, (size_t)m, sizeof *line, cmp_i32);
            int ring = n->kind == ZG_NET_SWITCHED || (n->wrap[d] && m == n->dims[d]);
            chain(n, a, line, m, c, ring);
        }
    }
}

zg_status zg_net_coll_price(const zg_net *n, zg_coll_kind kind, double bytes, int32_t G,
                            int32_t S, const int32_t *members, double *link_bytes,
                            zg_net_cost *out, zg_error *err) {
    memset(out, 0, sizeof *out);
    out->bottleneck_link = -1;
    if (kind < 0 || kind >= ZG_COLL_N)
        return zg_error_set(err, ZG_ERR_INVALID, "collective kind %d out of range", (int)kind);
    if (G < 1 || S < 1 || (kind == ZG_COLL_PERMUTE && S != 2) || !(bytes >= 0))
        return zg_error_set(err, ZG_ERR_INVALID,
                            "%s: %d groups of %d members, %g bytes (need >= 1 group, permute "
                            "pairs of 2, bytes >= 0)", zg_coll_kind_name(kind), G, S, bytes);
    for (int64_t i = 0; i < (int64_t)G * S; i++)
        if (members[i] < 0 || members[i] >= n->n_devices)
            return zg_error_set(err, ZG_ERR_INVALID, "%s: device %d not in 0..%d of %s",
                                zg_coll_kind_name(kind), members[i], n->n_devices - 1, n->name);
    if (kind != ZG_COLL_PERMUTE)
        for (int32_t g = 0; g < G; g++)
            for (int32_t i = 0; i < S; i++)
                for (int32_t j = 0; j < i; j++)
                    if (members[g * S + i] == members[g * S + j])
                        return zg_error_set(err, ZG_ERR_INVALID,
                                            "%s: device %d appears twice in group %d",
                                            zg_coll_kind_name(kind), members[g * S + i], g);
    if (S == 1 || bytes == 0) return ZG_OK;

    int32_t nl = zg_net_n_links(n);
    double *loads = zg_calloc((size_t)nl * (ZG_NET_MAX_DIMS + 1), sizeof *loads, err);
    zg_net_hop *hops = zg_calloc(ZG_NET_MAX_HOPS, sizeof *hops, err);
    int32_t *tmp = zg_calloc((size_t)S * 3, sizeof *tmp, err);
    if (!loads || !hops || !tmp) {
        free(loads), free(hops), free(tmp);
        return err ? err->status : ZG_ERR_NOMEM;
    }
    double eff = n->eff[kind];
    phase_acc ph[ZG_NET_MAX_DIMS + 1];
    for (int i = 0; i <= ZG_NET_MAX_DIMS; i++) ph[i].load = loads + (size_t)i * nl, ph[i].lat = 0,
                                               ph[i].hops = hops;

    if (kind == ZG_COLL_PERMUTE || kind == ZG_COLL_ALL_TO_ALL) {
        if (kind == ZG_COLL_PERMUTE) {
            for (int32_t g = 0; g < G; g++) flow(n, &ph[0], members[2 * g], members[2 * g + 1], bytes);
            out->steps = 1;
        } else {
            for (int32_t g = 0; g < G; g++)
                for (int32_t i = 0; i < S; i++)
                    for (int32_t j = 0; j < S; j++)
                        if (i != j) flow(n, &ph[0], members[g * S + i], members[g * S + j], bytes / S);
            out->steps = S - 1;
        }
        out->phases = 1;
        out->bw_time = phase_time(n, ph[0].load, eff, &out->bottleneck_link, &out->max_link_bytes);
        out->lat_time = ph[0].lat;
        if (link_bytes)
            for (int32_t l = 0; l < nl; l++) link_bytes[l] += ph[0].load[l];
    } else {
        // all groups must share one shape for per-dimension phases
        group_shape g0, gs;
        shape_of(n, members, S, tmp, &g0);
        int same = g0.cart;
        for (int32_t g = 1; g < G && same; g++) {
            shape_of(n, members + (size_t)g * S, S, tmp, &gs);
            same = gs.cart && !memcmp(gs.ext, g0.ext, sizeof gs.ext);
        }
        int act[ZG_NET_MAX_DIMS], nact = 0;
        double unit[ZG_NET_MAX_DIMS];
        int32_t arg[ZG_NET_MAX_DIMS];
        double mb[ZG_NET_MAX_DIMS];
        if (same) {
            for (int d = 0; d < ZG_NET_MAX_DIMS; d++)
                if (g0.ext[d] > 1) act[nact++] = d;
            for (int i = 0; i < nact; i++) {
                dim_phase(n, &ph[i], members, G, S, act[i], 1.0, tmp, tmp + S);
                unit[i] = phase_time(n, ph[i].load, eff, &arg[i], &mb[i]);
            }
        } else {
            nact = 1;
            act[0] = -1;
            g0.ext[0] = S;
            for (int32_t g = 0; g < G; g++) chain(n, &ph[0], members + (size_t)g * S, S, 1.0, 0);
            unit[0] = phase_time(n, ph[0].load, eff, &arg[0], &mb[0]);
        }
        // cheapest order of the phases (all-gather direction: chunk grows phase by phase)
        static const int perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                        {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
        int nperm = nact == 3 ? 6 : nact == 2 ? 2 : 1, best_p = 0;
        double best = INFINITY;
        for (int p = 0; p < nperm; p++) {
            double t = 0, chunk = bytes / S;
            for (int k = 0; k < nact; k++) {
                int i = nact == 2 ? (p == 0 ? k : 1 - k) : perms[p][k];
                t += unit[i] * chunk;
                chunk *= act[i] >= 0 ? g0.ext[act[i]] : S;
            }
            if (t < best - 1e-18) best = t, best_p = p;
        }
        double mult = kind == ZG_COLL_ALL_REDUCE ? 2.0 : 1.0;
        double chunk = bytes / S, worst = -1;
        int steps = 0;
        for (int k = 0; k < nact; k++) {
            int i = nact == 2 ? (best_p == 0 ? k : 1 - k) : perms[best_p][k];
            int32_t m = act[i] >= 0 ? g0.ext[act[i]] : S;
            double t = unit[i] * chunk;
            if (t > worst) worst = t, out->bottleneck_link = arg[i], out->max_link_bytes = mb[i] * chunk;
            if (link_bytes)
                for (int32_t l = 0; l < nl; l++) link_bytes[l] += mult * ph[i].load[l] * chunk;
            out->lat_time += mult * ph[i].lat;
            steps += m - 1;
            chunk *= m;
        }
        out->bw_time = mult * best;
        out->steps = (int32_t)(mult * steps);
        out->phases = (int32_t)(mult * nact);
    }
    if (out->phases == 0) out->phases = 1;
    out->alpha_time = n->alpha[kind] * out->steps;
    out->time = out->bw_time + out->alpha_time + out->lat_time;
    free(loads), free(hops), free(tmp);
    return ZG_OK;
}

zg_status zg_net_calibrate(zg_net *net, const zg_net_sample *s, int32_t n, double *rms,
                           zg_error *err) {
    if (n < 0 || (n > 0 && !s))
        return zg_error_set(err, ZG_ERR_INVALID, "calibrate: %d samples", n);
    zg_net base = *net;
    for (int k = 0; k < ZG_COLL_N; k++) base.eff[k] = 1.0, base.alpha[k] = 0;
    double *x = zg_calloc((size_t)(n ? n : 1) * 3, sizeof *x, err);
    if (!x) return err ? err->status : ZG_ERR_NOMEM;
    for (int32_t i = 0; i < n; i++) {
        zg_net_cost c;
        if (!(s[i].measured_s > 0)) {
            free(x);
            return zg_error_set(err, ZG_ERR_INVALID, "calibrate: sample %d has time %g (need > 0)",
                                i, s[i].measured_s);
        }
        if (zg_net_coll_price(&base, s[i].kind, s[i].bytes, s[i].n_groups, s[i].group_size,
                              s[i].members, NULL, &c, err)) {
            free(x);
            return zg_error_prefix(err, "calibrate: sample %d: ", i);
        }
        x[3 * i] = c.bw_time, x[3 * i + 1] = c.steps, x[3 * i + 2] = c.lat_time;
    }
    for (int k = 0; k < ZG_COLL_N; k++) {
        // y = a*x + alpha*steps, least squares over this kind's samples
        double sxx = 0, sxs = 0, sss = 0, sxy = 0, ssy = 0;
        int cnt = 0;
        for (int32_t i = 0; i < n; i++) {
            if (s[i].kind != (zg_coll_kind)k) continue;
            double xv = x[3 * i], st = x[3 * i + 1], y = s[i].measured_s - x[3 * i + 2];
            sxx += xv * xv, sxs += xv * st, sss += st * st, sxy += xv * y, ssy += st * y;
            cnt++;
        }
        if (cnt < 2) continue;
        double det = sxx * sss - sxs * sxs, a, al;
        if (fabs(det) > 1e-30 * (sxx * sss + 1e-300)) {
            a = (sxy * sss - ssy * sxs) / det;
            al = (sxx * ssy - sxs * sxy) / det;
        } else {
            a = sxx > 0 ? sxy / sxx : 1, al = 0;
        }
        if (al < 0) al = 0, a = sxx > 0 ? sxy / sxx : a;  // refit with alpha = 0
        if (!(a > 0.5)) a = 0.5;                          // eff <= 2
        net->eff[k] = 1.0 / a;
        net->alpha[k] = al;
    }
    if (rms) {
        double acc = 0;
        for (int32_t i = 0; i < n; i++) {
            zg_net_cost c;
            zg_net_coll_price(net, s[i].kind, s[i].bytes, s[i].n_groups, s[i].group_size,
                              s[i].members, NULL, &c, NULL);
            double r = (c.time - s[i].measured_s) / s[i].measured_s;
            acc += r * r;
        }
        *rms = n ? sqrt(acc / n) : 0;
    }
    free(x);
    return ZG_OK;
}
