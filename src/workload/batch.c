// batch.c — the batch container: init/free/push, totals, validation.
#include <stdlib.h>
#include <string.h>

#include "workload/workload.h"

uint64_t zg_seq_price_key_hash(const zg_seq *s) {
    int64_t k[6] = {s->tokens, s->kind, s->frames, s->height, s->width, s->text_tokens};
    uint64_t h = zg_hash_words(ZG_HASH_SEED, k, 6);
    return zg_hash_bytes(h, s->bucket, strnlen(s->bucket, ZG_BUCKET_NAME_MAX));
}

int zg_seq_price_key_eq(const zg_seq *a, const zg_seq *b) {
    return a->tokens == b->tokens && a->kind == b->kind && a->frames == b->frames &&
           a->height == b->height && a->width == b->width && a->text_tokens == b->text_tokens &&
           !strncmp(a->bucket, b->bucket, ZG_BUCKET_NAME_MAX);
}

void zg_batch_init(zg_batch *b) {
    b->n = 0;
    b->cap = 0;
    b->seqs = NULL;
}

void zg_batch_free(zg_batch *b) {
    free(b->seqs);
    zg_batch_init(b);
}

zg_status zg_batch_push(zg_batch *b, const zg_seq *s, zg_error *err) {
    if (b->n == b->cap) {
        int64_t cap = b->cap ? 2 * b->cap : 16;
        if (cap > ZG_BATCH_MAX_SEQS) cap = ZG_BATCH_MAX_SEQS;
        if (cap <= b->n)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "batch has %lld sequences, the most a batch may hold",
                                (long long)b->n);
        zg_seq *p = zg_realloc_array(b->seqs, (size_t)cap, sizeof *p, err);
        if (!p) return ZG_ERR_NOMEM;
        b->seqs = p;
        b->cap = cap;
    }
    b->seqs[b->n++] = *s;
    return ZG_OK;
}

int64_t zg_batch_total_tokens(const zg_batch *b) {
    int64_t t = 0;
    for (int64_t i = 0; i < b->n; i++)
        t += b->seqs[i].tokens;
    return t;
}

void zg_seq_init(zg_seq *s) {
    memset(s, 0, sizeof *s);
    s->kind = ZG_SEQ_OTHER;
    s->origin_rank = -1;
}

const char *zg_seq_kind_name(zg_seq_kind k) {
    switch (k) {
    case ZG_SEQ_IMAGE: return "image";
    case ZG_SEQ_VIDEO: return "video";
    case ZG_SEQ_OTHER: return "other";
    }
    return "?";
}

typedef struct id_index {
    int64_t id, index;
} id_index;

static int cmp_id_index(const void *a, const void *b) {
    const id_index *x = a, *y = b;
    if (x->id != y->id) return x->id < y->id ? -1 : 1;
    return x->index < y->index ? -1 : (x->index > y->index);
}

zg_status zg_batch_validate(const zg_batch *b, int32_t world_size, zg_error *err) {
    if (b->n < 0 || b->n > ZG_BATCH_MAX_SEQS || (b->n > 0 && !b->seqs))
        return zg_error_set(err, ZG_ERR_INVALID, "batch: bad sequence count %lld", (long long)b->n);
    for (int64_t i = 0; i < b->n; i++) {
        const zg_seq *s = &b->seqs[i];
        if (s->id < 0 || s->id > ZG_SEQ_MAX_ID)
            return zg_error_set(err, ZG_ERR_INVALID, "sequence %lld: id %lld is outside 0..%lld",
                                (long long)i, (long long)s->id, (long long)ZG_SEQ_MAX_ID);
        if (s->tokens <= 0)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "sequence %lld (id %lld): tokens = %lld; every sequence needs "
                                "at least 1 token",
                                (long long)i, (long long)s->id, (long long)s->tokens);
        if (s->tokens > ZG_SEQ_MAX_TOKENS)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "sequence %lld (id %lld): tokens = %lld exceeds the limit %lld",
                                (long long)i, (long long)s->id, (long long)s->tokens,
                                (long long)ZG_SEQ_MAX_TOKENS);
        if (s->kind != ZG_SEQ_OTHER && s->kind != ZG_SEQ_IMAGE && s->kind != ZG_SEQ_VIDEO)
            return zg_error_set(err, ZG_ERR_INVALID, "sequence %lld (id %lld): bad kind %d",
                                (long long)i, (long long)s->id, (int)s->kind);
        if (s->frames < 0 || s->height < 0 || s->width < 0 || s->text_tokens < 0)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "sequence %lld (id %lld): frames/height/width/text_tokens "
                                "must be >= 0 (got %d/%d/%d/%d)",
                                (long long)i, (long long)s->id, s->frames, s->height, s->width,
                                s->text_tokens);
        if (s->origin_rank < -1 || (world_size > 0 && s->origin_rank >= world_size))
            return zg_error_set(err, ZG_ERR_INVALID,
                                "sequence %lld (id %lld): origin_rank %d is outside 0..%d",
                                (long long)i, (long long)s->id, s->origin_rank,
                                world_size > 0 ? world_size - 1 : 0);
        if (memchr(s->bucket, '\0', sizeof s->bucket) == NULL)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "sequence %lld (id %lld): bucket name is not terminated",
                                (long long)i, (long long)s->id);
    }
    if (b->n < 2) return ZG_OK;
    id_index *ix = zg_calloc((size_t)b->n, sizeof *ix, err);
    if (!ix) return ZG_ERR_NOMEM;
    for (int64_t i = 0; i < b->n; i++)
        ix[i] = (id_index){b->seqs[i].id, i};
    qsort(ix, (size_t)b->n, sizeof *ix, cmp_id_index);
    zg_status st = ZG_OK;
    for (int64_t i = 1; i < b->n; i++) {
        if (ix[i].id == ix[i - 1].id) {
            st = zg_error_set(err, ZG_ERR_INVALID,
                              "sequences %lld and %lld both have id %lld; ids must be unique",
                              (long long)ix[i - 1].index, (long long)ix[i].index,
                              (long long)ix[i].id);
            break;
        }
    }
    free(ix);
    return st;
}
