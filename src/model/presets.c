// presets.c — DiT presets, JSON model files, validation.
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "model/model.h"

static const char *const preset_names[] = {"wan2.1-1.3b", "wan2.1-14b", "hunyuanvideo-13b",
                                           "flux-12b",    "tiny",       "tiny-mmdit",
                                           NULL};

// One row per preset, in the order of preset_names. Every preset has qk_norm, patch (1, 2, 2)
// and spatial VAE stride 8; head_dim = dim / n_heads; n_layers 0 means n_double + n_single.
// Columns: h heads, d/s double/single blocks, lay layers, x cross_attn, text text_dim, len
// text_len, in in_channels, vt temporal VAE stride (flux is for images: KnapFormer's data codes
// handle its frame rate).
typedef struct preset_row {
    zg_arch arch;
    int32_t dim, ffn_dim, n_heads, n_double, n_single, n_layers;
    int32_t cross_attn, text_dim, text_len, freq_dim, in_channels, vae_t;
} preset_row;

// clang-format off
static const preset_row preset_rows[] = {
    // arch           dim   ffn    h   d   s   lay x  text  len  freq in  vt
    {ZG_ARCH_WAN,     1536, 8960,  12, 0,  0,  30, 1, 4096, 512, 256, 16, 4}, // wan2.1-1.3b
    {ZG_ARCH_WAN,     5120, 13824, 40, 0,  0,  40, 1, 4096, 512, 256, 16, 4}, // wan2.1-14b
    {ZG_ARCH_HUNYUAN, 3072, 12288, 24, 20, 40, 0,  0, 4096, 256, 256, 16, 4}, // hunyuanvideo-13b
    {ZG_ARCH_MMDIT,   3072, 12288, 24, 19, 38, 0,  0, 4096, 512, 256, 64, 1}, // flux-12b: images
    {ZG_ARCH_WAN,     64,   128,   4,  0,  0,  2,  1, 32,   8,   32,  4,  4}, // tiny
    {ZG_ARCH_MMDIT,   64,   256,   4,  1,  1,  0,  0, 32,   8,   32,  4,  4}, // tiny-mmdit
};
// clang-format on
_Static_assert(sizeof preset_rows / sizeof *preset_rows + 1 ==
                   sizeof preset_names / sizeof *preset_names,
               "one preset row per preset name");

const char *const *zg_model_preset_names(void) { return preset_names; }

const char *zg_arch_name(zg_arch a) {
    switch (a) {
    case ZG_ARCH_WAN: return "wan";
    case ZG_ARCH_HUNYUAN: return "hunyuan";
    case ZG_ARCH_MMDIT: return "mmdit";
    case ZG_ARCH_PLAIN: return "plain";
    }
    return "?";
}

static void set_preset(zg_model *m, size_t i) {
    const preset_row *r = &preset_rows[i];
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", preset_names[i]);
    m->arch = r->arch;
    m->dim = r->dim;
    m->ffn_dim = r->ffn_dim;
    m->n_heads = r->n_heads;
    m->head_dim = r->dim / r->n_heads;
    m->n_double = r->n_double;
    m->n_single = r->n_single;
    m->n_layers = r->n_layers ? r->n_layers : r->n_double + r->n_single;
    m->in_channels = r->in_channels;
    m->text_dim = r->text_dim;
    m->text_len = r->text_len;
    m->freq_dim = r->freq_dim;
    m->cross_attn = r->cross_attn;
    m->qk_norm = 1;
    m->vae_stride[0] = r->vae_t, m->vae_stride[1] = 8, m->vae_stride[2] = 8;
    m->patch[0] = 1, m->patch[1] = 2, m->patch[2] = 2;
}

zg_status zg_model_preset(const char *name, zg_model *m, zg_error *err) {
    for (size_t i = 0; preset_names[i]; i++)
        if (!strcmp(name, preset_names[i])) {
            set_preset(m, i);
            return ZG_OK;
        }
    set_preset(m, 0);
    char list[256] = "";
    for (size_t i = 0, n = 0; preset_names[i] && n < sizeof list; i++, n = strlen(list))
        snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", preset_names[i]);
    return zg_error_set(err, ZG_ERR_INVALID, "unknown model '%s' (presets: %s; or a JSON file)",
                        name, list);
}

// The integer fields of a model file (keys are the field names), in the order they are written.
#define INT_KEY(field)                                                                             \
    { #field, offsetof(zg_model, field) }
static const struct int_key {
    const char *key;
    size_t offset;
} int_keys[] = {
    INT_KEY(dim),      INT_KEY(ffn_dim),  INT_KEY(n_heads),     INT_KEY(n_layers),
    INT_KEY(n_double), INT_KEY(n_single), INT_KEY(in_channels), INT_KEY(text_dim),
    INT_KEY(text_len), INT_KEY(freq_dim), INT_KEY(cross_attn),  INT_KEY(qk_norm),
};
#undef INT_KEY
#define N_INT_KEYS (sizeof int_keys / sizeof *int_keys)

zg_status zg_model_validate(const zg_model *m, zg_error *err) {
    const char *n = m->name;
    const struct {
        const char *key;
        int32_t v;
    } pos[] = {{"dim", m->dim}, {"ffn_dim", m->ffn_dim}, {"n_heads", m->n_heads},
               {"n_layers", m->n_layers}};
    for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++)
        if (pos[i].v <= 0)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "model '%s': \"%s\" = %d is out of range (>= 1)", n, pos[i].key,
                                pos[i].v);
    if (m->dim % m->n_heads != 0 || m->head_dim != m->dim / m->n_heads)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "model '%s': dim %d is not n_heads %d x head_dim %d", n, m->dim,
                            m->n_heads, m->head_dim);
    if (m->n_double < 0 || m->n_single < 0 ||
        (m->n_double + m->n_single > 0 && m->n_double + m->n_single != m->n_layers))
        return zg_error_set(err, ZG_ERR_INVALID,
                            "model '%s': n_double %d + n_single %d must equal n_layers %d", n,
                            m->n_double, m->n_single, m->n_layers);
    for (int i = 0; i < 3; i++)
        if (m->vae_stride[i] <= 0 || m->patch[i] <= 0)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "model '%s': vae_stride and patch entries must be positive", n);
    if (m->text_len < 0 || m->text_dim < 0 || m->in_channels <= 0)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "model '%s': text_len/text_dim must be >= 0, in_channels > 0", n);
    return ZG_OK;
}

static zg_status get_i32(const cJSON *j, const char *key, int32_t *out, zg_error *err) {
    int64_t v = *out;
    zg_status st = zg_json_get_int(j, key, 0, &v, "model", err);
    if (st) return st;
    if (v < -2147483647 || v > 2147483647)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "model: \"%s\" = %lld is out of range (a 32-bit integer)", key,
                            (long long)v);
    *out = (int32_t)v;
    return ZG_OK;
}

static zg_status get_triple(const cJSON *j, const char *key, int32_t out[3], zg_error *err) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!a) return ZG_OK;
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != 3)
        return zg_error_set(err, ZG_ERR_INVALID, "model: \"%s\" must be an array of 3 integers",
                            key);
    for (int i = 0; i < 3; i++) {
        const cJSON *v = cJSON_GetArrayItem(a, i);
        if (!cJSON_IsNumber(v) || !(fabs(v->valuedouble) <= 2147483647.0) ||
            v->valuedouble != floor(v->valuedouble))
            return zg_error_set(err, ZG_ERR_INVALID,
                                "model: \"%s\"[%d] must be a 32-bit integer, got %g", key, i,
                                cJSON_IsNumber(v) ? v->valuedouble : NAN);
        out[i] = (int32_t)v->valuedouble;
    }
    return ZG_OK;
}

zg_status zg_model_from_json(const cJSON *j, zg_model *m, zg_error *err) {
    if (!cJSON_IsObject(j)) return zg_error_set(err, ZG_ERR_INVALID, "model: expected an object");
    const char *known[N_INT_KEYS + 6] = {"preset", "name", "arch", "vae_stride", "patch"};
    for (size_t i = 0; i < N_INT_KEYS; i++)
        known[5 + i] = int_keys[i].key;
    known[5 + N_INT_KEYS] = NULL;
    zg_status kst = zg_json_check_keys(j, known, "model", err);
    if (kst) return kst;
    char base[64] = "";
    zg_status st = zg_json_get_str(j, "preset", 0, base, sizeof base, "model", err);
    if (st) return st;
    if (base[0]) {
        if ((st = zg_model_preset(base, m, err))) return st;
    } else {
        set_preset(m, 0); // the Wan2.1-1.3B values
        snprintf(m->name, sizeof m->name, "custom");
    }
    if ((st = zg_json_get_str(j, "name", 0, m->name, sizeof m->name, "model", err))) return st;
    char arch[16] = "";
    if ((st = zg_json_get_str(j, "arch", 0, arch, sizeof arch, "model", err))) return st;
    if (arch[0]) {
        zg_arch a = ZG_ARCH_WAN;
        while (a <= ZG_ARCH_PLAIN && strcmp(arch, zg_arch_name(a)))
            a++;
        if (a > ZG_ARCH_PLAIN)
            return zg_error_set(err, ZG_ERR_INVALID,
                                "model: unknown arch '%s' (wan, hunyuan, mmdit, plain)", arch);
        m->arch = a;
        m->cross_attn = m->arch == ZG_ARCH_WAN;
    }
    for (size_t i = 0; i < N_INT_KEYS; i++)
        if ((st = get_i32(j, int_keys[i].key, (int32_t *)((char *)m + int_keys[i].offset), err)))
            return st;
    if (m->n_double + m->n_single > 0 && !cJSON_GetObjectItemCaseSensitive(j, "n_layers"))
        m->n_layers = m->n_double + m->n_single;
    m->head_dim = m->n_heads > 0 ? m->dim / m->n_heads : 0;
    if ((st = get_triple(j, "vae_stride", m->vae_stride, err))) return st;
    if ((st = get_triple(j, "patch", m->patch, err))) return st;
    return zg_model_validate(m, err);
}

static zg_status load_model(const char *name, const cJSON *j, void *m, zg_error *err) {
    return j ? zg_model_from_json(j, m, err) : zg_model_preset(name, m, err);
}

zg_status zg_model_load(const char *name_or_path, zg_model *m, zg_error *err) {
    return zg_json_load_named(name_or_path, "model", load_model, m, err);
}

cJSON *zg_model_to_json(const zg_model *m) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "name", m->name);
    cJSON_AddStringToObject(j, "arch", zg_arch_name(m->arch));
    for (size_t i = 0; i < N_INT_KEYS; i++)
        cJSON_AddNumberToObject(j, int_keys[i].key,
                                *(const int32_t *)((const char *)m + int_keys[i].offset));
    cJSON_AddItemToObject(j, "vae_stride", cJSON_CreateIntArray(m->vae_stride, 3));
    cJSON_AddItemToObject(j, "patch", cJSON_CreateIntArray(m->patch, 3));
    return j;
}
