// B-CSF / HB-CSF MTTKRP on the GPU (Nisa et al., "Load-Balanced Sparse
// MTTKRP on GPUs", §IV-V; layout in src/core/hbcsf.hpp): the device layout
// of a handle, its upload, and the kernel launches. Factors and the output
// are dense row-major on the device with leading dimension = rank.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace spt::cuda {

// Orders above this run on the CPU (the per-level factor pointers are a
// kernel parameter array of this size), as for HiCOO.
constexpr uint32_t kHbcsfMaxOrder = 8;

// A B-CSF / HB-CSF tensor in host memory, by level (level 0 = the root =
// the output mode; see src/core/hbcsf.hpp and spt_plugin_hbcsf). Only the
// arrays the kernels read: the tree above the fiber segments is reached
// through node_parent, so bcsf_slice_ptr and node_ptr stay on the host.
struct HostHbcsfView {
  uint32_t order = 0;
  size_t value_size = 0;
  const uint32_t* dims = nullptr;        // order entries, by mode
  const uint32_t* mode_order = nullptr;  // order entries: level -> mode
  uint64_t coo_nnz = 0;
  const uint32_t* const* coo_ind = nullptr;  // order arrays of coo_nnz
  const void* coo_val = nullptr;
  uint64_t csl_slices = 0, csl_nnz = 0;
  const uint32_t* csl_slice_ind = nullptr;   // csl_slices
  const uint32_t* csl_slice_ptr = nullptr;   // csl_slices + 1
  const uint32_t* const* csl_ind = nullptr;  // order - 1 arrays of csl_nnz
  const void* csl_val = nullptr;
  const uint64_t* node_count = nullptr;          // order - 2 entries (levels 1..order-2)
  const uint32_t* const* node_ind = nullptr;     // order - 2 arrays
  const uint32_t* const* node_parent = nullptr;  // order - 3 arrays (levels 2..order-2)
  uint64_t segments = 0;                   // = node_count[order - 3]
  const uint32_t* segment_ptr = nullptr;   // segments + 1
  uint64_t bcsf_nnz = 0;
  const uint32_t* leaf_ind = nullptr;
  const void* bcsf_val = nullptr;
  uint64_t units = 0;
  const uint32_t* unit_row = nullptr;
  const uint32_t* unit_segment_ptr = nullptr;  // units + 1
  const uint8_t* unit_split = nullptr;
};

// The device copy: one allocation holding every array of HostHbcsfView
// (each at a 256-byte aligned offset). The units are read by the TTMc
// kernels (ttmc_hbcsf.cuh) and give each segment its root row at upload.
struct DeviceHbcsfRef {
  uint32_t order = 0;
  uint32_t mode_order[kHbcsfMaxOrder] = {};  // level -> mode
  uint32_t dims[kHbcsfMaxOrder] = {};        // by mode
  uint64_t coo_nnz = 0, csl_slices = 0, csl_nnz = 0, segments = 0, bcsf_nnz = 0, units = 0;
  const uint32_t* coo_ind[kHbcsfMaxOrder] = {};  // by level
  const void* coo_val = nullptr;
  const uint32_t* csl_slice_ind = nullptr;
  const uint32_t* csl_slice_ptr = nullptr;
  const uint32_t* csl_ind[kHbcsfMaxOrder] = {};      // [l - 1], levels 1..order-1
  const void* csl_val = nullptr;
  const uint32_t* node_ind[kHbcsfMaxOrder] = {};     // [l - 1], levels 1..order-2
  const uint32_t* node_parent[kHbcsfMaxOrder] = {};  // [l - 2], levels 2..order-2
  const uint32_t* segment_ptr = nullptr;
  const uint32_t* leaf_ind = nullptr;
  const void* bcsf_val = nullptr;
  const uint32_t* unit_row = nullptr;
  const uint32_t* unit_segment_ptr = nullptr;
  const uint8_t* unit_split = nullptr;
  // segments entries, made at upload from the units: the root-level row
  // (slice coordinate) of each fiber segment, so that kernels mapping work
  // by leaves need no unit lookup.
  const uint32_t* segment_row = nullptr;
  uint64_t csl_max_slice = 0;  // nonzeros of the longest CSL slice, made at upload
};

// Bytes of the device copy (hbcsf_upload's `block`).
size_t hbcsf_copy_bytes(const HostHbcsfView& x);

// Copy x into `block` (device memory, hbcsf_copy_bytes big) and describe it
// in *out. Synchronous. Needs order in 3..kHbcsfMaxOrder
// (cudaErrorInvalidValue otherwise; the caller checks first).
cudaError_t hbcsf_upload(const HostHbcsfView& x, void* block, DeviceHbcsfRef* out);

// How a launch maps the work (for the benchmark's report).
struct HbcsfLaunchPlan {
  uint32_t vector = 1;        // columns per vector access
  uint32_t lanes = 0;         // lanes per group (vectors of rank columns in flight)
  uint32_t launches = 0;      // kernel launches (root: 1, fused; non-root: COO, CSL, B-CSF)
  uint64_t leaf_chunk = 0;   // B-CSF leaves per warp
  uint64_t coo_groups = 0;    // lane groups of the COO launch
  bool csl_warp_per_slice = false;  // CSL: a warp per slice (else a lane group per slice)
  uint64_t bcsf_blocks = 0;   // thread blocks of the B-CSF group
};

// out (dims[mode_order[0]] x rank, device, ld = rank) += MTTKRP of x with
// factors[m] (device, by mode: dims[m] x rank, ld = rank; factors of the
// root not read). The caller zeroes out first: rows of empty slices stay
// zero. One launch: the COO group as the paper (a lane group per nonzero,
// plain stores), the CSL group as the paper (a warp or lane group per
// slice) unless one slice is long (then as the B-CSF group), the B-CSF
// group mapped by equal chunks of leaves per warp with segment and running
// row sums, rows added atomically (see cuda/mttkrp_hbcsf.cu for why not by
// the paper's slice units).
// Asynchronous on `stream`; returns the launch error. `multiprocessors`
// sizes the grid; *plan (optional) receives the mapping.
template <typename T>
cudaError_t launch_mttkrp_hbcsf(const DeviceHbcsfRef& x, const T* const* factors, uint32_t rank, T* out,
                                int multiprocessors, cudaStream_t stream, HbcsfLaunchPlan* plan = nullptr);

// B-CSF leaves per warp of launch_mttkrp_hbcsf for x on `multiprocessors`
// SMs (a multiple of 32; see hbcsf_leaf_chunk in the .cu for the rule).
uint64_t hbcsf_leaf_chunk(const DeviceHbcsfRef& x, int multiprocessors);

// out (dims[mode] x rank, device, ld = rank) += MTTKRP of x in `mode`, any
// mode of the tensor (the tree stays rooted at mode_order[0]): for a
// non-root mode at level l >= 1, out(i_l, :) += val * the Hadamard product
// of the factor rows of every other level, rows added with atomicAdd (a
// row of a non-root mode is shared by many slices and groups). factors[m]
// as for launch_mttkrp_hbcsf, by mode; factors[mode] is not read, the
// root's factor is. mode == root runs launch_mttkrp_hbcsf. The caller
// zeroes out first. float32 outputs whose rows take many additions are
// summed through copies (output_copies.cuh: the device's cached scratch,
// a second kernel). Asynchronous on `stream`; *plan (optional)
// receives the mapping (bcsf_blocks = the B-CSF launch's grid).
template <typename T>
cudaError_t launch_mttkrp_hbcsf_nonroot(const DeviceHbcsfRef& x, const T* const* factors, uint32_t mode,
                                        uint32_t rank, T* out, int multiprocessors, cudaStream_t stream,
                                        HbcsfLaunchPlan* plan = nullptr);

}  // namespace spt::cuda
