// price.c — per-pattern collective costs (physical via the network model, or logical
// alpha-beta) and the schedule walk that overlaps compute and communication.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aoizora/aoizora.h"

static const zg_aoi_op *pattern_rep(const zg_aoi_evidence *ev, int32_t p) {
    for (int32_t s = 0; s < ev->n_segs; s++)
        for (int32_t i = 0; i < ev->segs[s].n_ops; i++)
            if (ev->segs[s].ops[i].is_coll && ev->segs[s].ops[i].pattern == p)
                return &ev->segs[s].ops[i];
    return NULL;
}

zg_status zg_aoi_pattern_costs(const zg_aoi_evidence *ev, const zg_net *net, const int32_t *perm,
                               zg_aoi_pattern_cost *out, zg_error *err) {
    if (ev->num_devices != net->n_devices)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "evidence is for %d devices but network %s has %d", ev->num_devices,
                            net->name, net->n_devices);
    int32_t *phys = NULL;
    size_t cap = 0;
    for (int32_t p = 0; p < ev->n_patterns; p++) {
        const zg_aoi_op *op = pattern_rep(ev, p);
        size_t tot = (size_t)op->n_groups * op->group_size;
        if (tot > cap) {
            free(phys);
            cap = tot;
            phys = zg_calloc(cap, sizeof *phys, err);
            if (!phys) return err ? err->status : ZG_ERR_NOMEM;
        }
        for (size_t k = 0; k < tot; k++) phys[k] = perm ? perm[op->members[k]] : op->members[k];
        zg_net_cost c;
        if (zg_net_coll_price(net, op->kind, 1.0, op->n_groups, op->group_size, phys, NULL, &c,
                              err)) {
            free(phys);
            return zg_error_prefix(err, "pricing '%s': ", op->name);
        }
        out[p].per_byte = c.bw_time;
        out[p].fixed = c.alpha_time + c.lat_time;
    }
    free(phys);
    return ZG_OK;
}

void zg_aoi_pattern_costs_logical(const zg_aoi_evidence *ev, const zg_net *net, int xla_style,
                                  zg_aoi_pattern_cost *out) {
    for (int32_t p = 0; p < ev->n_patterns; p++) {
        const zg_aoi_op *op = pattern_rep(ev, p);
        double n = op->group_size, beta = 1.0 / (net->link_bw * net->eff[op->kind]);
        double a = net->alpha[op->kind], f = (n - 1) / n;
        switch (op->kind) {
        case ZG_COLL_ALL_GATHER:
        case ZG_COLL_REDUCE_SCATTER: out[p].per_byte = f * beta, out[p].fixed = a * (n - 1); break;
        case ZG_COLL_ALL_REDUCE: out[p].per_byte = 2 * f * beta, out[p].fixed = 2 * a * (n - 1); break;
        case ZG_COLL_ALL_TO_ALL:
            out[p].per_byte = xla_style ? f / n * (n / 2) * beta : f * beta;
            out[p].fixed = a * (n - 1);
            break;
        default: out[p].per_byte = beta, out[p].fixed = a; break;
        }
    }
}

typedef struct pend {
    int64_t need;
    double done;
} pend;

typedef struct walk_state {
    double tc, tm;
    int64_t cidx;
    pend *p;
    int32_t np, cap;
} walk_state;

static double compute_time(const zg_net *net, const zg_aoi_op *op) {
    double a = op->flops / (net->peak_flops * net->flops_eff), b = op->bytes / net->hbm_bw;
    return a > b ? a : b;
}

static void walk_rep(const zg_aoi_segment *sg, const zg_net *net, const zg_aoi_pattern_cost *pc,
                     int overlap_ok, walk_state *w) {
    for (int32_t i = 0; i < sg->n_ops; i++) {
        const zg_aoi_op *op = &sg->ops[i];
        if (!op->is_coll) {
            for (int32_t k = 0; k < w->np;) {
                if (w->p[k].need <= w->cidx) {
                    if (w->p[k].done > w->tc) w->tc = w->p[k].done;
                    w->p[k] = w->p[--w->np];
                } else {
                    k++;
                }
            }
            w->tc += compute_time(net, op);
            w->cidx++;
            continue;
        }
        double dur = pc[op->pattern].per_byte * op->bytes + pc[op->pattern].fixed;
        double start = w->tm > w->tc ? w->tm : w->tc;
        double done = start + dur;
        w->tm = done;
        if (!overlap_ok || op->overlap == 0 || w->np == w->cap) {
            if (done > w->tc) w->tc = done;
        } else {
            w->p[w->np].need = w->cidx + op->overlap;
            w->p[w->np].done = done;
            w->np++;
        }
    }
}

static double flush(walk_state *w) {
    double t = w->tc;
    for (int32_t k = 0; k < w->np; k++)
        if (w->p[k].done > t) t = w->p[k].done;
    return t;
}

void zg_aoi_walk(const zg_aoi_evidence *ev, const zg_net *net, const zg_aoi_pattern_cost *pc,
                 int overlap_ok, zg_aoi_price *out) {
    memset(out, 0, sizeof *out);
    pend buf[256];
    for (int32_t s = 0; s < ev->n_segs; s++) {
        const zg_aoi_segment *sg = &ev->segs[s];
        double rep = (double)sg->repeat;
        for (int32_t i = 0; i < sg->n_ops; i++) {
            const zg_aoi_op *op = &sg->ops[i];
            if (op->is_coll)
                out->comm_s += rep * (pc[op->pattern].per_byte * op->bytes + pc[op->pattern].fixed);
            else
                out->compute_s += rep * compute_time(net, op);
        }
        walk_state w = {0, 0, 0, buf, 0, 256};
        walk_rep(sg, net, pc, overlap_ok, &w);
        if (sg->repeat == 1) {
            out->total_s += flush(&w);
            continue;
        }
        double t1 = w.tc;
        walk_rep(sg, net, pc, overlap_ok, &w);
        double t2 = w.tc, end = flush(&w);
        out->total_s += t1 + (rep - 1) * (t2 - t1) + (end - t2);
    }
    out->exposed_comm_s = out->total_s - out->compute_s;
    if (out->exposed_comm_s < 0) out->exposed_comm_s = 0;
}

zg_status zg_aoi_price_placement(const zg_aoi_evidence *ev, const zg_net *net,
                                 const int32_t *perm, double *link_bytes, zg_aoi_price *out,
                                 zg_error *err) {
    zg_aoi_pattern_cost *pc = zg_calloc((size_t)(ev->n_patterns + 1), sizeof *pc, err);
    if (!pc) return err ? err->status : ZG_ERR_NOMEM;
    zg_status st = zg_aoi_pattern_costs(ev, net, perm, pc, err);
    if (!st) zg_aoi_walk(ev, net, pc, 1, out);
    free(pc);
    if (st || !link_bytes) return st;
    int32_t nl = zg_net_n_links(net);
    double *tmp = zg_calloc((size_t)nl, sizeof *tmp, err);
    int32_t *phys = zg_calloc((size_t)ev->num_devices * ev->num_devices + 2, sizeof *phys, err);
    if (!tmp || !phys) {
        free(tmp), free(phys);
        return err ? err->status : ZG_ERR_NOMEM;
    }
    for (int32_t s = 0; s < ev->n_segs && !st; s++)
        for (int32_t i = 0; i < ev->segs[s].n_ops && !st; i++) {
            const zg_aoi_op *op = &ev->segs[s].ops[i];
            if (!op->is_coll) continue;
            size_t tot = (size_t)op->n_groups * op->group_size;
            if (tot > (size_t)ev->num_devices * ev->num_devices) continue;
            for (size_t k = 0; k < tot; k++) phys[k] = perm ? perm[op->members[k]] : op->members[k];
            memset(tmp, 0, (size_t)nl * sizeof *tmp);
            zg_net_cost c;
            st = zg_net_coll_price(net, op->kind, op->bytes, op->n_groups, op->group_size, phys,
                                   tmp, &c, err);
            for (int32_t l = 0; l < nl; l++) link_bytes[l] += (double)ev->segs[s].repeat * tmp[l];
        }
    free(tmp), free(phys);
    return st;
}
