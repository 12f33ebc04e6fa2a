// Entry points of libsptensor_mpi that take the communicator as a Fortran
// handle (MPI_Fint): the C type MPI_Comm differs between MPI libraries (a
// pointer in Open MPI, an int in MPICH), so Fortran (use mpi / mpi_f08's
// comm%MPI_VAL) and Python (mpi4py's comm.py2f()) callers cannot pass it
// portably, while MPI_Fint is a plain C int everywhere. Each converts with
// MPI_Comm_f2c and forwards to the MPI_Comm function of the same name, so
// the two forms behave identically (errors, collectiveness, messages).
#include "sptensor/sptensor_mpi.h"

namespace {

// MPI_Comm_f2c may only be called between MPI_Init and MPI_Finalize; before
// or after, MPI_COMM_NULL lets the forwarded call report "MPI is not
// initialised" as SPT_ERR_MPI (its first check), like the MPI_Comm form.
MPI_Comm comm_from_fortran(MPI_Fint comm) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return MPI_COMM_NULL;
  return MPI_Comm_f2c(comm);
}

}  // namespace

extern "C" {

SPT_MPI_API spt_status spt_mpi_tensor_create_fcomm(MPI_Fint comm, spt_context* ctx, spt_dtype dtype, uint32_t order,
                                                   const spt_index* dims, spt_nnz local_nnz,
                                                   const spt_index* indices, spt_nnz ld, int index_base,
                                                   const void* values, int flags, spt_mpi_tensor** out) {
  return spt_mpi_tensor_create(comm_from_fortran(comm), ctx, dtype, order, dims, local_nnz, indices, ld, index_base,
                               values, flags, out);
}

SPT_MPI_API spt_status spt_mpi_read_fcomm(MPI_Fint comm, spt_context* ctx, const char* path,
                                          const spt_read_options* opts, spt_mpi_tensor** out) {
  return spt_mpi_read(comm_from_fortran(comm), ctx, path, opts, out);
}

SPT_MPI_API spt_status spt_mpi_tensor_gather_fcomm(MPI_Fint comm, spt_context* ctx, const spt_mpi_tensor* x,
                                                   int root, spt_coo** out) {
  return spt_mpi_tensor_gather(comm_from_fortran(comm), ctx, x, root, out);
}

SPT_MPI_API spt_status spt_mpi_cpd_als_fcomm(MPI_Fint comm, spt_context* ctx, const spt_mpi_tensor* x,
                                             const spt_mpi_cpd_options* opts, spt_mpi_ktensor** out) {
  return spt_mpi_cpd_als(comm_from_fortran(comm), ctx, x, opts, out);
}

SPT_MPI_API spt_status spt_mpi_ktensor_gather_fcomm(MPI_Fint comm, spt_context* ctx, const spt_mpi_ktensor* k,
                                                    int root, spt_ktensor** out) {
  return spt_mpi_ktensor_gather(comm_from_fortran(comm), ctx, k, root, out);
}

}  // extern "C"
