// cli.h — subcommand registry for the `zellige` CLI. Each cmd_*.c file registers its commands
// with ZG_CLI_COMMAND; main.c dispatches. A command returns the process exit code and prints
// one clear line on stderr on failure (see cli_fail).
#ifndef ZG_CLI_H
#define ZG_CLI_H

#include "core/core.h"

typedef int (*zg_cli_fn)(int argc, char **argv);  // argv[0] is the command name

void zg_cli_register(const char *name, const char *summary, zg_cli_fn fn);

#define ZG_CLI_COMMAND(ident, name, summary, fn)                                   \
    __attribute__((constructor)) static void zg_cli_reg_##ident(void) {            \
        zg_cli_register(name, summary, fn);                                        \
    }

// Prints "zellige <cmd>: <message>" on stderr and returns the exit code for err->status.
int cli_fail(const char *cmd, const zg_error *err);
// Option helpers: `--key value` pairs. Each returns 1 when argv[*i] is `key` (and consumes its
// value), 0 otherwise. A missing or malformed value sets *bad = 1 and fills err (nothing is
// printed: the command reports err once, through cli_fail).
int cli_opt_str(int argc, char **argv, int *i, const char *key, const char **out, zg_error *err,
                int *bad);
int cli_opt_int(int argc, char **argv, int *i, const char *key, int64_t *out, zg_error *err,
                int *bad);
int cli_opt_num(int argc, char **argv, int *i, const char *key, double *out, zg_error *err,
                int *bad);
int cli_is_help(const char *arg);

#endif
