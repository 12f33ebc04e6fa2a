// The oracle of a device kernel test: the reference kernel of the kernel's
// own format (src/kernels/reference/), run in float64 on a float64 copy of
// the very handle the device ran on (same structure, values widened), with
// float64 factors. With `absolute`, values and factors are replaced by their
// magnitudes: the result is then the sum of the terms' magnitudes, which
// bounds the rounding error of any summation order (the tolerance scale).
// Used by the GPU tests (tests/unit/test_cuda*.cpp) and checked on the CPU
// against the COO reference by tests/unit/test_format_references.cpp.
// Header-only.
#pragma once

#include <cmath>
#include <vector>

#include "core/dtype.hpp"
#include "core/fcoo.hpp"
#include "core/hbcsf.hpp"
#include "core/hicoo.hpp"
#include "core/hls.hpp"
#include "core/matrix.hpp"
#include "core/scoo.hpp"
#include "kernels/kernels.hpp"

namespace spt::test {

// `store` as float64 values (|values| with `absolute`).
inline ValueStore float64_values(const ValueStore& store, bool absolute) {
  ValueStore wide(SPT_FLOAT64);
  wide.resize(store.size());
  double* out = wide.get<double>().data();
  with_dtype(store.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = store.get<T>().data();
    for (size_t i = 0; i < store.size(); ++i) out[i] = absolute ? std::abs(double(in[i])) : double(in[i]);
  });
  return wide;
}

// A copy of a format handle with float64 values; no device copy attached.
inline spt_hicoo_s float64_copy(const spt_hicoo_s& h, bool absolute = false) {
  spt_hicoo_s wide = h;
  wide.device_cache.reset();
  wide.val = float64_values(h.val, absolute);
  return wide;
}

inline spt_fcoo_s float64_copy(const spt_fcoo_s& f, bool absolute = false) {
  spt_fcoo_s wide = f;
  wide.device_cache.reset();
  wide.val = float64_values(f.val, absolute);
  return wide;
}

inline spt_hbcsf_s float64_copy(const spt_hbcsf_s& h, bool absolute = false) {
  spt_hbcsf_s wide = h;
  wide.device_cache.reset();
  wide.coo_val = float64_values(h.coo_val, absolute);
  wide.csl_val = float64_values(h.csl_val, absolute);
  wide.bcsf_val = float64_values(h.bcsf_val, absolute);
  return wide;
}

inline spt_hls_s float64_copy(const spt_hls_s& h, bool absolute = false) {
  spt_hls_s wide = h;
  wide.device_cache.reset();
  wide.d_val = float64_values(h.d_val, absolute);
  wide.s_val = float64_values(h.s_val, absolute);
  return wide;
}

inline spt_scoo_s float64_copy(const spt_scoo_s& y, bool absolute = false) {
  spt_scoo_s wide = y;
  wide.values = float64_values(y.values, absolute);
  return wide;
}

// Float64 copies of matrices (|entries| with `absolute`).
template <typename T>
std::vector<DenseMatrix<double>> float64_matrices(const std::vector<DenseMatrix<T>>& ms, bool absolute = false) {
  std::vector<DenseMatrix<double>> wide;
  for (const DenseMatrix<T>& m : ms) {
    DenseMatrix<double> d(m.rows, m.cols);
    for (size_t i = 0; i < m.values.size(); ++i)
      d.values[i] = absolute ? std::abs(double(m.values[i])) : double(m.values[i]);
    wide.push_back(std::move(d));
  }
  return wide;
}

inline std::vector<ConstMatRef<double>> float64_refs(const std::vector<DenseMatrix<double>>& ms) {
  std::vector<ConstMatRef<double>> refs;
  for (const DenseMatrix<double>& m : ms) refs.push_back(m.cref());
  return refs;
}

// out (rows x cols) from a reference kernel on the float64 copies.
template <typename Format, typename T, typename Kernel>
DenseMatrix<double> own_format_reference(const Format& x, const std::vector<DenseMatrix<T>>& factors, spt_nnz rows,
                                         spt_nnz cols, bool absolute, Kernel kernel) {
  const Format wide = float64_copy(x, absolute);
  const std::vector<DenseMatrix<double>> f = float64_matrices(factors, absolute);
  const std::vector<ConstMatRef<double>> refs = float64_refs(f);
  DenseMatrix<double> out(rows, cols);
  kernel(wide, refs.data(), out.ref());
  return out;
}

// The columns of a TTMc in `mode`: the product of the other factors' widths.
template <typename T>
spt_nnz ttmc_columns(const std::vector<DenseMatrix<T>>& factors, uint32_t mode) {
  spt_nnz cols = 1;
  for (uint32_t m = 0; m < factors.size(); ++m)
    if (m != mode) cols *= factors[m].cols;
  return cols;
}

// kernels::reference::mttkrp_hicoo in `mode`.
template <typename T>
DenseMatrix<double> reference_mttkrp_hicoo(const spt_hicoo_s& h, const std::vector<DenseMatrix<T>>& factors,
                                           uint32_t mode, bool absolute = false) {
  return own_format_reference(h, factors, h.dims[mode], factors[0].cols, absolute,
                              [&](const spt_hicoo_s& x, const ConstMatRef<double>* f, MatRef<double> out) {
                                kernels::reference::mttkrp_hicoo(kernels::Exec{1}, x, f, mode, out);
                              });
}

// kernels::reference::mttkrp_fcoo (in f.mode).
template <typename T>
DenseMatrix<double> reference_mttkrp_fcoo(const spt_fcoo_s& f, const std::vector<DenseMatrix<T>>& factors,
                                          bool absolute = false) {
  return own_format_reference(f, factors, f.dims[f.mode], factors[0].cols, absolute,
                              [](const spt_fcoo_s& x, const ConstMatRef<double>* fs, MatRef<double> out) {
                                kernels::reference::mttkrp_fcoo(kernels::Exec{1}, x, fs, out);
                              });
}

// kernels::reference::ttmc_fcoo (in f.mode; factors of any widths).
template <typename T>
DenseMatrix<double> reference_ttmc_fcoo(const spt_fcoo_s& f, const std::vector<DenseMatrix<T>>& factors,
                                        bool absolute = false) {
  return own_format_reference(f, factors, f.dims[f.mode], ttmc_columns(factors, f.mode), absolute,
                              [](const spt_fcoo_s& x, const ConstMatRef<double>* fs, MatRef<double> out) {
                                kernels::reference::ttmc_fcoo(kernels::Exec{1}, x, fs, out);
                              });
}

// kernels::reference::ttm_fcoo (in f.mode): the semi-sparse result in float64.
template <typename T>
spt_scoo_s reference_ttm_fcoo(const spt_fcoo_s& f, const DenseMatrix<T>& u, bool absolute = false) {
  const spt_fcoo_s wide = float64_copy(f, absolute);
  const std::vector<DenseMatrix<double>> w = float64_matrices(std::vector<DenseMatrix<T>>{u}, absolute);
  spt_scoo_s out;
  kernels::reference::ttm_fcoo(kernels::Exec{1}, wide, w[0].cref(), out);
  return out;
}

// kernels::reference::mttkrp_hbcsf (in the root mode).
template <typename T>
DenseMatrix<double> reference_mttkrp_hbcsf(const spt_hbcsf_s& h, const std::vector<DenseMatrix<T>>& factors,
                                           bool absolute = false) {
  return own_format_reference(h, factors, h.dims[h.root()], factors[0].cols, absolute,
                              [](const spt_hbcsf_s& x, const ConstMatRef<double>* f, MatRef<double> out) {
                                kernels::reference::mttkrp_hbcsf(kernels::Exec{1}, x, f, out);
                              });
}

// kernels::reference::mttkrp_hbcsf_mode in `mode`.
template <typename T>
DenseMatrix<double> reference_mttkrp_hbcsf_mode(const spt_hbcsf_s& h, const std::vector<DenseMatrix<T>>& factors,
                                                uint32_t mode, bool absolute = false) {
  return own_format_reference(h, factors, h.dims[mode], factors[0].cols, absolute,
                              [&](const spt_hbcsf_s& x, const ConstMatRef<double>* f, MatRef<double> out) {
                                kernels::reference::mttkrp_hbcsf_mode(kernels::Exec{1}, x, f, mode, out);
                              });
}

// kernels::reference::mttkrp_hls (in the root mode).
template <typename T>
DenseMatrix<double> reference_mttkrp_hls(const spt_hls_s& h, const std::vector<DenseMatrix<T>>& factors,
                                         bool absolute = false) {
  return own_format_reference(h, factors, h.dims[h.root()], factors[0].cols, absolute,
                              [](const spt_hls_s& x, const ConstMatRef<double>* f, MatRef<double> out) {
                                kernels::reference::mttkrp_hls(kernels::Exec{1}, x, f, out);
                              });
}

// kernels::reference::ttmc_hls (in the root mode; factors of any widths).
template <typename T>
DenseMatrix<double> reference_ttmc_hls(const spt_hls_s& h, const std::vector<DenseMatrix<T>>& factors,
                                       bool absolute = false) {
  return own_format_reference(h, factors, h.dims[h.root()], ttmc_columns(factors, h.root()), absolute,
                              [](const spt_hls_s& x, const ConstMatRef<double>* f, MatRef<double> out) {
                                kernels::reference::ttmc_hls(kernels::Exec{1}, x, f, out);
                              });
}

}  // namespace spt::test
