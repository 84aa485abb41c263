// tokens.c — token counts and FLOPs per sequence.
#include "model/model.h"

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t zg_model_latent_frames(const zg_model *m, int64_t frames) {
    if (frames <= 0) return 0;
    int64_t lat = (frames - 1) / m->vae_stride[0] + 1;
    return ceil_div(lat, m->patch[0]);
}

int64_t zg_model_tokens_per_frame(const zg_model *m, int64_t height, int64_t width) {
    if (height <= 0 || width <= 0) return 0;
    int64_t sh = (int64_t)m->vae_stride[1] * m->patch[1];
    int64_t sw = (int64_t)m->vae_stride[2] * m->patch[2];
    return ceil_div(height, sh) * ceil_div(width, sw);
}

int64_t zg_model_tokens(const zg_model *m, int64_t frames, int64_t height, int64_t width) {
    return zg_model_latent_frames(m, frames) * zg_model_tokens_per_frame(m, height, width);
}

int64_t zg_model_param_count(const zg_model *m) {
    int64_t d = m->dim, f = m->ffn_dim, td = m->text_dim;
    int64_t patch_in = (int64_t)m->in_channels * m->patch[0] * m->patch[1] * m->patch[2];
    int64_t embed = patch_in * d + d;                               // patch embedding
    int64_t time = (int64_t)m->freq_dim * d + d + d * d + d + d * 6 * d + 6 * d;  // t-MLP+mod
    int64_t text = td * d + d + d * d + d;                          // text projection MLP
    int64_t head = d * patch_in + patch_in + 2 * d;                 // final layer + modulation
    int64_t per_block = 0, total_blocks = 0;
    switch (m->arch) {
    case ZG_ARCH_WAN:
        // self-attn qkvo + cross-attn qkvo + ffn + per-block modulation table (6d) + norms: q/k
        // RMSNorm weights of both attentions (4d) and the affine LayerNorm before cross-attention
        // (Wan's norm3, weight + bias: 2d). norm1/norm2 are affine-free (adaLN modulates them).
        // Must match the C trainer's layout (src/dit/params.c; tests/train checks it).
        per_block =
            4 * (d * d + d) + 4 * (d * d + d) + (d * f + f + f * d + d) + 6 * d + 4 * d + 2 * d;
        total_blocks = per_block * m->n_layers;
        break;
    case ZG_ARCH_HUNYUAN:
    case ZG_ARCH_MMDIT: {
        // double: two streams, each qkv+o, mlp, 6d modulation from 12d per stream
        int64_t dbl = 2 * (4 * (d * d + d) + (d * f + f + f * d + d) + d * 6 * d + 6 * d);
        // single: linear1 d->(3d+f), linear2 (d+f)->d, modulation 3d
        int64_t sgl = d * (3 * d + f) + 3 * d + f + (d + f) * d + d + d * 3 * d + 3 * d;
        total_blocks = dbl * m->n_double + sgl * m->n_single;
        break;
    }
    case ZG_ARCH_PLAIN:
        per_block = 4 * (d * d + d) + 3 * d * f + 2 * d;
        total_blocks = per_block * m->n_layers;
        break;
    }
    return embed + time + text + head + total_blocks;
}

zg_model_flops zg_model_forward_flops(const zg_model *m, int64_t L, int64_t text) {
    zg_model_flops fl = {0, 0, 0};
    double d = m->dim, f = m->ffn_dim, l = (double)L, t = (double)text;
    switch (m->arch) {
    case ZG_ARCH_WAN:
        // self qkv+o: 8 l d^2; cross: q,o 4 l d^2 + k,v over text 4 t d^2; ffn 4 l d f
        fl.linear = m->n_layers * (8 * l * d * d + 4 * l * d * d + 4 * t * d * d + 4 * l * d * f);
        fl.attn = m->n_layers * 4 * l * l * d;
        fl.cross = m->cross_attn ? m->n_layers * 4 * l * t * d : 0;
        break;
    case ZG_ARCH_HUNYUAN:
    case ZG_ARCH_MMDIT: {
        double n = l + t;  // joint sequence: text tokens ride along with the visual ones
        fl.linear = m->n_double * n * (8 * d * d + 4 * d * f) +
                    m->n_single * n * (8 * d * d + 4 * d * f);
        fl.attn = (double)m->n_layers * 4 * n * n * d;
        break;
    }
    case ZG_ARCH_PLAIN:
        fl.linear = m->n_layers * (8 * l * d * d + 6 * l * d * f);
        fl.attn = m->n_layers * 4 * l * l * d;
        break;
    }
    return fl;
}
