// knap.c — KnapFormer's data simulator (reference knapformer.md §3.1): data codes
// g{G}b{B}i{R}f{F}s{S}, their visual token counts, the contiguous rank layout and per-step
// sampling. Our RNG (zg_rng), not Python's/torch's, so token values differ from theirs while
// the distributions and the layout match.
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "workload/workload.h"

#define KNAP_MAX_WORLD (1 << 20)

typedef struct field_def {
    char letter;
    int64_t lo, hi;
    const char *what;
} field_def;

static const field_def knap_fields[5] = {
    {'g', 1, 65536, "GPUs"},        {'b', 1, 1000000, "samples per GPU per step"},
    {'i', 16, 16384, "resolution"}, {'f', 1, 100000, "frames"},
    {'s', 0, 1, "smooth flag"},
};

#define KNAP_FORMAT                                                                                \
    "codes look like g8b4i256f1s0 (g GPUs, b samples per GPU, i resolution, "                      \
    "f frames, s 1 = smooth video / 0 = independent frames)"

static zg_status parse_one(const char *code, size_t len, int32_t index, zg_knap_code *out,
                           zg_error *err) {
    int64_t v[5];
    size_t p = 0;
    for (int f = 0; f < 5; f++) {
        const field_def *fd = &knap_fields[f];
        if (p >= len || code[p] != fd->letter)
            return zg_error_set(
                err, ZG_ERR_PARSE,
                "data code %d \"%.*s\": expected '%c' at position %zu; " KNAP_FORMAT, index,
                (int)len, code, fd->letter, p + 1);
        p++;
        int64_t x = 0;
        int nd = 0;
        for (; p < len && isdigit((unsigned char)code[p]); p++, nd++)
            if (nd < 10) x = x * 10 + (code[p] - '0');
        if (nd == 0)
            return zg_error_set(err, ZG_ERR_PARSE,
                                "data code %d \"%.*s\": expected a number after '%c'; " KNAP_FORMAT,
                                index, (int)len, code, fd->letter);
        if (nd > 9 || x < fd->lo || x > fd->hi)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "data code %d \"%.*s\": %s %c%.*s is outside %lld..%lld", index,
                                (int)len, code, fd->what, fd->letter, nd, code + p - nd,
                                (long long)fd->lo, (long long)fd->hi);
        v[f] = x;
    }
    if (p != len)
        return zg_error_set(err, ZG_ERR_PARSE,
                            "data code %d \"%.*s\": unexpected \"%.*s\" after s%lld; " KNAP_FORMAT,
                            index, (int)len, code, (int)(len - p), code + p, (long long)v[4]);
    *out =
        (zg_knap_code){(int32_t)v[0], (int32_t)v[1], (int32_t)v[2], (int32_t)v[3], (int32_t)v[4]};
    return ZG_OK;
}

zg_status zg_knap_codes_parse(const char *spec, zg_knap_code **codes, int32_t *n, zg_error *err) {
    *codes = NULL;
    *n = 0;
    if (!spec) return zg_error_set(err, ZG_ERR_INVALID, "no data codes given; " KNAP_FORMAT);
    size_t len = strlen(spec), ncomma = 0;
    for (size_t i = 0; i < len; i++)
        ncomma += spec[i] == ',';
    if (ncomma >= 1000000)
        return zg_error_set(err, ZG_ERR_INVALID, "too many data codes (%zu)", ncomma + 1);
    zg_knap_code *c = zg_calloc(ncomma + 1, sizeof *c, err);
    if (!c) return ZG_ERR_NOMEM;
    int32_t k = 0;
    const char *p = spec, *end = spec + len;
    for (;;) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *e = comma ? comma : end;
        const char *a = p, *b = e;
        while (a < b && isspace((unsigned char)*a))
            a++;
        while (b > a && isspace((unsigned char)b[-1]))
            b--;
        if (a == b) {
            free(c);
            return zg_error_set(err, ZG_ERR_PARSE,
                                "data code %d is empty in \"%.80s\"; " KNAP_FORMAT, k, spec);
        }
        zg_status st = parse_one(a, (size_t)(b - a), k, &c[k], err);
        if (st) {
            free(c);
            return st;
        }
        k++;
        if (!comma) break;
        p = comma + 1;
    }
    *codes = c;
    *n = k;
    return ZG_OK;
}

int64_t zg_knap_code_visual_tokens(const zg_knap_code *c) {
    int64_t side = c->res / 16;
    int64_t temporal = c->frames;
    if (c->smooth) {
        temporal = (int64_t)((double)c->frames / 3.4); // Python int(F / 3.4): truncation
        if (temporal < 1) temporal = 1;
    }
    return side * side * temporal;
}

int32_t zg_knap_codes_gpus(const zg_knap_code *codes, int32_t n_codes) {
    int64_t g = 0;
    for (int32_t i = 0; i < n_codes; i++)
        g += codes[i].gpus;
    return g > INT32_MAX ? INT32_MAX : (int32_t)g;
}

zg_status zg_knap_codes_sample(const zg_knap_code *codes, int32_t n_codes, int32_t world_size,
                               uint64_t seed, int64_t step, zg_batch *out, zg_error *err) {
    zg_batch_init(out);
    if (!codes || n_codes <= 0) return zg_error_set(err, ZG_ERR_INVALID, "no data codes given");
    for (int32_t i = 0; i < n_codes; i++) {
        const zg_knap_code *c = &codes[i];
        for (int f = 0; f < 5; f++) {
            int64_t x = f == 0   ? c->gpus
                        : f == 1 ? c->batch
                        : f == 2 ? c->res
                        : f == 3 ? c->frames
                                 : c->smooth;
            if (x < knap_fields[f].lo || x > knap_fields[f].hi)
                return zg_error_set(err, ZG_ERR_INVALID,
                                    "data code %d: %s %lld is outside %lld..%lld", i,
                                    knap_fields[f].what, (long long)x, (long long)knap_fields[f].lo,
                                    (long long)knap_fields[f].hi);
        }
    }
    int64_t gsum = 0;
    for (int32_t i = 0; i < n_codes; i++)
        gsum += codes[i].gpus;
    if (world_size <= 0 || world_size > KNAP_MAX_WORLD)
        return zg_error_set(err, ZG_ERR_INVALID, "world size %d is outside 1..%d", world_size,
                            KNAP_MAX_WORLD);
    if (world_size % gsum != 0)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "world size %d is not a multiple of the data codes' %lld GPUs; "
                            "KnapFormer repeats the code layout every %lld ranks",
                            world_size, (long long)gsum, (long long)gsum);
    // rank -> code: contiguous blocks in list order, repeated world_size / gsum times
    int64_t nseq = 0;
    for (int32_t r = 0; r < world_size; r++) {
        int64_t at = r % gsum;
        int32_t ci = 0;
        while (at >= codes[ci].gpus)
            at -= codes[ci++].gpus;
        nseq += codes[ci].batch;
        if (nseq > ZG_BATCH_MAX_SEQS)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "data codes give more than %lld samples per step",
                                (long long)ZG_BATCH_MAX_SEQS);
    }
    zg_status st = ZG_OK;
    int64_t id = 0;
    for (int32_t r = 0; r < world_size && !st; r++) {
        int64_t at = r % gsum;
        int32_t ci = 0;
        while (at >= codes[ci].gpus)
            at -= codes[ci++].gpus;
        const zg_knap_code *c = &codes[ci];
        zg_rng rng;
        zg_rng_init(&rng, zg_rng_derive(zg_rng_derive(seed, (uint64_t)step), (uint64_t)r));
        double m = zg_rng_range(&rng, 0.96, 1.04); // one jitter per rank per step
        int64_t vis = (int64_t)((double)zg_knap_code_visual_tokens(c) * m);
        if (vis < 1) vis = 1; // guard for tiny codes; never hit at R >= 32
        zg_seq s;
        zg_seq_init(&s);
        s.kind = (c->smooth || c->frames > 1) ? ZG_SEQ_VIDEO : ZG_SEQ_IMAGE;
        s.frames = c->frames;
        s.height = s.width = c->res;
        s.origin_rank = r;
        snprintf(s.bucket, sizeof s.bucket, "i%df%ds%d", c->res, c->frames, c->smooth);
        for (int32_t k = 0; k < c->batch && !st; k++) {
            int64_t text = zg_rng_int(&rng, 0, 392); // T5 tokens, inclusive
            s.id = id++;
            // KnapFormer packs the T5 text and the visual tokens into one sequence of
            // L = text + vis tokens that it balances and chunks; that packed length is the unit
            // a plan splits, so it is `tokens`, and text_tokens stays 0 (a pricer must not add
            // the text a second time for joint-attention models).
            s.tokens = text + vis;
            st = zg_batch_push(out, &s, err);
        }
    }
    if (st) zg_batch_free(out);
    return st;
}
