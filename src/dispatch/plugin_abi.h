/*
 * The internal function table between libsptensor.so (the core) and a
 * device plugin (libsptensor_cuda.so.1). Plain C so that either side can be
 * built by any compiler (g++ for the core, nvcc for the plugin); no C++
 * types, no exceptions and no heap ownership cross it.
 *
 * The plugin exports exactly one symbol, spt_cuda_plugin_entry, which
 * returns a pointer to a static table. The core refuses the plugin (with a
 * message in spt_context_backend_info) unless table->abi_version equals
 * SPT_PLUGIN_ABI_VERSION and table->struct_size >= sizeof(spt_plugin_table).
 * Bump SPT_PLUGIN_ABI_VERSION on any change to a signature, a struct or
 * the order of the entry lists here (adding an entry included).
 *
 * Every function returns an spt_status value (0 = OK; SPT_ERR_OUT_OF_MEMORY
 * for a device allocation failure, which the dispatcher may turn into a CPU
 * fallback; SPT_ERR_DEVICE for any other CUDA failure; SPT_ERR_INVALID_ARGUMENT
 * for bad arguments) and writes a message into the caller's buffer
 * (message, message_len; always NUL terminated when message_len > 0) when it
 * fails. All functions are thread safe.
 *
 * Version history: 1 = device_count, device_info, coo_upload, coo_release,
 * mttkrp. 2 = adds cp_als (a whole CP-ALS on a device COO tensor) and
 * SPT_ERR_NUMERICAL (-8) as a status a plugin may return. 3 = adds
 * spt_plugin_hicoo, hicoo_upload, hicoo_release and mttkrp_hicoo (HiCOO
 * MTTKRP on the device). 4 = adds spt_plugin_fcoo, fcoo_upload,
 * fcoo_release, fcoo_multiply (F-COO MTTKRP / TTM / TTMc) and cp_als_fcoo.
 * 5 = adds spt_plugin_hbcsf, hbcsf_upload, hbcsf_release and mttkrp_hbcsf
 * (B-CSF / HB-CSF MTTKRP on the device). 6 = adds the HLS entries
 * (hls_upload, hls_release, hls_multiply, hls_calibrate), the GPU SpTTM
 * family, the GPU Tucker-HOOI entries and cp_als_mixed (each section
 * below says which). 7 = adds tucker_hooi_hbcsf (the Tucker TTMc by
 * chained TTMs on B-CSF / HB-CSF trees). 8 = cp_als's on_sweep hook gets
 * the rounding noise of <X, M> and may answer SPT_PLUGIN_EXACT_INNER.
 * 9 = spt_plugin_hicoo.window_reuse (was reserved) replaces the plugin's
 * environment variable for the window threshold. 10 = the table is
 * generated from per-family entry lists (SPT_PLUGIN_FAMILIES below): the
 * same entries and signatures as 9, reordered by family (devices, COO,
 * HiCOO, F-COO, HB-CSF, HLS, SpTTM, whole decompositions);
 * spt_plugin_hbcsf loses bins, slice_bin_min_nnz, bin_ptr and bin_units
 * (only the B-CSF mapping by slice units read them; the plugin maps B-CSF
 * by leaves), and the SpTTM kernels SPT_PLUGIN_TTM_NAIVE and
 * SPT_PLUGIN_TTM_FINE are gone (the rule never picked them).
 * 11 = CP-ALS and Tucker-HOOI run as steps driven by the core's one loop
 * each: the families CP_STEPS (a CP-ALS session and its steps) and
 * TUCKER_STEPS (a Tucker-HOOI session and its steps) replace cp_als,
 * cp_als_fcoo, cp_als_mixed, tucker_hooi_fcoo / _hls / _hbcsf and
 * spt_plugin_cp_als_args / spt_plugin_tucker_args (family WHOLE_RUN is gone).
 * 12 = adds the family CP_APR_STEPS (a CP-APR session and its steps) and
 * spt_plugin_cp_apr_groups.
 * 13 = adds the family STREAM (mttkrp_streamed, cp_session_streamed) and
 * spt_plugin_stream_info: COO tensors larger than the device memory.
 * 14 = adds the family MULTI_DEVICE (CP-ALS sessions on several devices of
 * one host joined by NCCL collectives).
 * 15 = collectives_available and cp_group_create take the NCCL library
 * file to load (the context's choice) instead of reading the environment.
 * 16 = a multi-device group shares out the rows of every mode too: the
 * group steps cp_group_mttkrp, _normal_matrix, _solve, _normalise, _gram,
 * _gather, _fit_terms, _exact_inner and _times replace
 * cp_group_reduce_mttkrp and cp_group_broadcast.
 */
#ifndef SPT_DISPATCH_PLUGIN_ABI_H
#define SPT_DISPATCH_PLUGIN_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SPT_PLUGIN_ABI_VERSION 16u
#define SPT_CUDA_PLUGIN_ENTRY_NAME "spt_cuda_plugin_entry"
/* The plugin's file carries the library's major version (the SONAME
 * number), as cuda/CMakeLists.txt names it: a library loads only a plugin of
 * its own major release, and two releases can be installed side by side.
 * Expands SPT_VERSION_MAJOR of sptensor/sptensor.h, which a user of the name
 * includes. */
#define SPT_PLUGIN_STR2(x) #x
#define SPT_PLUGIN_STR(x) SPT_PLUGIN_STR2(x)
#define SPT_CUDA_PLUGIN_FILE_NAME "libsptensor_cuda.so." SPT_PLUGIN_STR(SPT_VERSION_MAJOR)

/* Value types, same numbers as spt_dtype. */
#define SPT_PLUGIN_FLOAT32 1
#define SPT_PLUGIN_FLOAT64 2

/* One device as the plugin sees it. */
typedef struct spt_plugin_device_info {
  char name[256];
  uint64_t total_memory;  /* bytes */
  uint64_t free_memory;   /* bytes, at the time of the query */
  int compute_capability_major;
  int compute_capability_minor;
  int multiprocessors;
  int reserved;
} spt_plugin_device_info;

/* A COO tensor in host memory (structure of arrays, 0-based indices). */
typedef struct spt_plugin_coo {
  uint32_t order;
  int dtype;                  /* SPT_PLUGIN_FLOAT32 or SPT_PLUGIN_FLOAT64 */
  uint64_t nnz;
  const uint32_t *dims;       /* order entries */
  const uint32_t *const *ind; /* order arrays of nnz indices */
  const void *values;         /* nnz values of dtype */
} spt_plugin_coo;

/* A HiCOO tensor in host memory (src/core/hicoo.hpp): nonzeros in blocks of
 * B^order (B = 2^block_bits, 1 <= block_bits <= 8); block b holds nonzeros
 * [bptr[b], bptr[b+1]) and has coordinate binds[m][b] (= coordinate >>
 * block_bits) in mode m; nonzero k has element index einds[m][k] (=
 * coordinate & (B-1)) and value values[k]. window_reuse: nonzeros per
 * touched output row from which a block accumulates in a shared-memory
 * window (0 = the plugin's threshold; the library passes 0, tests pass 1 to
 * drive every block with enough nonzeros through the window). */
typedef struct spt_plugin_hicoo {
  uint32_t order;
  int dtype;                    /* SPT_PLUGIN_FLOAT32 or SPT_PLUGIN_FLOAT64 */
  uint64_t nnz;
  uint64_t num_blocks;
  uint32_t block_bits;
  uint32_t window_reuse;        /* 0 = the plugin's threshold */
  const uint32_t *dims;         /* order entries */
  const uint64_t *bptr;         /* num_blocks + 1 entries */
  const uint32_t *const *binds; /* order arrays of num_blocks */
  const uint8_t *const *einds;  /* order arrays of nnz */
  const void *values;           /* nnz values of dtype */
} spt_plugin_hicoo;

/* An F-COO tensor in host memory (src/core/fcoo.hpp): per nonzero the
 * product-mode indices and the value; bit k of bf (word k / 32) set when
 * nonzero k starts a segment; one start flag per partition of threadlen
 * nonzeros (sf) and per 32 partitions the segment of the first nonzero
 * (group_first_segment); segment_rows[s] = the output row of segment s
 * (MTTKRP, TTMc) or NULL (TTM: output row = segment). */
typedef struct spt_plugin_fcoo {
  uint32_t order;
  int dtype;                             /* SPT_PLUGIN_FLOAT32 or SPT_PLUGIN_FLOAT64 */
  uint64_t nnz;                          /* < 2^32 */
  uint64_t segments;
  uint32_t threadlen;                    /* 8, 16 or 32 */
  uint32_t num_product_modes;            /* 1 .. order - 1 */
  const uint32_t *dims;                  /* order entries */
  const uint32_t *product_modes;         /* num_product_modes, ascending */
  const uint32_t *const *product_ind;    /* num_product_modes arrays of nnz */
  const void *values;                    /* nnz values of dtype */
  const uint32_t *bf;                    /* ceil(nnz / 32) words */
  const uint32_t *sf;                    /* ceil(partitions / 32) words */
  const uint32_t *group_first_segment;   /* ceil(partitions / 32) entries */
  const uint32_t *segment_rows;          /* segments entries, or NULL */
  uint64_t output_rows;                  /* rows of a product's output (dims[mode] or segments) */
  int32_t mttkrp_mode;                   /* op MTTKRP: its mode (the index mode); -1 for op TTM */
  uint32_t reserved;
} spt_plugin_fcoo;

/* A B-CSF / HB-CSF tensor in host memory (src/core/hbcsf.hpp documents
 * every array; "level" l = 0..order-1 is mode mode_order[l], level 0 the
 * root = the MTTKRP's output mode). All offsets and indices are 32-bit
 * (nnz < 2^32). Three groups of slices own disjoint output rows:
 *  COO: coo_ind[l][k] (order arrays of coo_nnz), coo_val[k];
 *  CSL: csl_slice_ind[s], csl_slice_ptr[s..s+1] into csl_ind[l-1][k]
 *       (levels 1..order-1: order-1 arrays of csl_nnz) and csl_val[k];
 *  B-CSF: node_ind[l-1] (levels 1..order-2, node_count[l-1] entries each),
 *       node_ptr[l-1] (levels 1..order-3, node_count[l-1] + 1 entries),
 *       node_parent[l-2] (levels 2..order-2, node_count[l-1] entries);
 *       the level order-2 nodes are the fiber segments (segments =
 *       node_count[order-3]), segment_ptr[g..g+1] into leaf_ind / bcsf_val
 *       (bcsf_nnz); work unit u covers segments [unit_segment_ptr[u],
 *       unit_segment_ptr[u+1]) of one slice, writes output row unit_row[u],
 *       and unit_split[u] = 1 when its slice has several units (partial
 *       rows that must be added). bcsf_slice_ind / bcsf_slice_ptr and node_ptr describe
 *       the tree from the top (a plugin may ignore them). */
typedef struct spt_plugin_hbcsf {
  uint32_t order;                      /* 3 .. 255 */
  int dtype;                           /* SPT_PLUGIN_FLOAT32 or SPT_PLUGIN_FLOAT64 */
  uint64_t nnz;                        /* coo_nnz + csl_nnz + bcsf_nnz, < 2^32 */
  const uint32_t *dims;                /* order entries, by mode */
  const uint32_t *mode_order;          /* order entries: level -> mode */
  /* COO group */
  uint64_t coo_nnz;
  const uint32_t *const *coo_ind;      /* order arrays (by level) of coo_nnz */
  const void *coo_val;                 /* coo_nnz values of dtype */
  /* CSL group */
  uint64_t csl_slices;
  uint64_t csl_nnz;
  const uint32_t *csl_slice_ind;       /* csl_slices */
  const uint32_t *csl_slice_ptr;       /* csl_slices + 1 */
  const uint32_t *const *csl_ind;      /* order - 1 arrays (levels 1..) of csl_nnz */
  const void *csl_val;                 /* csl_nnz values of dtype */
  /* B-CSF group */
  uint64_t bcsf_slices;
  const uint32_t *bcsf_slice_ind;      /* bcsf_slices */
  const uint32_t *bcsf_slice_ptr;      /* bcsf_slices + 1 */
  const uint64_t *node_count;          /* order - 2 entries: nodes of levels 1..order-2 */
  const uint32_t *const *node_ind;     /* order - 2 arrays */
  const uint32_t *const *node_ptr;     /* order - 3 arrays (NULL for order 3) */
  const uint32_t *const *node_parent;  /* order - 3 arrays (NULL for order 3) */
  uint64_t segments;                   /* = node_count[order - 3] */
  const uint32_t *segment_ptr;         /* segments + 1 */
  uint64_t bcsf_nnz;
  const uint32_t *leaf_ind;            /* bcsf_nnz */
  const void *bcsf_val;                /* bcsf_nnz values of dtype */
  uint64_t units;
  const uint32_t *unit_row;            /* units */
  const uint32_t *unit_segment_ptr;    /* units + 1 */
  const uint8_t *unit_split;           /* units */
} spt_plugin_hbcsf;

/* The two products fcoo_multiply computes. */
#define SPT_PLUGIN_FCOO_HADAMARD 0  /* MTTKRP, TTM: value * prod_j U_j(i_j, c) */
#define SPT_PLUGIN_FCOO_KRONECKER 1 /* TTMc: value * kron of the rows, first product mode fastest */

/* A row-major dense matrix in host memory: element (i,j) at data[i*ld + j]. */
typedef struct spt_plugin_matrix {
  void *data; /* const for inputs */
  uint64_t rows;
  uint64_t cols;
  uint64_t ld;
} spt_plugin_matrix;

/* Opaque device copy of a COO tensor (owned by the plugin). */
typedef struct spt_plugin_device_coo spt_plugin_device_coo;

/* Opaque device copy of a HiCOO tensor (owned by the plugin). */
typedef struct spt_plugin_device_hicoo spt_plugin_device_hicoo;

/* Opaque device copy of an F-COO tensor (owned by the plugin). */
typedef struct spt_plugin_device_fcoo spt_plugin_device_fcoo;

/* Opaque device copy of a B-CSF / HB-CSF tensor (owned by the plugin). */
typedef struct spt_plugin_device_hbcsf spt_plugin_device_hbcsf;

/* An HLS tensor in host memory (src/core/hls.hpp documents every array;
 * docs/formats/hls.md the format). "Level" l = 0..order-1 is mode modes[l]:
 * level 0 the root (the output mode of the MTTKRP / TTMc), levels 1.. the
 * other modes by increasing mode number. Coordinates are bit-packed with
 * bits[l] bits per level (level 0 highest); tiles are 16 along levels 0..2
 * and slab_depth along level 3 (order 4), shift[l] = log2 of the edge;
 * tile indices pack the tile coordinates with tile_bits[l] bits.
 *  HLS-D: d_tile[t] (dense_tiles), d_bitmap (dense_tiles * 64 * slab_depth
 *    words: per tile one 4096-bit map per 16^3 sub-tile), d_val_ptr
 *    (dense_tiles + 1) into d_val (values of dtype in bitmap order);
 *    root groups: d_root_tile[g] (root_groups), d_root_ptr (root_groups + 1)
 *    into the tiles.
 *  HLS-S: s_ind[z] packed coordinates and s_val[z] (sparse_nnz), sorted;
 *    s_row[r] (sparse_rows) output rows, s_row_ptr (sparse_rows + 1). */
typedef struct spt_plugin_hls {
  uint32_t order;              /* 3 or 4 */
  int dtype;                   /* SPT_PLUGIN_FLOAT32 or SPT_PLUGIN_FLOAT64 */
  uint32_t slab_depth;         /* D: 1, 2, 4, 8 or 16 (1 for order 3) */
  uint32_t reserved;
  const uint32_t *dims;        /* order entries, by level (dims of modes[l]) */
  const uint32_t *modes;       /* order entries: level -> mode (modes[0] = root) */
  const uint32_t *bits;        /* order entries, per level */
  const uint32_t *shift;       /* order entries, per level: 4, or log2 D for level 3 */
  const uint32_t *tile_bits;   /* order entries, per level */
  /* HLS-D */
  uint64_t dense_tiles;
  const uint64_t *d_tile;      /* dense_tiles */
  const uint64_t *d_bitmap;    /* dense_tiles * 64 * slab_depth */
  const uint64_t *d_val_ptr;   /* dense_tiles + 1 */
  const void *d_val;           /* d_val_ptr[dense_tiles] values of dtype */
  uint64_t root_groups;
  const uint32_t *d_root_tile; /* root_groups */
  const uint64_t *d_root_ptr;  /* root_groups + 1 */
  /* HLS-S */
  uint64_t sparse_nnz;
  const uint64_t *s_ind;       /* sparse_nnz */
  const void *s_val;           /* sparse_nnz values of dtype */
  uint64_t sparse_rows;
  const uint32_t *s_row;       /* sparse_rows */
  const uint64_t *s_row_ptr;   /* sparse_rows + 1 */
} spt_plugin_hls;

/* The arithmetic of HLS dense tiles (same numbers as spt_hls_precision,
 * AUTO excluded: the core resolves it). The sparse part always runs in the
 * tensor's type on CUDA cores. */
#define SPT_PLUGIN_HLS_FP16 1  /* tensor cores, half inputs, fp32 accumulation */
#define SPT_PLUGIN_HLS_BF16 2  /* tensor cores, bfloat16 inputs, fp32 accumulation */
#define SPT_PLUGIN_HLS_TF32 3  /* tensor cores, tf32 inputs, fp32 accumulation */
#define SPT_PLUGIN_HLS_EXACT 4 /* CUDA cores in the tensor's type (float32 or float64) */

/* The two products hls_multiply computes (both in the handle's root mode). */
#define SPT_PLUGIN_HLS_MTTKRP 0 /* out(i, r) = sum X(i, ...) prod_m U_m(i_m, r) */
#define SPT_PLUGIN_HLS_TTMC 1   /* out(i, :) = X_(root)(i, :) kron of the U_m, lowest other mode fastest */

/* Opaque device copy of an HLS tensor (owned by the plugin). */
typedef struct spt_plugin_device_hls spt_plugin_device_hls;

/* The GPU SpTTM kernels (dissertation §7.3; cuda/ttm.cuh describes each):
 * the ones the plugin's rule picks (cuda/ttm.cu, choose_ttm_variant). AUTO
 * = the rule; the library always asks for AUTO, the tests force each
 * kernel to check it on every input shape. 1 and 2 (the dissertation's
 * naive and fine-grained kernels, which the rule never picked) are gone. */
#define SPT_PLUGIN_TTM_AUTO 0
#define SPT_PLUGIN_TTM_COALESCED 3
#define SPT_PLUGIN_TTM_RANK_BLOCKED 4
#define SPT_PLUGIN_TTM_SHARED 5

/* The mode-n fibers of a COO tensor in host memory, for SpTTM in mode n:
 * the nonzeros sorted so that each fiber (nonzeros equal in every mode but
 * n) is contiguous; fiber f is the nonzero range [fiber_ptr[f],
 * fiber_ptr[f+1]) (fiber_ptr[0] = 0, non-decreasing, fiber_ptr[nfibers] =
 * nnz), ind[k] is nonzero k's index in mode n (a row of U) and values[k]
 * its value. The other modes' indices stay on the host: the output row of
 * fiber f is row f. */
typedef struct spt_plugin_ttm_fibers {
  int dtype;                 /* SPT_PLUGIN_FLOAT32 or SPT_PLUGIN_FLOAT64 */
  uint32_t reserved;
  uint64_t nnz;
  uint64_t nfibers;
  const uint64_t *fiber_ptr; /* nfibers + 1 */
  const uint32_t *ind;       /* nnz (NULL when nnz = 0) */
  const void *values;        /* nnz values of dtype (NULL when nnz = 0) */
} spt_plugin_ttm_fibers;

/* In/out options of one ttm_fibers call. */
typedef struct spt_plugin_ttm_launch {
  int variant;      /* in: SPT_PLUGIN_TTM_AUTO or a variant to force */
  int variant_used; /* out: the variant that ran (the rule's pick under AUTO) */
  double kernel_ms; /* out: the kernel's device time in milliseconds (CUDA events; copies excluded) */
} spt_plugin_ttm_launch;

/* A semi-sparse tensor in host memory, grouped for SsTTM in a sparse mode
 * c: nfibers fibers, fiber f holding a block of a_len * b_len values at
 * values + f * a_len * b_len (the layout of src/core/scoo.hpp: a_len =
 * product of the dense dims below c, b_len = above c; index i_a + a_len
 * i_b); ind[f] = fiber f's coordinate in mode c (a row of U). The fibers
 * are grouped by their coordinates in the other sparse modes: group g is
 * the positions [group_ptr[g], group_ptr[g+1]) (group_ptr[0] = 0,
 * non-decreasing, group_ptr[ngroups] = nfibers), position k holding fiber
 * perm[k] (perm NULL = fiber k). */
typedef struct spt_plugin_scoo_groups {
  int dtype;                 /* SPT_PLUGIN_FLOAT32 or SPT_PLUGIN_FLOAT64 */
  uint32_t reserved;
  uint64_t nfibers;
  uint64_t ngroups;
  uint64_t a_len;            /* >= 1 */
  uint64_t b_len;            /* >= 1 */
  const uint64_t *group_ptr; /* ngroups + 1 */
  const uint64_t *perm;      /* nfibers entries < nfibers, or NULL */
  const uint32_t *ind;       /* nfibers (NULL when nfibers = 0) */
  const void *values;        /* nfibers * a_len * b_len values of dtype (NULL when nfibers = 0) */
} spt_plugin_scoo_groups;

/* Opaque CP-ALS session on a device (owned by the plugin): the factors,
 * lambda, the MTTKRP output, the Gram matrices and the solver workspace of
 * one CP-ALS run, kept on the device between the steps of the CP_STEPS
 * family. */
typedef struct spt_plugin_cp_session spt_plugin_cp_session;

/* What cp_normal_matrix found about the normal-equation matrix Y of a mode. */
typedef struct spt_plugin_cp_normal_info {
  int non_finite;    /* 1 when Y has a NaN or infinite entry */
  int cholesky_info; /* 0, or the order of the leading minor that is not positive definite */
  double anorm;      /* ||Y||_1 */
  double rcond;      /* reciprocal condition number in the 1-norm (0 when the Cholesky factor failed) */
} spt_plugin_cp_normal_info;

/* The fit terms of a sweep (model M = [[lambda; U]]). */
typedef struct spt_plugin_cp_fit_terms {
  double inner;              /* <X, M> from the last mode's MTTKRP */
  double norm_model_squared; /* ||M||^2, from the Grams in double */
  double inner_error;        /* one standard deviation of <X, M> from rounding the MTTKRP to float32; 0 for float64 */
} spt_plugin_cp_fit_terms;

/* How cp_solve solves the normal equations. */
#define SPT_PLUGIN_CP_SOLVE_CHOLESKY 0      /* from the Cholesky factor of cp_normal_matrix */
#define SPT_PLUGIN_CP_SOLVE_PSEUDO_INVERSE 1 /* V diag(1/w) V^T over |w| > R eps max|w| (symmetric eigen-solver) */

/* The function table, generated from one list per family of entries.
 *
 * A family list SPT_PLUGIN_<FAMILY>_ENTRIES(ENTRY, RELEASE) names each entry
 * once, with its parameters:
 *  - ENTRY(name, (parameters)): returns an spt_status value (int) and takes
 *    (char *message, size_t message_len) last;
 *  - RELEASE(name, (parameters)): frees a device copy, returns nothing and
 *    never fails (NULL ignored; errors at process exit are ignored).
 * SPT_PLUGIN_FAMILIES(FAMILY) lists the families in table order. The
 * struct below, the plugin's declarations of its entries and its table fill
 * (cuda/plugin_entries.cuh, cuda/plugin.cu) and the "not compiled" stubs
 * (SPT_PLUGIN_STUB_*) are all stamped from these lists.
 *
 * Layout (fixed for an ABI version): uint32_t abi_version, uint32_t
 * struct_size, const char *description, then one function pointer per
 * entry, in the order of SPT_PLUGIN_FAMILIES and of each family's list, no
 * other members. */

/* Devices.
 * device_count: the number of usable devices in *count (0 when there is no
 *   driver or no device: then OK is still returned and `message` says why).
 * device_info: the properties of device `device` (0-based). */
#define SPT_PLUGIN_DEVICE_ENTRIES(ENTRY, RELEASE)                         \
  ENTRY(device_count, (int *count, char *message, size_t message_len)) \
  ENTRY(device_info, (int device, spt_plugin_device_info *info, char *message, size_t message_len))

/* COO.
 * coo_upload: copy tensor x to device `device`; *out receives the device
 *   copy. Checks that the copy fits the free device memory first
 *   (SPT_ERR_OUT_OF_MEMORY; the plugin's "free" is capped by env
 *   SPT_CUDA_MEMORY_LIMIT, as for every upload below).
 * coo_release: free a COO device copy.
 * mttkrp: out (dims[mode] x R) = MTTKRP of the device tensor x with the
 *   host factor matrices factors[m] (dims[m] x R, m != mode; factors[mode]
 *   is ignored), all of x's dtype. Factors are copied to the device, the
 *   product runs there and out is copied back (overwritten). Synchronous. */
#define SPT_PLUGIN_COO_ENTRIES(ENTRY, RELEASE)                                                              \
  ENTRY(coo_upload,                                                                                         \
        (int device, const spt_plugin_coo *x, spt_plugin_device_coo **out, char *message, size_t message_len)) \
  RELEASE(coo_release, (spt_plugin_device_coo * x))                                                        \
  ENTRY(mttkrp, (const spt_plugin_device_coo *x, const spt_plugin_matrix *factors, uint32_t mode,          \
                 spt_plugin_matrix *out, char *message, size_t message_len))

/* HiCOO.
 * hicoo_upload: copy HiCOO tensor x to device `device` (*out receives the
 *   copy), checking first that it fits the free device memory
 *   (SPT_ERR_OUT_OF_MEMORY). SPT_ERR_UNSUPPORTED for an order outside the
 *   plugin's range (2..8) or 2^32 or more blocks.
 * hicoo_release: free a HiCOO device copy.
 * mttkrp_hicoo: as mttkrp, on a device HiCOO tensor. */
#define SPT_PLUGIN_HICOO_ENTRIES(ENTRY, RELEASE)                                                          \
  ENTRY(hicoo_upload, (int device, const spt_plugin_hicoo *x, spt_plugin_device_hicoo **out, char *message, \
                       size_t message_len))                                                               \
  RELEASE(hicoo_release, (spt_plugin_device_hicoo * x))                                                  \
  ENTRY(mttkrp_hicoo, (const spt_plugin_device_hicoo *x, const spt_plugin_matrix *factors, uint32_t mode, \
                       spt_plugin_matrix *out, char *message, size_t message_len))

/* F-COO.
 * fcoo_upload: copy F-COO tensor x to device `device` (*out receives the
 *   copy), checking first that it fits the free device memory
 *   (SPT_ERR_OUT_OF_MEMORY). SPT_ERR_UNSUPPORTED for more product modes
 *   than the kernels take (7).
 * fcoo_release: free an F-COO device copy.
 * fcoo_multiply: out (output_rows x out->cols, overwritten) = the segmented
 *   product `kind` (SPT_PLUGIN_FCOO_HADAMARD or _KRONECKER) of the device
 *   tensor x with factors[j] (host, x's dtype; j over x's product modes in
 *   order, num_product_modes entries; rows = dims of that mode). HADAMARD:
 *   every factor has out->cols columns; KRONECKER: out->cols = the product
 *   of their columns (< 2^31). Factors and out are copied per call.
 *   Synchronous. */
#define SPT_PLUGIN_FCOO_ENTRIES(ENTRY, RELEASE)                                                                \
  ENTRY(fcoo_upload,                                                                                           \
        (int device, const spt_plugin_fcoo *x, spt_plugin_device_fcoo **out, char *message, size_t message_len)) \
  RELEASE(fcoo_release, (spt_plugin_device_fcoo * x))                                                         \
  ENTRY(fcoo_multiply, (const spt_plugin_device_fcoo *x, int kind, const spt_plugin_matrix *factors,          \
                        spt_plugin_matrix *out, char *message, size_t message_len))

/* B-CSF / HB-CSF.
 * hbcsf_upload: copy B-CSF / HB-CSF tensor x to device `device` (*out
 *   receives the copy), checking first that it fits the free device memory
 *   (SPT_ERR_OUT_OF_MEMORY). SPT_ERR_UNSUPPORTED for an order outside the
 *   plugin's range (3..8); SPT_ERR_INVALID_ARGUMENT for inconsistent counts
 *   or NULL arrays.
 * hbcsf_release: free a B-CSF / HB-CSF device copy.
 * mttkrp_hbcsf: as mttkrp, on a device B-CSF / HB-CSF tensor, in any mode <
 *   order (SPT_ERR_INVALID_ARGUMENT otherwise). The root (mode_order[0]) is
 *   the fast one: the format's own kernels, plain stores. Any other mode
 *   runs the non-root kernels on the same tree (every output row added
 *   atomically; factors[root] is read then). */
#define SPT_PLUGIN_HBCSF_ENTRIES(ENTRY, RELEASE)                                                          \
  ENTRY(hbcsf_upload, (int device, const spt_plugin_hbcsf *x, spt_plugin_device_hbcsf **out, char *message, \
                       size_t message_len))                                                               \
  RELEASE(hbcsf_release, (spt_plugin_device_hbcsf * x))                                                  \
  ENTRY(mttkrp_hbcsf, (const spt_plugin_device_hbcsf *x, const spt_plugin_matrix *factors, uint32_t mode, \
                       spt_plugin_matrix *out, char *message, size_t message_len))

/* HLS (tensor cores).
 * hls_upload: copy HLS tensor x to device `device` (*out receives the
 *   copy), checking first that it fits the free device memory
 *   (SPT_ERR_OUT_OF_MEMORY). SPT_ERR_UNSUPPORTED for an order other than 3
 *   or 4; SPT_ERR_INVALID_ARGUMENT for inconsistent counts, a slab depth
 *   that is not a power of two up to 16, or NULL arrays.
 * hls_release: free an HLS device copy.
 * hls_multiply: out (dims[root] x out->cols, overwritten) = the product
 *   `kind` (SPT_PLUGIN_HLS_MTTKRP or _TTMC) of the device tensor x in its
 *   root mode, the dense tiles in `precision` (SPT_PLUGIN_HLS_FP16 ..
 *   _EXACT). factors: BY MODE (order entries; factors[root] ignored), host,
 *   x's dtype, dims[m] rows. MTTKRP: every factor has out->cols (= R)
 *   columns; TTMC: R_m >= 1 columns each and out->cols = prod_{m != root}
 *   R_m (< 2^31), column = Kolda's unfolding (lowest other mode fastest).
 *   Factors and out are copied per call. Synchronous. Errors:
 *   INVALID_ARGUMENT (kind, precision, shapes), OUT_OF_MEMORY, DEVICE.
 * hls_calibrate: time the fused HLS MTTKRP (float32, `rank`, `precision`)
 *   on device `device` on synthetic all-dense and all-sparse tensors of
 *   `order` (3 or 4) and `slab_depth`, and report the seconds per dense
 *   (sub-)tile and per sparse nonzero: a tile with n occupied cells is
 *   worth storing dense when n * *seconds_per_sparse_nnz >
 *   *seconds_per_dense_tile. Allocates and frees a few MB of device memory;
 *   takes tens of milliseconds. Synchronous. Errors: INVALID_ARGUMENT
 *   (order, slab depth, rank 0, precision, NULL outputs), OUT_OF_MEMORY,
 *   DEVICE. */
#define SPT_PLUGIN_HLS_ENTRIES(ENTRY, RELEASE)                                                                   \
  ENTRY(hls_upload,                                                                                              \
        (int device, const spt_plugin_hls *x, spt_plugin_device_hls **out, char *message, size_t message_len))   \
  RELEASE(hls_release, (spt_plugin_device_hls * x))                                                             \
  ENTRY(hls_multiply, (const spt_plugin_device_hls *x, int kind, int precision, const spt_plugin_matrix *factors, \
                       spt_plugin_matrix *out, char *message, size_t message_len))                               \
  ENTRY(hls_calibrate, (int device, uint32_t order, uint32_t slab_depth, uint32_t rank, int precision,          \
                        double *seconds_per_dense_tile, double *seconds_per_sparse_nnz, char *message,          \
                        size_t message_len))

/* The SpTTM family (COO TTM, semi-sparse TTM).
 * ttm_choose_variant: the SpTTM kernel ttm_fibers runs under
 *   SPT_PLUGIN_TTM_AUTO for rank R and nfibers fibers holding nnz nonzeros,
 *   the longest max_fiber_length: the rule. Host only (no device needed).
 *   Errors: INVALID_ARGUMENT (NULL variant, R = 0).
 * ttm_fibers: SpTTM on device `device`: out (x->nfibers x R, host, x's
 *   dtype, overwritten) row f = sum_{k in fiber f} values[k] * U(ind[k], :),
 *   U = *u (host, rows = dims[n], R = u->cols columns, x's dtype). The
 *   fibers and U are copied to the device for this call (nothing is
 *   cached), the kernel launch->variant runs (AUTO: ttm_choose_variant's
 *   pick), out is copied back. launch may be NULL (= AUTO, nothing
 *   reported). Synchronous. Errors: INVALID_ARGUMENT (NULL arrays,
 *   inconsistent fiber_ptr, an index >= u->rows, shapes, unknown variant),
 *   UNSUPPORTED (R >= 2^31), OUT_OF_MEMORY (the copies do not fit the free
 *   device memory), DEVICE.
 * scoo_ttm: SsTTM on device `device`: out (y->ngroups x a_len * R * b_len,
 *   host, y's dtype, overwritten), row g = the block of group g:
 *     out[g][i_a + a_len (r + R i_b)] = sum_{k in group g} in[f_k][i_a + a_len i_b] * U(ind[f_k], r)
 *   (f_k = perm[k] or k), U = *u (host, R = u->cols). Inputs copied per
 *   call; kernel_ms (may be NULL) receives the kernel's device time.
 *   Synchronous. Errors as ttm_fibers. */
#define SPT_PLUGIN_TTM_ENTRIES(ENTRY, RELEASE)                                                                    \
  ENTRY(ttm_choose_variant, (uint64_t rank, uint64_t nfibers, uint64_t nnz, uint64_t max_fiber_length,           \
                             int *variant, char *message, size_t message_len))                                   \
  ENTRY(ttm_fibers, (int device, const spt_plugin_ttm_fibers *x, const spt_plugin_matrix *u,                      \
                     spt_plugin_matrix *out, spt_plugin_ttm_launch *launch, char *message, size_t message_len))   \
  ENTRY(scoo_ttm, (int device, const spt_plugin_scoo_groups *y, const spt_plugin_matrix *u, spt_plugin_matrix *out, \
                   double *kernel_ms, char *message, size_t message_len))

/* The steps of CP-ALS on the device, for the core's one CP-ALS loop
 * (src/algo/cp_als.cpp), which owns the sweep order, the solve-branch
 * choice, the fit, convergence, callbacks and every error message. A
 * session keeps the factors, lambda, the MTTKRP output B and the Grams on
 * the device from cp_set_factors to cp_get_factors; only the scalars below
 * come back between steps. Steps are queued in order on the session's
 * streams; the entries that return scalars (cp_normal_matrix, cp_solve
 * with the pseudo-inverse, cp_fit_terms, cp_exact_inner and, when its
 * flag is not yet read back, cp_non_finite) wait for the queue. A session
 * is used by one thread at a time. Errors: INVALID_ARGUMENT (NULL
 * arguments, a mode out of range), OUT_OF_MEMORY, DEVICE.
 * cp_session_create: a session of rank `rank` on x's device for the tensor
 *   of `order` modes held by x (a device COO copy, may be NULL) and
 *   per_mode (order entries, or NULL for none: per_mode[m] is the
 *   op-MTTKRP F-COO of mode m of the same tensor, same device and dtype, or
 *   NULL). The MTTKRP of mode m runs on per_mode[m] when given, else on x
 *   (sorted by the mode when a sorted copy fits); every mode needs one of
 *   the two. Checks first that the factors and workspace fit the free
 *   device memory besides the tensor (OUT_OF_MEMORY, nothing allocated).
 *   UNSUPPORTED for a rank above the plugin's limit (6144) or an order
 *   beyond the F-COO kernels.
 * cp_session_release: frees a session (NULL ignored).
 * cp_set_factors: copies the factors (order matrices dims[m] x rank, the
 *   tensor's dtype, host) to the device and computes every Gram.
 * cp_get_factors: copies the factors and lambda (rank values of the
 *   tensor's dtype) to the host.
 * cp_mttkrp: B = MTTKRP of mode `mode` with the current factors.
 * cp_normal_matrix: Y = Hadamard product of the Grams of every mode but
 *   `mode` (in the tensor's type, mode order), its Cholesky factor and
 *   condition; *info receives what they show.
 * cp_solve: U_mode = B Y^-1 by `method` (SPT_PLUGIN_CP_SOLVE_*), Y from
 *   the last cp_normal_matrix. *eigen_info (pseudo-inverse only; 0 after
 *   Cholesky): the eigen-solver's info (> 0 = did not converge; U_mode is
 *   then unchanged).
 * cp_normalise: lambda from the column norms of U_mode (2-norm when
 *   first_sweep, else max(max |column|, 1); accumulated in double) and
 *   U_mode's columns divided by them (a zero lambda leaves its column).
 * cp_gram: G_mode = U_mode^T U_mode (accumulated in double; may overlap
 *   the next cp_mttkrp).
 * cp_fit_terms: the fit terms of the current model with the B of the last
 *   cp_mttkrp (which must be of the last mode).
 * cp_exact_inner: *inner = <X, M> summed in double over the nonzeros of
 *   x; UNSUPPORTED for a session without x.
 * cp_non_finite: *component = the first component whose norm was not
 *   finite in the last cp_normalise of `mode`, or -1. */
#define SPT_PLUGIN_CP_STEPS_ENTRIES(ENTRY, RELEASE)                                                                \
  ENTRY(cp_session_create, (const spt_plugin_device_coo *x, const spt_plugin_device_fcoo *const *per_mode,       \
                            uint32_t order, uint32_t rank, spt_plugin_cp_session **out, char *message,            \
                            size_t message_len))                                                                  \
  RELEASE(cp_session_release, (spt_plugin_cp_session * s))                                                       \
  ENTRY(cp_set_factors, (spt_plugin_cp_session * s, const spt_plugin_matrix *factors, char *message,              \
                         size_t message_len))                                                                     \
  ENTRY(cp_get_factors, (spt_plugin_cp_session * s, spt_plugin_matrix *factors, void *lambda, char *message,      \
                         size_t message_len))                                                                     \
  ENTRY(cp_mttkrp, (spt_plugin_cp_session * s, uint32_t mode, char *message, size_t message_len))                 \
  ENTRY(cp_normal_matrix, (spt_plugin_cp_session * s, uint32_t mode, spt_plugin_cp_normal_info *info,             \
                           char *message, size_t message_len))                                                    \
  ENTRY(cp_solve, (spt_plugin_cp_session * s, uint32_t mode, int method, int *eigen_info, char *message,          \
                   size_t message_len))                                                                           \
  ENTRY(cp_normalise, (spt_plugin_cp_session * s, uint32_t mode, int first_sweep, char *message,                  \
                       size_t message_len))                                                                       \
  ENTRY(cp_gram, (spt_plugin_cp_session * s, uint32_t mode, char *message, size_t message_len))                   \
  ENTRY(cp_fit_terms, (spt_plugin_cp_session * s, spt_plugin_cp_fit_terms *out, char *message, size_t message_len)) \
  ENTRY(cp_exact_inner, (spt_plugin_cp_session * s, double *inner, char *message, size_t message_len))            \
  ENTRY(cp_non_finite, (spt_plugin_cp_session * s, uint32_t mode, int32_t *component, char *message,              \
                        size_t message_len))

/* Tucker-HOOI steps (pyttb tucker_als numerics). The core's driver
 * (src/algo/tucker_hooi.cpp) runs the sweeps - order of modes, which
 * singular-vector route, fit, convergence, callbacks - and calls one entry
 * per step; a session keeps the factors U_m, the TTMc result Y, the Gram
 * matrices and the core on the device between the calls, so that only
 * scalars cross per step. P_n = prod_{m != n} ranks[m].
 * tucker_session_fcoo: a session for one tensor whose TTMc in mode m runs
 *   on per_mode[m], the op-MTTKRP F-COO of mode m (order entries, same
 *   device and dtype; order 2..8; the F-COO Kronecker product, lowest other
 *   mode fastest). ranks: order entries, 1 <= ranks[m] <= dims[m]. The
 *   copies must outlive the session. Checks first that the factors, Y, the
 *   Gram matrices, the core and the solver workspace fit the free device
 *   memory (SPT_ERR_OUT_OF_MEMORY, nothing allocated). Errors:
 *   OUT_OF_MEMORY, DEVICE, INVALID_ARGUMENT, UNSUPPORTED (sizes above the
 *   32-bit limits of cuBLAS/cuSOLVER).
 * tucker_session_hls: as tucker_session_fcoo, with each TTMc on an HLS copy
 *   (orders 3 and 4): per_mode[n] is the HLS of the same tensor rooted at
 *   mode n (order entries; same device, dtype and dims), run with the HLS
 *   kernels in SPT_PLUGIN_HLS_EXACT (CUDA cores in the tensor's type, no
 *   rounding: the results match the F-COO session's and the CPU's within
 *   the same tolerances). The kernels' scratch workspace is allocated for
 *   the session and counted in the memory check. UNSUPPORTED for an order
 *   other than 3 or 4.
 * tucker_session_hbcsf: as tucker_session_fcoo, with each TTMc on a B-CSF /
 *   HB-CSF tree (hbcsf_upload's copies; orders 3..8): per_mode[n] is the
 *   HB-CSF of the same tensor rooted at mode n (mode_order[0] = n; same
 *   device, dtype and dims), fused per fiber (cuda/ttmc_hbcsf.cuh). Same
 *   column order and results as the F-COO session (to rounding).
 *   UNSUPPORTED for an order outside 3..8 or a leaf mode's rank above 4096
 *   (the kernels stage R_leaf values per warp in shared memory);
 *   INVALID_ARGUMENT when a copy is not rooted at its mode or the copies
 *   disagree.
 * tucker_session_release: free a session (its device memory, stream and
 *   handles).
 * tucker_set_factor / tucker_get_factor: U_mode from / to host memory
 *   (*f: dims[mode] x ranks[mode], the tensor's dtype). Synchronous.
 * tucker_ttmc: Y = Y_(mode) = X_(mode) kron_{m != mode} U_m (dims[mode] x
 *   P_mode; U_mode is not read).
 * tucker_gram_vectors: U_mode = the eigenvectors of Y Y^T for its
 *   ranks[mode] largest eigenvalues, largest first (Y of `mode`; the route
 *   of a mode with dims[mode] <= P_mode or ranks[mode] > min(dims[mode],
 *   P_mode)). Waits for the solver's status.
 * tucker_right_gram: the ranks[mode] leading eigenpairs (v_r, s_r^2) of
 *   Y^T Y, kept in the session; *smallest_kept = s_R^2, *largest = s_1^2
 *   (the tensor's dtype, widened). The route of every other mode.
 * tucker_right_vectors: U_mode = Y [v_r / s_r] from tucker_right_gram's
 *   eigenpairs of the same Y.
 * tucker_svd_vectors: U_mode = the leading left singular vectors of Y by an
 *   economy SVD (a mode of the right-Gram route; its buffers are allocated
 *   for the call).
 * tucker_fix_signs: the largest-magnitude entry of each column of U_mode
 *   (the first on ties) made positive (pyttb nvecs).
 * tucker_core: G = U_{N-1}^T Y with Y of the last mode, kept in the
 *   session; *norm_core_squared = ||G||^2, summed in double.
 * tucker_get_core: the last tucker_core's G into host memory (prod ranks
 *   values of the tensor's dtype, first index fastest). Synchronous.
 * A step on a mode whose Y or eigenpairs the session does not hold, or of
 *   the other route, is INVALID_ARGUMENT. Errors of every step:
 *   INVALID_ARGUMENT, OUT_OF_MEMORY, DEVICE, NUMERICAL (an eigen or singular
 *   value solver did not converge; the message matches the CPU's). One
 *   thread at a time per session. */
typedef struct spt_plugin_tucker_session spt_plugin_tucker_session;

#define SPT_PLUGIN_TUCKER_STEPS_ENTRIES(ENTRY, RELEASE)                                                          \
  ENTRY(tucker_session_fcoo, (const spt_plugin_device_fcoo *const *per_mode, uint32_t order,                     \
                              const uint32_t *ranks, spt_plugin_tucker_session **out, char *message,             \
                              size_t message_len))                                                               \
  ENTRY(tucker_session_hls, (const spt_plugin_device_hls *const *per_mode, uint32_t order, const uint32_t *ranks, \
                             spt_plugin_tucker_session **out, char *message, size_t message_len))                \
  ENTRY(tucker_session_hbcsf, (const spt_plugin_device_hbcsf *const *per_mode, uint32_t order,                   \
                               const uint32_t *ranks, spt_plugin_tucker_session **out, char *message,            \
                               size_t message_len))                                                              \
  RELEASE(tucker_session_release, (spt_plugin_tucker_session * s))                                              \
  ENTRY(tucker_set_factor, (spt_plugin_tucker_session * s, uint32_t mode, const spt_plugin_matrix *f,           \
                            char *message, size_t message_len))                                                  \
  ENTRY(tucker_get_factor, (spt_plugin_tucker_session * s, uint32_t mode, spt_plugin_matrix *f, char *message,  \
                            size_t message_len))                                                                 \
  ENTRY(tucker_ttmc, (spt_plugin_tucker_session * s, uint32_t mode, char *message, size_t message_len))         \
  ENTRY(tucker_gram_vectors, (spt_plugin_tucker_session * s, uint32_t mode, char *message, size_t message_len)) \
  ENTRY(tucker_right_gram, (spt_plugin_tucker_session * s, uint32_t mode, double *smallest_kept, double *largest, \
                            char *message, size_t message_len))                                                  \
  ENTRY(tucker_right_vectors, (spt_plugin_tucker_session * s, uint32_t mode, char *message, size_t message_len)) \
  ENTRY(tucker_svd_vectors, (spt_plugin_tucker_session * s, uint32_t mode, char *message, size_t message_len))  \
  ENTRY(tucker_fix_signs, (spt_plugin_tucker_session * s, uint32_t mode, char *message, size_t message_len))    \
  ENTRY(tucker_core, (spt_plugin_tucker_session * s, double *norm_core_squared, char *message, size_t message_len)) \
  ENTRY(tucker_get_core, (spt_plugin_tucker_session * s, void *core, char *message, size_t message_len))

/* CP-APR steps (Chi & Kolda multiplicative updates, pyttb cp_apr 'mu'
 * numerics). The core's one CP-APR loop (src/algo/cp_apr.cpp) owns the
 * outer and inner iterations, the convergence tests, callbacks and every
 * error message; a session keeps the factors A_m, lambda (in double), each
 * mode's Phi and the grouped nonzeros on the device from
 * cp_apr_set_factors to cp_apr_get_factors, so that only scalars cross per
 * step. Steps are queued in order on the session's stream; the entries that
 * return a scalar (cp_apr_kkt_violation, cp_apr_loglikelihood) wait for it.
 * A session is used by one thread at a time. Errors of every entry:
 * INVALID_ARGUMENT (NULL arguments, a mode out of range, inconsistent
 * groups), OUT_OF_MEMORY, UNSUPPORTED, DEVICE.
 * cp_apr_session_create: a session on `device` for a tensor of `order`
 *   (2..64) modes with dims[m] rows in mode m, `nnz` nonzeros, value type
 *   dtype and rank `rank`; per_mode (order entries) holds the nonzeros
 *   grouped by each mode's index (host memory, copied). Checks first that
 *   the groups, factors, Phi and workspace fit the free device memory
 *   (OUT_OF_MEMORY, nothing allocated). UNSUPPORTED for a rank above 2048
 *   (Phi stages a few rank-long rows per warp in shared memory).
 * cp_apr_session_release: frees a session (NULL ignored).
 * cp_apr_set_factors: A_m from host memory (order matrices dims[m] x rank
 *   of dtype); lambda = 1.
 * cp_apr_get_factors: A_m and lambda (rank doubles) to host memory.
 * cp_apr_normalise: lambda_r *= ||A_mode(:, r)||_1 (summed in double) and
 *   the column divided by it (a zero column stays zero).
 * cp_apr_scooch: A_mode(i, r) += kappa where Phi_mode(i, r) > 0 and
 *   A_mode(i, r) < kappatol (Phi of the last cp_apr_phi of this mode; 0
 *   before the first).
 * cp_apr_redistribute: A_mode(:, r) *= lambda_r; lambda = 1.
 * cp_apr_phi: Phi_mode = (X_(mode) ./ max(A_mode Pi^T, eps)) Pi at the
 *   nonzeros, Pi's rows formed per nonzero in the tensor's type (other
 *   modes ascending), model values and rows accumulated in double in the
 *   CPU kernel's order (bitwise the CPU's COO-group Phi in float64 and
 *   float32).
 * cp_apr_kkt_violation: *violation = max |min(A_mode, 1 - Phi_mode)|.
 * cp_apr_multiply: A_mode .*= Phi_mode.
 * cp_apr_loglikelihood: *loglik = sum_nz x log(m(nz)) - sum of all model
 *   entries, model = [[lambda; A]], in double. */
typedef struct spt_plugin_cp_apr_session spt_plugin_cp_apr_session;

/* One mode's nonzeros grouped by their index in that mode (host memory):
 * group i is the positions [row_ptr[i], row_ptr[i+1]) (row_ptr[0] = 0,
 * non-decreasing, row_ptr[rows] = nnz); ind[m][k] (m = 0..order-1, k <
 * nnz) is the k-th nonzero's index in mode m (ind[mode] is not read and
 * may be NULL) and values[k] its value, in double. */
typedef struct spt_plugin_cp_apr_groups {
  uint64_t rows;
  const uint64_t *row_ptr;
  const uint32_t *const *ind;
  const double *values;
} spt_plugin_cp_apr_groups;

#define SPT_PLUGIN_CP_APR_STEPS_ENTRIES(ENTRY, RELEASE)                                                           \
  ENTRY(cp_apr_session_create, (int device, int dtype, uint32_t order, const uint32_t *dims, uint64_t nnz,        \
                                uint32_t rank, const spt_plugin_cp_apr_groups *per_mode,                         \
                                spt_plugin_cp_apr_session **out, char *message, size_t message_len))              \
  RELEASE(cp_apr_session_release, (spt_plugin_cp_apr_session * s))                                               \
  ENTRY(cp_apr_set_factors, (spt_plugin_cp_apr_session * s, const spt_plugin_matrix *factors, char *message,     \
                             size_t message_len))                                                                \
  ENTRY(cp_apr_get_factors, (spt_plugin_cp_apr_session * s, spt_plugin_matrix *factors, double *lambda,          \
                             char *message, size_t message_len))                                                 \
  ENTRY(cp_apr_normalise, (spt_plugin_cp_apr_session * s, uint32_t mode, char *message, size_t message_len))     \
  ENTRY(cp_apr_scooch, (spt_plugin_cp_apr_session * s, uint32_t mode, double kappa, double kappatol,             \
                        char *message, size_t message_len))                                                      \
  ENTRY(cp_apr_redistribute, (spt_plugin_cp_apr_session * s, uint32_t mode, char *message, size_t message_len))  \
  ENTRY(cp_apr_phi, (spt_plugin_cp_apr_session * s, uint32_t mode, double eps, char *message, size_t message_len)) \
  ENTRY(cp_apr_kkt_violation, (spt_plugin_cp_apr_session * s, uint32_t mode, double *violation, char *message,   \
                               size_t message_len))                                                              \
  ENTRY(cp_apr_multiply, (spt_plugin_cp_apr_session * s, uint32_t mode, char *message, size_t message_len))      \
  ENTRY(cp_apr_loglikelihood, (spt_plugin_cp_apr_session * s, double *loglik, char *message, size_t message_len))
/* Tensors larger than the device memory (family STREAM): the nonzeros of a
 * COO tensor stay in host memory, pinned in place (cudaHostRegister; memory
 * that cannot be pinned is copied from pageable memory, without overlap),
 * and stream through a ring of device chunk buffers, the copy of one chunk
 * overlapping the kernel of the one before; the factors and the output stay
 * on the device. The chunk size comes from the free device memory
 * (SPT_CUDA_MEMORY_LIMIT caps it) left after the resident working set.
 * Same results as the in-memory entries up to the summation order.
 * mttkrp_streamed: as mttkrp, for the host COO tensor x (pinned for the
 *   call) on device `device`. *info (may be NULL) receives the ring's
 *   shape. Errors: OUT_OF_MEMORY when the factors, the output and a ring
 *   of the smallest chunks do not fit the free memory (nothing is
 *   computed); UNSUPPORTED for an order outside 2..32; INVALID_ARGUMENT;
 *   DEVICE.
 * cp_session_streamed: as cp_session_create, for the host COO tensor x on
 *   device `device`: every mode's MTTKRP and cp_exact_inner stream x's
 *   nonzeros. x's arrays stay pinned until cp_session_release and must stay
 *   alive and unchanged until then. *info (may be NULL) as above. Errors:
 *   those of cp_session_create; OUT_OF_MEMORY when the factors, the
 *   workspace and a ring of the smallest chunks do not fit. */
typedef struct spt_plugin_stream_info {
  uint64_t chunk_nnz;  /* nonzeros per chunk (the last may hold fewer) */
  uint64_t chunks;     /* chunks per pass over the nonzeros */
  uint32_t buffers;    /* device chunk buffers (and streams) in the ring */
  uint32_t pinned;     /* 1 when every host array is pinned, 0 when some is copied from pageable memory */
  uint64_t ring_bytes; /* device bytes of the ring */
} spt_plugin_stream_info;

#define SPT_PLUGIN_STREAM_ENTRIES(ENTRY, RELEASE)                                                                  \
  ENTRY(mttkrp_streamed, (int device, const spt_plugin_coo *x, const spt_plugin_matrix *factors, uint32_t mode,     \
                          spt_plugin_matrix *out, spt_plugin_stream_info *info, char *message, size_t message_len)) \
  ENTRY(cp_session_streamed, (int device, const spt_plugin_coo *x, uint32_t rank, spt_plugin_cp_session **out,      \
                              spt_plugin_stream_info *info, char *message, size_t message_len))

/* Multi-device CP-ALS: one CP_STEPS session per device, each on its share
 * of the nonzeros (the same tensor's dims, rank and dtype), joined into a
 * group by NCCL collectives. NCCL is loaded at run time from the file
 * `nccl_library` names, or by the default search when it is NULL or ""
 * (see cuda/nccl_loader.cuh); without it
 * these entries answer UNSUPPORTED and the core runs on one device. The
 * rows of every mode are shared out too: session i owns rows [i c, (i + 1)
 * c) of a mode of I rows (c = ceil(I / P) for P sessions, the last share
 * cut at I). Each step runs on every session: the MTTKRP over its
 * nonzeros, then the sum of every session's output over its owned rows
 * (NCCL reduce-scatter); the solve, the normalisation and the Gram over its
 * owned rows, with the column norms and the Grams summed (or maxed) over
 * the sessions (NCCL all-reduce) so that every session holds the same
 * lambda and Grams; the new factor's rows go to every session (NCCL
 * all-gather) before they are read. Collectives are queued on the
 * sessions' streams (the Grams' sums on their second stream; NCCL 2.12 or
 * later runs one communicator's collectives in the order they were queued,
 * so a Gram's sum completes before the next exchange, and older releases
 * are refused); a step waits for the devices where it returns scalars
 * (normal_matrix, fit_terms, exact_inner, and solve by the
 * pseudo-inverse) and nowhere else. The group's first session is the
 * lead: its factors and lambda are the result (cp_get_factors on it after cp_group_gather of
 * every mode) and its flags answer cp_non_finite.
 * collectives_available: OK when NCCL (2.12 or later) loads (`message`
 *   then names the library and its version), else UNSUPPORTED with the
 *   reason.
 * cp_group_create: a group of the `count` (2..64) sessions, each on a
 *   different device, all of the same dims, rank and dtype (sessions[0]
 *   the lead); the sessions must outlive the group and take no CP_STEPS
 *   step but cp_set_factors, cp_get_factors and cp_non_finite while it
 *   lives. local_mode (-1: none) names a mode whose rows follow the
 *   nonzeros: the nonzeros of session i have their local_mode index in
 *   [local_rows[i], local_rows[i + 1]) (count + 1 non-decreasing bounds
 *   from 0 to dims[local_mode]), and session i owns those rows; its
 *   MTTKRP of that mode is then whole there (no sum over the sessions) and
 *   it reads no other row of that factor (no gather but to the lead, for
 *   the result). Sets NCCL_NVLS_ENABLE=0
 *   in the process first when it is unset (NVLink multicast can take a
 *   shared host's GPUs out of service). UNSUPPORTED without NCCL 2.12 or later,
 *   INVALID_ARGUMENT for sessions that do not match, DEVICE for an NCCL
 *   failure.
 * cp_group_release: frees a group (its communicators; NULL ignored).
 * cp_group_mttkrp: every session's MTTKRP of `mode`, summed over the
 *   sessions into each session's owned rows (of the local mode: not summed).
 * cp_group_normal_matrix, cp_group_solve, cp_group_normalise, cp_group_gram:
 *   cp_normal_matrix, cp_solve, cp_normalise and cp_gram of every session
 *   over its owned rows (the lead's info and eigen_info come back).
 * cp_group_gather: every session's owned rows of factor `mode` copied to
 *   the other sessions (of the local mode: to the lead only).
 * cp_group_fit_terms: cp_fit_terms of the whole model: <X, M> summed over
 *   the sessions' owned rows, its rounding noise the root-sum-square of
 *   theirs.
 * cp_group_exact_inner: cp_exact_inner summed over the sessions (each over
 *   its nonzeros, from its factors: gather every changed mode first), in
 *   session order.
 * cp_group_times: per session (count = the group's size), the seconds its
 *   MTTKRPs took and the seconds its exchanges took (the MTTKRP sums and the
 *   factor gathers, waiting for the slowest device included), summed over
 *   every step so far, from device events. */
typedef struct spt_plugin_cp_group spt_plugin_cp_group;

#define SPT_PLUGIN_MULTI_DEVICE_ENTRIES(ENTRY, RELEASE)                                                            \
  ENTRY(collectives_available, (const char *nccl_library, char *message, size_t message_len))                     \
  ENTRY(cp_group_create, (spt_plugin_cp_session *const *sessions, uint32_t count, const char *nccl_library,       \
                          int32_t local_mode, const uint64_t *local_rows, spt_plugin_cp_group **out, char *message, \
                          size_t message_len))                                                                    \
  RELEASE(cp_group_release, (spt_plugin_cp_group * g))                                                           \
  ENTRY(cp_group_mttkrp, (spt_plugin_cp_group * g, uint32_t mode, char *message, size_t message_len))            \
  ENTRY(cp_group_normal_matrix, (spt_plugin_cp_group * g, uint32_t mode, spt_plugin_cp_normal_info *info,        \
                                 char *message, size_t message_len))                                             \
  ENTRY(cp_group_solve, (spt_plugin_cp_group * g, uint32_t mode, int method, int *eigen_info, char *message,     \
                         size_t message_len))                                                                    \
  ENTRY(cp_group_normalise, (spt_plugin_cp_group * g, uint32_t mode, int first_sweep, char *message,             \
                             size_t message_len))                                                                \
  ENTRY(cp_group_gram, (spt_plugin_cp_group * g, uint32_t mode, char *message, size_t message_len))              \
  ENTRY(cp_group_gather, (spt_plugin_cp_group * g, uint32_t mode, char *message, size_t message_len))            \
  ENTRY(cp_group_fit_terms, (spt_plugin_cp_group * g, spt_plugin_cp_fit_terms *out, char *message,               \
                             size_t message_len))                                                                \
  ENTRY(cp_group_exact_inner, (spt_plugin_cp_group * g, double *inner, char *message, size_t message_len))       \
  ENTRY(cp_group_times, (spt_plugin_cp_group * g, double *mttkrp_seconds, double *exchange_seconds,              \
                         uint32_t count, char *message, size_t message_len))

/* The families, in table order. */
#define SPT_PLUGIN_FAMILIES(FAMILY) \
  FAMILY(DEVICE)                    \
  FAMILY(COO)                       \
  FAMILY(HICOO)                     \
  FAMILY(FCOO)                      \
  FAMILY(HBCSF)                     \
  FAMILY(HLS)                       \
  FAMILY(TTM)                       \
  FAMILY(CP_STEPS)                  \
  FAMILY(TUCKER_STEPS)              \
  FAMILY(CP_APR_STEPS)              \
  FAMILY(STREAM)                    \
  FAMILY(MULTI_DEVICE)

#define SPT_PLUGIN_TABLE_FIELD_ENTRY(name, params) int(*name) params;
#define SPT_PLUGIN_TABLE_FIELD_RELEASE(name, params) void(*name) params;
#define SPT_PLUGIN_TABLE_FIELDS(family) \
  SPT_PLUGIN_##family##_ENTRIES(SPT_PLUGIN_TABLE_FIELD_ENTRY, SPT_PLUGIN_TABLE_FIELD_RELEASE)

typedef struct spt_plugin_table {
  uint32_t abi_version;    /* SPT_PLUGIN_ABI_VERSION of the plugin's build */
  uint32_t struct_size;    /* sizeof(spt_plugin_table) of the plugin's build */
  const char *description; /* e.g. "libsptensor_cuda (CUDA runtime 13000, statically linked)"; static storage */
  SPT_PLUGIN_FAMILIES(SPT_PLUGIN_TABLE_FIELDS)
} spt_plugin_table;

/* "Not compiled" stubs, for a plugin (or a test) that does not build a
 * family: SPT_PLUGIN_<FAMILY>_ENTRIES(SPT_PLUGIN_STUB_ENTRY,
 * SPT_PLUGIN_STUB_RELEASE) defines spt_plugin_stub_<name> for each entry
 * (a status entry answers SPT_ERR_UNSUPPORTED, -5, with "<name> is not
 * compiled into this plugin" in `message`; a release does nothing, no copy
 * of that kind being possible), and SPT_PLUGIN_STUB_FILL_FAMILY(FAMILY)
 * lists them in table order for the table's initialiser. The dispatcher
 * treats UNSUPPORTED as "run it on the CPU" under AUTO and as an error
 * under a forced CUDA backend, as for any input the GPU kernels lack. */
static inline void spt_plugin_write_not_compiled(const char *entry, char *message, size_t message_len) {
  static const char tail[] = " is not compiled into this plugin";
  size_t n = 0, i;
  if (!message || message_len == 0) return;
  for (i = 0; entry[i] && n + 1 < message_len; ++i) message[n++] = entry[i];
  for (i = 0; tail[i] && n + 1 < message_len; ++i) message[n++] = tail[i];
  message[n] = '\0';
}
#define SPT_PLUGIN_STUB_ENTRY(name, params)                      \
  static int spt_plugin_stub_##name params {                     \
    spt_plugin_write_not_compiled(#name, message, message_len); \
    return -5;                                                   \
  }
#define SPT_PLUGIN_STUB_RELEASE(name, params) \
  static void spt_plugin_stub_##name params {}
#define SPT_PLUGIN_STUB_FILL_ENTRY(name, params) spt_plugin_stub_##name,
#define SPT_PLUGIN_STUB_FAMILY(family) SPT_PLUGIN_##family##_ENTRIES(SPT_PLUGIN_STUB_ENTRY, SPT_PLUGIN_STUB_RELEASE)
#define SPT_PLUGIN_STUB_FILL_FAMILY(family) \
  SPT_PLUGIN_##family##_ENTRIES(SPT_PLUGIN_STUB_FILL_ENTRY, SPT_PLUGIN_STUB_FILL_ENTRY)

/* The one symbol a plugin exports. `core_abi_version` is the core's
 * SPT_PLUGIN_ABI_VERSION (a plugin may use it to adapt or to refuse by
 * returning NULL). */
typedef const spt_plugin_table *(*spt_plugin_entry_fn)(uint32_t core_abi_version);

#ifdef __cplusplus
}
#endif

#endif /* SPT_DISPATCH_PLUGIN_ABI_H */
