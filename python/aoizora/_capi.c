// _capi.c — the flat C entry points the aoizora Python package calls through ctypes.
//
// A thin shim over the library's aoizora module (src/aoizora): the candidate generator and
// stage-1 pruning (zg_aoi_graph_from_dims, zg_aoi_stage1, zg_aoi_experts), our own lowering
// of a candidate priced under the placement search, and XLA's compiled HLO imported to
// evidence (zg_aoi_hlo_parse) and priced under every placement (zg_aoi_search). Inputs and
// outputs are JSON strings; no planning logic lives here. Every function returns a zg_status
// (0 = ok) and writes a one-line message into err[errsz] on failure; nothing exits or aborts.
// Only the aoipy_* symbols are exported. Results are malloc'ed strings freed with aoipy_free.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aoizora/aoizora.h"

#define AOIPY_API __attribute__((visibility("default")))
// Bumped when a signature below changes; python/aoizora/_lib.py checks it.
#define AOIPY_ABI 1

static int fail(const zg_error *e, char *err, size_t errsz) {
    if (err && errsz) snprintf(err, errsz, "%s", e->msg[0] ? e->msg : "aoizora: unknown error");
    return e->status ? (int)e->status : (int)ZG_ERR_INTERNAL;
}

static int emit(cJSON *j, char **out, char *err, size_t errsz) {
    char *s = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    if (!s) {
        zg_error e = {0};
        zg_error_set(&e, ZG_ERR_NOMEM, "aoizora: out of memory writing the result");
        return fail(&e, err, errsz);
    }
    *out = s;
    return 0;
}

static const char *fsdp_name(int32_t f) {
    static const char *n[4] = {"none", "all", "sp", "dp"};
    return f >= 0 && f < 4 ? n[f] : "none";
}

static void add_price(cJSON *o, const char *prefix, const zg_aoi_price *p) {
    char k[64];
    snprintf(k, sizeof k, "%stotal_s", prefix), cJSON_AddNumberToObject(o, k, p->total_s);
    snprintf(k, sizeof k, "%scompute_s", prefix), cJSON_AddNumberToObject(o, k, p->compute_s);
    snprintf(k, sizeof k, "%scomm_s", prefix), cJSON_AddNumberToObject(o, k, p->comm_s);
    snprintf(k, sizeof k, "%sexposed_comm_s", prefix),
        cJSON_AddNumberToObject(o, k, p->exposed_comm_s);
}

// Default-order price and placement search of one evidence, as JSON fields of o.
static zg_status price_and_search(const zg_aoi_evidence *ev, const zg_net *net, int search,
                                  cJSON *o, zg_error *e) {
    zg_aoi_price def;
    zg_status st = zg_aoi_price_placement(ev, net, NULL, NULL, &def, e);
    if (st) return st;
    add_price(o, "default_", &def);
    if (!search) return ZG_OK;
    zg_aoi_plan_opts po;
    zg_aoi_plan_opts_default(&po);
    zg_aoi_search_result r;
    if ((st = zg_aoi_search(ev, net, &po.search, &r, e))) return st;
    add_price(o, "best_", &r.price);
    cJSON_AddItemToObject(o, "device_order", cJSON_CreateIntArray((const int *)r.perm, net->n_devices));
    cJSON_AddNumberToObject(o, "placements_priced", (double)r.priced);
    cJSON_AddNumberToObject(o, "placements_skipped_symmetric", (double)r.skipped_sym);
    zg_aoi_search_result_free(&r);
    return ZG_OK;
}

static cJSON *evidence_summary(const zg_aoi_evidence *ev) {
    cJSON *s = cJSON_CreateObject();
    zg_aoi_coll_summary cs;
    zg_aoi_evidence_summary(ev, &cs);
    cJSON_AddStringToObject(s, "source", ev->source);
    cJSON_AddNumberToObject(s, "num_devices", ev->num_devices);
    cJSON_AddNumberToObject(s, "flops_per_device", cs.flops);
    cJSON_AddNumberToObject(s, "peak_mem_bytes", ev->peak_mem_bytes);
    cJSON_AddStringToObject(s, "peak_mem_source", ev->peak_mem_source);
    cJSON *notes = cJSON_AddArrayToObject(s, "notes");
    for (int i = 0; i < ev->n_notes && i < ZG_AOI_MAX_NOTES; i++)
        cJSON_AddItemToArray(notes, cJSON_CreateString(ev->notes[i]));
    cJSON_AddNumberToObject(s, "n_notes", ev->n_notes);
    cJSON_AddNumberToObject(s, "segments", ev->n_segs);
    cJSON_AddNumberToObject(s, "patterns", ev->n_patterns);
    cJSON *c = cJSON_AddObjectToObject(s, "collectives");
    for (int k = 0; k < ZG_COLL_N; k++) {
        if (!cs.count[k]) continue;
        cJSON *x = cJSON_AddObjectToObject(c, zg_coll_kind_name((zg_coll_kind)k));
        cJSON_AddNumberToObject(x, "count", (double)cs.count[k]);
        cJSON_AddNumberToObject(x, "bytes", cs.bytes[k]);
    }
    return s;
}

AOIPY_API int aoipy_abi_version(void) {
    return AOIPY_ABI;
}

AOIPY_API void aoipy_free(void *p) {
    free(p);
}

// {"name","device","n_devices","dims":[..],"wrap":[..],"hbm_bytes","peak_flops"} of a preset
// name ("v5e-8", "v5e:4x4", ...) or a topology JSON file.
AOIPY_API int aoipy_topology(const char *name, char **out, char *err, size_t errsz) {
    zg_error e = {0};
    zg_net net;
    if (!name || zg_net_load(name, &net, &e)) {
        if (!name) zg_error_set(&e, ZG_ERR_INVALID, "topology: no name given");
        return fail(&e, err, errsz);
    }
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "name", net.name);
    cJSON_AddStringToObject(j, "device", net.device);
    cJSON_AddStringToObject(j, "kind", net.kind == ZG_NET_GRID ? "grid" : "switched");
    cJSON_AddNumberToObject(j, "n_devices", net.n_devices);
    cJSON_AddItemToObject(j, "dims", cJSON_CreateIntArray((const int *)net.dims, net.ndims));
    cJSON_AddItemToObject(j, "wrap", cJSON_CreateIntArray((const int *)net.wrap, net.ndims));
    cJSON_AddNumberToObject(j, "hbm_bytes", net.hbm_bytes);
    cJSON_AddNumberToObject(j, "peak_flops", net.peak_flops);
    return emit(j, out, err, errsz);
}

static zg_status get_int(const cJSON *spec, const char *key, int64_t lo, int64_t hi, int req,
                         int64_t def, int64_t *v, zg_error *e) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(spec, key);
    if (!x) {
        if (req) return zg_error_set(e, ZG_ERR_INVALID, "program spec: '%s' is missing", key);
        *v = def;
        return ZG_OK;
    }
    if (!cJSON_IsNumber(x) || x->valuedouble != (double)(int64_t)x->valuedouble ||
        x->valuedouble < (double)lo || x->valuedouble > (double)hi)
        return zg_error_set(e, ZG_ERR_INVALID, "program spec: '%s' must be an integer in %lld..%lld",
                            key, (long long)lo, (long long)hi);
    *v = (int64_t)x->valuedouble;
    return ZG_OK;
}

// The program's dimensions and the topology -> every candidate with its stage-1 price (legal
// first, by price), the top_k survivors, the expert configurations, and (for survivors and
// experts) our own lowering priced in the default order and under the placement search.
// With "alpa_ilp": 1, also the Alpa-style ILP's sharding: its own lowering priced in the
// default order and placed, its mesh and per-op roles ("ops": kind, one role letter per mesh
// dimension, FSDP) which aoizora.jax maps onto a user's function. Each lowered candidate's
// "lowering" carries "digest" and "digest_blocking" (zg_aoi_evidence_digest, hex).
// spec: {"topology": "v5e-8", "name": "wan_block", "tokens": N, "text": T, "dim": D,
//        "heads": H, "ffn": F, "layers": L, "batch": B, "training": 0|1, "top_k": K,
//        "alpa_ilp": 0|1}
AOIPY_API int aoipy_candidates(const char *spec_json, char **out, char *err, size_t errsz) {
    zg_error e = {0};
    cJSON *spec = spec_json ? cJSON_Parse(spec_json) : NULL;
    if (!spec || !cJSON_IsObject(spec)) {
        cJSON_Delete(spec);
        zg_error_set(&e, ZG_ERR_PARSE, "program spec: not a JSON object");
        return fail(&e, err, errsz);
    }
    zg_aoi_dims d;
    memset(&d, 0, sizeof d);
    int64_t v[10];
    const char *topo = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(spec, "topology"));
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(spec, "name"));
    zg_status st = ZG_OK;
    if (!topo) st = zg_error_set(&e, ZG_ERR_INVALID, "program spec: 'topology' (a string) is missing");
    if (!st) st = get_int(spec, "tokens", 1, (int64_t)1 << 40, 1, 0, &v[0], &e);
    if (!st) st = get_int(spec, "text", 0, (int64_t)1 << 30, 0, 0, &v[1], &e);
    if (!st) st = get_int(spec, "dim", 1, 1 << 20, 1, 0, &v[2], &e);
    if (!st) st = get_int(spec, "heads", 1, 1 << 16, 1, 0, &v[3], &e);
    if (!st) st = get_int(spec, "ffn", 1, 1 << 22, 1, 0, &v[4], &e);
    if (!st) st = get_int(spec, "layers", 1, 100000, 0, 1, &v[5], &e);
    if (!st) st = get_int(spec, "batch", 1, 1 << 20, 1, 0, &v[6], &e);
    if (!st) st = get_int(spec, "training", 0, 1, 0, 0, &v[7], &e);
    if (!st) st = get_int(spec, "top_k", 1, 1 << 20, 0, 4, &v[8], &e);
    if (!st) st = get_int(spec, "alpa_ilp", 0, 1, 0, 0, &v[9], &e);
    zg_net net;
    if (!st) st = zg_net_load(topo, &net, &e);
    if (st) {
        cJSON_Delete(spec);
        return fail(&e, err, errsz);
    }
    snprintf(d.name, sizeof d.name, "%s", name ? name : "program");
    d.tokens = v[0], d.text = v[1], d.dim = (int32_t)v[2], d.heads = (int32_t)v[3];
    d.ffn = (int32_t)v[4], d.layers = (int32_t)v[5], d.batch = (int32_t)v[6];
    d.training = (int32_t)v[7];
    int32_t top_k = (int32_t)v[8], with_ilp = (int32_t)v[9];
    cJSON_Delete(spec);

    zg_aoi_graph g;
    if (zg_aoi_graph_from_dims(&d, &g, &e)) return fail(&e, err, errsz);
    zg_aoi_cand *cs = NULL;
    int32_t nc = 0, n_legal = 0;
    if (zg_aoi_stage1(&g, &net, &cs, &nc, &n_legal, &e)) return fail(&e, err, errsz);
    int32_t K = top_k < n_legal ? top_k : n_legal;
    char names[ZG_AOI_MAX_BASELINES][32];
    zg_aoi_cand ex[ZG_AOI_MAX_BASELINES];
    int32_t n_ex = zg_aoi_experts(&g, &net, names, ex);
    int32_t ex_index[ZG_AOI_MAX_BASELINES];
    for (int32_t i = 0; i < n_ex; i++) {
        ex_index[i] = -1;
        for (int32_t k = 0; k < nc; k++)
            if (cs[k].dp == ex[i].dp && cs[k].ring == ex[i].ring && cs[k].uly == ex[i].uly &&
                cs[k].tp == ex[i].tp && cs[k].fsdp == ex[i].fsdp)
                ex_index[i] = k;
    }

    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "topology", net.name);
    cJSON_AddNumberToObject(j, "n_devices", net.n_devices);
    cJSON_AddNumberToObject(j, "params", g.params);
    cJSON_AddNumberToObject(j, "n_legal", n_legal);
    cJSON_AddNumberToObject(j, "survivors", K);
    cJSON *arr = cJSON_AddArrayToObject(j, "candidates");
    for (int32_t k = 0; k < nc && !st; k++) {
        const zg_aoi_cand *c = &cs[k];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(arr, o);
        char lab[96];
        zg_aoi_cand_label(c, lab, sizeof lab);
        cJSON_AddStringToObject(o, "label", lab);
        cJSON_AddNumberToObject(o, "dp", c->dp);
        cJSON_AddNumberToObject(o, "ring", c->ring);
        cJSON_AddNumberToObject(o, "uly", c->uly);
        cJSON_AddNumberToObject(o, "tp", c->tp);
        cJSON_AddStringToObject(o, "fsdp", fsdp_name(c->fsdp));
        int fm = zg_aoi_cand_fsdp_mask(c);
        cJSON *fa = cJSON_AddArrayToObject(o, "fsdp_axes");
        if ((fm & 1) && c->dp > 1) cJSON_AddItemToArray(fa, cJSON_CreateString("dp"));
        if ((fm & 2) && c->ring > 1) cJSON_AddItemToArray(fa, cJSON_CreateString("ring"));
        if ((fm & 4) && c->uly > 1) cJSON_AddItemToArray(fa, cJSON_CreateString("sp"));
        cJSON_AddItemToObject(o, "mesh_shape", cJSON_CreateIntArray((const int *)c->shape, c->n_axes));
        cJSON *an = cJSON_AddArrayToObject(o, "axis_names");
        for (int a = 0; a < c->n_axes; a++) cJSON_AddItemToArray(an, cJSON_CreateString(c->names[a]));
        cJSON_AddBoolToObject(o, "legal", c->legal);
        if (!c->legal) {
            cJSON_AddStringToObject(o, "reject", c->reject);
            continue;
        }
        cJSON_AddNumberToObject(o, "stage1_s", c->stage1_s);
        cJSON_AddNumberToObject(o, "mem_bytes", c->mem_bytes);
        int want = k < K;
        for (int32_t i = 0; i < n_ex; i++) want |= ex_index[i] == k;
        if (!want) continue;
        zg_aoi_evidence ev;
        if ((st = zg_aoi_lower(&g, c, &ev, &e))) break;
        cJSON *lw = cJSON_AddObjectToObject(o, "lowering");
        char dg[2][20];
        snprintf(dg[0], sizeof dg[0], "%016llx",
                 (unsigned long long)zg_aoi_evidence_digest(&ev, ZG_AOI_DIGEST_BLOCKING));
        snprintf(dg[1], sizeof dg[1], "%016llx",
                 (unsigned long long)zg_aoi_evidence_digest(&ev, ZG_AOI_DIGEST_ALL));
        cJSON_AddStringToObject(lw, "digest_blocking", dg[0]);
        cJSON_AddStringToObject(lw, "digest", dg[1]);
        st = price_and_search(&ev, &net, 1, lw, &e);
        zg_aoi_evidence_free(&ev);
    }
    cJSON *ea = cJSON_AddArrayToObject(j, "experts");
    for (int32_t i = 0; i < n_ex; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(ea, o);
        char lab[96];
        zg_aoi_cand_label(&ex[i], lab, sizeof lab);
        cJSON_AddStringToObject(o, "name", names[i]);
        cJSON_AddStringToObject(o, "label", lab);
        cJSON_AddBoolToObject(o, "legal", ex[i].legal);
        if (!ex[i].legal) cJSON_AddStringToObject(o, "reject", ex[i].reject);
        cJSON_AddNumberToObject(o, "index", ex_index[i]);
    }
    free(cs);
    // the Alpa-style ILP (XLA auto-sharding's per-op ILP, exact): its own program priced
    if (!st && with_ilp) {
        zg_aoi_autoshard as;
        cJSON *io = cJSON_AddObjectToObject(j, "alpa_ilp");
        st = zg_aoi_autoshard_run(&g, &net, "auto", &as, &e);
        if (!st && !as.found) cJSON_AddStringToObject(io, "reject", "no 2-D mesh fits in memory");
        if (!st && as.found) {
            zg_aoi_as_problem p;
            if (!(st = zg_aoi_as_build(&g, &net, as.mesh[0], as.mesh[1], &p, &e))) {
                char lab[256];
                zg_aoi_as_label(&p, &as.sol, lab, sizeof lab);
                cJSON_AddStringToObject(io, "label", lab);
                cJSON_AddStringToObject(io, "solver", as.sol.solver);
                cJSON_AddNumberToObject(io, "solve_s", as.solve_s);
                cJSON_AddItemToObject(io, "mesh", cJSON_CreateIntArray((const int *)as.mesh, 2));
                // per op: its kind and the role of each mesh dimension (R replicated, B batch,
                // S sequence, D output features / heads, K contraction), FSDP of its weights
                static const char R[] = "RBSDK";
                static const char *const KIND[] = {"elem", "gemm", "self_attn", "cross_attn"};
                cJSON *ops = cJSON_AddArrayToObject(io, "ops");
                for (int b = 0; b < p.n_blocks; b++)
                    for (int jx = 0; jx < p.blocks[b].n_ops; jx++) {
                        const zg_aoi_as_op *op = &p.blocks[b].ops[jx];
                        const zg_aoi_as_strat *sg = &op->s[as.sol.pick[b][jx]];
                        char roles[3] = {R[sg->role[0]], R[sg->role[1]], 0};
                        cJSON *oj = cJSON_CreateObject();
                        cJSON_AddItemToArray(ops, oj);
                        cJSON_AddStringToObject(oj, "block", p.blocks[b].name);
                        cJSON_AddStringToObject(oj, "name", op->name);
                        cJSON_AddStringToObject(oj, "kind", KIND[op->kind]);
                        cJSON_AddStringToObject(oj, "roles", roles);
                        cJSON_AddBoolToObject(oj, "fsdp", sg->fsdp);
                    }
                zg_aoi_evidence ev;
                if (!(st = zg_aoi_as_lower(&p, &as.sol, &ev, &e))) {
                    st = price_and_search(&ev, &net, 1, io, &e);
                    zg_aoi_evidence_free(&ev);
                }
                zg_aoi_as_free(&p);
            }
        }
    }
    if (st) {
        cJSON_Delete(j);
        return fail(&e, err, errsz);
    }
    return emit(j, out, err, errsz);
}

// XLA's compiled (post-SPMD-partitioning) HLO text -> evidence -> price in the default order
// and (search = 1) under the placement search on `topology`. trip_count: the repeat of while
// loops the HLO gives no known_trip_count for (0: once, with a note). Result: {"evidence":
// summary (collectives, FLOPs, peak memory and its source, the importer's notes),
// "default_total_s", ..., "best_total_s", ..., "device_order": [...], "placements_priced"}.
AOIPY_API int aoipy_price_hlo(const char *hlo, size_t len, const char *topology, int search,
                              int64_t trip_count, char **out, char *err, size_t errsz) {
    zg_error e = {0};
    zg_net net;
    if (!hlo || !topology) {
        zg_error_set(&e, ZG_ERR_INVALID, "price_hlo: no HLO text or no topology given");
        return fail(&e, err, errsz);
    }
    if (zg_net_load(topology, &net, &e)) return fail(&e, err, errsz);
    zg_aoi_evidence ev;
    zg_aoi_hlo_opts ho;
    zg_aoi_hlo_opts_default(&ho);
    if (trip_count > 0) ho.trip_count = trip_count;
    if (zg_aoi_hlo_parse_opts(hlo, len, &ho, &ev, &e)) return fail(&e, err, errsz);
    if (ev.num_devices != net.n_devices) {
        zg_error_set(&e, ZG_ERR_INVALID,
                     "the HLO program is partitioned over %d devices but %s has %d; compile it "
                     "for a mesh of %d devices", ev.num_devices, net.name, net.n_devices,
                     net.n_devices);
        zg_aoi_evidence_free(&ev);
        return fail(&e, err, errsz);
    }
    cJSON *j = cJSON_CreateObject();
    cJSON_AddItemToObject(j, "evidence", evidence_summary(&ev));
    zg_status st = price_and_search(&ev, &net, search, j, &e);
    zg_aoi_evidence_free(&ev);
    if (st) {
        cJSON_Delete(j);
        return fail(&e, err, errsz);
    }
    return emit(j, out, err, errsz);
}
