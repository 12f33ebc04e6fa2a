/** \file
 * libsptensor: B-CSF / HB-CSF API (included by sptensor/sptensor.h).
 *
 * B-CSF and HB-CSF (Nisa et al., "Load-Balanced Sparse MTTKRP on GPUs",
 * §IV-V) lay a tensor out for the MTTKRP in one mode, the root, so that a
 * GPU keeps its warps and thread blocks evenly busy:
 *
 *  - B-CSF is a CSF tree rooted at the root mode (the other modes by
 *    increasing length below it, as spt_csf) in which every fiber (a node of
 *    the last level above the leaves) longer than `fiber_threshold`
 *    nonzeros is cut into segments of at most that many (fiber splitting:
 *    one warp per segment), and every slice is cut at segment boundaries
 *    into work units of at most `slice_split_nnz` nonzeros (slice splitting:
 *    one thread block per unit; a slice cut into several units adds its
 *    partial rows together). Units are binned by their nonzero count
 *    (bins of up to slice_bin_min_nnz, 2x, 4x, ... nonzeros) so that a GPU
 *    can give each bin a block size that fits it.
 *  - HB-CSF partitions the slices (root coordinates) into three groups,
 *    each kept in its own layout and processed by its own kernel: slices
 *    with a single nonzero in COO (no pointers at all), slices whose fibers
 *    all hold exactly one nonzero in CSL (compressed slice: slice pointers
 *    straight into per-nonzero coordinates), and all other slices in B-CSF.
 *    Unlike the paper, a CSL-shaped slice with more than slice_split_nnz
 *    nonzeros goes to B-CSF, whose slice splitting spreads it over thread
 *    blocks (a CSL slice is one task). The groups own disjoint output rows,
 *    so their kernels never conflict.
 *    With SPT_HBCSF_PLAIN_BCSF every slice goes to the B-CSF group.
 *
 * The paper covers orders 3 and 4; this works for any order >= 3. One handle
 * serves the MTTKRP (spt_mttkrp_hbcsf) in its root mode at full speed; it
 * also serves every other mode (the same tree walk,
 * every output row added atomically), in 1/order of the storage of a
 * handle per mode but usually slower, most when the output mode is the leaf
 * level or a long mode (benchmarks/results/README.md compares the two).
 * Fewer than 2^32 nonzeros (every offset is 32-bit). Repeated
 * coordinates are kept as separate nonzeros (the MTTKRP sums them, as the
 * COO kernels do).
 *
 * The host MTTKRP (OpenMP) processes the three groups as the GPU kernels
 * do: one task per COO nonzero, per CSL slice and per B-CSF unit. With the
 * context's backend resolving to CUDA, the MTTKRPs run on the GPU, the
 * three groups in one launch: a lane group per COO nonzero; the CSL group
 * per slice, or in equal chunks of nonzeros when a CSL slice is long; the
 * B-CSF group in equal chunks of leaves per warp (not the paper's slice
 * units: equal chunks balance better, and the fiber segments and units
 * still bound every partial sum), each warp adding one row sum per output
 * row it touches, atomically. The handle's device copy is made on first
 * use and freed with the handle. Orders above 8 run on the host (a verbose
 * log note); under backend AUTO a device failure (e.g. out of memory) runs
 * it on the host with a note in the log, under backend CUDA it is
 * SPT_ERR_DEVICE.
 *
 * Thread safety: a spt_hbcsf handle is immutable after creation; any number
 * of threads may use it at once (with distinct outputs and contexts).
 * spt_hbcsf_free must not race with other use of the handle. */
#ifndef SPTENSOR_HBCSF_H
#define SPTENSOR_HBCSF_H

#include "sptensor/sptensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque B-CSF / HB-CSF tensor handle. */
typedef struct spt_hbcsf_s spt_hbcsf;

/** Flag of spt_hbcsf_options::flags: put every slice in the B-CSF group
 *  (plain B-CSF, no COO or CSL group). */
#define SPT_HBCSF_PLAIN_BCSF 1u

/** Options of spt_hbcsf_from_coo. Always initialise with
 *  spt_hbcsf_options_init() first: struct_size lets later versions append
 *  fields compatibly. */
typedef struct spt_hbcsf_options {
  size_t struct_size;         /**< set by spt_hbcsf_options_init */
  uint32_t root_mode;         /**< the mode of the MTTKRP the handle serves at full speed (default 0) */
  uint32_t fiber_threshold;   /**< most nonzeros per fiber segment; longer fibers are split (default 128, the paper's) */
  uint32_t slice_split_nnz;   /**< most nonzeros per B-CSF work unit (thread block) unless one segment is larger; heavier slices are split (default 512) */
  uint32_t slice_bin_min_nnz; /**< nonzero limit of the first unit bin; bin b holds units of up to slice_bin_min_nnz * 2^b nonzeros, the last bin the rest (default 32, one warp) */
  uint32_t flags;             /**< bitwise OR of SPT_HBCSF_* flags (default 0: the HB-CSF partition) */
} spt_hbcsf_options;

/** Fill `opts` with the defaults (root_mode 0, fiber_threshold 128, slice_split_nnz 512,
 *  slice_bin_min_nnz 32, flags 0). The macro spt_hbcsf_options_init(opts)
 *  calls spt_hbcsf_options_init_size with sizeof *(opts).
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL). Thread safe. */
SPT_API spt_status spt_hbcsf_options_init(spt_hbcsf_options *opts);
/** Same, writing only the first `struct_size` bytes (the caller's
 *  sizeof(spt_hbcsf_options)); see spt_cpd_options_init_size.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (opts NULL, struct_size too small). Thread safe. */
SPT_API spt_status spt_hbcsf_options_init_size(spt_hbcsf_options *opts, size_t struct_size);
/** Macro form of spt_hbcsf_options_init(): calls spt_hbcsf_options_init_size with sizeof *(opts), so a
 *  program never has more bytes written than its own struct holds. */
#define spt_hbcsf_options_init(opts) spt_hbcsf_options_init_size((opts), sizeof *(opts))

/** Build the B-CSF (or HB-CSF) of x rooted at opts->root_mode, for the
 *  MTTKRP in that mode. x: order >= 3, either dtype (kept), fewer than
 *  2^32 nonzeros; it is not modified (the sort works on a copy) and may be
 *  freed afterwards. `opts` may be NULL for the defaults; a 0 tuning field
 *  takes its default. Runs on the context's threads. On success *out
 *  receives a new handle owned by the caller (spt_hbcsf_free); on error
 *  *out is unchanged.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL x or out, root_mode out of range,
 *  slice_bin_min_nnz not a power of two, unknown flags, opts->struct_size
 *  too small), SPT_ERR_UNSUPPORTED (order < 3: use spt_csf or spt_hicoo;
 *  2^32 or more nonzeros), SPT_ERR_OUT_OF_MEMORY. Thread safe for
 *  distinct outputs. */
SPT_API spt_status spt_hbcsf_from_coo(spt_context *ctx, const spt_coo *x, const spt_hbcsf_options *opts,
                                      spt_hbcsf **out);

/** Free a handle (and every array it owns); NULL is a no-op. Always
 *  returns SPT_OK. Must not race with any other use of the handle. */
SPT_API spt_status spt_hbcsf_free(spt_hbcsf *h);

/** What a handle holds (spt_hbcsf_info). Set struct_size =
 *  sizeof(spt_hbcsf_summary) before the call; only that many bytes are
 *  written. */
typedef struct spt_hbcsf_summary {
  size_t struct_size;         /**< set by the caller */
  spt_dtype dtype;            /**< out: value type */
  uint32_t order;             /**< out: number of modes */
  uint32_t root_mode;         /**< out: the mode of the MTTKRP this handle serves */
  uint32_t flags;             /**< out: the SPT_HBCSF_* flags it was built with */
  uint32_t fiber_threshold;   /**< out: resolved option */
  uint32_t slice_split_nnz;   /**< out: resolved option */
  uint32_t slice_bin_min_nnz; /**< out: resolved option */
  uint32_t bins;              /**< out: number of unit bins */
  spt_nnz nnz;                /**< out: nonzeros (all groups) */
  spt_nnz coo_nnz;            /**< out: nonzeros in the COO group (= its slices) */
  spt_nnz csl_nnz;            /**< out: nonzeros in the CSL group */
  spt_nnz bcsf_nnz;           /**< out: nonzeros in the B-CSF group */
  spt_nnz coo_slices;         /**< out: slices in the COO group */
  spt_nnz csl_slices;         /**< out: slices in the CSL group */
  spt_nnz bcsf_slices;        /**< out: slices in the B-CSF group */
  spt_nnz bcsf_fibers;        /**< out: fibers of the B-CSF group before splitting */
  spt_nnz bcsf_segments;      /**< out: fiber segments after splitting (one GPU warp each) */
  spt_nnz split_fibers;       /**< out: fibers cut into more than one segment */
  spt_nnz units;              /**< out: B-CSF work units (one GPU thread block each) */
  spt_nnz split_slices;       /**< out: slices cut into more than one unit */
  uint64_t bytes;             /**< out: bytes of the format (indices, pointers, values, unit tables) */
  uint64_t coo_bytes;         /**< out: bytes of the same tensor in COO (32-bit indices and values), for comparison */
} spt_hbcsf_summary;

/** Fill *info (see spt_hbcsf_summary) for handle h; only
 *  info->struct_size bytes are written (struct_size is kept). ctx (may be
 *  NULL) receives the error message.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL h or info, struct_size smaller
 *  than sizeof(spt_hbcsf_summary)). Thread safe. */
SPT_API spt_status spt_hbcsf_info(spt_context *ctx, const spt_hbcsf *h, spt_hbcsf_summary *info);

/** Dims of the tensor into the caller's dims[0..order-1].
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL). Thread safe. */
SPT_API spt_status spt_hbcsf_dims(const spt_hbcsf *h, spt_index *dims);

/** Decode back to a new owning COO tensor: the same dims, dtype and
 *  nonzeros, sorted lexicographically in the handle's level order (root
 *  first, then the other modes by increasing length; ties by mode number),
 *  repeated coordinates in their original order. *out is owned by the
 *  caller (spt_coo_free); on error *out is unchanged. Runs on the
 *  context's threads.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL), SPT_ERR_OUT_OF_MEMORY. Thread
 *  safe for distinct contexts. */
SPT_API spt_status spt_hbcsf_to_coo(spt_context *ctx, const spt_hbcsf *h, spt_coo **out);

/** MTTKRP of handle h in any mode n = `mode` < order: out (dims[n] x R,
 *  overwritten) = X_(n) times the Khatri-Rao product of the other factors.
 *  factors[m] (dims[m] x R, the tensor's dtype, either layout) is read for
 *  m != n; factors[n] may be NULL; out must not be one of the factors. The
 *  caller keeps ownership of every matrix.
 *  In the handle's root mode (the fast path) each slice group runs its own
 *  kernel; on the CPU the result does not depend on the thread count
 *  (bitwise); on the GPU (backend CUDA, or AUTO with a device) split
 *  slices are summed with atomics, so the last bits may vary from run to
 *  run. In another mode the one tree is walked as for the root and every
 *  partial row is added to out atomically (rows of a non-root mode are
 *  shared by many slices), on the GPU (orders 3-8) or on the context's
 *  threads; the last bits may then vary from run to run (not under backend
 *  REFERENCE, which runs it on one thread).
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL, mode out of range, shapes, dtype,
 *  R = 0), SPT_ERR_OUT_OF_MEMORY, SPT_ERR_DEVICE (backend CUDA forced and
 *  the device failed). Thread safe for distinct outputs. */
SPT_API spt_status spt_mttkrp_hbcsf(spt_context *ctx, const spt_hbcsf *h, const spt_matrix *const *factors,
                                    uint32_t mode, spt_matrix *out);

#ifdef __cplusplus
}
#endif

#endif /* SPTENSOR_HBCSF_H */
