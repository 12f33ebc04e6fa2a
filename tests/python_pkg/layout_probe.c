/* Prints sizeof and offsetof of the public structs the Python package
 * mirrors with ctypes (python/sptensor/_lib.py), one "struct field offset"
 * line per field and "struct - size" per struct. test_package.py compares
 * them with ctypes.sizeof / Structure.field.offset. */
#include <stddef.h>
#include <stdio.h>

#include <sptensor/sptensor.h>

#define S(type) printf("%s - %zu\n", #type, sizeof(type))
#define F(type, field) printf("%s %s %zu\n", #type, #field, offsetof(type, field))

int main(void) {
  S(spt_cpd_options);
  F(spt_cpd_options, struct_size); F(spt_cpd_options, rank); F(spt_cpd_options, max_iters);
  F(spt_cpd_options, tol); F(spt_cpd_options, init); F(spt_cpd_options, seed);
  F(spt_cpd_options, init_factors); F(spt_cpd_options, callback); F(spt_cpd_options, callback_data);
  F(spt_cpd_options, format); F(spt_cpd_options, csf_policy); F(spt_cpd_options, memo_budget_bytes);

  S(spt_tucker_options);
  F(spt_tucker_options, struct_size); F(spt_tucker_options, ranks); F(spt_tucker_options, ranks_count);
  F(spt_tucker_options, max_iters); F(spt_tucker_options, tol); F(spt_tucker_options, init);
  F(spt_tucker_options, seed); F(spt_tucker_options, init_factors); F(spt_tucker_options, callback);
  F(spt_tucker_options, callback_data); F(spt_tucker_options, ttmc);

  S(spt_read_options);
  F(spt_read_options, struct_size); F(spt_read_options, format); F(spt_read_options, dtype);
  F(spt_read_options, index_base); F(spt_read_options, order); F(spt_read_options, dims);
  F(spt_read_options, duplicates); F(spt_read_options, reject_nonfinite); F(spt_read_options, copy_binary);
  F(spt_read_options, map_binary);

  S(spt_write_options);
  F(spt_write_options, struct_size); F(spt_write_options, format); F(spt_write_options, compression);
  F(spt_write_options, index_base); F(spt_write_options, precision);

  S(spt_hbcsf_options);
  F(spt_hbcsf_options, struct_size); F(spt_hbcsf_options, root_mode); F(spt_hbcsf_options, fiber_threshold); F(spt_hbcsf_options, slice_split_nnz);
  F(spt_hbcsf_options, slice_bin_min_nnz); F(spt_hbcsf_options, flags);
  S(spt_hbcsf_summary);
  F(spt_hbcsf_summary, struct_size); F(spt_hbcsf_summary, dtype); F(spt_hbcsf_summary, order);
  F(spt_hbcsf_summary, root_mode); F(spt_hbcsf_summary, flags); F(spt_hbcsf_summary, fiber_threshold);
  F(spt_hbcsf_summary, slice_split_nnz); F(spt_hbcsf_summary, slice_bin_min_nnz); F(spt_hbcsf_summary, bins);
  F(spt_hbcsf_summary, nnz); F(spt_hbcsf_summary, coo_nnz); F(spt_hbcsf_summary, csl_nnz);
  F(spt_hbcsf_summary, bcsf_nnz); F(spt_hbcsf_summary, coo_slices); F(spt_hbcsf_summary, csl_slices);
  F(spt_hbcsf_summary, bcsf_slices); F(spt_hbcsf_summary, bcsf_fibers); F(spt_hbcsf_summary, bcsf_segments);
  F(spt_hbcsf_summary, split_fibers); F(spt_hbcsf_summary, units); F(spt_hbcsf_summary, split_slices);
  F(spt_hbcsf_summary, bytes); F(spt_hbcsf_summary, coo_bytes);
  S(spt_csf_options);
  F(spt_csf_options, struct_size); F(spt_csf_options, policy);
  S(spt_fcoo_options);
  F(spt_fcoo_options, struct_size); F(spt_fcoo_options, operation); F(spt_fcoo_options, mode);
  F(spt_fcoo_options, threadlen);
  S(spt_fcoo_summary);
  F(spt_fcoo_summary, struct_size); F(spt_fcoo_summary, dtype); F(spt_fcoo_summary, order); F(spt_fcoo_summary, nnz);
  F(spt_fcoo_summary, operation); F(spt_fcoo_summary, mode); F(spt_fcoo_summary, threadlen);
  F(spt_fcoo_summary, segments); F(spt_fcoo_summary, bytes);
  S(spt_hicoo_summary);
  F(spt_hicoo_summary, struct_size); F(spt_hicoo_summary, dtype); F(spt_hicoo_summary, order);
  F(spt_hicoo_summary, nnz); F(spt_hicoo_summary, block_size); F(spt_hicoo_summary, superblock_size);
  F(spt_hicoo_summary, bytes);
  S(spt_hls_options);
  F(spt_hls_options, struct_size); F(spt_hls_options, root_mode); F(spt_hls_options, dense_threshold);
  F(spt_hls_options, slab_depth); F(spt_hls_options, precision);
  S(spt_hls_summary);
  F(spt_hls_summary, struct_size); F(spt_hls_summary, dtype); F(spt_hls_summary, order);
  F(spt_hls_summary, root_mode); F(spt_hls_summary, dense_threshold); F(spt_hls_summary, slab_depth);
  F(spt_hls_summary, index_bits); F(spt_hls_summary, input_nnz); F(spt_hls_summary, nnz);
  F(spt_hls_summary, tiles); F(spt_hls_summary, dense_tiles); F(spt_hls_summary, sparse_tiles);
  F(spt_hls_summary, dense_nnz); F(spt_hls_summary, sparse_nnz); F(spt_hls_summary, dense_fraction);
  F(spt_hls_summary, bytes); F(spt_hls_summary, coo_bytes); F(spt_hls_summary, build_seconds);
  F(spt_hls_summary, precision); F(spt_hls_summary, threshold_calibrated);
  S(spt_hicoo_options);
  F(spt_hicoo_options, struct_size); F(spt_hicoo_options, block_size); F(spt_hicoo_options, superblock_size);
  F(spt_hicoo_options, strategy);

  S(spt_hicoo_statistics);
  F(spt_hicoo_statistics, struct_size); F(spt_hicoo_statistics, reason); F(spt_hicoo_statistics, reason_capacity);
  F(spt_hicoo_statistics, reason_length); F(spt_hicoo_statistics, order); F(spt_hicoo_statistics, block_size);
  F(spt_hicoo_statistics, superblock_size); F(spt_hicoo_statistics, threads); F(spt_hicoo_statistics, nnz);
  F(spt_hicoo_statistics, num_blocks); F(spt_hicoo_statistics, num_superblocks);
  F(spt_hicoo_statistics, block_ratio); F(spt_hicoo_statistics, block_ratio_threshold);
  F(spt_hicoo_statistics, mean_nnz_per_block); F(spt_hicoo_statistics, geomean_nnz_per_block);
  F(spt_hicoo_statistics, slice_per_block); F(spt_hicoo_statistics, hicoo_bytes);
  F(spt_hicoo_statistics, coo_bytes); F(spt_hicoo_statistics, suggested_block_size);
  F(spt_hicoo_statistics, suggested_superblock_size);

  S(spt_csf_summary);
  F(spt_csf_summary, struct_size); F(spt_csf_summary, dtype); F(spt_csf_summary, order); F(spt_csf_summary, nnz);
  F(spt_csf_summary, policy); F(spt_csf_summary, trees); F(spt_csf_summary, bytes);
  F(spt_csf_summary, mode_order); F(spt_csf_summary, tree_for_mode);

  S(spt_coo_summary);
  F(spt_coo_summary, struct_size); F(spt_coo_summary, dtype); F(spt_coo_summary, order); F(spt_coo_summary, nnz);
  F(spt_coo_summary, read_only);
  S(spt_scoo_summary);
  F(spt_scoo_summary, struct_size); F(spt_scoo_summary, dtype); F(spt_scoo_summary, order);
  F(spt_scoo_summary, dense_mode); F(spt_scoo_summary, dense_mode_count); F(spt_scoo_summary, nfibers);
  F(spt_scoo_summary, block_length);
  S(spt_matrix_summary);
  F(spt_matrix_summary, struct_size); F(spt_matrix_summary, dtype); F(spt_matrix_summary, layout);
  F(spt_matrix_summary, rows); F(spt_matrix_summary, cols); F(spt_matrix_summary, ld); F(spt_matrix_summary, wrapped);
  S(spt_ktensor_summary);
  F(spt_ktensor_summary, struct_size); F(spt_ktensor_summary, dtype); F(spt_ktensor_summary, order);
  F(spt_ktensor_summary, rank); F(spt_ktensor_summary, iterations); F(spt_ktensor_summary, fit);
  F(spt_ktensor_summary, converged);
  S(spt_ttensor_summary);
  F(spt_ttensor_summary, struct_size); F(spt_ttensor_summary, dtype); F(spt_ttensor_summary, order);
  F(spt_ttensor_summary, fit); F(spt_ttensor_summary, iterations); F(spt_ttensor_summary, converged);
  S(spt_dense_summary);
  F(spt_dense_summary, struct_size); F(spt_dense_summary, dtype); F(spt_dense_summary, order);
  F(spt_dense_summary, count);
  S(spt_permutation_summary);
  F(spt_permutation_summary, struct_size); F(spt_permutation_summary, order);

  S(spt_backend_info);
  F(spt_backend_info, struct_size); F(spt_backend_info, requested); F(spt_backend_info, backend);
  F(spt_backend_info, cuda_available); F(spt_backend_info, device); F(spt_backend_info, device_count);
  F(spt_backend_info, device_name); F(spt_backend_info, device_total_memory);
  F(spt_backend_info, compute_capability_major); F(spt_backend_info, compute_capability_minor);
  F(spt_backend_info, plugin_path); F(spt_backend_info, reason);

  S(spt_format_advice);
  F(spt_format_advice, struct_size); F(spt_format_advice, reason); F(spt_format_advice, reason_capacity);
  F(spt_format_advice, reason_length); F(spt_format_advice, format); F(spt_format_advice, csf_policy);
  F(spt_format_advice, block_ratio); F(spt_format_advice, slice_per_block);

  S(spt_cp_apr_options);
  F(spt_cp_apr_options, struct_size); F(spt_cp_apr_options, rank); F(spt_cp_apr_options, max_outer_iters);
  F(spt_cp_apr_options, max_inner_iters); F(spt_cp_apr_options, tol); F(spt_cp_apr_options, kappa);
  F(spt_cp_apr_options, kappatol); F(spt_cp_apr_options, epsilon); F(spt_cp_apr_options, init);
  F(spt_cp_apr_options, seed); F(spt_cp_apr_options, init_factors); F(spt_cp_apr_options, callback);
  F(spt_cp_apr_options, callback_data); F(spt_cp_apr_options, format);

  S(spt_reorder_options);
  F(spt_reorder_options, struct_size); F(spt_reorder_options, method); F(spt_reorder_options, iterations);
  F(spt_reorder_options, seed);
  return 0;
}
