// communicators.c — NCCL communicators per policy (plan.h, zg_comm_count_policy): every group a
// policy's implementation would create is collected as a sorted rank list, duplicates dropped, then
// counted per rank.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"
#include "plan/knapformer.h"

typedef struct comm_set {
    int32_t world;
    int64_t n, cap;
    int32_t **ranks; // (n) sorted rank lists
    int32_t *size;   // (n)
    int oom;
} comm_set;

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

// Adds the group of n ranks (any order; copied). Groups of fewer than 2 ranks need no
// communicator and are skipped.
static void comm_add(comm_set *s, const int32_t *ranks, int32_t n) {
    if (n < 2 || s->oom) return;
    if (s->n == s->cap) {
        int64_t cap = s->cap ? 2 * s->cap : 64;
        int32_t **r = realloc(s->ranks, (size_t)cap * sizeof *r);
        if (r) s->ranks = r;
        int32_t *z = r ? realloc(s->size, (size_t)cap * sizeof *z) : NULL;
        if (z) s->size = z;
        if (!r || !z) {
            s->oom = 1;
            return;
        }
        s->cap = cap;
    }
    int32_t *c = malloc((size_t)n * sizeof *c);
    if (!c) {
        s->oom = 1;
        return;
    }
    memcpy(c, ranks, (size_t)n * sizeof *c);
    qsort(c, (size_t)n, sizeof *c, cmp_i32);
    s->ranks[s->n] = c;
    s->size[s->n++] = n;
}

static void comm_add_block(comm_set *s, int32_t first, int32_t n, int32_t *tmp) {
    for (int32_t i = 0; i < n; i++)
        tmp[i] = first + i;
    comm_add(s, tmp, n);
}

static int cmp_group(const void *a, const void *b, void *ctx) {
    const comm_set *sort_ctx = ctx;
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    int32_t nx = sort_ctx->size[x], ny = sort_ctx->size[y];
    if (nx != ny) return (nx > ny) - (nx < ny);
    int c = memcmp(sort_ctx->ranks[x], sort_ctx->ranks[y], (size_t)nx * sizeof(int32_t));
    if (c) return c;
    return (x > y) - (x < y);
}

static void comm_free(comm_set *s) {
    for (int64_t i = 0; i < s->n; i++)
        free(s->ranks[i]);
    free(s->ranks);
    free(s->size);
}

// Distinct groups, their per-rank membership and memory into out.
static zg_status comm_tally(comm_set *s, zg_comm_count *out, zg_error *err) {
    int64_t *idx = s->n ? malloc((size_t)s->n * sizeof *idx) : NULL;
    int32_t *per = calloc((size_t)s->world, sizeof *per);
    double *bytes = calloc((size_t)s->world, sizeof *bytes);
    if ((s->n && !idx) || !per || !bytes || s->oom) {
        free(idx), free(per), free(bytes);
        return zg_error_set(err, ZG_ERR_NOMEM, "out of memory counting communicators");
    }
    for (int64_t i = 0; i < s->n; i++)
        idx[i] = i;
    if (s->n) qsort_r(idx, (size_t)s->n, sizeof *idx, cmp_group, s);
    memset(out, 0, sizeof *out);
    for (int64_t a = 0; a < s->n; a++) {
        int64_t g = idx[a];
        if (a > 0 && s->size[g] == s->size[idx[a - 1]] &&
            !memcmp(s->ranks[g], s->ranks[idx[a - 1]], (size_t)s->size[g] * sizeof(int32_t)))
            continue;
        out->total++;
        if (s->size[g] == 2) out->by_size2++;
        double b = s->size[g] == 2 ? ZG_COMM_BYTES_2 : ZG_COMM_BYTES_3PLUS;
        for (int32_t j = 0; j < s->size[g]; j++)
            per[s->ranks[g][j]]++, bytes[s->ranks[g][j]] += b;
    }
    for (int32_t r = 0; r < s->world; r++) {
        if (per[r] > out->per_rank_max) out->per_rank_max = per[r];
        if (bytes[r] > out->bytes_per_rank_max) out->bytes_per_rank_max = bytes[r];
    }
    free(idx), free(per), free(bytes);
    return ZG_OK;
}

// USP's mesh groups of one placement: Ulysses (h consecutive positions), ring (k positions h
// apart), all-gather (q positions h*k apart).
static void add_mesh_groups(comm_set *s, const zg_placement *pl, int32_t *tmp) {
    int32_t q = pl->config.q, h = pl->config.h, k = pl->config.k;
    if (q * h * k != pl->n_ranks) return;
    for (int32_t a = 0; a < q; a++)
        for (int32_t c = 0; c < k; c++) { // Ulysses: fixed (a, c)
            for (int32_t b = 0; b < h; b++)
                tmp[b] = pl->ranks[b + h * c + h * k * a];
            comm_add(s, tmp, h);
        }
    for (int32_t a = 0; a < q; a++)
        for (int32_t b = 0; b < h; b++) { // ring: fixed (a, b)
            for (int32_t c = 0; c < k; c++)
                tmp[c] = pl->ranks[b + h * c + h * k * a];
            comm_add(s, tmp, k);
        }
    for (int32_t c = 0; c < k; c++)
        for (int32_t b = 0; b < h; b++) { // all-gather: fixed (b, c)
            for (int32_t a = 0; a < q; a++)
                tmp[a] = pl->ranks[b + h * c + h * k * a];
            comm_add(s, tmp, q);
        }
}

zg_status zg_comm_count_policy(const char *policy, int32_t world, const zg_plan *plan,
                               const char *bags, zg_comm_count *out, zg_error *err) {
    memset(out, 0, sizeof *out);
    if (world < 1)
        return zg_error_set(err, ZG_ERR_INVALID, "communicators: world size %d: give >= 1", world);
    if (!policy) policy = "";
    int needs_plan = !strcmp(policy, "static") || !strcmp(policy, "usp");
    if (needs_plan && !plan)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "communicators: %s needs a plan (its groups depend on the layout)",
                            policy);
    if (needs_plan && plan->world_size != world)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "communicators: the %s plan is for %d ranks, not %d", policy,
                            plan->world_size, world);
    comm_set s = {world, 0, 0, NULL, NULL, 0};
    int32_t *tmp = malloc((size_t)world * sizeof *tmp);
    if (!tmp) return zg_error_set(err, ZG_ERR_NOMEM, "out of memory counting communicators");
    zg_status st = ZG_OK;
    comm_add_block(&s, 0, world, tmp); // the world communicator
    if (!strcmp(policy, "zellige") || !strcmp(policy, "joint") || !strcmp(policy, "dp") ||
        !strcmp(policy, "adaptive")) {
        // rank sets are data: nothing more
    } else if (!strcmp(policy, "megatron")) {
        // group_sizes = [2**i for i in range(int(log2(len(ranks))))][1:]
        int32_t top = (int32_t)floor(log2((double)world));
        for (int32_t i = 1; i < top; i++) {
            int32_t gs = (int32_t)1 << i;
            for (int32_t j = 0; j < world; j += gs)
                comm_add_block(&s, j, world - j < gs ? world - j : gs, tmp);
        }
    } else if (!strcmp(policy, "knapformer")) {
        zg_knap_layout l;
        memset(&l, 0, sizeof l);
        int32_t replicas = 0;
        if (!bags || !bags[0])
            st = zg_error_set(err, ZG_ERR_INVALID,
                              "communicators: knapformer needs its bag layout (e.g. g1n2+g2n3)");
        if (!st) st = zg_knap_layout_parse(bags, &l, err);
        if (!st) st = zg_knap_layout_replicas(&l, world, &replicas, err);
        for (int32_t g = 0; !st && g < replicas; g++)
            for (int32_t b = 0; b < l.n_bags; b++)
                comm_add_block(&s, g * l.group + l.bag_first[b], l.bag_size[b], tmp);
        zg_knap_layout_free(&l);
    } else if (!strcmp(policy, "static")) {
        for (int64_t i = 0; i < plan->n; i++)
            comm_add(&s, plan->p[i].ranks, plan->p[i].n_ranks);
    } else if (!strcmp(policy, "usp")) {
        for (int64_t i = 0; i < plan->n; i++)
            add_mesh_groups(&s, &plan->p[i], tmp);
    } else {
        st = zg_error_set(err, ZG_ERR_INVALID, "communicators: unknown policy '%s'", policy);
    }
    if (!st) st = comm_tally(&s, out, err);
    comm_free(&s);
    free(tmp);
    return st;
}
