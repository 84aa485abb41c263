// bench_util.h — what every benchmark shares: its error exit.
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include <stdio.h>

#include "core/core.h"

// Prints "prog: <error>" to stderr; returns 1 (a bench's exit status on an error).
static inline int zb_fail(const char *prog, const zg_error *err) {
    fprintf(stderr, "%s: %s\n", prog, err->msg);
    return 1;
}

#endif
