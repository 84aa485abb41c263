// config.c — parallel configurations θ = (q, h, k): names, legality, enumeration.
#include <stdlib.h>

#include "cost/cost.h"

const char *zg_config_name(zg_config c, char *buf, size_t bufsz) {
    if (!buf || bufsz == 0) return "";
    snprintf(buf, bufsz, "(%d,%d,%d)", c.q, c.h, c.k);
    return buf;
}

// The config's name is formatted only on failure: this check runs millions of times when a
// planner enumerates options on a large cluster.
#define CONFIG_FAIL(...)                                                                       \
    do {                                                                                       \
        char nb[48];                                                                           \
        zg_config_name(c, nb, sizeof nb);                                                      \
        return zg_error_set(err, ZG_ERR_INVALID, __VA_ARGS__);                                 \
    } while (0)

zg_status zg_config_check(const zg_model *m, int32_t world_size, zg_config c, int64_t tokens,
                          zg_error *err) {
    if (c.q < 1 || c.h < 1 || c.k < 1)
        CONFIG_FAIL("config %s: q, h and k must all be >= 1 (q all-gather, h Ulysses, k ring)",
                    nb);
    if (!m || m->n_heads < 1)
        CONFIG_FAIL("config %s: model has %d heads; need >= 1", nb, m ? m->n_heads : 0);
    if (m->n_heads % c.h != 0)
        CONFIG_FAIL("config %s: Ulysses degree h = %d does not divide the %d heads of model '%s'",
                    nb, c.h, m->n_heads, m->name);
    int64_t deg = (int64_t)c.q * c.h * c.k;
    if (world_size < 1) CONFIG_FAIL("config %s: world size %d; need >= 1 rank", nb, world_size);
    if (deg > world_size)
        CONFIG_FAIL("config %s: degree q*h*k = %lld exceeds the world size %d", nb,
                    (long long)deg, world_size);
    if (tokens < deg)
        CONFIG_FAIL("config %s: %lld tokens cannot give each of the %lld ranks at least one token",
                    nb, (long long)tokens, (long long)deg);
    return ZG_OK;
}

zg_status zg_config_check_priced(const zg_model *m, int32_t world_size, zg_config c,
                                 int64_t tokens, zg_error *err) {
    int64_t deg = (int64_t)c.q * c.h * c.k;
    if (tokens >= 1 && tokens < deg && zg_config_is_ulysses(c))
        tokens = deg;  // the other rules still apply
    return zg_config_check(m, world_size, c, tokens, err);
}

zg_status zg_config_enumerate(const zg_model *m, int32_t max_degree, zg_config **out,
                              int32_t *n, zg_error *err) {
    *out = NULL;
    *n = 0;
    if (!m || m->n_heads < 1)
        return zg_error_set(err, ZG_ERR_INVALID, "enumerating configs: model has %d heads",
                            m ? m->n_heads : 0);
    if (max_degree < 1)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "enumerating configs: max degree %d; need >= 1", max_degree);
    // divisors of 1..D ascending, by a sieve (CSR: div[off[x] .. off[x+1])): O(D log D) instead
    // of trying every q <= d for every d (O(D^2), milliseconds at D = 1024 on every cold build)
    size_t D = (size_t)max_degree;
    int32_t *off = zg_calloc(D + 2, sizeof *off, err);
    if (!off) return ZG_ERR_NOMEM;
    for (size_t q = 1; q <= D; q++)
        for (size_t x = q; x <= D; x += q) off[x + 1]++;
    for (size_t x = 1; x <= D + 1; x++) off[x] += off[x - 1];
    int32_t *div = zg_calloc((size_t)off[D + 1] + 1, sizeof *div, err);
    int32_t *fill = zg_calloc(D + 1, sizeof *fill, err);
    if (!div || !fill) {
        free(off), free(div), free(fill);
        return ZG_ERR_NOMEM;
    }
    for (size_t q = 1; q <= D; q++)
        for (size_t x = q; x <= D; x += q) div[off[x] + fill[x]++] = (int32_t)q;
    // count first, then fill: degree ascending, then q, then k (h follows)
    int32_t cnt = 0;
    for (int pass = 0; pass < 2; pass++) {
        int32_t i = 0;
        for (int32_t d = 1; d <= max_degree; d++)
            for (int32_t a = off[d]; a < off[d + 1]; a++) {
                int32_t q = div[a], r = d / q;  // k runs over the divisors of r = d / q
                for (int32_t b = off[r]; b < off[r + 1]; b++) {
                    int32_t k = div[b], h = r / k;
                    if (m->n_heads % h) continue;
                    if (pass == 1) (*out)[i] = (zg_config){q, h, k};
                    i++;
                }
            }
        if (pass == 0) {
            cnt = i;
            *out = zg_calloc((size_t)cnt, sizeof **out, err);
            if (!*out) {
                free(off), free(div), free(fill);
                return ZG_ERR_NOMEM;
            }
        }
    }
    free(off), free(div), free(fill);
    *n = cnt;
    return ZG_OK;
}
