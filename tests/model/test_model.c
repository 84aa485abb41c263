// test_model.c — presets, token math against the known counts, JSON models, bad input.
#include <string.h>

#include "model/model.h"
#include "zgtest.h"

ZG_TEST(presets_have_published_dims) {
    zg_error e;
    zg_model m;
    CHECK_OK(zg_model_preset("wan2.1-1.3b", &m, &e), &e);
    CHECK(m.dim == 1536 && m.ffn_dim == 8960 && m.n_heads == 12 && m.n_layers == 30);
    CHECK_EQ_INT(m.head_dim, 128);
    CHECK_OK(zg_model_preset("wan2.1-14b", &m, &e), &e);
    CHECK(m.dim == 5120 && m.ffn_dim == 13824 && m.n_heads == 40 && m.n_layers == 40);
    CHECK_OK(zg_model_preset("hunyuanvideo-13b", &m, &e), &e);
    CHECK(m.dim == 3072 && m.ffn_dim == 12288 && m.n_heads == 24 && m.n_double == 20 &&
          m.n_single == 40 && m.n_layers == 60);
    CHECK_OK(zg_model_preset("flux-12b", &m, &e), &e);
    CHECK(m.dim == 3072 && m.head_dim == 128 && m.n_double == 19 && m.n_single == 38 &&
          m.ffn_dim == 4 * 3072);
    for (const char *const *n = zg_model_preset_names(); *n; n++) {
        CHECK_OK(zg_model_preset(*n, &m, &e), &e);
        CHECK_OK(zg_model_validate(&m, &e), &e);
    }
    CHECK(zg_model_preset("wan3", &m, &e) == ZG_ERR_INVALID);
    CHECK(strstr(e.msg, "'wan3'") != NULL);
}

ZG_TEST(param_counts_are_near_published_sizes) {
    zg_error e;
    zg_model m;
    CHECK_OK(zg_model_preset("wan2.1-1.3b", &m, &e), &e);
    double p = (double)zg_model_param_count(&m);
    CHECK_MSG(p > 1.2e9 && p < 1.6e9, "wan 1.3b has %.3g params", p);
    CHECK_OK(zg_model_preset("wan2.1-14b", &m, &e), &e);
    p = (double)zg_model_param_count(&m);
    CHECK_MSG(p > 13e9 && p < 15e9, "wan 14b has %.3g params", p);
    CHECK_OK(zg_model_preset("flux-12b", &m, &e), &e);
    p = (double)zg_model_param_count(&m);
    CHECK_MSG(p > 11e9 && p < 12.6e9, "flux has %.3g params", p);
    CHECK_OK(zg_model_preset("hunyuanvideo-13b", &m, &e), &e);
    p = (double)zg_model_param_count(&m);
    CHECK_MSG(p > 12e9 && p < 14e9, "hunyuan has %.3g params", p);
}

ZG_TEST(token_counts_known_values) {
    zg_error e;
    zg_model m;
    CHECK_OK(zg_model_preset("wan2.1-1.3b", &m, &e), &e);
    CHECK_EQ_INT(zg_model_tokens(&m, 81, 480, 832), 32760);
    CHECK_EQ_INT(zg_model_tokens(&m, 81, 720, 1280), 75600);
    CHECK_EQ_INT(zg_model_tokens(&m, 161, 1080, 1920), 334560);
    CHECK_EQ_INT(zg_model_tokens(&m, 241, 1080, 1920), 497760);
    CHECK_EQ_INT(zg_model_tokens(&m, 1, 256, 256), 256);
    CHECK_EQ_INT(zg_model_tokens(&m, 1, 480, 832), 1560);
    CHECK_EQ_INT(zg_model_tokens(&m, 1, 1080, 1920), 8160);
    CHECK_EQ_INT(zg_model_tokens(&m, 161, 480, 832), 63960);
    CHECK_EQ_INT(zg_model_tokens(&m, 241, 720, 1280), 219600);
    CHECK_EQ_INT(zg_model_latent_frames(&m, 161), 41);
    CHECK_EQ_INT(zg_model_latent_frames(&m, 0), 0);
    CHECK_EQ_INT(zg_model_tokens_per_frame(&m, 1080, 1920), 68 * 120);
}

ZG_TEST(model_json_roundtrip_and_errors) {
    zg_error e;
    zg_model m, m2;
    cJSON *j = NULL;
    CHECK_OK(zg_json_parse("{\"preset\":\"wan2.1-1.3b\",\"name\":\"mine\",\"n_layers\":4}", "t",
                           &j, &e), &e);
    CHECK_OK(zg_model_from_json(j, &m, &e), &e);
    cJSON_Delete(j);
    CHECK_STR(m.name, "mine");
    CHECK_EQ_INT(m.n_layers, 4);
    CHECK_EQ_INT(m.dim, 1536);
    cJSON *out = zg_model_to_json(&m);
    CHECK_OK(zg_model_from_json(out, &m2, &e), &e);
    cJSON_Delete(out);
    CHECK_STR(m.name, m2.name);
    CHECK(m.dim == m2.dim && m.n_layers == m2.n_layers && m.arch == m2.arch &&
          m.ffn_dim == m2.ffn_dim && m.text_len == m2.text_len && m.patch[2] == m2.patch[2]);
    CHECK_OK(zg_json_parse("{\"dim\":100,\"n_heads\":12}", "t", &j, &e), &e);
    CHECK(zg_model_from_json(j, &m, &e) == ZG_ERR_INVALID);
    CHECK(strstr(e.msg, "100") != NULL);
    cJSON_Delete(j);
    CHECK_OK(zg_json_parse("{\"patch\":[1,2]}", "t", &j, &e), &e);
    CHECK(zg_model_from_json(j, &m, &e) == ZG_ERR_INVALID);
    cJSON_Delete(j);
}

ZG_TEST(flops_scale_quadratically_in_attention) {
    zg_error e;
    zg_model m;
    CHECK_OK(zg_model_preset("wan2.1-1.3b", &m, &e), &e);
    zg_model_flops a = zg_model_forward_flops(&m, 1000, 0), b = zg_model_forward_flops(&m, 2000, 0);
    CHECK_NEAR(b.attn / a.attn, 4.0, 1e-12, 0);
    CHECK_NEAR(b.linear / a.linear, 2.0, 1e-12, 0);
    CHECK_NEAR(a.attn, 30.0 * 4 * 1000.0 * 1000 * 1536, 0, 1e-12);
}

ZG_TEST_MAIN()
