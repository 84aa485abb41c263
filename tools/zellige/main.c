// main.c — `zellige` command-line entry: dispatches to registered subcommands.
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define ZG_CLI_MAX 64
static struct {
    const char *name, *summary;
    zg_cli_fn fn;
} commands[ZG_CLI_MAX];
static int n_commands;

void zg_cli_register(const char *name, const char *summary, zg_cli_fn fn) {
    if (n_commands < ZG_CLI_MAX) {
        commands[n_commands].name = name;
        commands[n_commands].summary = summary;
        commands[n_commands].fn = fn;
        n_commands++;
    }
}

static void usage(FILE *f) {
    fprintf(f, "usage: zellige <command> [options]   (zellige <command> --help for details)\n\n"
               "commands:\n");
    for (int i = 0; i < n_commands; i++)
        fprintf(f, "  %-14s %s\n", commands[i].name, commands[i].summary);
}

int main(int argc, char **argv) {
    if (argc < 2 || cli_is_help(argv[1]) || !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (int i = 0; i < n_commands; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "zellige: unknown command '%s'; give one of", argv[1]);
    for (int i = 0; i < n_commands; i++) fprintf(stderr, "%s %s", i ? "," : "", commands[i].name);
    fprintf(stderr, " (see zellige --help)\n");
    return 2;
}
