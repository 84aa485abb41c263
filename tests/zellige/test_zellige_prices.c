// test_zellige_prices.c — the analytic pricer's contiguous-block path (O(ranks_per_node^2) per
// communication step, src/cost/analytic.c) gives bit-for-bit the prices of the generic per-rank
// loops. The generic path is reached with the same block's ranks reversed inside each node:
// every price term depends only on which node each position's rank is on, so both rank lists
// must price identically, and the reversed list is never contiguous.
#include "zgtest.h"
#include "plan/plan.h"

static int node_reversed(const zg_cluster *cl, const int32_t *r, int32_t n, int32_t *out) {
    int32_t rpn = cl->ranks_per_node, contig = 1;
    for (int32_t i = 0; i < n; i++) {
        out[i] = r[i] / rpn * rpn + (rpn - 1 - r[i] % rpn);
        if (i && out[i] != out[0] + i) contig = 0;
    }
    return contig;
}

static int same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

static void check_cluster(int *zg_failed_, const char *name, int64_t *n_checked,
                          int64_t *n_bad) {
    zg_model m;
    zg_cluster cl;
    zg_pricer p;
    zg_error err;
    CHECK_OK(zg_model_preset("wan2.1-1.3b", &m, &err), &err);
    CHECK_OK(zg_cluster_preset(name, &cl, &err), &err);
    CHECK_OK(zg_cost_analytic_init(&p, &m, &cl, NULL, &err), &err);
    int32_t N = cl.world_size, rpn = cl.ranks_per_node, nc = 0;
    zg_config *cfgs = NULL;
    CHECK_OK(zg_config_enumerate(&m, N, &cfgs, &nc, &err), &err);
    int32_t *starts = calloc((size_t)N, sizeof(int32_t));
    int32_t *ranks = calloc((size_t)N, sizeof(int32_t));
    int32_t *rev = calloc((size_t)N, sizeof(int32_t));
    static const int64_t toks[] = {75600, 1006200, 4000000};
    for (int ti = 0; ti < 3; ti++) {
        zg_seq s;
        zg_seq_init(&s);
        s.id = ti, s.tokens = toks[ti], s.kind = ZG_SEQ_VIDEO;
        for (int32_t ci = 0; ci < nc; ci++) {
            zg_config c = cfgs[ci];
            if (zg_config_check(&m, N, c, s.tokens, NULL) != ZG_OK) continue;
            int32_t d = zg_config_degree(c);
            int32_t ns = zg_rankset_starts(&cl, ZG_RANKSETS_SLIDING, d, starts);
            for (int32_t si = 0; si < ns; si++) {
                // every residue mod rpn, both ends of the cluster
                if (starts[si] >= 2 * rpn && starts[si] <= starts[ns - 1] - 2 * rpn) continue;
                for (int32_t i = 0; i < d; i++) ranks[i] = starts[si] + i;
                int contig = node_reversed(&cl, ranks, d, rev);
                if (d > 1) CHECK(!contig);
                zg_cost_terms a, b;
                CHECK_OK(zg_cost_analytic_terms(&p, &s, c, ranks, d, &a, &err), &err);
                CHECK_OK(zg_cost_analytic_terms(&p, &s, c, rev, d, &b, &err), &err);
                int ok = same_bits(a.time, b.time) && same_bits(a.mem, b.mem) &&
                         same_bits(a.alltoall, b.alltoall) &&
                         same_bits(a.allgather, b.allgather) && same_bits(a.ring, b.ring);
                if (starts[si] == 0) {  // ranks NULL = positions 0..d-1: the same block
                    zg_cost_terms z;
                    CHECK_OK(zg_cost_analytic_terms(&p, &s, c, NULL, d, &z, &err), &err);
                    ok = ok && same_bits(z.time, a.time) && same_bits(z.mem, a.mem);
                }
                if (!ok && *n_bad < 5)
                    fprintf(stderr, "%s cfg (%d,%d,%d) start %d: %.17g vs %.17g\n", name, c.q,
                            c.k, c.h, starts[si], a.time, b.time);
                *n_bad += !ok;
                (*n_checked)++;
            }
        }
    }
    free(starts), free(ranks), free(rev), free(cfgs);
    zg_pricer_free(&p);
}

ZG_TEST(contiguous_block_prices_bitwise_equal_generic_16xA800) {
    int64_t n = 0, bad = 0;
    check_cluster(zg_failed_, "16xA800", &n, &bad);
    if (*zg_failed_) return;
    CHECK(n > 500);
    CHECK_EQ_INT(bad, 0);
}

ZG_TEST(contiguous_block_prices_bitwise_equal_generic_64xH100) {
    int64_t n = 0, bad = 0;
    check_cluster(zg_failed_, "64xH100", &n, &bad);
    if (*zg_failed_) return;
    CHECK(n > 2000);
    CHECK_EQ_INT(bad, 0);
}

ZG_TEST_MAIN()
