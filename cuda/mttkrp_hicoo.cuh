// HiCOO MTTKRP on the GPU (Li's dissertation §8.1.5): the device layout of a
// HiCOO tensor, its upload, and the kernel launch. Factors and the output
// are dense row-major on the device with leading dimension = rank.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace spt::cuda {

// Orders above this run on the CPU (block indices and factor pointers are
// kernel parameters and shared-memory tables of this size).
constexpr uint32_t kHicooMaxOrder = 8;

// A HiCOO tensor in host memory (see src/core/hicoo.hpp): nonzeros in
// blocks of 2^block_bits per mode; block b holds nonzeros [bptr[b],
// bptr[b+1]); binds[m][b] is block b's coordinate in mode m >> block_bits,
// einds[m][k] nonzero k's coordinate & (2^block_bits - 1).
struct HostHicooView {
  uint32_t order = 0;
  uint32_t block_bits = 0;
  uint64_t nnz = 0;
  uint64_t num_blocks = 0;
  const uint32_t* dims = nullptr;
  const uint64_t* bptr = nullptr;           // num_blocks + 1
  const uint32_t* const* binds = nullptr;   // order arrays of num_blocks
  const uint8_t* const* einds = nullptr;    // order arrays of nnz
  const void* values = nullptr;             // nnz values of value_size bytes
  size_t value_size = 0;
};

// The device copy: one allocation holding bptr, binds (mode-major), the
// per-mode "next dense block" tables, einds (mode-major) and the values,
// each at a 256-byte aligned offset.
struct DeviceHicooRef {
  uint32_t order = 0;
  uint32_t block_bits = 0;
  uint64_t nnz = 0;
  uint64_t num_blocks = 0;
  uint32_t dims[kHicooMaxOrder] = {};
  const uint64_t* bptr = nullptr;
  const uint32_t* binds = nullptr;       // order * num_blocks
  // order * num_blocks: next_dense[n * num_blocks + b] = the first block
  // >= b that is dense in mode n (hicoo_block_is_dense), or num_blocks.
  const uint32_t* next_dense = nullptr;
  uint64_t dense_blocks[kHicooMaxOrder] = {};  // per mode: blocks dense in that mode
  const uint8_t* einds = nullptr;        // order * nnz
  const void* values = nullptr;
};

// Nonzeros per touched output row from which a block accumulates its
// output in a shared-memory window (the default of hicoo_upload's
// window_reuse). The window wins only on blocks with thousands of
// nonzeros per touched row (global atomics on a few rows serialise); the
// threshold sits in the gap between the measured wins and losses
// (measurements: docs/design-measurements.md, "kHicooWindowReuse").
constexpr uint64_t kHicooWindowReuse = 6144;

// Whether a block of `nnz` nonzeros touching `rows` distinct output rows
// (mode-n element indices) is dense in mode n, i.e. its output rows are
// merged in a shared-memory window: nnz >= max(8, B/4) and nnz >= reuse *
// rows. Below that, zeroing and flushing the B x R window and the
// shared-memory atomics (slower than global float4 reductions with a
// running sum per lane) cost more than the contention they avoid.
bool hicoo_block_is_dense(uint64_t nnz, uint64_t rows, uint32_t block_bits, uint64_t reuse);

// Bytes of the device copy (hicoo_upload's `block`).
size_t hicoo_copy_bytes(uint32_t order, uint64_t nnz, uint64_t num_blocks, size_t value_size);

// Copy x into `block` (device memory, hicoo_copy_bytes big) and describe it
// in *out, classifying each block per mode with hicoo_block_is_dense(...,
// window_reuse) (1 = every block with enough nonzeros uses the window).
// Synchronous. Needs order in 2..kHicooMaxOrder and num_blocks < 2^32
// (cudaErrorInvalidValue otherwise; the caller checks first).
cudaError_t hicoo_upload(const HostHicooView& x, void* block, DeviceHicooRef* out,
                         uint64_t window_reuse = kHicooWindowReuse);

// How a launch maps the work (for the benchmark's report and the docs).
struct HicooLaunchPlan {
  bool shared_output = false;   // dense blocks accumulate their output rows in shared memory
  bool staged_factors = false;  // and read the other modes' B-row factor windows from shared memory
  uint32_t vector = 1;          // columns per vector access
  uint32_t lanes = 1;           // lanes per team (one nonzero at a time per team)
  size_t shared_bytes = 0;      // dynamic shared memory per thread block
  uint64_t thread_blocks = 0;
  uint64_t chunk = 0;           // nonzeros per thread block
  uint32_t output_copies = 1;   // copies of the output the atomics are spread over (output_copies.cuh)
};

// Which shared-memory uses a launch may make (the benchmark compares).
enum class HicooSharedUse { automatic = 0, atomics_only = 1, no_staging = 2 };

// out (dims[mode] x rank, device, ld = rank) += MTTKRP of x with factors[m]
// (device, dims[m] x rank, ld = rank; factors[mode] not read). The caller
// zeroes out first. Asynchronous on `stream`; returns the launch error.
// float32 outputs whose rows take many additions are summed through copies
// (output_copies.cuh: the device's cached scratch, a second kernel).
// `multiprocessors` sizes the grid; *plan (optional) receives the mapping.
template <typename T>
cudaError_t launch_mttkrp_hicoo(const DeviceHicooRef& x, const T* const* factors, uint32_t mode, uint32_t rank,
                                T* out, int multiprocessors, cudaStream_t stream, HicooLaunchPlan* plan = nullptr,
                                HicooSharedUse use = HicooSharedUse::automatic);

}  // namespace spt::cuda
