// The extern "C" layer of libsptensor_mpi: argument checks, guarded() (no
// exception crosses the ABI), and the collective entry points in mpi/.
#include <cstring>
#include <memory>

#include "api/guard.hpp"
#include "api/options_init.hpp"
#include "mpi_objects.hpp"
#include "mpi_util.hpp"

using namespace spt;

namespace {

// A NULL out pointer or a bad handle on one rank must not leave the others
// waiting: these checks run inside a collective stage.
template <typename Fn>
void on_all_ranks(MPI_Comm comm, Fn&& fn) {
  mpi::collective(comm, std::forward<Fn>(fn));
}

}  // namespace

extern "C" {

SPT_MPI_API const char* spt_mpi_thread_last_error(void) { return thread_error(); }

SPT_MPI_API spt_status spt_mpi_tensor_create(MPI_Comm comm, spt_context* ctx, spt_dtype dtype, uint32_t order,
                                             const spt_index* dims, spt_nnz local_nnz, const spt_index* indices,
                                             spt_nnz ld, int index_base, const void* values, int flags,
                                             spt_mpi_tensor** out) {
  return guarded(ctx, "spt_mpi_tensor_create", [&] {
    mpi::OwnedComm c(comm);
    on_all_ranks(c.get(), [&] { require_not_null(out, "out"); });
    auto x = std::make_unique<spt_mpi_tensor_s>();
    mpi::create_tensor(c.get(), resolve(ctx), dtype, order, dims, local_nnz, indices, ld, index_base, values, flags,
                       *x);
    *out = x.release();
  });
}

SPT_MPI_API spt_status spt_mpi_read(MPI_Comm comm, spt_context* ctx, const char* path, const spt_read_options* opts,
                                    spt_mpi_tensor** out) {
  return guarded(ctx, "spt_mpi_read", [&] {
    mpi::OwnedComm c(comm);
    io::ReadOptions o;
    on_all_ranks(c.get(), [&] {
      require_not_null(out, "out");
      require_not_null(path, "path");
      o = io::read_options_from(opts);
    });
    auto x = std::make_unique<spt_mpi_tensor_s>();
    mpi::read_tensor(c.get(), resolve(ctx), path, o, *x);
    *out = x.release();
  });
}

SPT_MPI_API spt_status spt_mpi_tensor_free(spt_mpi_tensor* x) {
  delete x;
  return SPT_OK;
}

SPT_MPI_API spt_status spt_mpi_tensor_info(spt_context* ctx, const spt_mpi_tensor* x, spt_mpi_tensor_summary* info) {
  return guarded(ctx, "spt_mpi_tensor_info", [&] {
    require_not_null(x, "x");
    require_not_null(info, "info");
    spt_mpi_tensor_summary s;
    std::memset(&s, 0, sizeof(s));
    s.dtype = x->local.dtype();
    s.order = x->local.order();
    s.global_nnz = x->global_nnz;
    s.local_nnz = x->local.nnz;
    write_info(info, s, sizeof(spt_mpi_tensor_summary), "spt_mpi_tensor_summary");
  });
}

SPT_MPI_API spt_status spt_mpi_tensor_dims(const spt_mpi_tensor* x, spt_index* dims) {
  return guarded("spt_mpi_tensor_dims", [&] {
    require_not_null(x, "x");
    require_not_null(dims, "dims");
    for (uint32_t m = 0; m < x->local.order(); ++m) dims[m] = x->local.dims[m];
  });
}

SPT_MPI_API spt_status spt_mpi_tensor_local(const spt_mpi_tensor* x, const spt_coo** local) {
  return guarded("spt_mpi_tensor_local", [&] {
    require_not_null(x, "x");
    require_not_null(local, "local");
    *local = &x->local;
  });
}

SPT_MPI_API spt_status spt_mpi_tensor_gather(MPI_Comm comm, spt_context* ctx, const spt_mpi_tensor* x, int root,
                                             spt_coo** out) {
  return guarded(ctx, "spt_mpi_tensor_gather", [&] {
    mpi::OwnedComm c(comm);
    on_all_ranks(c.get(), [&] {
      require_not_null(x, "x");
      require_not_null(out, "out");
    });
    *out = nullptr;
    auto whole = std::make_unique<spt_coo_s>();
    if (mpi::gather_tensor(c.get(), *x, root, *whole)) *out = whole.release();
  });
}

SPT_MPI_API spt_status spt_mpi_cpd_options_init_size(spt_mpi_cpd_options* opts, size_t struct_size) {
  return guarded("spt_mpi_cpd_options_init", [&] {
    spt_mpi_cpd_options d{};
    set_cpd_defaults(d);
    d.format = SPT_TENSOR_FORMAT_AUTO;
    d.decomposition = SPT_MPI_MEDIUM_GRAINED;
    d.grid = nullptr;
    write_options_defaults(opts, struct_size, d, sizeof(spt_mpi_cpd_options));
  });
}

SPT_MPI_API spt_status spt_mpi_cpd_als(MPI_Comm comm, spt_context* ctx, const spt_mpi_tensor* x,
                                       const spt_mpi_cpd_options* opts, spt_mpi_ktensor** out) {
  return guarded(ctx, "spt_mpi_cpd_als", [&]() -> spt_status {
    mpi::OwnedComm c(comm);
    on_all_ranks(c.get(), [&] {
      require_not_null(x, "x");
      require_not_null(opts, "opts");
      require_not_null(out, "out");
      require(opts->struct_size == sizeof(spt_mpi_cpd_options), "opts->struct_size is ", opts->struct_size,
              ", expected ", sizeof(spt_mpi_cpd_options), "; initialise the options with spt_mpi_cpd_options_init()");
    });
    auto k = std::make_unique<spt_mpi_ktensor_s>();
    const spt_status status = mpi::cpd_als(c.get(), resolve(ctx), *x, *opts, *k);
    *out = k.release();
    return status;
  });
}

SPT_MPI_API spt_status spt_mpi_ktensor_free(spt_mpi_ktensor* k) {
  delete k;
  return SPT_OK;
}

SPT_MPI_API spt_status spt_mpi_ktensor_local(const spt_mpi_ktensor* k, spt_ktensor** local) {
  return guarded("spt_mpi_ktensor_local", [&] {
    require_not_null(k, "k");
    require_not_null(local, "local");
    *local = const_cast<spt_ktensor_s*>(&k->local);
  });
}

SPT_MPI_API spt_status spt_mpi_ktensor_rows(const spt_mpi_ktensor* k, uint32_t mode, const uint64_t** rows,
                                            spt_nnz* count) {
  return guarded("spt_mpi_ktensor_rows", [&] {
    require_not_null(k, "k");
    require(mode < k->rows.size(), "mode must be below the order ", k->rows.size(), ", got ", mode);
    if (rows) *rows = k->rows[mode].data();
    if (count) *count = k->rows[mode].size();
  });
}

SPT_MPI_API spt_status spt_mpi_ktensor_stats(const spt_mpi_ktensor* k, spt_mpi_cpd_stats* stats) {
  return guarded("spt_mpi_ktensor_stats", [&] {
    require_not_null(k, "k");
    require_not_null(stats, "stats");
    require(stats->struct_size >= sizeof(size_t), "stats->struct_size must be set to sizeof(spt_mpi_cpd_stats)");
    const size_t n = std::min(stats->struct_size, sizeof(spt_mpi_cpd_stats));
    spt_mpi_cpd_stats copy = k->stats;
    copy.struct_size = n;
    std::memcpy(static_cast<void*>(stats), &copy, n);
  });
}

SPT_MPI_API spt_status spt_mpi_ktensor_gather(MPI_Comm comm, spt_context* ctx, const spt_mpi_ktensor* k, int root,
                                              spt_ktensor** out) {
  return guarded(ctx, "spt_mpi_ktensor_gather", [&] {
    mpi::OwnedComm c(comm);
    on_all_ranks(c.get(), [&] {
      require_not_null(k, "k");
      require_not_null(out, "out");
    });
    *out = nullptr;
    auto whole = std::make_unique<spt_ktensor_s>();
    if (mpi::gather_ktensor(c.get(), *k, root, *whole)) *out = whole.release();
  });
}

}  // extern "C"
