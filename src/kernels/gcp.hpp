// Generalized CP (GCP) kernels: the elementwise losses and their
// derivatives (pyttb gcp.handles), and one pass over every entry of a dense
// tensor that gives the objective sum_i w_i f(x_i, m_i) and, optionally, its
// gradient with respect to each factor (the MTTKRP of the dense derivative
// tensor Y, y_i = w_i df/dm(x_i, m_i), with the other factors). Declared once
// here and stamped into spt::kernels::reference (sequential per-entry loops,
// the oracle) and spt::kernels::cpu (OpenMP), like dense.hpp.
#pragma once

#include <cmath>
#include <vector>

#include "kernels/kernels.hpp"
#include "sptensor/gcp.h"

namespace spt::kernels {

// The offset pyttb adds inside logarithms and divisions (handles.EPS).
constexpr double kGcpEps = 1e-10;

struct GcpLoss {
  spt_gcp_loss kind = SPT_GCP_LOSS_GAUSSIAN;
  double parameter = 0.0;  // Huber threshold
};

// f(x, m), the formulas of pyttb gcp.handles (Bernoulli-logit written in
// the overflow-free form of log(exp(m) + 1)).
inline double gcp_loss_value(const GcpLoss& loss, double x, double m) {
  constexpr double quarter_pi = 0.78539816339744830962;
  switch (loss.kind) {
    case SPT_GCP_LOSS_GAUSSIAN: return (m - x) * (m - x);
    case SPT_GCP_LOSS_BERNOULLI_ODDS: return std::log(m + 1) - x * std::log(m + kGcpEps);
    case SPT_GCP_LOSS_BERNOULLI_LOGIT:
      return (m > 0 ? m + std::log1p(std::exp(-m)) : std::log1p(std::exp(m))) - x * m;
    case SPT_GCP_LOSS_POISSON: return m - x * std::log(m + kGcpEps);
    case SPT_GCP_LOSS_POISSON_LOG: return std::exp(m) - x * m;
    case SPT_GCP_LOSS_RAYLEIGH: {
      const double q = x / (m + kGcpEps);
      return 2 * std::log(m + kGcpEps) + quarter_pi * q * q;
    }
    case SPT_GCP_LOSS_GAMMA: return x / (m + kGcpEps) + std::log(m + kGcpEps);
    case SPT_GCP_LOSS_HUBER: {
      const double a = std::abs(x - m), t = loss.parameter;
      return a < t ? a * a : 2 * t * a - t * t;
    }
    default: return std::nan("");
  }
}

// df/dm(x, m).
inline double gcp_loss_derivative(const GcpLoss& loss, double x, double m) {
  constexpr double half_pi = 1.57079632679489661923;
  switch (loss.kind) {
    case SPT_GCP_LOSS_GAUSSIAN: return 2 * (m - x);
    case SPT_GCP_LOSS_BERNOULLI_ODDS: return 1.0 / (m + 1) - x / (m + kGcpEps);
    case SPT_GCP_LOSS_BERNOULLI_LOGIT: {
      const double sigmoid = m > 0 ? 1.0 / (1.0 + std::exp(-m)) : std::exp(m) / (std::exp(m) + 1);
      return sigmoid - x;
    }
    case SPT_GCP_LOSS_POISSON: return 1 - x / (m + kGcpEps);
    case SPT_GCP_LOSS_POISSON_LOG: return std::exp(m) - x;
    case SPT_GCP_LOSS_RAYLEIGH: {
      const double d = m + kGcpEps;
      return 2 / d - half_pi * x * x / (d * d * d);
    }
    case SPT_GCP_LOSS_GAMMA: {
      const double d = m + kGcpEps;
      return -x / (d * d) + 1 / d;
    }
    case SPT_GCP_LOSS_HUBER: {
      const double diff = x - m, t = loss.parameter;
      if (std::abs(diff) < t) return -2 * diff;
      return -2 * t * (diff > 0 ? 1.0 : (diff < 0 ? -1.0 : 0.0));
    }
    default: return std::nan("");
  }
}

// A full (dense) tensor for GCP: values in linear order with mode 0 fastest
// (pyttb's Fortran order), optional weights (0 = missing) in the same order.
struct GcpDense {
  std::vector<spt_index> dims;
  const double* values = nullptr;
  const double* weights = nullptr;  // nullptr: every weight is 1
  spt_nnz entries = 0;              // prod(dims)
};

// Sampled entries of a tensor for GCP-SGD: entry s has coordinates
// (ind[0][s], ..., ind[order-1][s]), data value values[s] and weight
// weights[s]. Coordinates may repeat.
struct GcpSample {
  uint32_t order = 0;
  const spt_index* const* ind = nullptr;
  const double* values = nullptr;
  const double* weights = nullptr;
  spt_nnz count = 0;
};

// The GCP kernel list, in the form of kernels.hpp's lists (float64 only).
#define SPT_GCP_KERNELS(X)                                                                                \
  /* returns sum_i w_i f(x_i, m_i), m = [factors] (weights 1), accumulated in double; when gradients is */ \
  /* not NULL, gradients[n] (dims[n] x R) = d/dA_n of that sum (overwritten); thread-count independent */   \
  X(HOST, double, gcp_value_gradient,                                                                     \
    (const GcpDense& x, const GcpLoss& loss, const ConstMatRef<double>* factors, const MatRef<double>* gradients)) \
  /* returns sum_s w_s f(x_s, m_s) over the sample, m_s the model [factors] at its coordinates; when */   \
  /* derivatives is not NULL, derivatives[s] = w_s df/dm(x_s, m_s); thread-count independent */          \
  X(HOST, double, gcp_sample_value_derivative,                                                          \
    (const GcpSample& s, const GcpLoss& loss, const ConstMatRef<double>* factors, double* derivatives))

#define SPT_DECLARE_GCP_BACKEND(backend) \
  namespace backend {                    \
  SPT_GCP_KERNELS(SPT_DECLARE_KERNEL)    \
  }

SPT_DECLARE_GCP_BACKEND(reference)
SPT_DECLARE_GCP_BACKEND(cpu)
SPT_DECLARE_GCP_BACKEND(cpu_x86_64_v3)  // the same kernels for x86-64-v3 (kernels/cpu/variant.hpp)

#undef SPT_DECLARE_GCP_BACKEND

}  // namespace spt::kernels
