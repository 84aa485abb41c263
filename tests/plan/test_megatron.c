// test_megatron.c — the port of Megatron-Core 0.16.1's BalancedCPScheduler (src/plan/megatron.c)
// against the real code's output (tests/fixtures/megatron_groups.json, written by
// scripts/gen_megatron_vectors.py): every case's CP sizes, first buckets, groups (per group, per
// rank, the sample ids and lengths in order) and exec_times, exactly; the cases where the real
// code raises fail here too. Plus gpus_needed at the powers of two and bad input.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan/megatron.h"
#include "zgtest.h"

#define FIXTURE "tests/fixtures/megatron_groups.json"

static int64_t jint(const cJSON *x) {
    return (int64_t)x->valuedouble;
}

// Reads a case's samples ([[id, len], ...]) into a new array; *n gets the count.
static zg_megatron_sample *read_samples(const cJSON *arr, int64_t *n) {
    *n = cJSON_GetArraySize(arr);
    zg_megatron_sample *s = calloc((size_t)(*n ? *n : 1), sizeof *s);
    int64_t i = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, arr) {
        s[i].id = jint(cJSON_GetArrayItem(x, 0));
        s[i].len = jint(cJSON_GetArrayItem(x, 1));
        i++;
    }
    return s;
}

// Compares one case; returns 1 when equal, else 0 with why[] filled.
static int check_case(const cJSON *c, char *why, size_t whysz) {
    const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
    int32_t world = (int32_t)jint(cJSON_GetObjectItem(c, "world"));
    int64_t M = jint(cJSON_GetObjectItem(c, "max_seqlen_per_rank"));
    int64_t n;
    zg_megatron_sample *s = read_samples(cJSON_GetObjectItem(c, "samples"), &n);
    zg_megatron_groups g;
    zg_error err = {ZG_OK, ""};
    zg_status st = zg_megatron_schedule(s, n, M, world, &g, &err);
    int ok = 0;
    const cJSON *error = cJSON_GetObjectItem(c, "error");
    if (error) {
        if (st == ZG_ERR_INFEASIBLE)
            ok = 1;
        else
            snprintf(why, whysz, "%s: the reference raises %s, the port returns %d (%s)", name,
                     error->valuestring, (int)st, err.msg);
        goto out;
    }
    if (st) {
        snprintf(why, whysz, "%s: the port fails: %s", name, err.msg);
        goto out;
    }
    // gpus_needed per sample
    const cJSON *cp = cJSON_GetObjectItem(c, "cp");
    for (int64_t i = 0; i < n; i++) {
        int64_t want = jint(cJSON_GetArrayItem(cp, (int)i));
        int64_t got = zg_megatron_gpus_needed(s[i].len, M);
        if (got != want) {
            snprintf(why, whysz, "%s: gpus_needed(%lld) = %lld, reference %lld", name,
                     (long long)s[i].len, (long long)got, (long long)want);
            goto out;
        }
    }
    // make_buckets_equal on the sorted batch (the concatenation of the reference's buckets)
    const cJSON *bk = cJSON_GetObjectItem(c, "buckets");
    zg_megatron_sample *sorted = calloc((size_t)n, sizeof *sorted);
    int64_t *want_end = calloc((size_t)n, sizeof *want_end), *end = calloc((size_t)n, sizeof *end);
    int64_t at = 0;
    int32_t nbw = 0, nb = 0;
    const cJSON *b, *x;
    cJSON_ArrayForEach(b, bk) {
        cJSON_ArrayForEach(x, b) {
            sorted[at].id = jint(cJSON_GetArrayItem(x, 0));
            sorted[at].len = jint(cJSON_GetArrayItem(x, 1));
            at++;
        }
        want_end[nbw++] = at;
    }
    int bad = at != n || zg_megatron_buckets(sorted, n, M, end, &nb, &err) != ZG_OK || nb != nbw;
    for (int32_t i = 0; i < nb && !bad; i++)
        bad = end[i] != want_end[i];
    free(sorted);
    free(want_end);
    free(end);
    if (bad) {
        snprintf(why, whysz,
                 "%s: make_buckets_equal gives %d buckets, reference %d (or bounds "
                 "differ)",
                 name, nb, nbw);
        goto out;
    }
    // groups, rank by rank
    const cJSON *ids = cJSON_GetObjectItem(c, "sample_id_groups");
    const cJSON *lens = cJSON_GetObjectItem(c, "groups");
    const cJSON *times = cJSON_GetObjectItem(c, "exec_times");
    if (g.n_groups != cJSON_GetArraySize(ids) || g.world != world) {
        snprintf(why, whysz, "%s: %d groups, reference %d", name, g.n_groups,
                 cJSON_GetArraySize(ids));
        goto out;
    }
    for (int32_t k = 0; k < g.n_groups; k++) {
        const cJSON *gi = cJSON_GetArrayItem(ids, k), *gl = cJSON_GetArrayItem(lens, k);
        const cJSON *gt = cJSON_GetArrayItem(times, k);
        if (cJSON_GetArraySize(gi) != world) {
            snprintf(why, whysz, "%s: group %d has %d ranks in the fixture", name, k,
                     cJSON_GetArraySize(gi));
            goto out;
        }
        for (int32_t r = 0; r < world; r++) {
            const cJSON *ri = cJSON_GetArrayItem(gi, r), *rl = cJSON_GetArrayItem(gl, r);
            int64_t lo = g.off[(int64_t)k * world + r], hi = g.off[(int64_t)k * world + r + 1];
            if (hi - lo != cJSON_GetArraySize(ri)) {
                snprintf(why, whysz, "%s: group %d rank %d holds %lld samples, reference %d", name,
                         k, r, (long long)(hi - lo), cJSON_GetArraySize(ri));
                goto out;
            }
            for (int64_t j = lo; j < hi; j++) {
                int64_t wid = jint(cJSON_GetArrayItem(ri, (int)(j - lo)));
                int64_t wlen = jint(cJSON_GetArrayItem(rl, (int)(j - lo)));
                if (g.items[j].id != wid || g.items[j].len != wlen) {
                    snprintf(why, whysz,
                             "%s: group %d rank %d position %lld: sample %lld (%lld tokens), "
                             "reference %lld (%lld)",
                             name, k, r, (long long)(j - lo), (long long)g.items[j].id,
                             (long long)g.items[j].len, (long long)wid, (long long)wlen);
                    goto out;
                }
            }
            double wt = cJSON_GetArrayItem(gt, r)->valuedouble;
            double gt_ = g.exec_times[(int64_t)k * world + r];
            if (gt_ != wt) {
                snprintf(why, whysz, "%s: group %d rank %d exec time %.17g, reference %.17g", name,
                         k, r, gt_, wt);
                goto out;
            }
        }
    }
    ok = 1;
out:
    zg_megatron_groups_free(&g);
    free(s);
    return ok;
}

ZG_TEST(real_scheduler_vectors) {
    cJSON *j = NULL;
    zg_error err;
    CHECK_OK(zg_json_read_file(FIXTURE, &j, &err), &err);
    CHECK_STR(cJSON_GetObjectItem(j, "megatron_core")->valuestring, "0.16.1");
    const cJSON *cases = cJSON_GetObjectItem(j, "cases");
    int n = 0, n_err = 0, n_groups = 0, failed = 0;
    const cJSON *c;
    char why[512];
    cJSON_ArrayForEach(c, cases) {
        n++;
        if (cJSON_GetObjectItem(c, "error"))
            n_err++;
        else
            n_groups += cJSON_GetArraySize(cJSON_GetObjectItem(c, "groups"));
        if (!check_case(c, why, sizeof why)) {
            if (failed++ < 5) fprintf(stderr, "  %s\n", why);
        }
    }
    cJSON_Delete(j);
    printf("  %d cases (%d where the reference raises), %d groups; %d differ\n", n, n_err, n_groups,
           failed);
    CHECK(n >= 100);
    CHECK_EQ_INT(failed, 0);
}

ZG_TEST(gpus_needed_and_workload) {
    // ceil(log2(L / M)) at and around the powers of two
    CHECK_EQ_INT(zg_megatron_gpus_needed(1, 8192), 1);
    CHECK_EQ_INT(zg_megatron_gpus_needed(8192, 8192), 1);
    CHECK_EQ_INT(zg_megatron_gpus_needed(8193, 8192), 2);
    CHECK_EQ_INT(zg_megatron_gpus_needed(16384, 8192), 2);
    CHECK_EQ_INT(zg_megatron_gpus_needed(16385, 8192), 4);
    CHECK_EQ_INT(zg_megatron_gpus_needed(3 * 8192, 8192), 4);
    CHECK_EQ_INT(zg_megatron_gpus_needed(ZG_MEGATRON_MAX_LEN, 1), (int64_t)1 << 27);
    CHECK(zg_megatron_workload(1000, 4) == 250000.0);
    CHECK(zg_megatron_workload(ZG_MEGATRON_MAX_LEN, 1) ==
          (double)((int64_t)ZG_MEGATRON_MAX_LEN * ZG_MEGATRON_MAX_LEN));
}

ZG_TEST(bad_input) {
    zg_megatron_sample s[2] = {{0, 1000}, {1, 2000}};
    zg_megatron_groups g;
    zg_error err;
    CHECK(zg_megatron_schedule(s, 2, 0, 8, &g, &err) == ZG_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "max_seqlen_per_rank 0") != NULL, "%s", err.msg);
    CHECK(zg_megatron_schedule(s, 2, -5, 8, &g, &err) == ZG_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "max_seqlen_per_rank -5") != NULL, "%s", err.msg);
    CHECK(zg_megatron_schedule(s, 2, 1024, 0, &g, &err) == ZG_ERR_INVALID);
    s[1].len = 0;
    CHECK(zg_megatron_schedule(s, 2, 1024, 8, &g, &err) == ZG_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "sample 1 has 0 tokens") != NULL, "%s", err.msg);
    s[1].len = ZG_MEGATRON_MAX_LEN + 1LL;
    CHECK(zg_megatron_schedule(s, 2, 1024, 8, &g, &err) == ZG_ERR_INVALID);
    // a sample that needs more ranks than the world: the reference's AssertionError
    s[1].len = 9 * 1024;
    CHECK(zg_megatron_schedule(s, 2, 1024, 8, &g, &err) == ZG_ERR_INFEASIBLE);
    CHECK_MSG(strstr(err.msg, "AssertionError") != NULL, "%s", err.msg);
    zg_megatron_groups_free(&g);
    // an empty batch: no groups
    CHECK_OK(zg_megatron_schedule(s, 0, 1024, 8, &g, &err), &err);
    CHECK_EQ_INT(g.n_groups, 0);
    zg_megatron_groups_free(&g);
}

ZG_TEST_MAIN()
