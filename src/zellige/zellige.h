// zellige — the Zellige solver: moldable placement of a batch's sequences (reference §5).
// Per step: the catalog cut splits the batch into heavy anchors and light fillers; stage 1
// places the anchors exactly (lexicographic min-max over ECF counts: branch-and-bound with
// bounds, beam, LNS, column incumbents, layouts remembered across steps); stage 2 packs the
// fillers greedily (repair, exchanges, by density). Worlds of >= 64 ranks take the fast path
// (priced templates, greedy anchors, heap fillers, local search, certified gap).
//
// Layout: two_stage.c (the pipeline) and decode.c; stage1/ (cut, model, anchor search,
// uniform tiles), stage2/ (fillers), exact/ (branch-and-bound and its lower bounds, the
// relaxation), search/ (beam, LNS, column incumbents, layout memory), fast/ (large worlds);
// tuning.c (every tuned constant). internal.h is shared by these files only.
//
// Entry points: the two policies below, registered by src/planner; the tuning table.
//
// May include: plan, cost, topo, workload, model, core.
#ifndef ZG_ZELLIGE_H
#define ZG_ZELLIGE_H

#include <stdio.h>

#include "plan/plan.h"

// `--policy zellige` (two-stage) and `--policy joint` (the exact reference over every sequence).
extern const zg_planner_vtable zg_policy_zellige, zg_policy_joint;

// The tuning table (tuning.h): every tuned constant and tolerance of the solver, with its unit,
// the file it acts in and why it has its value. Compile-time constants: listed, not settable.
typedef struct zg_zellige_tunable {
    const char *name;   // "LNS_GAP" (ZEL_LNS_GAP in the code)
    double value;
    const char *unit;   // "nodes", "relative", "ranks", ...
    const char *where;  // file(s) under src/zellige/
    const char *why;    // one line
    int32_t integer;    // 1: an integer constant
} zg_zellige_tunable;
int32_t zg_zellige_tuning_count(void);
const zg_zellige_tunable *zg_zellige_tuning_get(int32_t i);  // NULL outside 0..count-1
void zg_zellige_tuning_print(FILE *f);                        // the table, one row per constant

#endif
