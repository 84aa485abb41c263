// ckpt.c — atomic, versioned training checkpoints (params + Adam state + step).
//
// Layout (little-endian): "ZGCKPT\0\1" magic, u32 version=1, char model[64], i64 n_params,
// i64 step, f32 lr, beta1, beta2, eps, weight_decay, i64 adam_step, u64 seed, i32 act_ckpt,
// then params, adam m, adam v (n_params f32 each).
#include <stdlib.h>
#include <string.h>

#include "train/train.h"

static const char ckpt_magic[8] = {'Z', 'G', 'C', 'K', 'P', 'T', 0, 1};

typedef struct {
    char magic[8];
    uint32_t version;
    char model[64];
    int64_t n_params, step;
    float lr, beta1, beta2, eps, weight_decay;
    int64_t adam_step;
    uint64_t seed;
    int32_t act_ckpt;
} ckpt_header;

zg_status zg_trainer_save(const zg_trainer *tr, const char *path, zg_error *err) {
    if (tr->comm && tr->comm->rank != 0) return ZG_OK;  // rank 0 writes; all hold the same state
    int64_t n = tr->params.n_params;
    size_t bytes = sizeof(ckpt_header) + sizeof(float) * 3 * (size_t)n;
    char *buf = zg_calloc(1, bytes, err);
    if (!buf) return ZG_ERR_NOMEM;
    ckpt_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, ckpt_magic, 8);
    h.version = 1;
    snprintf(h.model, sizeof h.model, "%s", tr->model.name);
    h.n_params = n;
    h.step = tr->step;
    h.lr = tr->opts.adam.lr, h.beta1 = tr->opts.adam.beta1, h.beta2 = tr->opts.adam.beta2;
    h.eps = tr->opts.adam.eps, h.weight_decay = tr->opts.adam.weight_decay;
    h.adam_step = tr->opts.adam.step;
    h.seed = tr->opts.seed;
    h.act_ckpt = tr->opts.act_ckpt;
    memcpy(buf, &h, sizeof h);
    float *body = (float *)(buf + sizeof h);
    memcpy(body, tr->flat, sizeof(float) * (size_t)n);                  // params
    memcpy(body + n, tr->flat + 2 * n, sizeof(float) * 2 * (size_t)n);  // m, v
    zg_status st = zg_file_write_atomic(path, buf, bytes, err);
    free(buf);
    return st;
}

zg_status zg_trainer_load(zg_trainer *tr, const char *path, zg_error *err) {
    char *buf = NULL;
    size_t len = 0;
    zg_status st = zg_file_read(path, &buf, &len, err);
    if (st) return st;
    ckpt_header h;
    int64_t n = tr->params.n_params;
    if (len < sizeof h || memcmp(buf, ckpt_magic, 8) != 0) {
        free(buf);
        return zg_error_set(err, ZG_ERR_PARSE, "%s is not a zellige checkpoint (bad magic)", path);
    }
    memcpy(&h, buf, sizeof h);
    if (h.version != 1) {
        free(buf);
        return zg_error_set(err, ZG_ERR_UNSUPPORTED,
                            "%s: checkpoint version %u, this build reads version 1", path,
                            h.version);
    }
    h.model[sizeof h.model - 1] = 0;
    if (h.n_params != n || strcmp(h.model, tr->model.name) != 0) {
        zg_status s2 = zg_error_set(err, ZG_ERR_INVALID,
                                    "%s holds model '%s' with %lld parameters; this run is '%s' "
                                    "with %lld",
                                    path, h.model, (long long)h.n_params, tr->model.name,
                                    (long long)n);
        free(buf);
        return s2;
    }
    if (len != sizeof h + sizeof(float) * 3 * (size_t)n) {
        free(buf);
        return zg_error_set(err, ZG_ERR_PARSE, "%s is truncated (%zu bytes, expected %zu)", path,
                            len, sizeof h + sizeof(float) * 3 * (size_t)n);
    }
    const float *body = (const float *)(buf + sizeof h);
    memcpy(tr->flat, body, sizeof(float) * (size_t)n);
    memset(tr->flat + n, 0, sizeof(float) * (size_t)n);
    memcpy(tr->flat + 2 * n, body + n, sizeof(float) * 2 * (size_t)n);
    tr->step = h.step;
    tr->opts.adam.lr = h.lr, tr->opts.adam.beta1 = h.beta1, tr->opts.adam.beta2 = h.beta2;
    tr->opts.adam.eps = h.eps, tr->opts.adam.weight_decay = h.weight_decay;
    tr->opts.adam.step = h.adam_step;
    tr->opts.seed = h.seed;
    tr->opts.act_ckpt = h.act_ckpt;
    free(buf);
    return ZG_OK;
}
