// workload — what a batch is: sequences (samples -> tokens), bucket catalogs, and seeded
// generators for the paper's mixes (V35..V60), KnapFormer data codes, and user traces.
//
// Batch JSON (docs/formats.md): {"sequences":[{"id":0,"tokens":32760,"kind":"video",
//   "frames":81,"height":480,"width":832,"text_tokens":512,"origin_rank":3,"bucket":"480p-81f"}]}
// Only "tokens" is required (or frames/height/width, from which tokens are computed).
// JSONL trace: one sample object per line with the same fields.
//
// May include: model, core.
#ifndef ZG_WORKLOAD_H
#define ZG_WORKLOAD_H

#include "model/model.h"

typedef enum { ZG_SEQ_OTHER = 0, ZG_SEQ_IMAGE, ZG_SEQ_VIDEO } zg_seq_kind;

#define ZG_BUCKET_NAME_MAX 32
// Limits that keep every sum in int64 (ZG_BATCH_MAX_SEQS * ZG_SEQ_MAX_TOKENS < 2^63).
#define ZG_SEQ_MAX_TOKENS ((int64_t)1 << 40)
#define ZG_BATCH_MAX_SEQS ((int64_t)1 << 22)
// Largest id in JSON: cJSON prints numbers with 15 significant digits, so larger integers would
// not survive a write/read round trip.
#define ZG_SEQ_MAX_ID ((int64_t)999999999999999)

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

// The price key of a sequence: the fields a pricer may look at (tokens, kind, frames, height,
// width, text_tokens, bucket; not id or origin_rank). Planners price one sequence per key and
// their caches are keyed by it. Equal keys have equal hashes.
uint64_t zg_seq_price_key_hash(const zg_seq *s);
int zg_seq_price_key_eq(const zg_seq *a, const zg_seq *b);

typedef struct zg_batch {
    int64_t n;
    int64_t cap;
    zg_seq *seqs;
} zg_batch;

// Sets every field to "unknown": kind OTHER, origin_rank -1, zeros elsewhere.
void zg_seq_init(zg_seq *s);
const char *zg_seq_kind_name(zg_seq_kind k);  // "image", "video", "other"

// Functions that fill a zg_batch *out / *b overwrite it without freeing (zg_batch_free it first
// if it holds sequences); on error they leave it empty (no free needed, free is harmless).
void zg_batch_init(zg_batch *b);
void zg_batch_free(zg_batch *b);
zg_status zg_batch_push(zg_batch *b, const zg_seq *s, zg_error *err);
int64_t zg_batch_total_tokens(const zg_batch *b);
// Checks ids unique and in 0..ZG_SEQ_MAX_ID, 0 < tokens <= ZG_SEQ_MAX_TOKENS, -1 <= origin_rank < world_size
// (upper bound only if world_size > 0), non-negative frames/height/width/text_tokens.
zg_status zg_batch_validate(const zg_batch *b, int32_t world_size, zg_error *err);

// JSON I/O. `model` (may be NULL) computes tokens from frames/height/width when tokens is
// absent. Missing ids are numbered 0,1,2,... in file order (an id is the sequence's index).
// Accepts {"sequences":[...]} or a bare array of sequence objects; unknown keys are ignored.
// The result is validated (world_size 0). Errors name the sequence index and the key.
zg_status zg_batch_from_json(const cJSON *j, const zg_model *model, zg_batch *b, zg_error *err);
// One sample object -> *s (index names it in messages, and is its id when "id" is absent).
zg_status zg_seq_from_json(const cJSON *j, const zg_model *model, int64_t index, zg_seq *s,
                           zg_error *err);
// {"sequences":[...]} with only the known fields (unknown ones are omitted). NULL on OOM.
cJSON *zg_batch_to_json(const zg_batch *b);
// JSONL trace text: one sample object per line; blank lines are skipped; errors name the line.
zg_status zg_batch_from_jsonl(const char *text, const char *what, const zg_model *model,
                              zg_batch *b, zg_error *err);
// Batch JSON or JSONL trace text, chosen by content: a text that parses as one JSON value is a
// batch (an object holding "sequences", or an array), or a one-line trace (a single sample
// object); otherwise it is read as JSONL if its first non-blank line is a JSON object.
// `what` names the source in messages (a path).
zg_status zg_batch_parse(const char *text, const char *what, const zg_model *model,
                         zg_batch *b, zg_error *err);
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

#define ZG_VIDEO_FPS 16
// Pixel frames of a clip of `seconds` at 16 fps plus the first frame: 5 s -> 81, 10 s -> 161,
// 15 s -> 241 (each gives a whole number of latent frames under a temporal stride of 4).
int32_t zg_video_frames(int32_t seconds);

// The default catalog for a model: images 256p/480p/720p/1080p and videos 480p/720p/1080p at
// 5 s, 10 s and 15 s (16 fps: 81, 161, 241 frames). Documented in docs/workloads.md.
// Order: "256p-img", "480p-img", "720p-img", "1080p-img", then "480p-5s", "480p-10s",
// "480p-15s", "720p-5s", ..., "1080p-15s". Sizes (height x width): 256x256, 480x832, 720x1280,
// 1080x1920. Tokens come from zg_model_tokens. c->buckets is freed by zg_catalog_free.
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

// Parses "V50" -> 0.50 ("V0".."V100", 'v' too). Returns -1 on a bad name.
double zg_mix_share_from_name(const char *name);
// The paper's mixes only: V35, V40, V45, V50, V55, V60 ('v' too) -> *share; anything else is
// ZG_ERR_INVALID naming the value and the list (the CLIs' --mix).
#define ZG_MIX_PAPER_NAMES "V35, V40, V45, V50, V55, V60"
zg_status zg_mix_paper_share(const char *name, double *share, zg_error *err);
// Draws the batch of step `step` (deterministic in seed and step). Sequences get origin ranks
// by a token-balanced loader (documented), ids 0.. in origin order, and bucket names.
// The distribution and algorithm are at the top of mix.c and in docs/workloads.md: the video
// share is exact up to one image; the total is tokens_per_rank * world_size up to the rounding
// of the video part (less than one video / share). video_seconds may be 5, 10 or 15;
// text_tokens = model->text_len.
zg_status zg_workload_mix(const zg_model *m, const zg_mix_spec *spec, int64_t step,
                          zg_batch *out, zg_error *err);

// ---- the paper's mixes shrunk for small machines ----------------------------------------------
// A CPU run cannot hold the paper's sequences (up to 497,760 tokens), so a mix is drawn at its
// paper-scale load and every sequence is then divided by `divisor`: the same sequences, counts,
// origin ranks and length ratios (rounding aside), 1/divisor of the tokens.
#define ZG_MIX_DIVISOR_MAX 1048576
// max(1, round(tokens / divisor)); divisor >= 1.
int64_t zg_tokens_divided(int64_t tokens, int32_t divisor);
// The buckets a mix draws from (zg_catalog_default's 4 images and its 3 videos of
// `video_seconds`), tokens divided by `divisor` (zg_tokens_divided), pixel geometry cleared
// (frames/height/width 0: the tokens no longer follow from it), names and kinds kept. The
// profiler measures these buckets (`--catalog mix:SECONDS:DIVISOR`) so that its price table
// holds exactly the (name, tokens) pairs of zg_workload_mix_divided's sequences.
zg_status zg_catalog_mix(const zg_model *m, int32_t video_seconds, int32_t divisor,
                         zg_catalog *c, zg_error *err);
// zg_workload_mix (spec at the paper's scale: e.g. 350K tokens per rank), then every sequence's
// tokens divided by `divisor` and its geometry cleared; ids, kinds, buckets, text tokens and
// origin ranks kept. divisor 1 is zg_workload_mix.
zg_status zg_workload_mix_divided(const zg_model *m, const zg_mix_spec *spec, int32_t divisor,
                                  int64_t step, zg_batch *out, zg_error *err);

// ---- KnapFormer data codes g{G}b{B}i{R}f{F}s{S} ---------------------------------------------
typedef struct zg_knap_code {
    int32_t gpus, batch, res, frames, smooth;
} zg_knap_code;

// Parses a comma-separated list of codes ("g8b4i256f1s0,g2b5i512f1s0"; spaces around commas
// are allowed). *codes is malloc'ed (caller frees with free()). Errors name the bad code and
// its index. Ranges: G 1..65536, B 1..1e6, R 16..16384, F 1..1e5, S 0 or 1.
zg_status zg_knap_codes_parse(const char *spec, zg_knap_code **codes, int32_t *n,
                              zg_error *err);
// Sum of G over the codes (the layout's period in ranks).
int32_t zg_knap_codes_gpus(const zg_knap_code *codes, int32_t n_codes);
// Visual tokens of one sample before jitter: floor(R/16)^2 * (F if S==0 else max(int(F/3.4),1)).
int64_t zg_knap_code_visual_tokens(const zg_knap_code *c);
// One step of KnapFormer's simulator on world_size ranks: ranks get codes in contiguous blocks
// in list order (repeating if world_size is a multiple of sum(G)); per rank per step
// m ~ U[0.96,1.04) shared by the local batch, vis = int(visual*m), L = randint(0,392) + vis.
// ids are assigned in (origin rank, local index) order, as KnapFormer's global ids.
// Each sequence: tokens = L (text + visual: the length KnapFormer's planner sees),
// text_tokens = the randint part, kind image if F == 1 and S == 0 else video, frames = F,
// height = width = R, bucket "i{R}f{F}s{S}", origin_rank = its rank. The RNG of rank r is
// zg_rng seeded with zg_rng_derive(zg_rng_derive(seed, step), r), so values differ from
// KnapFormer's torch RNG; distributions and layout match. Errors if world_size is not a
// multiple of sum(G).
zg_status zg_knap_codes_sample(const zg_knap_code *codes, int32_t n_codes, int32_t world_size,
                               uint64_t seed, int64_t step, zg_batch *out, zg_error *err);

#endif
