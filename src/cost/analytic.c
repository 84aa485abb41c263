// analytic.c — the analytic pricer. Time: forward + backward (+ recompute) FLOPs at an efficiency
// that falls for few local tokens, plus alpha-beta communication of each attention primitive on
// the links its groups really use (ring passes overlapped with compute step by step). Memory:
// activations per local token + resident K/V per primitive + communication buffers.
// docs/cost-model.md derives every term and constant.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cost/cost.h"

#define LIN_BWD_FLOPS 2.0   // GEMM backward: dX and dW, each as costly as the forward
#define ATTN_BWD_FLOPS 2.5  // FlashAttention backward recomputes QK^T: 5 matmuls vs 2
#define FP32_BYTES 4.0  // optimizer state and master weights

typedef struct analytic {
    zg_model m;
    zg_cluster c;
    zg_cost_opts o;
    zg_cost_device dev;  // resolved: built-in row with the options' overrides
    double blk_elems;    // elements per token one block saves for backward, self-attn K/V excluded
} analytic;

static int joint_text(const zg_model *m) {
    return m->arch == ZG_ARCH_HUNYUAN || m->arch == ZG_ARCH_MMDIT;
}

// Tensors one block keeps for its backward, per token, K and V of self-attention excluded
// (they are the kv term). The engine's set: what each backward op needs, with cheap tensors
// (norm outputs, raw q/k before norm+RoPE, GELU/SiLU outputs of saved inputs... ) recomputed
// from the saved ones. Listed in docs/cost-model.md ("Activations").
static double block_elems(const zg_model *m) {
    double d = m->dim, f = m->ffn_dim;
    switch (m->arch) {
    case ZG_ARCH_WAN:
        // mod1, q, o, o-proj out, x1, norm3 out, cross q, cross o, x2, mod2, ffn out (11 d)
        // + ffn hidden and its GELU (2 f)
        return 11 * d + 2 * f;
    case ZG_ARCH_HUNYUAN:
    case ZG_ARCH_MMDIT: {
        double dbl = 6 * d + 2 * f;  // mod1, q, o, proj out, x1, mod2 + mlp hidden, GELU
        double sgl = 4 * d + 2 * f;  // mod, q, o, out + mlp hidden, GELU
        if (m->n_single <= 0) return dbl;
        if (m->n_double <= 0) return sgl;
        return dbl > sgl ? dbl : sgl;
    }
    case ZG_ARCH_PLAIN:
        return 5 * d + 3 * f;  // norm1, q, o, x1, norm2 + SwiGLU gate, up, product
    }
    return 11 * d + 2 * f;
}

// Conditioning tokens: joint text rides along in the split sequence (MMDiT/Hunyuan); Wan attends
// to it by cross-attention (replicated on every participating rank); plain models have none.
static double text_tokens(const analytic *a, const zg_seq *s) {
    const zg_model *m = &a->m;
    if (!m->cross_attn && !joint_text(m)) return 0;
    if (s->text_tokens > 0) return s->text_tokens;
    return m->text_len > 0 ? m->text_len : 0;
}

static double curve(double eff, double n, double half) { return eff * n / (n + half); }

// fmax for the block path's operands, which are never NaN (finite times and byte counts, >= 0,
// positive bandwidths): the same double, inline (fmax is a libm call at -O2; ~2 per price).
static inline double max2(double a, double b) { return a > b ? a : b; }

// Rank at position i: ranks[i], or base + i for a block given without a list (ranks NULL).
static int32_t rank_at(const int32_t *ranks, int32_t base, int32_t i) {
    return ranks ? ranks[i] : base + i;
}

// Ulysses all-to-all with `chunk` bytes to each of the h-1 peers: the slowest member of the
// slowest group. Same-node peers go over intra-node links, others over the rank's NIC, at once.
static double alltoall_time(const zg_cluster *cl, const int32_t *ranks, int32_t base0,
                            zg_config c, double chunk) {
    double worst = 0;
    for (int32_t g = 0; g < c.q * c.k; g++) {
        int32_t base = g * c.h;
        for (int32_t x = 0; x < c.h; x++) {
            int32_t nx = zg_cluster_node_of(cl, rank_at(ranks, base0, base + x)), ni = 0, ne = 0;
            for (int32_t y = 0; y < c.h; y++) {
                if (y == x) continue;
                if (zg_cluster_node_of(cl, rank_at(ranks, base0, base + y)) == nx) ni++;
                else ne++;
            }
            double tb = fmax(ni * chunk / cl->intra_bw, ne * chunk / cl->inter_bw);
            double t = tb + (c.h - 1) * (ne ? cl->inter_lat : cl->intra_lat);
            if (t > worst) worst = t;
        }
    }
    return worst;
}

// One step of a neighbour chain (ring all-gather / reduce-scatter, ring attention pass): every
// member sends `bytes` to the next one at once; the slowest hop of any group sets the step.
// Groups: members first + j*stride (j < len) for each first in firsts[].
static double chain_step(const zg_cluster *cl, const int32_t *ranks, int32_t base,
                         const int32_t *firsts, int32_t n_groups, int32_t stride, int32_t len,
                         double bytes) {
    double worst = 0;
    for (int32_t g = 0; g < n_groups; g++)
        for (int32_t j = 0; j < len; j++) {
            int32_t a = rank_at(ranks, base, firsts[g] + j * stride);
            int32_t b = rank_at(ranks, base, firsts[g] + ((j + 1) % len) * stride);
            int inter = zg_cluster_node_of(cl, a) != zg_cluster_node_of(cl, b);
            double t = inter ? cl->inter_lat + bytes / cl->inter_bw
                             : cl->intra_lat + bytes / cl->intra_bw;
            if (t > worst) worst = t;
        }
    return worst;
}

// ---- contiguous blocks (ranks[i] = s0 + i, or ranks NULL with s0 = 0): the same maxima in
// O(ranks_per_node^2) instead of O(degree) per step. Every hop / member time above takes one of a
// few values that depend only on which nodes the members fall in, and node(r) = r / rpn; so it
// suffices to know which of those values occur, and max() over the same set of doubles is the
// same double (bitwise: each value is computed by the identical expression).

// ranks contiguous? s0 gets the first rank.
static int contiguous(const int32_t *ranks, int32_t n, int32_t *s0) {
    *s0 = ranks[0];
    for (int32_t i = 1; i < n; i++)
        if (ranks[i] != ranks[0] + i) return 0;
    return 1;
}

static int32_t gcd32(int32_t a, int32_t b) {
    while (b) {
        int32_t t = a % b;
        a = b, b = t;
    }
    return a;
}

// Hops from positions x = b*P + w (b < B, w < W) to x + d (d >= 0) of a block starting at rank
// s0: crossing a node iff (s0 + x) % rpn + d >= rpn. Sets *inter / *intra when such hops occur.
static void hops_scan(int32_t s0, int32_t rpn, int32_t B, int32_t P, int32_t W, int32_t d,
                      int *inter, int *intra) {
    if (B <= 0 || W <= 0) return;
    if (W >= rpn) {  // every residue occurs
        *inter = 1;  // d >= 1 here (a chain of length >= 2 moves by >= 1 position)
        if (d < rpn) *intra = 1;
        return;
    }
    int32_t period = rpn / gcd32(P % rpn ? P % rpn : rpn, rpn);  // b*P mod rpn repeats
    int32_t nb = B < period ? B : period;
    for (int32_t b = 0; b < nb && !(*inter && *intra); b++) {
        int32_t r0 = (int32_t)(((int64_t)s0 + (int64_t)b * P) % rpn);
        for (int32_t w = 0; w < W; w++) {
            int32_t r = (r0 + w) % rpn;
            if (r + d >= rpn) *inter = 1;
            else *intra = 1;
        }
    }
}

// chain_step for the groups of a contiguous block: B blocks of period P, each holding chains
// whose members are first + j*s (j < len, first in [b*P, b*P + s)). Non-wrap hops start at
// [b*P, b*P + (len-1)*s) and move by s; the wrap hop of a chain goes back from its last member
// to its first, i.e. crosses iff first .. first + (len-1)*s spans two nodes.
// Which hops occur depends only on the block's shape, not on the bytes: chain_step_block2 scans
// once for two byte counts (the ring's forward and backward passes).
static double chain_time(const zg_cluster *cl, int inter, int intra, double bytes) {
    double worst = 0;
    if (inter) {
        double t = cl->inter_lat + bytes / cl->inter_bw;
        if (t > worst) worst = t;
    }
    if (intra) {
        double t = cl->intra_lat + bytes / cl->intra_bw;
        if (t > worst) worst = t;
    }
    return worst;
}

static void chain_step_block2(const zg_cluster *cl, int32_t s0, int32_t B, int32_t P, int32_t s,
                              int32_t len, double bytes1, double bytes2, double *t1,
                              double *t2) {
    int inter = 0, intra = 0, rpn = cl->ranks_per_node;
    hops_scan(s0, rpn, B, P, (len - 1) * s, s, &inter, &intra);
    hops_scan(s0, rpn, B, P, s, (len - 1) * s, &inter, &intra);
    *t1 = chain_time(cl, inter, intra, bytes1);
    *t2 = chain_time(cl, inter, intra, bytes2);
}

// alltoall_time for a contiguous block: group g covers ranks [s0 + g*h, s0 + g*h + h); a member
// whose node holds cs of the group's ranks has ni = cs - 1, ne = h - cs. The chunk sizes of a
// group depend on its start's residue mod rpn, which repeats every rpn / gcd(h, rpn) groups.
// Both chunk sizes of a layer (Q/K/V in, O out) in one pass over the groups: the same maxima as
// two calls, each value by the identical expression.
static void alltoall_block2(const zg_cluster *cl, int32_t s0, zg_config c, double chunk1,
                            double chunk2, double *w1, double *w2) {
    int32_t rpn = cl->ranks_per_node, ng = c.q * c.k;
    int32_t period = rpn / gcd32(c.h % rpn ? c.h % rpn : rpn, rpn);
    int32_t n = ng < period ? ng : period;
    double worst1 = 0, worst2 = 0;
    for (int32_t g = 0; g < n; g++) {
        int32_t r = (int32_t)(((int64_t)s0 + (int64_t)g * c.h) % rpn);
        int32_t sizes[3], ns = 0;
        if (r + c.h <= rpn) {
            sizes[ns++] = c.h;
        } else {
            int32_t first = rpn - r, rest = c.h - first;
            sizes[ns++] = first;
            if (rest >= rpn) sizes[ns++] = rpn;
            if (rest % rpn) sizes[ns++] = rest % rpn;
        }
        for (int32_t i = 0; i < ns; i++) {
            int32_t ni = sizes[i] - 1, ne = c.h - sizes[i];
            double lat = (c.h - 1) * (ne ? cl->inter_lat : cl->intra_lat);
            double t1 = max2(ni * chunk1 / cl->intra_bw, ne * chunk1 / cl->inter_bw) + lat;
            double t2 = max2(ni * chunk2 / cl->intra_bw, ne * chunk2 / cl->inter_bw) + lat;
            if (t1 > worst1) worst1 = t1;
            if (t2 > worst2) worst2 = t2;
        }
    }
    *w1 = worst1, *w2 = worst2;
}

// Position i = (iq*k + ik)*h + ih. Ring groups: fixed (iq, ih), ik varies (stride h).
// All-gather groups: fixed (ik, ih), iq varies (stride h*k).
static double ring_step(const zg_cluster *cl, const int32_t *ranks, int32_t base, zg_config c,
                        double bytes, int32_t *firsts) {
    int32_t n = 0;
    for (int32_t iq = 0; iq < c.q; iq++)
        for (int32_t ih = 0; ih < c.h; ih++) firsts[n++] = iq * c.k * c.h + ih;
    return chain_step(cl, ranks, base, firsts, n, c.h, c.k, bytes);
}

static double gather_step(const zg_cluster *cl, const int32_t *ranks, int32_t base, zg_config c,
                          double bytes, int32_t *firsts) {
    int32_t n = 0;
    for (int32_t ik = 0; ik < c.k; ik++)
        for (int32_t ih = 0; ih < c.h; ih++) firsts[n++] = ik * c.h + ih;
    return chain_step(cl, ranks, base, firsts, n, c.h * c.k, c.q, bytes);
}

// ranks NULL: the block [base, base + n), checked in O(1) with the list's exact message (the
// first out-of-range rank of base, base+1, ...).
static zg_status check_args(const analytic *a, const zg_seq *s, zg_config c,
                            const int32_t *ranks, int32_t base, int32_t n, zg_error *err) {
    if (!s) return zg_error_set(err, ZG_ERR_INVALID, "pricing: no sequence given");
    if (s->tokens <= 0)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "pricing sequence %lld: %lld tokens; tokens must be positive",
                            (long long)s->id, (long long)s->tokens);
    zg_status st = zg_config_check_priced(&a->m, a->c.world_size, c, s->tokens, err);
    if (st) return zg_error_prefix(err, "pricing sequence %lld: ", (long long)s->id), st;
    int32_t deg = zg_config_degree(c);
    if (n != deg)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "pricing sequence %lld: %d ranks given for a config of degree %d",
                            (long long)s->id, n, deg);
    int32_t bad = 0, ws = a->c.world_size;
    if (ranks) {
        for (int32_t i = 0; i < n; i++)
            if (ranks[i] < 0 || ranks[i] >= ws) {
                bad = 1, base = ranks[i];
                break;
            }
    } else if (n > 0 && (base < 0 || (int64_t)base + n > ws)) {
        bad = 1, base = base >= 0 && base < ws ? ws : base;  // the first rank out of range
    }
    if (bad)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "pricing sequence %lld: rank %d out of range 0..%d", (long long)s->id,
                            base, ws - 1);
    return ZG_OK;
}

// ranks NULL: the contiguous block [base, base + n) (no list is read or built).
static zg_status compute(const analytic *a, const zg_seq *s, zg_config c, const int32_t *ranks,
                         int32_t base, int32_t n, zg_cost_terms *t, zg_error *err) {
    zg_status st = check_args(a, s, c, ranks, base, n, err);
    if (st) return st;
    const zg_model *m = &a->m;
    const zg_cluster *cl = &a->c;
    const zg_cost_device *dv = &a->dev;
    // the terms set only under some configs start at 0; the others are all assigned below (a
    // memset of the struct was a visible share of a template build)
    _Static_assert(sizeof(zg_cost_terms) == 14 * sizeof(double),
                   "zg_cost_terms changed: zero its new fields here");
    t->text_linear = t->alltoall = t->allgather = t->ring = t->mem_buf = t->mem_text = 0;
    double b = a->o.act_bytes, d = m->dim, ck = a->o.act_ckpt ? 1 : 0;
    double nl = m->n_layers, peak = cl->peak_flops;
    double txt = text_tokens(a, s);
    double Lp = (double)s->tokens + (joint_text(m) ? txt : 0);  // tokens the split covers
    double lam = zg_config_degree(c);
    double nloc = ceil(Lp / lam);  // the largest shard: it sets the rank's time and memory
    t->local_tokens = nloc;

    // ---- compute: the model's forward FLOPs, the rank's share, fwd + bwd (+ recompute)
    zg_model_flops fl = zg_model_forward_flops(m, s->tokens, (int64_t)txt);
    double rep = m->cross_attn && !joint_text(m) && txt > 0
                     ? zg_model_forward_flops(m, 0, (int64_t)txt).linear  // text K/V projections
                     : 0;
    double share = nloc / Lp;
    double lin = (fl.linear - rep) * share, attn = fl.attn * share, cross = fl.cross * share;
    double e_gemm = curve(dv->gemm_eff, nloc, dv->gemm_half);
    double e_af = curve(dv->attn_fwd_eff, nloc, dv->attn_half);
    double e_ab = curve(dv->attn_bwd_eff, nloc, dv->attn_half);
    t->linear = lin * (1 + LIN_BWD_FLOPS + ck) / (peak * e_gemm);
    if (rep > 0)
        t->text_linear = rep * (1 + LIN_BWD_FLOPS + ck) /
                         (peak * curve(dv->gemm_eff, txt, dv->gemm_half));
    t->cross = cross * (1 + ck) / (peak * e_af) + cross * ATTN_BWD_FLOPS / (peak * e_ab);
    double af = attn / nl / (peak * e_af);                   // self-attention fwd, one layer
    double ab = ATTN_BWD_FLOPS * attn / nl / (peak * e_ab);  // and its backward
    t->attn = nl * ((1 + ck) * af + ab);

    // ---- communication, per layer, on the links of the groups (position order: h, k, q)
    double kvb = 2 * d * b;  // K and V bytes per token, all heads
    int32_t s0 = base;
    int blk = cl->ranks_per_node > 0 && (!ranks || contiguous(ranks, n, &s0));
    if (c.h > 1) {
        double a_in, a_out;
        if (blk) {
            alltoall_block2(cl, s0, c, nloc * 3 * d * b / c.h, nloc * d * b / c.h, &a_in, &a_out);
        } else {
            a_in = alltoall_time(cl, ranks, base, c, nloc * 3 * d * b / c.h);  // Q, K, V in
            a_out = alltoall_time(cl, ranks, base, c, nloc * d * b / c.h);     // O out
        }
        t->alltoall = nl * (2 + ck) * (a_in + a_out);  // fwd, the mirror in bwd, recompute
    }
    if (blk) {
        // gather chains: stride h*k, length q, firsts [0, h*k) (one block of period lambda);
        // ring chains: stride h, length k, firsts iq*k*h + [0, h) (q blocks of period k*h)
        if (c.q > 1) {
            double g, unused;
            chain_step_block2(cl, s0, 1, n, c.h * c.k, c.q, nloc * kvb, 0, &g, &unused);
            t->allgather = nl * (2 + ck) * (c.q - 1) * g;
        }
        if (c.k > 1) {
            double block = nloc * c.q * kvb, mf, mb;
            chain_step_block2(cl, s0, c.q, c.k * c.h, c.h, c.k, block, 2 * block, &mf, &mb);
            double cf = af / c.k, cb = ab / c.k;
            double fwd = (c.k - 1) * max2(cf, mf) + cf;
            double bwd = (c.k - 1) * max2(cb, mb) + cb + mf;
            t->ring = nl * ((1 + ck) * (fwd - af) + (bwd - ab));
        }
    }
    int32_t *firsts = NULL;
    if (!blk && (c.q > 1 || c.k > 1)) {
        firsts = zg_calloc((size_t)(c.q * c.h * c.k), sizeof *firsts, err);
        if (!firsts) return ZG_ERR_NOMEM;
    }
    if (!blk && c.q > 1) {
        double step = gather_step(cl, ranks, base, c, nloc * kvb, firsts);
        t->allgather = nl * (2 + ck) * (c.q - 1) * step;  // all-gather K/V; reduce-scatter dK/dV
    }
    if (!blk && c.k > 1) {
        double block = nloc * c.q * kvb;  // the K/V block one ring pass moves
        double mf = ring_step(cl, ranks, base, c, block, firsts);
        double mb = ring_step(cl, ranks, base, c, 2 * block, firsts);  // K/V and dK/dV travel
        double cf = af / c.k, cb = ab / c.k;                     // compute per ring step
        double fwd = (c.k - 1) * fmax(cf, mf) + cf;
        double bwd = (c.k - 1) * fmax(cb, mb) + cb + mf;  // + dK/dV's last hop home
        t->ring = nl * ((1 + ck) * (fwd - af) + (bwd - ab));
    }
    free(firsts);
    t->time = t->linear + t->text_linear + t->attn + t->cross + t->alltoall + t->allgather +
              t->ring;

    // ---- memory at the peak (one block being recomputed and back-propagated under ckpt)
    double gws = 2 * d;  // residual-stream gradients in and out of the block
    double act_tok = a->o.act_ckpt ? nl * d + a->blk_elems + gws : nl * (d + a->blk_elems) + gws;
    t->mem_act = nloc * act_tok * b;
    double kv_tokens = nloc * c.q;  // K/V (all-head equivalent) a rank sees per layer
    t->mem_kv = (a->o.act_ckpt ? 1 : nl) * kv_tokens * kvb + (c.k > 1 ? kv_tokens * kvb : 0);
    if (c.h > 1) t->mem_buf += nloc * 3 * d * b;  // QKV all-to-all: receive while send lives
    if (c.q > 1) t->mem_buf += kv_tokens * kvb;  // gathered dK/dV before the reduce-scatter
    if (c.k > 1) t->mem_buf += kv_tokens * kvb;  // the dK/dV block travelling in backward
    if (m->cross_attn && !joint_text(m) && txt > 0)
        t->mem_text = txt * d * b + (a->o.act_ckpt ? 1 : nl) * txt * 2 * d * b;
    t->mem = t->mem_act + t->mem_kv + t->mem_buf + t->mem_text;
    return ZG_OK;
}

static zg_status analytic_price(const zg_pricer *p, const zg_seq *s, zg_config c,
                                const int32_t *ranks, int32_t n, zg_price *out, zg_error *err) {
    zg_cost_terms t;
    zg_status st = compute(p->impl, s, c, ranks, 0, n, &t, err);
    if (st) return st;
    out->time = t.time;
    out->mem = t.mem;
    return ZG_OK;
}

// The block entry: compute() without a list, so no O(degree) scan (the list path's range check
// and contiguity test); every price term is the same expression on the same values.
static zg_status analytic_price_block(const zg_pricer *p, const zg_seq *s, zg_config c,
                                      int32_t start, int32_t n, zg_price *out, zg_error *err) {
    zg_cost_terms t;
    zg_status st = compute(p->impl, s, c, NULL, start, n, &t, err);
    if (st) return st;
    out->time = t.time;
    out->mem = t.mem;
    return ZG_OK;
}

static zg_comm_bytes analytic_comm(const zg_pricer *p, const zg_seq *s, zg_config c) {
    zg_comm_bytes r = {0, 0, 0};
    const analytic *a = p->impl;
    if (!a || !s || s->tokens <= 0 || c.q < 1 || c.h < 1 || c.k < 1) return r;
    double b = a->o.act_bytes, d = a->m.dim, ck = a->o.act_ckpt ? 1 : 0, nl = a->m.n_layers;
    double txt = text_tokens(a, s);
    double Lp = (double)s->tokens + (joint_text(&a->m) ? txt : 0);
    double nloc = ceil(Lp / zg_config_degree(c)), kvb = 2 * d * b, block = nloc * c.q * kvb;
    if (c.h > 1) r.alltoall = nl * (2 + ck) * (c.h - 1.0) / c.h * nloc * 4 * d * b;
    if (c.q > 1) r.allgather = nl * (2 + ck) * (c.q - 1) * nloc * kvb;
    // k-1 K/V passes per forward (recompute included), k-1 K/V passes plus k-1 partial dK/dV
    // blocks sent to their owners in backward: 3(k-1) blocks, as the engine moves them
    if (c.k > 1) r.ring = nl * ((1 + ck) * (c.k - 1) * block + (c.k - 1) * 2 * block);
    return r;
}

static void analytic_free(zg_pricer *p) {
    free(p->impl);
    p->impl = NULL;
}

zg_status zg_cost_analytic_terms(const zg_pricer *p, const zg_seq *s, zg_config c,
                                 const int32_t *ranks, int32_t n, zg_cost_terms *out,
                                 zg_error *err) {
    if (!p || !p->impl || !p->kind || strcmp(p->kind, "analytic") != 0)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "cost terms need an analytic pricer (got '%s')",
                            p && p->kind ? p->kind : "none");
    return compute(p->impl, s, c, ranks, 0, n, out, err);
}

static zg_status resolve_device(const zg_cluster *c, const zg_cost_opts *o, zg_cost_device *d,
                                zg_error *err) {
    zg_cost_device_row(c->device, d);
    const zg_cost_device *v = &o->dev;
    if (v->attn_fwd_eff > 0) d->attn_fwd_eff = v->attn_fwd_eff;
    if (v->attn_bwd_eff > 0) d->attn_bwd_eff = v->attn_bwd_eff;
    if (v->gemm_eff > 0) d->gemm_eff = v->gemm_eff;
    if (v->attn_half > 0) d->attn_half = v->attn_half;
    if (v->gemm_half > 0) d->gemm_half = v->gemm_half;
    if (v->framework_bytes > 0) d->framework_bytes = v->framework_bytes;
    return zg_cost_device_check(d, "cost model", err);
}

zg_status zg_cost_analytic_init(zg_pricer *p, const zg_model *m, const zg_cluster *c,
                                const zg_cost_opts *o, zg_error *err) {
    memset(p, 0, sizeof *p);
    zg_cost_opts def;
    if (!o) {
        zg_cost_opts_default(&def);
        o = &def;
    }
    if (!m || !c)
        return zg_error_set(err, ZG_ERR_INVALID, "cost model needs a model and a cluster");
    zg_status st = zg_model_validate(m, err);
    if (st || (st = zg_cluster_validate(c, err))) return st;
    if (o->param_bytes < 1 || o->param_bytes > 8 || o->act_bytes < 1 || o->act_bytes > 8)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "cost model: param_bytes %d and act_bytes %d must be in 1..8",
                            o->param_bytes, o->act_bytes);
    analytic *a = zg_calloc(1, sizeof *a, err);
    if (!a) return ZG_ERR_NOMEM;
    a->m = *m;
    a->c = *c;
    a->o = *o;
    if ((st = resolve_device(c, o, &a->dev, err))) {
        free(a);
        return st;
    }
    a->blk_elems = block_elems(m);

    // base: weights + grads (param_bytes each) + Adam m, v (fp32) + fp32 master weights when the
    // weights are narrower; sharded over every rank under FSDP/ZeRO-3, which then also holds the
    // all-gathered weights of two blocks (current + prefetch); plus the framework constant.
    double P = (double)zg_model_param_count(m);
    double master = o->param_bytes < 4 ? FP32_BYTES : 0;
    double per_param = 2.0 * o->param_bytes + 2 * FP32_BYTES + master;
    double states = P * per_param;
    double gathered = 0;
    if (o->shard_weights) {
        states /= c->world_size;
        gathered = 2 * P / m->n_layers * o->param_bytes;
    }
    p->mem_base = states + gathered + a->dev.framework_bytes;
    p->mem_cap = zg_cluster_mem_cap_bytes(c);
    if (!(zg_pricer_mem_room(p) > 0)) {
        char bb[32], ub[32];
        zg_fmt_bytes(p->mem_base, bb, sizeof bb);
        zg_fmt_bytes(p->mem_cap, ub, sizeof ub);
        free(a);
        memset(p, 0, sizeof *p);
        return zg_error_set(err, ZG_ERR_INFEASIBLE,
                            "model '%s' on cluster '%s': base memory %s (weights, grads, optimizer"
                            "%s) leaves nothing of the %s memory cap per rank; shard the weights or "
                            "use devices with more memory",
                            m->name, c->name, bb, o->shard_weights ? ", sharded" : ", unsharded",
                            ub);
    }
    p->kind = "analytic";
    p->impl = a;
    p->price = analytic_price;
    p->price_block = analytic_price_block;
    p->block_for = analytic_price;
    p->comm = analytic_comm;
    p->free_impl = analytic_free;
    return ZG_OK;
}

zg_status zg_cost_attn_layer_init(zg_pricer *p, int32_t n_heads, int32_t head_dim,
                                  zg_error *err) {
    zg_model m;
    zg_cluster cl;
    zg_cost_opts co;
    zg_cost_opts_default(&co);
    co.act_ckpt = 0;
    co.act_bytes = 4;
    zg_status st = zg_model_preset("wan2.1-1.3b", &m, err);
    if (!st) st = zg_cluster_preset("8xA800", &cl, err);
    if (st) return st;
    m.n_heads = n_heads;
    m.head_dim = head_dim;
    m.dim = n_heads * head_dim;
    m.n_layers = 1;
    return zg_cost_analytic_init(p, &m, &cl, &co, err);
}
