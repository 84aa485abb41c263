// file.c — whole-file reads and atomic writes (temp file + fsync + rename).
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"

zg_status zg_file_read(const char *path, char **data, size_t *len, zg_error *err) {
    *data = NULL;
    if (len) *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return zg_error_set(err, ZG_ERR_IO, "cannot open '%s': %s (check the path)", path,
                            strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) == 0 && S_ISDIR(sb.st_mode)) {
        fclose(f);
        return zg_error_set(err, ZG_ERR_IO, "'%s' is a directory, not a file (give a file)", path);
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf) {
        fclose(f);
        return zg_error_set(err, ZG_ERR_NOMEM, "out of memory reading '%s'", path);
    }
    for (;;) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap) break;
        char *nb = realloc(buf, cap * 2 + 1);
        if (!nb) {
            free(buf);
            fclose(f);
            return zg_error_set(err, ZG_ERR_NOMEM, "out of memory reading '%s'", path);
        }
        buf = nb;
        cap *= 2;
    }
    int bad = ferror(f), eno = errno;
    fclose(f);
    if (bad) {
        free(buf);
        return zg_error_set(err, ZG_ERR_IO, "cannot read '%s': %s", path, strerror(eno));
    }
    buf[n] = '\0';
    *data = buf;
    if (len) *len = n;
    return ZG_OK;
}

zg_status zg_file_stage(const char *path, const void *data, size_t len, char **tmp_out,
                        zg_error *err) {
    *tmp_out = NULL;
    if (!path || !*path) return zg_error_set(err, ZG_ERR_INVALID, "empty output path");
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 32);
    if (!tmp) return zg_error_set(err, ZG_ERR_NOMEM, "out of memory");
    snprintf(tmp, plen + 32, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        zg_status st = zg_error_set(err, ZG_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
        free(tmp);
        return st;
    }
    const char *p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0) {
            if (errno == EINTR) continue;
            zg_status st =
                zg_error_set(err, ZG_ERR_IO, "writing '%s' failed: %s", path, strerror(errno));
            close(fd);
            unlink(tmp);
            free(tmp);
            return st;
        }
        p += w;
        left -= (size_t)w;
    }
    if (fsync(fd) != 0 && errno != EINVAL) { /* not fatal on pipes/special files */
    }
    if (close(fd) != 0) {
        zg_status st = zg_error_set(err, ZG_ERR_IO, "cannot finish '%s': %s", path, strerror(errno));
        unlink(tmp);
        free(tmp);
        return st;
    }
    *tmp_out = tmp;
    return ZG_OK;
}

zg_status zg_file_commit(char *tmp, const char *path, zg_error *err) {
    if (rename(tmp, path) != 0) {
        zg_status st = zg_error_set(err, ZG_ERR_IO, "cannot finish '%s': %s", path, strerror(errno));
        zg_file_discard(tmp);
        return st;
    }
    free(tmp);
    return ZG_OK;
}

void zg_file_discard(char *tmp) {
    if (!tmp) return;
    unlink(tmp);
    free(tmp);
}

zg_status zg_file_write_atomic(const char *path, const void *data, size_t len, zg_error *err) {
    char *tmp = NULL;
    zg_status st = zg_file_stage(path, data, len, &tmp, err);
    return st ? st : zg_file_commit(tmp, path, err);
}

zg_status zg_file_check_writable(const char *path, zg_error *err) {
    if (!path || !*path)
        return zg_error_set(err, ZG_ERR_INVALID, "the output path is empty (give a file name)");
    size_t n = strlen(path);
    if (path[n - 1] == '/')
        return zg_error_set(err, ZG_ERR_INVALID,
                            "'%s' names a directory, not a file (give a file name in it)", path);
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return zg_error_set(err, ZG_ERR_INVALID,
                                "'%s' is a directory, not a file (give a file name in it)", path);
        if (!S_ISREG(st.st_mode))
            return zg_error_set(err, ZG_ERR_INVALID,
                                "'%s' exists and is not a regular file; outputs are written to a "
                                "temp file renamed over it (give a regular file path)",
                                path);
    }
    const char *slash = strrchr(path, '/');
    char *dir = NULL;
    if (!slash)
        dir = strdup(".");
    else if (slash == path)
        dir = strdup("/");
    else
        dir = strndup(path, (size_t)(slash - path));
    if (!dir) return zg_error_set(err, ZG_ERR_NOMEM, "out of memory");
    zg_status rc = ZG_OK;
    if (stat(dir, &st) != 0)
        rc = zg_error_set(err, ZG_ERR_IO,
                          "cannot write '%s': directory '%s' %s (create it first, or give a path "
                          "in an existing directory)",
                          path, dir, errno == ENOENT ? "does not exist" : strerror(errno));
    else if (!S_ISDIR(st.st_mode))
        rc = zg_error_set(err, ZG_ERR_IO,
                          "cannot write '%s': '%s' is not a directory (give a path in a directory)",
                          path, dir);
    else if (access(dir, W_OK | X_OK) != 0)
        rc = zg_error_set(err, ZG_ERR_IO,
                          "cannot write '%s': directory '%s' is not writable: %s (give a path in "
                          "a writable directory)",
                          path, dir, strerror(errno));
    free(dir);
    return rc;
}
