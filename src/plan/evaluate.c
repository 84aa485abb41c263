// evaluate.c — per-rank time, memory and tokens of a plan, its makespan and balance, and the
// attention communication bytes by primitive.
#include <string.h>

#include "plan/plan.h"

zg_status zg_plan_evaluate(zg_plan *p, const zg_batch *b, const zg_pricer *pricer,
                           zg_plan_stats *stats, zg_error *err) {
    if (stats) memset(stats, 0, sizeof *stats);
    if (!p || !p->ranks) return zg_error_set(err, ZG_ERR_INVALID, "evaluate: empty plan");
    if (pricer && (!b || b->n != p->n))
        return zg_error_set(err, ZG_ERR_INVALID,
                            "evaluate: the plan places %lld sequences but the batch has %lld",
                            (long long)p->n, b ? (long long)b->n : -1LL);
    zg_comm_bytes comm = {0, 0, 0};
    if (pricer) {
        p->mem_base = pricer->mem_base;
        p->mem_cap = pricer->mem_cap;
        for (int64_t i = 0; i < p->n; i++) {
            zg_placement *pl = &p->p[i];
            if (pl->seq < 0 || pl->seq >= b->n)
                return zg_error_set(err, ZG_ERR_INVALID,
                                    "evaluate: placement %lld names batch index %lld (batch has "
                                    "%lld)",
                                    (long long)i, (long long)pl->seq, (long long)b->n);
            const zg_seq *s = &b->seqs[pl->seq];
            zg_price pr;
            zg_status st = zg_pricer_price(pricer, s, pl->config, pl->ranks, pl->n_ranks, &pr,
                                           err);
            if (st) return zg_error_prefix(err, "evaluate sequence %lld: ", (long long)s->id);
            pl->time = pr.time;
            pl->mem = pr.mem;
            if (pricer->comm && !zg_config_is_whole(pl->config)) {
                zg_comm_bytes c = pricer->comm(pricer, s, pl->config);
                double d = pl->n_ranks;
                comm.allgather += c.allgather * d;
                comm.alltoall += c.alltoall * d;
                comm.ring += c.ring * d;
            }
        }
    }
    int32_t w = p->world_size;
    for (int32_t r = 0; r < w; r++) p->ranks[r] = (zg_rank_load){0, p->mem_base, 0};
    int64_t n_split = 0;
    for (int64_t i = 0; i < p->n; i++) {
        const zg_placement *pl = &p->p[i];
        if (pl->n_ranks > 1) n_split++;
        for (int32_t k = 0; k < pl->n_ranks; k++) {
            int32_t r = pl->ranks[k];
            if (r < 0 || r >= w)
                return zg_error_set(err, ZG_ERR_INVALID,
                                    "evaluate: sequence %lld lists rank %d (world size %d)",
                                    (long long)pl->id, r, w);
            p->ranks[r].time += pl->time;
            p->ranks[r].mem += pl->mem;
            p->ranks[r].tokens += pl->shards[k].end - pl->shards[k].start;
        }
    }
    double mk = 0, sum = 0, peak = 0;
    for (int32_t r = 0; r < w; r++) {
        if (p->ranks[r].time > mk) mk = p->ranks[r].time;
        if (p->ranks[r].mem > peak) peak = p->ranks[r].mem;
        sum += p->ranks[r].time;
    }
    p->makespan = mk;
    if (stats) {
        stats->makespan = mk;
        stats->mean_time = sum / w;
        stats->balance = stats->mean_time > 0 ? mk / stats->mean_time : 1.0;
        stats->peak_mem = peak;
        stats->n_split = n_split;
        stats->comm = comm;
    }
    return ZG_OK;
}
