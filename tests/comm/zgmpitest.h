// zgmpitest.h — main() for MPI test programs (tests/<module>/mpitest_*.c), on top of zgtest.h.
// Every rank runs every case; a case passes only if it passed on all ranks (a world all-reduce
// of the failure flags), and rank 0 prints "[0] PASS name" / "[0] FAIL name", which is what
// scripts/run-tests.sh counts. Cases reach the communicator through zgmpi_comm.
// Cases must not return early between collectives (a rank that skips one would hang the
// others): compute everything, then CHECK.
#ifndef ZGMPITEST_H
#define ZGMPITEST_H

#include "comm/comm.h"
#include "zgtest.h"
#ifdef ZG_HAVE_OPENMP
#include <omp.h>
#endif

// MPI tests run oversubscribed (4 ranks on 2 cores): OpenMP spin-waiting threads in every rank
// would starve the others, so tests use one thread per rank unless OMP_NUM_THREADS says more.
// Under ASan, OpenMPI's own allocations that outlive MPI_Finalize are not ours: keep MPI's
// components loaded so their frames have names, and suppress leaks that start inside MPI.
const char *__asan_default_options(void);
const char *__asan_default_options(void) {
    return "fast_unwind_on_malloc=0";
}
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) {
    return "leak:libmpi.so\nleak:libopen-pal.so\nleak:libopen-rte.so\nleak:mca_\n"
           "leak:libpmix.so\nleak:libhwloc.so\nleak:libevent\nleak:libucp.so\nleak:libucs.so\n";
}

static void zgmpi_threads(void) {
    setenv("OMPI_MCA_mca_base_component_disable_dlclose", "1", 0);
#ifdef ZG_HAVE_OPENMP
    if (!getenv("OMP_NUM_THREADS")) omp_set_num_threads(1);
#endif
}

static zg_comm zgmpi_comm_storage;
static zg_comm *zgmpi_comm = &zgmpi_comm_storage;

#define ZG_MPITEST_MAIN()                                                                          \
    int main(int argc, char **argv) {                                                              \
        zg_error err = {0};                                                                        \
        zgmpi_threads();                                                                           \
        if (zg_comm_init_auto(zgmpi_comm, &argc, &argv, &err) != ZG_OK) {                          \
            printf("FAIL comm_init\n");                                                            \
            fprintf(stderr, "comm init: %s\n", err.msg);                                           \
            return 1;                                                                              \
        }                                                                                          \
        int32_t *world = NULL;                                                                     \
        if (zg_comm_world_ranks(zgmpi_comm, &world, &err) != ZG_OK) return 1;                      \
        int failed = 0;                                                                            \
        for (int i = 0; i < zgtest_ncases; i++) {                                                  \
            int f = zgtest_run(i, argc, argv);                                                     \
            if (f < 0) continue;                                                                   \
            double fl = f;                                                                         \
            if (zg_comm_allreduce_max_f64(zgmpi_comm, world, zgmpi_comm->size, &fl, 1, 32000,      \
                                          &err) != ZG_OK) {                                        \
                fprintf(stderr, "[%d] all-reduce of results failed: %s\n", zgmpi_comm->rank,       \
                        err.msg);                                                                  \
                fl = 1;                                                                            \
            }                                                                                      \
            if (fl != 0) failed++;                                                                 \
            if (zgmpi_comm->rank == 0) {                                                           \
                printf("[0] %s %s\n", fl != 0 ? "FAIL" : "PASS", zgtest_cases[i].name);            \
                fflush(stdout);                                                                    \
            }                                                                                      \
        }                                                                                          \
        free(world);                                                                               \
        zg_comm_free(zgmpi_comm);                                                                  \
        return failed ? 1 : 0;                                                                     \
    }

#endif
