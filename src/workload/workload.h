// workload — what a batch is: sequences (samples -> tokens), bucket catalogs, and seeded
// generators for the paper's mixes (V35..V60), KnapFormer data codes, and user traces.
//
// Batch JSON (docs/formats.md): {"sequences":[{"id":0,"tokens":32760,"kind":"video",
//   "frames":81,"height":480,"width":832,"text_tokens":512,"origin_rank":3,"bucket":"480p-81f"}]}
// Only "tokens" is required (or frames/height/width, from which tokens are computed).
// JSONL trace: one sample object per line with the same fields.
#ifndef ZG_WORKLOAD_H
#define ZG_WORKLOAD_H

#include "model/model.h"

typedef enum { ZG_SEQ_OTHER = 0, ZG_SEQ_IMAGE, ZG_SEQ_VIDEO } zg_seq_kind;

#define ZG_BUCKET_NAME_MAX 32

typedef struct zg_seq {
    int64_t id;           // unique within the batch
    int64_t tokens;       // visual tokens (> 0); the unit plans split
    zg_seq_kind kind;
    int32_t frames;       // pixel-space frames (1 for images), 0 if unknown
    int32_t height;       // pixels, 0 if unknown
    int32_t width;
    int32_t text_tokens;  // conditioning tokens (cross-attention or joint), 0 if unknown
    int32_t origin_rank;  // rank whose data loader produced it (-1 unknown)
    char bucket[ZG_BUCKET_NAME_MAX];  // catalog bucket name ("" if none)
} zg_seq;

typedef struct zg_batch {
    int64_t n;
    int64_t cap;
    zg_seq *seqs;
} zg_batch;

void zg_batch_init(zg_batch *b);
void zg_batch_free(zg_batch *b);
zg_status zg_batch_push(zg_batch *b, const zg_seq *s, zg_error *err);
int64_t zg_batch_total_tokens(const zg_batch *b);
// Checks ids unique, tokens > 0, origin ranks < world_size (if world_size > 0).
zg_status zg_batch_validate(const zg_batch *b, int32_t world_size, zg_error *err);

// JSON I/O. `model` (may be NULL) computes tokens from frames/height/width when tokens is
// absent. Missing ids are numbered 0,1,2,... in file order.
zg_status zg_batch_from_json(const cJSON *j, const zg_model *model, zg_batch *b, zg_error *err);
cJSON *zg_batch_to_json(const zg_batch *b);
// Reads a batch .json or a .jsonl trace (one sample per line), chosen by content.
zg_status zg_batch_read_file(const char *path, const zg_model *model, zg_batch *b,
                             zg_error *err);
zg_status zg_batch_write_file(const char *path, const zg_batch *b, zg_error *err);

// ---- catalog -----------------------------------------------------------------------------------
typedef struct zg_bucket {
    char name[ZG_BUCKET_NAME_MAX];  // e.g. "720p-img", "1080p-15s"
    zg_seq_kind kind;
    int32_t frames, height, width;
    int64_t tokens;
} zg_bucket;

typedef struct zg_catalog {
    int32_t n;
    zg_bucket *buckets;
} zg_catalog;

// The default catalog for a model: images 256p/480p/720p/1080p and videos 480p/720p/1080p at
// 5 s, 10 s and 15 s (16 fps: 81, 161, 241 frames). Documented in docs/workloads.md.
zg_status zg_catalog_default(const zg_model *m, zg_catalog *c, zg_error *err);
void zg_catalog_free(zg_catalog *c);
const zg_bucket *zg_catalog_find(const zg_catalog *c, const char *name);

// ---- the paper's mixes ---------------------------------------------------------------------
typedef struct zg_mix_spec {
    double video_share;       // fraction of tokens in videos: 0.35 .. 0.60 (V35..V60)
    int64_t tokens_per_rank;  // load: 350K (high), 175K, 125K (low)
    int32_t video_seconds;    // 10 or 15
    int32_t world_size;
    uint64_t seed;
} zg_mix_spec;

// Parses "V50" -> 0.50. Returns -1 on a bad name.
double zg_mix_share_from_name(const char *name);
// Draws the batch of step `step` (deterministic in seed and step). Sequences get origin ranks
// by a token-balanced loader (documented), ids 0.. in origin order, and bucket names.
zg_status zg_workload_mix(const zg_model *m, const zg_mix_spec *spec, int64_t step,
                          zg_batch *out, zg_error *err);

// ---- KnapFormer data codes g{G}b{B}i{R}f{F}s{S} ---------------------------------------------
typedef struct zg_knap_code {
    int32_t gpus, batch, res, frames, smooth;
} zg_knap_code;

// Parses a comma-separated list of codes ("g8b4i256f1s0,g2b5i512f1s0").
zg_status zg_knap_codes_parse(const char *spec, zg_knap_code **codes, int32_t *n,
                              zg_error *err);
// Visual tokens of one sample before jitter: floor(R/16)^2 * (F if S==0 else max(int(F/3.4),1)).
int64_t zg_knap_code_visual_tokens(const zg_knap_code *c);
// One step of KnapFormer's simulator on world_size ranks: ranks get codes in contiguous blocks
// in list order (repeating if world_size is a multiple of sum(G)); per rank per step
// m ~ U[0.96,1.04) shared by the local batch, vis = int(visual*m), L = randint(0,392) + vis.
// ids are assigned in (origin rank, local index) order, as KnapFormer's global ids.
zg_status zg_knap_codes_sample(const zg_knap_code *codes, int32_t n_codes, int32_t world_size,
                               uint64_t seed, int64_t step, zg_batch *out, zg_error *err);

#endif
