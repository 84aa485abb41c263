// graph.c — workload defaults, the graph IR of a DiT step, and sharding candidates
// (enumeration, divisibility and memory checks with readable reasons, PartitionSpecs).
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aoizora/aoizora.h"

zg_status zg_aoi_work_init(zg_aoi_work *w, const char *model, const char *res, int64_t frames,
                           int training, int32_t batch, int32_t devices, zg_error *err) {
    memset(w, 0, sizeof *w);
    if (zg_model_load(model, &w->model, err)) return err->status;
    if (!strcmp(res, "480p")) w->height = 480, w->width = 832;
    else if (!strcmp(res, "720p")) w->height = 720, w->width = 1280;
    else if (!strcmp(res, "544p")) w->height = 544, w->width = 960;
    else if (sscanf(res, "%" SCNd64 "x%" SCNd64, &w->height, &w->width) != 2 || w->height < 16 ||
             w->width < 16 || w->height > 8192 || w->width > 8192)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "resolution '%s': use 480p, 544p, 720p or HxW like 480x832", res);
    if (frames < 1 || frames > 1024)
        return zg_error_set(err, ZG_ERR_INVALID, "frames %lld not in 1..1024", (long long)frames);
    w->frames = frames;
    w->training = training != 0;
    w->cfg = !training && w->model.arch == ZG_ARCH_WAN;
    if (batch <= 0) batch = training ? devices : (w->cfg ? 2 : 1);
    if (batch < 1 || batch > 4096)
        return zg_error_set(err, ZG_ERR_INVALID, "batch %d not in 1..4096", batch);
    if (w->cfg && batch % 2)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "batch %d: CFG inference runs two branches, use an even batch", batch);
    w->batch = batch;
    return ZG_OK;
}

static zg_aoi_node *add(zg_aoi_block *b, zg_aoi_node_kind k, const char *name) {
    zg_aoi_node *n = &b->nodes[b->n_nodes++];
    memset(n, 0, sizeof *n);
    n->kind = k;
    snprintf(n->name, sizeof n->name, "%s", name);
    return n;
}
static void gemm(zg_aoi_block *b, const char *name, zg_aoi_tp_mode tp, int64_t k, int64_t n,
                 int qkv, int text_rows) {
    zg_aoi_node *x = add(b, ZG_AOI_GEMM, name);
    x->tp = tp, x->k = k, x->n = n, x->qkv = qkv, x->text_rows = text_rows;
}
static void elem(zg_aoi_block *b, const char *name, double width) {
    add(b, ZG_AOI_ELEM, name)->elem_width = width;
}
static void attn(zg_aoi_block *b, const char *name, int cross) {
    add(b, ZG_AOI_ATTN, name)->cross = cross;
}
// Modulated norm, fused QKV projection, attention over the block's sequence, output projection.
static void attn_part(zg_aoi_block *b, const char *attn_name, int64_t d) {
    elem(b, "norm1_mod", 3.0 * d);
    gemm(b, "qkv", ZG_AOI_TP_COL, d, 3 * d, 1, 0);
    attn(b, attn_name, 0);
    gemm(b, "o_proj", ZG_AOI_TP_ROW, d, d, 0, 0);
}
// The norm before the FFN (norm_name), up and down projections, residual add.
static void ffn_part(zg_aoi_block *b, const char *norm_name, int64_t d, int64_t f) {
    elem(b, norm_name, 3.0 * d);
    gemm(b, "ffn_up", ZG_AOI_TP_COL, d, f, 0, 0);
    gemm(b, "ffn_down", ZG_AOI_TP_ROW, f, d, 0, 0);
    elem(b, "res_add", 2.0 * d);
}
static zg_aoi_block *new_block(zg_aoi_graph *g, const char *name, int64_t repeat,
                               double weight_params) {
    zg_aoi_block *b = &g->blocks[g->n_blocks++];
    snprintf(b->name, sizeof b->name, "%s", name);
    b->repeat = repeat;
    b->weight_params = weight_params;
    return b;
}

zg_status zg_aoi_graph_build(const zg_aoi_work *w, zg_aoi_graph *g, zg_error *err) {
    memset(g, 0, sizeof *g);
    g->work = *w;
    const zg_model *m = &w->model;
    int64_t d = m->dim, f = m->ffn_dim;
    g->tokens = zg_model_tokens(m, w->frames, w->height, w->width);
    g->text = m->text_len;
    if (g->tokens < 1)
        return zg_error_set(err, ZG_ERR_INVALID, "%s at %lldx%lld, %lld frames has no tokens",
                            m->name, (long long)w->height, (long long)w->width, (long long)w->frames);
    int64_t pin = (int64_t)m->in_channels * m->patch[0] * m->patch[1] * m->patch[2];
    g->embed_params = (double)pin * d * 2 + (double)m->text_dim * d + (double)d * d +
                      (double)m->freq_dim * d + (double)d * d + 6.0 * d * d;
    if (m->arch == ZG_ARCH_WAN || m->arch == ZG_ARCH_PLAIN) {
        g->seq = g->tokens;
        zg_aoi_block *b = new_block(g, "block", m->n_layers, 8.0 * d * d + 2.0 * d * f + 6.0 * d);
        attn_part(b, "self_attn", d);
        if (m->cross_attn) {
            elem(b, "res_norm2", 3.0 * d);
            gemm(b, "cross_q", ZG_AOI_TP_COL, d, d, 0, 0);
            gemm(b, "cross_kv", ZG_AOI_TP_COL, d, 2 * d, 0, 1);
            attn(b, "cross_attn", 1);
            gemm(b, "cross_o", ZG_AOI_TP_ROW, d, d, 0, 0);
        }
        ffn_part(b, "res_norm3_mod", d, f);
    } else {
        g->seq = g->tokens + g->text;  // joint attention over video + text tokens
        zg_aoi_block *b = new_block(g, "double_block", m->n_double,
                                    2.0 * (4.0 * d * d + 2.0 * d * f) + 12.0 * d * d);
        attn_part(b, "joint_attn", d);
        ffn_part(b, "res_norm2_mod", d, f);
        if (m->n_single > 0) {
            b = new_block(g, "single_block", m->n_single, 7.0 * d * d + 2.0 * d * f);
            elem(b, "norm_mod", 3.0 * d);
            gemm(b, "linear1", ZG_AOI_TP_COL, d, 3 * d + f, 1, 0);
            attn(b, "joint_attn", 0);
            gemm(b, "linear2", ZG_AOI_TP_ROW, d + f, d, 0, 0);
            elem(b, "res_add", 2.0 * d);
        }
    }
    g->params = g->embed_params;
    for (int i = 0; i < g->n_blocks; i++) g->params += g->blocks[i].weight_params * g->blocks[i].repeat;
    return ZG_OK;
}

zg_status zg_aoi_graph_from_dims(const zg_aoi_dims *d, zg_aoi_graph *g, zg_error *err) {
    memset(g, 0, sizeof *g);
    const char *nm = d->name[0] ? d->name : "program";
    if (d->dim < 1 || d->heads < 1 || d->dim % d->heads)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "%s: hidden width %d must be a positive multiple of the %d heads", nm,
                            d->dim, d->heads);
    if (d->ffn < 1 || d->layers < 1 || d->layers > 100000)
        return zg_error_set(err, ZG_ERR_INVALID, "%s: ffn width %d and layers %d must be >= 1", nm,
                            d->ffn, d->layers);
    if (d->tokens < 1 || d->text < 0 || d->batch < 1)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "%s: tokens %lld, text %lld and batch %d: need tokens >= 1, text >= 0, "
                            "batch >= 1", nm, (long long)d->tokens, (long long)d->text, d->batch);
    zg_aoi_work w;
    memset(&w, 0, sizeof w);
    if (zg_model_preset("wan2.1-1.3b", &w.model, err)) return err->status;
    zg_model *m = &w.model;
    snprintf(m->name, sizeof m->name, "%s", nm);
    m->dim = d->dim, m->n_heads = d->heads, m->head_dim = d->dim / d->heads;
    m->ffn_dim = d->ffn, m->n_layers = d->layers, m->n_double = m->n_single = 0;
    m->text_len = (int32_t)d->text, m->cross_attn = d->text > 0;
    // a user's program is the blocks alone: no patch embedding, text projection or head
    m->in_channels = 0, m->text_dim = 0, m->freq_dim = 0;
    w.frames = 1, w.height = w.width = 16;
    w.training = d->training != 0, w.cfg = 0, w.batch = d->batch;
    zg_status st = zg_aoi_graph_build(&w, g, err);
    if (st) return st;
    g->tokens = g->seq = d->tokens;
    g->embed_params = 0;
    g->params = 0;
    for (int i = 0; i < g->n_blocks; i++) g->params += g->blocks[i].weight_params * g->blocks[i].repeat;
    return ZG_OK;
}

// ---- candidates -----------------------------------------------------------------------------

void zg_aoi_cand_label(const zg_aoi_cand *c, char *buf, size_t n) {
    static const char *fs[4] = {"", ",fsdp", ",fsdp_sp", ",fsdp_dp"};
    snprintf(buf, n, "dp=%d,ring=%d,uly=%d,tp=%d%s", c->dp, c->ring, c->uly, c->tp,
             fs[c->fsdp >= 0 && c->fsdp < 4 ? c->fsdp : 0]);
}

int zg_aoi_cand_fsdp_mask(const zg_aoi_cand *c) {
    switch (c->fsdp) {
    case ZG_AOI_FSDP_ALL: return 1 | 2 | 4;
    case ZG_AOI_FSDP_SP: return 2 | 4;
    case ZG_AOI_FSDP_DP: return 1;
    default: return 0;
    }
}

int32_t zg_aoi_cand_fsdp_size(const zg_aoi_cand *c) {
    int m = zg_aoi_cand_fsdp_mask(c);
    return ((m & 1) ? c->dp : 1) * ((m & 2) ? c->ring : 1) * ((m & 4) ? c->uly : 1);
}

static void fill_axes(const zg_aoi_cand *cin, int cfg, zg_aoi_cand *c) {
    (void)cin;
    const int32_t v[4] = {c->dp, c->ring, c->uly, c->tp};
    const char *nm[4] = {cfg ? "cfg" : "dp", "ring", "sp", "tp"};
    c->n_axes = 0;
    for (int a = 0; a < 4; a++)
        if (v[a] > 1) {
            c->shape[c->n_axes] = v[a];
            snprintf(c->names[c->n_axes], sizeof c->names[0], "%s", nm[a]);
            c->n_axes++;
        }
    if (c->n_axes == 0) c->shape[0] = 1, snprintf(c->names[0], 8, "dp"), c->n_axes = 1;
}

void zg_aoi_cand_check(const zg_aoi_graph *g, const zg_net *net, zg_aoi_cand *c) {
    const zg_model *m = &g->work.model;
    char lab[64];
    zg_aoi_cand_label(c, lab, sizeof lab);
    fill_axes(c, g->work.cfg, c);
    c->legal = 0;
    int32_t D = c->dp * c->ring * c->uly;
    if ((int64_t)D * c->tp != net->n_devices) {
        snprintf(c->reject, sizeof c->reject, "%s: uses %d devices, the slice has %d", lab,
                 D * c->tp, net->n_devices);
        return;
    }
    if (g->work.batch % c->dp) {
        snprintf(c->reject, sizeof c->reject, "%s: batch %d is not divisible by dp %d", lab,
                 g->work.batch, c->dp);
        return;
    }
    if (m->n_heads % c->tp || m->ffn_dim % c->tp || m->dim % c->tp) {
        snprintf(c->reject, sizeof c->reject,
                 "%s: tp %d must divide heads %d, ffn %d and dim %d", lab, c->tp, m->n_heads,
                 m->ffn_dim, m->dim);
        return;
    }
    if ((m->n_heads / c->tp) % c->uly) {
        snprintf(c->reject, sizeof c->reject,
                 "%s: ulysses %d must divide the %d heads left per tp rank", lab, c->uly,
                 m->n_heads / c->tp);
        return;
    }
    int64_t sp = (int64_t)c->ring * c->uly;
    if (g->seq < sp * 2) {
        snprintf(c->reject, sizeof c->reject, "%s: sequence %lld too short for %lld-way split",
                 lab, (long long)g->seq, (long long)sp);
        return;
    }
    // memory per device
    double bl = g->work.batch / c->dp, nloc = ceil((double)g->seq / sp);
    double d = m->dim, f = m->ffn_dim, t = c->tp;
    int32_t FS = zg_aoi_cand_fsdp_size(c);
    double shard = t * FS, wblk = 0;
    for (int i = 0; i < g->n_blocks; i++)
        if (g->blocks[i].weight_params > wblk) wblk = g->blocks[i].weight_params;
    double gathered = FS > 1 ? 2.0 * 2.0 * wblk / t : 0;
    double act_blk = bl * nloc * (10 * d + 6 * d / t + 4 * f / t) * 2 + bl * g->text * d * 2 * 2;
    if (!g->work.training) {
        c->weight_bytes = 2.0 * g->params / shard + gathered;
        c->act_bytes = bl * nloc * (6 * d + 6 * d / t + 2 * f / t) * 2 + bl * g->text * d * 2 * 2;
    } else {
        int64_t layers = 0;
        for (int i = 0; i < g->n_blocks; i++) layers += g->blocks[i].repeat;
        c->weight_bytes = 16.0 * g->params / shard + gathered;
        c->act_bytes = layers * bl * nloc * d * 2 + 2 * act_blk;
    }
    c->mem_bytes = c->weight_bytes + c->act_bytes;
    double cap = net->hbm_bytes * net->hbm_usable_frac;
    if (c->mem_bytes > cap) {
        char a[32], b[32], w8[32], ac[32];
        snprintf(c->reject, sizeof c->reject,
                 "%s: needs %s per chip (weights%s %s, activations %s), %s usable", lab,
                 zg_fmt_bytes(c->mem_bytes, a, sizeof a), g->work.training ? "+optimizer" : "",
                 zg_fmt_bytes(c->weight_bytes, w8, sizeof w8),
                 zg_fmt_bytes(c->act_bytes, ac, sizeof ac), zg_fmt_bytes(cap, b, sizeof b));
        return;
    }
    c->legal = 1;
    c->reject[0] = 0;
}

zg_status zg_aoi_cand_enumerate(const zg_aoi_graph *g, const zg_net *net, zg_aoi_cand **out,
                                int32_t *n, zg_error *err) {
    int32_t N = net->n_devices, cnt = 0, cap = 64;
    zg_aoi_cand *c = zg_calloc((size_t)cap, sizeof *c, err);
    if (!c) return err ? err->status : ZG_ERR_NOMEM;
    for (int32_t dp = 1; dp <= N; dp++) {
        if (N % dp) continue;
        for (int32_t r = 1; r <= N / dp; r++) {
            if ((N / dp) % r) continue;
            for (int32_t u = 1; u <= N / dp / r; u++) {
                if ((N / dp / r) % u) continue;
                int32_t t = N / dp / r / u;
                for (int fs = 0; fs < 4; fs++) {
                    if (fs == ZG_AOI_FSDP_ALL && dp * r * u == 1) continue;
                    // partial FSDP only where it differs from none and from all
                    if (fs >= ZG_AOI_FSDP_SP && (dp == 1 || r * u == 1)) continue;
                    if (cnt == cap) {
                        zg_aoi_cand *nc = zg_realloc_array(c, (size_t)cap * 2, sizeof *c, err);
                        if (!nc) {
                            free(c);
                            return err ? err->status : ZG_ERR_NOMEM;
                        }
                        c = nc, cap *= 2;
                    }
                    zg_aoi_cand *x = &c[cnt++];
                    memset(x, 0, sizeof *x);
                    x->dp = dp, x->ring = r, x->uly = u, x->tp = t, x->fsdp = fs;
                    zg_aoi_cand_check(g, net, x);
                }
            }
        }
    }
    *out = c, *n = cnt;
    return ZG_OK;
}

zg_status zg_aoi_cand_parse(const char *spec, int32_t devices, zg_aoi_cand *c, zg_error *err) {
    memset(c, 0, sizeof *c);
    c->dp = c->ring = c->uly = c->tp = 1;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int v = 0;
        if (!strcmp(tok, "fsdp")) c->fsdp = ZG_AOI_FSDP_ALL;
        else if (!strcmp(tok, "fsdp_sp")) c->fsdp = ZG_AOI_FSDP_SP;
        else if (!strcmp(tok, "fsdp_dp")) c->fsdp = ZG_AOI_FSDP_DP;
        else if (sscanf(tok, "dp=%d", &v) == 1 || sscanf(tok, "cfg=%d", &v) == 1) c->dp = v;
        else if (sscanf(tok, "ring=%d", &v) == 1) c->ring = v;
        else if (sscanf(tok, "uly=%d", &v) == 1 || sscanf(tok, "sp=%d", &v) == 1) c->uly = v;
        else if (sscanf(tok, "tp=%d", &v) == 1) c->tp = v;
        else
            return zg_error_set(err, ZG_ERR_INVALID,
                                "sharding '%s': unknown part '%s' (use dp=,ring=,uly=,tp=,fsdp|fsdp_sp|fsdp_dp)",
                                spec, tok);
        if (v < 0 || v > 4096)
            return zg_error_set(err, ZG_ERR_INVALID, "sharding '%s': degree %d out of range", spec, v);
    }
    if (c->dp < 1 || c->ring < 1 || c->uly < 1 || c->tp < 1 ||
        (int64_t)c->dp * c->ring * c->uly * c->tp != devices)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "sharding '%s': degrees multiply to %lld, the slice has %d devices",
                            spec, (long long)c->dp * c->ring * c->uly * c->tp, devices);
    return ZG_OK;
}

void zg_aoi_partition_specs(const zg_aoi_cand *c, char *buf, size_t n) {
    char dp[16] = "None", seq[24] = "None", tp[8] = "None", fs[48] = "None", heads[24] = "None";
    for (int a = 0; a < c->n_axes; a++) {
        const char *nm = c->names[a];
        if (!strcmp(nm, "dp") || !strcmp(nm, "cfg")) snprintf(dp, sizeof dp, "'%s'", nm);
        if (!strcmp(nm, "tp")) snprintf(tp, sizeof tp, "'tp'");
    }
    if (c->ring > 1 && c->uly > 1) snprintf(seq, sizeof seq, "('ring','sp')");
    else if (c->ring > 1) snprintf(seq, sizeof seq, "'ring'");
    else if (c->uly > 1) snprintf(seq, sizeof seq, "'sp'");
    if (c->uly > 1 && c->tp > 1) snprintf(heads, sizeof heads, "('sp','tp')");
    else if (c->uly > 1) snprintf(heads, sizeof heads, "'sp'");
    else if (c->tp > 1) snprintf(heads, sizeof heads, "'tp'");
    if (c->fsdp) {
        char tmp[40] = "";
        int k = 0, fm = zg_aoi_cand_fsdp_mask(c);
        for (int a = 0; a < c->n_axes; a++)
            if (strcmp(c->names[a], "tp") &&
                (((fm & 1) && (!strcmp(c->names[a], "dp") || !strcmp(c->names[a], "cfg"))) ||
                 ((fm & 2) && !strcmp(c->names[a], "ring")) || ((fm & 4) && !strcmp(c->names[a], "sp")))) {
                size_t l = strlen(tmp);
                snprintf(tmp + l, sizeof tmp - l, "%s'%s'", k++ ? "," : "", c->names[a]);
            }
        if (k == 1) snprintf(fs, sizeof fs, "%s", tmp);
        else if (k > 1) snprintf(fs, sizeof fs, "(%s)", tmp);
    }
    snprintf(buf, n,
             "x (latents/activations) [B,N,D]: P(%s, %s, None)\n"
             "q,k,v (attention) [B,N,H,hd]: P(%s, %s, %s, None)\n"
             "w_qkv, w_ffn_up [D,out]: P(%s, %s)\n"
             "w_o, w_ffn_down [in,D]: P(%s, %s)\n"
             "text (context) [B,T,D]: P(%s, None, None)\n",
             dp, seq, dp, c->ring > 1 ? "'ring'" : "None", heads, fs, tp, tp, fs, dp);
}
