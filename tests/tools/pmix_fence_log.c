/* A preload that logs each PMIx fence of an MPI rank: when the rank calls it and when it is
 * released, for tests/integration/test_cluster_local.py, which checks that the barrier ending
 * MPI_Init is one (no rank released before every rank has called it).
 *
 *   cc -shared -fPIC -o pmix_fence_log.so pmix_fence_log.c $(pkg-config --cflags --libs pmix) -ldl
 *   LD_PRELOAD=.../pmix_fence_log.so srun --mpi=pmix ... PROGRAM
 *
 * Open MPI 4.1 calls PMIx_Fence_nb twice in MPI_Init: the modex (collecting data), then a
 * barrier. Each call and release is one line on stderr:
 *
 *   pmix-fence SECONDS RANK N called|released COLLECT STATUS
 *
 * SECONDS: CLOCK_REALTIME, comparable between the namespaces of one machine; RANK: SLURM_PROCID;
 * N: the fence's number in this process (1, 2, ...); COLLECT: 1 when data is collected;
 * STATUS: the PMIx status of the release (0 on success; -1 on a call). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pmix.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef pmix_status_t (*fence_nb_fn)(const pmix_proc_t[], size_t, const pmix_info_t[], size_t,
                                     pmix_op_cbfunc_t, void *);

struct pending {
    pmix_op_cbfunc_t cbfunc;
    void *cbdata;
    int n;
    int collect;
};

static int fences;

static void say(int n, const char *what, int collect, int status)
{
    struct timespec t;
    const char *rank = getenv("SLURM_PROCID");
    clock_gettime(CLOCK_REALTIME, &t);
    fprintf(stderr, "pmix-fence %lld.%09ld %s %d %s %d %d\n", (long long)t.tv_sec, t.tv_nsec,
            rank ? rank : "-", n, what, collect, status);
}

static void released(pmix_status_t status, void *cbdata)
{
    struct pending *p = cbdata;
    say(p->n, "released", p->collect, status);
    if (p->cbfunc)
        p->cbfunc(status, p->cbdata);
    free(p);
}

pmix_status_t PMIx_Fence_nb(const pmix_proc_t procs[], size_t nprocs, const pmix_info_t info[],
                            size_t ninfo, pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    static fence_nb_fn real;
    struct pending *p;
    pmix_status_t rc;
    size_t i;

    if (!real)
        real = (fence_nb_fn)dlsym(RTLD_NEXT, "PMIx_Fence_nb");
    p = malloc(sizeof *p);
    if (!real || !p)
        return PMIX_ERROR;
    p->cbfunc = cbfunc;
    p->cbdata = cbdata;
    p->n = ++fences;
    p->collect = 0;
    for (i = 0; i < ninfo; i++)
        if (PMIX_CHECK_KEY(&info[i], PMIX_COLLECT_DATA))
            p->collect = PMIX_INFO_TRUE(&info[i]);
    say(p->n, "called", p->collect, -1);
    rc = real(procs, nprocs, info, ninfo, released, p);
    if (rc == PMIX_OPERATION_SUCCEEDED) {           /* done at once: no callback will come */
        say(p->n, "released", p->collect, PMIX_SUCCESS);
        free(p);
    } else if (rc != PMIX_SUCCESS) {
        say(p->n, "refused", p->collect, rc);
        free(p);
    }
    return rc;
}
