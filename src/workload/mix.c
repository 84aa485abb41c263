// mix.c — the paper's mixes V35..V60: a seeded batch generator with a target video-token share
// and a load in tokens per rank, dealt to ranks by a token-balanced data loader.
//
// The paper does not publish its resolution/duration table (reference zellige.md §7.1), so the
// distribution below is ours; docs/workloads.md gives the rationale and real batches.
//   videos (by count): 480p 40%, 720p 40%, 1080p 20%, all of the spec's length (10 s or 15 s)
//   images (by count): 256p 40%, 480p 30%, 720p 20%, 1080p 10%
// Steps (all draws from one stream seeded with zg_rng_derive(seed, step)):
//   1. videos: V* = share * tokens_per_rank * world_size. Draw videos i.i.d. while the next one
//      still fits under V*; the remainder R (< one video) is filled by the combination of
//      video counts (every resolution) that brings the sum closest to V* (fewest videos on ties).
//   2. images: I* = V * (1 - share) / share from the video tokens V actually drawn, so the share
//      is exact up to one image; draw images i.i.d. while they fit under I*, then fill the rest
//      greedily (largest image that fits; a last 256p image if that is closer).
//   3. deal the sequences in draw order (videos first, then images), each to the rank holding
//      the fewest tokens so far (lowest rank on ties): a token-balanced loader. Videos land on
//      distinct ranks while there are more ranks than videos, and images even out the rest, so
//      every rank holds about tokens_per_rank tokens unless one video alone exceeds that.
//   4. ids 0.. in (origin rank, deal order on that rank) order.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "workload/workload.h"

#define MIX_MAX_WORLD (1 << 20)
#define MIX_MAX_TOTAL ((int64_t)4000000000) // tokens per step: 1024 ranks x 350K is 0.36e9

static const char *const video_res_names[] = {"480p", "720p", "1080p"};
static const double video_weights[] = {0.40, 0.40, 0.20};
static const char *const image_names[] = {"256p-img", "480p-img", "720p-img", "1080p-img"};
static const double image_weights[] = {0.40, 0.30, 0.20, 0.10};

double zg_mix_share_from_name(const char *name) {
    if (!name || (name[0] != 'V' && name[0] != 'v')) return -1;
    const char *p = name + 1;
    int v = 0, nd = 0;
    for (; *p >= '0' && *p <= '9' && nd < 4; p++, nd++)
        v = v * 10 + (*p - '0');
    if (nd == 0 || *p || v > 100) return -1;
    return v / 100.0;
}

zg_status zg_mix_paper_share(const char *name, double *share, zg_error *err) {
    double v = zg_mix_share_from_name(name);
    int pct = (int)lround(v * 100);
    if (!(v >= 0.35 && v <= 0.60) || pct % 5 != 0)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "mix '%s' is not one of the paper's mixes " ZG_MIX_PAPER_NAMES
                            " (give one of them)",
                            name ? name : "");
    *share = v;
    return ZG_OK;
}

static int draw_index(zg_rng *rng, const double *w, int n) {
    double u = zg_rng_uniform(rng), acc = 0;
    for (int i = 0; i < n - 1; i++) {
        acc += w[i];
        if (u < acc) return i;
    }
    return n - 1;
}

static zg_status push_bucket(zg_batch *b, const zg_bucket *bk, int32_t text, zg_error *err) {
    zg_seq s;
    zg_seq_init(&s);
    s.tokens = bk->tokens;
    s.kind = bk->kind;
    s.frames = bk->frames;
    s.height = bk->height;
    s.width = bk->width;
    s.text_tokens = text;
    memcpy(s.bucket, bk->name, sizeof s.bucket);
    return zg_batch_push(b, &s, err);
}

// Video counts (per resolution) whose tokens sum closest to r; fewest videos on ties.
static void best_video_fill(const zg_bucket *const vb[3], int64_t r, int64_t cnt[3]) {
    int64_t best_err = r, best_n = 0;
    cnt[0] = cnt[1] = cnt[2] = 0;
    int64_t lim[3];
    for (int i = 0; i < 3; i++)
        lim[i] = r / vb[i]->tokens + 1;
    for (int64_t a = 0; a <= lim[2]; a++)
        for (int64_t c = 0; c <= lim[1]; c++)
            for (int64_t d = 0; d <= lim[0]; d++) {
                int64_t sum = a * vb[2]->tokens + c * vb[1]->tokens + d * vb[0]->tokens;
                int64_t e = sum > r ? sum - r : r - sum, n = a + c + d;
                if (e < best_err || (e == best_err && n < best_n)) {
                    best_err = e;
                    best_n = n;
                    cnt[0] = d, cnt[1] = c, cnt[2] = a;
                }
            }
}

// Min-heap of (tokens so far, rank) for the token-balanced loader.
typedef struct rank_load {
    int64_t load;
    int32_t rank;
} rank_load;

static int load_less(const rank_load *x, const rank_load *y) {
    return x->load < y->load || (x->load == y->load && x->rank < y->rank);
}

static void heap_sift_down(rank_load *h, int32_t n, int32_t i) {
    for (;;) {
        int32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && load_less(&h[l], &h[m])) m = l;
        if (r < n && load_less(&h[r], &h[m])) m = r;
        if (m == i) return;
        rank_load t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

// Deals b's sequences (in their order) to ranks, then reorders them by (rank, deal order) and
// numbers ids 0.. in that order.
static zg_status deal_to_ranks(zg_batch *b, int32_t world, zg_error *err) {
    rank_load *h = zg_calloc((size_t)world, sizeof *h, err);
    int64_t *count = zg_calloc((size_t)world + 1, sizeof *count, err);
    zg_seq *sorted = zg_calloc((size_t)(b->n ? b->n : 1), sizeof *sorted, err);
    if (!h || !count || !sorted) {
        free(h), free(count), free(sorted);
        return ZG_ERR_NOMEM;
    }
    for (int32_t r = 0; r < world; r++)
        h[r] = (rank_load){0, r}; // already a valid heap
    for (int64_t i = 0; i < b->n; i++) {
        b->seqs[i].origin_rank = h[0].rank;
        h[0].load += b->seqs[i].tokens;
        heap_sift_down(h, world, 0);
        count[b->seqs[i].origin_rank + 1]++;
    }
    for (int32_t r = 0; r < world; r++)
        count[r + 1] += count[r]; // start offsets per rank
    for (int64_t i = 0; i < b->n; i++)
        sorted[count[b->seqs[i].origin_rank]++] = b->seqs[i];
    for (int64_t i = 0; i < b->n; i++) {
        sorted[i].id = i;
        b->seqs[i] = sorted[i];
    }
    free(h), free(count), free(sorted);
    return ZG_OK;
}

static zg_status mix_check_spec(const zg_mix_spec *sp, zg_error *err) {
    if (!(sp->video_share >= 0 && sp->video_share <= 1))
        return zg_error_set(err, ZG_ERR_INVALID,
                            "mix: video share %g is outside 0..1 (V35 is 0.35)", sp->video_share);
    if (sp->world_size <= 0 || sp->world_size > MIX_MAX_WORLD)
        return zg_error_set(err, ZG_ERR_INVALID, "mix: world size %d is outside 1..%d",
                            sp->world_size, MIX_MAX_WORLD);
    if (sp->tokens_per_rank <= 0 || sp->tokens_per_rank > MIX_MAX_TOTAL / sp->world_size)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "mix: %lld tokens per rank on %d ranks is outside 1..%lld tokens "
                            "per step",
                            (long long)sp->tokens_per_rank, sp->world_size,
                            (long long)MIX_MAX_TOTAL);
    if (sp->video_seconds != 5 && sp->video_seconds != 10 && sp->video_seconds != 15)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "mix: video length %d s is not in the catalog; use 5, 10 or 15",
                            sp->video_seconds);
    return ZG_OK;
}

static zg_status mix_draw(const zg_catalog *cat, const zg_mix_spec *sp, int32_t text, zg_rng *rng,
                          zg_batch *out, zg_error *err) {
    const zg_bucket *vb[3], *ib[4];
    for (int i = 0; i < 3; i++) {
        char name[ZG_BUCKET_NAME_MAX];
        snprintf(name, sizeof name, "%s-%ds", video_res_names[i], sp->video_seconds);
        vb[i] = zg_catalog_find(cat, name);
    }
    for (int i = 0; i < 4; i++)
        ib[i] = zg_catalog_find(cat, image_names[i]);
    for (int i = 0; i < 3; i++)
        if (!vb[i] || vb[i]->tokens <= 0) return zg_error_set(err, ZG_ERR_INTERNAL, "mix: catalog");
    for (int i = 0; i < 4; i++)
        if (!ib[i] || ib[i]->tokens <= 0) return zg_error_set(err, ZG_ERR_INTERNAL, "mix: catalog");

    zg_status st;
    int64_t total = sp->tokens_per_rank * sp->world_size;
    int64_t vtarget = llround(sp->video_share * (double)total), vsum = 0;
    for (;;) { // 1. videos, i.i.d. while they fit
        const zg_bucket *bk = vb[draw_index(rng, video_weights, 3)];
        if (vsum + bk->tokens > vtarget) break;
        if ((st = push_bucket(out, bk, text, err))) return st;
        vsum += bk->tokens;
    }
    int64_t cnt[3];
    best_video_fill(vb, vtarget - vsum, cnt); // closest fill of the remainder
    for (int i = 2; i >= 0; i--)
        for (int64_t k = 0; k < cnt[i]; k++) {
            if ((st = push_bucket(out, vb[i], text, err))) return st;
            vsum += vb[i]->tokens;
        }
    if (sp->video_share > 0 && vsum == 0)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "mix: a video share of %g of %lld tokens (%lld per rank x %d ranks) "
                            "is less than half of the smallest video (%s, %lld tokens); raise "
                            "the load or the share",
                            sp->video_share, (long long)total, (long long)sp->tokens_per_rank,
                            sp->world_size, vb[0]->name, (long long)vb[0]->tokens);

    // 2. images: the budget that makes the video share exact given the videos drawn
    int64_t itarget = sp->video_share > 0
                          ? llround((double)vsum * (1 - sp->video_share) / sp->video_share)
                          : total;
    int64_t isum = 0;
    for (;;) {
        const zg_bucket *bk = ib[draw_index(rng, image_weights, 4)];
        if (isum + bk->tokens > itarget) break;
        if ((st = push_bucket(out, bk, text, err))) return st;
        isum += bk->tokens;
    }
    for (;;) { // greedy fill: largest image that fits, or one more small image if closer
        int64_t r = itarget - isum;
        const zg_bucket *pick = NULL;
        for (int i = 3; i >= 0 && !pick; i--)
            if (ib[i]->tokens <= r) pick = ib[i];
        if (!pick && 2 * r > ib[0]->tokens) pick = ib[0];
        if (!pick) break;
        if ((st = push_bucket(out, pick, text, err))) return st;
        isum += pick->tokens;
    }
    return ZG_OK;
}

zg_status zg_workload_mix(const zg_model *m, const zg_mix_spec *spec, int64_t step, zg_batch *out,
                          zg_error *err) {
    zg_batch_init(out);
    if (!m || !spec) return zg_error_set(err, ZG_ERR_INVALID, "mix: no model or spec given");
    zg_status st = mix_check_spec(spec, err);
    if (st) return st;
    zg_catalog cat;
    if ((st = zg_catalog_default(m, &cat, err))) return st;
    zg_rng rng;
    zg_rng_init(&rng, zg_rng_derive(spec->seed, (uint64_t)step));
    int32_t text = m->text_len > 0 ? m->text_len : 0;
    st = mix_draw(&cat, spec, text, &rng, out, err);
    zg_catalog_free(&cat);
    if (!st) st = deal_to_ranks(out, spec->world_size, err);
    if (st) zg_batch_free(out);
    return st;
}

// ---- shrunk mixes ---------------------------------------------------------------------------

int64_t zg_tokens_divided(int64_t tokens, int32_t divisor) {
    if (divisor <= 1) return tokens;
    int64_t t = (tokens + divisor / 2) / divisor; // round half up
    return t > 0 ? t : 1;
}

static zg_status check_divisor(int32_t divisor, zg_error *err) {
    if (divisor < 1 || divisor > ZG_MIX_DIVISOR_MAX)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "token divisor %d is out of range; expected 1..%d (1: the paper's "
                            "sizes)",
                            divisor, ZG_MIX_DIVISOR_MAX);
    return ZG_OK;
}

zg_status zg_catalog_mix(const zg_model *m, int32_t video_seconds, int32_t divisor, zg_catalog *c,
                         zg_error *err) {
    c->n = 0;
    c->buckets = NULL;
    zg_status st = check_divisor(divisor, err);
    if (st) return st;
    if (video_seconds != 5 && video_seconds != 10 && video_seconds != 15)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "video length %d s is not in the catalog; expected 5, 10 or 15",
                            video_seconds);
    zg_catalog all;
    if ((st = zg_catalog_default(m, &all, err))) return st;
    zg_bucket *b = zg_calloc((size_t)all.n, sizeof *b, err);
    if (!b) {
        zg_catalog_free(&all);
        return ZG_ERR_NOMEM;
    }
    int32_t n = 0, frames = zg_video_frames(video_seconds);
    for (int32_t i = 0; i < all.n; i++) {
        const zg_bucket *a = &all.buckets[i];
        if (a->kind == ZG_SEQ_VIDEO && a->frames != frames) continue;
        b[n] = *a;
        b[n].frames = b[n].height = b[n].width = 0;
        b[n].tokens = zg_tokens_divided(a->tokens, divisor);
        n++;
    }
    zg_catalog_free(&all);
    c->n = n;
    c->buckets = b;
    return ZG_OK;
}

zg_status zg_workload_mix_divided(const zg_model *m, const zg_mix_spec *spec, int32_t divisor,
                                  int64_t step, zg_batch *out, zg_error *err) {
    zg_batch_init(out);
    zg_status st = check_divisor(divisor, err);
    if (!st) st = zg_workload_mix(m, spec, step, out, err);
    if (st || divisor == 1) return st;
    for (int64_t i = 0; i < out->n; i++) {
        zg_seq *s = &out->seqs[i];
        s->tokens = zg_tokens_divided(s->tokens, divisor);
        s->frames = s->height = s->width = 0;
    }
    return ZG_OK;
}
