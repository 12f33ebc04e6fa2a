/** \file
 * libsptensor_mpi: distributed-memory CP-ALS over MPI.
 *
 * Public C API of libsptensor_mpi.so (link with -lsptensor_mpi -lsptensor,
 * or `pkg-config sptensor_mpi`). This header compiles as C99 and as C++ and
 * includes <mpi.h>; it contains no C++ types. Every function returns an
 * spt_status (sptensor.h) and never prints, aborts, exits, calls
 * MPI_Abort or lets a C++ exception escape.
 *
 * Conventions (in addition to those of sptensor.h):
 *  - Collective functions (marked "Collective") must be called by every
 *    rank of `comm` with the same scalar arguments. Each stage that can
 *    fail on one rank only (argument checks, opening and parsing its part
 *    of a file, building its local data) ends with an agreement
 *    (MPI_Allreduce), so such a failure makes every rank return the same
 *    status and the same message (the lowest failing rank's) and no rank is
 *    left waiting. Failures that cannot be agreed on, such as running out
 *    of memory in the middle of the sweeps' exchanges, may leave the other
 *    ranks waiting, as in any MPI program. A failure inside MPI itself
 *    returns SPT_ERR_MPI (the error handler is set to MPI_ERRORS_RETURN on
 *    an internal duplicate of `comm`; the caller's communicator is never
 *    modified).
 *  - MPI must be initialised (MPI_Init or MPI_Init_thread) by the caller.
 *    The library calls MPI only from the calling thread (MPI_THREAD_SINGLE
 *    or FUNNELED suffices); OpenMP threads inside a rank follow the context.
 *  - Error messages: with a non-NULL context, spt_last_error(ctx) holds the
 *    message (as for libsptensor calls). With ctx NULL, use
 *    spt_mpi_thread_last_error(): libsptensor_mpi keeps its own
 *    per-thread slot.
 *  - Thread safety: as in sptensor.h. In addition, calls on one
 *    communicator must not overlap from different threads (MPI rule).
 *  - A distributed tensor (spt_mpi_tensor) is the part of a tensor one rank
 *    holds: its nonzeros, with global 0-based coordinates, plus the global
 *    dims and nonzero count agreed by all ranks. No rank ever holds the
 *    whole tensor (except rank 0 while reading a compressed or binary file,
 *    see spt_mpi_read).
 */
#ifndef SPTENSOR_MPI_H
#define SPTENSOR_MPI_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "sptensor/sptensor.h"

/* Export macro: libsptensor_mpi is built with hidden visibility. */
#if defined(__GNUC__) || defined(__clang__)
/** Marks the exported functions of libsptensor_mpi (default visibility). */
#  define SPT_MPI_API __attribute__((visibility("default")))
#else
/** Marks the exported functions of libsptensor_mpi (no attribute needed here). */
#  define SPT_MPI_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** Highest tensor order the MPI backend accepts (process grids and the
 *  statistics struct hold this many entries). */
#define SPT_MPI_MAX_ORDER 16

/** Message of the last failed libsptensor_mpi call on this thread that had
 *  a NULL context ("" when none). Borrowed; valid until the next failing
 *  call on this thread. Thread safe. */
SPT_MPI_API const char *spt_mpi_thread_last_error(void);

/* ------------------------------------------------------------------------ */
/* Distributed tensors                                                      */
/* ------------------------------------------------------------------------ */

/** Opaque distributed sparse tensor: this rank's part of a tensor spread over
 *  the ranks of a communicator. */
typedef struct spt_mpi_tensor_s spt_mpi_tensor;

/** Collective. A distributed tensor from the nonzeros each rank already
 *  holds (any split across ranks; a rank may pass none).
 *  dims: `order` global dims (same on every rank), or NULL on every rank to
 *        infer dims[m] = (largest index in mode m over all ranks) + 1.
 *  local_nnz, indices, ld, index_base, values, flags: this rank's nonzeros,
 *        laid out as in spt_coo_create_from_arrays (mode-major, indices[m*ld
 *        + k]; ld >= local_nnz; base 0 or 1; values of `dtype`; flags
 *        SPT_COO_REJECT_NONFINITE honoured). Arrays may be NULL when
 *        local_nnz is 0. The data is copied; the caller keeps its arrays.
 *  *out receives a new handle on every rank (free with spt_mpi_tensor_free).
 *  Errors (the same on every rank): INVALID_ARGUMENT (order, dtype or dims
 *  differ between ranks, index outside dims or below the base, no
 *  nonzeros on any rank when dims are inferred, non-finite value rejected),
 *  OUT_OF_MEMORY, MPI. */
SPT_MPI_API spt_status spt_mpi_tensor_create(MPI_Comm comm, spt_context *ctx, spt_dtype dtype, uint32_t order,
                                             const spt_index *dims, spt_nnz local_nnz, const spt_index *indices,
                                             spt_nnz ld, int index_base, const void *values, int flags,
                                             spt_mpi_tensor **out);

/** Collective. Read a tensor file in parallel.
 *  Uncompressed FROSTT .tns text (and the extended variant with an
 *  order/dims header): every rank reads only its byte range of the file
 *  (cut at line boundaries) with POSIX reads, so the file must be visible
 *  to every rank under `path` (same host or a shared file system). Rank r
 *  keeps the nonzeros of its byte range, in file order; spt_mpi_cpd_als
 *  redistributes them (all-to-all) into its process grid.
 *  Uncompressed binary files (.sptb, SPLATT coordinate .bin): every rank
 *  checks the header and reads only its equal share of the nonzeros (one
 *  slice of each index array and of the values); for .sptb every rank
 *  also hashes its share of the checksum blocks and rank 0 checks the
 *  stored checksum. No rank holds more than its share.
 *  Compressed files (gzip, xz, zstd) cannot be read from the middle: rank 0
 *  reads the whole tensor with spt_read and scatters it in equal blocks of
 *  nonzeros, so rank 0 needs memory for the whole tensor once.
 *  opts: as for spt_read (NULL = defaults); duplicates must be
 *  SPT_DUPLICATES_KEEP (CP-ALS treats repeated coordinates as summed).
 *  Errors (the same status and message on every rank, no hang): IO (file
 *  missing or unreadable on some rank), PARSE ("FILE:LINE: ..." with the
 *  global line number of the first problem in file order), OVERFLOW,
 *  UNSUPPORTED (duplicates policy other than KEEP, compression not
 *  compiled in), INVALID_ARGUMENT, OUT_OF_MEMORY, MPI. */
SPT_MPI_API spt_status spt_mpi_read(MPI_Comm comm, spt_context *ctx, const char *path, const spt_read_options *opts,
                                    spt_mpi_tensor **out);

/** Free a distributed tensor (local; not collective). NULL is ignored. */
SPT_MPI_API spt_status spt_mpi_tensor_free(spt_mpi_tensor *x);

/** What a distributed tensor holds (spt_mpi_tensor_info). Set struct_size
 *  = sizeof(spt_mpi_tensor_summary) before the call; later versions may
 *  append fields. */
typedef struct spt_mpi_tensor_summary {
  size_t struct_size; /**< set by the caller */
  spt_dtype dtype;    /**< out: value type */
  uint32_t order;     /**< out: number of modes (spt_mpi_tensor_dims gives the global dims) */
  spt_nnz global_nnz; /**< out: nonzeros over all ranks */
  spt_nnz local_nnz;  /**< out: nonzeros this rank holds */
} spt_mpi_tensor_summary;

/** Local (not collective). Describe a distributed tensor into *info. Only
 *  info->struct_size bytes are written (struct_size is kept: a newer
 *  caller's longer struct keeps its tail). Nothing is allocated and nothing
 *  in *info needs freeing. ctx (may be NULL: the message then goes to
 *  spt_mpi_thread_last_error) receives the error message.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL x or info, info->struct_size
 *  smaller than sizeof(spt_mpi_tensor_summary) of this release, e.g. 0).
 *  Thread safe on a shared read-only handle. */
SPT_MPI_API spt_status spt_mpi_tensor_info(spt_context *ctx, const spt_mpi_tensor *x, spt_mpi_tensor_summary *info);

/** Global dims into `dims` (order entries). Local. */
SPT_MPI_API spt_status spt_mpi_tensor_dims(const spt_mpi_tensor *x, spt_index *dims);

/** Borrowed COO tensor of this rank's nonzeros (global 0-based coordinates,
 *  global dims), valid until x is freed. Local. */
SPT_MPI_API spt_status spt_mpi_tensor_local(const spt_mpi_tensor *x, const spt_coo **local);

/** Collective. Gather all nonzeros to `root` in rank order (rank 0's
 *  nonzeros first): *out on root receives a new COO tensor (caller frees),
 *  on the other ranks *out is set to NULL. For tests and small tensors
 *  only: the root holds the whole tensor. Errors: INVALID_ARGUMENT (root
 *  out of range), OUT_OF_MEMORY, MPI. */
SPT_MPI_API spt_status spt_mpi_tensor_gather(MPI_Comm comm, spt_context *ctx, const spt_mpi_tensor *x, int root,
                                             spt_coo **out);

/* ------------------------------------------------------------------------ */
/* Distributed CP-ALS                                                       */
/* ------------------------------------------------------------------------ */

/** How the tensor and the factor matrices are distributed. */
typedef enum spt_mpi_decomposition {
  /** Medium-grained (Smith & Karypis, IPDPS 2016): a p_1 x ... x p_N process
   *  grid; mode n cut into p_n chunks with balanced nonzero counts (of
   *  consecutive ids, or of shuffled ids when that balances the blocks
   *  better); each
   *  rank holds one block of the tensor (stored once) and only the factor
   *  rows its block touches. Per mode: local MTTKRP, partial rows summed at
   *  their owner inside the layer (the P/p_n ranks sharing the chunk),
   *  owners solve, updated rows sent back to the layer ranks that use
   *  them. */
  SPT_MPI_MEDIUM_GRAINED = 0,
  /** Coarse-grained (1-D per mode): for each mode n the tensor is split
   *  into P chunks of whole mode-n slices (balanced by nonzeros) and each
   *  rank holds its chunk of every mode (the tensor is stored N times).
   *  MTTKRP rows are complete locally (no reduction); updated rows are sent
   *  to every rank whose slices use them. For comparison. */
  SPT_MPI_COARSE_GRAINED = 1,
  SPT_MPI_DECOMPOSITION_MAX_ENUM = 0x7FFFFFFF /**< not a value */
} spt_mpi_decomposition;

/** Communication and balance counters of a distributed CP-ALS. Bytes are
 *  payload bytes sent to other ranks (messages to oneself are not counted);
 *  "per iteration" values are means over the sweeps done. Identical on
 *  every rank unless marked "this rank". */
typedef struct spt_mpi_cpd_stats {
  size_t struct_size;            /**< set by the caller: sizeof(spt_mpi_cpd_stats) */
  int ranks;                     /**< communicator size P */
  uint32_t order;                /**< tensor order N */
  int grid[SPT_MPI_MAX_ORDER];   /**< process grid p_n (coarse: P in every mode) */
  spt_nnz nnz_min;               /**< fewest nonzeros on a rank (coarse: per mode copy, min over modes) */
  spt_nnz nnz_max;               /**< most nonzeros on a rank (coarse: max over modes) */
  double nnz_imbalance;          /**< nnz_max / mean nonzeros per rank (1 = perfect) */
  double bytes_per_iteration;    /**< all ranks: every message of a sweep (reduce + expand + allreduce) */
  double bytes_reduce_per_iteration; /**< all ranks: partial MTTKRP rows sent to their owners */
  double bytes_expand_per_iteration; /**< all ranks: updated factor rows sent to their users */
  double bytes_allreduce_per_iteration; /**< all ranks: Gram matrices, norms and fit terms, modelled as a
                                              ring all-reduce: 2 x payload x (P-1) */
  double max_rank_bytes_per_iteration;  /**< the busiest rank's reduce + expand bytes per sweep */
  double model_bytes_per_iteration;  /**< prediction of reduce + expand bytes: sum over modes and rows of
                                          (ranks using the row - 1) x 2 (medium; x 1 coarse) x rank x value size,
                                          the connectivity-1 volume of this partition */
  double dense_bound_bytes_per_iteration; /**< Smith & Karypis worst case for this grid: sum over modes of
                                               2 x I_n x (P/p_n - 1) x rank x value size (coarse: I_n x (P-1)) */
  uint64_t setup_bytes;          /**< all ranks: bytes moved while distributing (nonzeros, row lists) */
  double setup_seconds;          /**< distribution and planning time (rank 0's clock) */
  double seconds_per_iteration;  /**< mean sweep time (slowest rank) */
  spt_nnz local_nnz;             /**< this rank: nonzeros it holds (coarse: summed over its mode copies) */
  spt_nnz local_factor_rows;     /**< this rank: factor rows it stores, summed over modes */
  double mttkrp_seconds_per_iteration;    /**< local MTTKRPs per sweep (slowest rank) */
  double exchange_seconds_per_iteration;  /**< reduce + expand exchanges per sweep, waiting included (slowest rank) */
  double allreduce_seconds_per_iteration; /**< Gram/norm/fit all-reduces per sweep, waiting included (slowest rank) */
} spt_mpi_cpd_stats;

/** What the per-iteration callback receives (identical on every rank). */
typedef struct spt_mpi_iteration_info {
  int iteration;             /**< 1-based sweep number */
  double fit;                /**< fit after this sweep */
  double delta;              /**< |fit change| */
  double seconds;            /**< sweep time (slowest rank) */
  double bytes;              /**< all ranks: bytes sent in this sweep */
  double bytes_reduce;       /**< all ranks: partial rows to owners */
  double bytes_expand;       /**< all ranks: updated rows to users */
  double bytes_allreduce;    /**< all ranks: Grams, norms, fit terms */
} spt_mpi_iteration_info;

/** Per-iteration callback, called on every rank after each sweep. Return
 *  non-zero to stop: the run stops when any rank asks (decided jointly, so
 *  ranks never disagree). Must not call MPI on the CP-ALS communicator. */
typedef int (*spt_mpi_cpd_callback)(void *user_data, const spt_mpi_iteration_info *info);

/** Options of spt_mpi_cpd_als. Initialise with spt_mpi_cpd_options_init().
 *  The numerical fields mean what they mean in spt_cpd_options. */
typedef struct spt_mpi_cpd_options {
  size_t struct_size;                 /**< set by spt_mpi_cpd_options_init */
  spt_index rank;                     /**< components (default 10) */
  int max_iters;                      /**< maximum sweeps (default 50) */
  double tol;                         /**< stop when |fit change| < tol after sweep 1 (default 1e-4) */
  spt_cpd_init init;                  /**< SPT_CPD_INIT_RANDOM (default) or _USER */
  uint64_t seed;                      /**< random init seed (0 = the context seed); the factors are those
                                           spt_cpd_als draws from the same seed, whatever P and the grid */
  const spt_matrix *const *init_factors; /**< SPT_CPD_INIT_USER: `order` full matrices dims[m] x rank,
                                              the same on every rank (each rank copies the rows it needs) */
  spt_tensor_format format;           /**< local storage of each rank's block: AUTO (default; chosen per
                                           block as spt_suggest_format does), COO, CSF, HICOO or FCOO, as in
                                           spt_cpd_options (HBCSF and HLS: SPT_ERR_UNSUPPORTED); the result
                                           is the same to rounding */
  spt_mpi_decomposition decomposition; /**< default SPT_MPI_MEDIUM_GRAINED */
  const int *grid;                    /**< medium-grained: `order` grid sizes with product P, or NULL to
                                           choose from the dims as SPLATT does (largest prime factors of P to
                                           the longest modes) */
  spt_mpi_cpd_callback callback;      /**< optional, see spt_mpi_cpd_callback */
  void *callback_data;                /**< passed to callback */
} spt_mpi_cpd_options;

/** Fill `opts` with defaults (writing struct_size bytes, see the
 *  spt_mpi_cpd_options_init macro). Errors: INVALID_ARGUMENT (NULL opts,
 *  struct_size below this release's size). Thread safe. */
SPT_MPI_API spt_status spt_mpi_cpd_options_init_size(spt_mpi_cpd_options *opts, size_t struct_size);
/** Macro form of spt_mpi_cpd_options_init(): calls spt_mpi_cpd_options_init_size with sizeof *(opts), so a
 *  program never has more bytes written than its own struct holds. */
#define spt_mpi_cpd_options_init(opts) spt_mpi_cpd_options_init_size((opts), sizeof *(opts))

/** Distributed result: lambda and, per mode, the factor rows this rank
 *  owns, with their global row numbers. */
typedef struct spt_mpi_ktensor_s spt_mpi_ktensor;

/** Collective. CP-ALS of the distributed tensor x over `comm` (the ranks
 *  x was created on, in the same order), with the numerics of spt_cpd_als:
 *  from the same initial factors (the same seed, or the same
 *  init_factors) the fit equals spt_cpd_als's up to rounding (summation
 *  order), for any P and grid. The final model is arranged (unit columns,
 *  lambda sorted descending) and sign-fixed as spt_cpd_als does.
 *  Setup: the process grid is chosen (or opts->grid checked), each mode is
 *  cut by nonzero counts, the nonzeros move to their ranks (all-to-all),
 *  every factor row gets one owner among the ranks that use it, and the
 *  send/receive lists are built once. Ranks with no nonzeros take part
 *  normally.
 *  GPUs: with ctx's backend CUDA forced (spt_context_set_backend), each
 *  rank's local MTTKRPs run on one GPU: format AUTO or COO on the device
 *  COO MTTKRP (its block's device copy made once), HiCOO and F-COO on
 *  their device kernels, CSF on the CPU; the factor rows are copied to the
 *  GPU and the output back on every call, and the exchanges, solves and
 *  fit stay on the host. The GPU is the one spt_context_set_device(s)
 *  chose, else the rank's number among the ranks of its host modulo the
 *  visible GPUs (one rank per GPU when there are as many ranks as GPUs).
 *  Under AUTO the whole run stays on the CPU (the copies cost more than
 *  the GPU gains over a many-core host). The result equals the CPU run's
 *  up to rounding. ctx's backend and device are restored on return.
 *  *out receives, on every rank, a new spt_mpi_ktensor holding this rank's
 *  owned rows (kept distributed); spt_mpi_ktensor_gather collects the full
 *  factors on one rank when the caller wants them there.
 *  Returns SPT_OK when converged, SPT_WARN_NOT_CONVERGED at the iteration
 *  limit or when the callback stopped it (the result is valid).
 *  Errors (the same on every rank): INVALID_ARGUMENT (options as for
 *  spt_cpd_als; grid product != P or wrong count; order above
 *  SPT_MPI_MAX_ORDER; x's nonzero count differs from the ranks' sum, i.e.
 *  another communicator), NUMERICAL, OUT_OF_MEMORY (naming the rank), DEVICE
 *  (a rank's GPU MTTKRP with CUDA forced), MPI. A failure on some ranks only,
 *  also in the middle of the sweeps, is reported on every rank with the
 *  message of the lowest failing rank; no rank is left waiting (an error
 *  raised inside the MPI library itself during an exchange excepted). */
SPT_MPI_API spt_status spt_mpi_cpd_als(MPI_Comm comm, spt_context *ctx, const spt_mpi_tensor *x,
                                       const spt_mpi_cpd_options *opts, spt_mpi_ktensor **out);

/** Free a distributed result (local). NULL is ignored. */
SPT_MPI_API spt_status spt_mpi_ktensor_free(spt_mpi_ktensor *k);

/** Borrowed spt_ktensor of this rank's part: lambda (complete, the same on
 *  every rank), fit, iterations, converged flag and history (spt_ktensor_result /
 *  spt_ktensor_history work on it); factor m has spt_mpi_ktensor_rows(m)
 *  rows (its dims are those counts, not the global dims). Valid until k is
 *  freed. Local. */
SPT_MPI_API spt_status spt_mpi_ktensor_local(const spt_mpi_ktensor *k, spt_ktensor **local);

/** Global 0-based row numbers of this rank's rows of factor `mode`
 *  (ascending; borrowed, valid until k is freed) and their count. Every
 *  global row is owned by exactly one rank. Local. Errors:
 *  INVALID_ARGUMENT (mode out of range). */
SPT_MPI_API spt_status spt_mpi_ktensor_rows(const spt_mpi_ktensor *k, uint32_t mode, const uint64_t **rows,
                                            spt_nnz *count);

/** Copy the run's counters into *stats (set stats->struct_size first; a
 *  smaller struct gets its first struct_size bytes). Local. */
SPT_MPI_API spt_status spt_mpi_ktensor_stats(const spt_mpi_ktensor *k, spt_mpi_cpd_stats *stats);

/** Collective. The full model on `root`: *out receives a new spt_ktensor
 *  (global dims, the result record and history included; caller frees with
 *  spt_ktensor_free); on other ranks *out is set to NULL. Errors:
 *  INVALID_ARGUMENT (root out of range), OUT_OF_MEMORY, MPI. */
SPT_MPI_API spt_status spt_mpi_ktensor_gather(MPI_Comm comm, spt_context *ctx, const spt_mpi_ktensor *k, int root,
                                              spt_ktensor **out);

/* ------------------------------------------------------------------------ */
/* Communicators as Fortran handles (Fortran, Python/mpi4py, other FFIs)     */
/* ------------------------------------------------------------------------ */

/* The C type MPI_Comm is implementation specific (a pointer in Open MPI, an
 * int in MPICH), so foreign-language callers cannot pass one portably. The
 * functions below take the communicator's Fortran handle instead (MPI_Fint,
 * a C int): MPI_COMM_WORLD of `use mpi`, comm%MPI_VAL of `use mpi_f08`, or
 * comm.py2f() of an mpi4py communicator. Each converts it with MPI_Comm_f2c
 * and then behaves exactly as the MPI_Comm function of the same name
 * (collective, same arguments, errors and messages). The Fortran module
 * sptensor_mpi (sptensor_mpi.f90) and the Python module sptensor.mpi use
 * them. Handles are only valid between MPI_Init and MPI_Finalize: outside
 * that window these return SPT_ERR_MPI ("MPI is not initialised"); a handle
 * MPI_Comm_f2c maps to MPI_COMM_NULL gives SPT_ERR_INVALID_ARGUMENT. */

/** spt_mpi_tensor_create with the communicator given as a Fortran handle
 *  (MPI_Comm_f2c(comm)); arguments, collectiveness and errors as there. */
SPT_MPI_API spt_status spt_mpi_tensor_create_fcomm(MPI_Fint comm, spt_context *ctx, spt_dtype dtype, uint32_t order,
                                                   const spt_index *dims, spt_nnz local_nnz,
                                                   const spt_index *indices, spt_nnz ld, int index_base,
                                                   const void *values, int flags, spt_mpi_tensor **out);

/** spt_mpi_read with the communicator given as a Fortran handle
 *  (MPI_Comm_f2c(comm)); arguments, collectiveness and errors as there. */
SPT_MPI_API spt_status spt_mpi_read_fcomm(MPI_Fint comm, spt_context *ctx, const char *path,
                                          const spt_read_options *opts, spt_mpi_tensor **out);

/** spt_mpi_tensor_gather with the communicator given as a Fortran handle
 *  (MPI_Comm_f2c(comm)); arguments, collectiveness and errors as there. */
SPT_MPI_API spt_status spt_mpi_tensor_gather_fcomm(MPI_Fint comm, spt_context *ctx, const spt_mpi_tensor *x,
                                                   int root, spt_coo **out);

/** spt_mpi_cpd_als with the communicator given as a Fortran handle
 *  (MPI_Comm_f2c(comm)); arguments, collectiveness and errors as there. */
SPT_MPI_API spt_status spt_mpi_cpd_als_fcomm(MPI_Fint comm, spt_context *ctx, const spt_mpi_tensor *x,
                                             const spt_mpi_cpd_options *opts, spt_mpi_ktensor **out);

/** spt_mpi_ktensor_gather with the communicator given as a Fortran handle
 *  (MPI_Comm_f2c(comm)); arguments, collectiveness and errors as there. */
SPT_MPI_API spt_status spt_mpi_ktensor_gather_fcomm(MPI_Fint comm, spt_context *ctx, const spt_mpi_ktensor *k,
                                                    int root, spt_ktensor **out);

#ifdef __cplusplus
}
#endif

#endif /* SPTENSOR_MPI_H */
