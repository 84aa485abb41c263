// rng.c — xoshiro256** (Blackman & Vigna) seeded via splitmix64: fast, deterministic, and the
// same sequence on every platform, so seeded workloads and tests are reproducible.
#include <math.h>

#include "core/core.h"

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void zg_rng_init(zg_rng *rng, uint64_t seed) {
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) rng->s[i] = splitmix64(&x);
}

uint64_t zg_rng_next(zg_rng *rng) {
    uint64_t *s = rng->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double zg_rng_uniform(zg_rng *rng) { return (double)(zg_rng_next(rng) >> 11) * 0x1.0p-53; }

double zg_rng_range(zg_rng *rng, double lo, double hi) {
    return lo + (hi - lo) * zg_rng_uniform(rng);
}

int64_t zg_rng_int(zg_rng *rng, int64_t lo, int64_t hi) {
    if (hi <= lo) return lo;
    uint64_t span = (uint64_t)(hi - lo) + 1;
    if (span == 0) return (int64_t)zg_rng_next(rng);  // full 64-bit range
    uint64_t limit = UINT64_MAX - UINT64_MAX % span;  // rejection: no modulo bias
    uint64_t r;
    do r = zg_rng_next(rng);
    while (r >= limit);
    return lo + (int64_t)(r % span);
}

double zg_rng_normal(zg_rng *rng) {
    double u1 = zg_rng_uniform(rng), u2 = zg_rng_uniform(rng);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

uint64_t zg_rng_derive(uint64_t seed, uint64_t index) {
    uint64_t x = seed ^ (index * 0xd1b54a32d192ed03ULL);
    splitmix64(&x);
    return splitmix64(&x);
}
