// cli_aoi.h — option parsing and commands of the `aoizora` CLI.
#ifndef ZG_CLI_AOI_H
#define ZG_CLI_AOI_H

#include "aoizora/aoizora.h"

// Commands (bit per command: which options each takes).
enum { AOI_PLAN = 1, AOI_EXPLAIN = 2, AOI_EVIDENCE = 4, AOI_PRICE = 8 };

typedef struct aoi_opts {
    const char *cmd;
    int cmd_bit;
    const char *model, *res, *topology, *sharding, *out, *html, *evidence, *hlo, *ilp_solver;
    int64_t frames, batch, top_k, trip_count;  // batch 0: the default; trip_count 0: none given
    int training, json, search;
    int model_given;  // any of --model, --res, --frames, --training, --batch, --top-k, --ilp-solver
    const char *model_opt;  // the first of them given (for messages)
} aoi_opts;

// Command name -> AOI_* bit, 0 if unknown.
int aoi_cmd_bit(const char *name);
// Prints the general help (no cmd) or one command's help.
void aoi_help(FILE *f, const char *cmd);
// 0 ok, 1 error (err set), 2 help printed.
int aoi_parse(int argc, char **argv, aoi_opts *o, zg_error *err);
zg_status aoi_cmd_plan(const aoi_opts *o, int explain, zg_error *err);
zg_status aoi_cmd_evidence(const aoi_opts *o, zg_error *err);
zg_status aoi_cmd_price(const aoi_opts *o, zg_error *err);
// Link-load maps (chosen vs default order) of a TPU grid, 2-D or 3-D, as one HTML file.
zg_status aoi_write_html(const char *path, const zg_net *net, const double *chosen,
                         const double *dflt, const char *title, zg_error *err);

#endif
