// cmds.c — the `aoizora` commands: plan/explain, evidence, price.
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli_aoi.h"

// ---- options ----------------------------------------------------------------------------------

enum { FLAG, STR, INT };
#define MODEL_CMDS (AOI_PLAN | AOI_EXPLAIN | AOI_EVIDENCE)

typedef struct optdef {
    const char *name, *metavar;
    int kind;
    int64_t lo, hi;  // INT range
    int cmds;        // AOI_* bits of the commands that take it
    int model;       // describes the DiT workload (not used with --hlo / --evidence)
    const char *help;
} optdef;

static const optdef OPTS[] = {
    {"--model", "M", STR, 0, 0, MODEL_CMDS, 1,
     "DiT preset (wan2.1-1.3b, wan2.1-14b, hunyuanvideo-13b, flux-12b, tiny) or a model JSON "
     "file; default wan2.1-1.3b"},
    {"--res", "R", STR, 0, 0, MODEL_CMDS, 1, "resolution: 480p, 544p, 720p or HxW (480x832); default 480p"},
    {"--frames", "N", INT, 1, 1024, MODEL_CMDS, 1, "video frames, 1..1024; default 81"},
    {"--training", NULL, FLAG, 0, 0, MODEL_CMDS, 1,
     "price a training step (forward + backward + AdamW) instead of one denoising step"},
    {"--batch", "N", INT, 1, 4096, MODEL_CMDS, 1,
     "samples per step, 1..4096 (even for Wan inference: the two CFG branches); default 2 for "
     "Wan inference, 1 for HunyuanVideo, the chip count for training"},
    {"--top-k", "K", INT, 1, 1000, AOI_PLAN | AOI_EXPLAIN, 1,
     "shardings kept after the placement-oblivious stage 1, 1..1000; default 4"},
    {"--ilp-solver", "S", STR, 0, 0, AOI_PLAN | AOI_EXPLAIN, 1,
     "solver of the Alpa-style ILP baseline: auto (CBC when built with it), cbc, dp; default auto"},
    {"--topology", "T", STR, 0, 0, AOI_PLAN | AOI_EXPLAIN | AOI_EVIDENCE | AOI_PRICE, 0,
     "the slice: v5e-4 (2x2), v5e-8 (2x4), v5e-16 (4x4), v5e-256 (16x16), v5e:AxB, v5p-4, v5p-8, "
     "v5p-64, v5p:AxBxC, h100x8, pcie8, h100x8-ib:N, or a JSON file {\"preset\": ..., overrides, "
     "\"device_coords\": [[x,y(,z)], ...] for your device list}. TPU wraparound as on the real "
     "slices: a v5e axis has it only when it spans the full 16 chips (a 4x4 v5e sub-slice has "
     "none; v5e-256 is a 16x16 torus); v5p has it on every axis of a 4x4x4 or larger cube "
     "(v5p-64), none below; default v5e-8"},
    {"--sharding", "S", STR, 0, 0, AOI_PLAN | AOI_EVIDENCE, 1,
     "one template sharding, degrees multiplying to the chip count: dp=2,ring=1,uly=4,tp=1 "
     "(omitted degrees are 1) plus fsdp, fsdp_sp or fsdp_dp"},
    {"--hlo", "FILE", STR, 0, 0, AOI_PLAN | AOI_EVIDENCE | AOI_PRICE, 0,
     "XLA's partitioned HLO text (jax.jit(f, ...).lower(...).compile().as_text()), optionally "
     "with XLA's buffer-assignment dump appended (peak memory)"},
    {"--evidence", "FILE", STR, 0, 0, AOI_PLAN | AOI_PRICE, 0,
     "an evidence JSON (written by aoizora evidence -o)"},
    {"--trip-count", "N", INT, 1, 1000000000, AOI_PLAN | AOI_EVIDENCE | AOI_PRICE, 0,
     "with --hlo: repeat count of while loops that have no known_trip_count, 1..1e9 (without "
     "it such a loop counts once, with a note)"},
    {"--json", NULL, FLAG, 0, 0, AOI_PLAN, 0, "print the plan as JSON"},
    {"-o", "FILE", STR, 0, 0, AOI_PLAN | AOI_EVIDENCE, 0,
     "write the JSON (plan, or evidence) to FILE (atomically: nothing is written on an error)"},
    {"--html", "FILE", STR, 0, 0, AOI_EXPLAIN, 0, "also write the per-link load maps as one HTML page"},
    {"--search", NULL, FLAG, 0, 0, AOI_PRICE, 0,
     "also search device orders and print the best one"},
};
#define N_OPTS ((int)(sizeof OPTS / sizeof OPTS[0]))

static const struct {
    const char *name;
    int bit;
    const char *summary, *usage, *what;
} CMDS[] = {
    {"plan", AOI_PLAN, "choose mesh, sharding and device order for a DiT step, or the device order for a given program",
     "aoizora plan [--model M --res R --frames N --training --batch N --top-k K --ilp-solver S] "
     "[--sharding S] [--topology T] [--json] [-o FILE]\n"
     "       aoizora plan (--hlo FILE [--trip-count N] | --evidence FILE) [--topology T] [--json] [-o FILE]",
     "Chooses the logical mesh, the sharding of every tensor and the device order (which chip runs\n"
     "each logical rank) for a DiT step, pricing each candidate's per-device program under many\n"
     "placements with the network model; prints the plan, the baselines priced the same way, and\n"
     "PartitionSpecs. With --sharding only that sharding is placed. With --hlo or --evidence the\n"
     "program is given (its sharding is fixed): the plan is the device order for it."},
    {"explain", AOI_EXPLAIN, "why the chosen placement wins: per-link loads vs the default order",
     "aoizora explain [--model M --res R --frames N --training --batch N --top-k K --ilp-solver S] "
     "[--topology T] [--html FILE]",
     "Plans as `aoizora plan` does, then shows why the chosen placement wins: the busiest directed\n"
     "links (bytes per step) under the chosen order and under the default order."},
    {"evidence", AOI_EVIDENCE, "one sharding's lowering, or XLA HLO text, as evidence JSON",
     "aoizora evidence --sharding S [--model M --res R --frames N --training --batch N] "
     "[--topology T] [-o FILE]\n"
     "       aoizora evidence --hlo FILE [--trip-count N] [-o FILE]",
     "Writes evidence JSON (the placement-free per-device program: compute ops and collectives\n"
     "over logical ids): AoiZora's own lowering of one sharding, or XLA's HLO text read by the\n"
     "importer (its notes say what it could not read exactly)."},
    {"price", AOI_PRICE, "price an evidence JSON or XLA HLO text on a topology",
     "aoizora price (--evidence FILE | --hlo FILE [--trip-count N]) [--topology T] [--search]",
     "Prices a given program on a topology in the default device order (logical rank r on chip r)\n"
     "and, with --search, in the best order found."},
};

int aoi_cmd_bit(const char *name) {
    for (size_t i = 0; i < sizeof CMDS / sizeof CMDS[0]; i++)
        if (!strcmp(CMDS[i].name, name)) return CMDS[i].bit;
    return 0;
}

void aoi_help(FILE *f, const char *cmd) {
    if (!cmd) {
        fprintf(f, "usage: aoizora <command> [options]   (aoizora <command> --help for its options)\n"
                   "commands:\n");
        for (size_t i = 0; i < sizeof CMDS / sizeof CMDS[0]; i++)
            fprintf(f, "  %-9s %s\n", CMDS[i].name, CMDS[i].summary);
        fprintf(f, "Latencies are predictions of an uncalibrated network + roofline model.\n");
        return;
    }
    int bit = aoi_cmd_bit(cmd);
    for (size_t i = 0; i < sizeof CMDS / sizeof CMDS[0]; i++) {
        if (CMDS[i].bit != bit) continue;
        fprintf(f, "usage: %s\n\n%s\n\noptions:\n", CMDS[i].usage, CMDS[i].what);
    }
    for (int i = 0; i < N_OPTS; i++) {
        if (!(OPTS[i].cmds & bit)) continue;
        char head[40];
        snprintf(head, sizeof head, "%s%s%s", OPTS[i].name, OPTS[i].metavar ? " " : "",
                 OPTS[i].metavar ? OPTS[i].metavar : "");
        fprintf(f, "  %-17s ", head);
        // wrap the help at ~78 columns
        const char *h = OPTS[i].help;
        int col = 20;
        while (*h) {
            const char *sp = strchr(h, ' ');
            size_t w = sp ? (size_t)(sp - h) : strlen(h);
            if (col > 20 && col + 1 + (int)w > 99) {
                fprintf(f, "\n%20s", "");
                col = 20;
            } else if (col > 20) {
                fputc(' ', f);
                col++;
            }
            fprintf(f, "%.*s", (int)w, h);
            col += (int)w;
            h += w + (sp ? 1 : 0);
        }
        fprintf(f, "\n");
    }
    fprintf(f, "  -h, --help        this help\n");
    fprintf(f, "Latencies are predictions of an uncalibrated network + roofline model.\n");
}

int aoi_parse(int argc, char **argv, aoi_opts *o, zg_error *err) {
    memset(o, 0, sizeof *o);
    o->cmd = argv[0];
    o->cmd_bit = aoi_cmd_bit(argv[0]);
    o->model = "wan2.1-1.3b", o->res = "480p", o->topology = "v5e-8";
    o->frames = 81, o->top_k = 4;
    int seen[N_OPTS] = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            aoi_help(stdout, o->cmd);
            return 2;
        }
        int k = 0;
        while (k < N_OPTS && strcmp(OPTS[k].name, a)) k++;
        if (k == N_OPTS) {
            zg_error_set(err, ZG_ERR_INVALID, "unknown option '%s' (see aoizora %s --help)", a, o->cmd);
            return 1;
        }
        const optdef *d = &OPTS[k];
        if (!(d->cmds & o->cmd_bit)) {
            zg_error_set(err, ZG_ERR_INVALID, "option %s is not used by '%s' (see aoizora %s --help)",
                         a, o->cmd, o->cmd);
            return 1;
        }
        if (seen[k]++) {
            zg_error_set(err, ZG_ERR_INVALID, "option %s given twice", a);
            return 1;
        }
        if (d->model && !o->model_given) o->model_given = 1, o->model_opt = d->name;
        if (d->kind == FLAG) {
            if (!strcmp(a, "--training")) o->training = 1;
            else if (!strcmp(a, "--json")) o->json = 1;
            else if (!strcmp(a, "--search")) o->search = 1;
            continue;
        }
        if (i + 1 >= argc) {
            zg_error_set(err, ZG_ERR_INVALID, "option %s needs a value (%s)", a, d->metavar);
            return 1;
        }
        const char *v = argv[++i];
        int is_opt = 0;
        for (int q = 0; q < N_OPTS; q++) is_opt |= !strcmp(OPTS[q].name, v);
        if (is_opt || !strcmp(v, "--help") || !strcmp(v, "-h")) {
            zg_error_set(err, ZG_ERR_INVALID, "option %s needs a value (%s), got the option %s", a,
                         d->metavar, v);
            return 1;
        }
        if (!*v) {
            zg_error_set(err, ZG_ERR_INVALID, "option %s: the value is empty", a);
            return 1;
        }
        if (d->kind == INT) {
            char *end = NULL;
            errno = 0;
            long long x = strtoll(v, &end, 10);
            if (end == v || *end) {
                zg_error_set(err, ZG_ERR_INVALID, "%s '%s' is not an integer (%lld..%lld)", a, v,
                             (long long)d->lo, (long long)d->hi);
                return 1;
            }
            if (errno == ERANGE || x < d->lo || x > d->hi) {
                zg_error_set(err, ZG_ERR_INVALID, "%s %s is out of range %lld..%lld", a, v,
                             (long long)d->lo, (long long)d->hi);
                return 1;
            }
            if (!strcmp(a, "--frames")) o->frames = x;
            else if (!strcmp(a, "--batch")) o->batch = x;
            else if (!strcmp(a, "--top-k")) o->top_k = x;
            else if (!strcmp(a, "--trip-count")) o->trip_count = x;
            continue;
        }
        if (!strcmp(a, "--model")) o->model = v;
        else if (!strcmp(a, "--res")) o->res = v;
        else if (!strcmp(a, "--topology")) o->topology = v;
        else if (!strcmp(a, "--sharding")) o->sharding = v;
        else if (!strcmp(a, "-o")) o->out = v;
        else if (!strcmp(a, "--html")) o->html = v;
        else if (!strcmp(a, "--evidence")) o->evidence = v;
        else if (!strcmp(a, "--hlo")) o->hlo = v;
        else if (!strcmp(a, "--ilp-solver")) {
            if (strcmp(v, "auto") && strcmp(v, "cbc") && strcmp(v, "dp")) {
                zg_error_set(err, ZG_ERR_INVALID, "--ilp-solver '%s': use auto, cbc or dp", v);
                return 1;
            }
            o->ilp_solver = v;
        }
    }
    // combinations
    if (o->hlo && o->evidence) {
        zg_error_set(err, ZG_ERR_INVALID, "--hlo %s and --evidence %s: give one program", o->hlo, o->evidence);
        return 1;
    }
    if (o->trip_count && !o->hlo) {
        zg_error_set(err, ZG_ERR_INVALID, "--trip-count %lld applies to --hlo input only",
                     (long long)o->trip_count);
        return 1;
    }
    const char *prog = o->hlo ? "--hlo" : o->evidence ? "--evidence" : NULL;
    if (prog && (o->model_given || o->sharding)) {
        zg_error_set(err, ZG_ERR_INVALID, "%s does not apply with %s %s (the program is given)",
                     o->model_given ? o->model_opt : "--sharding", prog, o->hlo ? o->hlo : o->evidence);
        return 1;
    }
    if (o->cmd_bit == AOI_PRICE && !prog) {
        zg_error_set(err, ZG_ERR_INVALID, "give --evidence FILE or --hlo FILE (see aoizora price --help)");
        return 1;
    }
    if (o->cmd_bit == AOI_EVIDENCE && !o->hlo && !o->sharding) {
        zg_error_set(err, ZG_ERR_INVALID, "give --sharding like dp=2,uly=4, or --hlo FILE (see aoizora evidence --help)");
        return 1;
    }
    if (o->out && o->html && !strcmp(o->out, o->html)) {
        zg_error_set(err, ZG_ERR_INVALID, "-o and --html name the same file '%s'", o->out);
        return 1;
    }
    return 0;
}

// Loads --topology; errors name it.
static zg_status load_net(const aoi_opts *o, zg_net *net, zg_error *err) {
    if (zg_net_load(o->topology, net, err)) return zg_error_prefix(err, "--topology %s: ", o->topology);
    return ZG_OK;
}

static zg_status setup(const aoi_opts *o, zg_net *net, zg_aoi_graph *g, zg_error *err) {
    zg_aoi_work w;
    if (load_net(o, net, err)) return err->status;
    zg_model m;
    if (zg_model_load(o->model, &m, err)) return zg_error_prefix(err, "--model %s: ", o->model);
    if (zg_aoi_work_init(&w, o->model, o->res, o->frames, o->training, (int32_t)o->batch,
                         net->n_devices, err)) {
        if (!strncmp(err->msg, "resolution", 10)) return zg_error_prefix(err, "--res %s: ", o->res);
        if (!strncmp(err->msg, "batch", 5) && o->batch)
            return zg_error_prefix(err, "--batch %lld: ", (long long)o->batch);
        return err->status;
    }
    return zg_aoi_graph_build(&w, g, err);
}

// The program of --hlo or --evidence; errors name the option and the file.
static zg_status load_program(const aoi_opts *o, zg_aoi_evidence *ev, zg_error *err) {
    if (o->evidence) {
        cJSON *j = NULL;
        if (zg_json_read_file(o->evidence, &j, err)) return zg_error_prefix(err, "--evidence %s: ", o->evidence);
        zg_status st = zg_aoi_evidence_from_json(j, ev, err);
        cJSON_Delete(j);
        if (st) return zg_error_prefix(err, "--evidence %s: ", o->evidence);
        return ZG_OK;
    }
    char *text = NULL;
    size_t len = 0;
    if (zg_file_read(o->hlo, &text, &len, err)) return zg_error_prefix(err, "--hlo %s: ", o->hlo);
    zg_aoi_hlo_opts ho;
    zg_aoi_hlo_opts_default(&ho);
    ho.trip_count = o->trip_count;
    zg_status st = zg_aoi_hlo_parse_opts(text, len, &ho, ev, err);
    free(text);
    if (st) return zg_error_prefix(err, "--hlo %s: ", o->hlo);
    return ZG_OK;
}

static zg_status check_devices(const aoi_opts *o, const zg_aoi_evidence *ev, const zg_net *net,
                               zg_error *err) {
    if (ev->num_devices == net->n_devices) return ZG_OK;
    return zg_error_set(err, ZG_ERR_INVALID,
                        "%s %s is a program for %d devices but --topology %s has %d chips (give "
                        "a topology of %d chips)", o->hlo ? "--hlo" : "--evidence",
                        o->hlo ? o->hlo : o->evidence, ev->num_devices, o->topology,
                        net->n_devices, ev->num_devices);
}

static void fmt_perm(const zg_net *net, const int32_t *perm, char *buf, size_t n) {
    size_t l = 0;
    buf[0] = 0;
    for (int32_t i = 0; i < net->n_devices && l + 8 < n; i++)
        l += (size_t)snprintf(buf + l, n - l, "%s%d", i ? "," : "", zg_net_user_index(net, perm ? perm[i] : i));
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

// Writes j to -o (atomically) or prints it.
static zg_status emit_json(const aoi_opts *o, const cJSON *j, zg_error *err) {
    if (o->out) {
        if (zg_json_write_file(o->out, j, 1, err)) return zg_error_prefix(err, "-o %s: ", o->out);
        return ZG_OK;
    }
    char *s = cJSON_Print(j);
    if (!s) return zg_error_set(err, ZG_ERR_NOMEM, "out of memory printing JSON");
    printf("%s\n", s);
    free(s);
    return ZG_OK;
}

// JSON goes to stdout or a file: the importer's notes also go to stderr, so they are seen.
static void warn_notes(const aoi_opts *o, const zg_aoi_evidence *ev) {
    for (int32_t i = 0; i < ev->n_notes && i < ZG_AOI_MAX_NOTES; i++)
        fprintf(stderr, "aoizora %s: warning: %s\n", o->cmd, ev->notes[i]);
}

static void print_notes(const zg_aoi_evidence *ev) {
    for (int32_t i = 0; i < ev->n_notes && i < ZG_AOI_MAX_NOTES; i++) printf("note: %s\n", ev->notes[i]);
    if (ev->n_notes > ZG_AOI_MAX_NOTES) printf("note: ... and %d more\n", ev->n_notes - ZG_AOI_MAX_NOTES);
}

// plan for a given program (--hlo, --evidence, or --sharding's lowering): the device order.
// specs/label/mesh describe the sharding when known (--sharding), else NULL / 0 axes.
static zg_status place_program(const aoi_opts *o, const zg_net *net, const zg_aoi_evidence *ev,
                               const char *label, const char *specs, zg_error *err) {
    zg_aoi_plan_opts po;
    zg_aoi_plan_opts_default(&po);
    zg_aoi_price dflt;
    if (zg_aoi_price_placement(ev, net, NULL, NULL, &dflt, err)) return err->status;
    zg_aoi_search_result r;
    double t0 = zg_time_now();
    if (zg_aoi_search(ev, net, &po.search, &r, err)) return err->status;
    double plan_s = zg_time_now() - t0;
    const char *src = o->hlo ? "hlo" : o->evidence ? "evidence" : "sharding";
    const char *given = o->hlo ? o->hlo : o->evidence ? o->evidence : o->sharding;
    zg_status st = ZG_OK;
    if (o->json || o->out) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "program_source", src);
        cJSON_AddStringToObject(j, "program", given);
        cJSON_AddStringToObject(j, "topology", net->name);
        cJSON_AddNumberToObject(j, "num_devices", ev->num_devices);
        if (label) cJSON_AddStringToObject(j, "sharding", label);
        if (ev->n_axes) {
            cJSON_AddItemToObject(j, "mesh_shape", cJSON_CreateIntArray((const int *)ev->mesh_shape, ev->n_axes));
            cJSON *an = cJSON_AddArrayToObject(j, "axis_names");
            for (int a = 0; a < ev->n_axes; a++) cJSON_AddItemToArray(an, cJSON_CreateString(ev->axis_names[a]));
        }
        cJSON *dorder = cJSON_AddArrayToObject(j, "device_order");
        for (int32_t q = 0; q < net->n_devices; q++)
            cJSON_AddItemToArray(dorder, cJSON_CreateNumber(zg_net_user_index(net, r.perm[q])));
        cJSON_AddItemToObject(j, "torch_rank_order", cJSON_Duplicate(dorder, 1));
        cJSON_AddStringToObject(j, "device_numbering", net->has_user_order ? "the topology's device_coords list"
                                                                          : "chips sorted by coordinates, x fastest");
        if (specs) {
            cJSON *dims = NULL;
            cJSON_AddItemToObject(j, "partition_specs", zg_aoi_partition_specs_json(specs, &dims));
            cJSON_AddItemToObject(j, "partition_spec_dims", dims);
        }
        cJSON_AddNumberToObject(j, "predicted_latency_s", r.price.total_s);
        cJSON_AddNumberToObject(j, "compute_s", r.price.compute_s);
        cJSON_AddNumberToObject(j, "comm_s", r.price.comm_s);
        cJSON_AddNumberToObject(j, "exposed_comm_s", r.price.exposed_comm_s);
        cJSON_AddNumberToObject(j, "default_order_latency_s", dflt.total_s);
        cJSON_AddNumberToObject(j, "placements_priced", (double)r.priced);
        cJSON_AddNumberToObject(j, "peak_mem_bytes", ev->peak_mem_bytes);
        cJSON_AddStringToObject(j, "peak_mem_source", ev->peak_mem_source);
        cJSON *notes = cJSON_AddArrayToObject(j, "notes");
        for (int32_t i = 0; i < ev->n_notes && i < ZG_AOI_MAX_NOTES; i++)
            cJSON_AddItemToArray(notes, cJSON_CreateString(ev->notes[i]));
        cJSON_AddNumberToObject(j, "plan_time_s", plan_s);
        cJSON_AddStringToObject(j, "note", "latencies are predictions of an uncalibrated network and roofline model");
        st = emit_json(o, j, err);
        cJSON_Delete(j);
        if (!st) warn_notes(o, ev);
    } else {
        char perm[4096], mb[32];
        fmt_perm(net, r.perm, perm, sizeof perm);
        printf("aoizora plan: the given program (%s %s), %d devices, on %s\n", o->hlo ? "--hlo" : o->evidence ? "--evidence" : "--sharding", given,
               ev->num_devices, net->name);
        if (label) printf("sharding: %s\n", label);
        zg_aoi_coll_summary cs;
        zg_aoi_evidence_summary(ev, &cs);
        printf("program: %.4g FLOPs per device;", cs.flops);
        int any = 0;
        for (int k = 0; k < ZG_COLL_N; k++)
            if (cs.count[k]) printf(" %s x%lld (%.4g bytes)", zg_coll_kind_name(k), (long long)cs.count[k], cs.bytes[k]), any = 1;
        printf("%s\n", any ? "" : " no collectives");
        if (ev->n_axes) {
            printf("mesh: (");
            for (int a = 0; a < ev->n_axes; a++) printf("%s%d", a ? "," : "", ev->mesh_shape[a]);
            printf(") axes (");
            for (int a = 0; a < ev->n_axes; a++) printf("%s'%s'", a ? "," : "", ev->axis_names[a]);
            printf(")\n");
        }
        printf("device order (logical id / XLA partition i runs on chip order[i]; chips numbered %s): [%s]\n",
               net->has_user_order ? "as in the topology's device_coords" : "by\n  coordinates, x fastest",
               perm);
        if (specs) printf("partition specs:\n%s", specs);
        printf("predicted latency: %.6g s (compute %.6g s, communication %.6g s, exposed %.6g s)\n",
               r.price.total_s, r.price.compute_s, r.price.comm_s, r.price.exposed_comm_s);
        printf("default device order: %.6g s (placement gain %.3fx); placements priced %lld, %lld "
               "symmetric skipped, %.2f s\n", dflt.total_s, dflt.total_s / r.price.total_s,
               (long long)r.priced, (long long)r.skipped_sym, plan_s);
        if (ev->peak_mem_source[0])
            printf("peak memory per device: %s (%s)\n", zg_fmt_bytes(ev->peak_mem_bytes, mb, sizeof mb),
                   ev->peak_mem_source);
        print_notes(ev);
        printf("(latencies are model predictions from an uncalibrated network + roofline model)\n");
    }
    zg_aoi_search_result_free(&r);
    return st;
}

zg_status aoi_cmd_plan(const aoi_opts *o, int do_explain, zg_error *err) {
    zg_net net;
    zg_aoi_graph g;
    if (o->hlo || o->evidence) {
        zg_aoi_evidence ev;
        if (load_net(o, &net, err) || load_program(o, &ev, err)) return err->status;
        zg_status st = check_devices(o, &ev, &net, err);
        if (!st) st = place_program(o, &net, &ev, NULL, NULL, err);
        zg_aoi_evidence_free(&ev);
        return st;
    }
    if (setup(o, &net, &g, err)) return err->status;
    if (o->sharding) {
        zg_aoi_cand c;
        if (zg_aoi_cand_parse(o->sharding, net.n_devices, &c, err))
            return zg_error_prefix(err, "--sharding %s: ", o->sharding);
        zg_aoi_cand_check(&g, &net, &c);
        if (!c.legal)
            return zg_error_set(err, ZG_ERR_INFEASIBLE, "--sharding %s: %s", o->sharding, c.reject);
        zg_aoi_evidence ev;
        if (zg_aoi_lower(&g, &c, &ev, err)) return err->status;
        char label[256], specs[2048];
        zg_aoi_cand_label(&c, label, sizeof label);
        zg_aoi_partition_specs(&c, specs, sizeof specs);
        zg_status st = place_program(o, &net, &ev, label, specs, err);
        zg_aoi_evidence_free(&ev);
        return st;
    }
    zg_aoi_plan_opts po;
    zg_aoi_plan_opts_default(&po);
    if (o->top_k > 0) po.top_k = (int32_t)o->top_k;
    if (o->ilp_solver) snprintf(po.ilp_solver, sizeof po.ilp_solver, "%s", o->ilp_solver);
    zg_aoi_plan p;
    if (zg_aoi_plan_run(&g, &net, &po, &p, err)) return err->status;
    zg_status st = ZG_OK;
    if (do_explain) {
        st = explain(o, &g, &net, &p, err);
    } else if (o->json || o->out) {
        cJSON *j = zg_aoi_plan_to_json(&g, &net, &p);
        st = emit_json(o, j, err);
        cJSON_Delete(j);
    } else {        char perm[4096];
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
               "  %s; torch DeviceMesh rank order is the same): [%s]\n",
               net.has_user_order ? "as listed in the topology's device_coords" : "sorted by coords, x fastest", perm);
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
    zg_aoi_evidence ev;
    if (o->hlo) {
        if (load_program(o, &ev, err)) return err->status;
    } else {
        zg_net net;
        zg_aoi_graph g;
        if (setup(o, &net, &g, err)) return err->status;
        zg_aoi_cand c;
        if (zg_aoi_cand_parse(o->sharding, net.n_devices, &c, err))
            return zg_error_prefix(err, "--sharding %s: ", o->sharding);
        zg_aoi_cand_check(&g, &net, &c);
        if (!c.legal) return zg_error_set(err, ZG_ERR_INFEASIBLE, "--sharding %s: %s", o->sharding, c.reject);
        if (zg_aoi_lower(&g, &c, &ev, err)) return err->status;
    }
    cJSON *j = zg_aoi_evidence_to_json(&ev);
    zg_status st = emit_json(o, j, err);
    cJSON_Delete(j);
    if (!st) warn_notes(o, &ev);
    zg_aoi_evidence_free(&ev);
    return st;
}

zg_status aoi_cmd_price(const aoi_opts *o, zg_error *err) {
    zg_net net;
    zg_aoi_evidence ev;
    if (load_net(o, &net, err) || load_program(o, &ev, err)) return err->status;
    zg_status st = check_devices(o, &ev, &net, err);
    if (st) {
        zg_aoi_evidence_free(&ev);
        return st;
    }
    zg_aoi_coll_summary s;
    zg_aoi_evidence_summary(&ev, &s);
    zg_aoi_price p;
    st = zg_aoi_price_placement(&ev, &net, NULL, NULL, &p, err);
    if (st) {
        zg_aoi_evidence_free(&ev);
        return st;
    }
    char mb[32];
    printf("evidence (%s): %d devices, %d segments, %d collective patterns, %.4g FLOPs per device\n",
           ev.source, ev.num_devices, ev.n_segs, ev.n_patterns, s.flops);
    for (int k = 0; k < ZG_COLL_N; k++)
        if (s.count[k]) printf("  %-20s x%-6lld %.4g bytes\n", zg_coll_kind_name(k), (long long)s.count[k], s.bytes[k]);
    if (ev.peak_mem_source[0])
        printf("peak memory per device: %s (%s)\n", zg_fmt_bytes(ev.peak_mem_bytes, mb, sizeof mb),
               ev.peak_mem_source);
    print_notes(&ev);
    printf("default order on %s: %.6g s (compute %.6g, comm %.6g, exposed %.6g)\n", net.name,
           p.total_s, p.compute_s, p.comm_s, p.exposed_comm_s);
    if (o->search) {
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
