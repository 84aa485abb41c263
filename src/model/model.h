// model — DiT presets and token math.
//
// A zg_model holds what planners, the cost model, the training engine and AoiZora need to know
// about a diffusion transformer: widths, heads, depth, block structure, and the latent geometry
// (VAE stride, patch) that turns a video/image into a token count.
//
// May include: core.
#ifndef ZG_MODEL_H
#define ZG_MODEL_H

#include "core/core.h"

typedef enum {
    ZG_ARCH_WAN = 0,   // Wan2.1: self-attn + cross-attn to text, adaLN-Zero, GELU(tanh) FFN
    ZG_ARCH_HUNYUAN,   // HunyuanVideo: double-stream then single-stream blocks (MMDiT-like)
    ZG_ARCH_MMDIT,     // Flux-style MMDiT: double- + single-stream, joint text+image attention
    ZG_ARCH_PLAIN,     // KnapFormer's plain transformer (pre-norm, SwiGLU)
} zg_arch;

typedef struct zg_model {
    char name[64];
    zg_arch arch;
    int32_t dim;          // hidden size d_model
    int32_t ffn_dim;      // FFN hidden size
    int32_t n_heads;      // attention heads (Ulysses degree must divide this)
    int32_t head_dim;     // dim / n_heads
    int32_t n_layers;     // total blocks (n_double + n_single for MMDiT-style models)
    int32_t n_double;     // double-stream blocks (0 for Wan)
    int32_t n_single;     // single-stream blocks (0 for Wan)
    int32_t in_channels;  // latent channels (16 for Wan/Flux)
    int32_t text_dim;     // text-encoder width (4096 for umT5 / T5-XXL)
    int32_t text_len;     // text tokens per sample for cross-attention (Wan: 512)
    int32_t freq_dim;     // timestep sinusoid width (256)
    int32_t cross_attn;   // 1: separate cross-attention to text (Wan); 0: joint attention
    int32_t qk_norm;      // 1: RMSNorm on q and k
    int32_t vae_stride[3];  // (t, h, w) VAE compression
    int32_t patch[3];       // (t, h, w) patchify
} zg_model;

// Presets: wan2.1-1.3b, wan2.1-14b, hunyuanvideo-13b, flux-12b, and tiny ones for tests:
// tiny (Wan-style, dim 64, 4 heads, 2 layers), tiny-mmdit.
zg_status zg_model_preset(const char *name, zg_model *m, zg_error *err);
// Names of all presets, NULL-terminated.
const char *const *zg_model_preset_names(void);
// A preset name, or a path to a JSON file ({"name":..,"arch":"wan","dim":..,...}; fields not
// given default to the Wan2.1-1.3B values; dims are validated).
zg_status zg_model_load(const char *name_or_path, zg_model *m, zg_error *err);
zg_status zg_model_from_json(const cJSON *j, zg_model *m, zg_error *err);
cJSON *zg_model_to_json(const zg_model *m);
zg_status zg_model_validate(const zg_model *m, zg_error *err);
const char *zg_arch_name(zg_arch a);

// Parameter count of the DiT (excluding the text encoder and VAE).
int64_t zg_model_param_count(const zg_model *m);

// ---- token math ------------------------------------------------------------------------------
// Rounding rule: each spatial side is rounded UP to a multiple of vae_stride*patch (16 for Wan),
// so 1080 -> 1088 (68 patches); frames: latent frames = (F - 1) / vae_t + 1 for F >= 1 (a
// 1-frame image has one latent frame), then divided by patch_t rounding up.
int64_t zg_model_latent_frames(const zg_model *m, int64_t frames);
int64_t zg_model_tokens_per_frame(const zg_model *m, int64_t height, int64_t width);
int64_t zg_model_tokens(const zg_model *m, int64_t frames, int64_t height, int64_t width);

// FLOPs of one forward pass for one sequence of L visual tokens (plus `text` tokens for
// cross/joint attention), split into the linear part (GEMMs) and the attention part
// (QK^T and AV, bidirectional). Backward is 2x forward for both.
typedef struct zg_model_flops {
    double linear;  // projections, FFN, modulation, cross-attn projections
    double attn;    // self-attention score + value products (4 * L^2 * dim per layer)
    double cross;   // cross-attention to text score + value products
} zg_model_flops;
zg_model_flops zg_model_forward_flops(const zg_model *m, int64_t L, int64_t text);

#endif
