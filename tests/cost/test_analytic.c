// test_analytic.c — the analytic pricer: hand-computed prices on a tiny model and cluster (whole,
// Ulysses, ring, all-gather), comm bytes, memory scaling per primitive, node-aware links,
// monotonicity and bad input. Calibration against the paper: test_calibration.c.
#include <stdlib.h>
#include <string.h>

#include "cost/cost.h"
#include "cost_testlib.h"
#include "zgtest.h"

#define RTOL 1e-12

// 4 ranks in 2 nodes of 2; round numbers so the prices can be computed by hand.
static zg_cluster tiny_cluster(void) {
    zg_cluster c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "tiny4");
    snprintf(c.device, sizeof c.device, "testdev");
    c.world_size = 4;
    c.ranks_per_node = 2;
    c.mem_bytes = 1e9;
    c.mem_usable_frac = 0.9;
    c.peak_flops = 1e12;
    c.intra_bw = 1e9;
    c.intra_lat = 1e-6;
    c.inter_bw = 1e8;
    c.inter_lat = 1e-5;
    return c;
}

// tiny: Wan-style, d 64, ffn 128, 4 heads, 2 layers, text 8. All efficiencies 0.5, halves 100.
static zg_status tiny_pricer(zg_pricer *p, zg_error *e) {
    zg_model m;
    zg_status st = zg_model_preset("tiny", &m, e);
    if (st) return st;
    zg_cluster c = tiny_cluster();
    zg_cost_opts o;
    zg_cost_opts_default(&o);
    o.dev = (zg_cost_device){0.5, 0.5, 0.5, 100, 100, 1e6};
    return zg_cost_analytic_init(p, &m, &c, &o, e);
}

static zg_seq seq(int64_t tokens) {
    zg_seq s;
    memset(&s, 0, sizeof s);
    s.id = 7;
    s.tokens = tokens;
    s.text_tokens = 8;
    return s;
}

// The hand-priced case: the tiny pricer (p), a 400-token sequence (s) and its terms (t) under
// config c on ranks (n of them; NULL: positions 0..n-1).
static zg_status tiny_terms(zg_pricer *p, zg_seq *s, zg_config c, const int32_t *ranks, int32_t n,
                            zg_cost_terms *t, zg_error *e) {
    zg_status st = tiny_pricer(p, e);
    if (st) return st;
    *s = seq(400);
    return zg_cost_analytic_terms(p, s, c, ranks, n, t, e);
}

// Shared hand numbers for L = 400, d = 64, f = 128, 2 layers, 8 text tokens:
//   linear (split)  = 2 * (12*400*64^2 + 4*400*64*128) = 65,536,000 FLOPs forward
//   linear (text)   = 2 * 4*8*64^2 = 262,144 (cross-attn K/V of the text, on every rank)
//   self-attention  = 2 * 4*400^2*64 = 81,920,000;  cross = 2 * 4*400*8*64 = 1,638,400
//   multipliers: linear fwd 1 + bwd 2 + recompute 1 = 4; attention 1 + 2.5 + 1 = 4.5
ZG_TEST(whole_price_by_hand) {
    zg_error e;
    zg_pricer p;
    zg_seq s;
    zg_cost_terms t;
    CHECK_OK(tiny_terms(&p, &s, (zg_config){1, 1, 1}, NULL, 1, &t, &e), &e);
    double eff = 0.5 * 400 / (400 + 100);  // 0.4
    CHECK_NEAR(t.linear, 65536000.0 * 4 / (1e12 * eff), 0, RTOL);
    CHECK_NEAR(t.text_linear, 262144.0 * 4 / (1e12 * 0.5 * 8 / 108), 0, RTOL);
    CHECK_NEAR(t.attn, 81920000.0 * 4.5 / (1e12 * eff), 0, RTOL);
    CHECK_NEAR(t.cross, 1638400.0 * 4.5 / (1e12 * eff), 0, RTOL);
    CHECK(t.alltoall == 0 && t.allgather == 0 && t.ring == 0);
    CHECK_NEAR(t.time, t.linear + t.text_linear + t.attn + t.cross, 0, RTOL);
    // memory (bf16): per token 2*64 block inputs + (11*64 + 2*128) block + 2*64 grads
    // = 1216 elements = 2432 B; K/V 2*64*2 = 256 B/token; text 8*64*2 + 8*2*64*2 = 3072 B
    CHECK_NEAR(t.mem_act, 400.0 * 2432, 0, RTOL);
    CHECK_NEAR(t.mem_kv, 400.0 * 256, 0, RTOL);
    CHECK(t.mem_buf == 0);
    CHECK_NEAR(t.mem_text, 3072, 0, RTOL);
    CHECK_NEAR(t.mem, 400.0 * 2432 + 400.0 * 256 + 3072, 0, RTOL);
    zg_price pr;
    int32_t r = 3;
    CHECK_OK(zg_pricer_price(&p, &s, (zg_config){1, 1, 1}, &r, 1, &pr, &e), &e);
    CHECK(pr.time == t.time && pr.mem == t.mem);
    zg_comm_bytes cb = p.comm(&p, &s, (zg_config){1, 1, 1});
    CHECK(cb.allgather == 0 && cb.alltoall == 0 && cb.ring == 0);
    // base: params * (2 + 2 + 4 + 4 + 4) / 4 ranks + 2 gathered blocks + framework 1e6
    zg_model m;
    CHECK_OK(zg_model_preset("tiny", &m, &e), &e);
    double P = (double)zg_model_param_count(&m);
    CHECK_NEAR(p.mem_base, P * 16 / 4 + 2 * P / 2 * 2 + 1e6, 0, RTOL);
    CHECK_NEAR(p.mem_cap, 0.9e9, 0, RTOL);  // the cap: memory x usable fraction
    CHECK_NEAR(zg_pricer_mem_room(&p), 0.9e9 - p.mem_base, 0, RTOL);
    zg_pricer_free(&p);
    CHECK(p.impl == NULL && p.price == NULL);
}

ZG_TEST(ulysses_price_by_hand) {
    zg_error e;
    zg_pricer p;
    zg_seq s;
    zg_cost_terms t;
    int32_t in_node[2] = {0, 1}, across[2] = {1, 2};
    CHECK_OK(tiny_terms(&p, &s, (zg_config){1, 2, 1}, in_node, 2, &t, &e), &e);
    double eff = 0.5 * 200 / 300;
    CHECK_NEAR(t.local_tokens, 200, 0, 0);
    CHECK_NEAR(t.linear, 32768000.0 * 4 / (1e12 * eff), 0, RTOL);
    CHECK_NEAR(t.text_linear, 262144.0 * 4 / (1e12 * 0.5 * 8 / 108), 0, RTOL);  // replicated
    CHECK_NEAR(t.attn, 40960000.0 * 4.5 / (1e12 * eff), 0, RTOL);
    // all-to-all per layer: QKV chunk 200*3*64*2/2 = 38,400 B and O chunk 12,800 B to the one
    // peer, each + 1 latency; x 2 layers x (fwd + bwd + recompute)
    double a2a = (38400 / 1e9 + 1e-6) + (12800 / 1e9 + 1e-6);
    CHECK_NEAR(t.alltoall, 2 * 3 * a2a, 0, RTOL);
    CHECK_NEAR(t.mem_kv, 200.0 * 256, 0, RTOL);      // L*kv/h
    CHECK_NEAR(t.mem_buf, 200.0 * 3 * 64 * 2, 0, RTOL);  // QKV receive buffer
    CHECK_NEAR(t.mem_act, 200.0 * 2432, 0, RTOL);
    zg_cost_terms x;
    CHECK_OK(zg_cost_analytic_terms(&p, &s, (zg_config){1, 2, 1}, across, 2, &x, &e), &e);
    double a2x = (38400 / 1e8 + 1e-5) + (12800 / 1e8 + 1e-5);  // over the inter-node link
    CHECK_NEAR(x.alltoall, 2 * 3 * a2x, 0, RTOL);
    CHECK(x.time > t.time && x.mem == t.mem);
    zg_comm_bytes cb = p.comm(&p, &s, (zg_config){1, 2, 1});
    CHECK_NEAR(cb.alltoall, 2 * 3 * 0.5 * 200 * 4 * 64 * 2, 0, RTOL);
    CHECK(cb.allgather == 0 && cb.ring == 0);
    zg_pricer_free(&p);
}

ZG_TEST(ring_price_by_hand) {
    zg_error e;
    zg_pricer p;
    zg_seq s;
    zg_cost_terms t;
    int32_t r[2] = {0, 1};
    CHECK_OK(tiny_terms(&p, &s, (zg_config){1, 1, 2}, r, 2, &t, &e), &e);
    double eff = 0.5 * 200 / 300;
    double af = 40960000.0 / 2 / (1e12 * eff), ab = 2.5 * af;  // per layer
    CHECK_NEAR(t.attn, 2 * (2 * af + ab), 0, RTOL);
    // each step: compute half of the layer's attention vs one pass of the 200-token K/V block
    // (51,200 B); backward passes K/V and dK/dV (102,400 B) and sends dK/dV home at the end
    double mf = 1e-6 + 51200 / 1e9, mb = 1e-6 + 102400 / 1e9;
    double fwd = (af / 2 > mf ? af / 2 : mf) + af / 2;
    double bwd = (ab / 2 > mb ? ab / 2 : mb) + ab / 2 + mf;
    CHECK_NEAR(t.ring, 2 * (2 * (fwd - af) + (bwd - ab)), 0, RTOL);
    CHECK(t.ring > 0);  // this tiny case is communication-bound
    CHECK_NEAR(t.mem_kv, 2 * 200.0 * 256, 0, RTOL);            // own + in-flight block
    CHECK_NEAR(t.mem_buf, 200.0 * 256, 0, RTOL);  // the dK/dV block in flight
    zg_comm_bytes cb = p.comm(&p, &s, (zg_config){1, 1, 2});
    // 2 layers x [(1+ckpt) K/V passes + K/V pass and partial dK/dV to its owner] = 3(k-1) blocks
    // with recompute: 2 * (2*(k-1) + 2*(k-1)) blocks of 51200 bytes at k = 2
    CHECK_NEAR(cb.ring, 2 * (2 * 51200.0 + 2 * 51200.0), 0, RTOL);
    zg_pricer_free(&p);
}

ZG_TEST(allgather_price_by_hand) {
    zg_error e;
    zg_pricer p;
    zg_seq s;
    zg_cost_terms t;
    CHECK_OK(tiny_terms(&p, &s, (zg_config){2, 1, 1}, NULL, 2, &t, &e), &e);
    // one ring step of the 200-token K/V chunk (51,200 B); fwd gather, bwd reduce-scatter,
    // recompute gather; 2 layers
    CHECK_NEAR(t.allgather, 2 * 3 * (1e-6 + 51200 / 1e9), 0, RTOL);
    CHECK_NEAR(t.mem_kv, 400.0 * 256, 0, RTOL);  // replicated: the whole sequence's K/V
    CHECK_NEAR(t.mem_buf, 400.0 * 256, 0, RTOL); // gathered dK/dV before the reduce-scatter
    zg_comm_bytes cb = p.comm(&p, &s, (zg_config){2, 1, 1});
    CHECK_NEAR(cb.allgather, 2 * 3 * 51200.0, 0, RTOL);  // (q-1)/q * L * kv per pass
    zg_pricer_free(&p);
}

ZG_TEST(composed_config_groups_use_their_links) {
    // 16xA800, (1,4,4) on ranks 0..15: Ulysses groups of 4 consecutive ranks stay in a node,
    // ring neighbours are 4 apart and cross the node boundary.
    zg_error e;
    zg_pricer p;
    CHECK_OK(cost_test_analytic(&p, "wan2.1-1.3b", "16xA800", NULL, NULL, NULL, &e), &e);
    zg_seq s = seq(497760);
    int32_t r[16];
    for (int i = 0; i < 16; i++) r[i] = i;
    zg_cost_terms a, u;
    CHECK_OK(zg_cost_analytic_terms(&p, &s, (zg_config){1, 4, 4}, r, 16, &a, &e), &e);
    CHECK_OK(zg_cost_analytic_terms(&p, &s, (zg_config){1, 4, 1}, r, 4, &u, &e), &e);
    // Ulysses part of (1,4,4) moves a quarter of the bytes of (1,4,1) on the same kind of link
    // (the latency terms are not divided, hence the tolerance)
    CHECK_NEAR(a.alltoall, u.alltoall / 4, 0, 2e-2);
    CHECK(a.alltoall > u.alltoall / 4);
    // same composition on 8 ranks of one node: ring passes over NVLink hide behind compute;
    // only dK/dV's last hop home per layer stays exposed
    zg_pricer p8;
    CHECK_OK(cost_test_analytic(&p8, "wan2.1-1.3b", "8xA800", NULL, NULL, NULL, &e), &e);
    zg_cost_terms b;
    CHECK_OK(zg_cost_analytic_terms(&p8, &s, (zg_config){1, 4, 2}, r, 8, &b, &e), &e);
    CHECK(b.ring > 0 && b.ring < 1e-3 * b.attn);
    CHECK(a.ring > b.ring);
    zg_pricer_free(&p);
    zg_pricer_free(&p8);
}

ZG_TEST(memory_scales_per_primitive) {
    zg_error e;
    zg_pricer p;
    CHECK_OK(cost_test_analytic(&p, "wan2.1-1.3b", "16xA800", NULL, NULL, NULL, &e), &e);
    zg_seq s = seq(720720);  // lcm(1..16): divisible by every degree used here
    zg_cost_terms w;
    CHECK_OK(zg_cost_analytic_terms(&p, &s, (zg_config){1, 1, 1}, NULL, 1, &w, &e), &e);
    for (int32_t x = 2; x <= 12; x++) {
        zg_cost_terms t;
        if (12 % x == 0) {  // Ulysses: resident K/V / h, activations / h
            CHECK_OK(zg_cost_analytic_terms(&p, &s, (zg_config){1, x, 1}, NULL, x, &t, &e), &e);
            CHECK_NEAR(t.mem_kv * x, w.mem_kv, 0, 1e-12);
            CHECK_NEAR(t.mem_act * x, w.mem_act, 0, 1e-12);
        }
        // ring: everything / k (own + in-flight block: 2 L kv / k)
        CHECK_OK(zg_cost_analytic_terms(&p, &s, (zg_config){1, 1, x}, NULL, x, &t, &e), &e);
        CHECK_NEAR(t.mem_kv * x, 2 * w.mem_kv, 0, 1e-12);
        CHECK_NEAR(t.mem_act * x, w.mem_act, 0, 1e-12);
        zg_cost_terms t2;
        if (2 * x <= 16) {
            CHECK_OK(zg_cost_analytic_terms(&p, &s, (zg_config){1, 1, 2 * x}, NULL, 2 * x, &t2,
                                            &e),
                     &e);
            CHECK_NEAR(t2.mem - t2.mem_text, (t.mem - t.mem_text) / 2, 0, 1e-12);
        }
        // all-gather: K/V replicated
        CHECK_OK(zg_cost_analytic_terms(&p, &s, (zg_config){x, 1, 1}, NULL, x, &t, &e), &e);
        CHECK_NEAR(t.mem_kv, w.mem_kv, 0, 1e-12);
    }
    zg_pricer_free(&p);
}

ZG_TEST(longer_sequences_cost_more) {
    zg_error e;
    zg_pricer p;
    CHECK_OK(cost_test_analytic(&p, "wan2.1-1.3b", "8xA800", NULL, NULL, NULL, &e), &e);
    zg_config cfgs[] = {{1, 1, 1}, {1, 2, 1}, {1, 1, 2}, {2, 1, 1}, {1, 4, 2}, {2, 2, 2}};
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
        zg_price prev = {0, 0};
        for (int64_t L = 8; L <= 600000; L = L * 3 / 2 + 1) {
            zg_seq s = seq(L);
            zg_price pr;
            CHECK_OK(zg_pricer_price(&p, &s, cfgs[i], NULL, zg_config_degree(cfgs[i]), &pr, &e),
                     &e);
            CHECK_MSG(pr.time > prev.time && pr.mem > prev.mem, "L=%lld not above the shorter",
                      (long long)L);
            prev = pr;
        }
    }
    // splitting a long video over more ranks lowers the per-rank time and memory
    zg_seq v = seq(334560);
    zg_price p1, p2, p4;
    CHECK_OK(zg_pricer_price(&p, &v, (zg_config){1, 1, 1}, NULL, 1, &p1, &e), &e);
    CHECK_OK(zg_pricer_price(&p, &v, (zg_config){1, 2, 1}, NULL, 2, &p2, &e), &e);
    CHECK_OK(zg_pricer_price(&p, &v, (zg_config){1, 4, 1}, NULL, 4, &p4, &e), &e);
    CHECK(p1.time > p2.time && p2.time > p4.time && p1.mem > p2.mem && p2.mem > p4.mem);
    // ... but never below a perfect 1/λ split of the compute
    CHECK(p4.time * 4 > p1.time * 0.99);
    zg_pricer_free(&p);
}

ZG_TEST(node_spanning_rank_sets_cost_more) {
    zg_error e;
    zg_cluster c;
    zg_pricer p;
    CHECK_OK(cost_test_analytic(&p, "wan2.1-1.3b", "16xA800", NULL, NULL, &c, &e), &e);
    zg_seq s = seq(147600);
    struct {
        zg_config c;
        int32_t in[4], out[4];
    } cases[] = {
        {{1, 4, 1}, {0, 1, 2, 3}, {6, 7, 8, 9}},
        {{1, 1, 2}, {4, 5}, {7, 8}},
        {{2, 1, 1}, {2, 3}, {7, 8}},
        {{1, 2, 2}, {0, 1, 2, 3}, {6, 7, 8, 9}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int32_t d = zg_config_degree(cases[i].c);
        CHECK_EQ_INT(zg_cluster_nodes_spanned(&c, cases[i].in, d), 1);
        CHECK_EQ_INT(zg_cluster_nodes_spanned(&c, cases[i].out, d), 2);
        zg_cost_terms a, b;
        CHECK_OK(zg_cost_analytic_terms(&p, &s, cases[i].c, cases[i].in, d, &a, &e), &e);
        CHECK_OK(zg_cost_analytic_terms(&p, &s, cases[i].c, cases[i].out, d, &b, &e), &e);
        double comm_a = a.alltoall + a.allgather + a.ring;
        double comm_b = b.alltoall + b.allgather + b.ring;
        CHECK_MSG(comm_b > comm_a && b.time >= a.time, "config %zu: %g vs %g", i, comm_b, comm_a);
        CHECK(a.mem == b.mem);
    }
    zg_pricer_free(&p);
}

ZG_TEST(bad_input_is_rejected) {
    zg_error e;
    zg_pricer p;
    CHECK_OK(tiny_pricer(&p, &e), &e);
    zg_seq s = seq(400);
    zg_price pr;
    int32_t r[4] = {0, 1, 2, 3};
    CHECK(zg_pricer_price(&p, &s, (zg_config){1, 3, 1}, r, 3, &pr, &e) == ZG_ERR_INVALID);
    CHECK(strstr(e.msg, "sequence 7") && strstr(e.msg, "does not divide the 4 heads"));
    CHECK(zg_pricer_price(&p, &s, (zg_config){1, 1, 8}, NULL, 8, &pr, &e) == ZG_ERR_INVALID);
    CHECK(strstr(e.msg, "exceeds the world size 4") != NULL);
    zg_seq few = seq(3);
    CHECK(zg_pricer_price(&p, &few, (zg_config){1, 1, 4}, r, 4, &pr, &e) == ZG_ERR_INVALID);
    CHECK(strstr(e.msg, "3 tokens") != NULL);
    // pure Ulysses may hold fewer tokens than ranks (KnapFormer's zero-length chunks): priced
    // as an even split, no dearer than one token per rank
    CHECK_OK(zg_pricer_price(&p, &few, (zg_config){1, 4, 1}, r, 4, &pr, &e), &e);
    zg_price four;
    zg_seq s4 = seq(4);
    CHECK_OK(zg_pricer_price(&p, &s4, (zg_config){1, 4, 1}, r, 4, &four, &e), &e);
    CHECK(pr.time > 0 && pr.mem > 0 && pr.time <= four.time && pr.mem <= four.mem);
    CHECK(zg_pricer_price(&p, &s, (zg_config){1, 2, 1}, r, 3, &pr, &e) == ZG_ERR_INVALID);
    CHECK(strstr(e.msg, "3 ranks given for a config of degree 2") != NULL);
    int32_t bad[2] = {0, 4};
    CHECK(zg_pricer_price(&p, &s, (zg_config){1, 2, 1}, bad, 2, &pr, &e) == ZG_ERR_INVALID);
    CHECK(strstr(e.msg, "rank 4 out of range 0..3") != NULL);
    zg_seq neg = seq(-5);
    CHECK(zg_pricer_price(&p, &neg, (zg_config){1, 1, 1}, r, 1, &pr, &e) == ZG_ERR_INVALID);
    CHECK(strstr(e.msg, "-5 tokens") != NULL);
    zg_comm_bytes cb = p.comm(&p, &neg, (zg_config){1, 2, 1});
    CHECK(cb.alltoall == 0);
    zg_pricer_free(&p);
    zg_pricer_free(&p);  // idempotent

    // init: a base that leaves no room, bad options, and non-analytic pricers for terms
    zg_model m;
    zg_cluster c = tiny_cluster();
    CHECK_OK(zg_model_preset("wan2.1-14b", &m, &e), &e);
    zg_cost_opts o;
    zg_cost_opts_default(&o);
    o.shard_weights = 0;
    CHECK(zg_cost_analytic_init(&p, &m, &c, &o, &e) == ZG_ERR_INFEASIBLE);
    CHECK(strstr(e.msg, "wan2.1-14b") && strstr(e.msg, "unsharded"));
    CHECK(p.impl == NULL);
    CHECK_OK(zg_model_preset("tiny", &m, &e), &e);
    o.act_bytes = 0;
    CHECK(zg_cost_analytic_init(&p, &m, &c, &o, &e) == ZG_ERR_INVALID);
    zg_cost_opts_default(&o);
    o.dev.gemm_eff = 1.5;
    CHECK(zg_cost_analytic_init(&p, &m, &c, &o, &e) == ZG_ERR_INVALID);
    CHECK(strstr(e.msg, "1.5") != NULL);
    c.world_size = 0;
    CHECK(zg_cost_analytic_init(&p, &m, &c, NULL, &e) == ZG_ERR_INVALID);
    zg_pricer fake = {0};
    fake.kind = "table";
    zg_cost_terms t;
    CHECK(zg_cost_analytic_terms(&fake, &s, (zg_config){1, 1, 1}, NULL, 1, &t, &e) ==
          ZG_ERR_INVALID);
}

ZG_TEST(device_rows) {
    zg_cost_device d;
    CHECK(zg_cost_device_row("A800", &d) == 1 && d.attn_fwd_eff == 0.70);
    CHECK(zg_cost_device_row("a100", &d) == 1 && d.attn_fwd_eff == 0.70);
    CHECK(zg_cost_device_row("H200", &d) == 1 && d.attn_half == 4096);
    CHECK(zg_cost_device_row("cpu", &d) == 1);
    CHECK(zg_cost_device_row("MI300X", &d) == 0 && d.gemm_eff == 0.5);
    CHECK(zg_cost_device_row(NULL, &d) == 0);
}

ZG_TEST(without_checkpointing_memory_grows_and_time_drops) {
    zg_error e;
    zg_model m;
    zg_cluster c;
    CHECK_OK(zg_model_preset("wan2.1-1.3b", &m, &e), &e);
    CHECK_OK(zg_cluster_preset("8xA800", &c, &e), &e);
    zg_cost_opts o;
    zg_cost_opts_default(&o);
    o.dev.attn_fwd_eff = o.dev.attn_bwd_eff = 0.6;  // so the FLOP ratios show in the times
    zg_pricer a, b;
    CHECK_OK(zg_cost_analytic_init(&a, &m, &c, &o, &e), &e);
    o.act_ckpt = 0;
    CHECK_OK(zg_cost_analytic_init(&b, &m, &c, &o, &e), &e);
    zg_seq s = seq(32760);
    zg_cost_terms ta, tb;
    CHECK_OK(zg_cost_analytic_terms(&a, &s, (zg_config){1, 2, 1}, NULL, 2, &ta, &e), &e);
    CHECK_OK(zg_cost_analytic_terms(&b, &s, (zg_config){1, 2, 1}, NULL, 2, &tb, &e), &e);
    // no recompute: linear 3/4 and attention 3.5/4.5 of the checkpointed compute, all-to-alls 2/3
    CHECK_NEAR(tb.linear, ta.linear * 3 / 4, 0, 1e-12);
    CHECK_NEAR(tb.attn, ta.attn * 3.5 / 4.5, 0, 1e-12);
    CHECK_NEAR(tb.alltoall, ta.alltoall * 2 / 3, 0, 1e-12);
    CHECK(tb.mem_act > 5 * ta.mem_act && tb.mem_kv == 30 * ta.mem_kv);
    zg_pricer_free(&a);
    zg_pricer_free(&b);
}

ZG_TEST(mmdit_text_rides_along) {
    zg_error e;
    zg_pricer p;
    CHECK_OK(cost_test_analytic(&p, "flux-12b", "8xH100", NULL, NULL, NULL, &e), &e);
    zg_seq s = seq(4096);
    s.text_tokens = 512;
    zg_cost_terms t;
    CHECK_OK(zg_cost_analytic_terms(&p, &s, (zg_config){1, 4, 1}, NULL, 4, &t, &e), &e);
    CHECK_NEAR(t.local_tokens, (4096 + 512) / 4, 0, 0);
    CHECK(t.mem_text == 0 && t.text_linear == 0 && t.cross == 0);
    zg_pricer_free(&p);
}

ZG_TEST_MAIN()
