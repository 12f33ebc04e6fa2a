/* sptensor_mpi.h compiles as strict C99 and links against libsptensor_mpi:
 * a minimal C client (one rank or several) building a tensor from local
 * arrays, running the distributed CP-ALS and reading its counters. */
#include <stdio.h>

#include "sptensor/sptensor_mpi.h"

int main(int argc, char **argv) {
  int rank = 0, failures = 0, total = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  {
    const spt_index dims[3] = {4, 3, 2};
    const spt_index ind[3 * 4] = {0, 1, 2, 3, /* mode 0 */ 0, 1, 2, 0, /* mode 1 */ 0, 1, 0, 1};
    const double val[4] = {1.0, 2.0, 3.0, 4.0};
    spt_mpi_tensor *x = NULL;
    spt_mpi_ktensor *k = NULL;
    spt_mpi_cpd_options opts;
    spt_mpi_cpd_stats stats;
    spt_status st = spt_mpi_tensor_create(MPI_COMM_WORLD, NULL, SPT_FLOAT64, 3, dims, rank == 0 ? 4 : 0,
                                          rank == 0 ? ind : NULL, 4, 0, rank == 0 ? val : NULL, 0, &x);
    if (st < 0) ++failures;
    spt_mpi_cpd_options_init(&opts);
    opts.rank = 2;
    opts.max_iters = 3;
    st = spt_mpi_cpd_als(MPI_COMM_WORLD, NULL, x, &opts, &k);
    if (st < 0) {
      ++failures;
      fprintf(stderr, "spt_mpi_cpd_als: %s\n", spt_mpi_thread_last_error());
    }
    stats.struct_size = sizeof stats;
    if (spt_mpi_ktensor_stats(k, &stats) != SPT_OK || stats.order != 3) ++failures;
    spt_mpi_ktensor_free(k);
    spt_mpi_tensor_free(x);
  }
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("C client: %d failures\n", total);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
