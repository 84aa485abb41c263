// rounds.c — measurement rounds over (batch, plan) items, medians, thread settings, and the
// machine description recorded in a profile.
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cblas.h>  // openblas_set_num_threads
#ifdef ZG_HAVE_OPENMP
#include <omp.h>
#endif

#include "profile/profile.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double zg_profile_median(const double *v, int32_t n) {
    if (n <= 0) return 0;
    double *c = malloc(sizeof *c * (size_t)n);
    if (!c) return v[0];
    memcpy(c, v, sizeof *c * (size_t)n);
    qsort(c, (size_t)n, sizeof *c, cmp_double);
    double m = n % 2 ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
    free(c);
    return m;
}

double zg_profile_stat_of(const double *v, int32_t n, zg_profile_stat s) {
    if (s != ZG_PROFILE_STAT_MIN) return zg_profile_median(v, n);
    double m = v[0];
    for (int32_t i = 1; i < n; i++) m = v[i] < m ? v[i] : m;
    return m;
}

const char *zg_profile_stat_name(zg_profile_stat s) {
    return s == ZG_PROFILE_STAT_MIN ? "min" : "median";
}

zg_status zg_profile_stat_parse(const char *str, zg_profile_stat *s, zg_error *err) {
    if (str && !strcmp(str, "median")) *s = ZG_PROFILE_STAT_MEDIAN;
    else if (str && !strcmp(str, "min")) *s = ZG_PROFILE_STAT_MIN;
    else
        return zg_error_set(err, ZG_ERR_INVALID, "stat '%s': use median or min", str ? str : "");
    return ZG_OK;
}

void zg_profile_set_threads(int32_t n, int32_t world) {
    if (n <= 0) {
        if (world <= 1) return;
        n = 1;
    }
#ifdef ZG_HAVE_OPENMP
    omp_set_num_threads(n);
#endif
    openblas_set_num_threads(n);
}

const char *zg_profile_clock_name(zg_profile_clock c) {
    return c == ZG_PROFILE_CLOCK_CPU ? "cpu" : "wall";
}

zg_status zg_profile_clock_parse(const char *s, zg_profile_clock *c, zg_error *err) {
    if (s && !strcmp(s, "wall")) *c = ZG_PROFILE_CLOCK_WALL;
    else if (s && !strcmp(s, "cpu")) *c = ZG_PROFILE_CLOCK_CPU;
    else
        return zg_error_set(err, ZG_ERR_INVALID, "clock '%s': use wall or cpu", s ? s : "");
    return ZG_OK;
}

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

zg_status zg_profile_run_rounds(zg_trainer *tr, zg_profile_item *items, int32_t n,
                                int32_t warmup, int32_t reps, zg_profile_clock clock,
                                double *times, double *peaks,
                                zg_profile_progress_fn progress, void *pctx, zg_error *err) {
    if (n < 0 || warmup < 0 || reps < 0)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "measurement rounds: %d items, %d warm-up and %d measured rounds; "
                            "none may be negative",
                            n, warmup, reps);
    int64_t total = (int64_t)n * (warmup + reps), done = 0;
    int32_t *world = NULL;
    zg_status ws = zg_comm_world_ranks(tr->comm, &world, err);
    if (ws) return ws;
    for (int32_t round = 0; round < warmup + reps; round++) {
        for (int32_t i = 0; i < n; i++) {
            zg_train_stats st;
            double c0 = cpu_now();
            zg_status s = zg_trainer_step(tr, &items[i].batch, &items[i].plan, &st, err);
            double cpu = cpu_now() - c0;
            // every rank takes part, also when its step failed (no rank may skip a collective)
            if (clock == ZG_PROFILE_CLOCK_CPU && tr->comm->size > 1) {
                zg_error e2;
                zg_status s2 = zg_comm_allreduce_max_f64(tr->comm, world, tr->comm->size, &cpu, 1,
                                                         31500, &e2);
                if (!s && s2) s = s2, *err = e2;
            }
            if (s) {
                free(world);
                return zg_error_prefix(err, "measuring item %d, round %d: ", i, round);
            }
            double v = clock == ZG_PROFILE_CLOCK_CPU ? cpu : st.slowest_s;
            if (round >= warmup && times) times[(int64_t)i * reps + (round - warmup)] = v;
            if (peaks) peaks[i] = (double)st.peak_bytes;
            if (progress) progress(pctx, ++done, total);
        }
    }
    free(world);
    return ZG_OK;
}

zg_status zg_profile_prime(zg_trainer *tr, zg_profile_item *items, int32_t n, int32_t *primed,
                           zg_error *err) {
    if (primed) *primed = -1;
    if (n < 1) return ZG_OK;
    int32_t big = 0;
    int64_t most = -1;
    for (int32_t i = 0; i < n; i++) {
        int64_t t = 0;
        for (int32_t k = 0; k < items[i].batch.n; k++)
            t += items[i].batch.seqs[k].tokens;
        if (t > most) most = t, big = i;
    }
    if (primed) *primed = big;
    int32_t order[2] = {big, 0};
    for (int32_t j = 0; j < (big == 0 ? 1 : 2); j++) {
        zg_train_stats st;
        zg_status s = zg_trainer_step(tr, &items[order[j]].batch, &items[order[j]].plan, &st, err);
        if (s) return zg_error_prefix(err, "priming step (item %d): ", order[j]);
    }
    return ZG_OK;
}

static void read_cpu_model(char *out, size_t outsz) {
    snprintf(out, outsz, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0) continue;
        char *c = strchr(line, ':');
        if (!c) continue;
        c++;
        while (*c == ' ' || *c == '\t') c++;
        c[strcspn(c, "\n")] = 0;
        snprintf(out, outsz, "%s", c);
        break;
    }
    fclose(f);
}

static void git_describe(char *out, size_t outsz) {
    snprintf(out, outsz, "unknown");
    FILE *p = popen("git describe --always --dirty 2>/dev/null", "r");
    if (!p) return;
    char line[128];
    if (fgets(line, sizeof line, p)) {
        line[strcspn(line, "\n")] = 0;
        if (line[0]) snprintf(out, outsz, "%s", line);
    }
    pclose(p);
}

cJSON *zg_profile_machine_json(int32_t world_size) {
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    char buf[256];
    read_cpu_model(buf, sizeof buf);
    cJSON_AddStringToObject(j, "cpu", buf);
    cJSON_AddNumberToObject(j, "cores", (double)sysconf(_SC_NPROCESSORS_ONLN));
    cJSON_AddNumberToObject(j, "world_size", world_size);
    cJSON_AddBoolToObject(j, "oversubscribed", world_size > sysconf(_SC_NPROCESSORS_ONLN));
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    cJSON_AddStringToObject(j, "date", buf);
    git_describe(buf, sizeof buf);
    cJSON_AddStringToObject(j, "git", buf);
#ifdef ZG_HAVE_OPENMP
    cJSON_AddNumberToObject(j, "omp_threads", omp_get_max_threads());
#endif
    cJSON_AddNumberToObject(j, "blas_threads", openblas_get_num_threads());
    double load[3] = {0, 0, 0};
    if (getloadavg(load, 3) == 3) cJSON_AddNumberToObject(j, "load_avg_1min", load[0]);
    return j;
}
