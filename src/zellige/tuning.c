// tuning.c — the tuning table (tuning.h) as data: names, values, units, where and why, for
// `zellige plan --explain-tuning` and the Python package.
#include <stdio.h>

#include "zellige/tuning.h"
#include "zellige/zellige.h"

#define ZEL_TUNING_ROW_INT_(NAME, value, unit, where, why) {#NAME, (double)(value), unit, where, why, 1},
#define ZEL_TUNING_ROW_REAL_(NAME, value, unit, where, why) {#NAME, (value), unit, where, why, 0},
static const zg_zellige_tunable rows[] = {ZEL_TUNING_INT(ZEL_TUNING_ROW_INT_)
                                              ZEL_TUNING_REAL(ZEL_TUNING_ROW_REAL_)};

int32_t zg_zellige_tuning_count(void) { return (int32_t)(sizeof rows / sizeof rows[0]); }

const zg_zellige_tunable *zg_zellige_tuning_get(int32_t i) {
    return i >= 0 && i < zg_zellige_tuning_count() ? &rows[i] : NULL;
}

void zg_zellige_tuning_print(FILE *f) {
    fprintf(f, "zellige solver tuning (src/zellige/tuning.h; compile-time constants):\n");
    fprintf(f, "%-22s %12s  %-18s %-22s %s\n", "name", "value", "unit", "where", "why");
    for (int32_t i = 0; i < zg_zellige_tuning_count(); i++) {
        const zg_zellige_tunable *t = &rows[i];
        char v[32];
        if (t->integer) snprintf(v, sizeof v, "%.0f", t->value);
        else snprintf(v, sizeof v, "%g", t->value);
        fprintf(f, "%-22s %12s  %-18s %-22s %s\n", t->name, v, t->unit, t->where, t->why);
    }
}
