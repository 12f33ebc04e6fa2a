/* A client of libsptensor_mpi built the documented way,
 * `mpicc mpi_client.c $(pkg-config --cflags --libs sptensor_mpi)`: it must
 * compile against the installed headers and link both libraries (the .pc
 * file's Requires brings -lsptensor). It calls one function of each without
 * starting MPI. */
#include <stdio.h>
#include <sptensor/sptensor_mpi.h>

int main(void) {
  const char *err = spt_mpi_thread_last_error();
  printf("sptensor_mpi client: libsptensor %s, last error \"%s\"\n", spt_version(), err ? err : "");
  return 0;
}
