// OpenMP GCP kernel (see kernels/gcp.hpp). The entries are walked fiber by
// fiber along mode 0 (the fastest mode of the linear order): per fiber the
// product of the other modes' factor rows is formed once, each entry then
// costs two length-R loops (its model value, and the fiber's sum of
// y_i * A_0(i_0, :)), and the gradient rows of modes >= 1 get one update per
// fiber. The fibers are split into a fixed number of chunks (independent of
// the thread count); each chunk has private gradient accumulators, added in
// chunk order, so results are the same for any thread count.
#include <omp.h>

#include <algorithm>

#include "kernels/gcp.hpp"
#include "kernels/cpu/variant.hpp"

SPT_CPU_VARIANT_TARGET
namespace spt::kernels::SPT_CPU_VARIANT {

namespace {

// Chunks of fibers: enough for 16 threads, but none shorter than about
// 4096 entries so small tensors stay in one chunk.
constexpr spt_nnz kMaxChunks = 16;
constexpr spt_nnz kMinEntriesPerChunk = 4096;

}  // namespace

double gcp_value_gradient(const Exec& exec, const GcpDense& x, const GcpLoss& loss, const ConstMatRef<double>* factors,
                          const MatRef<double>* gradients) {
  const size_t order = x.dims.size();
  const spt_nnz rank = factors[0].cols;
  const spt_nnz fiber_length = x.dims[0];
  const spt_nnz fibers = fiber_length == 0 ? 0 : x.entries / fiber_length;
  const spt_nnz chunks = std::max<spt_nnz>(
      1, std::min<spt_nnz>({kMaxChunks, fibers, x.entries / kMinEntriesPerChunk}));

  // Private gradient accumulators: chunk c, mode n at offsets[n] within the chunk's block.
  std::vector<spt_nnz> offsets(order + 1, 0);
  for (size_t n = 0; n < order; ++n) offsets[n + 1] = offsets[n] + static_cast<spt_nnz>(x.dims[n]) * rank;
  const spt_nnz block = offsets[order];
  std::vector<double> private_gradients(gradients ? static_cast<size_t>(chunks * block) : 0, 0.0);
  std::vector<double> chunk_totals(static_cast<size_t>(chunks), 0.0);

  const int threads = static_cast<int>(std::min<spt_nnz>(std::max(1, exec.threads), chunks));
  // Per thread (allocated here: nothing may throw inside the region): the
  // fiber's index, prefix/suffix products of modes >= 1, the fiber sum.
  const size_t per_thread = (2 * (order + 1) + 2) * static_cast<size_t>(rank);
  std::vector<double> scratch(per_thread * static_cast<size_t>(threads));
  std::vector<spt_index> indices(order * static_cast<size_t>(threads), 0);
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    const int t = omp_get_thread_num();
    spt_index* index = indices.data() + order * static_cast<size_t>(t);
    double* prefix = scratch.data() + per_thread * static_cast<size_t>(t);
    double* suffix = prefix + (order + 1) * rank;
    double* rest = suffix + (order + 1) * rank;
    double* fiber_sum = rest + rank;
#pragma omp for schedule(dynamic, 1)
    for (spt_nnz c = 0; c < chunks; ++c) {
      double* g = gradients ? private_gradients.data() + c * block : nullptr;
      double total = 0.0;
      const spt_nnz first = fibers * c / chunks, last = fibers * (c + 1) / chunks;
      for (spt_nnz f = first; f < last; ++f) {
        spt_nnz left = f;
        for (size_t n = 1; n < order; ++n) {
          index[n] = static_cast<spt_index>(left % x.dims[n]);
          left /= x.dims[n];
        }
        // prefix[n] = prod_{1 <= m < n} A_m(i_m, :), suffix[n] = prod_{n <= m < order}.
        for (spt_nnz r = 0; r < rank; ++r) {
          prefix[1 * rank + r] = 1.0;
          suffix[order * rank + r] = 1.0;
        }
        for (size_t n = 1; n < order; ++n)
          for (spt_nnz r = 0; r < rank; ++r)
            prefix[(n + 1) * rank + r] = prefix[n * rank + r] * factors[n](index[n], r);
        for (size_t n = order - 1; n >= 1; --n)
          for (spt_nnz r = 0; r < rank; ++r)
            suffix[n * rank + r] = suffix[(n + 1) * rank + r] * factors[n](index[n], r);
        for (spt_nnz r = 0; r < rank; ++r) {
          rest[r] = suffix[1 * rank + r];
          fiber_sum[r] = 0.0;
        }
        const spt_nnz base = f * fiber_length;
        for (spt_nnz i0 = 0; i0 < fiber_length; ++i0) {
          const double w = x.weights ? x.weights[base + i0] : 1.0;
          if (w == 0.0) continue;  // a missing entry adds nothing
          const double* a0 = factors[0].row(i0);
          double model = 0.0;
          for (spt_nnz r = 0; r < rank; ++r) model += a0[r] * rest[r];
          const double value = x.values[base + i0];
          total += w * gcp_loss_value(loss, value, model);
          if (!g) continue;
          const double y = w * gcp_loss_derivative(loss, value, model);
          double* g0 = g + i0 * rank;
          for (spt_nnz r = 0; r < rank; ++r) {
            g0[r] += y * rest[r];
            fiber_sum[r] += y * a0[r];
          }
        }
        if (!g) continue;
        for (size_t n = 1; n < order; ++n) {
          double* gn = g + offsets[n] + static_cast<spt_nnz>(index[n]) * rank;
          for (spt_nnz r = 0; r < rank; ++r)
            gn[r] += fiber_sum[r] * prefix[n * rank + r] * suffix[(n + 1) * rank + r];
        }
      }
      chunk_totals[static_cast<size_t>(c)] = total;
    }
  }

  double total = 0.0;
  for (double t : chunk_totals) total += t;
  if (gradients) {
    // Sum the chunks' accumulators in chunk order, rows split over threads.
    for (size_t n = 0; n < order; ++n) {
      const MatRef<double> out = gradients[n];
      const spt_nnz rows = out.rows;
#pragma omp parallel for schedule(static) num_threads(std::max(1, exec.threads)) if (rows * rank > 65536)
      for (spt_nnz i = 0; i < rows; ++i)
        for (spt_nnz r = 0; r < rank; ++r) {
          double s = 0.0;
          for (spt_nnz c = 0; c < chunks; ++c) s += private_gradients[c * block + offsets[n] + i * rank + r];
          out(i, r) = s;
        }
    }
  }
  return total;
}

// Sampled entries: a fixed number of chunks (independent of the thread
// count), each summed in order, the chunk sums added in chunk order.
double gcp_sample_value_derivative(const Exec& exec, const GcpSample& s, const GcpLoss& loss,
                                   const ConstMatRef<double>* factors, double* derivatives) {
  constexpr spt_nnz kSampleChunks = 64;
  constexpr spt_nnz kMinSamplesPerChunk = 2048;
  const spt_nnz rank = factors[0].cols;
  const spt_nnz chunks = std::max<spt_nnz>(1, std::min<spt_nnz>(kSampleChunks, s.count / kMinSamplesPerChunk));
  std::vector<double> chunk_totals(static_cast<size_t>(chunks), 0.0);
  const int threads = static_cast<int>(std::min<spt_nnz>(std::max(1, exec.threads), chunks));
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (spt_nnz c = 0; c < chunks; ++c) {
    const spt_nnz first = s.count * c / chunks, last = s.count * (c + 1) / chunks;
    double total = 0.0;
    for (spt_nnz e = first; e < last; ++e) {
      const double* a0 = factors[0].row(s.ind[0][e]);
      double model = 0.0;
      if (s.order == 3) {
        const double* a1 = factors[1].row(s.ind[1][e]);
        const double* a2 = factors[2].row(s.ind[2][e]);
        for (spt_nnz r = 0; r < rank; ++r) model += a0[r] * a1[r] * a2[r];
      } else {
        for (spt_nnz r = 0; r < rank; ++r) {
          double p = a0[r];
          for (uint32_t n = 1; n < s.order; ++n) p *= factors[n](s.ind[n][e], r);
          model += p;
        }
      }
      total += s.weights[e] * gcp_loss_value(loss, s.values[e], model);
      if (derivatives) derivatives[e] = s.weights[e] * gcp_loss_derivative(loss, s.values[e], model);
    }
    chunk_totals[static_cast<size_t>(c)] = total;
  }
  double total = 0.0;
  for (double t : chunk_totals) total += t;
  return total;
}

}  // namespace spt::kernels::SPT_CPU_VARIANT
