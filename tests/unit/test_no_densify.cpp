// No-densification: tensors whose dims multiply far past 2^64 run every kernel
// in memory proportional to nnz (plus the dense operands' own rows), and the
// results match the reference. The mode-n unfolding of such a tensor cannot
// number its columns in 64 bits: that is the documented SPT_ERR_OVERFLOW.
// (CP-ALS on such tensors is tested with CP-ALS.)
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <numeric>
#include <string>
#include <vector>

#include "core/sort.hpp"
#include "kernels/kernels.hpp"
#include "common/test_util.hpp"

namespace spt::test {
namespace {

namespace ref = spt::kernels::reference;
namespace cpu = spt::kernels::cpu;
using kernels::Exec;

constexpr spt_index kHuge = spt_index(1) << 31;  // 5 modes of 2^31: 2^155 cells
constexpr spt_index kLarge = spt_index(1) << 17; // 5 modes of 2^17: 2^85 cells
constexpr spt_nnz kNnz = 4000;

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024.0;  // ru_maxrss is in KiB on Linux
}

spt_coo_s make(spt_dtype dtype, std::vector<spt_index> dims, uint64_t seed, bool duplicates) {
  RandomTensorSpec s;
  s.dims = std::move(dims);
  s.nnz = kNnz;
  s.seed = seed;
  s.duplicates = duplicates;
  return random_coo(dtype, s);
}

template <typename T>
void expect_same(const spt_coo_s& want, const spt_coo_s& got, const char* what) {
  ASSERT_EQ(want.dims, got.dims) << what;
  ASSERT_EQ(want.nnz, got.nnz) << what;
  for (uint32_t m = 0; m < want.order(); ++m)
    for (spt_nnz k = 0; k < want.nnz; ++k) ASSERT_EQ(want.ind[m][k], got.ind[m][k]) << what;
  for (spt_nnz k = 0; k < want.nnz; ++k)
    ASSERT_TRUE(close(want.values<T>()[k], got.values<T>()[k], tolerance<T>())) << what << " " << k;
}

template <typename T>
class NoDensify : public ::testing::Test {};
using ValueTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(NoDensify, ValueTypes);

TYPED_TEST(NoDensify, SortCoalesceNormElementwise) {
  using T = TypeParam;
  const spt_dtype dt = dtype_of<T>();
  const std::vector<spt_index> dims(5, kHuge);
  const spt_coo_s x = make(dt, dims, 1, true);
  spt_coo_s y = make(dt, dims, 2, false);
  for (spt_nnz k = 0; k < y.nnz; k += 3)  // share some coordinates with x
    for (uint32_t m = 0; m < 5; ++m) y.mutable_ind(m)[k] = x.ind[m][k];

  for (int threads : {2, 3}) {
    const Exec exec{threads};
    // Lexicographic sort in a non-trivial mode order (the 155-bit key path).
    const std::vector<uint32_t> order{3, 1, 4, 0, 2};
    spt_coo_s s = copy_coo(x, dt);
    sorting::sort_in_place(exec, s, order);
    for (spt_nnz k = 1; k < s.nnz; ++k) {
      bool ordered = false, equal = true;
      for (uint32_t m : order)
        if (s.ind[m][k - 1] != s.ind[m][k]) {
          ordered = s.ind[m][k - 1] < s.ind[m][k];
          equal = false;
          break;
        }
      ASSERT_TRUE(ordered || equal) << k;
    }
    // Z-Morton on 5 x 31 bits: consecutive entries in nondecreasing Morton order.
    spt_coo_s z = copy_coo(x, dt);
    sorting::sort_morton_in_place(exec, z);
    for (spt_nnz k = 1; k < z.nnz; ++k) {
      int best = -1;
      spt_index best_xor = 0;
      for (uint32_t m = 0; m < 5; ++m) {
        spt_index d = z.ind[m][k - 1] ^ z.ind[m][k];
        if (d && (best < 0 || (31 - __builtin_clz(d)) > (31 - __builtin_clz(best_xor)))) {
          best = static_cast<int>(m);
          best_xor = d;
        }
      }
      if (best >= 0) ASSERT_LT(z.ind[best][k - 1], z.ind[best][k]) << k;
    }
    // Coalesce SUM against the reference (x + empty sums duplicates).
    spt_coo_s c = copy_coo(x, dt);
    sorting::coalesce(exec, c, SPT_DUPLICATES_SUM);
    spt_coo_s empty;
    empty.init_owned(dt, dims, 0);
    spt_coo_s want_c;
    ref::elementwise(Exec{1}, SPT_OP_ADD, x, empty, want_c);
    expect_same<T>(want_c, c, "coalesce");
    EXPECT_LT(c.nnz, x.nnz);

    EXPECT_TRUE(close(ref::summed_stats(Exec{1}, x).norm_squared, cpu::summed_stats(exec, x).norm_squared, 1e-12));
    for (spt_elementwise_op op : {SPT_OP_ADD, SPT_OP_SUB, SPT_OP_MUL, SPT_OP_DIV}) {
      spt_coo_s want, got;
      ref::elementwise(Exec{1}, op, x, y, want);
      cpu::elementwise(exec, op, x, y, got);
      expect_same<T>(want, got, "elementwise");
      spt_coo_s want_s, got_s;
      ref::elementwise_scalar(Exec{1}, op, x, T(2), want_s);
      cpu::elementwise_scalar(exec, op, x, T(2), got_s);
      expect_same<T>(want_s, got_s, "elementwise_scalar");
    }
    // The unfolding's columns would need 124 bits.
    spt_csr_s a;
    try {
      cpu::unfold_csr(exec, x, 0, a);
      ADD_FAILURE() << "unfold_csr should fail with SPT_ERR_OVERFLOW";
    } catch (const spt::Error& e) {
      EXPECT_EQ(e.code(), SPT_ERR_OVERFLOW);
    }
  }
  EXPECT_LT(peak_rss_mib(), 1024.0);
}

TYPED_TEST(NoDensify, TtvTtmOnHugeModes) {
  using T = TypeParam;
  const spt_dtype dt = dtype_of<T>();
  // Four modes of 2^31 and a short product mode for the dense operand.
  const spt_coo_s x = make(dt, {kHuge, kHuge, kHuge, kHuge, 1000}, 3, true);
  DenseMatrix<T> v = random_matrix<T>(1000, 1, 4);
  DenseMatrix<T> u = random_matrix<T>(1000, 6, 5);
  spt_coo_s want_v;
  ref::ttv(Exec{1}, x, 4, v.values.data(), want_v);
  spt_scoo_s want_u;
  ref::ttm(Exec{1}, x, 4, u.cref(), want_u);
  for (int threads : {2, 3}) {
    spt_coo_s got_v;
    cpu::ttv(Exec{threads}, x, 4, v.values.data(), got_v);
    expect_same<T>(want_v, got_v, "ttv");
    spt_scoo_s got_u;
    cpu::ttm(Exec{threads}, x, 4, u.cref(), got_u);
    ASSERT_EQ(want_u.nfibers, got_u.nfibers);
    for (uint32_t m = 0; m < 4; ++m)
      for (spt_nnz f = 0; f < got_u.nfibers; ++f) ASSERT_EQ(want_u.ind[m][f], got_u.ind[m][f]);
    const auto& wv = want_u.values.get<T>();
    const auto& gv = got_u.values.get<T>();
    for (size_t e = 0; e < wv.size(); ++e) ASSERT_TRUE(close(wv[e], gv[e], tolerance<T>()));
  }
  EXPECT_LT(peak_rss_mib(), 1024.0);
}

TYPED_TEST(NoDensify, MttkrpAndInnerProduct) {
  using T = TypeParam;
  const spt_dtype dt = dtype_of<T>();
  const std::vector<spt_index> dims(5, kLarge);  // factors stay small: 2^17 x R each
  const spt_coo_s x = make(dt, dims, 6, true);
  const spt_index rank = 8;
  std::vector<DenseMatrix<T>> factors;
  std::vector<ConstMatRef<T>> f;
  for (uint32_t m = 0; m < 5; ++m) factors.push_back(random_matrix<T>(kLarge, rank, 10 + m));
  for (const auto& m : factors) f.push_back(m.cref());
  DenseMatrix<T> lambda = random_matrix<T>(1, rank, 20);
  for (uint32_t mode = 0; mode < 5; ++mode) {
    DenseMatrix<T> want(kLarge, rank), got(kLarge, rank);
    ref::mttkrp(Exec{1}, x, f.data(), mode, want.ref());
    for (int threads : {2, 3}) {
      cpu::mttkrp(Exec{threads}, x, f.data(), mode, got.ref());
      for (spt_nnz e = 0; e < want.values.size(); ++e)
        ASSERT_TRUE(close(want.values[e], got.values[e], tolerance<T>())) << "mode " << mode << " element " << e;
    }
  }
  const double want_ip = ref::inner_ktensor(Exec{1}, x, lambda.values.data(), f.data(), rank);
  EXPECT_TRUE(close(want_ip, cpu::inner_ktensor(Exec{2}, x, lambda.values.data(), f.data(), rank), 1e-9));
  EXPECT_LT(peak_rss_mib(), 1024.0);
}

}  // namespace
}  // namespace spt::test
