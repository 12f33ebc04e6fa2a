/** \file
 * libsptensor: reorder API (included by sptensor/sptensor.h).
 *
 * Relabelling the indices of a sparse tensor's modes so that nonzeros that
 * share coordinates sit close together, which improves the locality of
 * MTTKRP and of blocked formats (HiCOO blocks become denser). Methods from
 * Li's dissertation, ch. 5: LEXI-ORDER and BFS-MCS; plus random relabelling.
 *
 * Typical use for a decomposition:
 *   spt_reorder_compute(ctx, x, &opts, &perm);   // one permutation per mode
 *   spt_coo_relabel(ctx, x, perm);               // x now uses the new labels
 *   ... spt_cpd_als(ctx, x, &cpd_opts, &model) ...
 *   spt_ktensor_unpermute(ctx, model, perm);     // factors in the caller's labels
 *
 * Permutation convention: perm[m][old] = new. Index `old` of mode m becomes
 * label perm[m][old]: a relabelled tensor has coordinate perm[m][i] where the
 * original had i, and a factor matrix computed on the relabelled tensor holds
 * the row of original index i at row perm[m][i].
 *
 * Thread safety: as for every handle (see sptensor.h). A permutation is not
 * modified by any function after creation, so one permutation may be read by
 * several threads at once (each with its own context).
 */
#ifndef SPTENSOR_REORDER_H
#define SPTENSOR_REORDER_H

#include "sptensor/sptensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Reordering methods. */
typedef enum spt_reorder_method {
  SPT_REORDER_LEXI = 0,    /**< LEXI-ORDER: per mode, slices sorted in non-increasing lexicographic
                                order of their nonzero patterns, iterated over the modes (default) */
  SPT_REORDER_BFS_MCS = 1, /**< BFS-like maximum cardinality search on the tensor's hypergraph */
  SPT_REORDER_RANDOM = 2,   /**< uniformly random relabelling from a seed */
  SPT_REORDER_METHOD_MAX_ENUM = 0x7FFFFFFF /**< not a value: makes every 32-bit int representable (checked at run time) */
} spt_reorder_method;

/** Options for spt_reorder_compute. Always initialise with
 *  spt_reorder_options_init() first: struct_size lets later versions add
 *  fields compatibly. */
typedef struct spt_reorder_options {
  size_t struct_size;        /**< set by spt_reorder_options_init */
  spt_reorder_method method; /**< default SPT_REORDER_LEXI */
  int iterations;            /**< LEXI-ORDER sweeps over all modes, >= 1 (default 3; it stops
                                  earlier when a sweep changes nothing). Ignored by other methods. */
  uint64_t seed;             /**< SPT_REORDER_RANDOM: seed (default 0 = use the context seed,
                                  as CP-ALS does). Ignored by other methods. */
} spt_reorder_options;

/** One permutation per mode of a tensor (opaque). Immutable once created. */
typedef struct spt_permutation_s spt_permutation;

/** Fill `opts` with defaults (LEXI-ORDER, 3 iterations, seed 0).
 *  Errors: INVALID_ARGUMENT (opts NULL). Thread safe. */
SPT_API spt_status spt_reorder_options_init(spt_reorder_options *opts);
/** Same, writing only the first `struct_size` bytes (the caller's
 *  sizeof(spt_reorder_options), which is smaller when the caller was compiled against
 *  an older header); struct_size is stored in opts->struct_size. The macro
 *  spt_reorder_options_init(opts) below calls this with sizeof *(opts), so code compiled
 *  against any release's header never has more bytes written than its
 *  struct holds. Errors: SPT_ERR_INVALID_ARGUMENT (opts NULL, struct_size
 *  below the first release's size). Thread safe. */
SPT_API spt_status spt_reorder_options_init_size(spt_reorder_options *opts, size_t struct_size);
/** Macro form of spt_reorder_options_init(): calls spt_reorder_options_init_size with sizeof *(opts), so a
 *  program never has more bytes written than its own struct holds. */
#define spt_reorder_options_init(opts) spt_reorder_options_init_size((opts), sizeof *(opts))

/** Compute a relabelling of every mode of `x` with the chosen method.
 *  x: any tensor (views included), not modified. LEXI-ORDER counts repeated
 *     coordinates once, BFS-MCS counts every stored nonzero. An empty tensor
 *     gets identity permutations (RANDOM: a random one).
 *  opts: may be NULL for defaults.
 *  out: receives a new permutation (dims = x's dims); free with
 *     spt_permutation_free. The result is deterministic: it depends on the
 *     tensor and the options (and the context seed for RANDOM with seed 0),
 *     not on the thread count. Uses the context's threads.
 *  Errors: INVALID_ARGUMENT (NULL x or out, struct_size too small, unknown
 *  method, iterations < 1), OUT_OF_MEMORY. */
SPT_API spt_status spt_reorder_compute(spt_context *ctx, const spt_coo *x, const spt_reorder_options *opts,
                                       spt_permutation **out);

/** New permutation from caller arrays (copied).
 *  order: number of modes (>= 1); dims: `order` mode sizes (each >= 1).
 *  perms: `order` pointers; perms[m] holds dims[m] labels, perms[m][old] =
 *     new, and must be a permutation of index_base .. index_base+dims[m]-1.
 *  index_base: 0 or 1 (1 for MATLAB/Fortran labels).
 *  Errors: INVALID_ARGUMENT (NULL pointers, bad dims, a label out of range
 *  or repeated: the message names the mode and position), OUT_OF_MEMORY. */
SPT_API spt_status spt_permutation_create(spt_context *ctx, uint32_t order, const spt_index *dims,
                                          const spt_index *const *perms, int index_base, spt_permutation **out);

/** Free a permutation. NULL is ignored. Returns SPT_OK. */
SPT_API spt_status spt_permutation_free(spt_permutation *perm);

/** What a permutation holds (spt_permutation_info). Set struct_size =
 *  sizeof(spt_permutation_summary) before the call; later versions may
 *  append fields. */
typedef struct spt_permutation_summary {
  size_t struct_size; /**< set by the caller */
  uint32_t order;     /**< out: number of modes (spt_permutation_dims gives the mode sizes) */
} spt_permutation_summary;

/** Describe a permutation into *info. Only info->struct_size bytes are
 *  written (struct_size is kept: a newer caller's longer struct keeps its
 *  tail). Nothing is allocated and nothing in *info needs freeing. ctx (may
 *  be NULL) receives the error message.
 *  Errors: INVALID_ARGUMENT (NULL perm or info, info->struct_size smaller
 *  than sizeof(spt_permutation_summary) of this release, e.g. 0).
 *  Thread safe: a permutation is never modified, so any number of threads
 *  may describe it at once. */
SPT_API spt_status spt_permutation_info(spt_context *ctx, const spt_permutation *perm, spt_permutation_summary *info);

/** The `order` mode sizes (labels per mode) into the caller's
 *  dims[0..order-1] (order from spt_permutation_info).
 *  Errors: INVALID_ARGUMENT (perm or dims NULL). Thread safe. */
SPT_API spt_status spt_permutation_dims(const spt_permutation *perm, spt_index *dims);

/** Copy mode `mode`'s permutation (out[old] = new + index_base) into `out`,
 *  which holds `out_len` >= dims[mode] entries.
 *  Errors: INVALID_ARGUMENT (NULL, mode out of range, out_len too small,
 *  index_base not 0/1). */
SPT_API spt_status spt_permutation_get(const spt_permutation *perm, uint32_t mode, spt_index *out,
                                       spt_nnz out_len, int index_base);

/** New permutation undoing `perm` (inverse[m][new] = old). Relabelling with
 *  perm and then with its inverse restores the original coordinates.
 *  Errors: INVALID_ARGUMENT (NULL), OUT_OF_MEMORY. */
SPT_API spt_status spt_permutation_inverse(spt_context *ctx, const spt_permutation *perm, spt_permutation **out);

/** Relabel `x` in place: every coordinate i of mode m becomes perm[m][i].
 *  The nonzeros keep their order and values (a later spt_coo_sort re-sorts
 *  them). x must be an owning tensor; perm's order and dims must equal x's.
 *  Errors: READ_ONLY (x is a view: use spt_coo_relabeled_copy),
 *  INVALID_ARGUMENT (NULL, shape mismatch; x unchanged), OUT_OF_MEMORY. */
SPT_API spt_status spt_coo_relabel(spt_context *ctx, spt_coo *x, const spt_permutation *perm);

/** New owning tensor: a relabelled copy of `x` (x, which may be a view, is
 *  not modified). Errors as spt_coo_relabel, without READ_ONLY. */
SPT_API spt_status spt_coo_relabeled_copy(spt_context *ctx, const spt_coo *x, const spt_permutation *perm,
                                          spt_coo **out);

/** Move the rows of a factor matrix for mode `mode` from the caller's index
 *  space into the relabelled tensor's: row i moves to row perm[mode][i].
 *  Use it for initial factors (SPT_CPD_INIT_USER) of a decomposition run on
 *  a relabelled tensor. Works in place on any layout, owned or wrapped
 *  (wrapped caller memory is modified). factor must have dims[mode] rows.
 *  Errors: INVALID_ARGUMENT (NULL, mode out of range, row count mismatch),
 *  OUT_OF_MEMORY. */
SPT_API spt_status spt_matrix_permute_rows(spt_context *ctx, spt_matrix *factor, const spt_permutation *perm,
                                           uint32_t mode);

/** The inverse move: rows of a factor computed on the relabelled tensor go
 *  back to the caller's index space (row perm[mode][i] moves to row i), so
 *  results read with the original labels. Same arguments and errors as
 *  spt_matrix_permute_rows. */
SPT_API spt_status spt_matrix_unpermute_rows(spt_context *ctx, spt_matrix *factor, const spt_permutation *perm,
                                             uint32_t mode);

/** spt_matrix_unpermute_rows on every factor of a Kruskal tensor computed
 *  on a relabelled tensor (lambda and the fit are unchanged, being label
 *  independent). perm's order and dims must equal the ktensor's.
 *  Errors: INVALID_ARGUMENT (NULL, shape mismatch; k unchanged),
 *  OUT_OF_MEMORY. */
SPT_API spt_status spt_ktensor_unpermute(spt_context *ctx, spt_ktensor *k, const spt_permutation *perm);

#ifdef __cplusplus
}
#endif

#endif /* SPTENSOR_REORDER_H */
