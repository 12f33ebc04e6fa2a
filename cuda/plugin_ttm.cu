// The CUDA plugin's SpTTM entries (family TTM of the entry lists in
// src/dispatch/plugin_abi.h, with their contracts): the variant rule, SpTTM on mode-n fibers
// (three kernels, cuda/ttm.cuh) and the semi-sparse TTM (SsTTM).
//
// Nothing is cached: each call validates the host arrays (an index past
// U's rows would otherwise fault on the device), checks that its one
// temporary block fits the free device memory (SPT_CUDA_MEMORY_LIMIT
// honoured), copies the inputs in, runs the kernel between two CUDA events
// (its time is reported: the benchmark's kernel-only number), copies the
// output out and synchronises.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <string>
#include <vector>

#include "dispatch/plugin_abi.h"
#include "plugin_common.cuh"
#include "plugin_entries.cuh"
#include "ttm.cuh"

namespace spt_plugin {

namespace {

using spt::cuda::TtmVariant;

// Sub-allocations of one temporary block, each 256-byte aligned (the
// rank-blocked kernel's vector loads need 16).
struct Layout {
  size_t bytes = 0;
  size_t add(size_t n) {
    const size_t at = bytes;
    bytes += align_up(std::max<size_t>(n, 1), 256);
    return at;
  }
};

// a * b * c as size_t, false on overflow.
bool product(uint64_t a, uint64_t b, uint64_t c, size_t* out) {
  uint64_t ab = 0, abc = 0;
  if (__builtin_mul_overflow(a, b, &ab) || __builtin_mul_overflow(ab, c, &abc) || abc > SIZE_MAX) return false;
  *out = static_cast<size_t>(abc);
  return true;
}

// Checks a non-decreasing offset array of n + 1 entries from 0 to total;
// the longest range goes to *longest.
bool valid_offsets(const uint64_t* ptr, uint64_t n, uint64_t total, uint64_t* longest) {
  if (!ptr || ptr[0] != 0 || ptr[n] != total) return false;
  uint64_t m = 0;
  for (uint64_t i = 0; i < n; ++i) {
    if (ptr[i + 1] < ptr[i]) return false;
    m = std::max(m, ptr[i + 1] - ptr[i]);
  }
  *longest = m;
  return true;
}

// True when every index is below rows.
bool indices_below(const uint32_t* ind, uint64_t n, uint64_t rows) {
  uint32_t m = 0;
  for (uint64_t k = 0; k < n; ++k) m = std::max(m, ind[k]);
  return n == 0 || m < rows;
}

// The variant under AUTO: the rule (cuda/ttm.cu, choose_ttm_variant).
TtmVariant rule_variant(uint64_t rank, uint64_t nfibers, uint64_t nnz, uint64_t longest) {
  const double mean = nfibers ? double(nnz) / double(nfibers) : 0.0;
  return spt::cuda::choose_ttm_variant(rank, nfibers, mean, longest);
}

int check_matrix(const spt_plugin_matrix* m, const char* name, char* message, size_t message_len) {
  if (!m || (!m->data && m->rows > 0) || m->cols == 0 || m->ld < m->cols) {
    write_message(message, message_len, std::string(name) + " is NULL or has a bad shape");
    return kInvalidArgument;
  }
  if (m->cols >= (uint64_t(1) << 31)) {  // the kernels' 32-bit column loops must not wrap
    write_message(message, message_len,
                  std::string(name) + " has 2^31 or more columns; the GPU SpTTM kernels take fewer");
    return kUnsupported;
  }
  return kOk;
}

// One temporary block of `bytes` on the current device after checking it
// against the free memory; run(base) enqueues the work on `stream`
// (returning the failing step or nullptr); then free, synchronise, map errors.
template <typename Run>
int with_block(int device, size_t bytes, const char* what, cudaStream_t stream, Run&& run, char* message,
               size_t message_len) {
  if (int status = check_free_memory(device, bytes, what, "need", "", message, message_len);
      status != kOk)
    return status;
  void* block = nullptr;
  if (cudaError_t err = cudaMallocAsync(&block, bytes, stream); err != cudaSuccess) {
    cudaGetLastError();
    write_message(message, message_len,
                  std::string(what) + " need " + megabytes(bytes) + " on CUDA device " + std::to_string(device) +
                      " (" + describe(err) + ")");
    return err == cudaErrorMemoryAllocation ? kOutOfMemory : kDevice;
  }
  const char* step = nullptr;
  cudaError_t err = run(static_cast<char*>(block), step);
  cudaFreeAsync(block, stream);
  const cudaError_t sync = cudaStreamSynchronize(stream);
  if (err == cudaSuccess && sync != cudaSuccess) {
    err = sync;
    step = "running the kernel";
  }
  if (err != cudaSuccess) return cuda_failure(err, step ? step : what, message, message_len);
  return kOk;
}

// Records the kernel's time between two events (when wanted).
struct KernelTimer {
  cudaEvent_t start = nullptr, stop = nullptr;
  explicit KernelTimer(bool wanted) {
    if (wanted && (cudaEventCreate(&start) != cudaSuccess || cudaEventCreate(&stop) != cudaSuccess)) {
      cudaGetLastError();
      release();
    }
  }
  ~KernelTimer() { release(); }
  void release() {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    start = stop = nullptr;
  }
  void begin(cudaStream_t s) {
    if (start) cudaEventRecord(start, s);
  }
  void end(cudaStream_t s) {
    if (stop) cudaEventRecord(stop, s);
  }
  // After the stream has been synchronised.
  double milliseconds() {
    float ms = 0;
    if (!start || cudaEventElapsedTime(&ms, start, stop) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return ms;
  }
};

template <typename T>
int ttm_fibers_typed(int device, const spt_plugin_ttm_fibers& x, const spt_plugin_matrix& u, spt_plugin_matrix& out,
                     TtmVariant variant, double* kernel_ms, char* message, size_t message_len) {
  const uint32_t rank = static_cast<uint32_t>(u.cols);
  const uint64_t ld = spt::cuda::ttm_padded_ld(rank);
  size_t value_bytes = 0, u_bytes = 0, y_bytes = 0;
  if (!product(x.nnz, sizeof(T), 1, &value_bytes) || !product(u.rows, ld, sizeof(T), &u_bytes) ||
      !product(x.nfibers, ld, sizeof(T), &y_bytes) || x.nfibers >= SIZE_MAX / 8 || x.nnz >= SIZE_MAX / 4) {
    write_message(message, message_len, "the SpTTM operands' sizes overflow");
    return kOutOfMemory;
  }
  Layout layout;
  const size_t at_ptr = layout.add((x.nfibers + 1) * sizeof(uint64_t));
  const size_t at_ind = layout.add(x.nnz * sizeof(uint32_t));
  const size_t at_val = layout.add(value_bytes);
  const size_t at_u = layout.add(u_bytes);
  const size_t at_y = layout.add(y_bytes);
  SPT_CUDA_TRY(cudaSetDevice(device), "cudaSetDevice");
  DeviceSetup setup;
  if (int status = device_setup(device, setup, message, message_len); status != kOk) return status;
  cudaStream_t stream = cudaStreamPerThread;
  KernelTimer timer(kernel_ms != nullptr);
  const int status = with_block(
      device, layout.bytes, "the SpTTM operands", stream,
      [&](char* base, const char*& step) -> cudaError_t {
        auto* fptr = reinterpret_cast<uint64_t*>(base + at_ptr);
        auto* ind = reinterpret_cast<uint32_t*>(base + at_ind);
        auto* val = reinterpret_cast<T*>(base + at_val);
        auto* du = reinterpret_cast<T*>(base + at_u);
        auto* dy = reinterpret_cast<T*>(base + at_y);
        step = "copying the fibers to the device";
        cudaError_t err = cudaMemcpyAsync(fptr, x.fiber_ptr, (x.nfibers + 1) * sizeof(uint64_t),
                                          cudaMemcpyHostToDevice, stream);
        if (err == cudaSuccess && x.nnz > 0)
          err = cudaMemcpyAsync(ind, x.ind, x.nnz * sizeof(uint32_t), cudaMemcpyHostToDevice, stream);
        if (err == cudaSuccess && x.nnz > 0)
          err = cudaMemcpyAsync(val, x.values, value_bytes, cudaMemcpyHostToDevice, stream);
        if (err != cudaSuccess) return err;
        step = "copying U to the device";
        if (ld != rank) err = cudaMemsetAsync(du, 0, u_bytes, stream);  // zero padding columns
        if (err == cudaSuccess && u.rows > 0)
          err = cudaMemcpy2DAsync(du, ld * sizeof(T), u.data, u.ld * sizeof(T), rank * sizeof(T), u.rows,
                                  cudaMemcpyHostToDevice, stream);
        if (err != cudaSuccess) return err;
        step = "launching the SpTTM kernel";
        const spt::cuda::DeviceTtmFibersRef ref{x.nfibers, fptr, ind, val};
        timer.begin(stream);
        err = spt::cuda::launch_ttm<T>(variant, ref, du, ld, rank, dy, ld, setup.multiprocessors, stream);
        timer.end(stream);
        if (err != cudaSuccess || x.nfibers == 0) return err;
        step = "copying the output to the host";
        return cudaMemcpy2DAsync(out.data, out.ld * sizeof(T), dy, ld * sizeof(T), rank * sizeof(T), x.nfibers,
                                 cudaMemcpyDeviceToHost, stream);
      },
      message, message_len);
  if (status == kOk && kernel_ms) *kernel_ms = timer.milliseconds();
  return status;
}

template <typename T>
int scoo_ttm_typed(int device, const spt_plugin_scoo_groups& y, const spt_plugin_matrix& u, spt_plugin_matrix& out,
                   double* kernel_ms, char* message, size_t message_len) {
  const uint32_t rank = static_cast<uint32_t>(u.cols);
  const uint64_t ld = rank;
  size_t in_bytes = 0, u_bytes = 0, out_bytes = 0, out_cols = 0, in_block = 0;
  if (!product(y.a_len, y.b_len, 1, &in_block) || !product(in_block, rank, 1, &out_cols) ||
      !product(y.nfibers, in_block, sizeof(T), &in_bytes) || !product(u.rows, ld, sizeof(T), &u_bytes) ||
      !product(y.ngroups, out_cols, sizeof(T), &out_bytes) || y.nfibers >= SIZE_MAX / 8 ||
      y.ngroups >= SIZE_MAX / 8) {
    write_message(message, message_len, "the SsTTM operands' sizes overflow");
    return kOutOfMemory;
  }
  if (out.rows != y.ngroups || out.cols != out_cols || out.ld < out.cols) {
    write_message(message, message_len, "the SsTTM output must be ngroups x a_len * R * b_len");
    return kInvalidArgument;
  }
  Layout layout;
  const size_t at_ptr = layout.add((y.ngroups + 1) * sizeof(uint64_t));
  const size_t at_perm = layout.add(y.perm ? y.nfibers * sizeof(uint64_t) : 0);
  const size_t at_ind = layout.add(y.nfibers * sizeof(uint32_t));
  const size_t at_in = layout.add(in_bytes);
  const size_t at_u = layout.add(u_bytes);
  const size_t at_out = layout.add(out_bytes);
  SPT_CUDA_TRY(cudaSetDevice(device), "cudaSetDevice");
  DeviceSetup setup;
  if (int status = device_setup(device, setup, message, message_len); status != kOk) return status;
  cudaStream_t stream = cudaStreamPerThread;
  KernelTimer timer(kernel_ms != nullptr);
  const int status = with_block(
      device, layout.bytes, "the SsTTM operands", stream,
      [&](char* base, const char*& step) -> cudaError_t {
        auto* gptr = reinterpret_cast<uint64_t*>(base + at_ptr);
        auto* perm = y.perm ? reinterpret_cast<uint64_t*>(base + at_perm) : nullptr;
        auto* ind = reinterpret_cast<uint32_t*>(base + at_ind);
        auto* in = reinterpret_cast<T*>(base + at_in);
        auto* du = reinterpret_cast<T*>(base + at_u);
        auto* dout = reinterpret_cast<T*>(base + at_out);
        step = "copying the semi-sparse tensor to the device";
        cudaError_t err =
            cudaMemcpyAsync(gptr, y.group_ptr, (y.ngroups + 1) * sizeof(uint64_t), cudaMemcpyHostToDevice, stream);
        if (err == cudaSuccess && perm && y.nfibers > 0)
          err = cudaMemcpyAsync(perm, y.perm, y.nfibers * sizeof(uint64_t), cudaMemcpyHostToDevice, stream);
        if (err == cudaSuccess && y.nfibers > 0)
          err = cudaMemcpyAsync(ind, y.ind, y.nfibers * sizeof(uint32_t), cudaMemcpyHostToDevice, stream);
        if (err == cudaSuccess && in_bytes > 0)
          err = cudaMemcpyAsync(in, y.values, in_bytes, cudaMemcpyHostToDevice, stream);
        if (err != cudaSuccess) return err;
        step = "copying U to the device";
        if (u.rows > 0)
          err = cudaMemcpy2DAsync(du, ld * sizeof(T), u.data, u.ld * sizeof(T), rank * sizeof(T), u.rows,
                                  cudaMemcpyHostToDevice, stream);
        if (err != cudaSuccess) return err;
        step = "launching the SsTTM kernel";
        spt::cuda::DeviceScooGroupsRef ref;
        ref.nfibers = y.nfibers;
        ref.ngroups = y.ngroups;
        ref.a_len = y.a_len;
        ref.b_len = y.b_len;
        ref.group_ptr = gptr;
        ref.perm = perm;
        ref.ind = ind;
        ref.values = in;
        timer.begin(stream);
        err = spt::cuda::launch_scoo_ttm<T>(ref, du, ld, rank, dout, setup.multiprocessors, stream);
        timer.end(stream);
        if (err != cudaSuccess || y.ngroups == 0) return err;
        step = "copying the output to the host";
        return cudaMemcpy2DAsync(out.data, out.ld * sizeof(T), dout, out_cols * sizeof(T), out_cols * sizeof(T),
                                 y.ngroups, cudaMemcpyDeviceToHost, stream);
      },
      message, message_len);
  if (status == kOk && kernel_ms) *kernel_ms = timer.milliseconds();
  return status;
}

}  // namespace

int plugin_ttm_choose_variant(uint64_t rank, uint64_t nfibers, uint64_t nnz, uint64_t max_fiber_length, int* variant,
                              char* message, size_t message_len) {
  return guarded(message, message_len, [&]() -> int {
    if (!variant || rank == 0) return kInvalidArgument;
    *variant = static_cast<int>(rule_variant(rank, nfibers, nnz, max_fiber_length));
    return kOk;
  });
}

int plugin_ttm_fibers(int device, const spt_plugin_ttm_fibers* x, const spt_plugin_matrix* u, spt_plugin_matrix* out,
                      spt_plugin_ttm_launch* launch, char* message, size_t message_len) {
  return guarded(message, message_len, [&]() -> int {
    if (!x || (x->dtype != SPT_PLUGIN_FLOAT32 && x->dtype != SPT_PLUGIN_FLOAT64)) return kInvalidArgument;
    if (int status = check_matrix(u, "U", message, message_len); status != kOk) return status;
    if (int status = check_matrix(out, "the output", message, message_len); status != kOk) return status;
    if (out->rows != x->nfibers || out->cols != u->cols) {
      write_message(message, message_len, "the SpTTM output must be nfibers x R");
      return kInvalidArgument;
    }
    uint64_t longest = 0;
    if (!valid_offsets(x->fiber_ptr, x->nfibers, x->nnz, &longest) || (x->nnz > 0 && (!x->ind || !x->values))) {
      write_message(message, message_len, "fiber_ptr is NULL or inconsistent (0 .. nnz, non-decreasing), or NULL arrays");
      return kInvalidArgument;
    }
    if (!indices_below(x->ind, x->nnz, u->rows)) {
      write_message(message, message_len, "a mode index is not below U's rows (" + std::to_string(u->rows) + ")");
      return kInvalidArgument;
    }
    const int requested = launch ? launch->variant : SPT_PLUGIN_TTM_AUTO;
    TtmVariant variant = TtmVariant::coalesced;
    if (requested == SPT_PLUGIN_TTM_AUTO) {
      variant = rule_variant(u->cols, x->nfibers, x->nnz, longest);
    } else if (requested >= SPT_PLUGIN_TTM_COALESCED && requested <= SPT_PLUGIN_TTM_SHARED) {
      variant = static_cast<TtmVariant>(requested);
    } else {
      write_message(message, message_len, "unknown SpTTM variant " + std::to_string(requested));
      return kInvalidArgument;
    }
    double* kernel_ms = launch ? &launch->kernel_ms : nullptr;
    if (launch) {
      launch->variant_used = static_cast<int>(variant);
      launch->kernel_ms = 0;
    }
    if (x->dtype == SPT_PLUGIN_FLOAT32)
      return ttm_fibers_typed<float>(device, *x, *u, *out, variant, kernel_ms, message, message_len);
    return ttm_fibers_typed<double>(device, *x, *u, *out, variant, kernel_ms, message, message_len);
  });
}

int plugin_scoo_ttm(int device, const spt_plugin_scoo_groups* y, const spt_plugin_matrix* u, spt_plugin_matrix* out,
                    double* kernel_ms, char* message, size_t message_len) {
  return guarded(message, message_len, [&]() -> int {
    if (!y || (y->dtype != SPT_PLUGIN_FLOAT32 && y->dtype != SPT_PLUGIN_FLOAT64) || y->a_len == 0 || y->b_len == 0)
      return kInvalidArgument;
    if (int status = check_matrix(u, "U", message, message_len); status != kOk) return status;
    if (!out || (!out->data && out->rows > 0)) return kInvalidArgument;
    uint64_t longest = 0;
    if (!valid_offsets(y->group_ptr, y->ngroups, y->nfibers, &longest) ||
        (y->nfibers > 0 && (!y->ind || !y->values))) {
      write_message(message, message_len, "group_ptr is NULL or inconsistent (0 .. nfibers, non-decreasing), or NULL arrays");
      return kInvalidArgument;
    }
    if (y->perm) {
      for (uint64_t k = 0; k < y->nfibers; ++k)
        if (y->perm[k] >= y->nfibers) {
          write_message(message, message_len, "perm has an entry not below nfibers");
          return kInvalidArgument;
        }
    }
    if (!indices_below(y->ind, y->nfibers, u->rows)) {
      write_message(message, message_len, "a mode index is not below U's rows (" + std::to_string(u->rows) + ")");
      return kInvalidArgument;
    }
    if (kernel_ms) *kernel_ms = 0;
    if (y->dtype == SPT_PLUGIN_FLOAT32) return scoo_ttm_typed<float>(device, *y, *u, *out, kernel_ms, message, message_len);
    return scoo_ttm_typed<double>(device, *y, *u, *out, kernel_ms, message, message_len);
  });
}

}  // namespace spt_plugin
