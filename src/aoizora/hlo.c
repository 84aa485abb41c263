// hlo.c — XLA post-partitioning HLO text -> evidence. Reads the ENTRY computation in order:
// collectives (sync and async start/done) with replica_groups (explicit, {} and iota
// [G,S]<=[dims]T(perm)) or source_target_pairs; while loops become segments repeated by their
// known_trip_count; runs of other instructions become compute ops with dot FLOPs (also inside
// fusions) and result bytes. Every error names the line.
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "aoizora/aoizora.h"

#define MAXD 8
#define MAXT 16

typedef struct hshape {
    int32_t n_el;               // tuple elements (1 for an array)
    double bytes[MAXT];         // per element
    int32_t nd;                 // dims of element 0
    int64_t dims[MAXD];
} hshape;

typedef struct hinst {
    int32_t line;
    char name[96];
    char op[48];
    hshape shape;
    const char *operands, *attrs;  // into the line copy
} hinst;

typedef struct hcomp {
    char name[96];
    int32_t first, last;  // line index range of the body (exclusive of braces)
    int entry;
} hcomp;

typedef struct hctx {
    char **lines;
    int32_t n_lines;
    hcomp *comps;
    int32_t n_comps;
    zg_aoi_evidence *ev;
    zg_error *err;
    double pend_flops, pend_bytes;
    int32_t n_pend;
    // async starts waiting for their done: name, op index (segment, op), compute ops at start
    struct { char name[96]; int32_t seg, op, computes; } starts[64];
    int32_t n_starts;
    int32_t computes;  // compute ops emitted so far
} hctx;

static zg_status perr(hctx *c, int32_t line, const char *what, const char *text) {
    return zg_error_set(c->err, ZG_ERR_PARSE, "HLO line %d: %s%s%.60s%s", line + 1, what,
                        text ? ": '" : "", text ? text : "", text ? "'" : "");
}

static const char *skip_ws(const char *s) {
    while (*s == ' ' || *s == '\t') s++;
    return s;
}

// Skips one balanced group starting at s (which is one of ({[ or a quote); NULL if unbalanced.
static const char *skip_group(const char *s) {
    int depth = 0;
    char q = 0;
    for (; *s; s++) {
        if (q) {
            if (*s == '\\' && s[1]) s++;
            else if (*s == q) q = 0;
            if (!q && depth == 0) return s + 1;
            continue;
        }
        if (*s == '"') {
            q = '"';
            continue;
        }
        if (*s == '(' || *s == '{' || *s == '[') depth++;
        else if (*s == ')' || *s == '}' || *s == ']') {
            if (--depth == 0) return s + 1;
            if (depth < 0) return NULL;
        }
    }
    return NULL;
}

static int elem_size(const char *t, size_t n) {
    static const struct { const char *n; int b; } T[] = {
        {"pred", 1}, {"s8", 1}, {"u8", 1}, {"s4", 1}, {"u4", 1}, {"bf16", 2}, {"f16", 2},
        {"s16", 2}, {"u16", 2}, {"f32", 4}, {"s32", 4}, {"u32", 4}, {"f64", 8}, {"s64", 8},
        {"u64", 8}, {"c64", 8}, {"c128", 16}, {"token", 0}, {"s2", 1}, {"u2", 1}};
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++)
        if (strlen(T[i].n) == n && !strncmp(T[i].n, t, n)) return T[i].b;
    if (n >= 2 && !strncmp(t, "f8", 2)) return 1;
    return -1;
}

// Parses an array shape "bf16[2,3]{1,0}" at s; returns the end or NULL.
static const char *parse_array(const char *s, double *bytes, int32_t *nd, int64_t *dims) {
    const char *t = s;
    while (isalnum((unsigned char)*s) || *s == '_') s++;
    int es = elem_size(t, (size_t)(s - t));
    if (es < 0) return NULL;
    double el = 1;
    int32_t k = 0;
    if (*s == '[') {
        s++;
        while (*s != ']') {
            while (*s == ' ') s++;
            if (*s == '<' && s[1] == '=') s += 2;  // dynamic bound
            char *end = NULL;
            long long v = strtoll(s, &end, 10);
            if (end == s || v < 0 || v > (1LL << 40)) return NULL;
            if (k < MAXD) dims[k] = v;
            k++;
            el *= (double)v;
            s = end;
            if (*s == ',') s++;
            else if (*s != ']') return NULL;
        }
        s++;
    }
    if (*s == '{') {
        s = skip_group(s);
        if (!s) return NULL;
    }
    *bytes = el * es;
    if (nd) *nd = k < MAXD ? k : MAXD;
    return s;
}

static const char *parse_shape(const char *s, hshape *sh) {
    memset(sh, 0, sizeof *sh);
    s = skip_ws(s);
    if (*s == '(') {
        s++;
        for (;;) {
            s = skip_ws(s);
            if (*s == ')') return s + 1;
            double b = 0;
            if (*s == '(') {  // nested tuple: count its bytes as one element
                hshape in;
                s = parse_shape(s, &in);
                if (!s) return NULL;
                for (int i = 0; i < in.n_el; i++) b += in.bytes[i];
            } else {
                int32_t nd = 0;
                int64_t dims[MAXD];
                s = parse_array(s, &b, &nd, dims);
                if (!s) return NULL;
                if (sh->n_el == 0) {
                    sh->nd = nd;
                    memcpy(sh->dims, dims, sizeof dims);
                }
            }
            if (sh->n_el < MAXT) sh->bytes[sh->n_el] = b;
            sh->n_el++;
            s = skip_ws(s);
            if (*s == ',') s++;
            else if (*s != ')') return NULL;
        }
    }
    sh->n_el = 1;
    return parse_array(s, &sh->bytes[0], &sh->nd, sh->dims);
}

static double shape_total(const hshape *sh) {
    double t = 0;
    for (int i = 0; i < sh->n_el && i < MAXT; i++) t += sh->bytes[i];
    return t;
}

// "  [ROOT] %name = shape opcode(operands), attrs" -> inst; 0 ok, -1 not an instruction.
static int parse_inst(const char *line, int32_t ln, hinst *in) {
    memset(in, 0, sizeof *in);
    in->line = ln;
    const char *s = skip_ws(line);
    if (!strncmp(s, "ROOT ", 5)) s = skip_ws(s + 5);
    if (*s == '%') s++;
    const char *n0 = s;
    while (*s && *s != ' ' && *s != '=') s++;
    if (s == n0 || (size_t)(s - n0) >= sizeof in->name) return -1;
    memcpy(in->name, n0, (size_t)(s - n0));
    s = skip_ws(s);
    if (*s != '=') return -1;
    s = parse_shape(s + 1, &in->shape);
    if (!s) return -2;
    s = skip_ws(s);
    const char *o0 = s;
    while (*s && *s != '(' && *s != ' ') s++;
    if (*s != '(' || s == o0 || (size_t)(s - o0) >= sizeof in->op) return -3;
    memcpy(in->op, o0, (size_t)(s - o0));
    in->operands = s;
    const char *e = skip_group(s);
    if (!e) return -4;
    in->attrs = e;
    return 0;
}

// Finds attribute `key=` at top level of attrs; returns the value start or NULL.
static const char *attr(const char *attrs, const char *key) {
    size_t kl = strlen(key);
    const char *s = attrs;
    while (s && *s) {
        s = skip_ws(s);
        if (*s == ',') s = skip_ws(s + 1);
        if (!strncmp(s, key, kl) && s[kl] == '=') return s + kl + 1;
        // skip this attribute
        while (*s && *s != ',') {
            if (*s == '{' || *s == '[' || *s == '(' || *s == '"') {
                s = skip_group(s);
                if (!s) return NULL;
            } else {
                s++;
            }
        }
    }
    return NULL;
}

static int64_t parse_int_list(const char *s, int64_t *out, int max, const char **end) {
    int64_t k = 0;
    while (*s == ' ') s++;
    for (;;) {
        char *e = NULL;
        long long v = strtoll(s, &e, 10);
        if (e == s) break;
        if (k < max) out[k] = v;
        k++;
        s = e;
        while (*s == ' ') s++;
        if (*s != ',') break;
        s++;
    }
    *end = s;
    return k;
}

// replica_groups value -> members (G x S). n_dev used for {}. Returns 0 ok, else -1.
// Mesh-axes form: mesh['a'=2,'b'=4] {'b'}: groups vary the listed axes (row-major ids).
static int parse_mesh_groups(const char *v, int32_t **mem, int32_t *G, int32_t *S) {
    char names[8][32];
    int64_t sz[8];
    int na = 0, sel[8] = {0};
    const char *s = v + 5;
    while (*s && *s != ']') {
        if (*s == ',' || *s == ' ') {
            s++;
            continue;
        }
        if (*s != '\'' || na >= 8) return -1;
        const char *e = strchr(s + 1, '\'');
        if (!e || e - s - 1 >= 32 || e[1] != '=') return -1;
        memcpy(names[na], s + 1, (size_t)(e - s - 1));
        names[na][e - s - 1] = 0;
        char *end = NULL;
        sz[na] = strtoll(e + 2, &end, 10);
        if (end == e + 2 || sz[na] < 1 || sz[na] > 4096) return -1;
        na++;
        s = end;
    }
    if (*s != ']' || na == 0) return -1;
    s = skip_ws(s + 1);
    if (*s != '{') return -1;
    s++;
    while (*s && *s != '}') {
        if (*s == ',' || *s == ' ') {
            s++;
            continue;
        }
        if (*s != '\'') return -1;
        const char *e = strchr(s + 1, '\'');
        if (!e) return -1;
        int found = 0;
        for (int a = 0; a < na; a++)
            if ((size_t)(e - s - 1) == strlen(names[a]) && !strncmp(names[a], s + 1, (size_t)(e - s - 1)))
                sel[a] = 1, found = 1;
        if (!found || (e[1] != ',' && e[1] != '}' && e[1] != ' ')) return -1;  // sub-axes unsupported
        s = e + 1;
    }
    if (*s != '}') return -1;
    int64_t tot = 1, gs = 1;
    for (int a = 0; a < na; a++) {
        tot *= sz[a];
        if (sel[a]) gs *= sz[a];
        if (tot > 65536) return -1;
    }
    int32_t *m = calloc((size_t)tot, sizeof *m);
    if (!m) return -1;
    int64_t k = 0;
    for (int64_t outer = 0; outer < tot / gs; outer++)
        for (int64_t inner = 0; inner < gs; inner++) {
            int64_t co[8], o = outer, in = inner, id = 0;
            for (int a = na - 1; a >= 0; a--) {
                if (sel[a]) co[a] = in % sz[a], in /= sz[a];
                else co[a] = o % sz[a], o /= sz[a];
            }
            for (int a = 0; a < na; a++) id = id * sz[a] + co[a];
            m[k++] = (int32_t)id;
        }
    *mem = m, *G = (int32_t)(tot / gs), *S = (int32_t)gs;
    return 0;
}

static int parse_groups(const char *v, int32_t n_dev, int32_t **mem, int32_t *G, int32_t *S) {
    *mem = NULL;
    if (!strncmp(v, "mesh[", 5)) return parse_mesh_groups(v, mem, G, S);
    if (*v == '[') {  // iota: [G,S]<=[d...]T(p...)
        int64_t gs[4], rd[8], perm[8];
        const char *e;
        if (parse_int_list(v + 1, gs, 4, &e) != 2 || *e != ']') return -1;
        if (strncmp(e + 1, "<=[", 3)) return -1;
        int64_t nr = parse_int_list(e + 4, rd, 8, &e);
        if (nr < 1 || nr > 8 || *e != ']') return -1;
        int64_t tot = 1;
        for (int i = 0; i < nr; i++) {
            if (rd[i] < 1 || rd[i] > 65536) return -1;
            tot *= rd[i];
            if (tot > 65536) return -1;
        }
        if (gs[0] < 1 || gs[1] < 1 || gs[0] * gs[1] != tot) return -1;
        for (int i = 0; i < nr; i++) perm[i] = i;
        e++;
        if (*e == 'T') {
            if (e[1] != '(') return -1;
            int64_t np = parse_int_list(e + 2, perm, 8, &e);
            if (np != nr || *e != ')') return -1;
            int seen[8] = {0};
            for (int i = 0; i < nr; i++) {
                if (perm[i] < 0 || perm[i] >= nr || seen[perm[i]]) return -1;
                seen[perm[i]] = 1;
            }
        }
        int32_t *m = calloc((size_t)tot, sizeof *m);
        if (!m) return -1;
        // element at transposed position idx: coordinates in the permuted shape
        int64_t pd[8];
        for (int i = 0; i < nr; i++) pd[i] = rd[perm[i]];
        for (int64_t idx = 0; idx < tot; idx++) {
            int64_t c[8], rem = idx, src = 0;
            for (int i = (int)nr - 1; i >= 0; i--) c[i] = rem % pd[i], rem /= pd[i];
            int64_t oc[8];
            for (int i = 0; i < nr; i++) oc[perm[i]] = c[i];
            for (int i = 0; i < nr; i++) src = src * rd[i] + oc[i];
            m[idx] = (int32_t)src;
        }
        *mem = m, *G = (int32_t)gs[0], *S = (int32_t)gs[1];
        return 0;
    }
    if (*v != '{') return -1;
    const char *end = skip_group(v);
    if (!end) return -1;
    if (!strncmp(v, "{}", 2)) {
        int32_t *m = calloc((size_t)n_dev, sizeof *m);
        if (!m) return -1;
        for (int32_t i = 0; i < n_dev; i++) m[i] = i;
        *mem = m, *G = 1, *S = n_dev;
        return 0;
    }
    // explicit {{a,b},{c,d}}
    int32_t cap = 64, n = 0, g = 0, s0 = -1;
    int32_t *m = malloc((size_t)cap * sizeof *m);
    if (!m) return -1;
    const char *s = v + 1;
    while (s < end - 1) {
        s = skip_ws(s);
        if (*s == ',') {
            s++;
            continue;
        }
        if (*s != '{') break;
        int64_t ids[4096];
        const char *e;
        int64_t k = parse_int_list(s + 1, ids, 4096, &e);
        if (*e != '}' || k < 1 || k > 4096 || (s0 >= 0 && k != s0)) {
            free(m);
            return -1;
        }
        s0 = (int32_t)k;
        if (n + k > cap) {
            while (n + k > cap) cap *= 2;
            int32_t *nm = realloc(m, (size_t)cap * sizeof *m);
            if (!nm) {
                free(m);
                return -1;
            }
            m = nm;
        }
        for (int64_t i = 0; i < k; i++) {
            if (ids[i] < 0 || ids[i] > 65535) {
                free(m);
                return -1;
            }
            m[n++] = (int32_t)ids[i];
        }
        g++;
        s = e + 1;
    }
    if (g == 0) {
        free(m);
        return -1;
    }
    *mem = m, *G = g, *S = s0;
    return 0;
}

static int32_t find_comp(const hctx *c, const char *name, size_t len) {
    if (len && name[0] == '%') name++, len--;
    for (int32_t i = 0; i < c->n_comps; i++)
        if (strlen(c->comps[i].name) == len && !strncmp(c->comps[i].name, name, len)) return i;
    return -1;
}

static int32_t comp_ref(const hctx *c, const char *attrs, const char *key) {
    const char *v = attr(attrs, key);
    if (!v) return -1;
    const char *e = v;
    while (*e && *e != ',' && *e != ' ' && *e != '}') e++;
    return find_comp(c, v, (size_t)(e - v));
}

// Shape of operand k: an inline shape, or the named instruction's shape in the computation.
static int operand_shape(const hctx *c, const hcomp *cp, const char *ops, int k, hshape *sh) {
    const char *s = ops + 1;
    for (int i = 0; i < k; i++) {
        while (*s && *s != ',' && *s != ')') {
            if (*s == '{' || *s == '[' || *s == '(') {
                s = skip_group(s);
                if (!s) return -1;
            } else {
                s++;
            }
        }
        if (*s != ',') return -1;
        s++;
    }
    s = skip_ws(s);
    const char *sp = strchr(s, ' '), *br = strchr(s, '[');
    if (isalpha((unsigned char)*s) && br && sp && br < sp) {
        const char *e = parse_shape(s, sh);
        if (e) return 0;
    }
    if (*s == '%') s++;
    const char *n0 = s;
    while (*s && *s != ',' && *s != ')' && *s != ' ') s++;
    size_t len = (size_t)(s - n0);
    for (int32_t l = cp->first; l < cp->last; l++) {
        hinst in;
        if (parse_inst(c->lines[l], l, &in) == 0 && strlen(in.name) == len && !strncmp(in.name, n0, len)) {
            *sh = in.shape;
            return 0;
        }
    }
    return -1;
}

static double dot_flops(const hctx *c, const hcomp *cp, const hinst *in) {
    double out = 1;
    for (int i = 0; i < in->shape.nd; i++) out *= (double)in->shape.dims[i];
    hshape lhs;
    if (operand_shape(c, cp, in->operands, 0, &lhs)) return 2 * out;
    const char *v = attr(in->attrs, "lhs_contracting_dims");
    double k = 1;
    if (v && *v == '{') {
        int64_t cd[8];
        const char *e;
        int64_t n = parse_int_list(v + 1, cd, 8, &e);
        for (int64_t i = 0; i < n && i < 8; i++)
            if (cd[i] >= 0 && cd[i] < lhs.nd) k *= (double)lhs.dims[cd[i]];
    }
    return 2 * out * k;
}

static double comp_flops(const hctx *c, int32_t ci, int depth) {
    if (ci < 0 || depth > 8) return 0;
    const hcomp *cp = &c->comps[ci];
    double f = 0;
    for (int32_t l = cp->first; l < cp->last; l++) {
        hinst in;
        if (parse_inst(c->lines[l], l, &in)) continue;
        if (!strcmp(in.op, "dot")) f += dot_flops(c, cp, &in);
        else if (!strcmp(in.op, "fusion") || !strcmp(in.op, "call"))
            f += comp_flops(c, comp_ref(c, in.attrs, !strcmp(in.op, "call") ? "to_apply" : "calls"), depth + 1);
    }
    return f;
}

static zg_status flush_compute(hctx *c) {
    if (!c->n_pend) return ZG_OK;
    char nm[32];
    snprintf(nm, sizeof nm, "hlo_compute_%d", c->computes);
    zg_status st = zg_aoi_evidence_compute(c->ev, nm, c->pend_flops, c->pend_bytes, c->err);
    c->pend_flops = c->pend_bytes = 0, c->n_pend = 0, c->computes++;
    return st;
}

static int coll_kind_of(const char *op, zg_coll_kind *k, int *is_start, int *is_done) {
    static const struct { const char *n; zg_coll_kind k; } T[] = {
        {"all-gather", ZG_COLL_ALL_GATHER},   {"reduce-scatter", ZG_COLL_REDUCE_SCATTER},
        {"all-reduce", ZG_COLL_ALL_REDUCE},   {"all-to-all", ZG_COLL_ALL_TO_ALL},
        {"collective-permute", ZG_COLL_PERMUTE}, {"ragged-all-to-all", ZG_COLL_ALL_TO_ALL},
        {"collective-broadcast", ZG_COLL_ALL_GATHER}};
    *is_start = *is_done = 0;
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++) {
        size_t l = strlen(T[i].n);
        if (strncmp(op, T[i].n, l)) continue;
        if (!op[l]) return *k = T[i].k, 1;
        if (!strcmp(op + l, "-start")) return *k = T[i].k, *is_start = 1, 1;
        if (!strcmp(op + l, "-done")) return *k = T[i].k, *is_done = 1, 1;
    }
    return 0;
}

static zg_status emit_coll(hctx *c, const hinst *in, zg_coll_kind k, int is_start, int32_t ln) {
    double bytes;
    const hshape *sh = &in->shape;
    if (sh->n_el > 1) {
        if (k == ZG_COLL_ALL_GATHER) {
            bytes = 0;
            for (int i = 0; i < sh->n_el && i < MAXT; i++) bytes = sh->bytes[i] > bytes ? sh->bytes[i] : bytes;
        } else if (k == ZG_COLL_PERMUTE && is_start) {
            bytes = sh->bytes[0];
        } else {
            bytes = shape_total(sh);
        }
    } else {
        bytes = sh->bytes[0];
    }
    int32_t *m = NULL, G = 0, S = 0;
    const char *v = attr(in->attrs, k == ZG_COLL_PERMUTE ? "source_target_pairs" : "replica_groups");
    if (!v) {
        if (k == ZG_COLL_PERMUTE) return perr(c, ln, "collective-permute without source_target_pairs", NULL);
        v = "{}";
    }
    if (parse_groups(v, c->ev->num_devices, &m, &G, &S))
        return perr(c, ln, k == ZG_COLL_PERMUTE ? "bad source_target_pairs" : "bad replica_groups", v);
    if (k == ZG_COLL_PERMUTE && S != 2) {
        free(m);
        return perr(c, ln, "source_target_pairs must be pairs", v);
    }
    for (int64_t i = 0; i < (int64_t)G * S; i++)
        if (m[i] >= c->ev->num_devices) {
            char msg[96];
            snprintf(msg, sizeof msg, "device id %d outside num_partitions %d", m[i], c->ev->num_devices);
            free(m);
            return perr(c, ln, msg, NULL);
        }
    if (k == ZG_COLL_REDUCE_SCATTER) bytes *= S;  // operand = result x group size
    zg_status st = flush_compute(c);
    if (!st) st = zg_aoi_evidence_coll(c->ev, in->name, k, bytes, G, S, m, 0, c->err);
    free(m);
    if (st) return zg_error_prefix(c->err, "HLO line %d: ", ln + 1);
    if (is_start && c->n_starts < 64) {
        snprintf(c->starts[c->n_starts].name, sizeof c->starts[0].name, "%s", in->name);
        c->starts[c->n_starts].seg = c->ev->n_segs - 1;
        c->starts[c->n_starts].op = c->ev->segs[c->ev->n_segs - 1].n_ops - 1;
        c->starts[c->n_starts].computes = c->computes;
        c->n_starts++;
    }
    return ZG_OK;
}

static zg_status done_async(hctx *c, const hinst *in) {
    zg_status st = flush_compute(c);
    if (st) return st;
    const char *s = in->operands + 1;
    s = skip_ws(s);
    // operand may carry an inline shape: take the last token before ')' or ','
    const char *e = s;
    while (*e && *e != ')' && *e != ',') e++;
    const char *n0 = e;
    while (n0 > s && n0[-1] != ' ' && n0[-1] != '%') n0--;
    size_t len = (size_t)(e - n0);
    for (int32_t i = c->n_starts - 1; i >= 0; i--)
        if (strlen(c->starts[i].name) == len && !strncmp(c->starts[i].name, n0, len)) {
            if (c->starts[i].seg == c->ev->n_segs - 1)
                c->ev->segs[c->starts[i].seg].ops[c->starts[i].op].overlap = c->computes - c->starts[i].computes;
            c->starts[i] = c->starts[--c->n_starts];
            break;
        }
    return ZG_OK;
}

static zg_status walk_comp(hctx *c, int32_t ci, int64_t repeat, int depth);

static zg_status walk_lines(hctx *c, const hcomp *cp, int64_t repeat, int depth) {
    for (int32_t l = cp->first; l < cp->last; l++) {
        const char *t = skip_ws(c->lines[l]);
        if (!*t || !strncmp(t, "//", 2)) continue;
        hinst in;
        int r = parse_inst(c->lines[l], l, &in);
        if (r == -2) return perr(c, l, "bad shape", t);
        if (r) return perr(c, l, "expected 'name = shape opcode(operands), attrs'", t);
        zg_coll_kind k;
        int is_start = 0, is_done = 0;
        if (coll_kind_of(in.op, &k, &is_start, &is_done)) {
            zg_status st = is_done ? done_async(c, &in) : emit_coll(c, &in, k, is_start, l);
            if (st) return st;
            continue;
        }
        if (!strcmp(in.op, "async-start")) {
            int32_t cc = comp_ref(c, in.attrs, "calls");
            if (cc < 0) return perr(c, l, "async-start without a known calls= computation", t);
            int found = 0;
            for (int32_t m = c->comps[cc].first; m < c->comps[cc].last && !found; m++) {
                hinst w;
                zg_coll_kind kk;
                int s2, d2;
                if (parse_inst(c->lines[m], m, &w) == 0 && coll_kind_of(w.op, &kk, &s2, &d2) && !s2 && !d2) {
                    snprintf(w.name, sizeof w.name, "%s", in.name);
                    zg_status st = emit_coll(c, &w, kk, 1, m);
                    if (st) return st;
                    found = 1;
                }
            }
            if (!found) c->pend_bytes += shape_total(&in.shape), c->n_pend++;
            continue;
        }
        if (!strcmp(in.op, "async-done")) {
            zg_status st = done_async(c, &in);
            if (st) return st;
            continue;
        }
        if (!strcmp(in.op, "async-update")) continue;
        if (!strcmp(in.op, "while")) {
            int32_t body = comp_ref(c, in.attrs, "body");
            if (body < 0) return perr(c, l, "while without a known body= computation", t);
            int64_t trip = 1;
            const char *bc = attr(in.attrs, "backend_config");
            const char *kt = bc ? strstr(bc, "known_trip_count") : NULL;
            if (kt) {
                const char *nn = strstr(kt, "\"n\"");
                if (nn) {
                    nn += 3;
                    while (*nn == ':' || *nn == ' ' || *nn == '"') nn++;
                    trip = strtoll(nn, NULL, 10);
                }
                if (trip < 1 || trip > 1000000000) return perr(c, l, "bad known_trip_count", kt);
            }
            zg_status st = flush_compute(c);
            if (!st) st = walk_comp(c, body, repeat * trip, depth + 1);
            if (!st) st = zg_aoi_evidence_segment(c->ev, "after_while", repeat, c->err);
            if (st) return st;
            continue;
        }
        static const char *const skip[] = {"parameter", "constant", "tuple", "get-tuple-element",
                                           "bitcast", "partition-id", "replica-id", "after-all",
                                           "copy-start", "copy-done", "opt-barrier", NULL};
        int sk = 0;
        for (int i = 0; skip[i]; i++) sk |= !strcmp(in.op, skip[i]);
        if (sk) continue;
        double f = 0;
        if (!strcmp(in.op, "dot")) f = dot_flops(c, cp, &in);
        else if (!strcmp(in.op, "fusion") || !strcmp(in.op, "call"))
            f = comp_flops(c, comp_ref(c, in.attrs, !strcmp(in.op, "call") ? "to_apply" : "calls"), 1);
        c->pend_flops += f;
        c->pend_bytes += 2 * shape_total(&in.shape);
        c->n_pend++;
    }
    return flush_compute(c);
}

static zg_status walk_comp(hctx *c, int32_t ci, int64_t repeat, int depth) {
    if (depth > 8) return zg_error_set(c->err, ZG_ERR_PARSE, "HLO: while loops nested deeper than 8");
    if (zg_aoi_evidence_segment(c->ev, c->comps[ci].name, repeat, c->err)) return c->err->status;
    return walk_lines(c, &c->comps[ci], repeat, depth);
}

static zg_status parse(hctx *c, const char *text, size_t len) {
    // split into lines (copy)
    char *buf = malloc(len + 1);
    if (!buf) return zg_error_set(c->err, ZG_ERR_NOMEM, "HLO: out of memory");
    memcpy(buf, text, len);
    buf[len] = 0;
    int32_t cap = 1024;
    c->lines = malloc((size_t)cap * sizeof *c->lines);
    if (!c->lines) {
        free(buf);
        return zg_error_set(c->err, ZG_ERR_NOMEM, "HLO: out of memory");
    }
    c->lines[0] = buf;  // keeps ownership of buf at index 0
    c->n_lines = 0;
    for (char *s = buf;;) {
        if (c->n_lines == cap) {
            cap *= 2;
            char **nl = realloc(c->lines, (size_t)cap * sizeof *nl);
            if (!nl) return zg_error_set(c->err, ZG_ERR_NOMEM, "HLO: out of memory");
            c->lines = nl;
        }
        c->lines[c->n_lines++] = s;
        char *e = strchr(s, '\n');
        if (!e) break;
        *e = 0;
        s = e + 1;
    }
    for (int32_t l = 0; l < c->n_lines; l++) {
        size_t n = strlen(c->lines[l]);
        if (n && c->lines[l][n - 1] == '\r') c->lines[l][n - 1] = 0;
    }
    // header and computations
    int32_t n_dev = -1, ccap = 16;
    c->comps = calloc((size_t)ccap, sizeof *c->comps);
    if (!c->comps) return zg_error_set(c->err, ZG_ERR_NOMEM, "HLO: out of memory");
    int32_t open = -1, in_table = 0;
    for (int32_t l = 0; l < c->n_lines; l++) {
        const char *s = skip_ws(c->lines[l]);
        // newer dumps append stack-frame tables (FileNames, FunctionNames, FileLocations,
        // StackFrames), each running to the next blank line
        if (open < 0 && (!strcmp(s, "FileNames") || !strcmp(s, "FunctionNames") ||
                         !strcmp(s, "FileLocations") || !strcmp(s, "StackFrames"))) {
            in_table = 1;
            continue;
        }
        if (in_table) {
            in_table = *s != 0;
            continue;
        }
        if (!strncmp(s, "HloModule", 9)) {
            const char *np = strstr(s, "num_partitions=");
            if (np) n_dev = (int32_t)strtol(np + 15, NULL, 10);
            if (np && (n_dev < 1 || n_dev > 4096)) return perr(c, l, "num_partitions out of range", np);
            continue;
        }
        size_t n = strlen(s);
        if (open < 0) {
            if (!*s || !strncmp(s, "//", 2)) continue;
            if (n == 0 || s[n - 1] != '{')
                return perr(c, l, "expected a computation header ending in '{'", s);
            int entry = !strncmp(s, "ENTRY ", 6);
            if (entry) s = skip_ws(s + 6);
            if (*s == '%') s++;
            const char *e = s;
            while (*e && *e != ' ' && *e != '(' && *e != '{') e++;
            if (e == s || (size_t)(e - s) >= sizeof c->comps[0].name) return perr(c, l, "bad computation name", s);
            if (c->n_comps == ccap) {
                ccap *= 2;
                hcomp *nc = realloc(c->comps, (size_t)ccap * sizeof *nc);
                if (!nc) return zg_error_set(c->err, ZG_ERR_NOMEM, "HLO: out of memory");
                c->comps = nc;
            }
            hcomp *cp = &c->comps[c->n_comps++];
            memset(cp, 0, sizeof *cp);
            memcpy(cp->name, s, (size_t)(e - s));
            cp->entry = entry;
            cp->first = l + 1;
            open = c->n_comps - 1;
        } else if (!strcmp(s, "}")) {
            c->comps[open].last = l;
            open = -1;
        }
    }
    if (open >= 0) return perr(c, c->n_lines - 1, "computation not closed with '}'", c->comps[open].name);
    int32_t entry = -1;
    for (int32_t i = 0; i < c->n_comps; i++)
        if (c->comps[i].entry) entry = i;
    if (entry < 0) return zg_error_set(c->err, ZG_ERR_PARSE, "HLO: no ENTRY computation (line %d)", c->n_lines);
    if (n_dev < 0) n_dev = 1;
    zg_aoi_evidence_init(c->ev, "hlo", n_dev);
    zg_status st = walk_comp(c, entry, 1, 0);
    if (st) return st;
    // drop empty segments
    int32_t k = 0;
    for (int32_t i = 0; i < c->ev->n_segs; i++) {
        if (c->ev->segs[i].n_ops == 0) {
            free(c->ev->segs[i].ops);
            continue;
        }
        c->ev->segs[k++] = c->ev->segs[i];
    }
    c->ev->n_segs = k;
    return zg_aoi_evidence_finalize(c->ev, c->err);
}

zg_status zg_aoi_hlo_parse(const char *text, size_t len, zg_aoi_evidence *ev, zg_error *err) {
    hctx c;
    memset(&c, 0, sizeof c);
    memset(ev, 0, sizeof *ev);
    c.ev = ev, c.err = err;
    zg_status st = parse(&c, text, len);
    if (c.lines) free(c.lines[0]);
    free(c.lines);
    free(c.comps);
    if (st) zg_aoi_evidence_free(ev);
    return st;
}
