// evaluate.c — per-rank time, memory and tokens of a plan, its makespan and balance, and the
// attention communication bytes by primitive. Rounds run one after another: the makespan adds
// up each round's slowest rank, a rank's memory is its largest round.
#include <stdlib.h>
#include <string.h>

#include "plan/plan_internal.h"

// Several rounds: per round (ascending), each rank's time and memory in that round, summed over
// its placements in batch order; *makespan = the sum over rounds of the slowest rank, and each
// rank's memory = mem_base + its largest round.
static zg_status rounds_evaluate(zg_plan *p, double *makespan, zg_error *err) {
    int32_t w = p->world_size;
    int64_t *order = NULL;
    double *t = zg_calloc((size_t)w, sizeof *t, err), *m = zg_calloc((size_t)w, sizeof *m, err);
    int32_t *touched = zg_calloc((size_t)w, sizeof *touched, err);
    unsigned char *mark = zg_calloc((size_t)w, 1, err);
    zg_status st = (!t || !m || !touched || !mark) ? ZG_ERR_NOMEM : ZG_OK;
    if (!st) st = zg_plan_round_order(p, &order, err);
    double mk = 0;
    for (int64_t a = 0, b; !st && a < p->n; a = b) {
        int32_t round = p->p[order[a]].round, nt = 0;
        for (b = a; b < p->n && p->p[order[b]].round == round; b++) {
            const zg_placement *pl = &p->p[order[b]];
            for (int32_t k = 0; k < pl->n_ranks; k++) {
                int32_t r = pl->ranks[k];
                if (!mark[r]) {
                    mark[r] = 1;
                    touched[nt++] = r;
                    t[r] = 0;
                    m[r] = p->mem_base;
                }
                t[r] += pl->time;
                m[r] += pl->mem;
            }
        }
        double slowest = 0;
        for (int32_t j = 0; j < nt; j++) {
            int32_t r = touched[j];
            if (t[r] > slowest) slowest = t[r];
            if (m[r] > p->ranks[r].mem) p->ranks[r].mem = m[r];
            mark[r] = 0;
        }
        mk += slowest;
    }
    *makespan = mk;
    free(order);
    free(t);
    free(m);
    free(touched);
    free(mark);
    return st;
}

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
    int32_t n_rounds = 1;
    zg_status st = zg_plan_rounds_check(p, &n_rounds, "evaluate: ", err);
    if (st) return st;
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
            if (n_rounds == 1) p->ranks[r].mem += pl->mem;  // else: rounds_evaluate
            p->ranks[r].tokens += pl->shards[k].end - pl->shards[k].start;
        }
    }
    double mk = 0;
    if (n_rounds > 1 && (st = rounds_evaluate(p, &mk, err))) return st;
    double sum = 0, peak = 0;
    for (int32_t r = 0; r < w; r++) {
        if (n_rounds == 1 && p->ranks[r].time > mk) mk = p->ranks[r].time;
        if (p->ranks[r].mem > peak) peak = p->ranks[r].mem;
        sum += p->ranks[r].time;
    }
    p->makespan = mk;
    if (stats) {
        stats->n_rounds = n_rounds;
        stats->makespan = mk;
        stats->mean_time = sum / w;
        stats->balance = stats->mean_time > 0 ? mk / stats->mean_time : 1.0;
        stats->peak_mem = peak;
        stats->n_split = n_split;
        stats->comm = comm;
    }
    return ZG_OK;
}

int32_t zg_plan_over_cap_ranks(const zg_plan *p, int32_t *out, int32_t max) {
    if (!p || !p->ranks || !(p->mem_cap > 0)) return 0;
    double room = p->mem_cap - p->mem_base;  // the validator's test, on the placements' part
    int32_t n = 0;
    for (int32_t r = 0; r < p->world_size; r++)
        if (p->ranks[r].mem - p->mem_base > room * (1 + 1e-12)) {
            if (out && n < max) out[n] = r;
            n++;
        }
    return n;
}

void zg_plan_over_cap_describe(const zg_plan *p, char *buf, size_t n) {
    if (!n) return;
    buf[0] = 0;
    enum { SHOW = 4 };
    int32_t r[SHOW];
    int32_t k = zg_plan_over_cap_ranks(p, r, SHOW);
    if (!k) return;
    char cap[32], pk[32];
    size_t at = 0;
    int w = snprintf(buf, n, "%d of %d rank%s over the memory cap of %s per rank: ", k,
                     p->world_size, p->world_size == 1 ? "" : "s",
                     zg_fmt_bytes(p->mem_cap, cap, sizeof cap));
    for (int32_t i = 0; i < k && i < SHOW && w >= 0 && (at += (size_t)w) < n; i++)
        w = snprintf(buf + at, n - at, "%srank %d %s %s", i ? ", " : "", r[i],
                     i ? "at" : "peaks at", zg_fmt_bytes(p->ranks[r[i]].mem, pk, sizeof pk));
    if (w >= 0 && (at += (size_t)w) < n && k > SHOW)
        snprintf(buf + at, n - at, " and %d more", k - SHOW);
}

const char *zg_plan_fmt_need(const zg_pricer *pr, double bytes, char *buf, size_t n) {
    char t[32], a[32], b[32];
    double base = pr ? pr->mem_base : 0;
    if (base == 0) return zg_fmt_bytes(bytes, buf, n), buf;
    snprintf(buf, n, "%s (%s + base %s)", zg_fmt_bytes(base + bytes, t, sizeof t),
             zg_fmt_bytes(bytes, a, sizeof a), zg_fmt_bytes(base, b, sizeof b));
    return buf;
}
