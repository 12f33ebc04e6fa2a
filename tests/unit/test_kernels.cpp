// Every OpenMP kernel against the sequential reference on the standard random
// tensors (orders 2..6, skewed dims, empty slices, single-nonzero slices,
// duplicates) in float32 and float64, every mode, 1/2/3 threads; plus small
// cases worked by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/sort.hpp"
#include "kernels/kernels.hpp"
#include "common/test_util.hpp"

namespace spt::test {
namespace {

namespace ref = spt::kernels::reference;
namespace cpu = SPT_TEST_CPU_KERNELS;
using kernels::Exec;
using kernels::MttkrpStrategy;

const int kThreadCounts[] = {1, 2, 3};

// Same dims, same coordinates in the same order (exact), values close.
template <typename T>
void expect_coo_match(const spt_coo_s& want, const spt_coo_s& got, const std::string& what) {
  ASSERT_EQ(want.dims, got.dims) << what;
  ASSERT_EQ(want.nnz, got.nnz) << what;
  for (uint32_t m = 0; m < want.order(); ++m)
    for (spt_nnz k = 0; k < want.nnz; ++k)
      ASSERT_EQ(want.ind[m][k], got.ind[m][k]) << what << ": mode " << m << " entry " << k;
  for (spt_nnz k = 0; k < want.nnz; ++k)
    ASSERT_TRUE(close(want.values<T>()[k], got.values<T>()[k], tolerance<T>()))
        << what << ": entry " << k << " want " << want.values<T>()[k] << " got " << got.values<T>()[k];
}

std::string label(const RandomTensorSpec& s, spt_dtype d) {
  std::string t = std::string(dtype_name(d)) + " dims";
  for (auto x : s.dims) t += " " + std::to_string(x);
  return t;
}

// A second tensor of the same shape sharing about half of x's coordinates,
// so that both the union and the intersection of the patterns are non-trivial.
spt_coo_s partner(const spt_coo_s& x, const RandomTensorSpec& spec) {
  RandomTensorSpec s2 = spec;
  s2.seed = spec.seed + 1000;
  spt_coo_s y = random_coo(x.dtype(), s2);
  for (spt_nnz k = 0; k < y.nnz && k < x.nnz; k += 2)
    for (uint32_t m = 0; m < x.order(); ++m) y.mutable_ind(m)[k] = x.ind[m][(k * 7) % x.nnz];
  return y;
}

class KernelsVsReference : public ::testing::TestWithParam<std::tuple<int, spt_dtype>> {
 protected:
  RandomTensorSpec spec() const { return standard_specs()[std::get<0>(GetParam())]; }
  spt_dtype dtype() const { return std::get<1>(GetParam()); }
  template <typename F>
  void typed(F&& f) {
    with_dtype(dtype(), [&](auto tag) { f(tag); });
  }
};

TEST_P(KernelsVsReference, Mttkrp) {
  const RandomTensorSpec s = spec();
  const spt_coo_s x = random_coo(dtype(), s);
  typed([&](auto tag) {
    using T = typename decltype(tag)::type;
    for (spt_nnz rank : {spt_nnz(16), spt_nnz(5)}) {
      auto factors = random_factors<T>(s.dims, rank, 7);
      auto f = crefs(factors);
      for (uint32_t mode = 0; mode < x.order(); ++mode) {
        DenseMatrix<T> want(s.dims[mode], rank);
        ref::mttkrp(Exec{1}, x, f.data(), mode, want.ref());
        spt_coo_s sorted = copy_coo(x, x.dtype());
        sorting::sort_in_place(Exec{2}, sorted, [&] {
          std::vector<uint32_t> o{mode};
          for (uint32_t m = 0; m < x.order(); ++m)
            if (m != mode) o.push_back(m);
          return o;
        }());
        for (int threads : kThreadCounts) {
          for (MttkrpStrategy strategy :
               {MttkrpStrategy::automatic, MttkrpStrategy::privatized, MttkrpStrategy::atomic}) {
            DenseMatrix<T> got(s.dims[mode], rank);
            got.values.assign(got.values.size(), T(99));  // must be overwritten
            cpu::mttkrp(Exec{threads, strategy}, x, f.data(), mode, got.ref());
            expect_matrix_close(want, got,
                                label(s, dtype()) + " mode " + std::to_string(mode) + " threads " +
                                    std::to_string(threads) + " strategy " + std::to_string(int(strategy)));
          }
          DenseMatrix<T> got(s.dims[mode], rank);
          got.values.assign(got.values.size(), T(99));
          cpu::mttkrp(Exec{threads, MttkrpStrategy::sorted_rows}, sorted, f.data(), mode, got.ref());
          expect_matrix_close(want, got, label(s, dtype()) + " sorted rows, mode " + std::to_string(mode));
        }
      }
    }
  });
}

TEST_P(KernelsVsReference, Ttv) {
  const RandomTensorSpec s = spec();
  const spt_coo_s x = random_coo(dtype(), s);
  typed([&](auto tag) {
    using T = typename decltype(tag)::type;
    for (uint32_t mode = 0; mode < x.order(); ++mode) {
      DenseMatrix<T> v = random_matrix<T>(s.dims[mode], 1, 3 + mode);
      spt_coo_s want;
      ref::ttv(Exec{1}, x, mode, v.values.data(), want);
      for (int threads : kThreadCounts) {
        spt_coo_s got;
        cpu::ttv(Exec{threads}, x, mode, v.values.data(), got);
        expect_coo_match<T>(want, got, label(s, dtype()) + " ttv mode " + std::to_string(mode));
        EXPECT_EQ(got.sorted_by, sorting::natural_order(x.order() - 1));
      }
    }
  });
}

TEST_P(KernelsVsReference, Ttm) {
  const RandomTensorSpec s = spec();
  const spt_coo_s x = random_coo(dtype(), s);
  typed([&](auto tag) {
    using T = typename decltype(tag)::type;
    for (uint32_t mode = 0; mode < x.order(); ++mode) {
      DenseMatrix<T> u = random_matrix<T>(s.dims[mode], 3, 5 + mode);
      spt_scoo_s want;
      ref::ttm(Exec{1}, x, mode, u.cref(), want);
      for (int threads : kThreadCounts) {
        spt_scoo_s got;
        cpu::ttm(Exec{threads}, x, mode, u.cref(), got);
        ASSERT_EQ(want.dims, got.dims);
        ASSERT_EQ(got.dense_mode, mode);
        ASSERT_EQ(want.nfibers, got.nfibers) << label(s, dtype()) << " mode " << mode;
        for (uint32_t m = 0; m < x.order(); ++m) {
          if (m == mode) continue;
          for (spt_nnz f = 0; f < want.nfibers; ++f) ASSERT_EQ(want.ind[m][f], got.ind[m][f]);
        }
        const auto& wv = want.values.get<T>();
        const auto& gv = got.values.get<T>();
        ASSERT_EQ(wv.size(), gv.size());
        for (size_t e = 0; e < wv.size(); ++e) ASSERT_TRUE(close(wv[e], gv[e], tolerance<T>())) << e;
      }
    }
  });
}

TEST_P(KernelsVsReference, InnerKtensorAndNorm) {
  const RandomTensorSpec s = spec();
  const spt_coo_s x = random_coo(dtype(), s);
  typed([&](auto tag) {
    using T = typename decltype(tag)::type;
    const spt_index rank = 4;
    auto factors = random_factors<T>(s.dims, rank, 17);
    auto f = crefs(factors);
    DenseMatrix<T> lambda = random_matrix<T>(1, rank, 19);
    const double want = ref::inner_ktensor(Exec{1}, x, lambda.values.data(), f.data(), rank);
    const kernels::SummedStats want_stats = ref::summed_stats(Exec{1}, x);
    const double want_norm = want_stats.norm_squared;
    EXPECT_GT(want_norm, 0.0);
    for (int threads : kThreadCounts) {
      EXPECT_TRUE(close(want, cpu::inner_ktensor(Exec{threads}, x, lambda.values.data(), f.data(), rank), 1e-9));
      const kernels::SummedStats stats = cpu::summed_stats(Exec{threads}, x);
      EXPECT_TRUE(close(want_norm, stats.norm_squared, 1e-12));
      EXPECT_EQ(stats.distinct, want_stats.distinct);
    }
  });
}

TEST_P(KernelsVsReference, Elementwise) {
  const RandomTensorSpec s = spec();
  const spt_coo_s x = random_coo(dtype(), s);
  const spt_coo_s y = partner(x, s);
  typed([&](auto tag) {
    using T = typename decltype(tag)::type;
    for (spt_elementwise_op op : {SPT_OP_ADD, SPT_OP_SUB, SPT_OP_MUL, SPT_OP_DIV}) {
      spt_coo_s want;
      ref::elementwise(Exec{1}, op, x, y, want);
      if (op == SPT_OP_MUL) EXPECT_GT(want.nnz, 0u);  // the intersection is not empty
      for (int threads : kThreadCounts) {
        spt_coo_s got;
        cpu::elementwise(Exec{threads}, op, x, y, got);
        expect_coo_match<T>(want, got, label(s, dtype()) + " op " + std::to_string(int(op)));
      }
    }
  });
}

TEST_P(KernelsVsReference, ElementwiseScalar) {
  const RandomTensorSpec s = spec();
  const spt_coo_s x = random_coo(dtype(), s);
  typed([&](auto tag) {
    using T = typename decltype(tag)::type;
    for (spt_elementwise_op op : {SPT_OP_ADD, SPT_OP_SUB, SPT_OP_MUL, SPT_OP_DIV}) {
      spt_coo_s want;
      ref::elementwise_scalar(Exec{1}, op, x, T(0.75), want);
      ASSERT_EQ(want.nnz, x.nnz);
      for (int threads : kThreadCounts) {
        spt_coo_s got;
        cpu::elementwise_scalar(Exec{threads}, op, x, T(0.75), got);
        expect_coo_match<T>(want, got, label(s, dtype()) + " scalar op " + std::to_string(int(op)));
      }
    }
  });
}

TEST_P(KernelsVsReference, UnfoldCsr) {
  const RandomTensorSpec s = spec();
  const spt_coo_s x = random_coo(dtype(), s);
  typed([&](auto tag) {
    using T = typename decltype(tag)::type;
    for (uint32_t mode = 0; mode < x.order(); ++mode) {
      spt_csr_s want;
      ref::unfold_csr(Exec{1}, x, mode, want);
      for (int threads : kThreadCounts) {
        spt_csr_s got;
        cpu::unfold_csr(Exec{threads}, x, mode, got);
        ASSERT_EQ(want.rows, got.rows);
        ASSERT_EQ(want.cols, got.cols);
        ASSERT_TRUE(std::equal(want.row_ptr.begin(), want.row_ptr.end(), got.row_ptr.begin(), got.row_ptr.end()));
        ASSERT_TRUE(std::equal(want.col_ind.begin(), want.col_ind.end(), got.col_ind.begin(), got.col_ind.end()));
        const auto& wv = want.values.get<T>();
        const auto& gv = got.values.get<T>();
        for (size_t e = 0; e < wv.size(); ++e) ASSERT_TRUE(close(wv[e], gv[e], tolerance<T>())) << e;
      }
    }
  });
}

// Reference orders for the sorts: std::stable_sort of positions.
std::vector<spt_nnz> stable_order(const spt_coo_s& x, const std::function<bool(spt_nnz, spt_nnz)>& less) {
  std::vector<spt_nnz> p(x.nnz);
  std::iota(p.begin(), p.end(), 0);
  std::stable_sort(p.begin(), p.end(), less);
  return p;
}

std::vector<spt_nnz> lexicographic_reference(const spt_coo_s& x, const std::vector<uint32_t>& order) {
  return stable_order(x, [&](spt_nnz a, spt_nnz b) {
    for (uint32_t m : order)
      if (x.ind[m][a] != x.ind[m][b]) return x.ind[m][a] < x.ind[m][b];
    return false;
  });
}

// Morton key spelled out: for bit 31 down to 0, that bit of mode 0, 1, ...
std::vector<spt_nnz> morton_reference(const spt_coo_s& x) {
  std::vector<std::string> keys(x.nnz);
  for (spt_nnz k = 0; k < x.nnz; ++k)
    for (int bit = 31; bit >= 0; --bit)
      for (uint32_t m = 0; m < x.order(); ++m) keys[k] += ((x.ind[m][k] >> bit) & 1) ? '1' : '0';
  return stable_order(x, [&](spt_nnz a, spt_nnz b) { return keys[a] < keys[b]; });
}

template <typename T>
void expect_permuted(const spt_coo_s& original, const std::vector<spt_nnz>& perm, const spt_coo_s& sorted,
                     const std::string& what) {
  ASSERT_EQ(sorted.nnz, original.nnz) << what;
  for (spt_nnz k = 0; k < original.nnz; ++k) {
    for (uint32_t m = 0; m < original.order(); ++m)
      ASSERT_EQ(sorted.ind[m][k], original.ind[m][perm[k]]) << what << " entry " << k << " mode " << m;
    ASSERT_EQ(sorted.values<T>()[k], original.values<T>()[perm[k]]) << what << " entry " << k;
  }
}

TEST_P(KernelsVsReference, SortLexicographicAndMorton) {
  const RandomTensorSpec s = spec();
  const spt_coo_s x = random_coo(dtype(), s);
  typed([&](auto tag) {
    using T = typename decltype(tag)::type;
    std::mt19937 rng(5);
    std::vector<std::vector<uint32_t>> orders{sorting::natural_order(x.order())};
    for (int i = 0; i < 3; ++i) {
      auto o = sorting::natural_order(x.order());
      std::shuffle(o.begin(), o.end(), rng);
      orders.push_back(o);
    }
    for (const auto& order : orders) {
      const auto want = lexicographic_reference(x, order);
      for (int threads : kThreadCounts) {
        spt_coo_s y = copy_coo(x, x.dtype());
        sorting::sort_in_place(Exec{threads}, y, order);
        expect_permuted<T>(x, want, y, label(s, dtype()) + " lexicographic");
        EXPECT_EQ(y.sorted_by, order);
      }
    }
    const auto want = morton_reference(x);
    for (int threads : kThreadCounts) {
      spt_coo_s y = copy_coo(x, x.dtype());
      sorting::sort_morton_in_place(Exec{threads}, y);
      expect_permuted<T>(x, want, y, label(s, dtype()) + " morton");
      EXPECT_TRUE(y.sorted_by.empty());
    }
  });
}

TEST_P(KernelsVsReference, CoalesceSum) {
  RandomTensorSpec s = spec();
  s.duplicates = true;
  const spt_coo_s x = random_coo(dtype(), s);
  typed([&](auto tag) {
    using T = typename decltype(tag)::type;
    std::map<std::vector<spt_index>, T> sums;
    for (spt_nnz k = 0; k < x.nnz; ++k) {
      std::vector<spt_index> c;
      for (uint32_t m = 0; m < x.order(); ++m) c.push_back(x.ind[m][k]);
      sums[c] += x.values<T>()[k];
    }
    for (int threads : kThreadCounts) {
      spt_coo_s y = copy_coo(x, x.dtype());
      sorting::coalesce(Exec{threads}, y, SPT_DUPLICATES_SUM);
      ASSERT_EQ(y.nnz, sums.size());
      ASSERT_LT(y.nnz, x.nnz);  // the spec has duplicates
      spt_nnz k = 0;
      for (const auto& [c, v] : sums) {
        for (uint32_t m = 0; m < x.order(); ++m) ASSERT_EQ(y.ind[m][k], c[m]);
        ASSERT_TRUE(close(y.values<T>()[k], v, tolerance<T>()));
        ++k;
      }
      spt_coo_s z = copy_coo(x, x.dtype());
      EXPECT_THROW(sorting::coalesce(Exec{threads}, z, SPT_DUPLICATES_REJECT), spt::Error);
      expect_permuted<T>(x, [&] {
        std::vector<spt_nnz> id(x.nnz);
        std::iota(id.begin(), id.end(), 0);
        return id;
      }(), z, "REJECT leaves the tensor unchanged");
    }
  });
}

INSTANTIATE_TEST_SUITE_P(StandardSpecs, KernelsVsReference,
                         ::testing::Combine(::testing::Range(0, static_cast<int>(standard_specs().size())),
                                            ::testing::Values(SPT_FLOAT32, SPT_FLOAT64)));

// Larger inputs so the parallel chunked sort and merges run, through each key
// path: packed (coordinates + position in one word), 64-bit key + position,
// and mode-by-mode comparison for coordinates wider than 64 bits.
TEST(Sort, LargeInputsAllKeyPaths) {
  for (spt_index dim : {spt_index(1000), spt_index(1) << 20, spt_index(2147483647)}) {
    RandomTensorSpec s;
    s.dims = {dim, dim, 7};
    s.nnz = 100000;
    s.seed = 3;
    s.duplicates = true;
    spt_coo_s x = random_coo(SPT_FLOAT64, s);
    const std::vector<uint32_t> order{2, 0, 1};
    const auto want = lexicographic_reference(x, order);
    const auto want_morton = morton_reference(x);
    for (int threads : kThreadCounts) {
      spt_coo_s y = copy_coo(x, x.dtype());
      sorting::sort_in_place(Exec{threads}, y, order);
      expect_permuted<double>(x, want, y, "large lexicographic dim " + std::to_string(dim));
      spt_coo_s z = copy_coo(x, x.dtype());
      sorting::sort_morton_in_place(Exec{threads}, z);
      expect_permuted<double>(x, want_morton, z, "large morton dim " + std::to_string(dim));
    }
  }
}

/* ------------------------------ worked by hand ------------------------------ */

// 2x2x2 tensor with X(0,0,0)=1, X(1,0,1)=2, X(0,1,1)=3, X(1,1,0)=4.
template <typename T>
spt_coo_s small_tensor() {
  spt_coo_s x;
  x.init_owned(dtype_of<T>(), {2, 2, 2}, 4);
  const spt_index c[4][3] = {{0, 0, 0}, {1, 0, 1}, {0, 1, 1}, {1, 1, 0}};
  for (int k = 0; k < 4; ++k) {
    for (int m = 0; m < 3; ++m) x.mutable_ind(m)[k] = c[k][m];
    x.mutable_values<T>()[k] = T(k + 1);
  }
  return x;
}

template <typename T>
DenseMatrix<T> matrix(spt_nnz rows, spt_nnz cols, std::vector<double> v) {
  DenseMatrix<T> m(rows, cols);
  for (size_t e = 0; e < v.size(); ++e) m.values[e] = T(v[e]);
  return m;
}

template <typename T>
class HandWorked : public ::testing::Test {};
using ValueTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(HandWorked, ValueTypes);

TYPED_TEST(HandWorked, Mttkrp2x2x2) {
  using T = TypeParam;
  const spt_coo_s x = small_tensor<T>();
  auto a = matrix<T>(2, 2, {1, 2, 3, 4}), b = matrix<T>(2, 2, {1, 2, 3, 4}), c = matrix<T>(2, 2, {5, 6, 7, 8});
  const ConstMatRef<T> f[3] = {a.cref(), b.cref(), c.cref()};
  for (int threads : kThreadCounts) {
    for (bool use_ref : {true, false}) {
      DenseMatrix<T> out0(2, 2), out1(2, 2);
      if (use_ref) {
        ref::mttkrp(Exec{1}, x, f, 0, out0.ref());
        ref::mttkrp(Exec{1}, x, f, 1, out1.ref());
      } else {
        cpu::mttkrp(Exec{threads}, x, f, 0, out0.ref());
        cpu::mttkrp(Exec{threads}, x, f, 1, out1.ref());
      }
      EXPECT_EQ(out0(0, 0), T(68));
      EXPECT_EQ(out0(0, 1), T(108));
      EXPECT_EQ(out0(1, 0), T(74));
      EXPECT_EQ(out0(1, 1), T(128));
      EXPECT_EQ(out1(0, 0), T(47));
      EXPECT_EQ(out1(0, 1), T(76));
      EXPECT_EQ(out1(1, 0), T(81));
      EXPECT_EQ(out1(1, 1), T(144));
    }
  }
}

TYPED_TEST(HandWorked, InnerKtensor) {
  using T = TypeParam;
  const spt_coo_s x = small_tensor<T>();
  auto a = matrix<T>(2, 2, {1, 2, 3, 4}), b = matrix<T>(2, 2, {1, 2, 3, 4}), c = matrix<T>(2, 2, {5, 6, 7, 8});
  const ConstMatRef<T> f[3] = {a.cref(), b.cref(), c.cref()};
  const T lambda[2] = {1, 2};
  EXPECT_EQ(ref::inner_ktensor(Exec{1}, x, lambda, f, 2), 1746.0);
  EXPECT_EQ(cpu::inner_ktensor(Exec{2}, x, lambda, f, 2), 1746.0);
  EXPECT_EQ(cpu::summed_stats(Exec{2}, x).norm_squared, 30.0);  // 1 + 4 + 9 + 16
}

TYPED_TEST(HandWorked, RepeatedCoordinatesAreSummedInTheNorm) {
  // (1,0) holds 1 + 2 = 3 and (0,1) holds 4 - 1 = 3, in no sorted order;
  // (0,0) holds 5 once: ||X||^2 = 9 + 9 + 25 over 3 distinct coordinates.
  using T = TypeParam;
  spt_coo_s x;
  x.init_owned(std::is_same_v<T, float> ? SPT_FLOAT32 : SPT_FLOAT64, {2, 2}, 5);
  const spt_index i[5] = {1, 0, 0, 1, 0}, j[5] = {0, 1, 0, 0, 1};
  const T v[5] = {1, 4, 5, 2, -1};
  for (int k = 0; k < 5; ++k) {
    x.mutable_ind(0)[k] = i[k];
    x.mutable_ind(1)[k] = j[k];
    x.template mutable_values<T>()[k] = v[k];
  }
  for (int threads : {1, 2, 3}) {
    const kernels::SummedStats stats = cpu::summed_stats(Exec{threads}, x);
    EXPECT_EQ(stats.norm_squared, 43.0);
    EXPECT_EQ(stats.distinct, 3u);
  }
  const kernels::SummedStats ref_stats = ref::summed_stats(Exec{1}, x);
  EXPECT_EQ(ref_stats.norm_squared, 43.0);
  EXPECT_EQ(ref_stats.distinct, 3u);
}

TYPED_TEST(HandWorked, TtvAndTtm) {
  using T = TypeParam;
  const spt_coo_s x = small_tensor<T>();
  const T v[2] = {10, 1};
  for (bool use_ref : {true, false}) {
    spt_coo_s y;
    if (use_ref) ref::ttv(Exec{1}, x, 2, v, y);
    else cpu::ttv(Exec{2}, x, 2, v, y);
    // Y(i,j) = sum_k X(i,j,k) v(k), sorted: (0,0)=10, (0,1)=3, (1,0)=2, (1,1)=40.
    ASSERT_EQ(y.nnz, 4u);
    ASSERT_EQ(y.dims, (std::vector<spt_index>{2, 2}));
    const T want[4] = {10, 3, 2, 40};
    for (int k = 0; k < 4; ++k) {
      EXPECT_EQ(y.ind[0][k], spt_index(k / 2));
      EXPECT_EQ(y.ind[1][k], spt_index(k % 2));
      EXPECT_EQ(y.values<T>()[k], want[k]);
    }
    // SpTTM in mode 1 with U = [1 2 3; 4 5 6]: one fiber per (i, k).
    auto u = matrix<T>(2, 3, {1, 2, 3, 4, 5, 6});
    spt_scoo_s z;
    if (use_ref) ref::ttm(Exec{1}, x, 1, u.cref(), z);
    else cpu::ttm(Exec{2}, x, 1, u.cref(), z);
    ASSERT_EQ(z.nfibers, 4u);
    EXPECT_EQ(z.dims, (std::vector<spt_index>{2, 3, 2}));
    EXPECT_EQ(z.dense_mode, 1u);
    const T fibers[4][3] = {{1, 2, 3}, {12, 15, 18}, {16, 20, 24}, {2, 4, 6}};
    for (int f = 0; f < 4; ++f) {
      EXPECT_EQ(z.ind[0][f], spt_index(f / 2));
      EXPECT_EQ(z.ind[2][f], spt_index(f % 2));
      for (int r = 0; r < 3; ++r) EXPECT_EQ(z.values.get<T>()[f * 3 + r], fibers[f][r]) << f << "," << r;
    }
  }
}

TYPED_TEST(HandWorked, KhatriRaoAndKronecker) {
  using T = TypeParam;
  auto a = matrix<T>(2, 2, {1, 2, 3, 4});
  auto b = matrix<T>(3, 2, {5, 6, 7, 8, 9, 10});
  const double kr[6][2] = {{5, 12}, {7, 16}, {9, 20}, {15, 24}, {21, 32}, {27, 40}};
  auto c = matrix<T>(2, 2, {0, 5, 6, 7});
  const double kron[4][4] = {{0, 5, 0, 10}, {6, 7, 12, 14}, {0, 15, 0, 20}, {18, 21, 24, 28}};
  for (int backend = 0; backend < 2; ++backend) {
    DenseMatrix<T> k1(6, 2), k2(4, 4);
    if (backend == 0) {
      ref::khatri_rao(Exec{1}, a.cref(), b.cref(), k1.ref());
      ref::kronecker(Exec{1}, a.cref(), c.cref(), k2.ref());
    } else {
      cpu::khatri_rao(Exec{2}, a.cref(), b.cref(), k1.ref());
      cpu::kronecker(Exec{2}, a.cref(), c.cref(), k2.ref());
    }
    for (int i = 0; i < 6; ++i)
      for (int r = 0; r < 2; ++r) EXPECT_EQ(k1(i, r), T(kr[i][r]));
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) EXPECT_EQ(k2(i, j), T(kron[i][j]));
  }
}

TYPED_TEST(HandWorked, UnfoldingColumnsFollowKolda) {
  using T = TypeParam;
  // 2 x 3 x 4 with X(1,2,3) = 5 stored twice as 2 + 3 (summed) and X(0,0,1) = 7.
  spt_coo_s x;
  x.init_owned(dtype_of<T>(), {2, 3, 4}, 3);
  const spt_index c[3][3] = {{1, 2, 3}, {0, 0, 1}, {1, 2, 3}};
  const T v[3] = {2, 7, 3};
  for (int k = 0; k < 3; ++k) {
    for (int m = 0; m < 3; ++m) x.mutable_ind(m)[k] = c[k][m];
    x.mutable_values<T>()[k] = v[k];
  }
  // mode: (rows, cols, col of (1,2,3), col of (0,0,1))
  struct Want {
    spt_nnz rows;
    uint64_t cols, col_a, col_b;
    spt_index row_a, row_b;
  };
  const Want want[3] = {{2, 12, 2 + 3 * 3, 0 + 3 * 1, 1, 0},
                        {3, 8, 1 + 2 * 3, 0 + 2 * 1, 2, 0},
                        {4, 6, 1 + 2 * 2, 0, 3, 1}};
  for (uint32_t mode = 0; mode < 3; ++mode) {
    for (int backend = 0; backend < 2; ++backend) {
      spt_csr_s a;
      if (backend == 0) ref::unfold_csr(Exec{1}, x, mode, a);
      else cpu::unfold_csr(Exec{2}, x, mode, a);
      const Want& w = want[mode];
      ASSERT_EQ(a.rows, w.rows);
      ASSERT_EQ(a.cols, w.cols);
      ASSERT_EQ(a.nnz(), 2u);
      // Row of (0,0,1) comes first (its row is smaller in every mode here).
      EXPECT_EQ(a.row_ptr[w.row_b + 1] - a.row_ptr[w.row_b], 1u);
      EXPECT_EQ(a.col_ind[a.row_ptr[w.row_b]], w.col_b);
      EXPECT_EQ(a.values.get<T>()[a.row_ptr[w.row_b]], T(7));
      EXPECT_EQ(a.col_ind[a.row_ptr[w.row_a]], w.col_a);
      EXPECT_EQ(a.values.get<T>()[a.row_ptr[w.row_a]], T(5));
      EXPECT_EQ(a.row_ptr[a.rows], 2u);
    }
  }
}

TYPED_TEST(HandWorked, ElementwisePatterns) {
  using T = TypeParam;
  // X = {(0,0)=1, (0,1)=2}, Y = {(0,1)=4, (1,1)=8}
  spt_coo_s x, y;
  x.init_owned(dtype_of<T>(), {2, 2}, 2);
  y.init_owned(dtype_of<T>(), {2, 2}, 2);
  const spt_index xc[2][2] = {{0, 0}, {0, 1}}, yc[2][2] = {{0, 1}, {1, 1}};
  for (int k = 0; k < 2; ++k)
    for (int m = 0; m < 2; ++m) {
      x.mutable_ind(m)[k] = xc[k][m];
      y.mutable_ind(m)[k] = yc[k][m];
    }
  x.mutable_values<T>()[0] = 1;
  x.mutable_values<T>()[1] = 2;
  y.mutable_values<T>()[0] = 4;
  y.mutable_values<T>()[1] = 8;
  struct Case {
    spt_elementwise_op op;
    std::vector<std::vector<spt_index>> coords;
    std::vector<double> values;
  };
  const Case cases[] = {{SPT_OP_ADD, {{0, 0}, {0, 1}, {1, 1}}, {1, 6, 8}},
                        {SPT_OP_SUB, {{0, 0}, {0, 1}, {1, 1}}, {1, -2, -8}},
                        {SPT_OP_MUL, {{0, 1}}, {8}},
                        {SPT_OP_DIV, {{0, 1}}, {0.5}}};
  for (const Case& c : cases) {
    for (int backend = 0; backend < 2; ++backend) {
      spt_coo_s z;
      if (backend == 0) ref::elementwise(Exec{1}, c.op, x, y, z);
      else cpu::elementwise(Exec{2}, c.op, x, y, z);
      ASSERT_EQ(z.nnz, c.coords.size()) << "op " << c.op;
      for (size_t k = 0; k < c.coords.size(); ++k) {
        EXPECT_EQ(z.ind[0][k], c.coords[k][0]);
        EXPECT_EQ(z.ind[1][k], c.coords[k][1]);
        EXPECT_EQ(z.values<T>()[k], T(c.values[k]));
      }
    }
  }
}

TEST(HandWorkedSort, MortonOrderOf2x2AndMixedWidths) {
  // Points of a 4 x 2 grid in Z order: bit level 1 (mode 0 only), then level 0
  // (mode 0 bit before mode 1 bit).
  spt_coo_s x;
  x.init_owned(SPT_FLOAT64, {4, 2}, 8);
  const spt_index pts[8][2] = {{3, 1}, {0, 0}, {2, 0}, {1, 1}, {0, 1}, {3, 0}, {1, 0}, {2, 1}};
  for (int k = 0; k < 8; ++k) {
    x.mutable_ind(0)[k] = pts[k][0];
    x.mutable_ind(1)[k] = pts[k][1];
    x.mutable_values<double>()[k] = k;
  }
  sorting::sort_morton_in_place(Exec{2}, x);
  const spt_index want[8][2] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}, {2, 0}, {2, 1}, {3, 0}, {3, 1}};
  for (int k = 0; k < 8; ++k) {
    EXPECT_EQ(x.ind[0][k], want[k][0]) << k;
    EXPECT_EQ(x.ind[1][k], want[k][1]) << k;
  }
  // Mode 1 wins when its differing bit is higher: (0, 2) after (1, 1).
  spt_coo_s y;
  y.init_owned(SPT_FLOAT64, {2, 4}, 2);
  y.mutable_ind(0)[0] = 0;
  y.mutable_ind(1)[0] = 2;
  y.mutable_ind(0)[1] = 1;
  y.mutable_ind(1)[1] = 1;
  sorting::sort_morton_in_place(Exec{1}, y);
  EXPECT_EQ(y.ind[0][0], 1u);
  EXPECT_EQ(y.ind[1][0], 1u);
}

}  // namespace
}  // namespace spt::test
