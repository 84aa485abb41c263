// cli.c — the shared option parser of the `zellige` CLI (see cli.h) and cli_fail.
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_fail(const char *cmd, const zg_error *err) {
    fprintf(stderr, "zellige %s: %s\n", cmd, err->msg[0] ? err->msg : zg_status_name(err->status));
    return zg_status_exit_code(err->status ? err->status : ZG_ERR_INVALID);
}

int cli_exit(const char *cmd, zg_status st, int root, const zg_error *err) {
    if (!st) return 0;
    return root ? cli_fail(cmd, err) : zg_status_exit_code(st);
}

void cli_progress(void *ctx, int64_t done, int64_t total) {
    zg_progress *p = ctx;
    p->total = total;
    zg_progress_update(p, done);
}

int cli_is_help(const char *arg) {
    return !strcmp(arg, "-h") || !strcmp(arg, "--help");
}

int cli_split_list(char *s, char **out, int max) {
    int n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(s, ",", &save); tok && n < max; tok = strtok_r(NULL, ",", &save))
        out[n++] = tok;
    return n;
}

// ---- values -----------------------------------------------------------------------------------

// A 64-bit integer: decimal (sign allowed), or a count with a K/M/G suffix ("350K", "1.5M")
// whose value is a whole number. 0 and err filled when s is neither or does not fit.
static int parse_i64(const char *key, const char *s, int64_t *out, zg_error *err) {
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end != s && !*end) {
        if (errno == ERANGE) {
            zg_error_set(err, ZG_ERR_INVALID, "%s: '%s' does not fit a 64-bit integer", key, s);
            return 0;
        }
        *out = v;
        return 1;
    }
    double d = strtod(s, &end), mult = 1;
    if (end != s && end[0] && !end[1]) {
        char c = end[0];
        mult = c == 'K' || c == 'k'   ? 1e3
               : c == 'M' || c == 'm' ? 1e6
               : c == 'G' || c == 'g' ? 1e9
                                      : 0;
    } else if (end == s || *end) {
        mult = 0;
    }
    double v2 = d * mult;
    if (!(mult > 0) || !(v2 > 0) || v2 != floor(v2) || v2 > 9.2e18) {
        zg_error_set(err, ZG_ERR_INVALID, "%s: '%s' is not an integer", key, s);
        return 0;
    }
    *out = (int64_t)v2;
    return 1;
}

static int parse_f64(const char *key, const char *s, double *out, zg_error *err) {
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s || *end) {
        zg_error_set(err, ZG_ERR_INVALID, "%s: '%s' is not a number", key, s);
        return 0;
    }
    *out = v;
    return 1;
}

// The first help line up to " (default", for "give N: <what>" in range errors.
static void help_what(const char *help, char *buf, size_t sz) {
    buf[0] = 0;
    if (!help) return;
    size_t n = strcspn(help, "\n");
    const char *d = strstr(help, " (default");
    if (d && (size_t)(d - help) < n) n = (size_t)(d - help);
    if (n >= sz) n = sz - 1;
    memcpy(buf, help, n);
    buf[n] = 0;
}

static int out_of_range(const cli_opt *o, const char *s, zg_error *err) {
    char what[96], range[96];
    help_what(o->help, what, sizeof what);
    if (o->type == CLI_F64 || o->type == CLI_F32) {
        if (o->fmax == HUGE_VAL)
            snprintf(range, sizeof range, ">= %g", o->fmin);
        else if (o->fmin == -HUGE_VAL)
            snprintf(range, sizeof range, "<= %g", o->fmax);
        else
            snprintf(range, sizeof range, "%g..%g", o->fmin, o->fmax);
    } else {
        int64_t lo = o->min, hi = o->max;
        if (o->type == CLI_I32)
            lo = lo < INT32_MIN ? INT32_MIN : lo, hi = hi > INT32_MAX ? INT32_MAX : hi;
        if (hi == INT64_MAX || (o->type == CLI_I32 && hi == INT32_MAX))
            snprintf(range, sizeof range, ">= %lld", (long long)lo);
        else
            snprintf(range, sizeof range, "%lld..%lld", (long long)lo, (long long)hi);
    }
    zg_error_set(err, ZG_ERR_INVALID, "%s: '%s' is out of range (%s)%s%s%s%s", o->name, s, range,
                 what[0] ? "; give " : "", what[0] && o->metavar ? o->metavar : "",
                 what[0] && o->metavar ? ": " : "", what);
    return 0;
}

// Stores value s of option o; 0 and err filled when it is malformed or out of range.
static int store(const cli_opt *o, const char *s, zg_error *err) {
    int64_t iv = 0;
    double fv = 0;
    switch (o->type) {
    case CLI_FLAG: *(int32_t *)o->dst = 1; return 1;
    case CLI_STR: *(const char **)o->dst = s; return 1;
    case CLI_I64:
    case CLI_I32:
    case CLI_U64:
        if (!parse_i64(o->name, s, &iv, err)) return 0;
        if (iv < o->min || iv > o->max) return out_of_range(o, s, err);
        if (o->type == CLI_I32 && (iv < INT32_MIN || iv > INT32_MAX))
            return out_of_range(o, s, err);
        if (o->type == CLI_I64)
            *(int64_t *)o->dst = iv;
        else if (o->type == CLI_I32)
            *(int32_t *)o->dst = (int32_t)iv;
        else
            *(uint64_t *)o->dst = (uint64_t)iv;
        return 1;
    case CLI_F64:
    case CLI_F32:
        if (!parse_f64(o->name, s, &fv, err)) return 0;
        if (!(fv >= o->fmin && fv <= o->fmax)) return out_of_range(o, s, err);
        if (o->type == CLI_F64)
            *(double *)o->dst = fv;
        else
            *(float *)o->dst = (float)fv;
        return 1;
    }
    return 0;
}

// ---- the table parser ---------------------------------------------------------------------------

#define CLI_MAX_OPTS 64

cli_result cli_parse(const cli_spec *spec, int argc, char **argv, zg_error *err) {
    const char *seen[CLI_MAX_OPTS] = {0}; // the value (or the flag's name) each option got
    int n_opts = 0;
    while (spec->opts[n_opts].name)
        n_opts++;
    if (n_opts > CLI_MAX_OPTS) {
        zg_error_set(err, ZG_ERR_INTERNAL, "%s declares %d options (at most %d)", spec->cmd, n_opts,
                     CLI_MAX_OPTS);
        return CLI_BAD;
    }
    for (int i = 1; i < argc; i++)
        if (cli_is_help(argv[i])) {
            cli_help(spec, stdout);
            return CLI_HELP_SHOWN;
        }
    for (int i = 1; i < argc; i++) {
        int k = 0;
        while (k < n_opts && strcmp(argv[i], spec->opts[k].name))
            k++;
        if (k == n_opts) {
            zg_error_set(err, ZG_ERR_INVALID, "unknown option '%s' (see --help)", argv[i]);
            return CLI_BAD;
        }
        const cli_opt *o = &spec->opts[k];
        const char *v = o->name;
        if (o->type != CLI_FLAG) {
            if (i + 1 >= argc) {
                zg_error_set(err, ZG_ERR_INVALID, "%s needs a value", o->name);
                return CLI_BAD;
            }
            v = argv[++i];
        }
        if (seen[k]) {
            if (o->type == CLI_FLAG)
                zg_error_set(err, ZG_ERR_INVALID, "%s is given twice", o->name);
            else
                zg_error_set(err, ZG_ERR_INVALID, "%s is given twice ('%s', then '%s')", o->name,
                             seen[k], v);
            return CLI_BAD;
        }
        seen[k] = v;
        if (!store(o, v, err)) return CLI_BAD;
    }
    for (int k = 0; k < n_opts; k++)
        if (spec->opts[k].required && !seen[k]) {
            zg_error_set(err, ZG_ERR_INVALID, "%s %s is required", spec->opts[k].name,
                         spec->opts[k].metavar ? spec->opts[k].metavar : "");
            return CLI_BAD;
        }
    return CLI_PARSED;
}

int cli_parse_exit(const cli_spec *spec, cli_result r, const zg_error *err) {
    return r == CLI_HELP_SHOWN ? 0 : cli_fail(spec->cmd, err);
}

void cli_help(const cli_spec *spec, FILE *f) {
    if (spec->header) fputs(spec->header, f);
    int w = 0;
    for (const cli_opt *o = spec->opts; o->name; o++) {
        if (!o->help) continue;
        int l = (int)strlen(o->name) + (o->metavar ? 1 + (int)strlen(o->metavar) : 0);
        if (l > w) w = l;
    }
    for (const cli_opt *o = spec->opts; o->name; o++) {
        if (!o->help) continue;
        char left[128];
        snprintf(left, sizeof left, "%s%s%s", o->name, o->metavar ? " " : "",
                 o->metavar ? o->metavar : "");
        const char *h = o->help;
        int first = 1;
        do {
            size_t n = strcspn(h, "\n");
            fprintf(f, "  %-*s  %.*s\n", w, first ? left : "", (int)n, h);
            first = 0;
            h += n;
        } while (*h && *++h);
    }
    if (spec->footer) fputs(spec->footer, f);
}

// ---- single-option helpers ----------------------------------------------------------------------

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
    if (s && !parse_i64(key, s, out, err)) *bad = 1;
    return 1;
}

int cli_opt_num(int argc, char **argv, int *i, const char *key, double *out, zg_error *err,
                int *bad) {
    const char *s = NULL;
    if (!cli_opt_str(argc, argv, i, key, &s, err, bad)) return 0;
    if (s && !parse_f64(key, s, out, err)) *bad = 1;
    return 1;
}
