// cmds.c — the `aoizora` commands: plan/explain, evidence, price.
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli_aoi.h"

static int opt(int argc, char **argv, int *i, const char *key, const char **out, zg_error *err,
               int *bad) {
    if (strcmp(argv[*i], key)) return 0;
    if (*i + 1 >= argc) {
        *bad = 1;
        zg_error_set(err, ZG_ERR_INVALID, "%s needs a value", key);
        return 1;
    }
    *out = argv[++*i];
    return 1;
}

static int opt_int(int argc, char **argv, int *i, const char *key, int64_t *out, zg_error *err,
                   int *bad) {
    const char *s = NULL;
    if (!opt(argc, argv, i, key, &s, err, bad) || *bad) return *bad || s;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || v < 0) {
        *bad = 1;
        zg_error_set(err, ZG_ERR_INVALID, "%s: '%s' is not a non-negative integer", key, s);
        return 1;
    }
    *out = v;
    return 1;
}

int aoi_parse(int argc, char **argv, aoi_opts *o, zg_error *err) {
    memset(o, 0, sizeof *o);
    o->cmd = argv[0];
    o->model = "wan2.1-1.3b", o->res = "480p", o->topology = "v5e-8";
    o->frames = 81, o->top_k = 4;
    for (int i = 1; i < argc; i++) {
        int bad = 0;
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("aoizora %s [--model M] [--res R] [--frames N] [--topology T] [--training]\n"
                   "  [--batch N] [--top-k K] [--json] [--sharding S] [-o FILE] [--html FILE]\n"
                   "  [--evidence FILE | --hlo FILE] [--search] [--ilp-solver auto|cbc|dp]\n"
                   "Latencies are predictions of an uncalibrated network + roofline model.\n",
                   o->cmd);
            return 2;
        }
        if (!strcmp(a, "--training")) o->training = 1;
        else if (!strcmp(a, "--json")) o->json = 1;
        else if (!strcmp(a, "--search")) o->search = 1;
        else if (opt(argc, argv, &i, "--model", &o->model, err, &bad) ||
                 opt(argc, argv, &i, "--res", &o->res, err, &bad) ||
                 opt(argc, argv, &i, "--topology", &o->topology, err, &bad) ||
                 opt(argc, argv, &i, "--sharding", &o->sharding, err, &bad) ||
                 opt(argc, argv, &i, "-o", &o->out, err, &bad) ||
                 opt(argc, argv, &i, "--html", &o->html, err, &bad) ||
                 opt(argc, argv, &i, "--evidence", &o->evidence, err, &bad) ||
                 opt(argc, argv, &i, "--hlo", &o->hlo, err, &bad) ||
                 opt(argc, argv, &i, "--ilp-solver", &o->ilp_solver, err, &bad) ||
                 opt_int(argc, argv, &i, "--frames", &o->frames, err, &bad) ||
                 opt_int(argc, argv, &i, "--batch", &o->batch, err, &bad) ||
                 opt_int(argc, argv, &i, "--top-k", &o->top_k, err, &bad)) {
            if (bad) return 1;
        } else {
            zg_error_set(err, ZG_ERR_INVALID, "unknown option '%s' (see --help)", a);
            return 1;
        }
    }
    return 0;
}

static zg_status setup(const aoi_opts *o, zg_net *net, zg_aoi_graph *g, zg_error *err) {
    zg_aoi_work w;
    if (zg_net_load(o->topology, net, err)) return err->status;
    if (zg_aoi_work_init(&w, o->model, o->res, o->frames, o->training, (int32_t)o->batch,
                         net->n_devices, err))
        return err->status;
    return zg_aoi_graph_build(&w, g, err);
}

static void fmt_perm(const zg_net *net, const int32_t *perm, char *buf, size_t n) {
    size_t l = 0;
    buf[0] = 0;
    for (int32_t i = 0; i < net->n_devices && l + 8 < n; i++)
        l += (size_t)snprintf(buf + l, n - l, "%s%d", i ? "," : "", perm ? perm[i] : i);
}

typedef struct link_row {
    int32_t link;
    double chosen, dflt;
} link_row;

static int cmp_row(const void *a, const void *b) {
    const link_row *x = a, *y = b;
    double mx = x->chosen > x->dflt ? x->chosen : x->dflt, my = y->chosen > y->dflt ? y->chosen : y->dflt;
    if (mx != my) return mx < my ? 1 : -1;
    return (x->link > y->link) - (x->link < y->link);
}

static zg_status explain(const aoi_opts *o, const zg_aoi_graph *g, const zg_net *net,
                         const zg_aoi_plan *p, zg_error *err) {
    zg_aoi_evidence ev;
    if (zg_aoi_plan_evidence(g, net, p, &ev, err)) return err->status;
    int32_t nl = zg_net_n_links(net);
    double *a = calloc((size_t)nl, sizeof *a), *b = calloc((size_t)nl, sizeof *b);
    link_row *rows = calloc((size_t)nl, sizeof *rows);
    zg_aoi_price pa, pb;
    zg_status st = (!a || !b || !rows) ? zg_error_set(err, ZG_ERR_NOMEM, "explain: out of memory") : ZG_OK;
    if (!st) st = zg_aoi_price_placement(&ev, net, p->perm, a, &pa, err);
    if (!st) st = zg_aoi_price_placement(&ev, net, NULL, b, &pb, err);
    if (!st) {
        printf("why the chosen placement wins (%s on %s): %.4f s vs %.4f s in the default order\n",
               g->work.model.name, net->name, pa.total_s, pb.total_s);
        printf("exposed communication: %.4f s vs %.4f s; busiest directed links (bytes per step):\n",
               pa.exposed_comm_s, pb.exposed_comm_s);
        int32_t n = 0;
        for (int32_t l = 0; l < nl; l++)
            if (a[l] > 0 || b[l] > 0) rows[n].link = l, rows[n].chosen = a[l], rows[n].dflt = b[l], n++;
        qsort(rows, (size_t)n, sizeof *rows, cmp_row);
        printf("%-26s %14s %14s\n", "link", "chosen", "default");
        for (int32_t i = 0; i < n && i < 16; i++) {
            char nm[64];
            zg_net_link_name(net, rows[i].link, nm, sizeof nm);
            printf("%-26s %14.4g %14.4g\n", nm, rows[i].chosen, rows[i].dflt);
        }
        if (o->html) {
            char title[320];
            snprintf(title, sizeof title, "%s on %s: %.4f s (chosen) vs %.4f s (default order)",
                     g->work.model.name, net->name, pa.total_s, pb.total_s);
            st = aoi_write_html(o->html, net, a, b, title, err);
            if (!st) printf("wrote %s\n", o->html);
        }
    }
    free(a), free(b), free(rows);
    zg_aoi_evidence_free(&ev);
    return st;
}

zg_status aoi_cmd_plan(const aoi_opts *o, int do_explain, zg_error *err) {
    zg_net net;
    zg_aoi_graph g;
    if (setup(o, &net, &g, err)) return err->status;
    zg_aoi_plan_opts po;
    zg_aoi_plan_opts_default(&po);
    if (o->top_k > 0) po.top_k = (int32_t)o->top_k;
    if (o->ilp_solver) snprintf(po.ilp_solver, sizeof po.ilp_solver, "%s", o->ilp_solver);
    zg_aoi_plan p;
    if (zg_aoi_plan_run(&g, &net, &po, &p, err)) return err->status;
    zg_status st = ZG_OK;
    if (do_explain) {
        st = explain(o, &g, &net, &p, err);
    } else if (o->json) {
        cJSON *j = zg_aoi_plan_to_json(&g, &net, &p);
        char *s = cJSON_Print(j);
        if (o->out) st = zg_json_write_file(o->out, j, 1, err);
        else printf("%s\n", s);
        free(s);
        cJSON_Delete(j);
    } else {
        char perm[4096];
        fmt_perm(&net, p.perm, perm, sizeof perm);
        printf("aoizora plan: %s, %lld tokens x batch %d, %s on %s\n", g.work.model.name,
               (long long)g.tokens, g.work.batch, g.work.training ? "training step" : "denoising step",
               net.name);
        printf("mesh: (");
        for (int a = 0; a < p.n_axes; a++) printf("%s%d", a ? "," : "", p.mesh_shape[a]);
        printf(") axes (");
        for (int a = 0; a < p.n_axes; a++) printf("%s'%s'", a ? "," : "", p.axis_names[a]);
        printf(")  [%s]%s\n", p.label, p.from_ilp ? "  (the Alpa-style ILP's sharding, placed by AoiZora)" : "");
        printf("device order (jax.sharding.Mesh: np.array(devices)[order].reshape(mesh); devices\n"
               "  sorted by coords, x fastest; torch DeviceMesh rank order is the same): [%s]\n", perm);
        printf("partition specs:\n%s", p.specs);
        char mb[32];
        printf("predicted latency: %.4f s (compute %.4f s, communication %.4f s, exposed %.4f s); "
               "%s per device\n", p.price.total_s, p.price.compute_s, p.price.comm_s,
               p.price.exposed_comm_s, zg_fmt_bytes(p.mem_bytes, mb, sizeof mb));
        printf("same sharding in the default device order: %.4f s (placement gain %.3fx)\n",
               p.default_order_s, p.default_order_s / p.price.total_s);
        printf("baselines (same network model, default device order):\n");
        for (int i = 0; i < p.n_baselines; i++) {
            const zg_aoi_baseline *b = &p.baselines[i];
            if (b->legal)
                printf("  %-20s %.4f s  (%.3fx)  %s\n", b->name, b->latency_s,
                       b->latency_s / p.price.total_s, b->label);
            else
                printf("  %-20s illegal: %s\n", b->name, b->why);
        }
        printf("candidates %d (legal %d), stage-2 shardings %d (incl. the ILP's), placements priced %lld, "
               "ILP (%s, %d mesh shapes) %.2f s, plan time %.2f s\n",
               p.n_cands, p.n_legal, p.n_survivors, (long long)p.placements_priced,
               p.ilp_solver[0] ? p.ilp_solver : "-", p.ilp.n_meshes, p.ilp_solve_s, p.plan_time_s);
        printf("(latencies are model predictions from an uncalibrated network + roofline model)\n");
    }
    zg_aoi_plan_free(&p);
    return st;
}

zg_status aoi_cmd_evidence(const aoi_opts *o, zg_error *err) {
    zg_net net;
    zg_aoi_graph g;
    if (!o->sharding) return zg_error_set(err, ZG_ERR_INVALID, "give --sharding like dp=2,uly=4");
    if (setup(o, &net, &g, err)) return err->status;
    zg_aoi_cand c;
    if (zg_aoi_cand_parse(o->sharding, net.n_devices, &c, err)) return err->status;
    zg_aoi_cand_check(&g, &net, &c);
    if (!c.legal) return zg_error_set(err, ZG_ERR_INFEASIBLE, "%s", c.reject);
    zg_aoi_evidence ev;
    if (zg_aoi_lower(&g, &c, &ev, err)) return err->status;
    cJSON *j = zg_aoi_evidence_to_json(&ev);
    zg_status st = ZG_OK;
    if (o->out) {
        st = zg_json_write_file(o->out, j, 1, err);
    } else {
        char *s = cJSON_Print(j);
        printf("%s\n", s);
        free(s);
    }
    cJSON_Delete(j);
    zg_aoi_evidence_free(&ev);
    return st;
}

zg_status aoi_cmd_price(const aoi_opts *o, zg_error *err) {
    zg_net net;
    if (zg_net_load(o->topology, &net, err)) return err->status;
    zg_aoi_evidence ev;
    if (o->evidence) {
        cJSON *j = NULL;
        if (zg_json_read_file(o->evidence, &j, err)) return err->status;
        zg_status st = zg_aoi_evidence_from_json(j, &ev, err);
        cJSON_Delete(j);
        if (st) return zg_error_prefix(err, "%s: ", o->evidence);
    } else if (o->hlo) {
        char *text = NULL;
        size_t len = 0;
        if (zg_file_read(o->hlo, &text, &len, err)) return err->status;
        zg_status st = zg_aoi_hlo_parse(text, len, &ev, err);
        free(text);
        if (st) return zg_error_prefix(err, "%s: ", o->hlo);
    } else {
        return zg_error_set(err, ZG_ERR_INVALID, "give --evidence FILE or --hlo FILE");
    }
    zg_aoi_coll_summary s;
    zg_aoi_evidence_summary(&ev, &s);
    printf("evidence (%s): %d devices, %d segments, %d collective patterns, %.4g FLOPs per device\n",
           ev.source, ev.num_devices, ev.n_segs, ev.n_patterns, s.flops);
    for (int k = 0; k < ZG_COLL_N; k++)
        if (s.count[k]) printf("  %-20s x%-6lld %.4g bytes\n", zg_coll_kind_name(k), (long long)s.count[k], s.bytes[k]);
    zg_aoi_price p;
    zg_status st = zg_aoi_price_placement(&ev, &net, NULL, NULL, &p, err);
    if (!st) printf("default order on %s: %.6g s (compute %.6g, comm %.6g, exposed %.6g)\n", net.name,
                    p.total_s, p.compute_s, p.comm_s, p.exposed_comm_s);
    if (!st && o->search) {
        zg_aoi_plan_opts po;
        zg_aoi_plan_opts_default(&po);
        zg_aoi_search_result r;
        st = zg_aoi_search(&ev, &net, &po.search, &r, err);
        if (!st) {
            char perm[4096];
            fmt_perm(&net, r.perm, perm, sizeof perm);
            printf("best placement: %.6g s (%.3fx), %lld priced, %lld symmetric skipped, order [%s]\n",
                   r.price.total_s, p.total_s / r.price.total_s, (long long)r.priced,
                   (long long)r.skipped_sym, perm);
            zg_aoi_search_result_free(&r);
        }
    }
    zg_aoi_evidence_free(&ev);
    return st;
}
