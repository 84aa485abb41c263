// engine_internal.h — the executor's schedule (items, batches) shared by the engine's files.
#ifndef ZG_ENGINE_INTERNAL_H
#define ZG_ENGINE_INTERNAL_H

#include "engine/engine.h"

// One shard this rank serves: placement p, position pos = (iq*k + ik)*h + ih.
typedef struct zg_eitem {
    int64_t p;
    zg_config c;
    int32_t pos, iq, ik, ih, hs; // hs = H / h heads served here
    int64_t tok_off, cl;         // plan-layout row offset and length of my chunk
    int64_t g_start, lq;         // my Ulysses group's tokens [g_start, g_start + lq)
    int64_t qrow;                // work rows [qrow, qrow + hs*lq): (head, token) of my group
    int64_t lkv, kvrow, secoff;  // my K/V block (all-gather of q groups): hs*lkv rows at kvrow,
                                 // my group's section starts secoff tokens into each head
    int32_t next, prev;          // ring neighbours (world ranks), k > 1
} zg_eitem;

// A collective over one rank list serving several items (coalesced by identical rank list).
typedef struct zg_ebatch {
    int32_t n;            // members
    const int32_t *ranks; // n world ranks (points into the plan)
    int32_t me;           // my position
    int64_t key_p;        // first placement (ordering)
    int32_t key_g;        // group index in that placement (ordering)
    int32_t n_items;
    int64_t *items; // indices into e->items, ascending
} zg_ebatch;

struct zg_engine {
    zg_comm *comm;
    const zg_plan *plan;
    zg_attn_shape shape; // user shape (H heads of D)
    zg_engine_opts opts;
    int32_t me;
    int64_t n_items;
    zg_eitem *items;
    int64_t *item_p;      // placement index per item (for zg_engine_local_shards)
    zg_shard *item_shard; // my shard per item
    int64_t t_local, q_rows, kv_rows;
    int32_t k_max;     // largest ring degree among my items (1 if none)
    int64_t *roff;     // (k_max + 1) x n_items ring-buffer row offsets per step
    int64_t ring_rows; // max rows of one ring buffer over steps
    zg_ebatch *ub;     // Ulysses (and local h = 1) exchanges, in global order
    int32_t n_ub;
    zg_ebatch *gb; // all-gather groups (q > 1), in global order
    int32_t n_gb;
    // work space (allocated on first use)
    float *mem;
    float *qw, *kw, *vw, *ow, *lsew, *dow, *dqw, *dkw, *dvw, *otmp, *lsetmp;
    float *rk[2], *rv[2], *rdk[2], *rdv[2];
    zg_attn_slice *slices;
    int64_t *slice_item; // item of each slice (for one-call-per-sequence mode)
    int64_t cap_slices;
    char *scratch[2];
    size_t scratch_cap[2];
    zg_engine_stats stats;
    int32_t fwd_valid; // the work space holds the last forward's Q, K/V, O, LSE
    // rounds (engine_attn.c): > 1 when the plan has several (counted by zg_engine_init);
    // attention then runs each round's sub-engine in turn, built on first use (dispatch and the
    // plan layout stay this engine's)
    int32_t n_rounds;
    zg_plan *rplans;   // (n_rounds) sub-plans; placements copied shallowly (round 0)
    zg_engine **rsub;  // (n_rounds)
};
// Frees the rounds' sub-engines and sub-plans (engine_init.c; zg_engine_free calls it).
void zg_eng_rounds_release(zg_engine *e);

// Token lengths and offsets inside a placement.
int64_t zg_eng_group_len(const zg_placement *pl, int32_t g);
int64_t zg_eng_group_start(const zg_placement *pl, int32_t g);
int64_t zg_eng_block_len(const zg_placement *pl, int32_t b);              // ring block b
int64_t zg_eng_section_off(const zg_placement *pl, int32_t b, int32_t j); // group j*k+b in b
// Ring block held at step s.
static inline int32_t zg_eng_ring_block(const zg_eitem *it, int32_t s) {
    int32_t k = it->c.k;
    return ((it->ik - s) % k + k) % k;
}

// Ring-buffer row offset of item j at step s, and the rows (hs x block length) of the block it
// holds at step s.
static inline int64_t zg_eng_roff(const zg_engine *e, int32_t s, int64_t j) {
    return e->roff[(size_t)s * (size_t)e->n_items + (size_t)j];
}
static inline int64_t zg_eng_blk_rows(const zg_engine *e, const zg_eitem *it, int32_t s) {
    return (int64_t)it->hs * zg_eng_block_len(&e->plan->p[it->p], zg_eng_ring_block(it, s));
}

// The slice list of step s (0: own blocks from the K/V work space; s >= 1: the ring buffer of
// step s) into out[] (and the item of each slice into item[] when not NULL); returns the
// number of slices (with out == NULL: only counts). sched.c; engine_attn.c and the schedule
// export both use it.
int64_t zg_eng_step_slices(const zg_engine *e, int32_t s, zg_attn_slice *out, int64_t *item);
// Dispatch row lists (see zg_engine_sched): per world rank r, loader rows lrows[loff[r] ..
// loff[r+1]) to r and plan rows prows[poff[r] ..] from r. One allocation: free(*loff) frees all.
zg_status zg_eng_dispatch_rows(const zg_engine *e, const int32_t *origin, int64_t **loff,
                               int64_t **lrows, int64_t **poff, int64_t **prows, zg_error *err);

void *zg_eng_scratch(zg_engine *e, int which, size_t bytes, zg_error *err);
zg_status zg_eng_alloc_work(zg_engine *e, int backward, zg_error *err);

// A tensor moved between the plan layout and the work space (w floats per (token, head)).
typedef struct zg_efield {
    float *tok;  // (T, H, w)
    float *work; // (rows, w)
    int32_t w;
    int32_t kv; // 1: K/V-style rows (block layout), 0: query rows
} zg_efield;

// Ulysses exchange of one batch: dir 0 plan layout -> work space, 1 work space -> plan layout.
zg_status zg_eng_u_exchange(zg_engine *e, const zg_ebatch *b, const zg_efield *f, int32_t nf,
                            int dir, int32_t tag, zg_error *err);
// All-gather of K/V blocks (forward) and reduce-scatter of dK/dV (backward) of one batch.
zg_status zg_eng_g_gather(zg_engine *e, const zg_ebatch *b, float *kw, float *vw, int32_t tag,
                          zg_error *err);
zg_status zg_eng_g_reduce(zg_engine *e, const zg_ebatch *b, float *dkw, float *dvw, int32_t tag,
                          zg_error *err);

#endif
