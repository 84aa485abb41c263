// fuzz_input.h — what every libFuzzer target in fuzz/ shares: the entry point's prototype and
// the input as a NUL-terminated string.
#ifndef ZG_FUZZ_INPUT_H
#define ZG_FUZZ_INPUT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

// A malloc'ed NUL-terminated copy of the input (free it), or NULL when it is over 1 MiB (not
// worth a reader's time) or memory ran out.
static inline char *fuzz_text(const uint8_t *data, size_t size) {
    if (size > (1 << 20)) return NULL;
    char *text = malloc(size + 1);
    if (!text) return NULL;
    memcpy(text, data, size);
    text[size] = '\0';
    return text;
}

#endif
