// core — errors, logging, RNG, timers, JSON I/O, atomic files, progress bar, arena, hash map
// and memo.
// No dependencies beyond libc and cJSON. Every other module builds on this one.
//
// May include: nothing of this tree (libc, cJSON).
#ifndef ZG_CORE_H
#define ZG_CORE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cJSON.h>  // defines: cJSON (the JSON tree type used by every reader/writer)

#ifdef __cplusplus
extern "C" {
#endif

// ---------------------------------------------------------------------------------------------
// Errors: every fallible library call returns a zg_status and, when err != NULL, fills
// err->msg with one line that names the bad value and says what to do. The library never exits.

typedef enum {
    ZG_OK = 0,
    ZG_ERR_INVALID,      // bad argument or input value
    ZG_ERR_IO,           // file could not be read or written
    ZG_ERR_PARSE,        // malformed JSON / HLO / spec string
    ZG_ERR_INFEASIBLE,   // no plan exists under the constraints (e.g. memory cap)
    ZG_ERR_NOMEM,        // allocation failed
    ZG_ERR_UNSUPPORTED,  // valid but not implemented / not built in
    ZG_ERR_COMM,         // communication backend failure
    ZG_ERR_TIMEOUT,      // a time limit ran out before a result
    ZG_ERR_INTERNAL,     // a bug: an invariant did not hold
} zg_status;

typedef struct zg_error {
    zg_status status;
    char msg[1024];
} zg_error;

// Sets err (if non-NULL) and returns st, so callers can write `return zg_error_set(...)`.
zg_status zg_error_set(zg_error *err, zg_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
// Prefixes the existing message with context ("reading plan.json: " + old message).
zg_status zg_error_prefix(zg_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void zg_error_clear(zg_error *err);
const char *zg_status_name(zg_status st);

// Range checks for library options, one message per option: "NAME is V, must be LO..HI".
// NAME is the option as its user knows it (e.g. "--reps"). NaN fails the double check.
zg_status zg_check_i64(const char *name, int64_t v, int64_t lo, int64_t hi, zg_error *err);
zg_status zg_check_f64(const char *name, double v, double lo, double hi, zg_error *err);

// Process exit code a CLI should use for a status (2 bad input, 3 infeasible, 4 I/O, 70 internal).
int zg_status_exit_code(zg_status st);
// The CLIs' exit status when they wrote a plan of a baseline that ignores memory and that plan
// is over the memory cap (zg_plan.over_cap; docs/planners.md): not a failure to plan, not success.
#define ZG_EXIT_OVER_CAP 5

// Allocation helpers that fill err on failure (nmemb*size overflow checked).
void *zg_calloc(size_t nmemb, size_t size, zg_error *err);
void *zg_realloc_array(void *ptr, size_t nmemb, size_t size, zg_error *err);
// Room for one more element in a growing array of `size`-byte elements holding n of *cap: when
// n == *cap, doubles *cap (from `first` when 0) and reallocates. Returns the array (ptr when it
// had room), or NULL with err filled and ptr and *cap untouched.
void *zg_grow_array(void *ptr, int32_t n, int32_t *cap, int32_t first, size_t size, zg_error *err);

// ---------------------------------------------------------------------------------------------
// Logging: level from ZG_LOG (error|warn|info|debug), default warn; messages go to stderr.

typedef enum { ZG_LOG_ERROR = 0, ZG_LOG_WARN, ZG_LOG_INFO, ZG_LOG_DEBUG } zg_log_level;
void zg_log_set_level(zg_log_level lvl);
zg_log_level zg_log_get_level(void);
void zg_log(zg_log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// ---------------------------------------------------------------------------------------------
// RNG: xoshiro256** seeded through splitmix64. Deterministic across platforms.

typedef struct zg_rng {
    uint64_t s[4];
} zg_rng;
void zg_rng_init(zg_rng *rng, uint64_t seed);
uint64_t zg_rng_next(zg_rng *rng);
double zg_rng_uniform(zg_rng *rng);                         // [0, 1)
double zg_rng_range(zg_rng *rng, double lo, double hi);     // [lo, hi)
int64_t zg_rng_int(zg_rng *rng, int64_t lo, int64_t hi);    // [lo, hi] inclusive, unbiased
double zg_rng_normal(zg_rng *rng);                          // N(0,1), Box-Muller
// Derives an independent stream (e.g. per rank / per step) from a seed and an index.
uint64_t zg_rng_derive(uint64_t seed, uint64_t index);

// ---------------------------------------------------------------------------------------------
// Time

double zg_time_now(void);  // monotonic seconds

// ---------------------------------------------------------------------------------------------
// Files: whole-file read; atomic write (temp file in the same folder, fsync, rename) so a
// failed run never leaves a partial output.

zg_status zg_file_read(const char *path, char **data, size_t *len, zg_error *err);
zg_status zg_file_write_atomic(const char *path, const void *data, size_t len, zg_error *err);
// zg_file_write_atomic in two steps, for several outputs that are all-or-nothing: stage writes
// the temp file beside path (*tmp: its name, to hand to commit or discard); commit renames it
// into place (and frees *tmp); discard removes it (an existing file at path stays untouched).
zg_status zg_file_stage(const char *path, const void *data, size_t len, char **tmp,
                        zg_error *err);
zg_status zg_file_commit(char *tmp, const char *path, zg_error *err);
void zg_file_discard(char *tmp);
// Checks, before any work, that zg_file_write_atomic(path) can succeed: path is not empty, does
// not end in '/', is not an existing directory or other non-regular file, and its directory
// exists, is a directory and is writable (the temp file goes there). One line naming the path,
// what is wrong and what to do.
zg_status zg_file_check_writable(const char *path, zg_error *err);

// ---------------------------------------------------------------------------------------------
// JSON (cJSON underneath). Readers report the file, the key and the bad value.

zg_status zg_json_parse(const char *text, const char *what, cJSON **out, zg_error *err);
zg_status zg_json_read_file(const char *path, cJSON **out, zg_error *err);
// Writes compactly (pretty=0) or indented; atomic.
zg_status zg_json_write_file(const char *path, const cJSON *json, int pretty, zg_error *err);
// For loaders of a preset name or a JSON file (the CLIs' --model/--cluster/... values): a
// name_or_path ending in ".json" is read and handed to load as j (errors prefixed with the
// path); anything else is handed to load as a name with j NULL. With `what` set, a NULL or
// empty name_or_path is an error naming the option (--what).
typedef zg_status (*zg_named_fn)(const char *name, const cJSON *j, void *out, zg_error *err);
// Reads the JSON file at path and hands it to load (as j, with name = path); errors from load
// are prefixed with the path.
zg_status zg_json_load_file(const char *path, zg_named_fn load, void *out, zg_error *err);
zg_status zg_json_load_named(const char *name_or_path, const char *what, zg_named_fn load,
                             void *out, zg_error *err);

// Typed getters. `ctx` names the object in messages (e.g. "sequence 3"). When the key is
// absent: required -> error; optional -> *out keeps its default and ZG_OK is returned.
// Fails naming the first key of obj that is not in known (NULL-terminated) and listing them:
// a misspelt key ("n_head") would otherwise be ignored silently.
zg_status zg_json_check_keys(const cJSON *obj, const char *const *known, const char *ctx,
                             zg_error *err);
zg_status zg_json_get_int(const cJSON *obj, const char *key, int required, int64_t *out,
                          const char *ctx, zg_error *err);
zg_status zg_json_get_num(const cJSON *obj, const char *key, int required, double *out,
                          const char *ctx, zg_error *err);
zg_status zg_json_get_str(const cJSON *obj, const char *key, int required, char *out,
                          size_t outsz, const char *ctx, zg_error *err);

// ---------------------------------------------------------------------------------------------
// Progress bar on stderr, drawn only when stderr is a terminal (or ZG_PROGRESS=1).

typedef struct zg_progress {
    const char *label;
    int64_t total;
    int64_t done;
    double start;
    double last_draw;
    int enabled;
} zg_progress;
void zg_progress_init(zg_progress *p, const char *label, int64_t total);
void zg_progress_update(zg_progress *p, int64_t done);
void zg_progress_finish(zg_progress *p);

// ---------------------------------------------------------------------------------------------
// Arena: bump allocator for per-call scratch (planners); one free for everything.

typedef struct zg_arena_block zg_arena_block;
typedef struct zg_arena {
    zg_arena_block *head;
    size_t block_size;
    size_t used_total;
} zg_arena;
void zg_arena_init(zg_arena *a, size_t block_size);
void *zg_arena_alloc(zg_arena *a, size_t size);  // 16-byte aligned, zeroed; NULL on OOM
void *zg_arena_dup(zg_arena *a, const void *src, size_t size);  // a copy of src (as above)
void zg_arena_reset(zg_arena *a);                // keeps the first block
void zg_arena_free(zg_arena *a);

// ---------------------------------------------------------------------------------------------
// Small helpers

// Parses a positive integer with an optional K/M suffix ("350K" -> 350000). -1 on error.
int64_t zg_parse_count(const char *s);
// Formats bytes as "12.3 GiB" into buf.
const char *zg_fmt_bytes(double bytes, char *buf, size_t bufsz);
// Stable sort (merge sort) of n elements of `size` bytes; cmp like qsort's.
zg_status zg_sort_stable(void *base, size_t n, size_t size,
                         int (*cmp)(const void *, const void *, void *), void *ctx,
                         zg_error *err);

// ---- hash map and memo (hmap.c) --------------------------------------------------------------
// The one hash table of the tree. zg_hmap is an open-addressing index from 64-bit hashes to
// entry numbers 0..n-1: the caller keeps the entries (in its own arrays) and says how a key is
// compared with an entry. zg_memo is a cache of values built on it, for results kept across
// calls: a byte budget, least recently used eviction between builds, and values that may be in
// use when the memo is reset (retired, freed at the next build).

// Key hashing: integers a word at a time (a multiply and a shift per word), then bytes (FNV-1a).
uint64_t zg_hash_words(uint64_t h, const int64_t *w, size_t n);
uint64_t zg_hash_bytes(uint64_t h, const void *p, size_t n);
#define ZG_HASH_SEED 1469598103934665603ULL

typedef struct zg_hmap {
    int64_t n;         // entries indexed: 0..n-1
    int64_t cap;       // room in hash[]
    uint64_t *hash;    // hash of each entry
    int64_t n_slots;   // power of two, >= 2 n + 2
    int64_t *slot;     // entry number, -1 empty
} zg_hmap;
// Compares a key with entry `entry`: 1 when they are equal.
typedef int (*zg_hmap_eq)(int64_t entry, const void *key, const void *ctx);

void zg_hmap_init(zg_hmap *m);
void zg_hmap_free(zg_hmap *m);
void zg_hmap_clear(zg_hmap *m);  // no entries; keeps its memory
// The entry whose key equals `key` (hash h), or -1.
int64_t zg_hmap_find(const zg_hmap *m, uint64_t h, zg_hmap_eq eq, const void *key,
                     const void *ctx);
// Adds entry number m->n with hash h; returns it, or -1 (err set, m unchanged) out of memory.
int64_t zg_hmap_add(zg_hmap *m, uint64_t h, zg_error *err);
// Keeps the entries keep[0..k) (old numbers, any order), renumbered 0..k-1 in that order. On
// failure (out of memory) m is unchanged.
zg_status zg_hmap_keep(zg_hmap *m, const int64_t *keep, int64_t k, zg_error *err);

typedef struct zg_memo {
    zg_hmap index;
    void **val;            // index.n values (room for val_cap)
    uint64_t *used;        // the build that last used each value
    size_t *bytes;         // each value's size, as the caller counts it
    int64_t val_cap;
    size_t total, budget;  // bytes held; the most kept across builds
    uint64_t stamp;        // the current build
    void (*free_val)(void *);
    void **retired;        // reset during a build while in use: freed at the next build
    int64_t n_retired, cap_retired;
    int64_t hits, misses, resets, evictions;  // counted by the caller (hits, misses) and here
} zg_memo;

void zg_memo_init(zg_memo *m, size_t budget, void (*free_val)(void *));
void zg_memo_free(zg_memo *m);
// Frees every value (not in use by anyone) and counts a reset.
void zg_memo_clear(zg_memo *m);
// Forgets every value now and frees them at the next zg_memo_begin (they may be in use by the
// current build); counts a reset.
zg_status zg_memo_retire_all(zg_memo *m, zg_error *err);
// Starts a build: frees retired values and, over the budget, drops the least recently used
// values (all from earlier builds) down to 3/4 of it.
void zg_memo_begin(zg_memo *m);
// The value for key (hash h), marked used by this build; NULL when absent.
void *zg_memo_find(zg_memo *m, uint64_t h, zg_hmap_eq eq, const void *key, const void *ctx);
// Adds val (bytes of it) under hash h, used by this build. On failure the memo is unchanged and
// the caller still owns val.
zg_status zg_memo_add(zg_memo *m, uint64_t h, void *val, size_t bytes, zg_error *err);
static inline int64_t zg_memo_count(const zg_memo *m) { return m->index.n; }
typedef struct zg_memo_stats {
    int64_t hits, misses;  // lookups over all builds (as the owner counts them)
    int64_t resets;        // whole-memo resets (clear, retire_all)
    int64_t evictions;     // values dropped for the budget
    int64_t n_entries;
    size_t bytes;
} zg_memo_stats;
zg_memo_stats zg_memo_get_stats(const zg_memo *m);  // m NULL: all zero

#ifdef __cplusplus
}
#endif
#endif
