// cli_cluster.c — the help footer of commands that take --cluster: the accepted forms, GPUs and
// presets, generated from the device and preset tables (src/topo/cluster.c).
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "topo/topo.h"

const char *cli_cluster_footer(void) {
    static char *text;  // built once, kept for the process (help is printed once)
    if (text) return text;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    if (!f) return "";
    fputc('\n', f);
    zg_cluster_help_print(f, "");
    if (fclose(f) || !text) return "";
    return text;
}
