// The TTM family against dense brute force: SpTTM (reference and OpenMP,
// also on pre-sorted input), SsTTM (both backends, grouped and ungrouped
// input), the materialised TTM chain through the C API (every mode order,
// several dense modes, spt_scoo_to_coo / spt_scoo_dense_modes), and TTMc by
// the chain kernel in several contraction orders next to the one-shot
// kernel; the cost estimate (group counts, path choice on compressing and
// hypersparse tensors); HOOI with each forced TTMc path; argument errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "algo/ttm_chain.hpp"
#include "algo/tucker_hooi.hpp"
#include "common/test_util.hpp"
#include "core/scoo.hpp"
#include "core/sort.hpp"
#include "core/ttensor.hpp"
#include "kernels/kernels.hpp"
#include "kernels/ttm_chain.hpp"
#include "kernels/ttmc.hpp"
#include "sptensor/sptensor.h"
#include "sptensor/tucker.h"

namespace spt::test {
namespace {

namespace ref = spt::kernels::reference;
namespace cpu = SPT_TEST_CPU_KERNELS;
using kernels::Exec;

const int kThreadCounts[] = {1, 2, 3};

// A dense tensor, first index fastest.
struct Dense {
  std::vector<spt_index> dims;
  std::vector<double> v;
  uint64_t size() const { return v.size(); }
};

uint64_t product(const std::vector<spt_index>& d) {
  uint64_t p = 1;
  for (auto x : d) p *= x;
  return p;
}

template <typename T>
Dense densify(const spt_coo_s& x) {
  Dense d{x.dims, std::vector<double>(product(x.dims), 0.0)};
  for (spt_nnz k = 0; k < x.nnz; ++k) {
    uint64_t lin = 0, stride = 1;
    for (uint32_t m = 0; m < x.order(); ++m) {
      lin += stride * x.ind[m][k];
      stride *= x.dims[m];
    }
    d.v[lin] += static_cast<double>(x.values<T>()[k]);
  }
  return d;
}

// Dense mode product: Y = X x_mode U^T (U dims[mode] x R), by definition.
template <typename T>
Dense dense_ttm(const Dense& x, uint32_t mode, const DenseMatrix<T>& u) {
  Dense y{x.dims, {}};
  y.dims[mode] = static_cast<spt_index>(u.cols);
  y.v.assign(product(y.dims), 0.0);
  std::vector<spt_index> idx(x.dims.size());
  for (uint64_t lin = 0; lin < x.size(); ++lin) {
    if (x.v[lin] == 0.0) continue;
    uint64_t rest = lin;
    for (size_t m = 0; m < x.dims.size(); ++m) {
      idx[m] = static_cast<spt_index>(rest % x.dims[m]);
      rest /= x.dims[m];
    }
    for (spt_nnz r = 0; r < u.cols; ++r) {
      uint64_t out = 0, stride = 1;
      for (size_t m = 0; m < x.dims.size(); ++m) {
        out += stride * (m == mode ? r : idx[m]);
        stride *= y.dims[m];
      }
      y.v[out] += x.v[lin] * static_cast<double>(u(idx[mode], r));
    }
  }
  return y;
}

// Expand a semi-sparse tensor (any number of dense modes) into a dense one,
// following the documented block layout (lowest dense mode fastest).
template <typename T>
Dense scoo_dense(const spt_scoo_s& y) {
  Dense d{y.dims, std::vector<double>(product(y.dims), 0.0)};
  const uint64_t block = y.block_size();
  const uint32_t order = y.order();
  std::vector<spt_index> idx(order);
  for (spt_nnz f = 0; f < y.nfibers; ++f)
    for (uint64_t e = 0; e < block; ++e) {
      uint64_t rest = e;
      for (uint32_t dm : y.dense_modes) {
        idx[dm] = static_cast<spt_index>(rest % y.dims[dm]);
        rest /= y.dims[dm];
      }
      for (uint32_t m = 0; m < order; ++m)
        if (!y.is_dense(m)) idx[m] = y.ind[m][f];
      uint64_t lin = 0, stride = 1;
      for (uint32_t m = 0; m < order; ++m) {
        lin += stride * idx[m];
        stride *= y.dims[m];
      }
      d.v[lin] += static_cast<double>(y.values.get<T>()[f * block + e]);
    }
  return d;
}

void expect_dense_close(const Dense& want, const Dense& got, double tol, const std::string& what) {
  ASSERT_EQ(want.dims, got.dims) << what;
  for (uint64_t i = 0; i < want.size(); ++i)
    ASSERT_TRUE(close(want.v[i], got.v[i], tol)) << what << " at " << i << ": want " << want.v[i] << " got "
                                                 << got.v[i];
}

// No two fibers of a semi-sparse tensor share their sparse coordinates.
void expect_distinct_fibers(const spt_scoo_s& y, const std::string& what) {
  std::set<std::vector<spt_index>> seen;
  for (spt_nnz f = 0; f < y.nfibers; ++f) {
    std::vector<spt_index> key;
    for (uint32_t m : y.sparse_modes()) key.push_back(y.ind[m][f]);
    ASSERT_TRUE(seen.insert(key).second) << what << ": fiber " << f << " repeats its coordinates";
  }
}

template <typename T>
double tol() {
  return sizeof(T) == 4 ? 2e-4 : 1e-11;
}

struct Case {
  std::vector<spt_index> dims;
  std::vector<spt_index> ranks;  // differ per mode, include 1
  spt_nnz nnz;
  bool duplicates;
};

std::vector<Case> cases() {
  return {
      {{9, 2, 11}, {2, 1, 3}, 100, true},
      {{30, 3, 4}, {4, 2, 3}, 150, false},
      {{5, 6, 3, 7}, {2, 3, 2, 1}, 200, false},
      {{4, 3, 5, 2, 6}, {2, 1, 3, 2, 2}, 300, true},
      {{3, 40, 2, 5}, {1, 3, 2, 4}, 120, false},
  };
}

template <typename T>
spt_coo_s make_tensor(const Case& c, uint64_t seed) {
  RandomTensorSpec spec;
  spec.dims = c.dims;
  spec.nnz = c.nnz;
  spec.seed = seed;
  spec.duplicates = c.duplicates;
  return random_coo(dtype_of<T>(), spec);
}

template <typename T>
std::vector<DenseMatrix<T>> make_factors(const Case& c, uint64_t seed) {
  std::vector<DenseMatrix<T>> u;
  for (size_t m = 0; m < c.dims.size(); ++m) u.push_back(random_matrix<T>(c.dims[m], c.ranks[m], seed + 17 * m));
  return u;
}

// ------------------------------- SpTTM ----------------------------------

template <typename T>
void check_spttm() {
  uint64_t seed = 10;
  for (const Case& c : cases()) {
    const spt_coo_s x = make_tensor<T>(c, ++seed);
    const auto u = make_factors<T>(c, seed * 7);
    const Dense xd = densify<T>(x);
    for (uint32_t mode = 0; mode < x.order(); ++mode) {
      const Dense want = dense_ttm(xd, mode, u[mode]);
      spt_scoo_s r;
      ref::ttm(Exec{1}, x, mode, u[mode].cref(), r);
      expect_dense_close(want, scoo_dense<T>(r), tol<T>(), "reference SpTTM");
      ASSERT_EQ(r.dense_modes, std::vector<uint32_t>{mode});
      for (int threads : kThreadCounts) {
        spt_scoo_s got;
        cpu::ttm(Exec{threads}, x, mode, u[mode].cref(), got);
        expect_dense_close(want, scoo_dense<T>(got), tol<T>(), "cpu SpTTM");
        expect_distinct_fibers(got, "cpu SpTTM");
        EXPECT_EQ(got.dense_mode, mode);
      }
      // Pre-sorted with `mode` last and the other modes descending: used
      // in place, fibers in that order.
      std::vector<uint32_t> key;
      for (uint32_t m = x.order(); m-- > 0;)
        if (m != mode) key.push_back(m);
      key.push_back(mode);
      spt_coo_s sorted = sorting::permuted_copy(Exec{1}, x, sorting::sort_permutation(Exec{1}, x, key));
      sorted.sorted_by = key;
      for (int threads : kThreadCounts) {
        spt_scoo_s got;
        cpu::ttm(Exec{threads}, sorted, mode, u[mode].cref(), got);
        expect_dense_close(want, scoo_dense<T>(got), tol<T>(), "cpu SpTTM on pre-sorted input");
        EXPECT_EQ(got.fiber_order, std::vector<uint32_t>(key.begin(), key.end() - 1));
        expect_distinct_fibers(got, "cpu SpTTM on pre-sorted input");
      }
    }
  }
}
TEST(SpTtm, MatchesDenseFloat64) { check_spttm<double>(); }
TEST(SpTtm, MatchesDenseFloat32) { check_spttm<float>(); }

// ------------------------------- SsTTM ----------------------------------

template <typename T>
void check_ssttm() {
  uint64_t seed = 40;
  for (const Case& c : cases()) {
    const spt_coo_s x = make_tensor<T>(c, ++seed);
    const auto u = make_factors<T>(c, seed * 5);
    const Dense xd = densify<T>(x);
    const uint32_t order = x.order();
    for (uint32_t first = 0; first < order; ++first) {
      spt_scoo_s y;  // reference SpTTM: fibers sorted by the other modes ascending
      ref::ttm(Exec{1}, x, first, u[first].cref(), y);
      const Dense yd = dense_ttm(xd, first, u[first]);
      for (uint32_t second = 0; second < order; ++second) {
        if (second == first) continue;
        const Dense want = dense_ttm(yd, second, u[second]);
        spt_scoo_s r;
        ref::scoo_ttm(Exec{1}, y, second, u[second].cref(), r);
        expect_dense_close(want, scoo_dense<T>(r), tol<T>(), "reference SsTTM");
        std::vector<uint32_t> dense{first, second};
        std::sort(dense.begin(), dense.end());
        ASSERT_EQ(r.dense_modes, dense);
        for (int threads : kThreadCounts) {
          spt_scoo_s got;  // fibers not grouped by `second` unless it is the highest other mode
          cpu::scoo_ttm(Exec{threads}, y, second, u[second].cref(), got);
          expect_dense_close(want, scoo_dense<T>(got), tol<T>(), "cpu SsTTM");
          expect_distinct_fibers(got, "cpu SsTTM");
          EXPECT_EQ(got.dense_mode, dense[0]);
          // Unknown fiber order: the kernel sorts.
          spt_scoo_s unknown = y;
          unknown.fiber_order.clear();
          spt_scoo_s got2;
          cpu::scoo_ttm(Exec{threads}, unknown, second, u[second].cref(), got2);
          expect_dense_close(want, scoo_dense<T>(got2), tol<T>(), "cpu SsTTM, unknown fiber order");
        }
        // A third mode on top (three dense modes) for order >= 4.
        if (order >= 4) {
          const uint32_t third = [&] {
            for (uint32_t m = order; m-- > 0;)
              if (m != first && m != second) return m;
            return 0u;
          }();
          spt_scoo_s z;
          cpu::scoo_ttm(Exec{2}, r, third, u[third].cref(), z);
          expect_dense_close(dense_ttm(want, third, u[third]), scoo_dense<T>(z), tol<T>(), "cpu SsTTM x2");
          EXPECT_EQ(z.dense_modes.size(), 3u);
        }
      }
    }
  }
}
TEST(SsTtm, MatchesDenseFloat64) { check_ssttm<double>(); }
TEST(SsTtm, MatchesDenseFloat32) { check_ssttm<float>(); }

TEST(SsTtm, RejectsDenseModeAndWrongShapes) {
  const Case c{{4, 5, 6}, {2, 3, 2}, 30, false};
  const spt_coo_s x = make_tensor<double>(c, 3);
  const auto u = make_factors<double>(c, 4);
  spt_scoo_s y, z;
  cpu::ttm(Exec{1}, x, 1, u[1].cref(), y);
  EXPECT_THROW(cpu::scoo_ttm(Exec{1}, y, 1, u[1].cref(), z), Error);       // already dense
  EXPECT_THROW(cpu::scoo_ttm(Exec{1}, y, 3, u[0].cref(), z), Error);       // out of range
  EXPECT_THROW(cpu::scoo_ttm(Exec{1}, y, 0, u[2].cref(), z), Error);       // rows != dims[0]
  EXPECT_THROW(ref::scoo_ttm(Exec{1}, y, 0, u[2].cref(), z), Error);
  const DenseMatrix<float> uf(4, 2);
  EXPECT_THROW(cpu::scoo_ttm(Exec{1}, y, 0, uf.cref(), z), Error);  // dtype
}

// ---------------------- TTM chain through the C API ----------------------

template <typename T>
std::unique_ptr<spt_matrix_s> to_matrix(const DenseMatrix<T>& m, spt_layout layout = SPT_ROW_MAJOR) {
  auto out = std::make_unique<spt_matrix_s>();
  init_matrix(*out, dtype_of<T>(), m.rows, m.cols, layout);
  for (spt_nnz i = 0; i < m.rows; ++i)
    for (spt_nnz j = 0; j < m.cols; ++j) out->at<T>(i, j) = m(i, j);
  return out;
}

template <typename T>
void check_chain_api(spt_backend backend) {
  spt_context* ctx = nullptr;
  ASSERT_EQ(spt_context_create(&ctx), SPT_OK);
  ASSERT_EQ(spt_context_set_backend(ctx, backend), SPT_OK);
  uint64_t seed = 70;
  for (const Case& c : cases()) {
    const spt_coo_s x = make_tensor<T>(c, ++seed);
    const auto u = make_factors<T>(c, seed * 3);
    std::vector<std::unique_ptr<spt_matrix_s>> held;
    for (size_t m = 0; m < u.size(); ++m)
      held.push_back(to_matrix(u[m], m % 2 ? SPT_COL_MAJOR : SPT_ROW_MAJOR));
    const Dense xd = densify<T>(x);
    const uint32_t order = x.order();
    // Chains: each prefix of several mode permutations (count 1..order).
    std::vector<std::vector<uint32_t>> perms;
    std::vector<uint32_t> p(order);
    std::iota(p.begin(), p.end(), 0u);
    perms.push_back(p);
    std::reverse(p.begin(), p.end());
    perms.push_back(p);
    std::rotate(p.begin(), p.begin() + 1, p.end());
    perms.push_back(p);
    for (const auto& perm : perms)
      for (uint32_t count = 1; count <= order; ++count) {
        std::vector<uint32_t> modes(perm.begin(), perm.begin() + count);
        std::vector<const spt_matrix*> us;
        Dense want = xd;
        for (uint32_t m : modes) {
          us.push_back(held[m].get());
          want = dense_ttm(want, m, u[m]);
        }
        spt_scoo* y = nullptr;
        ASSERT_EQ(spt_ttm_chain(ctx, &x, count, modes.data(), us.data(), &y), SPT_OK) << spt_last_error(ctx);
        expect_dense_close(want, scoo_dense<T>(*y), tol<T>(), "spt_ttm_chain");
        expect_distinct_fibers(*y, "spt_ttm_chain");
        uint32_t ndense = 0;
        std::vector<uint32_t> dense(order, 99);
        ASSERT_EQ(spt_scoo_dense_modes(y, &ndense, dense.data()), SPT_OK);
        std::vector<uint32_t> expect_dense = modes;
        std::sort(expect_dense.begin(), expect_dense.end());
        ASSERT_EQ(ndense, count);
        EXPECT_EQ(std::vector<uint32_t>(dense.begin(), dense.begin() + count), expect_dense);
        // Round trip to COO.
        spt_coo* back = nullptr;
        ASSERT_EQ(spt_scoo_to_coo(ctx, y, &back), SPT_OK);
        expect_dense_close(want, densify<T>(*back), tol<T>(), "spt_scoo_to_coo");
        spt_coo_free(back);
        // The next SsTTM through the API, when a sparse mode is left.
        if (count < order) {
          const uint32_t next = perm[count];
          spt_scoo* z = nullptr;
          ASSERT_EQ(spt_scoo_ttm(ctx, y, next, held[next].get(), &z), SPT_OK) << spt_last_error(ctx);
          expect_dense_close(dense_ttm(want, next, u[next]), scoo_dense<T>(*z), tol<T>(), "spt_scoo_ttm");
          spt_scoo_free(z);
        }
        spt_scoo_free(y);
      }
  }
  spt_context_free(ctx);
}
TEST(TtmChain, ApiMatchesDenseCpuFloat64) { check_chain_api<double>(SPT_BACKEND_CPU); }
TEST(TtmChain, ApiMatchesDenseCpuFloat32) { check_chain_api<float>(SPT_BACKEND_CPU); }
TEST(TtmChain, ApiMatchesDenseReferenceFloat64) { check_chain_api<double>(SPT_BACKEND_REFERENCE); }

TEST(TtmChain, ApiRejectsBadArguments) {
  const Case c{{4, 5, 6}, {2, 3, 2}, 30, false};
  const spt_coo_s x = make_tensor<double>(c, 5);
  const auto u = make_factors<double>(c, 6);
  auto u0 = to_matrix(u[0]), u1 = to_matrix(u[1]), u2 = to_matrix(u[2]);
  const auto uf = to_matrix(DenseMatrix<float>(5, 2));
  const spt_matrix* us[] = {u0.get(), u1.get(), u2.get()};
  spt_scoo* y = nullptr;
  auto error_mentions = [](const char* text) {
    return std::string(spt_thread_last_error()).find(text) != std::string::npos;
  };
  const uint32_t ok[] = {0, 1};
  EXPECT_EQ(spt_ttm_chain(nullptr, &x, 0, ok, us, &y), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("count"));
  EXPECT_EQ(spt_ttm_chain(nullptr, &x, 4, ok, us, &y), SPT_ERR_INVALID_ARGUMENT);
  const uint32_t dup[] = {1, 1};
  const spt_matrix* us_dup[] = {u1.get(), u1.get()};
  EXPECT_EQ(spt_ttm_chain(nullptr, &x, 2, dup, us_dup, &y), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("twice"));
  const uint32_t range[] = {0, 3};
  EXPECT_EQ(spt_ttm_chain(nullptr, &x, 2, range, us, &y), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("out of range"));
  const uint32_t swapped[] = {1, 0};  // us[0] has dims[0] rows, not dims[1]
  EXPECT_EQ(spt_ttm_chain(nullptr, &x, 2, swapped, us, &y), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("dims[1]"));
  const spt_matrix* us_f[] = {uf.get()};
  const uint32_t one[] = {1};
  EXPECT_EQ(spt_ttm_chain(nullptr, &x, 1, one, us_f, &y), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("float32"));
  const spt_matrix* us_null[] = {nullptr};
  EXPECT_EQ(spt_ttm_chain(nullptr, &x, 1, one, us_null, &y), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_ttm_chain(nullptr, nullptr, 1, one, us, &y), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(y, nullptr);
  // SsTTM on a dense mode; dense_modes argument checks.
  ASSERT_EQ(spt_ttm_chain(nullptr, &x, 1, one, us + 1, &y), SPT_OK);
  spt_scoo* z = nullptr;
  EXPECT_EQ(spt_scoo_ttm(nullptr, y, 1, u1.get(), &z), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("already dense"));
  EXPECT_EQ(spt_scoo_ttm(nullptr, y, 0, u2.get(), &z), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_scoo_dense_modes(y, nullptr, nullptr), SPT_ERR_INVALID_ARGUMENT);
  const spt_index* idx = nullptr;
  EXPECT_EQ(spt_scoo_indices(y, 1, &idx), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_scoo_indices(y, 2, &idx), SPT_OK);
  spt_scoo_free(y);
  // Overflow of the block size: ranks whose product exceeds 64 bits cannot
  // be built as matrices here, so check the shared helper directly.
  EXPECT_THROW(scoo_block_size({4000000000u, 4000000000u, 4000000000u}, {0, 1, 2}), Error);
}

// ------------------------------ TTMc paths -------------------------------

template <typename T>
DenseMatrix<double> dense_ttmc(const Dense& xd, const std::vector<DenseMatrix<T>>& u, uint32_t mode) {
  Dense y = xd;
  for (uint32_t m = 0; m < xd.dims.size(); ++m)
    if (m != mode) y = dense_ttm(y, m, u[m]);
  // Y_(mode): row i_mode, column = the other (rank) indices, lowest fastest.
  const uint64_t p = product(y.dims) / y.dims[mode];
  DenseMatrix<double> out(y.dims[mode], p);
  std::vector<spt_index> idx(y.dims.size());
  for (uint64_t lin = 0; lin < y.size(); ++lin) {
    uint64_t rest = lin;
    for (size_t m = 0; m < y.dims.size(); ++m) {
      idx[m] = static_cast<spt_index>(rest % y.dims[m]);
      rest /= y.dims[m];
    }
    uint64_t col = 0, stride = 1;
    for (size_t m = 0; m < y.dims.size(); ++m) {
      if (m == mode) continue;
      col += stride * idx[m];
      stride *= y.dims[m];
    }
    out(idx[mode], col) = y.v[lin];
  }
  return out;
}

template <typename T>
void expect_matrix_near(const DenseMatrix<double>& want, const DenseMatrix<T>& got, const std::string& what) {
  ASSERT_EQ(want.rows, got.rows) << what;
  ASSERT_EQ(want.cols, got.cols) << what;
  for (spt_nnz i = 0; i < want.rows; ++i)
    for (spt_nnz j = 0; j < want.cols; ++j)
      ASSERT_TRUE(close(want(i, j), static_cast<double>(got(i, j)), tol<T>()))
          << what << " at (" << i << "," << j << "): want " << want(i, j) << " got " << got(i, j);
}

template <typename T>
void check_ttmc_paths() {
  uint64_t seed = 90;
  for (const Case& c : cases()) {
    const spt_coo_s x = make_tensor<T>(c, ++seed);
    const auto u = make_factors<T>(c, seed * 11);
    std::vector<ConstMatRef<T>> f;
    for (const auto& m : u) f.push_back(m.cref());
    const Dense xd = densify<T>(x);
    const uint32_t order = x.order();
    for (uint32_t mode = 0; mode < order; ++mode) {
      const DenseMatrix<double> want = dense_ttmc(xd, u, mode);
      const uint64_t p = want.cols;
      // Contraction orders: ascending, descending, and the estimate's.
      std::vector<std::vector<uint32_t>> chains;
      std::vector<uint32_t> asc = kernels::ttmc_other_modes(order, mode);
      chains.push_back(asc);
      chains.push_back(std::vector<uint32_t>(asc.rbegin(), asc.rend()));
      chains.push_back(ttmc_chain_order(mode, distinct_indices_per_mode(x, 1)));
      if (asc.size() >= 3) {
        std::vector<uint32_t> mixed = asc;
        std::swap(mixed[0], mixed[1]);
        chains.push_back(mixed);
      }
      for (const auto& chain : chains) {
        DenseMatrix<T> got(x.dims[mode], p);
        ref::ttmc_chain(Exec{1}, x, f.data(), mode, chain.data(), got.ref());
        expect_matrix_near(want, got, "reference chain TTMc");
        for (int threads : kThreadCounts) {
          DenseMatrix<T> g2(x.dims[mode], p);
          cpu::ttmc_chain(Exec{threads}, x, f.data(), mode, chain.data(), g2.ref());
          expect_matrix_near(want, g2, "cpu chain TTMc");
        }
        // Pre-sorted input (no copy inside the kernel).
        const std::vector<uint32_t> key = kernels::ttm_chain_sort_order(mode, chain);
        spt_coo_s sorted = sorting::permuted_copy(Exec{1}, x, sorting::sort_permutation(Exec{1}, x, key));
        sorted.sorted_by = key;
        DenseMatrix<T> g3(x.dims[mode], p);
        cpu::ttmc_chain(Exec{2}, sorted, f.data(), mode, chain.data(), g3.ref());
        expect_matrix_near(want, g3, "cpu chain TTMc, pre-sorted");
      }
      DenseMatrix<T> one(x.dims[mode], p);
      cpu::ttmc(Exec{2}, x, f.data(), mode, one.ref());
      expect_matrix_near(want, one, "cpu one-shot TTMc");
      // Both paths through the plan / run_ttmc (the HOOI route).
      for (TtmcPath path : {TtmcPath::one_shot, TtmcPath::chain, TtmcPath::automatic}) {
        TtmcOperands ops;
        prepare_ttmc_operands(Exec{2}, x, c.ranks, path, ops);
        if (path != TtmcPath::automatic) EXPECT_EQ(ops.plans[mode].path, path);
        spt_context_s ctx;
        ctx.threads = 2;
        ctx.backend = SPT_BACKEND_CPU;
        DenseMatrix<T> g4(x.dims[mode], p);
        run_ttmc<T>(ctx, ops.plans[mode], *ops.operand[mode], f.data(), g4.ref());
        expect_matrix_near(want, g4, std::string("run_ttmc ") + ttmc_path_name(path));
        EXPECT_EQ(ops.operand[mode]->sorted_by,
                  ops.plans[mode].path == TtmcPath::chain ? ops.plans[mode].chain_key : ops.plans[mode].one_shot_key);
      }
    }
  }
}
TEST(TtmcChain, BothPathsMatchDenseFloat64) { check_ttmc_paths<double>(); }
TEST(TtmcChain, BothPathsMatchDenseFloat32) { check_ttmc_paths<float>(); }

TEST(TtmcChain, RejectsBadChains) {
  const Case c{{4, 5, 6}, {2, 3, 2}, 30, false};
  const spt_coo_s x = make_tensor<double>(c, 8);
  const auto u = make_factors<double>(c, 9);
  std::vector<ConstMatRef<double>> f;
  for (const auto& m : u) f.push_back(m.cref());
  DenseMatrix<double> out(4, 6);
  const uint32_t has_mode[] = {0, 1};
  const uint32_t repeated[] = {1, 1};
  const uint32_t range[] = {1, 5};
  for (const uint32_t* chain : {has_mode, repeated, range}) {
    EXPECT_THROW(cpu::ttmc_chain(Exec{1}, x, f.data(), 0, chain, out.ref()), Error);
    EXPECT_THROW(ref::ttmc_chain(Exec{1}, x, f.data(), 0, chain, out.ref()), Error);
  }
  const uint32_t good[] = {2, 1};
  DenseMatrix<double> wrong(4, 5);
  EXPECT_THROW(cpu::ttmc_chain(Exec{1}, x, f.data(), 0, good, wrong.ref()), Error);
  EXPECT_NO_THROW(cpu::ttmc_chain(Exec{1}, x, f.data(), 0, good, out.ref()));
}

// ------------------------------ cost model -------------------------------

TEST(TtmcPlan, PrefixCountsMatchBruteForce) {
  const Case c{{6, 5, 7, 4}, {2, 2, 2, 2}, 300, true};
  const spt_coo_s x = make_tensor<double>(c, 12);
  const std::vector<uint32_t> key{2, 0, 3, 1};
  spt_coo_s s = sorting::permuted_copy(Exec{1}, x, sorting::sort_permutation(Exec{1}, x, key));
  for (int threads : kThreadCounts) {
    const std::vector<spt_nnz> counts = prefix_group_counts(Exec{threads}, s, key);
    ASSERT_EQ(counts.size(), key.size());
    for (size_t len = 1; len <= key.size(); ++len) {
      std::set<std::vector<spt_index>> prefixes;
      for (spt_nnz k = 0; k < x.nnz; ++k) {
        std::vector<spt_index> pre;
        for (size_t q = 0; q < len; ++q) pre.push_back(x.ind[key[q]][k]);
        prefixes.insert(pre);
      }
      EXPECT_EQ(counts[len - 1], prefixes.size()) << "prefix length " << len << ", threads " << threads;
    }
  }
  // W(c) by its definition on a hand example: 3-way, key (0, c1, c0).
  // nnz 10, counts {2, 5, 10}, ranks R_{c0} = 3, R_{c1} = 4:
  // W = 10 * 3 + G_0 * 12, G_0 = prefixes of length 2 = 5.
  EXPECT_DOUBLE_EQ(nested_ttmc_flops(10, {2, 5, 10}, {2, 1}, {7, 4, 3}), 10.0 * 3 + 5.0 * 12);
  EXPECT_EQ(nested_ttmc_scratch_bytes({2, 1}, {7, 4, 3}, 2, 8), 3u * 2 * 8);
}

TEST(TtmcPlan, SubsetCountsGiveTheSameWorkAsSortedPasses) {
  // The exact order search (distinct counts of key subsets) against the
  // counting pass over a tensor sorted in each order.
  const Case c{{6, 5, 7, 4}, {2, 3, 1, 2}, 400, true};
  const spt_coo_s x = make_tensor<double>(c, 13);
  const std::vector<spt_nnz> subsets = subset_distinct_counts(Exec{2}, x);
  ASSERT_EQ(subsets.size(), 16u);
  for (uint32_t mode = 0; mode < 4; ++mode) {
    const std::vector<uint32_t> others = kernels::ttmc_other_modes(4, mode);
    std::vector<uint32_t> chain = others;
    do {
      const std::vector<uint32_t> key = kernels::ttm_chain_sort_order(mode, chain);
      spt_coo_s s = sorting::permuted_copy(Exec{1}, x, sorting::sort_permutation(Exec{1}, x, key));
      EXPECT_DOUBLE_EQ(chain_flops_from_subsets(x.nnz, subsets, mode, chain, c.ranks),
                       nested_ttmc_flops(x.nnz, prefix_group_counts(Exec{1}, s, key), chain, c.ranks));
    } while (std::next_permutation(chain.begin(), chain.end()));
  }
}

TEST(TtmcPlan, OrderSixUsesTheRuleAndStaysCorrect) {
  // K = 5 > kMaxExactChainModes: the rule and counting passes (fallback).
  const Case c{{3, 4, 2, 5, 3, 6}, {2, 1, 2, 3, 1, 2}, 300, false};
  const spt_coo_s x = make_tensor<double>(c, 14);
  const auto u = make_factors<double>(c, 15);
  std::vector<ConstMatRef<double>> f;
  for (const auto& m : u) f.push_back(m.cref());
  for (TtmcPath path : {TtmcPath::automatic, TtmcPath::chain}) {
    TtmcOperands ops;
    prepare_ttmc_operands(Exec{2}, x, c.ranks, path, ops);
    spt_context_s ctx;
    ctx.threads = 2;
    ctx.backend = SPT_BACKEND_CPU;
    for (uint32_t mode = 0; mode < 6; ++mode) {
      EXPECT_FALSE(ops.plans[mode].order_search);
      EXPECT_GT(ops.plans[mode].chain_flops, 0);
      const uint64_t p = kernels::ttmc_columns<double>(6, f.data(), mode);
      DenseMatrix<double> want(x.dims[mode], p), got(x.dims[mode], p);
      ref::ttmc(Exec{1}, x, f.data(), mode, want.ref());
      run_ttmc<double>(ctx, ops.plans[mode], *ops.operand[mode], f.data(), got.ref());
      expect_matrix_close(want, got, "order-6 TTMc");
    }
  }
}

spt_coo_s uniform_tensor(const std::vector<spt_index>& dims, spt_nnz nnz, uint64_t seed) {
  RandomTensorSpec spec;
  spec.dims = dims;
  spec.nnz = nnz;
  spec.seed = seed;
  spec.skewed = false;
  spec.empty_slices = false;
  spec.single_nonzero_slice = false;
  return random_coo(SPT_FLOAT64, spec);
}

TEST(TtmcPlan, CompressingTensorPicksChain) {
  // Mode 0 TTMc. The one-shot kernel's fixed leaf is mode 1 (3 indices):
  // its level-0 groups are the ~distinct (i0, i2) pairs (thousands). The
  // chain contracts mode 2 (5000 indices) first: its groups are the 12
  // (i0, i1) pairs.
  const spt_coo_s x = uniform_tensor({4, 3, 5000}, 20000, 21);
  const std::vector<spt_index> ranks{2, 3, 8};
  TtmcOperands ops;
  prepare_ttmc_operands(Exec{2}, x, ranks, TtmcPath::automatic, ops);
  const TtmcPlan& plan = ops.plans[0];
  EXPECT_EQ(plan.chain, (std::vector<uint32_t>{2, 1}));
  EXPECT_TRUE(plan.order_search);
  EXPECT_EQ(plan.path, TtmcPath::chain);
  EXPECT_LT(plan.chain_flops, 0.7 * plan.one_shot_flops);
  EXPECT_DOUBLE_EQ(plan.kronecker_row_flops, 20000.0 * 24);
  EXPECT_GT(plan.sorted_copy_bytes, 0u);
  // Exact value: nnz R_2 + G_0 (R_2 R_1) with G_0 = 12 (all pairs used).
  EXPECT_DOUBLE_EQ(plan.chain_flops, 20000.0 * 8 + 12.0 * 24);
}

TEST(TtmcPlan, HypersparseTensorPicksOneShot) {
  // Few nonzeros in a large cube: no group holds two nonzeros in either
  // order, so the chain saves nothing and the one-shot kernel is kept.
  const spt_coo_s x = uniform_tensor({500, 600, 700}, 60, 22);
  TtmcOperands ops;
  prepare_ttmc_operands(Exec{1}, x, {4, 4, 4}, TtmcPath::automatic, ops);
  for (const TtmcPlan& plan : ops.plans) {
    EXPECT_EQ(plan.path, TtmcPath::one_shot) << "mode " << plan.mode;
    EXPECT_GE(plan.chain_flops, 0.97 * plan.one_shot_flops);
  }
}

TEST(TtmcPlan, AnExplicitPathIsKept) {
  const spt_coo_s x = uniform_tensor({4, 3, 500}, 2000, 23);
  TtmcOperands ops;
  for (TtmcPath path : {TtmcPath::chain, TtmcPath::one_shot}) {
    prepare_ttmc_operands(Exec{1}, x, {2, 2, 2}, path, ops);
    for (const TtmcPlan& plan : ops.plans) EXPECT_EQ(plan.path, path);
  }
}

// spt_tucker_options.ttmc: ONE_SHOT and CHAIN force the CPU loop's path in
// every mode (the plans say so); HLS is the GPU's only, so a CPU run is
// SPT_ERR_UNSUPPORTED; a value outside the enum is an invalid argument.
TEST(TuckerTtmcOption, ForcesThePathOnTheCpu) {
  const spt_coo_s x = uniform_tensor({4, 3, 500}, 2000, 23);
  const spt_index ranks[] = {2, 2, 2};
  spt_tucker_options opts;
  spt_tucker_options_init(&opts);
  EXPECT_EQ(opts.ttmc, SPT_TUCKER_TTMC_AUTO);
  opts.ranks = ranks;
  opts.ranks_count = 3;
  opts.max_iters = 2;
  spt_context_s ctx;
  ctx.backend = SPT_BACKEND_CPU;
  const std::pair<spt_tucker_ttmc, TtmcPath> forced[] = {{SPT_TUCKER_TTMC_ONE_SHOT, TtmcPath::one_shot},
                                                         {SPT_TUCKER_TTMC_CHAIN, TtmcPath::chain}};
  for (const auto& [method, path] : forced) {
    opts.ttmc = method;
    spt_ttensor_s out;
    TuckerInternalOptions internal;
    std::vector<TtmcPlan> plans;
    internal.plans_out = &plans;
    tucker_hooi(ctx, x, opts, out, internal);
    ASSERT_EQ(plans.size(), 3u);
    for (const TtmcPlan& plan : plans) EXPECT_EQ(plan.path, path) << "method " << method;
  }
  opts.ttmc = SPT_TUCKER_TTMC_HLS;
  spt_ttensor_s out;
  try {
    tucker_hooi(ctx, x, opts, out);
    ADD_FAILURE() << "SPT_TUCKER_TTMC_HLS ran on the CPU";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), SPT_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(e.what()).find("GPU only"), std::string::npos) << e.what();
  }
  const int bad = 7;
  std::memcpy(&opts.ttmc, &bad, sizeof bad);
  try {
    tucker_hooi(ctx, x, opts, out);
    ADD_FAILURE() << "opts.ttmc = 7 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), SPT_ERR_INVALID_ARGUMENT);
  }
}

// ------------------------------ HOOI paths -------------------------------

template <typename T>
void check_hooi_paths() {
  // Ascending dims, so the chain order differs from the one-shot order.
  RandomTensorSpec spec;
  spec.dims = {6, 9, 40, 70};
  spec.nnz = 3000;
  spec.seed = 31;
  const spt_coo_s x = random_coo(dtype_of<T>(), spec);
  const spt_index ranks[] = {2, 3, 2, 4};
  spt_tucker_options opts;
  spt_tucker_options_init(&opts);
  opts.ranks = ranks;
  opts.ranks_count = 4;
  opts.max_iters = 6;
  opts.tol = 0;
  opts.init = SPT_TUCKER_INIT_RANDOM;
  opts.seed = 5;
  std::vector<spt_ttensor_s> results(3);
  const TtmcPath paths[] = {TtmcPath::one_shot, TtmcPath::chain, TtmcPath::automatic};
  for (int i = 0; i < 3; ++i) {
    spt_context_s ctx;
    ctx.threads = 1 + i;
    ctx.backend = SPT_BACKEND_CPU;
    TuckerInternalOptions internal;
    internal.ttmc = paths[i];
    std::vector<TtmcPlan> plans;
    internal.plans_out = &plans;
    tucker_hooi(ctx, x, opts, results[i], internal);
    ASSERT_EQ(plans.size(), 4u);
    if (i < 2)
      for (const TtmcPlan& plan : plans) EXPECT_EQ(plan.path, paths[i]);
    if (i == 1) EXPECT_NE(plans[0].chain_key, plans[0].one_shot_key);  // a different computation
  }
  const double ftol = sizeof(T) == 4 ? 1e-4 : 1e-10;
  for (int i = 1; i < 3; ++i) {
    EXPECT_NEAR(results[i].fit, results[0].fit, ftol);
    for (uint32_t m = 0; m < 4; ++m) {
      const spt_matrix_s& a = *results[0].factors[m];
      const spt_matrix_s& b = *results[i].factors[m];
      for (spt_nnz r = 0; r < a.rows; ++r)
        for (spt_nnz j = 0; j < a.cols; ++j) ASSERT_NEAR(a.at<T>(r, j), b.at<T>(r, j), 100 * ftol);
    }
  }
}
TEST(TuckerTtmcPaths, ForcedPathsGiveTheSameFitFloat64) { check_hooi_paths<double>(); }
TEST(TuckerTtmcPaths, ForcedPathsGiveTheSameFitFloat32) { check_hooi_paths<float>(); }

}  // namespace
}  // namespace spt::test
