// cli_inputs.c — reads a command's input files and names once, before any work, so a bad one
// fails in one line that names its option (--model, --cluster, --batch, --profile, --catalog)
// and the value; the library's message says what is wrong (missing, unreadable, empty, not
// JSON, a field of the wrong type, a non-finite or out-of-range number).
#include <stdio.h>

#include "cli.h"
#include "cost/cost.h"
#include "model/model.h"
#include "profile/profile.h"
#include "topo/topo.h"
#include "workload/workload.h"

zg_status cli_check_inputs(const cli_inputs *in, zg_error *err) {
    zg_model m;
    int have_model = 0;
    zg_status st = ZG_OK;
    const char *model = in->model ? in->model : in->model_default;
    if (model) {
        if ((st = zg_model_load(model, &m, err))) return zg_error_prefix(err, "--model: ");
        have_model = 1;
    }
    if (in->cluster) {
        zg_cluster c;
        if ((st = zg_cluster_load(in->cluster, &c, err))) return zg_error_prefix(err, "--cluster: ");
    }
    if (in->profile) {
        zg_cost_table t;
        zg_cost_table_init_empty(&t);
        st = zg_cost_table_load(in->profile, &t, err);
        zg_cost_table_free(&t);
        if (st) return zg_error_prefix(err, "--profile: ");
    }
    if (in->batch && have_model) {
        zg_batch b;
        zg_batch_init(&b);
        st = zg_batch_read_file(in->batch, &m, &b, err);
        if (!st && b.n == 0)
            st = zg_error_set(err, ZG_ERR_INVALID,
                              "'%s' holds no sequences; give a batch with at least one "
                              "(docs/formats.md)",
                              in->batch);
        zg_batch_free(&b);
        if (st) return zg_error_prefix(err, "--batch: ");
    }
    if (in->catalog && have_model) {
        zg_catalog cat = {0};
        st = zg_profile_catalog_load(in->catalog, &m, &cat, err);
        zg_catalog_free(&cat);
        if (st) return zg_error_prefix(err, "--catalog: ");
    }
    return ZG_OK;
}

void cli_warn_unpriced(const char *cmd, const char *what, const zg_cost_table *t) {
    char note[512];
    if (zg_cost_table_unpriced(t, note, sizeof note))
        fprintf(stderr, "zellige %s: warning: %s: %s\n", cmd, what, note);
}

void cli_warn_profile(const char *cmd, const char *path) {
    zg_cost_table t;
    zg_cost_table_init_empty(&t);
    if (!zg_cost_table_load(path, &t, NULL)) {
        char what[512];
        snprintf(what, sizeof what, "--profile %s", path);
        cli_warn_unpriced(cmd, what, &t);
    }
    zg_cost_table_free(&t);
}
