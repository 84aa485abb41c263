// log.c — leveled logging to stderr. The level is process-wide (like ggml's log callback):
// it only changes what is printed, never a result.
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

static int zg_log_level_value = -1;  // -1: not read from ZG_LOG yet

static zg_log_level level_from_env(void) {
    const char *s = getenv("ZG_LOG");
    if (!s) return ZG_LOG_WARN;
    if (!strcmp(s, "error")) return ZG_LOG_ERROR;
    if (!strcmp(s, "info")) return ZG_LOG_INFO;
    if (!strcmp(s, "debug")) return ZG_LOG_DEBUG;
    return ZG_LOG_WARN;
}

void zg_log_set_level(zg_log_level lvl) { zg_log_level_value = (int)lvl; }

zg_log_level zg_log_get_level(void) {
    if (zg_log_level_value < 0) zg_log_level_value = (int)level_from_env();
    return (zg_log_level)zg_log_level_value;
}

void zg_log(zg_log_level lvl, const char *fmt, ...) {
    if (lvl > zg_log_get_level()) return;
    static const char *names[] = {"error", "warn", "info", "debug"};
    fprintf(stderr, "zellige %s: ", names[lvl]);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}
