// cli_aoi.h — option parsing and commands of the `aoizora` CLI.
#ifndef ZG_CLI_AOI_H
#define ZG_CLI_AOI_H

#include "aoizora/aoizora.h"

typedef struct aoi_opts {
    const char *cmd;
    const char *model, *res, *topology, *sharding, *out, *html, *evidence, *hlo, *ilp_solver;
    int64_t frames, batch, top_k;
    int training, json, search;
} aoi_opts;

// 0 ok, 1 error (err set), 2 help printed.
int aoi_parse(int argc, char **argv, aoi_opts *o, zg_error *err);
zg_status aoi_cmd_plan(const aoi_opts *o, int explain, zg_error *err);
zg_status aoi_cmd_evidence(const aoi_opts *o, zg_error *err);
zg_status aoi_cmd_price(const aoi_opts *o, zg_error *err);
// Link-load maps (chosen vs default order) of a TPU grid, 2-D or 3-D, as one HTML file.
zg_status aoi_write_html(const char *path, const zg_net *net, const double *chosen,
                         const double *dflt, const char *title, zg_error *err);

#endif
