// test_core.c — errors, RNG determinism and ranges, JSON getters, atomic files, stable sort.
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "zgtest.h"

ZG_TEST(error_set_and_prefix) {
    zg_error e;
    zg_error_clear(&e);
    CHECK(zg_error_set(&e, ZG_ERR_INVALID, "sequence %d bad", 17) == ZG_ERR_INVALID);
    CHECK_STR(e.msg, "sequence 17 bad");
    zg_error_prefix(&e, "reading %s: ", "b.json");
    CHECK_STR(e.msg, "reading b.json: sequence 17 bad");
    CHECK(zg_error_set(NULL, ZG_ERR_IO, "x") == ZG_ERR_IO);
}

ZG_TEST(rng_deterministic_and_in_range) {
    zg_rng a, b;
    zg_rng_init(&a, 42);
    zg_rng_init(&b, 42);
    for (int i = 0; i < 1000; i++) CHECK(zg_rng_next(&a) == zg_rng_next(&b));
    // known first output for seed 0 guards against accidental algorithm changes
    zg_rng_init(&a, 0);
    uint64_t first = zg_rng_next(&a);
    zg_rng_init(&b, 0);
    CHECK(first == zg_rng_next(&b));
    int seen[7] = {0};
    for (int i = 0; i < 7000; i++) {
        int64_t v = zg_rng_int(&a, 3, 9);
        CHECK(v >= 3 && v <= 9);
        seen[v - 3]++;
        double u = zg_rng_range(&a, 0.96, 1.04);
        CHECK(u >= 0.96 && u < 1.04);
    }
    for (int i = 0; i < 7; i++) CHECK(seen[i] > 800);
    CHECK(zg_rng_derive(1, 2) != zg_rng_derive(1, 3));
    CHECK(zg_rng_derive(1, 2) == zg_rng_derive(1, 2));
}

ZG_TEST(json_getters_report_key) {
    zg_error e;
    cJSON *j = NULL;
    CHECK_OK(zg_json_parse("{\"tokens\": 32760, \"x\": 1.5, \"name\": \"abc\"}", "t", &j, &e), &e);
    int64_t t = 0;
    double x = 0;
    char name[8];
    CHECK_OK(zg_json_get_int(j, "tokens", 1, &t, "seq 0", &e), &e);
    CHECK_EQ_INT(t, 32760);
    CHECK(zg_json_get_int(j, "x", 1, &t, "seq 0", &e) == ZG_ERR_INVALID);
    CHECK(strstr(e.msg, "\"x\"") != NULL);
    CHECK(zg_json_get_int(j, "missing", 1, &t, "seq 0", &e) == ZG_ERR_INVALID);
    CHECK(strstr(e.msg, "seq 0: missing \"missing\"") != NULL);
    t = 7;
    CHECK_OK(zg_json_get_int(j, "missing", 0, &t, "seq 0", &e), &e);
    CHECK_EQ_INT(t, 7);
    CHECK_OK(zg_json_get_num(j, "x", 1, &x, "seq 0", &e), &e);
    CHECK_NEAR(x, 1.5, 0, 0);
    CHECK_OK(zg_json_get_str(j, "name", 1, name, sizeof name, "seq 0", &e), &e);
    CHECK_STR(name, "abc");
    CHECK(zg_json_get_str(j, "tokens", 1, name, sizeof name, "seq 0", &e) == ZG_ERR_INVALID);
    cJSON_Delete(j);
    CHECK(zg_json_parse("{\n \"a\": [1,,2]}", "bad.json", &j, &e) == ZG_ERR_PARSE);
    CHECK(strstr(e.msg, "line 2") != NULL);
}

ZG_TEST(atomic_write_and_read) {
    zg_error e;
    char path[] = "/tmp/zg_core_test_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    CHECK_OK(zg_file_write_atomic(path, "hello", 5, &e), &e);
    char *data = NULL;
    size_t n = 0;
    CHECK_OK(zg_file_read(path, &data, &n, &e), &e);
    CHECK_EQ_INT(n, 5);
    CHECK_STR(data, "hello");
    free(data);
    unlink(path);
    CHECK(zg_file_read("/nonexistent/zg.json", &data, &n, &e) == ZG_ERR_IO);
    CHECK(strstr(e.msg, "/nonexistent/zg.json") != NULL);
    // writing into a missing folder fails and leaves nothing behind
    CHECK(zg_file_write_atomic("/nonexistent/out.json", "x", 1, &e) == ZG_ERR_IO);
}

ZG_TEST(staged_writes_and_writable_checks) {
    zg_error e;
    char dir[] = "/tmp/zg_core_stage_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256], sub[512], tmpname[300];
    snprintf(path, sizeof path, "%s/out.json", dir);
    CHECK_OK(zg_file_write_atomic(path, "old", 3, &e), &e);
    // staged then discarded: the existing file is untouched and no temp file is left
    char *tmp = NULL;
    CHECK_OK(zg_file_stage(path, "new", 3, &tmp, &e), &e);
    CHECK(tmp != NULL && access(tmp, F_OK) == 0);
    snprintf(tmpname, sizeof tmpname, "%s", tmp);
    zg_file_discard(tmp);
    CHECK(access(tmpname, F_OK) != 0);
    char *data = NULL;
    CHECK_OK(zg_file_read(path, &data, NULL, &e), &e);
    CHECK_STR(data, "old");
    free(data);
    // staged then committed: replaced
    CHECK_OK(zg_file_stage(path, "new", 3, &tmp, &e), &e);
    CHECK_OK(zg_file_commit(tmp, path, &e), &e);
    CHECK_OK(zg_file_read(path, &data, NULL, &e), &e);
    CHECK_STR(data, "new");
    free(data);
    // writable checks: one message naming the path and what is wrong
    CHECK_OK(zg_file_check_writable(path, &e), &e);
    CHECK_OK(zg_file_check_writable("relative-in-cwd.json", &e), &e);
    snprintf(sub, sizeof sub, "%s/missing/x.json", dir);
    CHECK(zg_file_check_writable(sub, &e) == ZG_ERR_IO && strstr(e.msg, "does not exist"));
    CHECK(zg_file_check_writable(dir, &e) == ZG_ERR_INVALID && strstr(e.msg, "is a directory"));
    snprintf(sub, sizeof sub, "%s/", dir);
    CHECK(zg_file_check_writable(sub, &e) == ZG_ERR_INVALID && strstr(e.msg, "names a directory"));
    snprintf(sub, sizeof sub, "%s/x.json", path); // under a regular file
    CHECK(zg_file_check_writable(sub, &e) == ZG_ERR_IO && strstr(e.msg, "is not a directory"));
    CHECK(zg_file_check_writable("/dev/null", &e) == ZG_ERR_INVALID &&
          strstr(e.msg, "not a regular file"));
    CHECK(zg_file_check_writable("", &e) == ZG_ERR_INVALID);
    // readers: a directory, an empty file, NaN in JSON
    CHECK(zg_file_read(dir, &data, NULL, &e) == ZG_ERR_IO && strstr(e.msg, "is a directory"));
    cJSON *j = NULL;
    CHECK(zg_json_parse(" \n", "e.json", &j, &e) == ZG_ERR_PARSE && strstr(e.msg, "is empty"));
    CHECK(zg_json_parse("{\"a\": NaN}", "n.json", &j, &e) == ZG_ERR_PARSE &&
          strstr(e.msg, "NaN and Infinity are not JSON"));
    CHECK_OK(zg_json_parse("{\"a\": \"x\", \"b\": 1e300, \"c\": 1e400}", "t", &j, &e), &e);
    int64_t iv = 0;
    double dv = 0;
    CHECK(zg_json_get_int(j, "a", 1, &iv, "t", &e) == ZG_ERR_INVALID &&
          strstr(e.msg, "got a string (\"x\")"));
    CHECK(zg_json_get_int(j, "b", 1, &iv, "t", &e) == ZG_ERR_INVALID &&
          strstr(e.msg, "out of range"));
    CHECK(zg_json_get_num(j, "c", 1, &dv, "t", &e) == ZG_ERR_INVALID &&
          strstr(e.msg, "not a finite number"));
    static const char *const known[] = {"a", "b", "c", NULL};
    CHECK_OK(zg_json_check_keys(j, known, "t", &e), &e);
    cJSON_Delete(j);
    CHECK_OK(zg_json_parse("{\"a\": 1, \"bb\": 2}", "t", &j, &e), &e);
    CHECK(zg_json_check_keys(j, known, "thing", &e) == ZG_ERR_INVALID &&
          strstr(e.msg, "thing: unknown key \"bb\" (known keys: a, b, c)"));
    cJSON_Delete(j);
    unlink(path);
    rmdir(dir);
}

// A load callback: a name must be "known"; a file's "x" is stored (and must be positive).
static zg_status load_x(const char *name, const cJSON *j, void *out, zg_error *err) {
    double *x = out;
    if (!j) return strcmp(name, "known") ? zg_error_set(err, ZG_ERR_INVALID, "no preset") : ZG_OK;
    zg_status st = zg_json_get_num(j, "x", 1, x, "thing", err);
    if (!st && !(*x > 0)) st = zg_error_set(err, ZG_ERR_INVALID, "x must be positive");
    return st;
}

ZG_TEST(json_load_named_takes_names_and_files) {
    zg_error e;
    double x = 0;
    CHECK_OK(zg_json_load_named("known", "thing", load_x, &x, &e), &e);
    CHECK(zg_json_load_named("other", "thing", load_x, &x, &e) == ZG_ERR_INVALID);
    CHECK(zg_json_load_named("", "thing", load_x, &x, &e) == ZG_ERR_INVALID);
    CHECK_STR(e.msg, "no thing given (use --thing NAME or FILE)");
    CHECK(zg_json_load_named("/nonexistent/t.json", "thing", load_x, &x, &e) == ZG_ERR_IO);
    char path[] = "/tmp/zg_core_test_XXXXXX.json";
    int fd = mkstemps(path, 5);
    CHECK(fd >= 0);
    close(fd);
    CHECK_OK(zg_file_write_atomic(path, "{\"x\": 2.5}", 10, &e), &e);
    CHECK_OK(zg_json_load_named(path, "thing", load_x, &x, &e), &e);
    CHECK(x == 2.5);
    CHECK_OK(zg_file_write_atomic(path, "{\"x\": -1}", 9, &e), &e);
    zg_status st = zg_json_load_file(path, load_x, &x, &e);
    unlink(path);
    CHECK(st == ZG_ERR_INVALID);
    CHECK(!strncmp(e.msg, path, strlen(path)) && strstr(e.msg, "x must be positive"));
}

struct kv {
    int key, val;
};
static int cmp_kv(const void *a, const void *b, void *ctx) {
    (void)ctx;
    return ((const struct kv *)a)->key - ((const struct kv *)b)->key;
}

ZG_TEST(stable_sort_keeps_order_of_equal_keys) {
    zg_error e;
    struct kv v[200];
    zg_rng r;
    zg_rng_init(&r, 5);
    for (int i = 0; i < 200; i++) v[i] = (struct kv){(int)zg_rng_int(&r, 0, 9), i};
    CHECK_OK(zg_sort_stable(v, 200, sizeof v[0], cmp_kv, NULL, &e), &e);
    for (int i = 1; i < 200; i++) {
        CHECK(v[i - 1].key <= v[i].key);
        if (v[i - 1].key == v[i].key) CHECK(v[i - 1].val < v[i].val);
    }
}

ZG_TEST(parse_count_and_arena) {
    CHECK_EQ_INT(zg_parse_count("350K"), 350000);
    CHECK_EQ_INT(zg_parse_count("1.5M"), 1500000);
    CHECK_EQ_INT(zg_parse_count("12"), 12);
    CHECK_EQ_INT(zg_parse_count("-3"), -1);
    CHECK_EQ_INT(zg_parse_count("12Q"), -1);
    zg_arena a;
    zg_arena_init(&a, 64);
    int *x = zg_arena_alloc(&a, 1000 * sizeof(int));
    CHECK(x && x[999] == 0);
    char *y = zg_arena_alloc(&a, 3);
    CHECK(((uintptr_t)y & 15) == 0);
    int src[5] = {7, -1, 3, 9, 2};
    int *z = zg_arena_dup(&a, src, sizeof src);
    CHECK(z && ((uintptr_t)z & 15) == 0 && !memcmp(z, src, sizeof src) && z != src);
    zg_arena_free(&a);
}

// ---- hash map and memo ----------------------------------------------------------------------

static int int_eq(int64_t entry, const void *key, const void *ctx) {
    return ((const int64_t *)ctx)[entry] == *(const int64_t *)key;
}

ZG_TEST(hmap_finds_every_key_through_collisions_and_keep) {
    zg_error err;
    zg_hmap m;
    zg_hmap_init(&m);
    int64_t keys[1000];
    for (int64_t i = 0; i < 1000; i++) {
        keys[i] = 7 * i + 3;
        // every 4 keys share a hash: equal hashes must be told apart by eq
        CHECK_EQ_INT(zg_hmap_add(&m, (uint64_t)(i / 4), &err), i);
    }
    for (int64_t i = 0; i < 1000; i++)
        CHECK_EQ_INT(zg_hmap_find(&m, (uint64_t)(i / 4), int_eq, &keys[i], keys), i);
    int64_t absent = 5;
    CHECK_EQ_INT(zg_hmap_find(&m, 1, int_eq, &absent, keys), -1);
    // keep entries 10 and 3, in that order: they become 0 and 1
    int64_t keep[2] = {10, 3}, kept[2] = {keys[10], keys[3]};
    CHECK_OK(zg_hmap_keep(&m, keep, 2, &err), &err);
    CHECK_EQ_INT(m.n, 2);
    CHECK_EQ_INT(zg_hmap_find(&m, 10 / 4, int_eq, &kept[0], kept), 0);
    CHECK_EQ_INT(zg_hmap_find(&m, 3 / 4, int_eq, &kept[1], kept), 1);
    CHECK_EQ_INT(zg_hmap_find(&m, 0, int_eq, &keys[0], kept), -1);
    zg_hmap_clear(&m);
    CHECK_EQ_INT(zg_hmap_find(&m, 10 / 4, int_eq, &kept[0], kept), -1);
    zg_hmap_free(&m);
}

static int64_t n_freed;
static void count_free(void *v) {
    n_freed++;
    free(v);
}
static int memo_eq(int64_t entry, const void *key, const void *ctx) {
    const zg_memo *m = ctx;
    return *(const int64_t *)m->val[entry] == *(const int64_t *)key;
}
static void *boxed(int64_t v) {
    int64_t *p = malloc(sizeof *p);
    *p = v;
    return p;
}

ZG_TEST(memo_evicts_least_recently_used_and_retires_in_use_values) {
    zg_error err;
    zg_memo m;
    n_freed = 0;
    zg_memo_init(&m, 300, count_free);
    zg_memo_begin(&m);
    for (int64_t k = 0; k < 4; k++) CHECK_OK(zg_memo_add(&m, (uint64_t)k, boxed(k), 100, &err), &err);
    CHECK_EQ_INT(m.total, 400);
    zg_memo_begin(&m);  // 400 > 300: down to <= 225, the oldest first (all tie: insertion order)
    CHECK_EQ_INT(m.evictions, 2);
    CHECK_EQ_INT(n_freed, 2);
    int64_t k0 = 0, k2 = 2, k3 = 3;
    CHECK(zg_memo_find(&m, 0, memo_eq, &k0, &m) == NULL);
    CHECK(zg_memo_find(&m, 2, memo_eq, &k2, &m) != NULL);  // used by build 2
    CHECK_OK(zg_memo_add(&m, 9, boxed(9), 100, &err), &err);
    CHECK_OK(zg_memo_add(&m, 8, boxed(8), 100, &err), &err);
    zg_memo_begin(&m);  // 400 again: 3 (build 1) goes first, then 2, 9 or 8 (build 2)
    CHECK_EQ_INT(m.evictions, 4);
    CHECK(zg_memo_find(&m, 3, memo_eq, &k3, &m) == NULL);
    CHECK_EQ_INT(zg_memo_count(&m), 2);
    // values in use survive a reset until the next build
    int64_t *held = zg_memo_find(&m, 8, memo_eq, &(int64_t){8}, &m);
    CHECK(held && *held == 8);
    int64_t freed_before = n_freed;
    CHECK_OK(zg_memo_retire_all(&m, &err), &err);
    CHECK_EQ_INT(zg_memo_count(&m), 0);
    CHECK_EQ_INT(n_freed, freed_before);
    CHECK_EQ_INT(*held, 8);
    zg_memo_begin(&m);
    CHECK_EQ_INT(n_freed, freed_before + 2);
    CHECK_EQ_INT(m.resets, 1);
    zg_memo_free(&m);
    CHECK_EQ_INT(n_freed, 6);
}


ZG_TEST(grow_array_doubles_when_full) {
    zg_error e = {0};
    int64_t *a = NULL;
    int32_t n = 0, cap = 0;
    for (int64_t i = 0; i < 100; i++) {
        int64_t *g = zg_grow_array(a, n, &cap, 4, sizeof *g, &e);
        CHECK_OK(g ? ZG_OK : e.status, &e);
        a = g;
        a[n++] = i;
        CHECK(cap >= n && (cap == 4 || cap / 2 < n)); // 4, 8, 16, ...: doubled only when full
    }
    CHECK_EQ_INT(cap, 128);
    for (int64_t i = 0; i < 100; i++)
        CHECK_EQ_INT(a[i], i);
    CHECK(zg_grow_array(a, n, &cap, 4, sizeof *a, &e) == a); // room left: the same array
    free(a);
}

ZG_TEST_MAIN()
