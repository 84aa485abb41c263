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

int cli_fail(const char *cmd, const zg_error *err) {
    fprintf(stderr, "zellige %s: %s\n", cmd, err->msg[0] ? err->msg : zg_status_name(err->status));
    return zg_status_exit_code(err->status ? err->status : ZG_ERR_INVALID);
}

int cli_is_help(const char *arg) { return !strcmp(arg, "-h") || !strcmp(arg, "--help"); }

int cli_opt_str(int argc, char **argv, int *i, const char *key, const char **out, zg_error *err,
                int *bad) {
    if (strcmp(argv[*i], key) != 0) return 0;
    if (*i + 1 >= argc) {
        zg_error_set(err, ZG_ERR_INVALID, "%s needs a value", key);
        *bad = 1;
        return 1;
    }
    *out = argv[++*i];
    return 1;
}

int cli_opt_int(int argc, char **argv, int *i, const char *key, int64_t *out, zg_error *err,
                int *bad) {
    const char *s = NULL;
    if (!cli_opt_str(argc, argv, i, key, &s, err, bad)) return 0;
    if (!s) return 1;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end) {
        int64_t c = zg_parse_count(s);  // allow 350K
        if (c < 0) {
            *bad = 1;
            zg_error_set(err, ZG_ERR_INVALID, "%s: '%s' is not an integer", key, s);
            return 1;
        }
        v = c;
    }
    *out = v;
    return 1;
}

int cli_opt_num(int argc, char **argv, int *i, const char *key, double *out, zg_error *err,
                int *bad) {
    const char *s = NULL;
    if (!cli_opt_str(argc, argv, i, key, &s, err, bad)) return 0;
    if (!s) return 1;
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s || *end) {
        *bad = 1;
        zg_error_set(err, ZG_ERR_INVALID, "%s: '%s' is not a number", key, s);
        return 1;
    }
    *out = v;
    return 1;
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
    fprintf(stderr, "zellige: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
