// attn_ops.c — runtime choice of the tile-primitive table (scalar / AVX2+FMA / AVX-512F),
// from the CPU's features (__builtin_cpu_supports, which also checks that the OS saves the
// ymm/zmm state), the caller's forced choice (zg_attn_opts.isa) and, for ZG_ATTN_ISA_AUTO,
// the ZG_KERNELS_ISA environment variable (auto|scalar|avx2|avx512).
#include <stdlib.h>
#include <string.h>

#include "kernels/attn_internal.h"

static int cpu_has(int32_t isa) {
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    switch (isa) {
    case ZG_ATTN_ISA_AVX2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case ZG_ATTN_ISA_AVX512: return __builtin_cpu_supports("avx512f");
    default: return isa == ZG_ATTN_ISA_AUTO || isa == ZG_ATTN_ISA_SCALAR;
    }
#else
    return isa == ZG_ATTN_ISA_AUTO || isa == ZG_ATTN_ISA_SCALAR;
#endif
}

static const char *const isa_names[] = {"auto", "scalar", "avx2", "avx512"};

int zg_attn_isa_supported(int32_t isa) {
    return isa >= ZG_ATTN_ISA_AUTO && isa <= ZG_ATTN_ISA_AVX512 && cpu_has(isa);
}

const char *zg_attn_isa_name(int32_t isa) {
    return isa >= ZG_ATTN_ISA_AUTO && isa <= ZG_ATTN_ISA_AVX512 ? isa_names[isa] : "unknown";
}

zg_status zg_attn_isa_parse(const char *name, int32_t *isa, zg_error *err) {
    for (int32_t i = ZG_ATTN_ISA_AUTO; i <= ZG_ATTN_ISA_AVX512; i++)
        if (name && !strcmp(name, isa_names[i])) {
            *isa = i;
            return ZG_OK;
        }
    return zg_error_set(err, ZG_ERR_INVALID,
                        "attention: unknown isa '%s'; use auto, scalar, avx2 or avx512",
                        name ? name : "(null)");
}

// The ISA the caller asked for: opts' choice, else ZG_KERNELS_ISA, else auto. *from_env tells
// which (the env request degrades to scalar for head dims the SIMD paths cannot take).
static zg_status requested(int32_t isa, int32_t *out, int *from_env, zg_error *err) {
    *from_env = 0;
    if (isa != ZG_ATTN_ISA_AUTO) {
        if (isa < ZG_ATTN_ISA_AUTO || isa > ZG_ATTN_ISA_AVX512)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "attention: isa choice %d is unknown; use 0 (auto), 1 (scalar), "
                                "2 (avx2) or 3 (avx512)",
                                (int)isa);
        *out = isa;
        return ZG_OK;
    }
    const char *env = getenv("ZG_KERNELS_ISA");
    *out = ZG_ATTN_ISA_AUTO;
    if (!env || !*env) return ZG_OK;
    if (zg_attn_isa_parse(env, out, NULL))
        return zg_error_set(err, ZG_ERR_INVALID,
                            "attention: ZG_KERNELS_ISA='%s' is unknown; use auto, scalar, avx2 "
                            "or avx512 (or unset it)",
                            env);
    *from_env = 1;
    return ZG_OK;
}

zg_status zg_attn_ops_pick(int32_t isa, int32_t head_dim, const zg_attn_ops **ops, zg_error *err) {
    int from_env = 0;
    int32_t want = ZG_ATTN_ISA_AUTO;
    zg_status st = requested(isa, &want, &from_env, err);
    if (st) return st;
    if (want == ZG_ATTN_ISA_AUTO) {
        if (head_dim % 8 == 0 && cpu_has(ZG_ATTN_ISA_AVX512))
            *ops = &zg_attn_ops_avx512;
        else if (head_dim % 8 == 0 && cpu_has(ZG_ATTN_ISA_AVX2))
            *ops = &zg_attn_ops_avx2;
        else
            *ops = &zg_attn_ops_scalar;
        return ZG_OK;
    }
    if (want == ZG_ATTN_ISA_SCALAR) {
        *ops = &zg_attn_ops_scalar;
        return ZG_OK;
    }
    const char *name = isa_names[want];
    if (!cpu_has(want)) {
        if (from_env)
            return zg_error_set(err, ZG_ERR_UNSUPPORTED,
                                "attention: ZG_KERNELS_ISA=%s but this CPU (or build) lacks %s; "
                                "unset it or use %s",
                                name, want == ZG_ATTN_ISA_AVX512 ? "AVX-512F" : "AVX2/FMA",
                                cpu_has(ZG_ATTN_ISA_AVX2) ? "avx2 or scalar" : "scalar");
        return zg_error_set(err, ZG_ERR_UNSUPPORTED,
                            "attention: isa %s requested but this CPU (or build) lacks %s; use "
                            "ZG_ATTN_ISA_AUTO",
                            name, want == ZG_ATTN_ISA_AVX512 ? "AVX-512F" : "AVX2/FMA");
    }
    if (head_dim % 8 != 0) {
        if (from_env) { // an environment-wide request: dims the SIMD tiles cannot take
            *ops = &zg_attn_ops_scalar;
            return ZG_OK;
        }
        return zg_error_set(err, ZG_ERR_UNSUPPORTED,
                            "attention: isa %s needs head_dim %% 8 == 0, got %d; use "
                            "ZG_ATTN_ISA_AUTO",
                            name, (int)head_dim);
    }
    *ops = want == ZG_ATTN_ISA_AVX512 ? &zg_attn_ops_avx512 : &zg_attn_ops_avx2;
    return ZG_OK;
}

zg_status zg_attn_isa_resolve(int32_t isa, const char **name, zg_error *err) {
    const zg_attn_ops *ops = NULL;
    zg_status st = zg_attn_ops_pick(isa, 64, &ops, err);
    *name = st ? NULL : ops->isa;
    return st;
}

const char *zg_attn_isa(void) {
    const char *name = NULL;
    return zg_attn_isa_resolve(ZG_ATTN_ISA_AUTO, &name, NULL) ? "invalid" : name;
}
