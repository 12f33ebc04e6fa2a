// Generalized CP by all-at-once optimisation (GCP-OPT, pyttb gcp_opt with
// its LBFGSB optimizer); the C API wrappers are spt_gcp_opt and
// spt_gcp_objective (include/sptensor/gcp.h).
#pragma once

#include <vector>

#include "core/context.hpp"
#include "core/coo.hpp"
#include "core/ktensor.hpp"
#include "kernels/gcp.hpp"
#include "sptensor/gcp.h"

namespace spt::algo {

// The full tensor GCP-OPT works on: x's values (repeated coordinates
// summed) in linear order with mode 0 fastest, and weights 0 at the
// coordinates of `missing` (empty when none).
struct GcpFullTensor {
  std::vector<spt_index> dims;
  std::vector<double> values;
  std::vector<double> weights;
  kernels::GcpDense view() const;
};

// Validates the size (at most SPT_GCP_MAX_DENSE_ENTRIES entries, float64)
// and builds the full tensor. Throws spt::Error.
GcpFullTensor gcp_full_tensor(const spt_coo_s& x, const spt_coo_s* missing);

// The loss's own lower bound on the factors (0 or -inf).
double gcp_default_lower_bound(spt_gcp_loss loss);

// The loss's name for messages ("Poisson (identity link)").
const char* gcp_loss_name(spt_gcp_loss loss);

// The loss of opts (validated: known kind, Huber threshold) and the factor
// lower bound in effect (opts.lower_bound, or the loss's own when NaN;
// validated). Throw INVALID_ARGUMENT.
kernels::GcpLoss gcp_loss_of(const spt_gcp_options& opts);
double gcp_lower_bound_of(const spt_gcp_options& opts);

// The initial factors (row-major dims[n] x rank) as pyttb gcp_opt makes
// them: opts.init_factors, or uniform [0,1) values from the seed scaled so
// that the model's norm is data_norm; then normalised (ktensor.normalize("all")).
std::vector<std::vector<double>> gcp_initial_factors(const spt_context_s& ctx, const std::vector<spt_index>& dims,
                                                     const spt_gcp_options& opts, double data_norm);

// Throws INVALID_ARGUMENT naming the first value the loss cannot take.
void gcp_require_valid_data(const GcpFullTensor& x, spt_gcp_loss loss);

// Throws INVALID_ARGUMENT when the loss cannot take the nonzero value v of
// the entry at linear index `index` (mode 0 fastest) of a tensor of dims,
// naming what the loss needs and the entry's coordinates.
void gcp_require_valid_value(spt_gcp_loss loss, double v, const std::vector<spt_index>& dims, uint64_t index);

// F and, when gradients is not NULL, its gradient per factor (see kernels/gcp.hpp).
double gcp_value_gradient(const spt_context_s& ctx, const GcpFullTensor& x, const kernels::GcpLoss& loss,
                          const ConstMatRef<double>* factors, const MatRef<double>* gradients);

// Runs GCP-OPT, or GCP-SGD (algo/gcp_sgd.hpp) for optimizer SGD (options
// validated inside) into `out`. Returns SPT_OK when the optimiser
// converged, SPT_WARN_NOT_CONVERGED otherwise. Throws spt::Error.
spt_status gcp_opt(spt_context_s& ctx, const spt_coo_s& x, const spt_gcp_options& opts, spt_ktensor_s& out);

// The objective of model k (lambda applied) for x with opts' loss and missing entries.
double gcp_objective(spt_context_s& ctx, const spt_coo_s& x, const spt_ktensor_s& k, const spt_gcp_options& opts);

}  // namespace spt::algo
