/* A collective MPI-IO write of one shared file, for the tests that need one where IOR is not
 * installed (tests/integration/test_cluster_ceph.py compiles it with mpicc).
 *
 *   mpiio_shared_write FILE MIB
 *
 * Every rank writes its own MIB MiB, filled with the byte 'a' + rank, at offset rank * MIB MiB,
 * in one MPI_File_write_at_all; then MPI_File_sync and MPI_File_close. Hints come from the
 * environment (ROMIO_HINTS), and ROMIO prints the ones in effect with ROMIO_PRINT_HINTS=1.
 * Any MPI error is printed with its string and ends the job with exit code 1. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check(int rc, const char *what, int rank)
{
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        fprintf(stderr, "rank %d: %s failed: %s\n", rank, what, msg);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 3 || atoi(argv[2]) < 1) {
        if (rank == 0)
            fprintf(stderr, "usage: %s FILE MIB\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int block = atoi(argv[2]) << 20;
    char *buf = malloc(block);
    if (buf == NULL) {
        fprintf(stderr, "rank %d: cannot allocate %d bytes\n", rank, block);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(buf, 'a' + rank, block);
    MPI_File fh;
    MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
    check(MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh),
          "MPI_File_open", rank);
    MPI_Status status;
    check(MPI_File_write_at_all(fh, (MPI_Offset)rank * block, buf, block, MPI_BYTE, &status),
          "MPI_File_write_at_all", rank);
    int written = 0;
    MPI_Get_count(&status, MPI_BYTE, &written);
    if (written != block) {
        fprintf(stderr, "rank %d: wrote %d of %d bytes\n", rank, written, block);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    check(MPI_File_sync(fh), "MPI_File_sync", rank);
    check(MPI_File_close(&fh), "MPI_File_close", rank);
    free(buf);
    MPI_Finalize();
    return 0;
}
