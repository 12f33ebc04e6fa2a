// Reference (sequential, obviously correct) GCP kernel: per entry, the model
// value and every mode's gradient row from the full products, no reuse.
#include "kernels/gcp.hpp"

namespace spt::kernels::reference {

double gcp_value_gradient(const Exec&, const GcpDense& x, const GcpLoss& loss, const ConstMatRef<double>* factors,
                          const MatRef<double>* gradients) {
  const size_t order = x.dims.size();
  const spt_nnz rank = factors[0].cols;
  if (gradients)
    for (size_t n = 0; n < order; ++n)
      for (spt_nnz i = 0; i < gradients[n].rows; ++i)
        for (spt_nnz r = 0; r < rank; ++r) gradients[n](i, r) = 0.0;
  std::vector<spt_index> index(order, 0);
  double total = 0.0;
  for (spt_nnz e = 0; e < x.entries; ++e) {
    spt_nnz rest = e;
    for (size_t n = 0; n < order; ++n) {
      index[n] = static_cast<spt_index>(rest % x.dims[n]);
      rest /= x.dims[n];
    }
    double model = 0.0;
    for (spt_nnz r = 0; r < rank; ++r) {
      double p = 1.0;
      for (size_t n = 0; n < order; ++n) p *= factors[n](index[n], r);
      model += p;
    }
    const double w = x.weights ? x.weights[e] : 1.0;
    if (w == 0.0) continue;  // a missing entry adds nothing
    total += w * gcp_loss_value(loss, x.values[e], model);
    if (!gradients) continue;
    const double y = w * gcp_loss_derivative(loss, x.values[e], model);
    for (size_t n = 0; n < order; ++n)
      for (spt_nnz r = 0; r < rank; ++r) {
        double p = y;
        for (size_t m = 0; m < order; ++m)
          if (m != n) p *= factors[m](index[m], r);
        gradients[n](index[n], r) += p;
      }
  }
  return total;
}

double gcp_sample_value_derivative(const Exec&, const GcpSample& s, const GcpLoss& loss,
                                   const ConstMatRef<double>* factors, double* derivatives) {
  const spt_nnz rank = factors[0].cols;
  double total = 0.0;
  for (spt_nnz e = 0; e < s.count; ++e) {
    double model = 0.0;
    for (spt_nnz r = 0; r < rank; ++r) {
      double p = 1.0;
      for (uint32_t n = 0; n < s.order; ++n) p *= factors[n](s.ind[n][e], r);
      model += p;
    }
    total += s.weights[e] * gcp_loss_value(loss, s.values[e], model);
    if (derivatives) derivatives[e] = s.weights[e] * gcp_loss_derivative(loss, s.values[e], model);
  }
  return total;
}

}  // namespace spt::kernels::reference
