// zgtest.h — the tiny test harness every test program uses.
//
// A test program defines cases with ZG_TEST(name) { ... } and ends with ZG_TEST_MAIN().
// Each case prints "PASS name" or "FAIL name" plus the first failing check; the program
// exits non-zero if any case failed. scripts/run-tests.sh adds up PASS/FAIL lines.
#ifndef ZGTEST_H
#define ZGTEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*zgtest_fn)(int *failed);
struct zgtest_case {
    const char *name;
    zgtest_fn fn;
};
#define ZGTEST_MAX 512
static struct zgtest_case zgtest_cases[ZGTEST_MAX];
static int zgtest_ncases;

#define ZG_TEST(name)                                                                   \
    static void zgtest_##name(int *zg_failed_);                                         \
    __attribute__((constructor)) static void zgtest_reg_##name(void) {                 \
        if (zgtest_ncases < ZGTEST_MAX)                                                 \
            zgtest_cases[zgtest_ncases++] = (struct zgtest_case){#name, zgtest_##name}; \
    }                                                                                   \
    static void zgtest_##name(int *zg_failed_)

#define ZG_FAILF(...)                                                  \
    do {                                                               \
        if (!*zg_failed_) {                                            \
            fprintf(stderr, "  %s:%d: ", __FILE__, __LINE__);          \
            fprintf(stderr, __VA_ARGS__);                              \
            fprintf(stderr, "\n");                                     \
        }                                                              \
        *zg_failed_ = 1;                                               \
    } while (0)

// CHECK_MSG stops the case at the first failure (it returns from the case function) with the
// message; the other checks are CHECK_MSG with a message naming what failed.
#define CHECK_MSG(cond, ...)          \
    do {                              \
        if (!(cond)) {                \
            ZG_FAILF(__VA_ARGS__);    \
            return;                   \
        }                             \
    } while (0)
#define CHECK(cond) CHECK_MSG(cond, "CHECK(%s) failed", #cond)
#define CHECK_EQ_INT(a, b)                                                                         \
    do {                                                                                           \
        long long zg_a_ = (long long)(a), zg_b_ = (long long)(b);                                  \
        CHECK_MSG(zg_a_ == zg_b_, "%s == %s failed: %lld vs %lld", #a, #b, zg_a_, zg_b_);          \
    } while (0)
// |a-b| <= atol + rtol*|b|  (b is the reference)
#define CHECK_NEAR(a, b, atol, rtol)                                                               \
    do {                                                                                           \
        double zg_a_ = (double)(a), zg_b_ = (double)(b);                                           \
        CHECK_MSG(fabs(zg_a_ - zg_b_) <= (atol) + (rtol)*fabs(zg_b_),                              \
                  "%s ~ %s failed: %.17g vs %.17g", #a, #b, zg_a_, zg_b_);                         \
    } while (0)
#define CHECK_STR(a, b)                                                                            \
    do {                                                                                           \
        const char *zg_a_ = (a), *zg_b_ = (b);                                                     \
        CHECK_MSG(strcmp(zg_a_, zg_b_) == 0, "%s == %s failed: \"%s\" vs \"%s\"", #a, #b, zg_a_,   \
                  zg_b_);                                                                          \
    } while (0)
// status-returning library call must succeed; prints the error message otherwise
#define CHECK_OK(call, errp)                                                                       \
    do {                                                                                           \
        int zg_st_ = (int)(call);                                                                  \
        CHECK_MSG(zg_st_ == 0, "%s failed (status %d): %s", #call, zg_st_, (errp)->msg);           \
    } while (0)

// Runs case i if it is selected (no names on the command line, or its name among them):
// returns -1 when it was not selected, else 1 when it failed and 0 when it passed.
static inline int zgtest_run(int i, int argc, char **argv) {
    int want = argc < 2;
    for (int a = 1; a < argc; a++)
        if (strcmp(argv[a], zgtest_cases[i].name) == 0) want = 1;
    if (!want) return -1;
    int f = 0;
    zgtest_cases[i].fn(&f);
    return f;
}

// Runs every case, or only those named on the command line, printing PASS/FAIL a case:
// returns the number that failed.
static inline int zgtest_run_all(int argc, char **argv) {
    int failed = 0;
    for (int i = 0; i < zgtest_ncases; i++) {
        int f = zgtest_run(i, argc, argv);
        if (f < 0) continue;
        printf("%s %s\n", f ? "FAIL" : "PASS", zgtest_cases[i].name);
        fflush(stdout);
        failed += f;
    }
    return failed;
}

// ZG_TEST_MAIN runs every case, or only those named on the command line.
#define ZG_TEST_MAIN()                                                                  \
    int main(int argc, char **argv) {                                                   \
        return zgtest_run_all(argc, argv) ? 1 : 0;                                      \
    }

#endif
