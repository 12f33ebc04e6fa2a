/** \file
 * libsptensor: csf API (included by sptensor/sptensor.h).
 *
 * CSF (compressed sparse fiber, as in SPLATT) stores a tensor as trees: for
 * a mode order (a permutation of the modes) the nonzeros are sorted in that
 * order and each level keeps the distinct index prefixes once, with pointers
 * to their children; the leaves hold the last mode's indices and the values.
 * An MTTKRP walks a tree and multiplies each factor row once per fiber
 * instead of once per nonzero. A handle keeps one tree (ONEMODE), two
 * (TWOMODE) or one per mode (ALLMODE, the fastest MTTKRPs, the most memory).
 *
 * Thread safety: a spt_csf handle is immutable after spt_csf_from_coo; any
 * number of threads may run spt_mttkrp_csf / spt_cpd_als_csf on the same
 * handle at once (with distinct outputs and contexts). spt_csf_free must not
 * race with other use of the handle.
 *
 * spt_cpd_als itself runs on CSF for tensors of order >= 3 unless
 * spt_cpd_options.format says otherwise (building the trees on each call);
 * build a spt_csf once and call spt_cpd_als_csf to reuse them. */
#ifndef SPTENSOR_CSF_H
#define SPTENSOR_CSF_H

#include "sptensor/sptensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque CSF tensor handle. */
typedef struct spt_csf_s spt_csf;

/** Options of spt_csf_from_coo. Initialise with spt_csf_options_init()
 *  first: struct_size lets later versions append fields compatibly. */
typedef struct spt_csf_options {
  size_t struct_size;    /**< set by spt_csf_options_init */
  spt_csf_policy policy; /**< trees to keep (default SPT_CSF_AUTO; SPT_CSF_MEMOIZED is CP-ALS only) */
} spt_csf_options;

/** Fill `opts` with the defaults (policy SPT_CSF_AUTO).
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL). Thread safe. */
SPT_API spt_status spt_csf_options_init(spt_csf_options *opts);
/** Same, writing only the first `struct_size` bytes (the caller's
 *  sizeof(spt_csf_options)); see spt_cpd_options_init_size.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (opts NULL, struct_size too small). Thread safe. */
SPT_API spt_status spt_csf_options_init_size(spt_csf_options *opts, size_t struct_size);
/** Macro form of spt_csf_options_init(): calls spt_csf_options_init_size with sizeof *(opts), so a
 *  program never has more bytes written than its own struct holds. */
#define spt_csf_options_init(opts) spt_csf_options_init_size((opts), sizeof *(opts))

/** Build a CSF tensor from a COO tensor (order >= 2, either dtype).
 *  The COO is copied (sorted copies of its coordinates; `x` itself is not
 *  modified) and may be freed afterwards. Repeated coordinates are kept as
 *  separate leaves and summed by the kernels, as the COO kernels do.
 *  `opts` may be NULL for the defaults. opts->policy: SPT_CSF_ONEMODE (one
 *  tree, shortest mode at the root; other modes by increasing length),
 *  SPT_CSF_TWOMODE (plus a tree rooted at the first tree's leaf mode),
 *  SPT_CSF_ALLMODE (one tree rooted at each mode), SPT_CSF_AUTO (ALLMODE
 *  when its trees take at most about 4x the COO's bytes, else ONEMODE; of
 *  the ALLMODE trees it keeps the first and those some mode's MTTKRP runs
 *  on, so it may hold fewer than one per mode; spt_csf_info tells which
 *  policy was chosen and which trees were kept).
 *  On success *out receives a new handle owned by the caller (free with
 *  spt_csf_free); on error *out is unchanged.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL x or out, order < 2, unknown
 *  policy, opts->struct_size too small), SPT_ERR_UNSUPPORTED (policy
 *  SPT_CSF_MEMOIZED, a CP-ALS strategy), SPT_ERR_OUT_OF_MEMORY. Thread
 *  safe for distinct outputs. */
SPT_API spt_status spt_csf_from_coo(spt_context *ctx, const spt_coo *x, const spt_csf_options *opts, spt_csf **out);

/** Free a CSF tensor and everything it owns; NULL is a no-op. Always
 *  returns SPT_OK. Must not race with any other use of the handle. */
SPT_API spt_status spt_csf_free(spt_csf *x);

/** Largest order spt_csf_info reports mode orders for (trees of larger
 *  tensors are still described by count and bytes). */
#define SPT_CSF_SUMMARY_MAX_ORDER 16

/** What a CSF handle holds (spt_csf_info). Set struct_size =
 *  sizeof(spt_csf_summary) before the call; later versions may append
 *  fields. */
typedef struct spt_csf_summary {
  size_t struct_size;       /**< set by the caller */
  spt_dtype dtype;          /**< value type */
  uint32_t order;           /**< number of modes */
  spt_nnz nnz;              /**< number of nonzeros (leaves of each tree) */
  spt_csf_policy policy;    /**< the policy used (AUTO resolved) */
  uint32_t trees;           /**< number of trees */
  uint64_t bytes;           /**< index, pointer and value bytes of all trees */
  /** mode_order[t][l]: mode at level l of tree t (0-based; filled for
   *  t < SPT_CSF_SUMMARY_MAX_ORDER and order <= SPT_CSF_SUMMARY_MAX_ORDER, else
   *  left at 0). Level 0 is the root. */
  uint32_t mode_order[SPT_CSF_SUMMARY_MAX_ORDER][SPT_CSF_SUMMARY_MAX_ORDER];
  /** tree_for_mode[m]: the tree an MTTKRP in mode m runs on (chosen at
   *  spt_csf_from_coo by a cost model: nodes per level, weighted up where
   *  factor rows are gathered from matrices larger than the L2 cache);
   *  filled for m < SPT_CSF_SUMMARY_MAX_ORDER. */
  uint32_t tree_for_mode[SPT_CSF_SUMMARY_MAX_ORDER];
} spt_csf_summary;

/** Describe a CSF tensor into *info (info->struct_size must be set; a
 *  larger struct_size from a newer caller gets only this version's fields,
 *  struct_size is kept). ctx (may be NULL) receives the error message.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL x or info, struct_size smaller
 *  than sizeof(spt_csf_summary)). Thread safe. */
SPT_API spt_status spt_csf_info(spt_context *ctx, const spt_csf *x, spt_csf_summary *info);

/** Dims of a CSF tensor into the caller's dims[0..order-1].
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL). Thread safe. */
SPT_API spt_status spt_csf_dims(const spt_csf *x, spt_index *dims);

/** Decode back to a new owning COO tensor (same dims, dtype and nonzeros,
 *  repeated coordinates kept), sorted lexicographically in the mode order
 *  of the handle's first tree (spt_csf_summary.mode_order[0]). *out is
 *  owned by the caller (spt_coo_free); on error *out is unchanged.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL), SPT_ERR_OUT_OF_MEMORY. Thread
 *  safe for distinct outputs. */
SPT_API spt_status spt_csf_to_coo(spt_context *ctx, const spt_csf *x, spt_coo **out);

/** Number of fibers (nodes) on `level` of tree `tree` (the leaf level
 *  order-1 has nnz nodes), e.g. to see how well a tree compresses.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL, tree or level out of range). */
SPT_API spt_status spt_csf_fibers(const spt_csf *x, uint32_t tree, uint32_t level, spt_nnz *count);

/** MTTKRP on a CSF tensor: out (dims[mode] x R) = X_(mode) times the
 *  Khatri-Rao product of every other mode's factor, exactly as spt_mttkrp
 *  on the COO the handle was built from (to rounding).
 *  factors: order matrices dims[m] x R of the tensor's dtype (any layout);
 *  factors[mode] is not read and may be NULL. out: dims[mode] x R of the
 *  same dtype, overwritten; it must not be one of the read factors.
 *  Runs on the tree a cost model rates cheapest for `mode` (see
 *  spt_csf_summary.tree_for_mode): usually the tree rooted at `mode`
 *  (race-free output rows), but a deeper level of another tree when that
 *  keeps large factor matrices near the roots, where their rows are read in
 *  order (deeper levels resolve conflicts with per-thread private outputs
 *  or atomic adds). Summation order depends on the tree and the thread
 *  count, not on timing: results repeat exactly for a fixed thread count
 *  (except with atomic adds, used only for very large output modes).
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL, mode out of range, wrong shapes
 *  or dtypes, out aliasing a factor). */
SPT_API spt_status spt_mttkrp_csf(spt_context *ctx, const spt_csf *x, const spt_matrix *const *factors,
                                  uint32_t mode, spt_matrix *out);

/** CP-ALS on a CSF tensor, the same as spt_cpd_als (same numerics, result,
 *  status codes and ownership of *out) with every MTTKRP on `x`;
 *  opts->format and opts->csf_policy are ignored (the handle's trees are
 *  used). ||X|| is computed from the leaf values. Thread safe for
 *  distinct outputs. */
SPT_API spt_status spt_cpd_als_csf(spt_context *ctx, const spt_csf *x, const spt_cpd_options *opts,
                                   spt_ktensor **out);

#ifdef __cplusplus
}
#endif

#endif /* SPTENSOR_CSF_H */
