/** \file
 * libsptensor: HLS hybrid linear storage API (included by sptensor/sptensor.h).
 *
 * HLS (Hybrid Linear Storage, "Tensor-core accelerated sparse tensor-matrix
 * chain multiplication", IEEE TPDS 34(8), 2023, §V) cuts a tensor into
 * tiles of 16 x 16 x 16 coordinates and stores each non-empty tile in one
 * of two parts, by its number of occupied cells:
 *
 *  - HLS-D (dense part): tiles with at least `dense_threshold` occupied
 *    cells. Per tile: its bit-packed linear tile index, a 4096-bit bitmap
 *    of occupied cells (64 x uint64, bit c of the bitmap = cell c, cell =
 *    16*16*i + 16*j + k for the in-tile coordinates i (root mode), j, k),
 *    and its values in bitmap order (a prefix-sum offset per tile). This is
 *    the layout a tensor-core kernel expands into 16 x 16 fragments.
 *  - HLS-S (sparse part): the nonzeros of every other tile, each as one
 *    uint64 holding all its coordinates bit-packed (root mode in the highest
 *    bits, then the other modes by increasing mode number; each mode takes
 *    just enough bits for its dimension), and its value; sorted by the
 *    packed index, so each output row's nonzeros are contiguous.
 *
 * The tile modes are ordered root first, then the other modes by increasing
 * mode number; tiles are sorted by their linear index, so all dense tiles of
 * one root-mode tile (16 output rows) are contiguous.
 *
 * Order 4 (our extension; the paper covers order 3): a tile is 16 x 16 x 16
 * in the root mode and the two lowest other modes, and `slab_depth` D (1, 2,
 * 4, 8 or 16; default 4) along the highest other mode; it is stored as D
 * stacked 16^3 sub-tiles (sub-tile s = the in-tile coordinate along that
 * mode), each with its own 4096-bit bitmap, values sub-tile by sub-tile.
 *
 * The default dense_threshold is the paper's tuned MTTKRP value, 78
 * occupied cells per 16^3 tile (1.9% density), scaled by D for order 4
 * (78 D: the same density). A tile counts its distinct occupied cells.
 *
 * Repeated coordinates: a bitmap cannot hold a cell twice, so repeats inside
 * a dense tile are summed (in input order) into one value; repeats in the
 * sparse part are kept as separate nonzeros (the kernels sum them).
 * spt_hls_to_coo therefore returns the input with the repeats of dense
 * tiles summed.
 *
 * Orders 3 and 4 only, and the bit widths of all modes together
 * (sum over m of the bits of dims[m]-1) must fit the 64-bit linear index.
 * One handle serves the MTTKRP and the TTM chain (TTMc) in its root mode.
 *
 * Kernels: with a context whose backend resolves to CUDA (backend CUDA, or
 * AUTO with a device) spt_mttkrp_hls and spt_ttmc_hls run on the GPU: dense
 * tiles as 16 x 16 matrix fragments on tensor cores in the handle's
 * precision (spt_hls_precision), sparse nonzeros on CUDA cores in the
 * tensor's type, both in one fused launch. The handle is copied to the
 * device on first use and the copy is cached on the handle (freed with
 * it). Under AUTO a device failure (e.g. out of memory) runs the host
 * kernel instead, with a note in the context's log; under CUDA it is an
 * SPT_ERR_DEVICE error. Otherwise the OpenMP (or, with backend REFERENCE,
 * the sequential reference) kernels run on the host; they are exact (the
 * tensor's type throughout) and ignore the precision.
 *
 * Dense threshold on the GPU: with dense_threshold 0 and a context whose
 * backend resolves to CUDA, spt_hls_from_coo derives the threshold on the
 * device (the time of a dense tile over the time of a sparse nonzero, both
 * measured once per device, order, slab depth and precision per process;
 * clamped to 1 .. 4096 D); if that measurement fails it takes the default
 * 78 D (a note in the log). spt_hls_info reports the threshold and whether
 * it was measured. An explicit dense_threshold is always used as given.
 *
 * Thread safety: a spt_hls handle is immutable after creation; any number of
 * threads may use it at once (with distinct outputs and contexts).
 * spt_hls_free must not race with other use of the handle. */
#ifndef SPTENSOR_HLS_H
#define SPTENSOR_HLS_H

#include "sptensor/sptensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque HLS tensor handle. */
typedef struct spt_hls_s spt_hls;

/** The arithmetic of the dense tiles on the GPU (tensor cores). The sparse
 *  part runs in the tensor's type; the CPU kernels ignore the precision
 *  (they are exact). */
typedef enum spt_hls_precision {
  SPT_HLS_PRECISION_AUTO = 0,  /**< the library's choice: TF32 (fp16 is slightly faster but overflows above 65504) */
  SPT_HLS_PRECISION_FP16 = 1,  /**< tile values and factors rounded to IEEE half (unit roundoff 2^-11), fp32 accumulation */
  SPT_HLS_PRECISION_BF16 = 2,  /**< rounded to bfloat16 (8-bit significand: unit roundoff 2^-8), fp32 accumulation */
  SPT_HLS_PRECISION_TF32 = 3,  /**< rounded to TF32 (10-bit mantissa, float32 range), fp32 accumulation */
  SPT_HLS_PRECISION_EXACT = 4  /**< no tensor cores: the tensor's type (float32 or float64) on CUDA cores */
} spt_hls_precision;

/** Options of spt_hls_from_coo. Always initialise with spt_hls_options_init()
 *  first: struct_size lets later versions append fields compatibly. */
typedef struct spt_hls_options {
  size_t struct_size;       /**< set by spt_hls_options_init */
  uint32_t root_mode;       /**< the mode of the MTTKRP / TTMc the handle serves (default 0) */
  uint32_t dense_threshold; /**< a tile with at least this many occupied cells is dense (0 = default: 78, times slab_depth for order 4) */
  uint32_t slab_depth;      /**< order 4: tile depth along the highest non-root mode, 1, 2, 4, 8 or 16 (0 = default 4); validated but unused for order 3 */
  uint64_t precision;       /**< an spt_hls_precision value: the GPU dense-tile arithmetic (default
                                 SPT_HLS_PRECISION_AUTO), stored on the handle; 64 bits wide, so it starts
                                 on an 8-byte boundary right after the 24 bytes before it */
} spt_hls_options;

/** Fill `opts` with the defaults (root_mode 0, dense_threshold 0 = the
 *  paper's 78 per 16^3 sub-tile, or measured on the GPU (see the file
 *  comment), slab_depth 0 = 4, precision AUTO). The macro
 *  spt_hls_options_init(opts) calls spt_hls_options_init_size with
 *  sizeof *(opts).
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL). Thread safe. */
SPT_API spt_status spt_hls_options_init(spt_hls_options *opts);
/** Same, writing only the first `struct_size` bytes (the caller's
 *  sizeof(spt_hls_options)); see spt_cpd_options_init_size.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (opts NULL, struct_size too small). Thread safe. */
SPT_API spt_status spt_hls_options_init_size(spt_hls_options *opts, size_t struct_size);
/** Macro form of spt_hls_options_init(): calls spt_hls_options_init_size with sizeof *(opts), so a
 *  program never has more bytes written than its own struct holds. */
#define spt_hls_options_init(opts) spt_hls_options_init_size((opts), sizeof *(opts))

/** Build the HLS of x rooted at opts->root_mode. x: order 3 or 4, either
 *  dtype (kept), index bits of all modes together <= 64; it is not
 *  modified and may be freed afterwards. `opts` may be NULL for the
 *  defaults. Runs on the context's threads (no atomics; the build time is
 *  reported by spt_hls_info). On success *out receives a new handle owned
 *  by the caller (spt_hls_free); on error *out is unchanged.
 *  With dense_threshold 0 and a CUDA backend the threshold is measured on
 *  the device (once per process per device, order, slab depth and
 *  precision; see the file comment); the build itself runs on the host.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL x or out, root_mode out of range,
 *  slab_depth not 0/1/2/4/8/16, precision not a spt_hls_precision value,
 *  opts->struct_size too small), SPT_ERR_UNSUPPORTED (order
 *  not 3 or 4; index bits over 64), SPT_ERR_OUT_OF_MEMORY. Thread safe for
 *  distinct outputs. */
SPT_API spt_status spt_hls_from_coo(spt_context *ctx, const spt_coo *x, const spt_hls_options *opts, spt_hls **out);

/** Free a handle (and every array it owns); NULL is a no-op. Always
 *  returns SPT_OK. Must not race with any other use of the handle. */
SPT_API spt_status spt_hls_free(spt_hls *h);

/** What a handle holds (spt_hls_info). Set struct_size =
 *  sizeof(spt_hls_summary) before the call; only that many bytes are
 *  written. */
typedef struct spt_hls_summary {
  size_t struct_size;       /**< set by the caller */
  spt_dtype dtype;          /**< out: value type */
  uint32_t order;           /**< out: number of modes */
  uint32_t root_mode;       /**< out: the mode of the MTTKRP / TTMc this handle serves */
  uint32_t dense_threshold; /**< out: resolved threshold (occupied cells per tile) */
  uint32_t slab_depth;      /**< out: resolved slab depth (1 for order 3) */
  uint32_t index_bits;      /**< out: bits of the packed linear index (sum over the modes) */
  spt_nnz input_nnz;        /**< out: nonzeros of the input COO */
  spt_nnz nnz;              /**< out: stored nonzeros, dense_nnz + sparse_nnz (input_nnz less the summed repeats) */
  spt_nnz tiles;            /**< out: non-empty tiles */
  spt_nnz dense_tiles;      /**< out: tiles in HLS-D */
  spt_nnz sparse_tiles;     /**< out: tiles whose nonzeros are in HLS-S */
  spt_nnz dense_nnz;        /**< out: values stored in HLS-D (occupied cells of dense tiles) */
  spt_nnz sparse_nnz;       /**< out: nonzeros stored in HLS-S */
  double dense_fraction;    /**< out: dense_nnz / nnz (0 for an empty tensor) */
  uint64_t bytes;           /**< out: bytes of the format (tile indices, bitmaps, offsets, packed indices, values, row tables) */
  uint64_t coo_bytes;       /**< out: bytes of the input in COO (32-bit indices and values), for comparison */
  double build_seconds;     /**< out: wall time of spt_hls_from_coo's construction */
  spt_hls_precision precision;   /**< out: the handle's GPU dense-tile precision, resolved (never AUTO) */
  uint32_t threshold_calibrated; /**< out: 1 when dense_threshold was measured on the GPU, 0 when given or the default */
} spt_hls_summary;

/** Fill *info (see spt_hls_summary) for handle h; only info->struct_size
 *  bytes are written (struct_size is kept). ctx (may be NULL) receives the
 *  error message.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL h or info, struct_size smaller
 *  than sizeof(spt_hls_summary)). Thread safe. */
SPT_API spt_status spt_hls_info(spt_context *ctx, const spt_hls *h, spt_hls_summary *info);

/** Dims of the tensor into the caller's dims[0..order-1].
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL). Thread safe. */
SPT_API spt_status spt_hls_dims(const spt_hls *h, spt_index *dims);

/** Decode back to a new owning COO tensor: the same dims and dtype and the
 *  input's nonzeros (the same multiset) except that repeated coordinates
 *  inside a dense tile come back summed; sorted lexicographically, root
 *  mode first, then the other modes by increasing mode number (repeats of
 *  the sparse part in their input order). *out is owned by the
 *  caller (spt_coo_free); on error *out is unchanged. Runs on the context's
 *  threads.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL), SPT_ERR_OUT_OF_MEMORY. Thread
 *  safe for distinct contexts. */
SPT_API spt_status spt_hls_to_coo(spt_context *ctx, const spt_hls *h, spt_coo **out);

/** MTTKRP in the handle's root mode n = `mode`: out (dims[n] x R,
 *  overwritten) = X_(n) times the Khatri-Rao product of the other factors.
 *  An HLS handle serves one mode: `mode` must be its root_mode (another
 *  mode needs its own handle). factors[m]
 *  (dims[m] x R, the tensor's dtype, either layout) is read for m != n;
 *  factors[n] may be NULL; out must not be one of the factors. The caller
 *  keeps ownership of every matrix. On the host: runs on the context's
 *  threads, exact, and the result does not depend on the thread count
 *  (bitwise). On the GPU (backend resolving to CUDA, see the file
 *  comment): dense tiles in the handle's precision, rows with both dense
 *  and sparse work summed atomically (the last bits may vary run to run).
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL, mode out of range, shapes,
 *  dtype, R = 0), SPT_ERR_UNSUPPORTED (mode is not the handle's root_mode),
 *  SPT_ERR_OUT_OF_MEMORY, SPT_ERR_DEVICE (backend CUDA forced and the
 *  device failed). Thread safe for distinct outputs. */
SPT_API spt_status spt_mttkrp_hls(spt_context *ctx, const spt_hls *h, const spt_matrix *const *factors,
                                  uint32_t mode, spt_matrix *out);

/** TTM chain (TTMc) in the handle's root mode n, the same product and
 *  column layout as spt_ttmc_fcoo: out (dims[n] x prod_{m != n} R_m, dense,
 *  overwritten) = X_(n) times kron(U_{N-1}, ..., U_{n+1}, U_{n-1}, ...,
 *  U_0), column = Kolda's unfolding of the core (lowest other mode
 *  fastest). factors[m] (dims[m] x R_m, R_m >= 1, the tensor's dtype,
 *  either layout) read for m != n; factors[n] may be NULL; out must not be
 *  one of the factors. Computed slice by slice as the paper's matrix
 *  products, Y(i,:,:) = U_j^T (X(i,:,:) U_k) for order 3. On the host:
 *  runs on the context's threads, exact; the result does not depend on the
 *  thread count. On the GPU as spt_mttkrp_hls (tensor cores in the
 *  handle's precision for the dense tiles).
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL, shapes, dtype),
 *  SPT_ERR_OVERFLOW (the column count), SPT_ERR_OUT_OF_MEMORY,
 *  SPT_ERR_DEVICE (backend CUDA forced and the device failed). Thread safe
 *  for distinct outputs. */
SPT_API spt_status spt_ttmc_hls(spt_context *ctx, const spt_hls *h, const spt_matrix *const *factors,
                                spt_matrix *out);

#ifdef __cplusplus
}
#endif

#endif /* SPTENSOR_HLS_H */
