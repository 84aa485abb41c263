// catalog.c — the default bucket catalog: images 256p..1080p, videos 480p..1080p x 5/10/15 s.
#include <stdlib.h>
#include <string.h>

#include "workload/workload.h"

typedef struct res_def {
    const char *name;
    int32_t height, width;
} res_def;

// 256p is square (256x256); the others are 16:9 landscape (480p uses Wan's 832 width).
static const res_def image_res[] = {
    {"256p", 256, 256}, {"480p", 480, 832}, {"720p", 720, 1280}, {"1080p", 1080, 1920}};
static const res_def *const video_res = image_res + 1; // 480p, 720p, 1080p
static const int32_t video_seconds[] = {5, 10, 15};

int32_t zg_video_frames(int32_t seconds) {
    return seconds > 0 ? seconds * ZG_VIDEO_FPS + 1 : 0; // 16 fps plus the first frame
}

zg_status zg_catalog_default(const zg_model *m, zg_catalog *c, zg_error *err) {
    c->n = 0;
    c->buckets = NULL;
    if (!m) return zg_error_set(err, ZG_ERR_INVALID, "catalog: no model given");
    for (int a = 0; a < 3; a++)
        if (m->vae_stride[a] <= 0 || m->patch[a] <= 0)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "catalog: model '%s' has a non-positive VAE stride or patch",
                                m->name);
    int32_t n = 4 + 3 * 3;
    zg_bucket *bk = zg_calloc((size_t)n, sizeof *bk, err);
    if (!bk) return ZG_ERR_NOMEM;
    int32_t k = 0;
    for (int i = 0; i < 4; i++, k++) {
        snprintf(bk[k].name, sizeof bk[k].name, "%s-img", image_res[i].name);
        bk[k].kind = ZG_SEQ_IMAGE;
        bk[k].frames = 1;
        bk[k].height = image_res[i].height;
        bk[k].width = image_res[i].width;
    }
    for (int r = 0; r < 3; r++) {
        for (int d = 0; d < 3; d++, k++) {
            snprintf(bk[k].name, sizeof bk[k].name, "%s-%ds", video_res[r].name, video_seconds[d]);
            bk[k].kind = ZG_SEQ_VIDEO;
            bk[k].frames = zg_video_frames(video_seconds[d]);
            bk[k].height = video_res[r].height;
            bk[k].width = video_res[r].width;
        }
    }
    for (int32_t i = 0; i < n; i++)
        bk[i].tokens = zg_model_tokens(m, bk[i].frames, bk[i].height, bk[i].width);
    c->n = n;
    c->buckets = bk;
    return ZG_OK;
}

void zg_catalog_free(zg_catalog *c) {
    free(c->buckets);
    c->buckets = NULL;
    c->n = 0;
}

const zg_bucket *zg_catalog_find(const zg_catalog *c, const char *name) {
    if (!name) return NULL;
    for (int32_t i = 0; i < c->n; i++)
        if (!strcmp(c->buckets[i].name, name)) return &c->buckets[i];
    return NULL;
}
