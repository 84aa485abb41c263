// main.c — `aoizora` CLI: plan, explain, evidence, price.
//   aoizora plan --model wan2.1-14b --res 720p --frames 81 --topology v5e-16 [--training] [--json]
//   aoizora explain ... [--html out.html]     per-link load table of the chosen placement vs default
//   aoizora evidence ... --sharding dp=2,uly=4 [-o ev.json]   lowering -> evidence JSON
//   aoizora price --evidence ev.json|--hlo f.hlo --topology v5e-8 [--search]
#include <stdlib.h>
#include <string.h>

#include "aoizora/aoizora.h"
#include "cli_aoi.h"

static int usage(FILE *f) {
    fprintf(f,
            "usage: aoizora <command> [options]\n"
            "commands:\n"
            "  plan      choose mesh, sharding and device order; print the plan (--json for JSON)\n"
            "  explain   why the chosen placement wins: per-link loads vs the default order (--html F)\n"
            "  evidence  lower one sharding (--sharding dp=2,uly=4[,fsdp|fsdp_sp|fsdp_dp]) to evidence JSON (-o F)\n"
            "  price     price an evidence JSON (--evidence F) or XLA HLO text (--hlo F) on a topology\n"
            "common options: --model NAME (wan2.1-1.3b) --res 480p|720p|HxW (480p) --frames N (81)\n"
            "  --topology NAME|FILE.json (v5e-8) --training --batch N --top-k K (4)\n");
    return f == stderr ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc < 2) return usage(stderr);
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) return usage(stdout);
    aoi_opts o;
    zg_error err = {0};
    int rc = aoi_parse(argc - 1, argv + 1, &o, &err);
    if (rc == 2) return 0;  // help printed
    if (rc) {
        fprintf(stderr, "aoizora %s: %s\n", argv[1], err.msg);
        return zg_status_exit_code(err.status ? err.status : ZG_ERR_INVALID);
    }
    zg_status st;
    if (!strcmp(argv[1], "plan")) st = aoi_cmd_plan(&o, 0, &err);
    else if (!strcmp(argv[1], "explain")) st = aoi_cmd_plan(&o, 1, &err);
    else if (!strcmp(argv[1], "evidence")) st = aoi_cmd_evidence(&o, &err);
    else if (!strcmp(argv[1], "price")) st = aoi_cmd_price(&o, &err);
    else {
        fprintf(stderr, "aoizora: unknown command '%s' (plan, explain, evidence, price)\n", argv[1]);
        return 1;
    }
    if (st) {
        fprintf(stderr, "aoizora %s: %s\n", argv[1], err.msg[0] ? err.msg : zg_status_name(st));
        return zg_status_exit_code(st);
    }
    return 0;
}
