// test_cli_parser.c — the `zellige` CLI's shared option parser (tools/zellige/cli.c, compiled
// into this test): values reach their typed destinations; bad, missing, duplicate, unknown and
// out-of-range values fail with one message naming the option and the value; --help prints the
// table.
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../tools/zellige/cli.c"
#include "zgtest.h"

// main.c's registry is not linked here.
void zg_cli_register(const char *name, const char *summary, zg_cli_fn fn) {
    (void)name, (void)summary, (void)fn;
}

typedef struct vals {
    const char *model, *out, *hidden, *kind;
    int64_t secs;
    int64_t steps, load;
    int32_t reps;
    uint64_t seed;
    double share;
    float lr;
    int32_t json;
} vals;

static void defaults(vals *v) {
    memset(v, 0, sizeof *v);
    v->model = "tiny";
    v->steps = 3, v->load = 350000, v->reps = 6, v->seed = 1, v->share = 0.5, v->lr = 1e-3f;
}

// Parses the space-separated args (after the command name) into *v.
static cli_result parse(vals *v, const char *args, zg_error *e, int with_required) {
    static char buf[512];
    char *argv[32] = {"cmd"};
    int argc = 1;
    snprintf(buf, sizeof buf, "%s", args);
    for (char *t = strtok(buf, " "); t && argc < 32; t = strtok(NULL, " "))
        argv[argc++] = t;
    cli_opt opts[] = {
        CLI_OPT_MODEL(&v->model, "model (default tiny)"),
        CLI_INT_OPT("--steps", "N", &v->steps, 1, 100000, "steps to run (default 3)\nmore"),
        CLI_INT_OPT("--load", "N", &v->load, 1, INT64_MAX, "tokens per rank"),
        CLI_INT_OPT("--reps", "N", &v->reps, 1, 1000, "measured rounds"),
        CLI_OPT_SEED(&v->seed, "seed"),
        CLI_NUM_OPT("--video-share", "X", &v->share, 0, 1, "video share"),
        CLI_NUM_OPT("--lr", "X", &v->lr, 0, 1e3, "learning rate"),
        CLI_OPT_JSON(&v->json, "one JSON line"),
        CLI_OPT_OUT(&v->out, "output file"),
        CLI_OUT_OPT("--hidden", "X", &v->hidden, NULL),
        CLI_CHOICE_OPT("--kind", "K", &v->kind, "a|bb", "kind"),
        CLI_INT_CHOICE_OPT("--secs", "S", &v->secs, "10|15", "seconds"),
        CLI_OPT_END,
    };
    opts[8].required = with_required;
    cli_spec spec = {"cmd", "usage: cmd [options]\n", opts, "footer\n"};
    zg_error_clear(e);
    return cli_parse(&spec, argc, argv, e);
}

ZG_TEST(cli_parses_every_type) {
    vals v;
    defaults(&v);
    zg_error e;
    CHECK_EQ_INT(parse(&v, "", &e, 0), CLI_PARSED);
    CHECK_EQ_INT(v.steps, 3); // defaults stay
    CHECK_STR(v.model, "tiny");
    CHECK_EQ_INT(parse(&v,
                       "--model wan2.1-1.3b --steps 7 --load 1.5M --reps 1e1 --seed 9223372036854775807 "
                       "--video-share 0.25 --lr 0.5 --json --out x.json",
                       &e, 1),
                 CLI_PARSED);
    CHECK_STR(v.model, "wan2.1-1.3b");
    CHECK_EQ_INT(v.steps, 7);
    CHECK_EQ_INT(v.load, 1500000);
    CHECK_EQ_INT(v.reps, 10);
    CHECK(v.seed == (uint64_t)INT64_MAX); // a seed is 0..2^63-1 (negative seeds are refused)
    CHECK(v.share == 0.25 && v.lr == 0.5f && v.json == 1);
    CHECK_STR(v.out, "x.json");
    defaults(&v);
    CHECK_EQ_INT(parse(&v, "--load 9223372036854775807 --steps 100000", &e, 0), CLI_PARSED);
    CHECK(v.load == INT64_MAX && v.steps == 100000);
}

ZG_TEST(cli_rejects_bad_input_naming_option_and_value) {
    struct {
        const char *args, *needle;
    } bad[] = {
        {"--steps abc", "--steps: 'abc' is not an integer"},
        {"--steps 2.5", "--steps: '2.5' is not an integer"},
        {"--steps", "--steps needs a value"},
        {"--model", "--model needs a value"},
        {"--steps 0", "--steps: '0' is out of range (1..100000); give N: steps to run"},
        {"--steps 100001", "'100001' is out of range (1..100000)"},
        {"--load -5", "--load: '-5' is out of range (>= 1)"},
        {"--reps 5000000000", "--reps: '5000000000' is out of range (1..1000)"},
        {"--seed 99999999999999999999", "--seed: '99999999999999999999' does not fit"},
        {"--seed -1", "--seed: '-1' is out of range (>= 0)"},
        {"--load 1e30", "--load: '1e30' does not fit a 64-bit integer (range >= 1)"},
        {"--load 9223372036854775808", "--load: '9223372036854775808' does not fit"},
        {"--load 1.5", "--load: '1.5' is not an integer (range >= 1;"},
        {"--load inf", "--load: 'inf' is not an integer"},
        {"--load 0x10", "--load: '0x10' is not an integer"},
        {"--load 12Q", "--load: '12Q' is not an integer"},
        {"--reps 2e3", "--reps: '2e3' is out of range (1..1000)"},
        {"--video-share 1.5", "--video-share: '1.5' is out of range (0..1)"},
        {"--video-share nan", "--video-share: 'nan' is not a finite number"},
        {"--video-share -inf", "--video-share: '-inf' is not a finite number"},
        {"--lr 1e999", "--lr: '1e999' is not a finite number"},
        {"--model ", "--model needs a value"},
        {"--out --json", "--out needs a value, got the option '--json'"},
        {"--out /nonexistent-dir-zg/x.json", "--out: cannot write '/nonexistent-dir-zg/x.json': "
                                             "directory '/nonexistent-dir-zg' does not exist"},
        {"--out /tmp", "--out: '/tmp' is a directory"},
        {"--out /dev/null", "--out: '/dev/null' exists and is not a regular file"},
        {"--out x.json --hidden x.json", "--hidden: 'x.json' is also the --out file"},
        {"--kind c", "--kind: 'c' is not one of a, bb; give K: kind"},
        {"--secs 12", "--secs: '12' is not one of 10, 15; give S: seconds"},
        {"--secs ten", "--secs: 'ten' is not one of 10, 15"},
        {"--lr x", "--lr: 'x' is not a number"},
        {"--steps 2 --steps 3", "--steps is given twice ('2', then '3')"},
        {"--json --json", "--json is given twice (give it once)"},
        {"--bogus", "unknown option '--bogus'"},
        {"stray", "unexpected argument 'stray'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        vals v;
        defaults(&v);
        zg_error e;
        CHECK_MSG(parse(&v, bad[i].args, &e, 0) == CLI_BAD, "'%s' parsed", bad[i].args);
        CHECK_MSG(e.status == ZG_ERR_INVALID && strstr(e.msg, bad[i].needle),
                  "'%s': message '%s' lacks '%s'", bad[i].args, e.msg, bad[i].needle);
        CHECK(!strchr(e.msg, '\n'));
    }
    // a bad value leaves the destination as it was
    vals v;
    defaults(&v);
    zg_error e;
    CHECK_EQ_INT(parse(&v, "--reps 0", &e, 0), CLI_BAD);
    CHECK_EQ_INT(v.reps, 6);
    // required option
    CHECK_EQ_INT(parse(&v, "--steps 2", &e, 1), CLI_BAD);
    CHECK_MSG(strstr(e.msg, "--out FILE is required"), "%s", e.msg);
}

ZG_TEST(cli_help_prints_the_table) {
    vals v;
    defaults(&v);
    char path[] = "/tmp/zg_test_cliXXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    dup2(fd, STDOUT_FILENO);
    zg_error e;
    cli_result r = parse(&v, "--steps 0 --help", &e, 1); // help wins over bad values
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    char buf[2048] = {0};
    lseek(fd, 0, SEEK_SET);
    ssize_t got = read(fd, buf, sizeof buf - 1);
    close(fd);
    unlink(path);
    CHECK_EQ_INT(r, CLI_HELP_SHOWN);
    CHECK(got > 0);
    CHECK(!strncmp(buf, "usage: cmd [options]\n", 21));
    CHECK_MSG(strstr(buf, "\n  --steps N        steps to run (default 3)\n"
                          "                   more\n"),
              "%s", buf);
    CHECK(strstr(buf, "\n  --json           one JSON line\n"));
    CHECK(!strstr(buf, "--hidden"));
    CHECK(strstr(buf, "footer\n"));
}

ZG_TEST(cli_choices_and_int_value) {
    vals v;
    defaults(&v);
    zg_error e;
    CHECK_EQ_INT(parse(&v, "--kind bb --secs 15", &e, 0), CLI_PARSED);
    CHECK_STR(v.kind, "bb");
    CHECK_EQ_INT(v.secs, 15);
    CHECK_EQ_INT(parse(&v, "--kind b", &e, 0), CLI_BAD); // a prefix is not a choice
    // CLI_FLAG_VAL stores its value (it stored 1 whatever the value was: --no-act-ckpt was a
    // no-op)
    int32_t ckpt = 1;
    cli_opt fo[] = {CLI_FLAG_VAL("--no-ckpt", &ckpt, 0, "off"), CLI_OPT_END};
    cli_spec fs = {"cmd", "usage\n", fo, NULL};
    char a0[] = "cmd", a1[] = "--no-ckpt";
    char *fargv[] = {a0, a1};
    CHECK_EQ_INT(cli_parse(&fs, 2, fargv, &e), CLI_PARSED);
    CHECK_EQ_INT(ckpt, 0);
    int64_t n = 0;
    CHECK(cli_int_value("--n", "N", "nodes", "12K", 1, INT64_MAX, &n, &e) && n == 12000);
    CHECK(!cli_int_value("--n", "N", "nodes", "0", 1, INT64_MAX, &n, &e));
    CHECK_MSG(strstr(e.msg, "--n: '0' is out of range (>= 1); give N: nodes"), "%s", e.msg);
    CHECK(!cli_int_value("--n", "N", "nodes", "99999999999999999999", 1, 9, &n, &e));
    CHECK_MSG(strstr(e.msg, "does not fit a 64-bit integer (range 1..9)"), "%s", e.msg);
    CHECK(n == 12000); // unchanged on failure
    char *names[4];
    char list[] = "a,,b,c";
    CHECK_EQ_INT(cli_split_list(list, names, 4), 3);
    CHECK_STR(names[2], "c");
}

ZG_TEST_MAIN()
