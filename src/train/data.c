// data.c — small synthetic image+video batches for CPU training runs.
#include "train/train.h"

zg_status zg_train_synthetic_batch(const zg_model *m, int32_t n_ranks, int64_t tokens_per_rank,
                                   double video_share, uint64_t seed, int64_t step,
                                   zg_batch *out, zg_error *err) {
    zg_batch_init(out);
    if (n_ranks <= 0 || tokens_per_rank <= 0 || video_share < 0 || video_share > 1)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "synthetic batch needs ranks > 0 (%d), tokens per rank > 0 (%lld) "
                            "and a video share in [0,1] (%g)",
                            n_ranks, (long long)tokens_per_rank, video_share);
    zg_rng r;
    zg_rng_init(&r, zg_rng_derive(seed, (uint64_t)step));
    int64_t id = 0;
    for (int32_t rank = 0; rank < n_ranks; rank++) {
        int64_t have = 0, video = 0;
        while (have < tokens_per_rank) {
            zg_seq s;
            zg_seq_init(&s);
            int want_video = (double)video < video_share * (double)(have + 1);
            int32_t f, h, w;
            if (want_video) {
                f = (int32_t)zg_rng_int(&r, 2, 4), h = (int32_t)zg_rng_int(&r, 6, 12);
                w = (int32_t)zg_rng_int(&r, 8, 16);
                s.kind = ZG_SEQ_VIDEO;
                snprintf(s.bucket, sizeof s.bucket, "cpu-video");
            } else {
                f = 1, h = (int32_t)zg_rng_int(&r, 4, 8), w = (int32_t)zg_rng_int(&r, 4, 12);
                s.kind = ZG_SEQ_IMAGE;
                snprintf(s.bucket, sizeof s.bucket, "cpu-image");
            }
            s.id = id++;
            s.tokens = (int64_t)f * h * w;
            // pixel sizes whose latent grid is exactly (f, h, w) under the model's token math
            s.frames = (f - 1) * m->vae_stride[0] * m->patch[0] + 1;
            s.height = h * m->vae_stride[1] * m->patch[1];
            s.width = w * m->vae_stride[2] * m->patch[2];
            s.origin_rank = rank;
            s.text_tokens = (int32_t)zg_rng_int(&r, 2, 8);
            zg_status st = zg_batch_push(out, &s, err);
            if (st) {
                zg_batch_free(out);
                return st;
            }
            have += s.tokens;
            if (want_video) video += s.tokens;
        }
    }
    return ZG_OK;
}
