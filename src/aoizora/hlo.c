// hlo.c — XLA post-partitioning HLO text -> evidence. Reads the ENTRY computation in order:
// collectives (sync and async start/done) with replica_groups (explicit, {}, iota
// [G,S]<=[dims]T(perm), mesh axes) or source_target_pairs, grouped by the channel_id rules;
// while loops become segments repeated by their known_trip_count (or the caller's override);
// conditionals by their most expensive branch; calls holding collectives are walked inline;
// runs of other instructions become compute ops with dot FLOPs (also inside fusions) and
// result bytes. Peak memory from an appended buffer assignment, else a liveness estimate.
// Every error names the line.
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aoizora/aoizora.h"

#define MAXD 8

typedef struct hshape {
    int32_t n_el;               // top-level tuple elements (1 for an array)
    double total;               // bytes of all elements
    double el[2];               // bytes of elements 0 and 1 (nested tuples summed)
    double max_el;              // bytes of the largest element
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
    const zg_aoi_hlo_opts *opts;
    int32_t n_part, n_rep;  // num_partitions, num_replicas of the module
    char **lines;
    int32_t n_lines;
    hcomp *comps;
    int32_t n_comps;
    double *flops_memo;     // per computation: dot FLOPs inside (-1: not yet computed)
    int8_t *coll_memo;      // per computation: holds a collective (-1: not yet computed)
    int8_t *active;         // per computation: being walked (a cycle is an error)
    int64_t walked;         // computations walked (loop bodies, branches, calls): capped
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

static const char *parse_shape_d(const char *s, hshape *sh, int depth);
static const char *parse_shape(const char *s, hshape *sh) { return parse_shape_d(s, sh, 0); }

static const char *parse_shape_d(const char *s, hshape *sh, int depth) {
    memset(sh, 0, sizeof *sh);
    if (depth > 16) return NULL;
    s = skip_ws(s);
    if (*s == '(') {
        s++;
        for (;;) {
            s = skip_ws(s);
            if (*s == ')') return s + 1;
            double b = 0;
            if (*s == '(') {  // nested tuple: count its bytes as one element
                hshape in;
                s = parse_shape_d(s, &in, depth + 1);
                if (!s) return NULL;
                b = in.total;
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
            if (sh->n_el < 2) sh->el[sh->n_el] = b;
            if (b > sh->max_el) sh->max_el = b;
            sh->total += b;
            if (sh->n_el >= 1 << 20) return NULL;
            sh->n_el++;
            s = skip_ws(s);
            if (*s == ',') s++;
            else if (*s != ')') return NULL;
        }
    }
    sh->n_el = 1;
    s = parse_array(s, &sh->el[0], &sh->nd, sh->dims);
    sh->total = sh->max_el = sh->el[0];
    return s;
}

static double shape_total(const hshape *sh) { return sh->total; }

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

// An iota list "<=[r0,r1,...]T(p...)" starting at s ('<'): the ids of iota(prod r) reshaped to
// r, transposed by p, in row-major order (XLA's IotaTileAssignment). Returns the count (<= max)
// or -1; *end past it.
static int64_t iota_transposed(const int64_t *rd, int64_t nr, const char *e, int32_t *out,
                               int64_t max, const char **end);

static int64_t parse_iota_ids(const char *s, int32_t *out, int64_t max, const char **end) {
    int64_t rd[8];
    const char *e;
    if (strncmp(s, "<=[", 3)) return -1;
    int64_t nr = parse_int_list(s + 3, rd, 8, &e);
    if (nr < 1 || nr > 8 || *e != ']') return -1;
    return iota_transposed(rd, nr, e + 1, out, max, end);
}

// iota(prod rd) reshaped to rd, then the optional "T(perm)" at e, flattened into out.
static int64_t iota_transposed(const int64_t *rd, int64_t nr, const char *e, int32_t *out,
                               int64_t max, const char **end) {
    int64_t perm[8], pd[8];
    int64_t tot = 1;
    for (int i = 0; i < nr; i++) {
        if (rd[i] < 1 || rd[i] > 65536) return -1;
        tot *= rd[i];
        if (tot > 65536 || tot > max) return -1;
    }
    for (int i = 0; i < nr; i++) perm[i] = i;
    if (*e == 'T') {
        if (e[1] != '(') return -1;
        int64_t np = parse_int_list(e + 2, perm, 8, &e);
        if (np != nr || *e != ')') return -1;
        int seen[8] = {0};
        for (int i = 0; i < nr; i++) {
            if (perm[i] < 0 || perm[i] >= nr || seen[perm[i]]) return -1;
            seen[perm[i]] = 1;
        }
        e++;
    }
    // element at transposed position idx: coordinates in the permuted shape
    for (int i = 0; i < nr; i++) pd[i] = rd[perm[i]];
    for (int64_t idx = 0; idx < tot; idx++) {
        int64_t c[8], oc[8], rem = idx, src = 0;
        for (int i = (int)nr - 1; i >= 0; i--) c[i] = rem % pd[i], rem /= pd[i];
        for (int i = 0; i < nr; i++) oc[perm[i]] = c[i];
        for (int i = 0; i < nr; i++) src = src * rd[i] + oc[i];
        out[idx] = (int32_t)src;
    }
    *end = e;
    return tot;
}

// Mesh-axes form (XLA's MeshAxesReplicaGroupList):
//   mesh['a'=2,'b'=4][, device_ids=([2,4]<=[8]T(1,0) | [2,4]T(1,0) | ids...)] {'b'[, 'a':(pre)size]}
// A group per value of the axes not listed; its members vary the listed (sub-)axes in the order
// listed, each major to minor; a member's id is the device at its mesh position. A sub-axis
// 'a':(pre)size is digit `size` of axis a with `pre` below it. Quotes around names optional.
#define MESH_MAXA 8
#define MESH_MAXD 32
static int parse_mesh_groups(const char *v, int32_t **mem, int32_t *G, int32_t *S) {
    char names[MESH_MAXA][32];
    int64_t sz[MESH_MAXA];
    int na = 0;
    const char *s = v + 5;
    for (;;) {  // axes
        while (*s == ' ' || *s == ',') s++;
        if (*s == ']') break;
        if (na >= MESH_MAXA) return -1;
        int q = *s == '\'';
        const char *n0 = s + q, *e = n0;
        while (*e && *e != '=' && *e != '\'' && *e != ']' && *e != ',') e++;
        if (e == n0 || e - n0 >= 32 || (q && *e != '\'')) return -1;
        memcpy(names[na], n0, (size_t)(e - n0));
        names[na][e - n0] = 0;
        e += q;
        if (*e != '=') return -1;
        char *end = NULL;
        sz[na] = strtoll(e + 1, &end, 10);
        if (end == e + 1 || sz[na] < 1 || sz[na] > 4096) return -1;
        na++;
        s = end;
    }
    if (na == 0) return -1;
    int64_t tot = 1;
    for (int a = 0; a < na; a++) {
        tot *= sz[a];
        if (tot > 65536) return -1;
    }
    int32_t *dev = malloc((size_t)tot * sizeof *dev);
    int32_t *m = malloc((size_t)tot * sizeof *m);
    if (!dev || !m) goto bad;
    for (int64_t i = 0; i < tot; i++) dev[i] = (int32_t)i;
    s = skip_ws(s + 1);
    if (!strncmp(s, ", device_ids=(", 14) || !strncmp(s, ",device_ids=(", 13)) {
        s = strchr(s, '(') + 1;
        const char *e;
        if (*s == '[') {  // [dims]<=[...]T(...): the dims must multiply to the mesh size
            int64_t dd[8], prod = 1;
            int64_t nd = parse_int_list(s + 1, dd, 8, &e);
            if (nd < 1 || *e != ']') goto bad;
            for (int i = 0; i < nd && i < 8; i++) prod *= dd[i];
            if (prod != tot) goto bad;
            // "[2,4]<=[8]T(1,0)" (XLA's iota list) or "[2,4]T(1,0)" (the mesh's own device
            // list: the iota's reshape dims printed directly, its size the mesh's)
            int64_t n = e[1] == '<' ? parse_iota_ids(e + 1, dev, tot, &e)
                                    : iota_transposed(dd, nd, e + 1, dev, tot, &e);
            if (n != tot) goto bad;
        } else {  // explicit ids, possibly nested in braces or brackets
            int64_t k = 0;
            e = s;
            while (*e && *e != ')') {
                if (isdigit((unsigned char)*e)) {
                    char *x = NULL;
                    long long id = strtoll(e, &x, 10);
                    if (k >= tot || id < 0 || id >= tot) goto bad;
                    dev[k++] = (int32_t)id;
                    e = x;
                } else if (strchr("{}[], ", *e)) {
                    e++;
                } else {
                    goto bad;
                }
            }
            if (k != tot) goto bad;
        }
        s = skip_ws(e);
        if (*s != ')') goto bad;
        s = skip_ws(s + 1);
    }
    if (*s != '{') goto bad;
    s++;
    // selections: (axis, pre, size); pre = 0 for a full axis
    int sel_a[MESH_MAXD], n_sel = 0;
    int64_t sel_pre[MESH_MAXD], sel_sz[MESH_MAXD];
    for (;;) {
        while (*s == ' ' || *s == ',') s++;
        if (*s == '}') break;
        if (n_sel >= MESH_MAXD) goto bad;
        int q = *s == '\'';
        const char *n0 = s + q, *e = n0;
        while (*e && *e != '\'' && *e != ':' && *e != ',' && *e != '}' && *e != ' ') e++;
        int found = -1;
        for (int a = 0; a < na; a++)
            if ((size_t)(e - n0) == strlen(names[a]) && !strncmp(names[a], n0, (size_t)(e - n0))) found = a;
        if (found < 0 || (q && *e != '\'')) goto bad;
        e += q;
        sel_a[n_sel] = found, sel_pre[n_sel] = 0, sel_sz[n_sel] = sz[found];
        if (*e == ':') {
            char *x = NULL;
            if (e[1] != '(') goto bad;
            sel_pre[n_sel] = strtoll(e + 2, &x, 10);
            if (!x || *x != ')') goto bad;
            sel_sz[n_sel] = strtoll(x + 1, &x, 10);
            if (sel_pre[n_sel] < 1 || sel_sz[n_sel] < 2 || sz[found] % (sel_pre[n_sel] * sel_sz[n_sel]))
                goto bad;
            e = x;
        }
        n_sel++;
        s = e;
    }
    // digits of each axis: boundaries 1 = b0 < b1 < ... = size, each dividing the next
    int64_t bnd[MESH_MAXA][2 * MESH_MAXD + 2];
    int nb[MESH_MAXA];
    for (int a = 0; a < na; a++) {
        int k = 0;
        bnd[a][k++] = 1, bnd[a][k++] = sz[a];
        for (int i = 0; i < n_sel; i++)
            if (sel_a[i] == a && sel_pre[i]) bnd[a][k++] = sel_pre[i], bnd[a][k++] = sel_pre[i] * sel_sz[i];
        for (int i = 1; i < k; i++)  // sort, dedup
            for (int j = i; j > 0 && bnd[a][j - 1] > bnd[a][j]; j--) {
                int64_t t = bnd[a][j];
                bnd[a][j] = bnd[a][j - 1], bnd[a][j - 1] = t;
            }
        int u = 1;
        for (int i = 1; i < k; i++)
            if (bnd[a][i] != bnd[a][u - 1]) bnd[a][u++] = bnd[a][i];
        for (int i = 1; i < u; i++)
            if (bnd[a][i] % bnd[a][i - 1]) goto bad;
        nb[a] = u;
    }
    // digit d of axis a: [bnd[a][d], bnd[a][d+1]); owner selection or -1
    int owner[MESH_MAXA][2 * MESH_MAXD + 2];
    for (int a = 0; a < na; a++)
        for (int d = 0; d + 1 < nb[a]; d++) {
            owner[a][d] = -1;
            for (int i = 0; i < n_sel; i++)
                if (sel_a[i] == a && (!sel_pre[i] || (sel_pre[i] <= bnd[a][d] && bnd[a][d + 1] <= sel_pre[i] * sel_sz[i]))) {
                    if (owner[a][d] >= 0) goto bad;  // selected twice
                    owner[a][d] = i;
                }
        }
    // inner digits (group members): selections in order, each major to minor; outer: the rest
    int in_a[64], in_d[64], out_a[64], out_d[64], n_in = 0, n_out = 0;
    int64_t gs = 1;
    for (int i = 0; i < n_sel; i++) {
        int a = sel_a[i];
        for (int d = nb[a] - 2; d >= 0; d--)
            if (owner[a][d] == i && n_in < 64) in_a[n_in] = a, in_d[n_in++] = d, gs *= bnd[a][d + 1] / bnd[a][d];
    }
    for (int a = 0; a < na; a++)
        for (int d = nb[a] - 2; d >= 0; d--)
            if (owner[a][d] < 0 && n_out < 64) out_a[n_out] = a, out_d[n_out++] = d;
    int64_t k = 0;
    for (int64_t outer = 0; outer < tot / gs; outer++)
        for (int64_t inner = 0; inner < gs; inner++) {
            int64_t coord[MESH_MAXA] = {0}, o = outer, in = inner;
            for (int j = n_in - 1; j >= 0; j--) {
                int64_t ds = bnd[in_a[j]][in_d[j] + 1] / bnd[in_a[j]][in_d[j]];
                coord[in_a[j]] += (in % ds) * bnd[in_a[j]][in_d[j]], in /= ds;
            }
            for (int j = n_out - 1; j >= 0; j--) {
                int64_t ds = bnd[out_a[j]][out_d[j] + 1] / bnd[out_a[j]][out_d[j]];
                coord[out_a[j]] += (o % ds) * bnd[out_a[j]][out_d[j]], o /= ds;
            }
            int64_t pos = 0;
            for (int a = 0; a < na; a++) pos = pos * sz[a] + coord[a];
            m[k++] = dev[pos];
        }
    free(dev);
    *mem = m, *G = (int32_t)(tot / gs), *S = (int32_t)gs;
    return 0;
bad:
    free(dev);
    free(m);
    return -1;
}

// replica_groups value -> members (G x S). n_dev used for {}. Returns 0 ok, else -1.
static int parse_groups(const char *v, int32_t n_dev, int32_t **mem, int32_t *G, int32_t *S) {
    *mem = NULL;
    if (!strncmp(v, "mesh[", 5)) return parse_mesh_groups(v, mem, G, S);
    if (*v == '[') {  // iota: [G,S]<=[d...]T(p...)
        int64_t gs[4];
        const char *e;
        if (parse_int_list(v + 1, gs, 4, &e) != 2 || *e != ']') return -1;
        if (gs[0] < 1 || gs[1] < 1 || gs[0] * gs[1] > 65536) return -1;
        int32_t *m = calloc((size_t)(gs[0] * gs[1]), sizeof *m);
        if (!m) return -1;
        if (parse_iota_ids(e + 1, m, gs[0] * gs[1], &e) != gs[0] * gs[1]) {
            free(m);
            return -1;
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
    if (c->flops_memo[ci] >= 0) return c->flops_memo[ci];
    const hcomp *cp = &c->comps[ci];
    double f = 0;
    for (int32_t l = cp->first; l < cp->last; l++) {
        hinst in;
        if (parse_inst(c->lines[l], l, &in)) continue;
        if (!strcmp(in.op, "dot")) f += dot_flops(c, cp, &in);
        else if (!strcmp(in.op, "fusion") || !strcmp(in.op, "call"))
            f += comp_flops(c, comp_ref(c, in.attrs, !strcmp(in.op, "call") ? "to_apply" : "calls"), depth + 1);
    }
    return c->flops_memo[ci] = f;
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

// Bytes a collective moves per device (network.h convention) from its result shape. The
// `*-start` forms of all-gather, reduce-scatter and collective-permute return (operand(s),
// result(s), ...): the gathered result, the scattered result, the permuted buffer.
static double coll_bytes(const hshape *sh, zg_coll_kind k, int start_tuple) {
    if (start_tuple && sh->n_el > 1) {
        if (k == ZG_COLL_ALL_GATHER || k == ZG_COLL_REDUCE_SCATTER) return sh->el[1];
        if (k == ZG_COLL_PERMUTE) return sh->el[0];
    }
    return sh->total;
}

// Expands groups of replica or partition ids to logical device ids (replica r, partition p ->
// r * P + p). by_replica: ids are replica ids, applied in every partition; else partition ids,
// applied in every replica. span_partitions: each group of replicas spans all partitions.
static int expand_groups(const int32_t *m, int32_t G, int32_t S, int32_t R, int32_t P,
                         int by_replica, int span_partitions, int32_t **out, int32_t *G2,
                         int32_t *S2) {
    int64_t ng = span_partitions ? G : (int64_t)G * (by_replica ? P : R);
    int64_t ns = span_partitions ? (int64_t)S * P : S;
    if (ng * ns > (1 << 24)) return -1;
    int32_t *o = malloc((size_t)(ng * ns) * sizeof *o);
    if (!o) return -1;
    int64_t k = 0;
    if (span_partitions) {
        for (int32_t g = 0; g < G; g++)
            for (int32_t i = 0; i < S; i++)
                for (int32_t q = 0; q < P; q++) o[k++] = m[g * S + i] * P + q;
    } else {
        int32_t outer = by_replica ? P : R;
        for (int32_t q = 0; q < outer; q++)
            for (int32_t g = 0; g < G; g++)
                for (int32_t i = 0; i < S; i++)
                    o[k++] = by_replica ? m[g * S + i] * P + q : q * P + m[g * S + i];
    }
    *out = o, *G2 = (int32_t)ng, *S2 = (int32_t)ns;
    return 0;
}

// The groups of a collective over logical ids (replica * num_partitions + partition), by XLA's
// CollectiveOpGroupMode: no channel_id = cross-replica; channel_id on an all-to-all or
// collective-permute = cross-partition; channel_id with use_global_device_ids=true = flattened
// global ids; channel_id without it = cross-replica-and-partition. *moves = 0 when every group
// has one member (a cross-replica collective in a program of one replica).
static zg_status coll_groups(hctx *c, const hinst *in, zg_coll_kind k, int32_t ln, int32_t **out,
                             int32_t *G, int32_t *S, int *moves) {
    const int32_t R = c->n_rep, P = c->n_part;
    const int permute = k == ZG_COLL_PERMUTE;
    const char *v = attr(in->attrs, permute ? "source_target_pairs" : "replica_groups");
    if (!v) {
        if (permute) return perr(c, ln, "collective-permute without source_target_pairs", NULL);
        v = "{}";
    }
    const int channel = attr(in->attrs, "channel_id") != NULL;
    const char *ug = attr(in->attrs, "use_global_device_ids");
    const int global = ug && !strncmp(ug, "true", 4);
    enum { FLAT, PART, REPL, REPL_PART } mode;
    if (!channel) mode = REPL;
    else if (permute || k == ZG_COLL_ALL_TO_ALL) mode = PART;
    else mode = global ? FLAT : REPL_PART;
    if (R == 1 && mode == PART) mode = FLAT;
    if (P == 1 && (mode == REPL || mode == REPL_PART)) mode = FLAT;
    int32_t id_range = mode == FLAT ? R * P : mode == PART ? P : R;
    int32_t *m = NULL, g = 0, sz = 0;
    if (parse_groups(v, id_range, &m, &g, &sz))
        return perr(c, ln, permute ? "bad source_target_pairs" : "bad replica_groups", v);
    if (permute && sz != 2) {
        free(m);
        return perr(c, ln, "source_target_pairs must be pairs", v);
    }
    for (int64_t i = 0; i < (int64_t)g * sz; i++)
        if (m[i] >= id_range) {
            char msg[160];
            snprintf(msg, sizeof msg, "%s id %d outside %s %d", permute ? "pair" : "group", m[i],
                     mode == FLAT ? "the devices (num_replicas x num_partitions)"
                     : mode == PART ? "num_partitions" : "num_replicas (no channel_id: cross-replica)",
                     id_range);
            free(m);
            return perr(c, ln, msg, NULL);
        }
    // XLA's verifier: an id in at most one group; a permute's sources and targets each once
    {
        uint8_t *seen = calloc((size_t)id_range * 2, 1);
        if (!seen) {
            free(m);
            return zg_error_set(c->err, ZG_ERR_NOMEM, "HLO: out of memory");
        }
        for (int64_t i = 0; i < (int64_t)g * sz; i++) {
            int slot = permute ? (int)(i % 2) : 0;
            if (seen[(size_t)m[i] * 2 + (size_t)slot]++) {
                char msg[120];
                snprintf(msg, sizeof msg, "%s %d appears twice in %s", permute && slot ? "target" : permute ? "source" : "id",
                         m[i], permute ? "source_target_pairs" : "replica_groups");
                free(seen);
                free(m);
                return perr(c, ln, msg, NULL);
            }
        }
        free(seen);
    }
    *moves = 1;
    if (mode != FLAT) {
        int32_t *e = NULL, g2 = 0, s2 = 0;
        int bad = expand_groups(m, g, sz, R, P, mode != PART, mode == REPL_PART, &e, &g2, &s2);
        free(m);
        if (bad) return zg_error_set(c->err, ZG_ERR_NOMEM, "HLO line %d: groups too large", ln + 1);
        m = e, g = g2, sz = s2;
    }
    if (mode == REPL && R == 1) *moves = 0;
    *out = m, *G = g, *S = sz;
    return ZG_OK;
}

// Appends a collective. name: the evidence name (an async wrapper's name for its inner op);
// start: an async start whose done sets the overlap; start_tuple: the shape is a start tuple.
static zg_status emit_coll(hctx *c, const hinst *in, const char *name, zg_coll_kind k, int start,
                           int start_tuple, int32_t ln) {
    double bytes = coll_bytes(&in->shape, k, start_tuple);
    int32_t *m = NULL, G = 0, S = 0;
    int moves = 1;
    zg_status st = coll_groups(c, in, k, ln, &m, &G, &S, &moves);
    if (st) return st;
    if (!moves) {
        free(m);
        zg_aoi_evidence_note(c->ev, "HLO line %d: %s %.60s has no channel_id: a cross-replica "
                             "collective in a program of one replica moves nothing (not counted)",
                             ln + 1, in->op, name);
        return ZG_OK;
    }
    if (k == ZG_COLL_REDUCE_SCATTER) bytes *= S;  // operand = result x group size
    st = flush_compute(c);
    if (!st) st = zg_aoi_evidence_coll(c->ev, name, k, bytes, G, S, m, 0, c->err);
    free(m);
    if (st) return zg_error_prefix(c->err, "HLO line %d: ", ln + 1);
    if (start && c->n_starts < 64) {
        snprintf(c->starts[c->n_starts].name, sizeof c->starts[0].name, "%s", name);
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

// 1 if computation ci (or one it calls, runs as a loop body or branch) holds a collective.
static int comp_has_coll(const hctx *c, int32_t ci, int depth) {
    if (ci < 0 || depth > 8) return 0;
    if (c->coll_memo[ci] >= 0) return c->coll_memo[ci];
    int has = 0;
    for (int32_t l = c->comps[ci].first; l < c->comps[ci].last && !has; l++) {
        hinst in;
        zg_coll_kind k;
        int a, b;
        if (parse_inst(c->lines[l], l, &in)) continue;
        if (coll_kind_of(in.op, &k, &a, &b)) has = 1;
        else if (!strcmp(in.op, "call") && comp_has_coll(c, comp_ref(c, in.attrs, "to_apply"), depth + 1))
            has = 1;
    }
    return c->coll_memo[ci] = (int8_t)has;
}

static zg_status walk_comp(hctx *c, int32_t ci, int64_t repeat, int depth);
static zg_status walk_body(hctx *c, int32_t ci, int64_t repeat, int depth, int new_segment);
static zg_status walk_lines(hctx *c, const hcomp *cp, int64_t repeat, int depth);

// Placement-free nominal time of an evidence (v5e-like constants: 197 TFLOP/s at 60%, 819 GB/s
// HBM, 45 GB/s links, 2 us per collective step), used only to rank a conditional's branches.
static double nominal_s(const zg_aoi_evidence *ev) {
    double t = 0;
    for (int32_t g = 0; g < ev->n_segs; g++)
        for (int32_t i = 0; i < ev->segs[g].n_ops; i++) {
            const zg_aoi_op *op = &ev->segs[g].ops[i];
            double x = op->is_coll ? 2e-6 * (op->group_size - 1) + op->bytes / 4.5e10
                                   : fmax(op->flops / (197e12 * 0.6), op->bytes / 819e9);
            t += (double)ev->segs[g].repeat * x;
        }
    return t;
}

static zg_status append_evidence(hctx *c, const zg_aoi_evidence *b) {
    zg_aoi_evidence *ev = c->ev;
    for (int32_t g = 0; g < b->n_segs; g++) {
        const zg_aoi_segment *sg = &b->segs[g];
        if (zg_aoi_evidence_segment(ev, sg->name, sg->repeat, c->err)) return c->err->status;
        for (int32_t i = 0; i < sg->n_ops; i++) {
            const zg_aoi_op *op = &sg->ops[i];
            zg_status st = op->is_coll ? zg_aoi_evidence_coll(ev, op->name, op->kind, op->bytes,
                                                             op->n_groups, op->group_size,
                                                             op->members, op->overlap, c->err)
                                       : zg_aoi_evidence_compute(ev, op->name, op->flops, op->bytes,
                                                                 c->err);
            if (st) return st;
            if (!op->is_coll) c->computes++;
        }
    }
    for (int32_t i = 0; i < b->n_notes && i < ZG_AOI_MAX_NOTES; i++)
        zg_aoi_evidence_note(ev, "%s", b->notes[i]);
    return ZG_OK;
}

// conditional: every branch is read into its own evidence; the most expensive (nominal_s) is
// appended as segments of its own, followed by a new segment for what comes after.
static zg_status walk_conditional(hctx *c, const hinst *in, int64_t repeat, int depth,
                                  int32_t ln) {
    int32_t br[64], nb = 0;
    const char *v = attr(in->attrs, "branch_computations");
    if (v && *v == '{') {
        const char *e = skip_group(v);
        const char *s = v + 1;
        while (s && e && s < e - 1 && nb < 64) {
            s = skip_ws(s);
            if (*s == ',') {
                s++;
                continue;
            }
            const char *t = s;
            while (*t && *t != ',' && *t != '}' && *t != ' ') t++;
            br[nb] = find_comp(c, s, (size_t)(t - s));
            if (br[nb] < 0) return perr(c, ln, "conditional branch is not a known computation", s);
            nb++;
            s = t;
        }
    } else {
        int32_t t = comp_ref(c, in->attrs, "true_computation");
        int32_t f = comp_ref(c, in->attrs, "false_computation");
        if (t < 0 || f < 0)
            return perr(c, ln, "conditional without known branch_computations= or "
                               "true_computation=/false_computation=", NULL);
        br[nb++] = t, br[nb++] = f;
    }
    if (nb == 0) return perr(c, ln, "conditional without branches", NULL);
    zg_status st = flush_compute(c);
    if (st) return st;
    int32_t best = -1;
    double best_s = -1, low_s = INFINITY;
    zg_aoi_evidence keep;
    memset(&keep, 0, sizeof keep);
    for (int32_t b = 0; b < nb; b++) {
        hctx sub = *c;
        zg_aoi_evidence ev;
        zg_aoi_evidence_init(&ev, "hlo", c->ev->num_devices);
        sub.ev = &ev, sub.pend_flops = sub.pend_bytes = 0, sub.n_pend = 0, sub.n_starts = 0,
        sub.computes = 0;
        st = walk_comp(&sub, br[b], repeat, depth + 1);
        c->walked = sub.walked;
        if (st) {
            zg_aoi_evidence_free(&ev);
            zg_aoi_evidence_free(&keep);
            return st;
        }
        double t = nominal_s(&ev);
        if (t < low_s) low_s = t;
        if (t > best_s) {
            zg_aoi_evidence_free(&keep);
            keep = ev, best_s = t, best = b;
        } else {
            zg_aoi_evidence_free(&ev);
        }
    }
    st = append_evidence(c, &keep);
    zg_aoi_evidence_free(&keep);
    if (st) return st;
    zg_aoi_evidence_note(c->ev, "HLO line %d: conditional %.60s: priced its most expensive branch "
                         "%s (%d of %d; nominal %.3g s, cheapest %.3g s)", ln + 1, in->name,
                         c->comps[br[best]].name, best + 1, nb, best_s, low_s);
    return zg_aoi_evidence_segment(c->ev, "after_conditional", repeat, c->err);
}

static zg_status walk_while(hctx *c, const hinst *in, int64_t repeat, int depth, int32_t ln) {
    const char *t = c->lines[ln];
    int32_t body = comp_ref(c, in->attrs, "body");
    if (body < 0) return perr(c, ln, "while without a known body= computation", t);
    int64_t trip = 1;
    const char *bc = attr(in->attrs, "backend_config");
    const char *kt = bc ? strstr(bc, "known_trip_count") : NULL;
    if (kt) {
        const char *nn = strstr(kt, "\"n\"");
        trip = 0;
        if (nn) {
            nn += 3;
            while (*nn == ':' || *nn == ' ' || *nn == '"') nn++;
            trip = strtoll(nn, NULL, 10);
        }
        if (trip < 1 || trip > 1000000000) return perr(c, ln, "bad known_trip_count", kt);
    } else if (c->opts->trip_count > 0) {
        trip = c->opts->trip_count;
        zg_aoi_evidence_note(c->ev, "HLO line %d: while %.60s has no known_trip_count: repeated %lld "
                             "times (the trip count given)", ln + 1, in->name, (long long)trip);
    } else {
        zg_aoi_evidence_note(c->ev, "HLO line %d: while %.60s has no known_trip_count: counted "
                             "once; give the real count (aoizora --trip-count N, "
                             "zg_aoi_hlo_opts.trip_count)", ln + 1, in->name);
    }
    if (repeat > INT64_MAX / trip)
        return perr(c, ln, "nested loop trip counts overflow a 64-bit repeat", NULL);
    zg_status st = flush_compute(c);
    if (!st) st = walk_comp(c, body, repeat * trip, depth + 1);
    if (!st) st = zg_aoi_evidence_segment(c->ev, "after_while", repeat, c->err);
    return st;
}

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
        zg_status st = ZG_OK;
        if (coll_kind_of(in.op, &k, &is_start, &is_done)) {
            st = is_done ? done_async(c, &in) : emit_coll(c, &in, in.name, k, is_start, is_start, l);
        } else if (!strcmp(in.op, "async-start")) {
            int32_t cc = comp_ref(c, in.attrs, "calls");
            if (cc < 0) return perr(c, l, "async-start without a known calls= computation", t);
            int found = 0;
            for (int32_t m = c->comps[cc].first; m < c->comps[cc].last && !found && !st; m++) {
                hinst w;
                zg_coll_kind kk;
                int s2, d2;
                if (parse_inst(c->lines[m], m, &w) == 0 && coll_kind_of(w.op, &kk, &s2, &d2) && !s2 && !d2) {
                    st = emit_coll(c, &w, in.name, kk, 1, 0, m);
                    found = 1;
                }
            }
            if (!found) c->pend_bytes += shape_total(&in.shape), c->n_pend++;
        } else if (!strcmp(in.op, "async-done")) {
            st = done_async(c, &in);
        } else if (!strcmp(in.op, "async-update")) {
            continue;
        } else if (!strcmp(in.op, "while")) {
            st = walk_while(c, &in, repeat, depth, l);
        } else if (!strcmp(in.op, "conditional")) {
            if (depth > 8) return perr(c, l, "conditionals nested deeper than 8", NULL);
            st = walk_conditional(c, &in, repeat, depth, l);
        } else if (!strcmp(in.op, "call") && comp_has_coll(c, comp_ref(c, in.attrs, "to_apply"), 0)) {
            if (depth > 8) return perr(c, l, "calls nested deeper than 8", NULL);
            st = walk_body(c, comp_ref(c, in.attrs, "to_apply"), repeat, depth + 1, 0);
        } else {
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
        if (st) return st;
    }
    return flush_compute(c);
}

// Walks computation ci's lines into the current segment (new_segment: into a new one).
static zg_status walk_body(hctx *c, int32_t ci, int64_t repeat, int depth, int new_segment) {
    if (depth > 8)
        return zg_error_set(c->err, ZG_ERR_PARSE,
                            "HLO line %d: loops, branches and calls nested deeper than 8",
                            c->comps[ci].first);
    if (c->active[ci])
        return zg_error_set(c->err, ZG_ERR_PARSE, "HLO line %d: computation %s runs itself",
                            c->comps[ci].first, c->comps[ci].name);
    if (++c->walked > 100000)
        return zg_error_set(c->err, ZG_ERR_PARSE,
                            "HLO line %d: over 100000 loop bodies, branches and calls to walk",
                            c->comps[ci].first);
    if (new_segment && zg_aoi_evidence_segment(c->ev, c->comps[ci].name, repeat, c->err))
        return c->err->status;
    c->active[ci] = 1;
    zg_status st = walk_lines(c, &c->comps[ci], repeat, depth);
    c->active[ci] = 0;
    return st;
}

static zg_status walk_comp(hctx *c, int32_t ci, int64_t repeat, int depth) {
    return walk_body(c, ci, repeat, depth, 1);
}

// ---- peak memory estimate: liveness of instruction results inside each computation -----------

static uint64_t hash_name(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h ? h : 1;
}

// Peak bytes live inside computation ci beyond its parameters (results live from definition
// to last use; tuples, bitcasts, get-tuple-elements and while results alias; a while, call or
// conditional adds its callee's own peak at that point). memo: -1 = not yet computed.
static double comp_peak(const hctx *c, int32_t ci, int depth, double *memo) {
    if (ci < 0 || depth > 8) return 0;
    if (memo[ci] >= 0) return memo[ci];
    const hcomp *cp = &c->comps[ci];
    int32_t n = cp->last - cp->first;
    if (n <= 0) return memo[ci] = 0;
    double *bytes = calloc((size_t)n, sizeof *bytes), *extra = calloc((size_t)n, sizeof *extra);
    int32_t *last = malloc((size_t)n * sizeof *last);
    int32_t hcap = 16;
    while (hcap < 2 * n) hcap *= 2;
    uint64_t *hk = calloc((size_t)hcap, sizeof *hk);
    int32_t *hv = calloc((size_t)hcap, sizeof *hv);
    double peak = 0;
    if (!bytes || !extra || !last || !hk || !hv) goto out;
    for (int32_t i = 0; i < n; i++) {
        hinst in;
        last[i] = i;
        if (parse_inst(c->lines[cp->first + i], cp->first + i, &in)) continue;
        static const char *const alias[] = {"parameter", "tuple", "get-tuple-element", "bitcast",
                                            "while", "after-all", "opt-barrier", NULL};
        int al = 0;
        for (int a = 0; alias[a]; a++) al |= !strcmp(in.op, alias[a]);
        bytes[i] = al ? 0 : in.shape.total;
        if (!strcmp(in.op, "while")) extra[i] = comp_peak(c, comp_ref(c, in.attrs, "body"), depth + 1, memo);
        else if (!strcmp(in.op, "call")) extra[i] = comp_peak(c, comp_ref(c, in.attrs, "to_apply"), depth + 1, memo);
        else if (!strcmp(in.op, "conditional")) {
            const char *v = attr(in.attrs, "branch_computations");
            for (const char *s = v ? v + 1 : NULL; s && *s && *s != '}';) {
                s = skip_ws(s);
                const char *t = s;
                while (*t && *t != ',' && *t != '}' && *t != ' ') t++;
                double b = comp_peak(c, find_comp(c, s, (size_t)(t - s)), depth + 1, memo);
                if (b > extra[i]) extra[i] = b;
                s = *t == ',' ? t + 1 : t;
            }
        }
        if (!strncmp(skip_ws(c->lines[cp->first + i]), "ROOT ", 5)) last[i] = n;
        uint64_t h = hash_name(in.name, strlen(in.name));
        int32_t slot = (int32_t)(h & (uint64_t)(hcap - 1));
        while (hk[slot] && hk[slot] != h) slot = (slot + 1) & (hcap - 1);
        hk[slot] = h, hv[slot] = i;
        // operands: the last word of every top-level piece
        const char *s = in.operands + 1, *end = in.attrs - 1;
        while (s < end) {
            const char *p0 = s;
            while (s < end && *s != ',') {
                if (*s == '{' || *s == '[' || *s == '(') {
                    const char *g = skip_group(s);
                    s = g && g <= end ? g : end;
                } else {
                    s++;
                }
            }
            const char *w1 = s;
            while (w1 > p0 && w1[-1] == ' ') w1--;
            const char *w0 = w1;
            while (w0 > p0 && w0[-1] != ' ' && w0[-1] != '%') w0--;
            if (w1 > w0) {
                uint64_t oh = hash_name(w0, (size_t)(w1 - w0));
                int32_t q = (int32_t)(oh & (uint64_t)(hcap - 1));
                while (hk[q] && hk[q] != oh) q = (q + 1) & (hcap - 1);
                if (hk[q] == oh && last[hv[q]] < i) last[hv[q]] = i;
            }
            if (s < end) s++;
        }
    }
    // sweep: add at definition, free after the last use
    double live = 0;
    int32_t *head = malloc((size_t)(n + 1) * sizeof *head), *next = malloc((size_t)n * sizeof *next);
    if (!head || !next) {
        free(head), free(next);
        goto out;
    }
    for (int32_t i = 0; i <= n; i++) head[i] = -1;
    for (int32_t i = 0; i < n; i++) next[i] = head[last[i]], head[last[i]] = i;
    for (int32_t i = 0; i < n; i++) {
        live += bytes[i];
        if (live + extra[i] > peak) peak = live + extra[i];
        for (int32_t j = head[i]; j >= 0; j = next[j]) live -= bytes[j];
    }
    free(head), free(next);
out:
    free(bytes), free(extra), free(last), free(hk), free(hv);
    return memo[ci] = peak;
}

static double entry_params(const hctx *c, int32_t ci) {
    double t = 0;
    for (int32_t l = c->comps[ci].first; l < c->comps[ci].last; l++) {
        hinst in;
        if (parse_inst(c->lines[l], l, &in) == 0 && !strcmp(in.op, "parameter")) t += in.shape.total;
    }
    return t;
}

// ---- module -----------------------------------------------------------------------------------

// Removes /* ... */ comments (XLA writes /*index=5*/ inside long tuples) outside quotes.
static void strip_comments(char *s) {
    char *w = s, q = 0;
    for (char *r = s; *r;) {
        if (q) {
            if (*r == '\\' && r[1]) *w++ = *r++;
            else if (*r == q) q = 0;
            *w++ = *r++;
        } else if (*r == '"') {
            q = *r;
            *w++ = *r++;
        } else if (r[0] == '/' && r[1] == '*') {
            char *e = strstr(r + 2, "*/");
            if (!e) break;
            r = e + 2;
        } else {
            *w++ = *r++;
        }
    }
    *w = 0;
}

// Pre-partitioning markers: a sharding annotation means XLA has not partitioned the program.
static const char *prepartition_marker(const char *line, int has_partitions) {
    static const struct { const char *needle, *what; } M[] = {
        {"custom_call_target=\"Sharding\"", "custom-call Sharding (a sharding constraint)"},
        {"custom_call_target=\"SPMDFullToShardShape\"", "custom-call SPMDFullToShardShape (a shard_map entry)"},
        {"custom_call_target=\"SPMDShardToFullShape\"", "custom-call SPMDShardToFullShape (a shard_map exit)"},
        {"xla.sdy.", "a Shardy (sdy) sharding attribute"},
        {"sdy.sharding", "a Shardy (sdy) sharding attribute"}};
    for (size_t i = 0; i < sizeof M / sizeof M[0]; i++)
        if (strstr(line, M[i].needle)) return M[i].what;
    if (!has_partitions && (strstr(line, "sharding={devices=") || strstr(line, "sharding={{devices=")))
        return "a GSPMD sharding={devices=...} attribute in a module without num_partitions";
    return NULL;
}

static zg_status prepartition_error(hctx *c, int32_t l, const char *what) {
    return zg_error_set(c->err, ZG_ERR_PARSE,
                        "HLO line %d: %s: this is HLO before SPMD partitioning (no per-device "
                        "program yet); AoiZora reads the program XLA emits after partitioning: "
                        "jax.jit(f, in_shardings=..., out_shardings=...).lower(...).compile()"
                        ".as_text()", l + 1, what);
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
    if (memchr(text, 0, len))
        return zg_error_set(c->err, ZG_ERR_PARSE, "HLO line 1: a NUL byte: not HLO text");
    for (int32_t l = 0; l < c->n_lines; l++) {
        size_t n = strlen(c->lines[l]);
        if (n && c->lines[l][n - 1] == '\r') c->lines[l][n - 1] = 0;
        strip_comments(c->lines[l]);
    }
    // StableHLO / MLIR text
    for (int32_t l = 0; l < c->n_lines; l++) {
        const char *s = skip_ws(c->lines[l]);
        if (!*s || !strncmp(s, "//", 2)) continue;
        if (strncmp(s, "HloModule", 9) && (!strncmp(s, "module", 6) || !strncmp(s, "func.func", 9) || !strncmp(s, "#loc", 4) ||
            strstr(s, "stablehlo.") || strstr(s, "mhlo.")))
            return zg_error_set(c->err, ZG_ERR_PARSE,
                                "HLO line %d: '%.40s': this is StableHLO/MLIR text (jax's "
                                "lower(...).as_text()), not HLO text; AoiZora reads the "
                                "partitioned HLO text: jax.jit(f, ...).lower(...).compile().as_text()",
                                l + 1, s);
        break;
    }
    // header, computations, an appended buffer assignment
    int32_t n_part = -1, n_rep = 1, ccap = 16, header_line = -1;
    c->comps = calloc((size_t)ccap, sizeof *c->comps);
    if (!c->comps) return zg_error_set(c->err, ZG_ERR_NOMEM, "HLO: out of memory");
    int32_t open = -1, in_table = 0, in_ba = 0, have_ba = 0;
    double ba_bytes = 0;
    for (int32_t l = 0; l < c->n_lines; l++) {
        const char *s = skip_ws(c->lines[l]);
        if (open < 0 && !strcmp(s, "BufferAssignment:")) {
            in_ba = have_ba = 1;
            continue;
        }
        if (in_ba) {
            if (strncmp(s, "HloModule", 9)) {
                long long sz = 0;
                int id = 0;
                if (sscanf(s, "allocation %d: size %lld", &id, &sz) == 2 && sz >= 0 &&
                    !strstr(s, "thread-local"))
                    ba_bytes += (double)sz;
                continue;
            }
            in_ba = 0;
        }
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
            if (header_line >= 0) return perr(c, l, "a second HloModule (one module per input)", NULL);
            header_line = l;
            const char *np = strstr(s, "num_partitions=");
            if (np) n_part = (int32_t)strtol(np + 15, NULL, 10);
            if (np && (n_part < 1 || n_part > 4096)) return perr(c, l, "num_partitions out of range", np);
            const char *nr = strstr(s, "replica_count=");
            if (!nr) nr = strstr(s, "num_replicas=");
            if (nr) n_rep = (int32_t)strtol(strchr(nr, '=') + 1, NULL, 10);
            if (nr && (n_rep < 1 || n_rep > 4096)) return perr(c, l, "replica count out of range", nr);
            if (strstr(s, "xla.sdy.meshes"))
                return prepartition_error(c, l, "a Shardy mesh (xla.sdy.meshes) in the module header");
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
        } else {
            const char *what = prepartition_marker(s, n_part > 1);
            if (what) return prepartition_error(c, l, what);
        }
    }
    if (open >= 0) return perr(c, c->n_lines - 1, "computation not closed with '}'", c->comps[open].name);
    int32_t entry = -1;
    for (int32_t i = 0; i < c->n_comps; i++)
        if (c->comps[i].entry) {
            if (entry >= 0) return perr(c, c->comps[i].first - 1, "a second ENTRY computation", NULL);
            entry = i;
        }
    if (entry < 0) return zg_error_set(c->err, ZG_ERR_PARSE, "HLO: no ENTRY computation (line %d)", c->n_lines);
    if (n_part < 0) n_part = 1;
    if ((int64_t)n_part * n_rep > 4096)
        return perr(c, header_line, "num_partitions x replicas over 4096 devices", NULL);
    c->n_part = n_part, c->n_rep = n_rep;
    c->flops_memo = malloc((size_t)c->n_comps * sizeof *c->flops_memo);
    c->coll_memo = malloc((size_t)c->n_comps);
    c->active = calloc((size_t)c->n_comps, 1);
    if (!c->flops_memo || !c->coll_memo || !c->active) return zg_error_set(c->err, ZG_ERR_NOMEM, "HLO: out of memory");
    for (int32_t i = 0; i < c->n_comps; i++) c->flops_memo[i] = -1, c->coll_memo[i] = -1;
    zg_aoi_evidence_init(c->ev, "hlo", n_part * n_rep);
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
    if (have_ba) {
        c->ev->peak_mem_bytes = ba_bytes;
        snprintf(c->ev->peak_mem_source, sizeof c->ev->peak_mem_source, "buffer-assignment");
    } else {
        double *memo = malloc((size_t)c->n_comps * sizeof *memo);
        if (!memo) return zg_error_set(c->err, ZG_ERR_NOMEM, "HLO: out of memory");
        for (int32_t i = 0; i < c->n_comps; i++) memo[i] = -1;
        c->ev->peak_mem_bytes = entry_params(c, entry) + comp_peak(c, entry, 0, memo);
        free(memo);
        snprintf(c->ev->peak_mem_source, sizeof c->ev->peak_mem_source, "estimate");
    }
    return zg_aoi_evidence_finalize(c->ev, c->err);
}

void zg_aoi_hlo_opts_default(zg_aoi_hlo_opts *o) { memset(o, 0, sizeof *o); }

zg_status zg_aoi_hlo_parse_opts(const char *text, size_t len, const zg_aoi_hlo_opts *opts,
                                zg_aoi_evidence *ev, zg_error *err) {
    zg_aoi_hlo_opts dflt;
    zg_aoi_hlo_opts_default(&dflt);
    hctx c;
    memset(&c, 0, sizeof c);
    memset(ev, 0, sizeof *ev);
    if (opts && opts->trip_count < 0)
        return zg_error_set(err, ZG_ERR_INVALID, "HLO: trip_count %lld must be >= 0 (0: none given)",
                            (long long)opts->trip_count);
    c.opts = opts ? opts : &dflt;
    c.ev = ev, c.err = err;
    zg_status st = text ? parse(&c, text, len)
                        : zg_error_set(err, ZG_ERR_INVALID, "HLO line 1: no text given");
    if (c.lines) free(c.lines[0]);
    free(c.lines);
    free(c.comps);
    free(c.flops_memo);
    free(c.coll_memo);
    free(c.active);
    if (st) zg_aoi_evidence_free(ev);
    return st;
}

zg_status zg_aoi_hlo_parse(const char *text, size_t len, zg_aoi_evidence *ev, zg_error *err) {
    return zg_aoi_hlo_parse_opts(text, len, NULL, ev, err);
}
