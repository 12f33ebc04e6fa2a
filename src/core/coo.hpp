// The COO sparse tensor object behind the opaque spt_coo handle.
//
// Storage is structure-of-arrays: one index array per mode plus one value
// array. An owning tensor keeps its arrays in own_ind / own_val; a read-only
// view points at caller memory. Kernels read through ind[m] and values<T>(),
// which work for both.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/buffer.hpp"
#include "core/dtype.hpp"
#include "util/internal_api.hpp"

struct spt_coo_s {
  std::vector<spt_index> dims;
  spt_nnz nnz = 0;
  bool read_only = false;

  // Per-mode index arrays and the value array, as kernels read them.
  std::vector<const spt_index*> ind;
  const void* val = nullptr;

  // Owning storage (empty for views).
  std::vector<spt::buffer<spt_index>> own_ind;
  spt::ValueStore own_val;

  // Zero-copy storage: when set, ind/val point into this memory (a mapped
  // .sptb file or a decompressed file image) instead of own_ind/own_val,
  // which stay empty. The tensor still owns its data (it is not a view);
  // operations that write in place call make_owned() first, and operations
  // that build new arrays (sort, coalesce) replace it.
  std::shared_ptr<const void> backing;

  // Value type stored in the binary file this tensor was read from (.sptb,
  // SPLATT .bin), which the reader may have converted; 0 when not read from
  // a binary file. Reported by spt_coo_file_dtype (e.g. for `sptensor info`).
  spt_dtype file_dtype = static_cast<spt_dtype>(0);

  // Mode order the nonzeros are known to be sorted in (empty = unknown).
  std::vector<uint32_t> sorted_by;

  // Contents redrawn before every use (GCP-SGD's sampled derivatives): the
  // device MTTKRP runs the COO kernel as it is, without the GPU format
  // model's choice (a pass over the nonzeros, maybe a conversion, that
  // would serve one call only).
  bool redrawn = false;

  // Device copies of this tensor, owned by the dispatcher
  // (src/dispatch/device.cpp; opaque here). Filled on first device use,
  // dropped by touched(); also revalidated against nnz/dims/array pointers.
  mutable std::shared_ptr<void> device_cache;

  spt_dtype dtype() const { return own_val.dtype(); }
  uint32_t order() const { return static_cast<uint32_t>(dims.size()); }

  template <typename T>
  const T* values() const {
    return static_cast<const T*>(val);
  }

  // Owning tensors only: mutable access (callers check read_only first).
  spt_index* mutable_ind(uint32_t m) { return own_ind[m].data(); }
  template <typename T>
  T* mutable_values() {
    return own_val.get<T>().data();
  }

  // Set up an owning tensor of the given shape with n (uninitialised) nonzeros.
  SPT_INTERNAL_API void init_owned(spt_dtype dtype, const std::vector<spt_index>& dims, spt_nnz n);
  // Change the number of nonzeros of an owning tensor, keeping the first
  // min(old, n) entries.
  void resize(spt_nnz n);
  // Point ind/val at the owning storage again (after it moved); drops any
  // zero-copy backing.
  void refresh();
  // Copy zero-copy backed arrays into own_ind/own_val (no-op otherwise).
  SPT_INTERNAL_API void make_owned();
  // Mark contents changed (forget sortedness and device copies).
  void touched() {
    sorted_by.clear();
    device_cache.reset();
  }
};

namespace spt {

// Throw SPT_ERR_READ_ONLY when x is a view.
void require_writable(const spt_coo_s& x);

// Caller arrays of nnz values and ld * order indices (ld >= nnz) must fit
// the address space; else SPT_ERR_OVERFLOW, before anything reads or
// allocates. order >= 1.
void check_caller_arrays(uint32_t order, spt_nnz nnz, spt_nnz ld, spt_dtype dtype);

// Order in 1..SPT_MAX_ORDER, else SPT_ERR_INVALID_ARGUMENT naming the limit.
void validate_order(uint64_t order);

// Validate dims: order (1..SPT_MAX_ORDER) entries, each >= 1.
SPT_INTERNAL_API void validate_dims(uint32_t order, const spt_index* dims);

// Copy caller coordinates (mode-major, stride ld, base 0/1) and values into
// x's storage starting at nonzero `offset`, validating every index against
// x.dims (or growing dims when grow is set) and values when
// reject_nonfinite. On error, x's dims are unchanged.
SPT_INTERNAL_API void copy_in_nonzeros(spt_coo_s& x, spt_nnz offset, spt_nnz n, const spt_index* indices, spt_nnz ld,
                      int index_base, const void* values, bool reject_nonfinite, bool grow_dims);

// "nonzero first+k (0-based coordinate (i, j, ...))" of x's nonzero k, for
// messages (first: where x's nonzeros start in a file read in ranges).
std::string nonzero_position(const spt_coo_s& x, spt_nnz k, spt_nnz first = 0);

// Deep copy of x (owning, same dtype) or with a converted dtype. Converting
// float64 values beyond float32's range fails with SPT_ERR_OVERFLOW (see
// core/value_range.hpp).
spt_coo_s copy_coo(const spt_coo_s& x, spt_dtype dtype);

// Distinct indices used in each mode, i.e. its non-empty slices (one pass
// over the mode's indices with a byte per index, on `threads` threads).
std::vector<spt_nnz> distinct_indices_per_mode(const spt_coo_s& x, int threads);

}  // namespace spt
