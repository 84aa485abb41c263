// presets.c — DiT presets, JSON model files, validation.
#include <string.h>

#include "model/model.h"

static const char *const preset_names[] = {"wan2.1-1.3b", "wan2.1-14b", "hunyuanvideo-13b",
                                           "flux-12b",    "tiny",       "tiny-mmdit",
                                           NULL};

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

static void set_wan_defaults(zg_model *m) {
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "wan2.1-1.3b");
    m->arch = ZG_ARCH_WAN;
    m->dim = 1536;
    m->ffn_dim = 8960;
    m->n_heads = 12;
    m->head_dim = 128;
    m->n_layers = 30;
    m->in_channels = 16;
    m->text_dim = 4096;
    m->text_len = 512;
    m->freq_dim = 256;
    m->cross_attn = 1;
    m->qk_norm = 1;
    m->vae_stride[0] = 4, m->vae_stride[1] = 8, m->vae_stride[2] = 8;
    m->patch[0] = 1, m->patch[1] = 2, m->patch[2] = 2;
}

static void set_dims(zg_model *m, const char *name, zg_arch arch, int32_t dim, int32_t ffn,
                     int32_t heads, int32_t ndouble, int32_t nsingle, int32_t nlayers) {
    snprintf(m->name, sizeof m->name, "%s", name);
    m->arch = arch;
    m->dim = dim;
    m->ffn_dim = ffn;
    m->n_heads = heads;
    m->head_dim = dim / heads;
    m->n_double = ndouble;
    m->n_single = nsingle;
    m->n_layers = nlayers ? nlayers : ndouble + nsingle;
}

zg_status zg_model_preset(const char *name, zg_model *m, zg_error *err) {
    set_wan_defaults(m);
    if (!strcmp(name, "wan2.1-1.3b")) {
        return ZG_OK;
    } else if (!strcmp(name, "wan2.1-14b")) {
        set_dims(m, name, ZG_ARCH_WAN, 5120, 13824, 40, 0, 0, 40);
    } else if (!strcmp(name, "hunyuanvideo-13b")) {
        set_dims(m, name, ZG_ARCH_HUNYUAN, 3072, 12288, 24, 20, 40, 0);
        m->cross_attn = 0;
        m->text_len = 256;
    } else if (!strcmp(name, "flux-12b")) {
        set_dims(m, name, ZG_ARCH_MMDIT, 3072, 12288, 24, 19, 38, 0);
        m->cross_attn = 0;
        m->in_channels = 64;
        m->text_len = 512;
        m->vae_stride[0] = 1;  // images; KnapFormer's data codes handle its temporal rate
    } else if (!strcmp(name, "tiny")) {
        set_dims(m, name, ZG_ARCH_WAN, 64, 128, 4, 0, 0, 2);
        m->text_dim = 32;
        m->text_len = 8;
        m->freq_dim = 32;
        m->in_channels = 4;
    } else if (!strcmp(name, "tiny-mmdit")) {
        set_dims(m, name, ZG_ARCH_MMDIT, 64, 256, 4, 1, 1, 0);
        m->cross_attn = 0;
        m->text_dim = 32;
        m->text_len = 8;
        m->freq_dim = 32;
        m->in_channels = 4;
    } else {
        return zg_error_set(err, ZG_ERR_INVALID,
                            "unknown model '%s' (presets: wan2.1-1.3b, wan2.1-14b, "
                            "hunyuanvideo-13b, flux-12b, tiny, tiny-mmdit; or a JSON file)",
                            name);
    }
    return ZG_OK;
}

zg_status zg_model_validate(const zg_model *m, zg_error *err) {
    const char *n = m->name;
    if (m->dim <= 0 || m->ffn_dim <= 0 || m->n_heads <= 0 || m->n_layers <= 0)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "model '%s': dim (%d), ffn_dim (%d), n_heads (%d) and n_layers (%d) "
                            "must be positive",
                            n, m->dim, m->ffn_dim, m->n_heads, m->n_layers);
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
        return zg_error_set(err, ZG_ERR_INVALID, "model: \"%s\" = %lld out of range", key,
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
        if (!cJSON_IsNumber(v) || v->valuedouble != (int32_t)v->valuedouble)
            return zg_error_set(err, ZG_ERR_INVALID, "model: \"%s\"[%d] must be an integer", key,
                                i);
        out[i] = (int32_t)v->valuedouble;
    }
    return ZG_OK;
}

zg_status zg_model_from_json(const cJSON *j, zg_model *m, zg_error *err) {
    if (!cJSON_IsObject(j)) return zg_error_set(err, ZG_ERR_INVALID, "model: expected an object");
    char base[64] = "";
    zg_status st = zg_json_get_str(j, "preset", 0, base, sizeof base, "model", err);
    if (st) return st;
    if (base[0]) {
        if ((st = zg_model_preset(base, m, err))) return st;
    } else {
        set_wan_defaults(m);
        snprintf(m->name, sizeof m->name, "custom");
    }
    if ((st = zg_json_get_str(j, "name", 0, m->name, sizeof m->name, "model", err))) return st;
    char arch[16] = "";
    if ((st = zg_json_get_str(j, "arch", 0, arch, sizeof arch, "model", err))) return st;
    if (arch[0]) {
        if (!strcmp(arch, "wan")) m->arch = ZG_ARCH_WAN;
        else if (!strcmp(arch, "hunyuan")) m->arch = ZG_ARCH_HUNYUAN;
        else if (!strcmp(arch, "mmdit")) m->arch = ZG_ARCH_MMDIT;
        else if (!strcmp(arch, "plain")) m->arch = ZG_ARCH_PLAIN;
        else
            return zg_error_set(err, ZG_ERR_INVALID,
                                "model: unknown arch '%s' (wan, hunyuan, mmdit, plain)", arch);
        m->cross_attn = m->arch == ZG_ARCH_WAN;
    }
    struct {
        const char *k;
        int32_t *p;
    } f[] = {{"dim", &m->dim},           {"ffn_dim", &m->ffn_dim},   {"n_heads", &m->n_heads},
             {"n_layers", &m->n_layers}, {"n_double", &m->n_double}, {"n_single", &m->n_single},
             {"in_channels", &m->in_channels}, {"text_dim", &m->text_dim},
             {"text_len", &m->text_len}, {"freq_dim", &m->freq_dim},
             {"cross_attn", &m->cross_attn}, {"qk_norm", &m->qk_norm}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if ((st = get_i32(j, f[i].k, f[i].p, err))) return st;
    if (m->n_double + m->n_single > 0 && !cJSON_GetObjectItemCaseSensitive(j, "n_layers"))
        m->n_layers = m->n_double + m->n_single;
    m->head_dim = m->n_heads > 0 ? m->dim / m->n_heads : 0;
    if ((st = get_triple(j, "vae_stride", m->vae_stride, err))) return st;
    if ((st = get_triple(j, "patch", m->patch, err))) return st;
    return zg_model_validate(m, err);
}

zg_status zg_model_load(const char *name_or_path, zg_model *m, zg_error *err) {
    if (!name_or_path || !*name_or_path)
        return zg_error_set(err, ZG_ERR_INVALID, "no model given (use --model NAME or FILE)");
    size_t n = strlen(name_or_path);
    if (n > 5 && !strcmp(name_or_path + n - 5, ".json")) {
        cJSON *j = NULL;
        zg_status st = zg_json_read_file(name_or_path, &j, err);
        if (st) return st;
        st = zg_model_from_json(j, m, err);
        cJSON_Delete(j);
        if (st) zg_error_prefix(err, "%s: ", name_or_path);
        return st;
    }
    return zg_model_preset(name_or_path, m, err);
}

cJSON *zg_model_to_json(const zg_model *m) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "name", m->name);
    cJSON_AddStringToObject(j, "arch", zg_arch_name(m->arch));
    cJSON_AddNumberToObject(j, "dim", m->dim);
    cJSON_AddNumberToObject(j, "ffn_dim", m->ffn_dim);
    cJSON_AddNumberToObject(j, "n_heads", m->n_heads);
    cJSON_AddNumberToObject(j, "n_layers", m->n_layers);
    cJSON_AddNumberToObject(j, "n_double", m->n_double);
    cJSON_AddNumberToObject(j, "n_single", m->n_single);
    cJSON_AddNumberToObject(j, "in_channels", m->in_channels);
    cJSON_AddNumberToObject(j, "text_dim", m->text_dim);
    cJSON_AddNumberToObject(j, "text_len", m->text_len);
    cJSON_AddNumberToObject(j, "freq_dim", m->freq_dim);
    cJSON_AddNumberToObject(j, "cross_attn", m->cross_attn);
    cJSON_AddNumberToObject(j, "qk_norm", m->qk_norm);
    cJSON_AddItemToObject(j, "vae_stride", cJSON_CreateIntArray(m->vae_stride, 3));
    cJSON_AddItemToObject(j, "patch", cJSON_CreateIntArray(m->patch, 3));
    return j;
}
