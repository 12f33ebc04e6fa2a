// The plugin table's entries that live outside plugin.cu (one file per
// group: plugin_hls.cu, plugin_ttm.cu, plugin_tucker.cu), declared here for
// the table in plugin.cu. Signatures and contracts: src/dispatch/plugin_abi.h.
#pragma once

#include "dispatch/plugin_abi.h"

namespace spt_plugin {

/* [v6-hls-begin] */
int plugin_hls_upload(int device, const spt_plugin_hls* x, spt_plugin_device_hls** out, char* message,
                      size_t message_len);
void plugin_hls_release(spt_plugin_device_hls* x);
int plugin_hls_multiply(const spt_plugin_device_hls* x, int kind, int precision, const spt_plugin_matrix* factors,
                        spt_plugin_matrix* out, char* message, size_t message_len);
int plugin_hls_calibrate(int device, uint32_t order, uint32_t slab_depth, uint32_t rank, int precision,
                         double* seconds_per_dense_tile, double* seconds_per_sparse_nnz, char* message,
                         size_t message_len);
/* [v6-hls-end] */

/* [v6-ttm-begin] */
int plugin_ttm_choose_variant(uint64_t rank, uint64_t nfibers, uint64_t nnz, uint64_t max_fiber_length, int* variant,
                              char* message, size_t message_len);
int plugin_ttm_fibers(int device, const spt_plugin_ttm_fibers* x, const spt_plugin_matrix* u, spt_plugin_matrix* out,
                      spt_plugin_ttm_launch* launch, char* message, size_t message_len);
int plugin_scoo_ttm(int device, const spt_plugin_scoo_groups* y, const spt_plugin_matrix* u, spt_plugin_matrix* out,
                    double* kernel_ms, char* message, size_t message_len);
/* [v6-ttm-end] */

/* [v6-tucker-begin] */
int plugin_tucker_hooi_fcoo(const spt_plugin_device_fcoo* const* per_mode, uint32_t order,
                            const spt_plugin_tucker_args* args, char* message, size_t message_len);
int plugin_tucker_hooi_hls(const spt_plugin_device_hls* const* per_mode, uint32_t order,
                           const spt_plugin_tucker_args* args, char* message, size_t message_len);
/* [v6-tucker-end] */

/* [v7-chain-begin] */
int plugin_tucker_hooi_hbcsf(const spt_plugin_device_hbcsf* const* per_mode, uint32_t order,
                             const spt_plugin_tucker_args* args, char* message, size_t message_len);
/* [v7-chain-end] */

}  // namespace spt_plugin
