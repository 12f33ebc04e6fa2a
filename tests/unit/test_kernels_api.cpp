// The kernels through the public C API: argument validation (modes, shapes,
// dtypes, NULLs, read-only views), coalesce REJECT semantics, layouts, the
// sCOO/CSR accessors, and backend agreement (reference vs CPU contexts).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/summaries.hpp"
#include "sptensor/sptensor.h"

namespace {

std::string last() { return spt_thread_last_error(); }

bool mentions(const std::string& text) { return last().find(text) != std::string::npos; }

// 2x2x2: X(0,0,0)=1, X(1,0,1)=2, X(0,1,1)=3, X(1,1,0)=4 (mode-major subs).
spt_coo* small_tensor(spt_dtype dtype = SPT_FLOAT64) {
  const spt_index dims[] = {2, 2, 2};
  const spt_index subs[] = {0, 1, 0, 1, /**/ 0, 0, 1, 1, /**/ 0, 1, 1, 0};
  const double vd[] = {1, 2, 3, 4};
  const float vf[] = {1, 2, 3, 4};
  spt_coo* x = nullptr;
  EXPECT_EQ(spt_coo_create_from_arrays(nullptr, dtype, 3, dims, 4, subs, 4, 0,
                                       dtype == SPT_FLOAT64 ? static_cast<const void*>(vd) : vf, 0, &x),
            SPT_OK);
  return x;
}

spt_matrix* mat(spt_dtype dtype, spt_nnz rows, spt_nnz cols, std::vector<double> v, spt_layout layout = SPT_ROW_MAJOR) {
  spt_matrix* m = nullptr;
  EXPECT_EQ(spt_matrix_create(nullptr, dtype, rows, cols, layout, &m), SPT_OK);
  void* data = nullptr;
  spt_matrix_data(m, &data);
  for (spt_nnz i = 0; i < rows; ++i)
    for (spt_nnz j = 0; j < cols; ++j) {
      spt_nnz at = layout == SPT_ROW_MAJOR ? i * cols + j : j * rows + i;
      if (dtype == SPT_FLOAT64) static_cast<double*>(data)[at] = v[i * cols + j];
      else static_cast<float*>(data)[at] = static_cast<float>(v[i * cols + j]);
    }
  return m;
}

double at(const spt_matrix* m, spt_nnz i, spt_nnz j) {
  const spt_matrix_summary info = spt_test::info_of(m);
  const spt_nnz rows = info.rows, cols = info.cols;
  const spt_dtype dtype = info.dtype;
  std::vector<double> out(rows * cols);
  std::vector<float> outf(rows * cols);
  if (dtype == SPT_FLOAT64) {
    spt_matrix_copy_out(m, SPT_ROW_MAJOR, out.data(), cols);
    return out[i * cols + j];
  }
  spt_matrix_copy_out(m, SPT_ROW_MAJOR, outf.data(), cols);
  return outf[i * cols + j];
}

TEST(KernelsApi, MttkrpValidatesArguments) {
  spt_coo* x = small_tensor();
  spt_matrix* a = mat(SPT_FLOAT64, 2, 2, {1, 2, 3, 4});
  spt_matrix* c = mat(SPT_FLOAT64, 2, 2, {5, 6, 7, 8});
  spt_matrix* wrong_rows = mat(SPT_FLOAT64, 3, 2, {0, 0, 0, 0, 0, 0});
  spt_matrix* wrong_rank = mat(SPT_FLOAT64, 2, 3, {0, 0, 0, 0, 0, 0});
  spt_matrix* f32 = mat(SPT_FLOAT32, 2, 2, {1, 2, 3, 4});
  spt_matrix* out = mat(SPT_FLOAT64, 2, 2, {0, 0, 0, 0});
  const spt_matrix* factors[] = {nullptr, a, c};

  EXPECT_EQ(spt_mttkrp(nullptr, x, factors, 3, out), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions("mode 3 out of range")) << last();
  EXPECT_EQ(spt_mttkrp(nullptr, nullptr, factors, 0, out), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_mttkrp(nullptr, x, nullptr, 0, out), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_mttkrp(nullptr, x, factors, 0, nullptr), SPT_ERR_INVALID_ARGUMENT);
  const spt_matrix* missing[] = {nullptr, nullptr, c};
  EXPECT_EQ(spt_mttkrp(nullptr, x, missing, 0, out), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions("factors[1]")) << last();
  const spt_matrix* bad_rows[] = {nullptr, wrong_rows, c};
  EXPECT_EQ(spt_mttkrp(nullptr, x, bad_rows, 0, out), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions("factors[1] must be dims[1] x R")) << last();
  const spt_matrix* bad_rank[] = {nullptr, a, wrong_rank};
  EXPECT_EQ(spt_mttkrp(nullptr, x, bad_rank, 0, out), SPT_ERR_INVALID_ARGUMENT);
  const spt_matrix* bad_dtype[] = {nullptr, f32, c};
  EXPECT_EQ(spt_mttkrp(nullptr, x, bad_dtype, 0, out), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions("float32")) << last();
  EXPECT_EQ(spt_mttkrp(nullptr, x, factors, 0, wrong_rows), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions("out must be")) << last();

  ASSERT_EQ(spt_mttkrp(nullptr, x, factors, 0, out), SPT_OK);
  EXPECT_EQ(at(out, 0, 0), 68);
  EXPECT_EQ(at(out, 0, 1), 108);
  EXPECT_EQ(at(out, 1, 0), 74);
  EXPECT_EQ(at(out, 1, 1), 128);

  // Column-major factors and output give the same numbers.
  spt_matrix* a_cm = mat(SPT_FLOAT64, 2, 2, {1, 2, 3, 4}, SPT_COL_MAJOR);
  spt_matrix* c_cm = mat(SPT_FLOAT64, 2, 2, {5, 6, 7, 8}, SPT_COL_MAJOR);
  spt_matrix* out_cm = mat(SPT_FLOAT64, 2, 2, {9, 9, 9, 9}, SPT_COL_MAJOR);
  const spt_matrix* factors_cm[] = {nullptr, a_cm, c_cm};
  ASSERT_EQ(spt_mttkrp(nullptr, x, factors_cm, 0, out_cm), SPT_OK);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) EXPECT_EQ(at(out_cm, i, j), at(out, i, j));

  // The reference backend agrees.
  spt_context* ctx = nullptr;
  ASSERT_EQ(spt_context_create(&ctx), SPT_OK);
  ASSERT_EQ(spt_context_set_backend(ctx, SPT_BACKEND_REFERENCE), SPT_OK);
  spt_matrix* out_ref = mat(SPT_FLOAT64, 2, 2, {0, 0, 0, 0});
  ASSERT_EQ(spt_mttkrp(ctx, x, factors, 0, out_ref), SPT_OK);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) EXPECT_EQ(at(out_ref, i, j), at(out, i, j));
  EXPECT_EQ(spt_mttkrp(ctx, x, factors, 7, out_ref), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spt_last_error(ctx)).find("spt_mttkrp"), std::string::npos);

  for (spt_matrix* m : {a, c, wrong_rows, wrong_rank, f32, out, a_cm, c_cm, out_cm, out_ref}) spt_matrix_free(m);
  spt_context_free(ctx);
  spt_coo_free(x);
}

TEST(KernelsApi, TtvAndTtm) {
  spt_coo* x = small_tensor();
  const double v[] = {10, 1};
  spt_coo* y = nullptr;
  EXPECT_EQ(spt_ttv(nullptr, x, 2, v, 3, &y), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions("v has 3 entries")) << last();
  EXPECT_EQ(spt_ttv(nullptr, x, 3, v, 2, &y), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_ttv(nullptr, x, 2, nullptr, 2, &y), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(y, nullptr);
  ASSERT_EQ(spt_ttv(nullptr, x, 2, v, 2, &y), SPT_OK);
  EXPECT_EQ(spt_test::info_of(y).order, 2u);
  EXPECT_EQ(spt_test::info_of(y).nnz, 4u);
  const void* vals = nullptr;
  spt_coo_values(y, &vals);
  EXPECT_EQ(static_cast<const double*>(vals)[3], 40.0);
  spt_coo_free(y);

  const spt_index dims1[] = {5};
  spt_coo* x1 = nullptr;
  ASSERT_EQ(spt_coo_create(nullptr, SPT_FLOAT64, 1, dims1, &x1), SPT_OK);
  const double v5[5] = {};
  EXPECT_EQ(spt_ttv(nullptr, x1, 0, v5, 5, &y), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions("order >= 2")) << last();
  spt_coo_free(x1);

  spt_matrix* u = mat(SPT_FLOAT64, 2, 3, {1, 2, 3, 4, 5, 6});
  spt_matrix* u32 = mat(SPT_FLOAT32, 2, 3, {1, 2, 3, 4, 5, 6});
  spt_matrix* u_bad = mat(SPT_FLOAT64, 3, 3, {0, 0, 0, 0, 0, 0, 0, 0, 0});
  spt_scoo* z = nullptr;
  EXPECT_EQ(spt_ttm(nullptr, x, 1, u32, &z), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_ttm(nullptr, x, 1, u_bad, &z), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_ttm(nullptr, x, 9, u, &z), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_ttm(nullptr, x, 1, nullptr, &z), SPT_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(spt_ttm(nullptr, x, 1, u, &z), SPT_OK);
  spt_scoo_summary zs{};
  zs.struct_size = sizeof zs;
  ASSERT_EQ(spt_scoo_info(nullptr, z, &zs), SPT_OK);
  EXPECT_EQ(zs.dtype, SPT_FLOAT64);
  EXPECT_EQ(zs.order, 3u);
  EXPECT_EQ(zs.dense_mode, 1u);
  EXPECT_EQ(zs.dense_mode_count, 1u);
  EXPECT_EQ(zs.nfibers, 4u);
  EXPECT_EQ(zs.block_length, 3u);
  spt_index zd[3];
  ASSERT_EQ(spt_scoo_dims(z, zd), SPT_OK);
  EXPECT_EQ(zd[1], 3u);
  const spt_index* zi = nullptr;
  EXPECT_EQ(spt_scoo_indices(z, 1, &zi), SPT_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(spt_scoo_indices(z, 2, &zi), SPT_OK);
  EXPECT_EQ(zi[1], 1u);
  const void* zv = nullptr;
  ASSERT_EQ(spt_scoo_values(z, &zv), SPT_OK);
  EXPECT_EQ(static_cast<const double*>(zv)[3], 12.0);  // fiber (0,*,1) = 3 * U(1,:)
  spt_coo* back = nullptr;
  ASSERT_EQ(spt_scoo_to_coo(nullptr, z, &back), SPT_OK);
  EXPECT_EQ(spt_test::info_of(back).nnz, 12u);  // 4 fibers x 3, none zero
  double n = 0;
  ASSERT_EQ(spt_coo_norm(nullptr, back, &n), SPT_OK);
  // squares: 1+4+9, 144+225+324, 256+400+576, 4+16+36
  EXPECT_DOUBLE_EQ(n, std::sqrt(14.0 + 693 + 1232 + 56));
  spt_coo_free(back);
  spt_scoo_free(z);
  for (spt_matrix* m : {u, u32, u_bad}) spt_matrix_free(m);
  spt_coo_free(x);
}

TEST(KernelsApi, ScooToCooDropsZeros) {
  spt_coo* x = small_tensor();
  spt_matrix* u = mat(SPT_FLOAT64, 2, 2, {1, 0, 0, 0});  // row 1 of U is zero
  spt_scoo* z = nullptr;
  ASSERT_EQ(spt_ttm(nullptr, x, 1, u, &z), SPT_OK);
  spt_coo* back = nullptr;
  ASSERT_EQ(spt_scoo_to_coo(nullptr, z, &back), SPT_OK);
  EXPECT_EQ(spt_test::info_of(back).nnz, 2u);  // X(0,0,0) and X(1,0,1) times U(0,0)
  spt_coo_free(back);
  spt_scoo_free(z);
  spt_matrix_free(u);
  spt_coo_free(x);
}

TEST(KernelsApi, ElementwiseValidates) {
  spt_coo* x = small_tensor();
  spt_coo* x32 = small_tensor(SPT_FLOAT32);
  const spt_index dims[] = {2, 2, 3};
  spt_coo* other = nullptr;
  ASSERT_EQ(spt_coo_create(nullptr, SPT_FLOAT64, 3, dims, &other), SPT_OK);
  spt_coo* z = nullptr;
  EXPECT_EQ(spt_elementwise(nullptr, SPT_OP_ADD, x, x32, &z), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_elementwise(nullptr, SPT_OP_ADD, x, other, &z), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions("mode 2")) << last();
  EXPECT_EQ(spt_elementwise(nullptr, (spt_elementwise_op)9, x, x, &z), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_elementwise(nullptr, SPT_OP_ADD, x, nullptr, &z), SPT_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(spt_elementwise(nullptr, SPT_OP_MUL, x, x, &z), SPT_OK);
  double n = 0;
  spt_coo_norm(nullptr, z, &n);
  EXPECT_DOUBLE_EQ(n, std::sqrt(1.0 + 16 + 81 + 256));
  spt_coo_free(z);

  EXPECT_EQ(spt_elementwise_scalar(nullptr, SPT_OP_DIV, x, 0.0, &z), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions("division by zero")) << last();
  EXPECT_EQ(spt_elementwise_scalar(nullptr, SPT_OP_DIV, x32, 1e-60, &z), SPT_ERR_INVALID_ARGUMENT);  // 0 in float32
  ASSERT_EQ(spt_elementwise_scalar(nullptr, SPT_OP_ADD, x, 1.0, &z), SPT_OK);
  EXPECT_EQ(spt_test::info_of(z).nnz, 4u);  // pattern kept: implicit zeros are not shifted
  spt_coo_free(z);
  spt_coo_free(other);
  spt_coo_free(x32);
  spt_coo_free(x);
}

TEST(KernelsApi, SortAndCoalesceOnViewsAreReadOnly) {
  const spt_index dims[] = {3, 3};
  const spt_index subs[] = {2, 0, 2, /**/ 1, 1, 1};
  const double vals[] = {1, 2, 3};
  spt_coo* view = nullptr;
  ASSERT_EQ(spt_coo_create_view(nullptr, SPT_FLOAT64, 2, dims, 3, subs, 3, vals, &view), SPT_OK);
  EXPECT_EQ(spt_coo_sort(nullptr, view, nullptr), SPT_ERR_READ_ONLY);
  EXPECT_EQ(spt_coo_sort_morton(nullptr, view), SPT_ERR_READ_ONLY);
  EXPECT_EQ(spt_coo_coalesce(nullptr, view, SPT_DUPLICATES_SUM), SPT_ERR_READ_ONLY);
  EXPECT_TRUE(mentions("spt_coo_copy")) << last();
  // Kernels read views fine; (2,1) appears twice, so it holds 1 + 3.
  double n = 0;
  ASSERT_EQ(spt_coo_norm(nullptr, view, &n), SPT_OK);
  EXPECT_DOUBLE_EQ(n, std::sqrt(16.0 + 4.0));
  spt_nnz distinct = 0;
  ASSERT_EQ(spt_coo_count_distinct(nullptr, view, &distinct), SPT_OK);
  EXPECT_EQ(distinct, 2u);
  spt_coo* copy = nullptr;
  ASSERT_EQ(spt_coo_copy(nullptr, view, &copy), SPT_OK);
  const uint32_t bad_order[] = {1, 1};
  EXPECT_EQ(spt_coo_sort(nullptr, copy, bad_order), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions("repeats mode 1")) << last();
  const uint32_t out_of_range[] = {0, 2};
  EXPECT_EQ(spt_coo_sort(nullptr, copy, out_of_range), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_coo_sort(nullptr, nullptr, nullptr), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_coo_coalesce(nullptr, copy, (spt_duplicates)5), SPT_ERR_INVALID_ARGUMENT);

  // REJECT names the repeated coordinate and leaves the tensor unchanged.
  EXPECT_EQ(spt_coo_coalesce(nullptr, copy, SPT_DUPLICATES_REJECT), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions("(2, 1)")) << last();
  const spt_index* i0 = nullptr;
  const void* v = nullptr;
  spt_coo_indices(copy, 0, &i0);
  spt_coo_values(copy, &v);
  EXPECT_EQ(i0[0], 2u);
  EXPECT_EQ(i0[1], 0u);
  EXPECT_EQ(static_cast<const double*>(v)[1], 2.0);

  const uint32_t by_value_mode[] = {1, 0};
  ASSERT_EQ(spt_coo_sort(nullptr, copy, by_value_mode), SPT_OK);
  spt_coo_indices(copy, 0, &i0);
  EXPECT_EQ(i0[0], 0u);
  EXPECT_EQ(i0[1], 2u);
  ASSERT_EQ(spt_coo_coalesce(nullptr, copy, SPT_DUPLICATES_SUM), SPT_OK);
  EXPECT_EQ(spt_test::info_of(copy).nnz, 2u);
  spt_coo_values(copy, &v);
  EXPECT_EQ(static_cast<const double*>(v)[1], 4.0);  // (2,1): 1 + 3
  ASSERT_EQ(spt_coo_coalesce(nullptr, copy, SPT_DUPLICATES_REJECT), SPT_OK);
  ASSERT_EQ(spt_coo_sort_morton(nullptr, copy), SPT_OK);
  spt_coo_free(copy);
  spt_coo_free(view);
}

TEST(KernelsApi, UnfoldCsr) {
  spt_coo* x = small_tensor();
  spt_csr* a = nullptr;
  EXPECT_EQ(spt_unfold_csr(nullptr, x, 3, &a), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_unfold_csr(nullptr, x, 0, nullptr), SPT_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(spt_unfold_csr(nullptr, x, 1, &a), SPT_OK);
  spt_nnz rows = 0, nnz = 0;
  uint64_t cols = 0;
  const spt_nnz* rp = nullptr;
  const uint64_t* ci = nullptr;
  const void* vals = nullptr;
  spt_dtype dt;
  ASSERT_EQ(spt_csr_arrays(a, &dt, &rows, &cols, &nnz, &rp, &ci, &vals), SPT_OK);
  EXPECT_EQ(rows, 2u);
  EXPECT_EQ(cols, 4u);
  EXPECT_EQ(nnz, 4u);
  // Row j=0 holds X(0,0,0) at col 0 and X(1,0,1) at col 1 + 2*1 = 3.
  EXPECT_EQ(rp[1], 2u);
  EXPECT_EQ(ci[0], 0u);
  EXPECT_EQ(ci[1], 3u);
  EXPECT_EQ(static_cast<const double*>(vals)[1], 2.0);
  EXPECT_EQ(spt_csr_arrays(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr),
            SPT_ERR_INVALID_ARGUMENT);
  spt_csr_free(a);
  spt_coo_free(x);

  // Product of the other dims past 2^64: documented OVERFLOW.
  const spt_index big[] = {2147483648u, 2147483648u, 2147483648u, 2147483648u, 2147483648u};
  spt_coo* h = nullptr;
  ASSERT_EQ(spt_coo_create(nullptr, SPT_FLOAT32, 5, big, &h), SPT_OK);
  EXPECT_EQ(spt_unfold_csr(nullptr, h, 0, &a), SPT_ERR_OVERFLOW);
  EXPECT_TRUE(mentions("2^64")) << last();
  spt_coo_free(h);
}

TEST(KernelsApi, KhatriRaoKroneckerInner) {
  spt_matrix* a = mat(SPT_FLOAT64, 2, 2, {1, 2, 3, 4});
  spt_matrix* b = mat(SPT_FLOAT64, 3, 2, {5, 6, 7, 8, 9, 10}, SPT_COL_MAJOR);
  spt_matrix* b3 = mat(SPT_FLOAT64, 2, 3, {1, 2, 3, 4, 5, 6});
  spt_matrix* f32 = mat(SPT_FLOAT32, 3, 2, {5, 6, 7, 8, 9, 10});
  spt_matrix* out = nullptr;
  EXPECT_EQ(spt_khatri_rao(nullptr, a, b3, &out), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions("same number of columns")) << last();
  EXPECT_EQ(spt_khatri_rao(nullptr, a, f32, &out), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_khatri_rao(nullptr, a, nullptr, &out), SPT_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(spt_khatri_rao(nullptr, a, b, &out), SPT_OK);
  EXPECT_EQ(at(out, 4, 0), 21.0);  // row 1*3 + 1 = A(1,:) .* B(1,:)
  EXPECT_EQ(at(out, 4, 1), 32.0);
  spt_matrix_free(out);
  EXPECT_EQ(spt_kronecker(nullptr, a, f32, &out), SPT_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(spt_kronecker(nullptr, a, b3, &out), SPT_OK);
  EXPECT_EQ(spt_test::info_of(out).rows, 4u);
  EXPECT_EQ(spt_test::info_of(out).cols, 6u);
  EXPECT_EQ(at(out, 3, 5), 4.0 * 6.0);  // A(1,1) * B3(1,2)
  spt_matrix_free(out);

  // <X, K> with lambda = (1, 2), factors A, A, C (worked by hand: 1746).
  spt_coo* x = small_tensor();
  const spt_index dims[] = {2, 2, 2};
  spt_ktensor* k = nullptr;
  ASSERT_EQ(spt_ktensor_create(nullptr, SPT_FLOAT64, 3, dims, 2, &k), SPT_OK);
  void* lambda = nullptr;
  spt_ktensor_lambda(k, &lambda);
  static_cast<double*>(lambda)[1] = 2;
  const double fv[3][4] = {{1, 2, 3, 4}, {1, 2, 3, 4}, {5, 6, 7, 8}};
  for (uint32_t m = 0; m < 3; ++m) {
    spt_matrix* f = nullptr;
    spt_ktensor_factor(k, m, &f);
    void* d = nullptr;
    spt_matrix_data(f, &d);
    for (int e = 0; e < 4; ++e) static_cast<double*>(d)[e] = fv[m][e];
  }
  double ip = 0;
  ASSERT_EQ(spt_inner_ktensor(nullptr, x, k, &ip), SPT_OK);
  EXPECT_EQ(ip, 1746.0);
  spt_coo* x32 = small_tensor(SPT_FLOAT32);
  EXPECT_EQ(spt_inner_ktensor(nullptr, x32, k, &ip), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_inner_ktensor(nullptr, x, k, nullptr), SPT_ERR_INVALID_ARGUMENT);
  const spt_index other_dims[] = {2, 3, 2};
  spt_ktensor* k2 = nullptr;
  ASSERT_EQ(spt_ktensor_create(nullptr, SPT_FLOAT64, 3, other_dims, 2, &k2), SPT_OK);
  EXPECT_EQ(spt_inner_ktensor(nullptr, x, k2, &ip), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions("mode 1")) << last();
  spt_ktensor_free(k2);
  spt_ktensor_free(k);
  spt_coo_free(x32);
  spt_coo_free(x);
  for (spt_matrix* m : {a, b, b3, f32}) spt_matrix_free(m);
}

}  // namespace
