// cli.h — subcommand registry and the shared option parser of the `zellige` CLI. Each cmd_*.c
// file registers its commands with ZG_CLI_COMMAND; main.c dispatches. A command returns the
// process exit code and prints one clear line on stderr on failure (see cli_fail).
//
// Options are declared once per command, in a table of cli_opt (name, value name, type,
// destination, range, help); cli_parse reads argv into the destinations and --help prints the
// same table. A handler is: declare the table over the library's options struct (filled with its
// defaults first), cli_parse, call the library, print, map the status to an exit code.
#ifndef ZG_CLI_H
#define ZG_CLI_H

#include <math.h>
#include <stdint.h>

#include "core/core.h"

typedef int (*zg_cli_fn)(int argc, char **argv);  // argv[0] is the command name

void zg_cli_register(const char *name, const char *summary, zg_cli_fn fn);

#define ZG_CLI_COMMAND(ident, name, summary, fn)                                   \
    __attribute__((constructor)) static void zg_cli_reg_##ident(void) {            \
        zg_cli_register(name, summary, fn);                                        \
    }

// Prints "zellige <cmd>: <message>" on stderr and returns the exit code for err->status.
int cli_fail(const char *cmd, const zg_error *err);
// The exit code of a collective run's status: 0, or (rank 0 only prints) cli_fail's code.
int cli_exit(const char *cmd, zg_status st, int root, const zg_error *err);
// A library progress hook drawing the zg_progress bar ctx (total as the library reports it).
void cli_progress(void *ctx, int64_t done, int64_t total);
int cli_is_help(const char *arg);

// ---- the shared option parser -----------------------------------------------------------------
typedef enum {
    CLI_FLAG = 0,  // no value; sets *(int32_t *)dst = min (1, or CLI_FLAG_VAL's value)
    CLI_STR,       // const char **dst = the argument (points into argv)
    CLI_I64,       // int64_t *dst, in [min, max]
    CLI_I32,       // int32_t *dst, in [min, max] (and int32 range)
    CLI_U64,       // uint64_t *dst, the 64-bit value given (seeds), in [min, max]
    CLI_F64,       // double *dst, in [fmin, fmax]
    CLI_F32,       // float *dst, in [fmin, fmax]
} cli_type;

typedef struct cli_opt {
    const char *name;     // "--steps"
    const char *metavar;  // "N" (NULL for flags)
    cli_type type;
    void *dst;
    int64_t min, max;     // integers: inclusive range
    double fmin, fmax;    // numbers: inclusive range (NaN is never in range)
    int required;         // 1: must be given
    const char *help;     // lines separated by '\n'; NULL: hidden from --help
    const char *choices;  // "a|b|c": the only values accepted (strings, or integers in range)
    int output;           // 1: a path the command writes (checked before any work starts)
} cli_opt;

// Integers are parsed as 64-bit (strtoll; decimal, or a whole number with a K/M/G suffix or an
// exponent: 350K, 1.5M, 1e6), overflow is an error, and the value is checked against the range
// before it is stored. Numbers must be finite (nan, inf and overflow are errors). The
// destination's C type picks the option type (a wrong pointer does not compile).
#define CLI_INT_ANY INT64_MIN, INT64_MAX
#define CLI_NUM_ANY -HUGE_VAL, HUGE_VAL
#define CLI_FLAG_OPT(name, dst, help) CLI_FLAG_VAL(name, dst, 1, help)
#define CLI_FLAG_VAL(name, dst, val, help) \
    {name, NULL, CLI_FLAG, _Generic((dst), int32_t *: (dst)), val, val, 0, 0, 0, help, NULL, 0}
#define CLI_STR_OPT(name, meta, dst, help) \
    {name, meta, CLI_STR, _Generic((dst), const char **: (dst)), 0, 0, 0, 0, 0, help, NULL, 0}
#define CLI_STR_REQUIRED(name, meta, dst, help) \
    {name, meta, CLI_STR, _Generic((dst), const char **: (dst)), 0, 0, 0, 0, 1, help, NULL, 0}
// A string that must be one of choices ("node|aligned|sliding").
#define CLI_CHOICE_OPT(name, meta, dst, choices, help) \
    {name, meta, CLI_STR, _Generic((dst), const char **: (dst)), 0, 0, 0, 0, 0, help, choices, 0}
// An integer that must be one of choices ("10|15").
#define CLI_INT_CHOICE_OPT(name, meta, dst, choices, help)                                  \
    {name, meta,                                                                             \
     _Generic((dst), int64_t *: CLI_I64, int32_t *: CLI_I32, uint64_t *: CLI_U64), (dst), \
     INT64_MIN, INT64_MAX, 0, 0, 0, help, choices, 0}
// A file the command writes: after parsing, its directory must exist and be writable and the
// path must not be a directory (zg_file_check_writable); two outputs may not name one file.
#define CLI_OUT_OPT(name, meta, dst, help) \
    {name, meta, CLI_STR, _Generic((dst), const char **: (dst)), 0, 0, 0, 0, 0, help, NULL, 1}
#define CLI_OUT_REQUIRED(name, meta, dst, help) \
    {name, meta, CLI_STR, _Generic((dst), const char **: (dst)), 0, 0, 0, 0, 1, help, NULL, 1}
#define CLI_INT_OPT(...) CLI_INT_OPT_(__VA_ARGS__)  // expands CLI_INT_ANY into two arguments
#define CLI_NUM_OPT(...) CLI_NUM_OPT_(__VA_ARGS__)
#define CLI_INT_OPT_(name, meta, dst, lo, hi, help)                                         \
    {name, meta,                                                                             \
     _Generic((dst), int64_t *: CLI_I64, int32_t *: CLI_I32, uint64_t *: CLI_U64), (dst), \
     lo, hi, 0, 0, 0, help, NULL, 0}
#define CLI_NUM_OPT_(name, meta, dst, lo, hi, help) \
    {name, meta, _Generic((dst), double *: CLI_F64, float *: CLI_F32), (dst), 0, 0, lo, hi, 0, help, NULL, 0}
// The common options, one spelling for every command (help texts name each command's default).
#define CLI_OPT_MODEL(dst, help) CLI_STR_OPT("--model", "M", dst, help)
#define CLI_OPT_CLUSTER(dst, help) CLI_STR_OPT("--cluster", "C", dst, help)
#define CLI_OPT_PROFILE(dst, help) CLI_STR_OPT("--profile", "FILE", dst, help)
#define CLI_OPT_POLICY(name, dst, help) CLI_STR_OPT(name, "LIST", dst, help)
#define CLI_OPT_BATCH(dst, help) CLI_STR_OPT("--batch", "FILE", dst, help)
#define CLI_OPT_SEED(dst, help) CLI_INT_OPT("--seed", "N", dst, 0, INT64_MAX, help)
#define CLI_OPT_JSON(dst, help) CLI_FLAG_OPT("--json", dst, help)
#define CLI_OPT_OUT(dst, help) CLI_OUT_OPT("--out", "FILE", dst, help)
#define CLI_OPT_THREADS(dst, help) CLI_INT_OPT("--threads", "N", dst, 0, 1024, help)
#define CLI_OPT_END {0}

typedef struct cli_spec {
    const char *cmd;     // "simulate" (error prefix, e.g. "bench attention")
    const char *header;  // usage line and description, printed before the options
    const cli_opt *opts; // ends with CLI_OPT_END
    const char *footer;  // printed after the options (may be NULL)
} cli_spec;

typedef enum { CLI_PARSED = 0, CLI_HELP_SHOWN, CLI_BAD } cli_result;

// Parses argv[1..argc-1] into the table's destinations. -h/--help anywhere prints the help
// (cli_help) on stdout and returns CLI_HELP_SHOWN. A missing or malformed value, a value out of
// range or not in the choices, an option given twice (one rule for every option, flags too), an
// unknown option or argument, a missing required option, or an output path that cannot be
// written returns CLI_BAD and fills err with one line naming the option, the value, what is
// accepted and what to do (nothing is printed). Nothing is written by the parser.
cli_result cli_parse(const cli_spec *spec, int argc, char **argv, zg_error *err);
// Prints the header, the option table (value names aligned, help lines wrapped as written) and
// the footer.
void cli_help(const cli_spec *spec, FILE *f);
// A footer for commands with --cluster: the accepted forms, GPUs and presets (from the tables).
const char *cli_cluster_footer(void);
// The exit code of a parse: 0 after help, cli_fail's code for CLI_BAD. For handlers:
//   cli_result pr = cli_parse(&spec, argc, argv, &err);
//   if (pr != CLI_PARSED) return cli_parse_exit(&spec, pr, &err);
int cli_parse_exit(const cli_spec *spec, cli_result r, const zg_error *err);
// The input files and names a command reads (NULL: not given). cli_check_inputs loads each
// once before any work: model (or model_default when the option is absent and a batch or a
// catalog needs one), cluster, profile table, batch (must hold a sequence) and catalog; the
// first bad one fails with its message prefixed by the option ("--batch: cannot open 'x.json':
// ..."). The work then loads them again (cheap next to it).
typedef struct cli_inputs {
    const char *model, *model_default, *cluster, *profile, *batch, *catalog;
} cli_inputs;
zg_status cli_check_inputs(const cli_inputs *in, zg_error *err);
// On stderr, as "zellige CMD: warning: WHAT: <zg_cost_table_unpriced's note>": a profile with
// pairs priced 0 s. Nothing when there are none. cli_warn_profile
// loads the profile at path first (silent if it does not load: cli_check_inputs reports that).
struct zg_cost_table;
void cli_warn_unpriced(const char *cmd, const char *what, const struct zg_cost_table *t);
void cli_warn_profile(const char *cmd, const char *path);
// Splits a comma list in place into at most max tokens; returns their count.
int cli_split_list(char *s, char **out, int max);

// Parses s as option name's integer value in [lo, hi] (as cli_parse does; what: the help's
// description for the message). For values cli_parse cannot type, e.g. --first-nodes N|ordinary.
int cli_int_value(const char *name, const char *metavar, const char *what, const char *s,
                  int64_t lo, int64_t hi, int64_t *out, zg_error *err);

#endif
