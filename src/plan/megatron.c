// megatron.c — faithful port of Megatron-Core's dynamic context-parallel scheduler
// (megatron-core 0.16.1, megatron/core/pipeline_parallel/hybrid_cp_schedule.py,
// BalancedCPScheduler; see megatron.h). Every pass keeps the reference's order of operations:
// the same stable sort, the same scan order and tie-breaks (first minimum, first maximum, lowest
// free ranks), the same floating-point expressions in the same order (sums left to right, as
// Python <= 3.11's sum() and `+=` do). Comments name the Python they mirror.
//
// Representation. In next_hdp_group every member of a CP group holds the same list of samples
// (a sample is appended to, and trimmed from, all members at once), so a list is kept per group
// and each rank points at the list it holds (rank_list[r]; -1: empty). fill_empty_gpus copies
// lists between ranks by reference, as the reference's `new_micro_batches[i] = micro_batches[j]`
// does.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan/megatron.h"

#define MEGATRON_DELTA 0.05     // next_hdp_group's delta (balance slack)
#define MEGATRON_BUCKET_EPS 1.1 // make_buckets_equal: close a bucket above target * 1.1

void zg_megatron_groups_init(zg_megatron_groups *g) {
    memset(g, 0, sizeof *g);
}

void zg_megatron_groups_free(zg_megatron_groups *g) {
    if (!g) return;
    free(g->off);
    free(g->items);
    free(g->exec_times);
    memset(g, 0, sizeof *g);
}

int64_t zg_megatron_gpus_needed(int64_t len, int64_t max_seqlen_per_rank) {
    // max(1, 2 ** ceil(log2((seq_len / self.max_seq_len_per_rank))))
    double e = ceil(log2((double)len / (double)max_seqlen_per_rank));
    if (!(e > 0)) return 1; // 2 ** 0 = 1; a negative exponent gives a fraction, max() -> 1
    if (e >= 63) return INT64_MAX;
    return (int64_t)1 << (int)e;
}

double zg_megatron_workload(int64_t len, int64_t cp_size) {
    // (seq_length * seq_length) / cp_size: the exact integer L*L (< 2^53, so exact as a double)
    // divided once, correctly rounded as Python's int / int is
    return (double)(len * len) / (double)cp_size;
}

// compute_estimator(seq_len) with cp_size None: the sample's own CP size
static double own_workload(int64_t len, int64_t max_len) {
    return zg_megatron_workload(len, zg_megatron_gpus_needed(len, max_len));
}

zg_status zg_megatron_buckets(const zg_megatron_sample *s, int64_t n, int64_t max_seqlen_per_rank,
                              int64_t *end, int32_t *n_buckets, zg_error *err) {
    *n_buckets = 0;
    if (n < 1) return zg_error_set(err, ZG_ERR_INVALID, "megatron buckets: no samples");
    // k = len({self.gpus_needed(L) for L in seqlens}): CP sizes are powers of two (or the
    // saturated INT64_MAX), one bit per exponent
    uint64_t seen = 0;
    int32_t k = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t cp = zg_megatron_gpus_needed(s[i].len, max_seqlen_per_rank);
        int bit = 0;
        while (bit < 63 && ((int64_t)1 << bit) < cp)
            bit++;
        if (!(seen >> bit & 1)) {
            seen |= (uint64_t)1 << bit;
            k++;
        }
    }
    // total_work = sum(work); target = total_work / k
    double total_work = 0.0;
    for (int64_t i = 0; i < n; i++)
        total_work += own_workload(s[i].len, max_seqlen_per_rank);
    double target = total_work / k;
    int64_t cur_len = 0;
    double cur_work = 0.0;
    int64_t remaining_k = k, nb = 0;
    for (int64_t i = 0; i < n; i++) {
        double work = own_workload(s[i].len, max_seqlen_per_rank);
        double projected = cur_work + work;
        // close the bucket when it has too much work, or to save samples for the buckets left
        if (cur_len > 0 &&
            (projected > target * MEGATRON_BUCKET_EPS || n - i <= remaining_k - nb)) {
            end[nb++] = i;
            cur_len = 0;
            cur_work = 0.0;
            remaining_k -= 1;
        }
        cur_len++;
        cur_work += work;
    }
    if (cur_len) end[nb++] = n;
    *n_buckets = (int32_t)nb;
    return ZG_OK;
}

// ---- next_hdp_group -------------------------------------------------------------------------

typedef struct item {
    zg_megatron_sample s;
    int64_t prev; // previous item of the same group list (-1: first)
} item;

typedef struct hdp {
    int32_t W;
    int64_t max_len;
    // this call's input (sample_seqlens) and its buckets: bucket b = in[start(b) .. bend[b]),
    // its deque head at bhead[b]; the live buckets are first .. nb-1
    int64_t *bend, *bhead;
    int32_t nb, first;
    // groups: size, members (arena arrays), list (tail item, length)
    int32_t ng;
    int64_t *gsize;
    int32_t **gmem, *gcnt;
    int64_t *gtail, *glen;
    item *pool; // every append of this call (at most one per input sample)
    int64_t n_pool;
    // ranks
    int32_t *gpu_group_id, *rank_list, *new_list, *scratch;
    double *exec, *new_exec, *proj;
    zg_arena arena; // member lists, reset per call
} hdp;

static double max_of(const double *x, int32_t n) {
    double m = x[0];
    for (int32_t i = 1; i < n; i++)
        if (x[i] > m) m = x[i];
    return m;
}

static double min_of(const double *x, int32_t n) {
    double m = x[0];
    for (int32_t i = 1; i < n; i++)
        if (x[i] < m) m = x[i];
    return m;
}

// The last item of a group's list, or NULL.
static const item *list_last(const hdp *h, int32_t list) {
    return list >= 0 && h->glen[list] > 0 ? &h->pool[h->gtail[list]] : NULL;
}

// The first item of a group's list (the list is not empty).
static const item *list_first(const hdp *h, int32_t list) {
    int64_t at = h->gtail[list];
    while (h->pool[at].prev >= 0)
        at = h->pool[at].prev;
    return &h->pool[at];
}

// fill_empty_gpus: expands the first group of the smallest size to the next power of two (or the
// world), pushing the work of the ranks after it to the right. 1: a rank was empty and work was
// moved; 0: no empty rank.
static zg_status fill_empty_gpus(hdp *h, int *moved, zg_error *err) {
    int32_t W = h->W;
    *moved = 0;
    int32_t empty_gpu = -1;
    for (int32_t r = 0; r < W && empty_gpu < 0; r++)
        if (h->rank_list[r] < 0) empty_gpu = r;
    if (empty_gpu < 0) return ZG_OK;
    if (h->ng == 0) // assert existing_group_sizes
        return zg_error_set(err, ZG_ERR_INFEASIBLE,
                            "megatron: no sample could be placed on the %d ranks (the reference's "
                            "fill_empty_gpus raises AssertionError: 'There should be at least one "
                            "group existing')",
                            W);
    int64_t min_size = h->gsize[0];
    for (int32_t g = 1; g < h->ng; g++)
        if (h->gsize[g] < min_size) min_size = h->gsize[g];
    int64_t next_power = min_size * 2 < W ? min_size * 2 : W;
    int32_t gid = 0;
    while (h->gsize[gid] != min_size)
        gid++; // first in dict (creation) order
    int32_t *mem = h->gmem[gid];
    int32_t cnt = h->gcnt[gid];
    int64_t needed_count = next_power - min_size;
    int64_t gs = mem[0], ge = mem[cnt - 1];
    // assert not all(work for work in micro_batches[empty_gpu : empty_gpu + needed_count])
    int all_busy = 1;
    for (int64_t r = empty_gpu; r < empty_gpu + needed_count && r < W; r++)
        if (h->rank_list[r] < 0) all_busy = 0;
    if (all_busy)
        return zg_error_set(err, ZG_ERR_INFEASIBLE,
                            "megatron: fill_empty_gpus cannot expand a group of %lld ranks on %d "
                            "(the reference raises AssertionError: 'Empty GPUs were detected but "
                            "not enough to expand')",
                            (long long)min_size, W);
    if (ge < 0 || ge >= W || h->rank_list[ge] < 0)
        return zg_error_set(err, ZG_ERR_INFEASIBLE,
                            "megatron: fill_empty_gpus reads rank %lld of %d (the reference "
                            "raises IndexError)",
                            (long long)ge, W);
    int64_t n_push = empty_gpu - (ge + 1) > 0 ? empty_gpu - (ge + 1) : 0; // work_to_push
    if (ge + needed_count >= W || (n_push > 0 && ge + needed_count + n_push >= W))
        return zg_error_set(err, ZG_ERR_INFEASIBLE,
                            "megatron: fill_empty_gpus pushes work past rank %d while expanding "
                            "ranks %lld..%lld from %lld to %lld (the reference raises "
                            "IndexError; its world must be a power of two)",
                            W - 1, (long long)gs, (long long)ge, (long long)min_size,
                            (long long)next_power);
    for (int32_t r = 0; r < W; r++) {
        h->new_list[r] = -1;
        h->new_exec[r] = 0.0;
    }
    for (int64_t i = 0; i < gs; i++) { // no change until the expanded group
        h->new_list[i] = h->rank_list[i];
        h->new_exec[i] = h->exec[i];
    }
    int32_t list = h->rank_list[ge];
    double w = zg_megatron_workload(list_first(h, list)->s.len, next_power);
    for (int64_t i = gs; i < ge + needed_count + 1; i++) { // the expanded group
        h->new_list[i] = list;
        h->new_exec[i] = w;
    }
    for (int64_t i = 0; i < n_push; i++) { // the work after it, pushed right
        h->new_list[ge + needed_count + 1 + i] = h->rank_list[ge + 1 + i];
        h->new_exec[ge + needed_count + 1 + i] = h->exec[ge + 1 + i];
    }
    h->gsize[gid] = next_power;
    int32_t ncnt = (int32_t)(ge + needed_count + 1 - gs);
    int32_t *nm = zg_arena_alloc(&h->arena, (size_t)ncnt * sizeof *nm);
    if (!nm) return zg_error_set(err, ZG_ERR_NOMEM, "megatron: out of memory");
    for (int32_t j = 0; j < ncnt; j++)
        nm[j] = (int32_t)(gs + j);
    h->gmem[gid] = nm;
    h->gcnt[gid] = ncnt;
    for (int32_t g = gid + 1; g < h->ng; g++) // pushed_gid > gid
        for (int32_t j = 0; j < h->gcnt[g]; j++)
            h->gmem[g][j] += (int32_t)needed_count;
    int32_t *tl = h->rank_list;
    h->rank_list = h->new_list;
    h->new_list = tl;
    double *te = h->exec;
    h->exec = h->new_exec;
    h->new_exec = te;
    *moved = 1;
    return ZG_OK;
}

// One next_hdp_group call on in[0..m): appends the group's per-rank lists and exec_times to out,
// and writes the leftovers to rest[0..*n_rest).
static zg_status next_hdp_group(hdp *h, const zg_megatron_sample *in, int64_t m,
                                zg_megatron_groups *out, zg_megatron_sample *rest, int64_t *n_rest,
                                zg_error *err) {
    int32_t W = h->W;
    zg_arena_reset(&h->arena);
    zg_status st = zg_megatron_buckets(in, m, h->max_len, h->bend, &h->nb, err);
    if (st) return st;
    for (int32_t b = 0; b < h->nb; b++)
        h->bhead[b] = b ? h->bend[b - 1] : 0;
    h->first = 0;
    h->ng = 0;
    h->n_pool = 0;
    for (int32_t r = 0; r < W; r++) {
        h->gpu_group_id[r] = -1;
        h->rank_list[r] = -1;
        h->exec[r] = 0.0;
    }
    int64_t prev_needed = -1;
    int check_balance = 0;
    while (h->first < h->nb) {
        // Step 1: the next sample we could place (scan the buckets in order, strategy "dp")
        int32_t n_free = 0;
        for (int32_t r = 0; r < W; r++)
            n_free += h->gpu_group_id[r] < 0;
        int32_t bucket = -1;
        for (int32_t b = h->first; b < h->nb && bucket < 0; b++) {
            if (h->bhead[b] == h->bend[b]) continue;
            int64_t needed = zg_megatron_gpus_needed(in[h->bhead[b]].len, h->max_len);
            int has_group = 0;
            for (int32_t g = 0; g < h->ng && !has_group; g++)
                has_group = h->gsize[g] == needed;
            if (has_group || n_free >= needed) bucket = b;
        }
        if (bucket < 0) break; // no place for any remaining sample: the microbatch is done
        zg_megatron_sample smp = in[h->bhead[bucket]];
        int64_t needed = zg_megatron_gpus_needed(smp.len, h->max_len);
        if (prev_needed < 0) prev_needed = needed;
        // (a) existing groups of exactly this size: the least loaded (first minimum)
        int32_t best_gid = -1;
        double best_load = INFINITY;
        for (int32_t g = 0; g < h->ng; g++) {
            if (h->gsize[g] != needed) continue;
            double load = h->exec[h->gmem[g][0]];
            for (int32_t j = 1; j < h->gcnt[g]; j++)
                if (h->exec[h->gmem[g][j]] > load) load = h->exec[h->gmem[g][j]];
            if (best_gid < 0 || load < best_load) {
                best_gid = g;
                best_load = load;
            }
        }
        // (b) a new group from completely free ranks: sorted(free_ranks, key=exec_times), stable
        const int32_t *chosen;
        int32_t n_chosen;
        int is_new = 0;
        if (n_free >= needed) {
            int32_t nf = 0;
            for (int32_t r = 0; r < W; r++)
                if (h->gpu_group_id[r] < 0) h->scratch[nf++] = r;
            for (int32_t i = 1; i < nf; i++) { // stable insertion sort by exec time
                int32_t r = h->scratch[i], j = i - 1;
                while (j >= 0 && h->exec[h->scratch[j]] > h->exec[r]) {
                    h->scratch[j + 1] = h->scratch[j];
                    j--;
                }
                h->scratch[j + 1] = r;
            }
            double new_load = h->exec[h->scratch[needed - 1]];
            if (new_load < best_load) {
                is_new = 1;
                chosen = h->scratch;
                n_chosen = (int32_t)needed;
            } else {
                chosen = h->gmem[best_gid];
                n_chosen = h->gcnt[best_gid];
            }
        } else {
            chosen = h->gmem[best_gid];
            n_chosen = h->gcnt[best_gid];
        }
        // Step 2: a fresh group
        if (is_new) {
            best_gid = h->ng++;
            int32_t *mem = zg_arena_alloc(&h->arena, (size_t)n_chosen * sizeof *mem);
            if (!mem) return zg_error_set(err, ZG_ERR_NOMEM, "megatron: out of memory");
            memcpy(mem, chosen, (size_t)n_chosen * sizeof *mem);
            h->gmem[best_gid] = mem;
            h->gcnt[best_gid] = n_chosen;
            h->gsize[best_gid] = needed;
            h->gtail[best_gid] = -1;
            h->glen[best_gid] = 0;
            chosen = mem;
            for (int32_t j = 0; j < n_chosen; j++) {
                h->gpu_group_id[mem[j]] = best_gid;
                h->rank_list[mem[j]] = best_gid;
            }
        }
        // Step 3: the sample goes to every member of the group
        double per_gpu_cost = own_workload(smp.len, h->max_len);
        for (int32_t j = 0; j < n_chosen; j++)
            h->exec[chosen[j]] += per_gpu_cost;
        h->pool[h->n_pool] = (item){smp, h->gtail[best_gid]};
        h->gtail[best_gid] = h->n_pool++;
        h->glen[best_gid]++;
        h->bhead[bucket]++; // buckets[bucket_idx].popleft()
        // Step 4: drop empty leading buckets, balance check, maybe stop
        while (h->first < h->nb && h->bhead[h->first] == h->bend[h->first])
            h->first++;
        if (needed < prev_needed) check_balance = 1;
        if (check_balance && h->first < h->nb) {
            double mx = max_of(h->exec, W), mn = min_of(h->exec, W);
            if (mx - mn <= MEGATRON_DELTA * mx) break;
        }
    }
    // leftovers: the remaining buckets flattened, in order
    int64_t nr = 0;
    for (int32_t b = h->first; b < h->nb; b++)
        for (int64_t i = h->bhead[b]; i < h->bend[b]; i++)
            rest[nr++] = in[i];
    // trim_overload: pop the most recent sample of the most loaded group while that lowers the
    // slack
    for (;;) {
        double cur_max = max_of(h->exec, W), cur_min = min_of(h->exec, W);
        double cur_slack = cur_max - cur_min;
        if (cur_slack <= MEGATRON_DELTA * cur_max) break;
        if (cur_min == 0) break; // empty ranks: fill_empty_gpus handles them
        int32_t max_r = 0;
        while (h->exec[max_r] != cur_max)
            max_r++; // exec_times.index(cur_max)
        int32_t gid = h->gpu_group_id[max_r];
        int32_t list = h->rank_list[max_r];
        if (list < 0 || h->glen[list] <= 1) break;
        const item *last = list_last(h, list);
        double per_gpu_cost = own_workload(last->s.len, h->max_len);
        memcpy(h->proj, h->exec, (size_t)W * sizeof *h->proj);
        for (int32_t j = 0; j < h->gcnt[gid]; j++)
            h->proj[h->gmem[gid][j]] -= per_gpu_cost;
        double proj_slack = max_of(h->proj, W) - min_of(h->proj, W);
        if (!(proj_slack < cur_slack)) break;
        rest[nr++] = last->s;
        h->gtail[list] = last->prev;
        h->glen[list]--;
        for (int32_t j = 0; j < h->gcnt[gid]; j++)
            h->exec[h->gmem[gid][j]] -= per_gpu_cost;
    }
    *n_rest = nr;
    int64_t before = 0; // total_work_before
    for (int32_t r = 0; r < W; r++)
        before += h->rank_list[r] >= 0 ? h->glen[h->rank_list[r]] : 0;
    for (;;) {
        int moved;
        if ((st = fill_empty_gpus(h, &moved, err))) return st;
        if (!moved) break;
    }
    int64_t after = 0;
    for (int32_t r = 0; r < W; r++)
        after += h->rank_list[r] >= 0 ? h->glen[h->rank_list[r]] : 0;
    if (after < before)
        return zg_error_set(err, ZG_ERR_INTERNAL, "megatron: samples were removed: %lld -> %lld",
                            (long long)before, (long long)after);
    // append the group: per rank, its list in order
    int64_t base = out->off[(int64_t)out->n_groups * W];
    int64_t *off =
        zg_realloc_array(out->off, (size_t)(out->n_groups + 1) * W + 1, sizeof *off, err);
    if (!off) return ZG_ERR_NOMEM;
    out->off = off;
    zg_megatron_sample *items =
        zg_realloc_array(out->items, (size_t)(base + after + 1), sizeof *items, err);
    if (!items) return ZG_ERR_NOMEM;
    out->items = items;
    double *et =
        zg_realloc_array(out->exec_times, (size_t)(out->n_groups + 1) * W, sizeof *et, err);
    if (!et) return ZG_ERR_NOMEM;
    out->exec_times = et;
    int64_t at = base;
    for (int32_t r = 0; r < W; r++) {
        int32_t list = h->rank_list[r];
        if (list >= 0) {
            at += h->glen[list];
            int64_t k = at, it = h->gtail[list];
            while (it >= 0) {
                items[--k] = h->pool[it].s;
                it = h->pool[it].prev;
            }
        }
        off[(int64_t)out->n_groups * W + r + 1] = at;
        et[(int64_t)out->n_groups * W + r] = h->exec[r];
    }
    out->n_groups++;
    return ZG_OK;
}

static int cmp_len_desc(const void *pa, const void *pb, void *vctx) {
    (void)vctx;
    const zg_megatron_sample *a = pa, *b = pb;
    return (a->len < b->len) - (a->len > b->len);
}

zg_status zg_megatron_schedule(const zg_megatron_sample *samples, int64_t n,
                               int64_t max_seqlen_per_rank, int32_t world, zg_megatron_groups *out,
                               zg_error *err) {
    zg_megatron_groups_init(out);
    if (max_seqlen_per_rank < 1)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "megatron: max_seqlen_per_rank %lld; need a positive number of tokens",
                            (long long)max_seqlen_per_rank);
    if (world < 1)
        return zg_error_set(err, ZG_ERR_INVALID, "megatron: world size %d; need >= 1", world);
    if (n < 0) return zg_error_set(err, ZG_ERR_INVALID, "megatron: %lld samples", (long long)n);
    for (int64_t i = 0; i < n; i++)
        if (samples[i].len < 1 || samples[i].len > ZG_MEGATRON_MAX_LEN)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "megatron: sample %lld has %lld tokens; the scheduler takes "
                                "1..%d (its L*L must be exact in a double)",
                                (long long)samples[i].id, (long long)samples[i].len,
                                ZG_MEGATRON_MAX_LEN);
    out->world = world;
    out->off = zg_calloc(1, sizeof *out->off, err);
    if (!out->off) return ZG_ERR_NOMEM;
    if (n == 0) return ZG_OK;
    hdp h;
    memset(&h, 0, sizeof h);
    h.W = world;
    h.max_len = max_seqlen_per_rank;
    zg_arena_init(&h.arena, 1 << 14);
    size_t W = (size_t)world, N = (size_t)n;
    zg_megatron_sample *a = zg_calloc(N, sizeof *a, err), *b = zg_calloc(N, sizeof *b, err);
    h.bend = zg_calloc(N, sizeof *h.bend, err);
    h.bhead = zg_calloc(N, sizeof *h.bhead, err);
    h.gsize = zg_calloc(W, sizeof *h.gsize, err);
    h.gmem = zg_calloc(W, sizeof *h.gmem, err);
    h.gcnt = zg_calloc(W, sizeof *h.gcnt, err);
    h.gtail = zg_calloc(W, sizeof *h.gtail, err);
    h.glen = zg_calloc(W, sizeof *h.glen, err);
    h.pool = zg_calloc(N, sizeof *h.pool, err);
    h.gpu_group_id = zg_calloc(W, sizeof *h.gpu_group_id, err);
    h.rank_list = zg_calloc(W, sizeof *h.rank_list, err);
    h.new_list = zg_calloc(W, sizeof *h.new_list, err);
    h.scratch = zg_calloc(W, sizeof *h.scratch, err);
    h.exec = zg_calloc(W, sizeof *h.exec, err);
    h.new_exec = zg_calloc(W, sizeof *h.new_exec, err);
    h.proj = zg_calloc(W, sizeof *h.proj, err);
    zg_status st = ZG_OK;
    if (!a || !b || !h.bend || !h.bhead || !h.gsize || !h.gmem || !h.gcnt || !h.gtail || !h.glen ||
        !h.pool || !h.gpu_group_id || !h.rank_list || !h.new_list || !h.scratch || !h.exec ||
        !h.new_exec || !h.proj) {
        st = ZG_ERR_NOMEM;
        goto done;
    }
    // sorted(sample_id_seqlens, key=lambda x: x[1], reverse=True): stable, ties keep their order
    memcpy(a, samples, N * sizeof *a);
    if ((st = zg_sort_stable(a, N, sizeof *a, cmp_len_desc, NULL, err))) goto done;
    int64_t m = n;
    while (m > 0 && !st) {
        int64_t nr = 0;
        st = next_hdp_group(&h, a, m, out, b, &nr, err);
        zg_megatron_sample *t = a;
        a = b;
        b = t;
        m = nr;
    }
done:
    free(a);
    free(b);
    free(h.bend);
    free(h.bhead);
    free(h.gsize);
    free(h.gmem);
    free(h.gcnt);
    free(h.gtail);
    free(h.glen);
    free(h.pool);
    free(h.gpu_group_id);
    free(h.rank_list);
    free(h.new_list);
    free(h.scratch);
    free(h.exec);
    free(h.new_exec);
    free(h.proj);
    zg_arena_free(&h.arena);
    return st;
}
