/*
 * The internal function table between libsptensor.so (the core) and a
 * device plugin (libsptensor_cuda.so). Plain C so that either side can be
 * built by any compiler (g++ for the core, nvcc for the plugin); no C++
 * types, no exceptions and no heap ownership cross it.
 *
 * The plugin exports exactly one symbol, spt_cuda_plugin_entry, which
 * returns a pointer to a static table. The core refuses the plugin (with a
 * message in spt_context_backend_info) unless table->abi_version equals
 * SPT_PLUGIN_ABI_VERSION and table->struct_size >= sizeof(spt_plugin_table).
 * Bump SPT_PLUGIN_ABI_VERSION on any change to a signature or a struct here;
 * appending a function pointer at the end of spt_plugin_table is compatible
 * (struct_size tells the core whether it is there) but bumping is simpler.
 *
 * Every function returns an spt_status value (0 = OK; SPT_ERR_OUT_OF_MEMORY
 * for a device allocation failure, which the dispatcher may turn into a CPU
 * fallback; SPT_ERR_DEVICE for any other CUDA failure; SPT_ERR_INVALID_ARGUMENT
 * for bad arguments) and writes a message into the caller's buffer
 * (message, message_len; always NUL terminated when message_len > 0) when it
 * fails. All functions are thread safe.
 */
#ifndef SPT_DISPATCH_PLUGIN_ABI_H
#define SPT_DISPATCH_PLUGIN_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SPT_PLUGIN_ABI_VERSION 1u
#define SPT_CUDA_PLUGIN_ENTRY_NAME "spt_cuda_plugin_entry"
#define SPT_CUDA_PLUGIN_FILE_NAME "libsptensor_cuda.so"

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

/* A row-major dense matrix in host memory: element (i,j) at data[i*ld + j]. */
typedef struct spt_plugin_matrix {
  void *data; /* const for inputs */
  uint64_t rows;
  uint64_t cols;
  uint64_t ld;
} spt_plugin_matrix;

/* Opaque device copy of a COO tensor (owned by the plugin). */
typedef struct spt_plugin_device_coo spt_plugin_device_coo;

typedef struct spt_plugin_table {
  uint32_t abi_version; /* SPT_PLUGIN_ABI_VERSION of the plugin's build */
  uint32_t struct_size; /* sizeof(spt_plugin_table) of the plugin's build */
  const char *description; /* e.g. "libsptensor_cuda 0.1.0, CUDA runtime 13000"; static storage */

  /* Number of usable devices in *count (0 when there is no driver or no
   * device: then OK is still returned and `message` says why). */
  int (*device_count)(int *count, char *message, size_t message_len);

  /* Properties of device `device` (0-based). */
  int (*device_info)(int device, spt_plugin_device_info *info, char *message, size_t message_len);

  /* Copy tensor x to device `device`; *out receives the device copy. Checks
   * that the copy fits the free device memory first (SPT_ERR_OUT_OF_MEMORY). */
  int (*coo_upload)(int device, const spt_plugin_coo *x, spt_plugin_device_coo **out, char *message,
                    size_t message_len);

  /* Free a device copy (NULL ignored). Never fails (errors at process exit
   * are ignored). */
  void (*coo_release)(spt_plugin_device_coo *x);

  /* out (dims[mode] x R) = MTTKRP of the device tensor x with the host
   * factor matrices factors[m] (dims[m] x R, m != mode; factors[mode] is
   * ignored), all of x's dtype. Factors are copied to the device, the
   * product runs there and out is copied back (overwritten). Synchronous. */
  int (*mttkrp)(const spt_plugin_device_coo *x, const spt_plugin_matrix *factors, uint32_t mode,
                spt_plugin_matrix *out, char *message, size_t message_len);
} spt_plugin_table;

/* The one symbol a plugin exports. `core_abi_version` is the core's
 * SPT_PLUGIN_ABI_VERSION (a plugin may use it to adapt or to refuse by
 * returning NULL). */
typedef const spt_plugin_table *(*spt_plugin_entry_fn)(uint32_t core_abi_version);

#ifdef __cplusplus
}
#endif

#endif /* SPT_DISPATCH_PLUGIN_ABI_H */
