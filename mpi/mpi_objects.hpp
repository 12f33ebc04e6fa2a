// The objects behind the opaque handles of sptensor_mpi.h, and the internal
// entry points the C API layer (mpi/api_mpi.cpp) wraps.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "core/context.hpp"
#include "core/coo.hpp"
#include "core/ktensor.hpp"
#include "io/io.hpp"
#include "sptensor/sptensor_mpi.h"

// This rank's part of a distributed tensor: its nonzeros (global 0-based
// coordinates, dims = the global dims) and the agreed global count.
struct spt_mpi_tensor_s {
  spt_coo_s local;
  spt_nnz global_nnz = 0;
};

// This rank's part of a distributed CP model.
struct spt_mpi_ktensor_s {
  spt_ktensor_s local;                      // dims = owned row counts; lambda complete
  std::vector<spt_index> global_dims;
  std::vector<std::vector<uint64_t>> rows;  // per mode: global ids of local.factors rows
  spt_mpi_cpd_stats stats{};
};

namespace spt::mpi {

// Collective constructors (comm: the caller's, already checked).
void create_tensor(MPI_Comm comm, spt_context_s& ctx, spt_dtype dtype, uint32_t order, const spt_index* dims,
                   spt_nnz local_nnz, const spt_index* indices, spt_nnz ld, int index_base, const void* values,
                   int flags, spt_mpi_tensor_s& out);
void read_tensor(MPI_Comm comm, spt_context_s& ctx, const std::string& path, const io::ReadOptions& opts,
                 spt_mpi_tensor_s& out);
// Root gets every nonzero in rank order; returns false on other ranks.
bool gather_tensor(MPI_Comm comm, const spt_mpi_tensor_s& x, int root, spt_coo_s& out);

// Distributed CP-ALS (opts validated for struct size; the rest inside).
spt_status cpd_als(MPI_Comm comm, spt_context_s& ctx, const spt_mpi_tensor_s& x, const spt_mpi_cpd_options& opts,
                   spt_mpi_ktensor_s& out);
bool gather_ktensor(MPI_Comm comm, const spt_mpi_ktensor_s& k, int root, spt_ktensor_s& out);

// Process grid for P ranks over dims, as SPLATT: the prime factors of P,
// largest first, each to the mode with the most rows per grid slot.
std::vector<int> choose_grid(int ranks, const std::vector<spt_index>& dims);

}  // namespace spt::mpi
