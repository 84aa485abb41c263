// main.c — `aoizora` CLI: plan, explain, evidence, price (aoizora <command> --help for each).
//   aoizora plan --model wan2.1-14b --res 720p --frames 81 --topology v5e-16 [--training] [--json]
//   aoizora plan --hlo f.hlo --topology v5e-8         device order for a compiled XLA program
//   aoizora explain ... [--html out.html]     per-link load table of the chosen placement vs default
//   aoizora evidence ... --sharding dp=2,uly=4 [-o ev.json]   lowering -> evidence JSON
//   aoizora evidence --hlo f.hlo [-o ev.json]                   XLA HLO text -> evidence JSON
//   aoizora price --evidence ev.json|--hlo f.hlo --topology v5e-8 [--search]
#include <stdlib.h>
#include <string.h>

#include "aoizora/aoizora.h"
#include "cli_aoi.h"

int main(int argc, char **argv) {
    if (argc < 2) {
        aoi_help(stderr, NULL);
        return 2;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        aoi_help(stdout, NULL);
        return 0;
    }
    if (!strcmp(argv[1], "help")) {
        if (argc > 2 && !aoi_cmd_bit(argv[2])) {
            fprintf(stderr, "aoizora help: unknown command '%s' (plan, explain, evidence, price)\n", argv[2]);
            return 2;
        }
        aoi_help(stdout, argc > 2 ? argv[2] : NULL);
        return 0;
    }
    if (!aoi_cmd_bit(argv[1])) {
        fprintf(stderr, "aoizora: unknown command '%s' (plan, explain, evidence, price; see aoizora --help)\n",
                argv[1]);
        return 2;
    }
    aoi_opts o;
    zg_error err = {0};
    int rc = aoi_parse(argc - 1, argv + 1, &o, &err);
    if (rc == 2) return 0;  // help printed
    if (rc) {
        fprintf(stderr, "aoizora %s: %s\n", argv[1], err.msg);
        return zg_status_exit_code(err.status ? err.status : ZG_ERR_INVALID);
    }
    zg_status st;
    if (o.cmd_bit == AOI_PLAN) st = aoi_cmd_plan(&o, 0, &err);
    else if (o.cmd_bit == AOI_EXPLAIN) st = aoi_cmd_plan(&o, 1, &err);
    else if (o.cmd_bit == AOI_EVIDENCE) st = aoi_cmd_evidence(&o, &err);
    else st = aoi_cmd_price(&o, &err);
    if (st) {
        fprintf(stderr, "aoizora %s: %s\n", argv[1], err.msg[0] ? err.msg : zg_status_name(st));
        return zg_status_exit_code(st);
    }
    return 0;
}
