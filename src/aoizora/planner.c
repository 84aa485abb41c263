// planner.c — the two-stage planner: stage 1 prices every legal candidate placement-
// obliviously and keeps the top K; stage 2 lowers each survivor once and searches placements
// priced from its evidence. Baselines (expert configurations and the Alpa-style per-op ILP,
// both in the default device order) are priced with the same network model; the ILP's
// sharding is also a stage-2 survivor, so AoiZora can place it.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aoizora/aoizora.h"

void zg_aoi_plan_opts_default(zg_aoi_plan_opts *o) {
    *o = (zg_aoi_plan_opts){.top_k = 4, .search.exhaustive_max = 8, .search.local_rounds = 8,
              .search.seed = 1};
    snprintf(o->ilp_solver, sizeof o->ilp_solver, "auto");
    o->place_ilp = 1;
}

// Stage-1 score: overlap walk with one-link alpha-beta collective costs (no placement).
static zg_status stage1_score(const zg_aoi_graph *g, const zg_net *net, const zg_aoi_cand *c,
                              double *stage1, zg_error *err) {
    zg_aoi_evidence ev;
    if (zg_aoi_lower(g, c, &ev, err)) return err->status;
    zg_aoi_pattern_cost *pc = zg_calloc((size_t)ev.n_patterns + 1, sizeof *pc, err);
    if (!pc) {
        zg_aoi_evidence_free(&ev);
        return err ? err->status : ZG_ERR_NOMEM;
    }
    zg_aoi_price p;
    zg_aoi_pattern_costs_logical(&ev, net, 0, pc);
    zg_aoi_walk(&ev, net, pc, 1, &p);
    *stage1 = p.total_s;
    free(pc);
    zg_aoi_evidence_free(&ev);
    return ZG_OK;
}

static zg_status price_default(const zg_aoi_graph *g, const zg_net *net, const zg_aoi_cand *c,
                               zg_aoi_price *p, zg_error *err) {
    zg_aoi_evidence ev;
    if (zg_aoi_lower(g, c, &ev, err)) return err->status;
    zg_status st = zg_aoi_price_placement(&ev, net, NULL, NULL, p, err);
    zg_aoi_evidence_free(&ev);
    return st;
}

static int32_t host_chips(const zg_net *net) {
    if (net->kind == ZG_NET_SWITCHED) return net->dims[0] * net->dims[1];
    return !strcmp(net->device, "tpu-v5p") ? 4 : 8;
}

// Largest divisor of n that is <= cap and divides `of`.
static int32_t best_div(int32_t n, int32_t cap, int32_t of) {
    for (int32_t v = cap < n ? cap : n; v > 1; v--)
        if (n % v == 0 && of % v == 0) return v;
    return 1;
}

// Expert configuration: tp (given), dp (given), the rest sequence parallel: Ulysses as wide as
// the heads allow, ring for what remains; FSDP only when replicated weights do not fit.
static void expert(const zg_aoi_graph *g, const zg_net *net, int32_t dp, int32_t tp,
                   int force_fsdp, zg_aoi_cand *c) {
    memset(c, 0, sizeof *c);
    int32_t rest = net->n_devices / (dp * tp);
    c->dp = dp, c->tp = tp;
    c->uly = best_div(rest, rest, g->work.model.n_heads / tp);
    c->ring = rest / c->uly;
    c->fsdp = force_fsdp;
    zg_aoi_cand_check(g, net, c);
    if (!c->legal && !c->fsdp && dp * c->uly * c->ring > 1) {
        zg_aoi_cand f = *c;
        f.fsdp = 1;
        zg_aoi_cand_check(g, net, &f);
        if (f.legal) *c = f;
    }
}

static void add_baseline(const zg_aoi_graph *g, const zg_net *net, zg_aoi_plan *plan,
                         const char *name, const zg_aoi_cand *c, zg_error *err) {
    if (plan->n_baselines >= ZG_AOI_MAX_BASELINES) return;
    zg_aoi_baseline *b = &plan->baselines[plan->n_baselines++];
    memset(b, 0, sizeof *b);
    snprintf(b->name, sizeof b->name, "%.31s", name);
    zg_aoi_cand_label(c, b->label, sizeof b->label);
    b->legal = c->legal;
    if (!c->legal) {
        snprintf(b->why, sizeof b->why, "%s", c->reject);
        return;
    }
    zg_aoi_price p;
    if (price_default(g, net, c, &p, err)) {
        b->legal = 0;
        snprintf(b->why, sizeof b->why, "%.190s", err ? err->msg : "pricing failed");
        return;
    }
    b->latency_s = p.total_s;
}

static int cmp_stage1(const void *a, const void *b) {
    const zg_aoi_cand *x = a, *y = b;
    if (x->legal != y->legal) return y->legal - x->legal;
    if (x->stage1_s != y->stage1_s) return (x->stage1_s > y->stage1_s) - (x->stage1_s < y->stage1_s);
    const int32_t kx[5] = {x->dp, x->ring, x->uly, x->tp, x->fsdp};
    const int32_t ky[5] = {y->dp, y->ring, y->uly, y->tp, y->fsdp};
    for (int i = 0; i < 5; i++)
        if (kx[i] != ky[i]) return (kx[i] > ky[i]) - (kx[i] < ky[i]);
    return 0;
}

static void describe_cand(zg_aoi_plan *plan) {
    const zg_aoi_cand *c = &plan->cand;
    zg_aoi_cand_label(c, plan->label, sizeof plan->label);
    zg_aoi_partition_specs(c, plan->specs, sizeof plan->specs);
    plan->n_axes = c->n_axes;
    memcpy(plan->mesh_shape, c->shape, sizeof plan->mesh_shape);
    memcpy(plan->axis_names, c->names, sizeof plan->axis_names);
    plan->mem_bytes = c->mem_bytes;
}

// The Alpa-style baseline: the exact ILP per 2-D mesh, its program priced in the default
// device order; with place_ilp, AoiZora also searches placements of that sharding.
static zg_status ilp_stage(const zg_aoi_graph *g, const zg_net *net, const zg_aoi_plan_opts *o,
                           zg_aoi_plan *plan, zg_error *err) {
    zg_aoi_autoshard as;
    zg_status st = zg_aoi_autoshard_run(g, net, o->ilp_solver[0] ? o->ilp_solver : "auto", &as, err);
    if (st) return st;
    plan->ilp_solve_s = as.solve_s;
    plan->ilp = as;
    if (plan->n_baselines >= ZG_AOI_MAX_BASELINES) return ZG_OK;
    zg_aoi_baseline *b = &plan->baselines[plan->n_baselines++];
    memset(b, 0, sizeof *b);
    snprintf(b->name, sizeof b->name, "alpa_ilp");
    if (!as.found) {
        snprintf(b->why, sizeof b->why, "no 2-D mesh has an assignment within %.1f GiB per chip "
                 "(%d mesh shapes solved)", net->hbm_bytes * net->hbm_usable_frac / 1073741824.0, as.n_meshes);
        return ZG_OK;
    }
    snprintf(plan->ilp_solver, sizeof plan->ilp_solver, "%s", as.sol.solver);
    zg_aoi_as_problem p;
    if ((st = zg_aoi_as_build(g, net, as.mesh[0], as.mesh[1], &p, err))) return st;
    zg_aoi_as_label(&p, &as.sol, b->label, sizeof b->label);
    zg_aoi_evidence ev;
    if ((st = zg_aoi_as_lower(&p, &as.sol, &ev, err))) {
        zg_aoi_as_free(&p);
        return st;
    }
    zg_aoi_price def;
    st = zg_aoi_price_placement(&ev, net, NULL, NULL, &def, err);
    if (!st) b->legal = 1, b->latency_s = def.total_s;
    if (!st && o->place_ilp) {
        zg_aoi_search_result r;
        st = zg_aoi_search(&ev, net, &o->search, &r, err);
        if (!st) {
            plan->placements_priced += r.priced;
            plan->n_survivors++;
            if (r.price.total_s < plan->price.total_s * (1 - 1e-12)) {
                free(plan->perm);
                plan->perm = r.perm;
                plan->price = r.price;
                plan->default_order_s = def.total_s;
                plan->from_ilp = 1;
                snprintf(plan->label, sizeof plan->label, "%s", b->label);
                zg_aoi_as_partition_specs(&p, &as.sol, plan->specs, sizeof plan->specs);
                plan->n_axes = 2;
                for (int d = 0; d < 2; d++) {
                    plan->mesh_shape[d] = as.mesh[d];
                    snprintf(plan->axis_names[d], sizeof plan->axis_names[d], "%s", d ? "m1" : "m0");
                }
                plan->mem_bytes = as.sol.mem;
            } else {
                zg_aoi_search_result_free(&r);
            }
        }
    }
    zg_aoi_evidence_free(&ev);
    zg_aoi_as_free(&p);
    return st;
}

zg_status zg_aoi_stage1(const zg_aoi_graph *g, const zg_net *net, zg_aoi_cand **cands,
                        int32_t *n, int32_t *n_legal, zg_error *err) {
    zg_aoi_cand *cs = NULL;
    int32_t nc = 0, legal = 0;
    *cands = NULL, *n = 0, *n_legal = 0;
    if (zg_aoi_cand_enumerate(g, net, &cs, &nc, err)) return err->status;
    const char *example = NULL;
    for (int32_t i = 0; i < nc; i++) {
        if (!cs[i].legal) {
            if (!example) example = cs[i].reject;
            continue;
        }
        legal++;
        if (stage1_score(g, net, &cs[i], &cs[i].stage1_s, err)) {
            free(cs);
            return err->status;
        }
    }
    if (legal == 0) {
        zg_status st = zg_error_set(err, ZG_ERR_INFEASIBLE,
                                    "no legal sharding of %s on %s (%d candidates); e.g. %s",
                                    g->work.model.name, net->name, nc, example ? example : "-");
        free(cs);
        return st;
    }
    qsort(cs, (size_t)nc, sizeof *cs, cmp_stage1);  // total order: ties by degrees
    *cands = cs, *n = nc, *n_legal = legal;
    return ZG_OK;
}

int32_t zg_aoi_experts(const zg_aoi_graph *g, const zg_net *net,
                       char names[ZG_AOI_MAX_BASELINES][32], zg_aoi_cand *cands) {
    int32_t N = net->n_devices, H = g->work.model.n_heads, host = host_chips(net), k = 0;
    if (!g->work.training) {
        snprintf(names[k], 32, "expert_ulysses");
        expert(g, net, 1, 1, 0, &cands[k++]);
        if (g->work.batch % 2 == 0 && N % 2 == 0) {
            snprintf(names[k], 32, "expert_cfg_ulysses");
            expert(g, net, 2, 1, 0, &cands[k++]);
        }
        snprintf(names[k], 32, "expert_tp_host_sp");
        expert(g, net, 1, best_div(N, host, H), 0, &cands[k++]);
    } else {
        snprintf(names[k], 32, "expert_fsdp_ulysses");
        expert(g, net, 1, 1, 1, &cands[k++]);
        snprintf(names[k], 32, "expert_fsdp_dp");
        expert(g, net, best_div(N, N, g->work.batch), 1, 1, &cands[k++]);
        snprintf(names[k], 32, "expert_tp_host_sp");
        expert(g, net, 1, best_div(N, host, H), 0, &cands[k++]);
    }
    return k;
}

zg_status zg_aoi_plan_run(const zg_aoi_graph *g, const zg_net *net, const zg_aoi_plan_opts *o,
                          zg_aoi_plan *plan, zg_error *err) {
    double t0 = zg_time_now();
    memset(plan, 0, sizeof *plan);
    zg_aoi_cand *cs = NULL;
    int32_t nc = 0;
    if (zg_aoi_stage1(g, net, &cs, &nc, &plan->n_legal, err)) return err->status;
    plan->n_cands = nc;
    for (int32_t i = 0; i < nc; i++)
        if (!cs[i].legal) {
            snprintf(plan->rejected_example, sizeof plan->rejected_example, "%s", cs[i].reject);
            break;
        }
    int32_t K = o->top_k < plan->n_legal ? o->top_k : plan->n_legal;
    if (K < 1) K = 1;
    plan->n_survivors = K;
    plan->price.total_s = INFINITY;
    zg_status st = ZG_OK;
    for (int32_t k = 0; k < K && !st; k++) {
        zg_aoi_evidence ev;
        if ((st = zg_aoi_lower(g, &cs[k], &ev, err))) break;
        zg_aoi_search_result r;
        st = zg_aoi_search(&ev, net, &o->search, &r, err);
        zg_aoi_price def;
        if (!st) st = zg_aoi_price_placement(&ev, net, NULL, NULL, &def, err);
        zg_aoi_evidence_free(&ev);
        if (st) break;
        plan->placements_priced += r.priced;
        if (r.price.total_s < plan->price.total_s * (1 - 1e-12)) {
            free(plan->perm);
            plan->perm = r.perm;
            plan->price = r.price;
            plan->cand = cs[k];
            plan->default_order_s = def.total_s;
        } else {
            zg_aoi_search_result_free(&r);
        }
    }
    free(cs);
    if (!st) st = ilp_stage(g, net, o, plan, err);
    if (st) {
        zg_aoi_plan_free(plan);
        return st;
    }
    if (!plan->from_ilp) describe_cand(plan);
    // baselines
    char names[ZG_AOI_MAX_BASELINES][32];
    zg_aoi_cand ex[ZG_AOI_MAX_BASELINES];
    int32_t n_ex = zg_aoi_experts(g, net, names, ex);
    for (int32_t i = 0; i < n_ex; i++) add_baseline(g, net, plan, names[i], &ex[i], err);
    plan->plan_time_s = zg_time_now() - t0;
    return ZG_OK;
}

zg_status zg_aoi_plan_evidence(const zg_aoi_graph *g, const zg_net *net, const zg_aoi_plan *plan,
                               zg_aoi_evidence *ev, zg_error *err) {
    if (!plan->from_ilp) return zg_aoi_lower(g, &plan->cand, ev, err);
    zg_aoi_as_problem p;
    if (zg_aoi_as_build(g, net, plan->ilp.mesh[0], plan->ilp.mesh[1], &p, err)) return err->status;
    zg_status st = zg_aoi_as_lower(&p, &plan->ilp.sol, ev, err);
    zg_aoi_as_free(&p);
    return st;
}

void zg_aoi_plan_free(zg_aoi_plan *plan) {
    free(plan->perm);
    plan->perm = NULL;
}

// One PartitionSpec argument: None -> null, 'a' -> "a", ('a','b') -> ["a","b"].
static cJSON *spec_arg(const char *s, size_t n) {
    while (n && (*s == ' ')) s++, n--;
    while (n && s[n - 1] == ' ') n--;
    if (n >= 2 && s[0] == '(' && s[n - 1] == ')') {
        cJSON *a = cJSON_CreateArray();
        size_t i = 1;
        while (i < n - 1) {
            size_t j = i;
            while (j < n - 1 && s[j] != ',') j++;
            cJSON *x = spec_arg(s + i, j - i);
            if (!cJSON_IsNull(x)) cJSON_AddItemToArray(a, x);
            else cJSON_Delete(x);
            i = j + 1;
        }
        return a;
    }
    if (n >= 2 && s[0] == '\'' && s[n - 1] == '\'') {
        char buf[64];
        snprintf(buf, sizeof buf, "%.*s", (int)(n - 2), s + 1);
        return cJSON_CreateString(buf);
    }
    return cJSON_CreateNull();
}

static void trim(char *s) {
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == ':')) s[--n] = 0;
    size_t k = 0;
    while (s[k] == ' ') k++;
    memmove(s, s + k, strlen(s + k) + 1);
}

cJSON *zg_aoi_partition_specs_json(const char *text, cJSON **dims_out) {
    cJSON *j = cJSON_CreateObject(), *dims = cJSON_CreateObject();
    const char *line = text;
    while (line && *line) {
        const char *eol = strchr(line, '\n');
        size_t ll = eol ? (size_t)(eol - line) : strlen(line);
        char prefix[160] = "";
        const char *seg = line;
        for (;;) {
            const char *p = strstr(seg, "P(");
            if (!p || p >= line + ll) break;
            const char *close = strchr(p, ')');
            // the closing parenthesis of P(...) (one nesting level for tuples)
            int depth = 0;
            for (close = p + 1; close < line + ll; close++) {
                if (*close == '(') depth++;
                else if (*close == ')' && --depth == 0) break;
            }
            if (close >= line + ll) break;
            char label[160], dim[48] = "";
            snprintf(label, sizeof label, "%.*s", (int)(p - seg), seg);
            char *lb = strrchr(label, '[');
            if (lb) {
                snprintf(dim, sizeof dim, "%.*s", (int)strcspn(lb, "]") + 1, lb);
                *lb = 0;
            }
            char *colon = strstr(label, ": ");
            if (colon && !prefix[0]) {  // "block/op: x" -> prefix "block/op"
                *colon = 0;
                snprintf(prefix, sizeof prefix, "%s", label);
                memmove(label, colon + 2, strlen(colon + 2) + 1);
            }
            char *par = strchr(label, '(');
            if (par) *par = 0;
            trim(label);
            // "w_qkv, w_ffn_up" and "q,k,v" name several tensors with one spec
            for (char *save = NULL, *nm = strtok_r(label, ",", &save); nm; nm = strtok_r(NULL, ",", &save)) {
                char key[128];
                trim(nm);
                if (!*nm) continue;
                snprintf(key, sizeof key, "%s%s%s", prefix, prefix[0] ? "/" : "", nm);
                cJSON *arr = cJSON_CreateArray();
                size_t i = 2, n = (size_t)(close - p);
                int d = 0;
                size_t start = 2;
                for (; i < n; i++) {
                    if (p[i] == '(') d++;
                    else if (p[i] == ')') d--;
                    else if (p[i] == ',' && d == 0) {
                        cJSON_AddItemToArray(arr, spec_arg(p + start, i - start));
                        start = i + 1;
                    }
                }
                if (n > start) cJSON_AddItemToArray(arr, spec_arg(p + start, n - start));
                if (!cJSON_GetObjectItemCaseSensitive(j, key)) {
                    cJSON_AddItemToObject(j, key, arr);
                    cJSON_AddStringToObject(dims, key, dim);
                } else {
                    cJSON_Delete(arr);
                }
            }
            seg = close + 1;
            while (*seg == ',' || *seg == ' ') seg++;
        }
        line = eol ? eol + 1 : NULL;
    }
    if (dims_out) *dims_out = dims;
    else cJSON_Delete(dims);
    return j;
}

cJSON *zg_aoi_plan_to_json(const zg_aoi_graph *g, const zg_net *net, const zg_aoi_plan *p) {
    cJSON *j = cJSON_CreateObject();
    char specs[2048];
    cJSON_AddStringToObject(j, "model", g->work.model.name);
    cJSON_AddStringToObject(j, "topology", net->name);
    cJSON_AddStringToObject(j, "mode", g->work.training ? "training" : "inference");
    cJSON_AddNumberToObject(j, "tokens", (double)g->tokens);
    cJSON_AddNumberToObject(j, "batch", g->work.batch);
    cJSON_AddStringToObject(j, "sharding", p->label);
    cJSON_AddStringToObject(j, "sharding_source", p->from_ilp ? "alpa_ilp" : "template");
    cJSON_AddItemToObject(j, "mesh_shape", cJSON_CreateIntArray((const int *)p->mesh_shape, p->n_axes));
    cJSON *an = cJSON_AddArrayToObject(j, "axis_names");
    for (int a = 0; a < p->n_axes; a++) cJSON_AddItemToArray(an, cJSON_CreateString(p->axis_names[a]));
    int32_t *order = malloc((size_t)net->n_devices * sizeof *order);
    for (int32_t r = 0; order && r < net->n_devices; r++) order[r] = zg_net_user_index(net, p->perm[r]);
    cJSON_AddItemToObject(j, "device_order", cJSON_CreateIntArray((const int *)(order ? order : p->perm), net->n_devices));
    cJSON_AddItemToObject(j, "torch_rank_order", cJSON_CreateIntArray((const int *)(order ? order : p->perm), net->n_devices));
    cJSON_AddStringToObject(j, "device_numbering", net->has_user_order ? "the topology's device_coords list"
                                                                      : "chips sorted by coordinates, x fastest");
    free(order);
    cJSON *dims = NULL;
    cJSON_AddItemToObject(j, "partition_specs", zg_aoi_partition_specs_json(p->specs, &dims));
    cJSON_AddItemToObject(j, "partition_spec_dims", dims);
    snprintf(specs, sizeof specs, "%s", p->specs);
    cJSON *ps = cJSON_AddArrayToObject(j, "partition_specs_text");
    for (char *save = NULL, *line = strtok_r(specs, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        cJSON_AddItemToArray(ps, cJSON_CreateString(line));
    cJSON_AddNumberToObject(j, "predicted_latency_s", p->price.total_s);
    cJSON_AddNumberToObject(j, "compute_s", p->price.compute_s);
    cJSON_AddNumberToObject(j, "comm_s", p->price.comm_s);
    cJSON_AddNumberToObject(j, "exposed_comm_s", p->price.exposed_comm_s);
    cJSON_AddNumberToObject(j, "default_order_latency_s", p->default_order_s);
    cJSON_AddNumberToObject(j, "mem_bytes_per_device", p->mem_bytes);
    cJSON *b = cJSON_AddObjectToObject(j, "baselines");
    cJSON *bd = cJSON_AddObjectToObject(j, "baseline_configs");
    for (int i = 0; i < p->n_baselines; i++) {
        const zg_aoi_baseline *x = &p->baselines[i];
        if (x->legal) cJSON_AddNumberToObject(b, x->name, x->latency_s);
        else cJSON_AddNullToObject(b, x->name);
        cJSON_AddStringToObject(bd, x->name, x->legal ? x->label : x->why);
    }
    cJSON_AddNumberToObject(j, "candidates", p->n_cands);
    cJSON_AddNumberToObject(j, "legal_candidates", p->n_legal);
    cJSON_AddNumberToObject(j, "stage1_survivors", p->n_survivors);
    cJSON_AddNumberToObject(j, "placements_priced", (double)p->placements_priced);
    cJSON_AddNumberToObject(j, "plan_time_s", p->plan_time_s);
    cJSON_AddStringToObject(j, "ilp_solver", p->ilp_solver);
    cJSON_AddStringToObject(j, "note", "latencies are predictions of an uncalibrated network and roofline model");
    return j;
}
