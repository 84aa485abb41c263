// planner/async.c — planner/planner.h: one background thread per planning request (pthreads).
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "planner/planner.h"

struct zg_planner_async {
    pthread_t thread;
    zg_planner *pl;
    const zg_batch *b;
    zg_plan plan;
    zg_error err;
    zg_status st;
    atomic_int done;
};

static void *plan_thread(void *arg) {
    zg_planner_async *h = arg;
    h->st = zg_planner_plan(h->pl, h->b, &h->plan, &h->err);
    atomic_store(&h->done, 1);
    return NULL;
}

zg_status zg_planner_plan_async(zg_planner *pl, const zg_batch *b, zg_planner_async **out,
                                zg_error *err) {
    if (!out)
        return zg_error_set(err, ZG_ERR_INVALID, "zellige async: out handle pointer is NULL");
    *out = NULL;
    if (!pl || !pl->vt || !b)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "zellige async: needs an initialized planner and a batch (got "
                            "planner %p, batch %p)", (void *)pl, (const void *)b);
    zg_planner_async *h = calloc(1, sizeof *h);
    if (!h) return zg_error_set(err, ZG_ERR_NOMEM, "zellige async: out of memory");
    h->pl = pl;
    h->b = b;
    zg_plan_init(&h->plan);
    atomic_init(&h->done, 0);
    int rc = pthread_create(&h->thread, NULL, plan_thread, h);
    if (rc) {
        free(h);
        return zg_error_set(err, ZG_ERR_INTERNAL,
                            "zellige async: cannot start the planning thread (pthread_create "
                            "returned %d); plan synchronously with zg_planner_plan", rc);
    }
    *out = h;
    return ZG_OK;
}

int zg_planner_plan_ready(const zg_planner_async *h) {
    return h ? atomic_load(&((zg_planner_async *)h)->done) : 0;
}

zg_status zg_planner_plan_wait(zg_planner_async *h, zg_plan *out, zg_error *err) {
    if (!h || !out)
        return zg_error_set(err, ZG_ERR_INVALID, "zellige async: wait needs a handle and an "
                                                 "output plan");
    pthread_join(h->thread, NULL);
    zg_status st = h->st;
    zg_plan_free(out);
    if (st == ZG_OK) {
        *out = h->plan;  // moves ownership (the arena holds no self-pointers)
    } else {
        zg_plan_free(&h->plan);
        zg_plan_init(out);
        if (err) *err = h->err;
    }
    free(h);
    return st;
}
