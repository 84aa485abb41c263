// evidence.c — building, checking, summarizing and (de)serializing evidence records.
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "aoizora/aoizora.h"

void zg_aoi_evidence_init(zg_aoi_evidence *ev, const char *source, int32_t num_devices) {
    memset(ev, 0, sizeof *ev);
    snprintf(ev->source, sizeof ev->source, "%s", source);
    ev->num_devices = num_devices;
}

void zg_aoi_evidence_note(zg_aoi_evidence *ev, const char *fmt, ...) {
    if (ev->n_notes < ZG_AOI_MAX_NOTES) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ev->notes[ev->n_notes], sizeof ev->notes[0], fmt, ap);
        va_end(ap);
    }
    ev->n_notes++;
}

void zg_aoi_evidence_free(zg_aoi_evidence *ev) {
    for (int32_t s = 0; s < ev->n_segs; s++) {
        for (int32_t i = 0; i < ev->segs[s].n_ops; i++) free(ev->segs[s].ops[i].members);
        free(ev->segs[s].ops);
    }
    free(ev->segs);
    memset(ev, 0, sizeof *ev);
}

zg_status zg_aoi_evidence_segment(zg_aoi_evidence *ev, const char *name, int64_t repeat,
                                  zg_error *err) {
    if (repeat < 1)
        return zg_error_set(err, ZG_ERR_INVALID, "segment '%s': repeat %lld must be >= 1", name,
                            (long long)repeat);
    zg_aoi_segment *segs = zg_grow_array(ev->segs, ev->n_segs, &ev->cap_segs, 4, sizeof *segs, err);
    if (!segs) return err ? err->status : ZG_ERR_NOMEM;
    ev->segs = segs;
    zg_aoi_segment *s = &ev->segs[ev->n_segs++];
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    s->repeat = repeat;
    return ZG_OK;
}

static zg_aoi_op *push_op(zg_aoi_evidence *ev, zg_error *err) {
    if (ev->n_segs == 0 && zg_aoi_evidence_segment(ev, "main", 1, err)) return NULL;
    zg_aoi_segment *s = &ev->segs[ev->n_segs - 1];
    zg_aoi_op *o = zg_grow_array(s->ops, s->n_ops, &s->cap_ops, 16, sizeof *o, err);
    if (!o) return NULL;
    s->ops = o;
    zg_aoi_op *op = &s->ops[s->n_ops++];
    memset(op, 0, sizeof *op);
    return op;
}

zg_status zg_aoi_evidence_compute(zg_aoi_evidence *ev, const char *name, double flops,
                                  double bytes, zg_error *err) {
    if (!(flops >= 0) || !(bytes >= 0) || !isfinite(flops) || !isfinite(bytes))
        return zg_error_set(err, ZG_ERR_INVALID,
                            "compute op '%s': flops %g, bytes %g must be finite and >= 0",
                            name, flops, bytes);
    zg_aoi_op *op = push_op(ev, err);
    if (!op) return err ? err->status : ZG_ERR_NOMEM;
    snprintf(op->name, sizeof op->name, "%s", name);
    op->flops = flops, op->bytes = bytes;
    return ZG_OK;
}

zg_status zg_aoi_evidence_coll(zg_aoi_evidence *ev, const char *name, zg_coll_kind kind,
                               double bytes, int32_t G, int32_t S, const int32_t *members,
                               int32_t overlap, zg_error *err) {
    if (G < 1 || S < 1 || !(bytes >= 0) || !isfinite(bytes) || overlap < 0 || kind < 0 || kind >= ZG_COLL_N ||
        (kind == ZG_COLL_PERMUTE && S != 2))
        return zg_error_set(err, ZG_ERR_INVALID,
                            "collective '%s': %d groups of %d, %g bytes, overlap %d (need >= 1 "
                            "group, pairs for permute, finite bytes, bytes and overlap >= 0)", name, G, S, bytes,
                            overlap);
    int32_t *m = zg_calloc((size_t)G * S, sizeof *m, err);
    if (!m) return err ? err->status : ZG_ERR_NOMEM;
    zg_aoi_op *op = push_op(ev, err);
    if (!op) {
        free(m);
        return err ? err->status : ZG_ERR_NOMEM;
    }
    memcpy(m, members, (size_t)G * S * sizeof *m);
    snprintf(op->name, sizeof op->name, "%s", name);
    op->is_coll = 1, op->kind = kind, op->bytes = bytes, op->n_groups = G, op->group_size = S;
    op->members = m, op->overlap = overlap;
    return ZG_OK;
}

static int same_pattern(const zg_aoi_op *a, const zg_aoi_op *b) {
    return a->kind == b->kind && a->n_groups == b->n_groups && a->group_size == b->group_size &&
           !memcmp(a->members, b->members, (size_t)a->n_groups * a->group_size * sizeof(int32_t));
}

zg_status zg_aoi_evidence_finalize(zg_aoi_evidence *ev, zg_error *err) {
    if (ev->num_devices < 1 || ev->num_devices > 4096)
        return zg_error_set(err, ZG_ERR_INVALID, "evidence: num_devices %d not in 1..4096",
                            ev->num_devices);
    const zg_aoi_op **reps = NULL;
    int32_t np = 0, cap = 0;
    for (int32_t s = 0; s < ev->n_segs; s++)
        for (int32_t i = 0; i < ev->segs[s].n_ops; i++) {
            zg_aoi_op *op = &ev->segs[s].ops[i];
            if (!op->is_coll) continue;
            int64_t tot = (int64_t)op->n_groups * op->group_size;
            for (int64_t k = 0; k < tot; k++)
                if (op->members[k] < 0 || op->members[k] >= ev->num_devices) {
                    free(reps);
                    return zg_error_set(err, ZG_ERR_INVALID,
                                        "evidence: %s '%s' uses id %d, outside 0..%d",
                                        zg_coll_kind_name(op->kind), op->name, op->members[k],
                                        ev->num_devices - 1);
                }
            int32_t p = 0;
            while (p < np && !same_pattern(reps[p], op)) p++;
            if (p == np) {
                const zg_aoi_op **r = zg_grow_array(reps, np, &cap, 16, sizeof *r, err);
                if (!r) {
                    free(reps);
                    return err ? err->status : ZG_ERR_NOMEM;
                }
                reps = r;
                reps[np++] = op;
            }
            op->pattern = p;
        }
    free(reps);
    ev->n_patterns = np;
    return ZG_OK;
}

static uint64_t fnv(uint64_t h, const void *data, size_t n) {
    const unsigned char *b = data;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static uint64_t fnv_i64(uint64_t h, int64_t v) {
    unsigned char b[8];
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)v >> (8 * i));
    return fnv(h, b, 8);
}

static uint64_t fnv_f64(uint64_t h, double v) {
    if (v == 0) v = 0;  // -0 and 0 hash alike
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return fnv_i64(h, (int64_t)u);
}

uint64_t zg_aoi_evidence_digest(const zg_aoi_evidence *ev, int flags) {
    uint64_t h = 14695981039346656037ull;
    h = fnv_i64(h, ev->num_devices);
    for (int32_t g = 0; g < ev->n_segs; g++) {
        const zg_aoi_segment *sg = &ev->segs[g];
        h = fnv_i64(h, sg->repeat);
        for (int32_t i = 0; i < sg->n_ops; i++) {
            const zg_aoi_op *op = &sg->ops[i];
            if (op->is_coll && op->overlap > 0 && (flags & ZG_AOI_DIGEST_BLOCKING)) continue;
            h = fnv_i64(h, op->is_coll);
            if (!op->is_coll) {
                h = fnv(h, op->name, strnlen(op->name, sizeof op->name));
                h = fnv_f64(fnv_f64(h, op->flops), op->bytes);
                continue;
            }
            h = fnv_i64(fnv_i64(h, op->kind), op->overlap);
            h = fnv_f64(h, op->bytes);
            h = fnv_i64(fnv_i64(h, op->n_groups), op->group_size);
            for (int64_t k = 0; k < (int64_t)op->n_groups * op->group_size; k++)
                h = fnv_i64(h, op->members[k]);
        }
        h = fnv_i64(h, -1);  // segment end
    }
    return h;
}

void zg_aoi_evidence_summary(const zg_aoi_evidence *ev, zg_aoi_coll_summary *s) {
    memset(s, 0, sizeof *s);
    for (int32_t g = 0; g < ev->n_segs; g++)
        for (int32_t i = 0; i < ev->segs[g].n_ops; i++) {
            const zg_aoi_op *op = &ev->segs[g].ops[i];
            double r = (double)ev->segs[g].repeat;
            if (op->is_coll) {
                s->count[op->kind] += ev->segs[g].repeat;
                s->bytes[op->kind] += r * op->bytes;
            } else {
                s->flops += r * op->flops;
            }
        }
}

// ---- JSON -----------------------------------------------------------------------------------

cJSON *zg_aoi_evidence_to_json(const zg_aoi_evidence *ev) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "version", 1);
    cJSON_AddStringToObject(j, "source", ev->source);
    cJSON_AddNumberToObject(j, "num_devices", ev->num_devices);
    if (ev->n_axes) {
        cJSON_AddItemToObject(j, "mesh_shape",
                              cJSON_CreateIntArray((const int *)ev->mesh_shape, ev->n_axes));
        cJSON *names = cJSON_AddArrayToObject(j, "axis_names");
        for (int a = 0; a < ev->n_axes; a++)
            cJSON_AddItemToArray(names, cJSON_CreateString(ev->axis_names[a]));
    }
    cJSON_AddNumberToObject(j, "peak_mem_bytes", ev->peak_mem_bytes);
    if (ev->peak_mem_source[0]) cJSON_AddStringToObject(j, "peak_mem_source", ev->peak_mem_source);
    if (ev->n_notes) {
        cJSON *notes = cJSON_AddArrayToObject(j, "notes");
        for (int32_t i = 0; i < ev->n_notes && i < ZG_AOI_MAX_NOTES; i++)
            cJSON_AddItemToArray(notes, cJSON_CreateString(ev->notes[i]));
        if (ev->n_notes > ZG_AOI_MAX_NOTES) {
            char more[64];
            snprintf(more, sizeof more, "... and %d more notes", ev->n_notes - ZG_AOI_MAX_NOTES);
            cJSON_AddItemToArray(notes, cJSON_CreateString(more));
        }
    }
    cJSON *segs = cJSON_AddArrayToObject(j, "segments");
    for (int32_t s = 0; s < ev->n_segs; s++) {
        const zg_aoi_segment *sg = &ev->segs[s];
        cJSON *js = cJSON_CreateObject();
        cJSON_AddStringToObject(js, "name", sg->name);
        cJSON_AddNumberToObject(js, "repeat", (double)sg->repeat);
        cJSON *ops = cJSON_AddArrayToObject(js, "ops");
        for (int32_t i = 0; i < sg->n_ops; i++) {
            const zg_aoi_op *op = &sg->ops[i];
            cJSON *jo = cJSON_CreateObject();
            cJSON_AddStringToObject(jo, "op", op->is_coll ? zg_coll_kind_name(op->kind) : "compute");
            cJSON_AddStringToObject(jo, "name", op->name);
            if (!op->is_coll) {
                cJSON_AddNumberToObject(jo, "flops", op->flops);
                cJSON_AddNumberToObject(jo, "bytes", op->bytes);
            } else {
                cJSON_AddNumberToObject(jo, "bytes", op->bytes);
                cJSON *gr = cJSON_AddArrayToObject(jo, op->kind == ZG_COLL_PERMUTE ? "pairs" : "groups");
                for (int32_t g = 0; g < op->n_groups; g++)
                    cJSON_AddItemToArray(gr, cJSON_CreateIntArray(
                                                 (const int *)op->members + g * op->group_size,
                                                 op->group_size));
                cJSON_AddNumberToObject(jo, "overlap", op->overlap);
            }
            cJSON_AddItemToArray(ops, jo);
        }
        cJSON_AddItemToArray(segs, js);
    }
    return j;
}

static zg_status read_groups(const cJSON *arr, const char *ctx, int32_t **out, int32_t *G,
                             int32_t *S, zg_error *err) {
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) < 1)
        return zg_error_set(err, ZG_ERR_PARSE, "%s: groups/pairs must be a non-empty array", ctx);
    *G = cJSON_GetArraySize(arr);
    *S = cJSON_GetArraySize(arr->child);
    if (*S < 1 || *S > 4096 || *G > 4096)
        return zg_error_set(err, ZG_ERR_PARSE, "%s: %d groups of %d members out of range", ctx, *G,
                            *S);
    int32_t *m = zg_calloc((size_t)*G * *S, sizeof *m, err);
    if (!m) return err ? err->status : ZG_ERR_NOMEM;
    int32_t g = 0;
    for (const cJSON *grp = arr->child; grp; grp = grp->next, g++) {
        if (!cJSON_IsArray(grp) || cJSON_GetArraySize(grp) != *S) {
            free(m);
            return zg_error_set(err, ZG_ERR_PARSE, "%s: group %d must be an array of %d ids", ctx,
                                g, *S);
        }
        int32_t k = 0;
        for (const cJSON *id = grp->child; id; id = id->next, k++) {
            if (!cJSON_IsNumber(id) || id->valuedouble != (double)(int32_t)id->valuedouble) {
                free(m);
                return zg_error_set(err, ZG_ERR_PARSE, "%s: group %d has a non-integer id", ctx, g);
            }
            m[g * *S + k] = (int32_t)id->valuedouble;
        }
    }
    *out = m;
    return ZG_OK;
}

static zg_status from_json(const cJSON *j, zg_aoi_evidence *ev, zg_error *err) {
    int64_t nd = 0, ver = 1;
    char src[32] = "json";
    if (!cJSON_IsObject(j)) return zg_error_set(err, ZG_ERR_PARSE, "evidence: expected an object");
    if (zg_json_get_int(j, "version", 0, &ver, "evidence", err) ||
        zg_json_get_int(j, "num_devices", 1, &nd, "evidence", err) ||
        zg_json_get_str(j, "source", 0, src, sizeof src, "evidence", err))
        return err->status;
    if (ver != 1) return zg_error_set(err, ZG_ERR_PARSE, "evidence: version %lld, expected 1", (long long)ver);
    zg_aoi_evidence_init(ev, src, (int32_t)nd);
    if (zg_json_get_num(j, "peak_mem_bytes", 0, &ev->peak_mem_bytes, "evidence", err))
        return err->status;
    if (!(ev->peak_mem_bytes >= 0) || !isfinite(ev->peak_mem_bytes))
        return zg_error_set(err, ZG_ERR_PARSE, "evidence: peak_mem_bytes %g must be finite and >= 0",
                            ev->peak_mem_bytes);
    zg_json_get_str(j, "peak_mem_source", 0, ev->peak_mem_source, sizeof ev->peak_mem_source,
                    "evidence", err);
    const cJSON *notes = cJSON_GetObjectItemCaseSensitive(j, "notes");
    for (const cJSON *n = cJSON_IsArray(notes) ? notes->child : NULL; n; n = n->next)
        if (cJSON_IsString(n)) zg_aoi_evidence_note(ev, "%s", n->valuestring);
    const cJSON *ms = cJSON_GetObjectItemCaseSensitive(j, "mesh_shape");
    const cJSON *an = cJSON_GetObjectItemCaseSensitive(j, "axis_names");
    if (cJSON_IsArray(ms) && cJSON_IsArray(an) && cJSON_GetArraySize(ms) == cJSON_GetArraySize(an) &&
        cJSON_GetArraySize(ms) <= ZG_AOI_MAX_AXES) {
        ev->n_axes = cJSON_GetArraySize(ms);
        for (int a = 0; a < ev->n_axes; a++) {
            ev->mesh_shape[a] = cJSON_GetArrayItem(ms, a)->valueint;
            const char *s = cJSON_GetStringValue(cJSON_GetArrayItem(an, a));
            snprintf(ev->axis_names[a], sizeof ev->axis_names[a], "%s", s ? s : "?");
        }
    }
    const cJSON *segs = cJSON_GetObjectItemCaseSensitive(j, "segments");
    if (!cJSON_IsArray(segs))
        return zg_error_set(err, ZG_ERR_PARSE, "evidence: 'segments' must be an array");
    int32_t si = 0;
    for (const cJSON *js = segs->child; js; js = js->next, si++) {
        char name[32] = "segment", ctx[96];
        int64_t rep = 1;
        snprintf(ctx, sizeof ctx, "evidence segment %d", si);
        if (zg_json_get_str(js, "name", 0, name, sizeof name, ctx, err) ||
            zg_json_get_int(js, "repeat", 0, &rep, ctx, err) ||
            zg_aoi_evidence_segment(ev, name, rep, err))
            return err->status;
        const cJSON *ops = cJSON_GetObjectItemCaseSensitive(js, "ops");
        if (!cJSON_IsArray(ops)) return zg_error_set(err, ZG_ERR_PARSE, "%s: 'ops' must be an array", ctx);
        int32_t oi = 0;
        for (const cJSON *jo = ops->child; jo; jo = jo->next, oi++) {
            char kind[32] = "", oname[48] = "op";
            snprintf(ctx, sizeof ctx, "evidence segment %d op %d", si, oi);
            if (zg_json_get_str(jo, "op", 1, kind, sizeof kind, ctx, err)) return err->status;
            zg_json_get_str(jo, "name", 0, oname, sizeof oname, ctx, err);
            double flops = 0, bytes = 0;
            if (zg_json_get_num(jo, "bytes", 1, &bytes, ctx, err)) return err->status;
            if (!strcmp(kind, "compute")) {
                if (zg_json_get_num(jo, "flops", 1, &flops, ctx, err) ||
                    zg_aoi_evidence_compute(ev, oname, flops, bytes, err))
                    return err->status;
                continue;
            }
            zg_coll_kind k;
            if (zg_coll_kind_parse(kind, &k, err)) return zg_error_prefix(err, "%s: ", ctx);
            int64_t ov = 0;
            if (zg_json_get_int(jo, "overlap", 0, &ov, ctx, err)) return err->status;
            int32_t *m = NULL, G = 0, S = 0;
            const cJSON *gr = cJSON_GetObjectItemCaseSensitive(jo, k == ZG_COLL_PERMUTE ? "pairs" : "groups");
            if (read_groups(gr, ctx, &m, &G, &S, err)) return err->status;
            zg_status st = zg_aoi_evidence_coll(ev, oname, k, bytes, G, S, m, (int32_t)ov, err);
            free(m);
            if (st) return zg_error_prefix(err, "%s: ", ctx);
        }
    }
    return zg_aoi_evidence_finalize(ev, err);
}

zg_status zg_aoi_evidence_from_json(const cJSON *j, zg_aoi_evidence *ev, zg_error *err) {
    memset(ev, 0, sizeof *ev);
    zg_status st = from_json(j, ev, err);
    if (st) zg_aoi_evidence_free(ev);
    return st;
}
