// cli.c — the shared option parser of the `zellige` CLI (see cli.h) and cli_fail.
#include <ctype.h>
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

// The first help line up to " (default", for "give N: <what>" in errors.
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

// "; give N: <what>" (empty when the option has no help).
static void give_hint(const char *metavar, const char *help, char *buf, size_t sz) {
    char what[112];
    help_what(help, what, sizeof what);
    if (what[0])
        snprintf(buf, sz, "; give %s%s%s", metavar ? metavar : "", metavar ? ": " : "", what);
    else
        buf[0] = 0;
}

// "a|b|c" -> "a, b, c".
static void choices_list(const char *choices, char *buf, size_t sz) {
    size_t j = 0;
    for (const char *c = choices; *c && j + 3 < sz; c++) {
        if (*c == '|') buf[j++] = ',', buf[j++] = ' ';
        else buf[j++] = *c;
    }
    buf[j] = 0;
}

static int in_choices(const char *choices, const char *s) {
    size_t n = strlen(s);
    for (const char *c = choices; *c;) {
        size_t l = strcspn(c, "|");
        if (l == n && !strncmp(c, s, n)) return 1;
        c += l + (c[l] == '|');
    }
    return 0;
}

// A 64-bit integer: decimal (sign allowed; strtoll, so overflow is ERANGE), or a whole number
// written with a K/M/G suffix or an exponent ("350K", "1.5M", "1e6"). Returns INT_OK, INT_BAD
// (not an integer) or INT_BIG (a whole number outside 64 bits).
enum { INT_OK = 0, INT_BAD, INT_BIG };
static int parse_i64(const char *s, int64_t *out) {
    char *end = NULL;
    if (!*s || isspace((unsigned char)*s)) return INT_BAD;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end != s && !*end) {
        if (errno == ERANGE) return INT_BIG;
        *out = v;
        return INT_OK;
    }
    // hex floats, "inf", "nan" and "infinity" parse as doubles but are not integers
    if (strpbrk(s, "xXnNiI")) return INT_BAD;
    double mult = 0;
    errno = 0;
    double d = strtod(s, &end);
    if (end != s && !*end) {
        mult = 1;
    } else if (end != s && end[0] && !end[1]) {
        char c = end[0];
        mult = c == 'K' || c == 'k'   ? 1e3
               : c == 'M' || c == 'm' ? 1e6
               : c == 'G' || c == 'g' ? 1e9
                                      : 0;
    }
    if (!(mult > 0)) return INT_BAD;
    double v2 = d * mult;
    if (!isfinite(v2) || (errno == ERANGE && fabs(d) > 1)) return INT_BIG;
    if (v2 != floor(v2)) return INT_BAD;
    if (v2 >= 9.2233720368547758e18 || v2 < -9.2233720368547758e18) return INT_BIG;
    *out = (int64_t)v2;
    return INT_OK;
}

// A finite number (strtod; nan, inf and overflow are errors).
static int parse_f64(const char *key, const char *s, const char *hint, double *out,
                     zg_error *err) {
    char *end = NULL;
    errno = 0;
    double v = *s && !isspace((unsigned char)*s) ? strtod(s, &end) : 0;
    if (!end || end == s || *end) {
        zg_error_set(err, ZG_ERR_INVALID, "%s: '%s' is not a number%s", key, s, hint);
        return 0;
    }
    if (!isfinite(v) || (errno == ERANGE && fabs(v) > 1)) {
        zg_error_set(err, ZG_ERR_INVALID, "%s: '%s' is not a finite number%s", key, s, hint);
        return 0;
    }
    *out = v;
    return 1;
}

static void int_range(int64_t lo, int64_t hi, char *range, size_t sz) {
    if (hi == INT64_MAX || hi == INT32_MAX)
        snprintf(range, sz, ">= %lld", (long long)lo);
    else
        snprintf(range, sz, "%lld..%lld", (long long)lo, (long long)hi);
}

// The message for value s of o: not an integer, out of range, or too big for 64 bits.
static int out_of_range(const cli_opt *o, const char *s, const char *hint, zg_error *err);

static int int_error(const char *name, const char *s, int code, const char *range,
                     const char *hint, zg_error *err) {
    if (code == INT_BAD)
        zg_error_set(err, ZG_ERR_INVALID,
                     "%s: '%s' is not an integer (range %s; whole numbers: 12, 350K, 1.5M, 1e6)%s",
                     name, s, range, hint);
    else if (code == INT_BIG)
        zg_error_set(err, ZG_ERR_INVALID,
                     "%s: '%s' does not fit a 64-bit integer (range %s)%s", name, s, range, hint);
    else
        zg_error_set(err, ZG_ERR_INVALID, "%s: '%s' is out of range (%s)%s", name, s, range, hint);
    return 0;
}

static void opt_range(const cli_opt *o, char *range, size_t sz);

static int out_of_range(const cli_opt *o, const char *s, const char *hint, zg_error *err) {
    char range[96];
    opt_range(o, range, sizeof range);
    zg_error_set(err, ZG_ERR_INVALID, "%s: '%s' is out of range (%s)%s", o->name, s, range, hint);
    return 0;
}

static void opt_range(const cli_opt *o, char *range, size_t sz) {
    if (o->type == CLI_F64 || o->type == CLI_F32) {
        if (o->fmax == HUGE_VAL)
            snprintf(range, sz, ">= %g", o->fmin);
        else if (o->fmin == -HUGE_VAL)
            snprintf(range, sz, "<= %g", o->fmax);
        else
            snprintf(range, sz, "%g..%g", o->fmin, o->fmax);
    } else {
        int64_t lo = o->min, hi = o->max;
        if (o->type == CLI_I32)
            lo = lo < INT32_MIN ? INT32_MIN : lo, hi = hi > INT32_MAX ? INT32_MAX : hi;
        if (o->type == CLI_U64 && lo < 0) lo = 0;
        int_range(lo, hi, range, sz);
    }
}

int cli_int_value(const char *name, const char *metavar, const char *what, const char *s,
                  int64_t lo, int64_t hi, int64_t *out, zg_error *err) {
    char hint[160] = "", range[96];
    if (what && *what) snprintf(hint, sizeof hint, "; give %s: %s", metavar ? metavar : "", what);
    int64_t v = 0;
    int code = parse_i64(s, &v);
    if (code || v < lo || v > hi) {
        int_range(lo, hi, range, sizeof range);
        return int_error(name, s, code, range, hint, err);
    }
    *out = v;
    return 1;
}

// Stores value s of option o; 0 and err filled when it is malformed or out of range.
static int store(const cli_opt *o, const char *s, zg_error *err) {
    int64_t iv = 0;
    double fv = 0;
    int code = 0;
    char hint[160], list[160];
    give_hint(o->metavar, o->help, hint, sizeof hint);
    if (o->choices && o->type != CLI_FLAG && !in_choices(o->choices, s)) {
        choices_list(o->choices, list, sizeof list);
        zg_error_set(err, ZG_ERR_INVALID, "%s: '%s' is not one of %s%s", o->name, s, list, hint);
        return 0;
    }
    switch (o->type) {
    case CLI_FLAG: *(int32_t *)o->dst = (int32_t)o->min; return 1;
    case CLI_STR:
        if (!*s) {
            zg_error_set(err, ZG_ERR_INVALID, "%s: the value is empty ('')%s", o->name, hint);
            return 0;
        }
        *(const char **)o->dst = s;
        return 1;
    case CLI_I64:
    case CLI_I32:
    case CLI_U64:
        if ((code = parse_i64(s, &iv)) != INT_OK) {
            char range[96];
            opt_range(o, range, sizeof range);
            return int_error(o->name, s, code, range, hint, err);
        }
        if (iv < o->min || iv > o->max) return out_of_range(o, s, hint, err);
        if (o->type == CLI_I32 && (iv < INT32_MIN || iv > INT32_MAX))
            return out_of_range(o, s, hint, err);
        if (o->type == CLI_U64 && iv < 0) return out_of_range(o, s, hint, err);
        if (o->type == CLI_I64)
            *(int64_t *)o->dst = iv;
        else if (o->type == CLI_I32)
            *(int32_t *)o->dst = (int32_t)iv;
        else
            *(uint64_t *)o->dst = (uint64_t)iv;
        return 1;
    case CLI_F64:
    case CLI_F32:
        if (!parse_f64(o->name, s, hint, &fv, err)) return 0;
        if (!(fv >= o->fmin && fv <= o->fmax)) return out_of_range(o, s, hint, err);
        if (o->type == CLI_F32 && fabs(fv) > 3.4e38) return out_of_range(o, s, hint, err);
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

static int find_opt(const cli_spec *spec, int n_opts, const char *arg) {
    for (int k = 0; k < n_opts; k++)
        if (!strcmp(arg, spec->opts[k].name)) return k;
    return -1;
}

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
        int k = find_opt(spec, n_opts, argv[i]);
        if (k < 0) {
            if (argv[i][0] == '-')
                zg_error_set(err, ZG_ERR_INVALID,
                             "unknown option '%s' for `zellige %s` (see zellige %s --help)",
                             argv[i], spec->cmd, spec->cmd);
            else
                zg_error_set(err, ZG_ERR_INVALID,
                             "unexpected argument '%s' for `zellige %s`: every value follows "
                             "its option (see zellige %s --help)",
                             argv[i], spec->cmd, spec->cmd);
            return CLI_BAD;
        }
        const cli_opt *o = &spec->opts[k];
        const char *v = o->name;
        char hint[160];
        give_hint(o->metavar, o->help, hint, sizeof hint);
        if (o->type != CLI_FLAG) {
            if (i + 1 >= argc) {
                zg_error_set(err, ZG_ERR_INVALID, "%s needs a value%s", o->name, hint);
                return CLI_BAD;
            }
            if (find_opt(spec, n_opts, argv[i + 1]) >= 0) { // `--json --quiet`: not a file name
                zg_error_set(err, ZG_ERR_INVALID, "%s needs a value, got the option '%s'%s",
                             o->name, argv[i + 1], hint);
                return CLI_BAD;
            }
            v = argv[++i];
        }
        if (seen[k]) {
            if (o->type == CLI_FLAG)
                zg_error_set(err, ZG_ERR_INVALID, "%s is given twice (give it once)", o->name);
            else
                zg_error_set(err, ZG_ERR_INVALID,
                             "%s is given twice ('%s', then '%s'); give it once", o->name,
                             seen[k], v);
            return CLI_BAD;
        }
        seen[k] = v;
        if (!store(o, v, err)) return CLI_BAD;
    }
    for (int k = 0; k < n_opts; k++)
        if (spec->opts[k].required && !seen[k]) {
            char hint[160];
            give_hint(spec->opts[k].metavar, spec->opts[k].help, hint, sizeof hint);
            zg_error_set(err, ZG_ERR_INVALID, "%s %s is required%s", spec->opts[k].name,
                         spec->opts[k].metavar ? spec->opts[k].metavar : "", hint);
            return CLI_BAD;
        }
    // outputs: writable before any work starts, and no two naming one file
    for (int k = 0; k < n_opts; k++) {
        const cli_opt *o = &spec->opts[k];
        if (!o->output || !seen[k]) continue;
        for (int j = 0; j < k; j++)
            if (spec->opts[j].output && seen[j] && !strcmp(seen[j], seen[k])) {
                zg_error_set(err, ZG_ERR_INVALID,
                             "%s: '%s' is also the %s file; give each output its own path",
                             o->name, seen[k], spec->opts[j].name);
                return CLI_BAD;
            }
        if (zg_file_check_writable(seen[k], err)) {
            zg_error_prefix(err, "%s: ", o->name);
            err->status = ZG_ERR_INVALID; // a usage error, like every other one here
            return CLI_BAD;
        }
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
