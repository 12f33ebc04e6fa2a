/** \file
 * libsptensor: hicoo API (included by sptensor/sptensor.h).
 *
 * HiCOO (hierarchical coordinates, Li's dissertation ch. 4) stores a sparse
 * tensor in Z-Morton order cut into blocks of B x ... x B (B a power of two
 * <= 256): per block, one 32-bit block index per mode and a 64-bit pointer;
 * per nonzero, one 8-bit element index per mode and the value. It is
 * usually smaller than COO and keeps the factor rows an MTTKRP touches in
 * cache, for every mode alike (no mode order, unlike CSF).
 * Blocks are grouped into logical superblocks of L x ... x L (L >= B). For
 * each mode the superblocks are grouped by mode slab: superblocks of
 * different slabs write different MTTKRP output rows and run in parallel
 * without atomics ("direct" strategy); when a mode is too short to give
 * enough slabs, equal ranges of nonzeros run in parallel into per-thread
 * output copies that are summed afterwards ("privatized" strategy). B, L and the
 * strategy per mode are chosen by the dissertation's rules (§4.3.3) unless
 * the caller sets them; spt_hicoo_stats explains each choice.
 *
 * Thread safety: a spt_hicoo handle is immutable after spt_hicoo_from_coo;
 * any number of threads may run spt_mttkrp_hicoo, spt_hicoo_to_coo and the
 * query functions on the same handle at once (with distinct outputs and
 * contexts). spt_hicoo_free must not race with other use of the handle. */
#ifndef SPTENSOR_HICOO_H
#define SPTENSOR_HICOO_H

#include "sptensor/sptensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque HiCOO tensor handle. */
typedef struct spt_hicoo_s spt_hicoo;

/** How spt_mttkrp_hicoo runs in parallel. */
typedef enum spt_hicoo_strategy {
  SPT_HICOO_STRATEGY_AUTO = 0,       /**< per mode, by the dissertation's rule for the call's thread count */
  SPT_HICOO_STRATEGY_DIRECT = 1,     /**< independent superblock slabs in parallel; no atomics, no copies */
  SPT_HICOO_STRATEGY_PRIVATIZED = 2,  /**< equal nonzero ranges in parallel into per-thread output copies */
  SPT_HICOO_STRATEGY_MAX_ENUM = 0x7FFFFFFF /**< not a value: makes every 32-bit int representable (checked at run time) */
} spt_hicoo_strategy;

/** Options of spt_hicoo_from_coo. Always initialise with
 *  spt_hicoo_options_init() first: struct_size lets later versions append
 *  fields compatibly. */
typedef struct spt_hicoo_options {
  size_t struct_size;          /**< set by spt_hicoo_options_init */
  uint32_t block_size;         /**< B: power of two in [2, 256]; 0 (default) = suggested */
  uint32_t superblock_size;    /**< L: power of two with B <= L <= 2^31; 0 (default) = suggested */
  spt_hicoo_strategy strategy; /**< MTTKRP strategy for every mode (default AUTO) */
} spt_hicoo_options;

/** Fill `opts` with the defaults (everything suggested, strategy AUTO).
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL). Thread safe. */
SPT_API spt_status spt_hicoo_options_init(spt_hicoo_options *opts);
/** Same, writing only the first `struct_size` bytes (the caller's
 *  sizeof(spt_hicoo_options)); see spt_cpd_options_init_size. The macro
 *  spt_hicoo_options_init(opts) calls it with sizeof *(opts).
 *  Errors: SPT_ERR_INVALID_ARGUMENT (opts NULL, struct_size too small). */
SPT_API spt_status spt_hicoo_options_init_size(spt_hicoo_options *opts, size_t struct_size);
/** Macro form of spt_hicoo_options_init(): calls spt_hicoo_options_init_size with sizeof *(opts), so a
 *  program never has more bytes written than its own struct holds. */
#define spt_hicoo_options_init(opts) spt_hicoo_options_init_size((opts), sizeof *(opts))

/** Build a HiCOO tensor from a COO tensor (order >= 2, either dtype; the
 *  HiCOO keeps the dtype). `x` is not modified (the Morton sort works on
 *  a copy) and may be freed afterwards. Repeated coordinates are kept as
 *  separate nonzeros and summed by the kernels, as the COO kernels do.
 *  `opts` may be NULL for the defaults. Runs in parallel on the context's
 *  threads; the suggested L and strategies are made for that thread count.
 *  On success *out receives a new handle owned by the caller (free with
 *  spt_hicoo_free); on error *out is unchanged.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL x or out, order < 2, B not a
 *  power of two or outside [2, 256], L not a power of two or L < B or
 *  L > 2^31, unknown strategy, opts->struct_size too small),
 *  SPT_ERR_OUT_OF_MEMORY. Thread safe for distinct outputs. */
SPT_API spt_status spt_hicoo_from_coo(spt_context *ctx, const spt_coo *x, const spt_hicoo_options *opts,
                                      spt_hicoo **out);

/** Convert back to a new owning COO tensor (same dims, dtype and nonzeros,
 *  in Z-Morton order). *out is owned by the caller (spt_coo_free); on
 *  error *out is unchanged.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL), SPT_ERR_OUT_OF_MEMORY. Thread
 *  safe for distinct outputs. */
SPT_API spt_status spt_hicoo_to_coo(spt_context *ctx, const spt_hicoo *h, spt_coo **out);

/** Free a HiCOO tensor (and its device copy); NULL is a no-op. Always
 *  returns SPT_OK. Must not race with any other use of the handle. */
SPT_API spt_status spt_hicoo_free(spt_hicoo *h);

/** What a HiCOO handle holds (spt_hicoo_info). Set struct_size =
 *  sizeof(spt_hicoo_summary) before the call; later versions may append
 *  fields. */
typedef struct spt_hicoo_summary {
  size_t struct_size;       /**< set by the caller */
  spt_dtype dtype;          /**< out: value type */
  uint32_t order;           /**< out: number of modes */
  spt_nnz nnz;              /**< out: number of nonzeros */
  uint32_t block_size;      /**< out: B */
  uint32_t superblock_size; /**< out: L */
  uint64_t bytes;           /**< out: bytes of the format (indices, pointers, values, schedules) */
} spt_hicoo_summary;

/** Describe a HiCOO tensor into *info; only info->struct_size bytes are
 *  written (struct_size is kept). ctx (may be NULL) receives the error
 *  message. See spt_hicoo_stats for the format statistics.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL h or info, struct_size smaller
 *  than sizeof(spt_hicoo_summary)). Thread safe. */
SPT_API spt_status spt_hicoo_info(spt_context *ctx, const spt_hicoo *h, spt_hicoo_summary *info);

/** Dims of a HiCOO tensor into dims[0..order-1].
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL). Thread safe. */
SPT_API spt_status spt_hicoo_dims(const spt_hicoo *h, spt_index *dims);

/** Format statistics (dissertation §4.2.3) and the suggested parameters
 *  (§4.3.3) with the reasons. Set struct_size = sizeof(spt_hicoo_statistics),
 *  and point `reason` at a caller buffer of `reason_capacity` bytes (or set
 *  both to 0/NULL to skip the text) before the call. */
typedef struct spt_hicoo_statistics {
  size_t struct_size;           /**< set by the caller */
  char *reason;                 /**< caller buffer for the explanation (NUL-terminated, truncated to fit); may be NULL */
  size_t reason_capacity;       /**< bytes at `reason` */
  size_t reason_length;         /**< out: length of the full explanation (excluding the NUL) */
  uint32_t order;               /**< out: number of modes */
  uint32_t block_size;          /**< out: B of this handle */
  uint32_t superblock_size;     /**< out: L of this handle */
  int threads;                  /**< out: thread count P the suggestions were made for (the context's) */
  spt_nnz nnz;                  /**< out: nonzeros M */
  spt_nnz num_blocks;           /**< out: n_b, non-empty blocks */
  spt_nnz num_superblocks;      /**< out: n_l, non-empty superblocks */
  double block_ratio;           /**< out: alpha_b = n_b / M (the dissertation's definition; smaller is better) */
  double block_ratio_threshold; /**< out: eq. (4.11): HiCOO indices are smaller than COO's when alpha_b is below it */
  double mean_nnz_per_block;    /**< out: M / n_b */
  double geomean_nnz_per_block; /**< out: geometric mean of the nonzeros per block (M_b with a bar) */
  double slice_per_block;       /**< out: c_b (with a bar) = M_b (with a bar) / B (block density; < 0.01 favours CSF) */
  uint64_t hicoo_bytes;         /**< out: bytes of this HiCOO (indices, pointers, values, schedules) */
  uint64_t coo_bytes;           /**< out: bytes of the same tensor in COO (32-bit indices + values) */
  uint32_t suggested_block_size;      /**< out: B by the cache rule (rank 16 assumed) */
  uint32_t suggested_superblock_size; /**< out: L by the task-count rule, for this handle's B */
} spt_hicoo_statistics;

/** Fill *stats for handle h (see spt_hicoo_stats). The explanation lists
 *  the B rule, the task counts of every candidate L, the strategy rule's
 *  verdict for every mode, and the storage and density thresholds.
 *  Deterministic for a given tensor, options and thread count.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL h or stats, struct_size 0, a
 *  reason_capacity without a buffer). */
SPT_API spt_status spt_hicoo_stats(spt_context *ctx, const spt_hicoo *h, spt_hicoo_statistics *stats);

/** Scheduling figures of one mode. Set struct_size before the call. */
typedef struct spt_hicoo_mode_statistics {
  size_t struct_size;                     /**< set by the caller */
  spt_nnz slabs;                          /**< out: independent superblocks (non-empty mode slabs of width L) */
  spt_nnz iterations;                     /**< out: conflict-free groups (most superblocks in one slab) */
  spt_nnz max_slab_nnz;                   /**< out: nonzeros in the heaviest slab */
  spt_hicoo_strategy suggested_strategy;  /**< out: the rule's choice for the context's thread count */
  spt_hicoo_strategy strategy;            /**< out: what spt_mttkrp_hicoo will use (the option, or the rule) */
} spt_hicoo_mode_statistics;

/** Fill *stats for `mode` of h.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL, struct_size 0, mode out of range). */
SPT_API spt_status spt_hicoo_mode_stats(spt_context *ctx, const spt_hicoo *h, uint32_t mode,
                                        spt_hicoo_mode_statistics *stats);

/** MTTKRP on a HiCOO tensor: out (dims[mode] x R) = X_(mode) times the
 *  Khatri-Rao product of every other mode's factor, as spt_mttkrp on the
 *  COO the handle was built from (to rounding). factors[m] (dims[m] x R,
 *  the tensor's dtype, either layout) is read for m != mode;
 *  factors[mode] may be NULL. `out` (dims[mode] x R, same dtype) is
 *  overwritten and must not be one of the factors. Uses the handle's
 *  strategy (AUTO: the rule for the context's thread count).
 *  When the context's backend resolves to CUDA (forced, or AUTO with a
 *  device) it runs on the GPU (orders 2..8): the tensor is copied to the
 *  device on first use and the copy is kept with the handle (released by
 *  spt_hicoo_free); the factors are copied in and `out` back on each call.
 *  Under AUTO a device failure (e.g. out of memory) runs the CPU kernel
 *  instead, with a note in the context's log; higher orders run on the CPU.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL, mode out of range, shape or dtype
 *  mismatch, out aliasing a factor), SPT_ERR_OUT_OF_MEMORY, SPT_ERR_DEVICE
 *  (backend CUDA forced and the device failed or is out of memory). Thread
 *  safe for distinct outputs. */
SPT_API spt_status spt_mttkrp_hicoo(spt_context *ctx, const spt_hicoo *h, const spt_matrix *const *factors,
                                    uint32_t mode, spt_matrix *out);

#ifdef __cplusplus
}
#endif

#endif /* SPTENSOR_HICOO_H */
