// attn_ops.c — runtime choice of the tile-primitive table (scalar / AVX2+FMA).
#include "kernels/attn_internal.h"

static int cpu_has_avx2_fma(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return 0;
#endif
}

zg_status zg_attn_ops_pick(int32_t isa, int32_t head_dim, const zg_attn_ops **ops, zg_error *err) {
    int avx2 = cpu_has_avx2_fma();
    switch (isa) {
    case ZG_ATTN_ISA_AUTO:
        *ops = avx2 && head_dim % 8 == 0 ? &zg_attn_ops_avx2 : &zg_attn_ops_scalar;
        return ZG_OK;
    case ZG_ATTN_ISA_SCALAR: *ops = &zg_attn_ops_scalar; return ZG_OK;
    case ZG_ATTN_ISA_AVX2:
        if (!avx2)
            return zg_error_set(err, ZG_ERR_UNSUPPORTED,
                                "attention: isa avx2 requested but this CPU lacks AVX2/FMA; "
                                "use ZG_ATTN_ISA_AUTO");
        if (head_dim % 8 != 0)
            return zg_error_set(err, ZG_ERR_UNSUPPORTED,
                                "attention: isa avx2 needs head_dim %% 8 == 0, got %d; use "
                                "ZG_ATTN_ISA_AUTO",
                                (int)head_dim);
        *ops = &zg_attn_ops_avx2;
        return ZG_OK;
    default:
        return zg_error_set(err, ZG_ERR_INVALID,
                            "attention: isa choice %d is unknown; use 0 (auto), 1 (scalar) or "
                            "2 (avx2)",
                            (int)isa);
    }
}

const char *zg_attn_isa(void) {
    return cpu_has_avx2_fma() ? "avx2" : "scalar";
}
