// stage1/uniform.c — cheap disjoint-group candidates for the Zellige planner, so that zellige can
// never lose to a static / USP / DP-style plan under the same prices: for every degree d that
// tiles the world (d | N) and has options, the ranks are cut into N/d aligned tiles and every
// sequence (groups in descending whole price, members ascending: LPT) goes to the tile where it
// finishes earliest with its fastest option on that tile that fits the memory left (else its
// least-memory option there). d = N is USP-like, d = 1 DP-like (whole sequences, LPT on price).
// The best feasible candidate's choice is returned; the caller keeps it only if it beats the
// two-stage plan. Deterministic: fixed orders, ties to the lower tile.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zellige/internal.h"

// One candidate of degree d: fills choice[] and returns its makespan (INFINITY if infeasible).
static double uniform_degree(const zg_problem *pr, int32_t d, int32_t *idx, double *L, double *H,
                             int32_t *choice) {
    int32_t N = pr->world_size, nt = N / d;
    double cap = pr->mem_room;
    for (int32_t t = 0; t < nt; t++) L[t] = H[t] = 0;
    for (int32_t g = 0; g < pr->n_groups; g++) {
        const zg_group *G = &pr->groups[g];
        // per tile: fastest option (idx[2t]) and least-memory option (idx[2t+1]) of degree d
        for (int32_t t = 0; t < 2 * nt; t++) idx[t] = -1;
        for (int32_t j = 0; j < G->n_opts; j++) {
            const zg_option *o = &G->opts[j];
            if (zg_option_degree(o) != d || o->start % d || o->start + d > N) continue;
            int32_t t = o->start / d;
            if (idx[2 * t] < 0 || o->time < G->opts[idx[2 * t]].time) idx[2 * t] = j;
            if (idx[2 * t + 1] < 0 || o->mem < G->opts[idx[2 * t + 1]].mem) idx[2 * t + 1] = j;
        }
        for (int64_t k = 0; k < G->count; k++) {
            int32_t bt = -1, bj = -1;
            double be = INFINITY;
            for (int32_t t = 0; t < nt; t++) {
                for (int32_t w = 0; w < 2; w++) {
                    int32_t j = idx[2 * t + w];
                    if (j < 0 || H[t] + G->opts[j].mem > cap) continue;
                    double e = L[t] + G->opts[j].time;
                    if (e < be) be = e, bt = t, bj = j;
                    break;  // the fastest option fits: do not look at the least-memory one
                }
            }
            if (bt < 0) return INFINITY;
            L[bt] += G->opts[bj].time;
            H[bt] += G->opts[bj].mem;
            choice[G->members[k]] = bj;
        }
    }
    double ms = 0;
    for (int32_t t = 0; t < nt; t++)
        if (L[t] > ms) ms = L[t];
    return ms;
}

double zel_uniform_best(const zg_problem *pr, int32_t *choice, int32_t *degree) {
    int32_t N = pr->world_size;
    double best = INFINITY;
    *degree = 0;
    if (N < 1 || pr->n_seqs == 0) return best;
    int32_t *idx = malloc(sizeof(int32_t) * 2 * (size_t)N);
    double *L = malloc(sizeof(double) * 2 * (size_t)N);
    int32_t *cur = malloc(sizeof(int32_t) * (size_t)pr->n_seqs);
    if (!idx || !L || !cur) {
        free(idx), free(L), free(cur);
        return best;
    }
    for (int32_t d = 1; d <= N; d++) {
        if (N % d) continue;
        // bound the work on very large worlds (LPT scans every tile per sequence)
        if ((double)pr->n_seqs * (N / d) > ZEL_UNIFORM_MAX_WORK) continue;
        double ms = uniform_degree(pr, d, idx, L, L + N, cur);
        if (ms < best) {
            best = ms;
            *degree = d;
            memcpy(choice, cur, sizeof(int32_t) * (size_t)pr->n_seqs);
        }
    }
    free(idx), free(L), free(cur);
    return best;
}
