// libFuzzer target: format conversions from fuzzed coordinates.
// Input layout: byte 0 = order (2..5), byte 1 = HiCOO block-size exponent,
// byte 2 = CSF policy; then per nonzero `order` indices of 1 byte (dims
// up to 256 keep blocks interesting) and a 1-byte value. Checks:
// COO -> HiCOO -> COO gives the same multiset of (coordinate, value);
// MTTKRP on CSF and HiCOO equals MTTKRP on the COO (to rounding);
// the sorted/coalesced COO has no repeated coordinate.
#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

#include "fuzz_common.hpp"

namespace {

using Entry = std::pair<std::vector<spt_index>, double>;

std::vector<Entry> entries(const spt_coo* x) {
  spt_coo_summary info;
  info.struct_size = sizeof info;
  spt_coo_info(nullptr, x, &info);
  const uint32_t order = info.order;
  const spt_nnz nnz = info.nnz;
  std::vector<const spt_index*> ind(order);
  for (uint32_t m = 0; m < order; ++m) spt_coo_indices(x, m, &ind[m]);
  const void* v = nullptr;
  spt_coo_values(x, &v);
  std::vector<Entry> e(nnz);
  for (spt_nnz k = 0; k < nnz; ++k) {
    for (uint32_t m = 0; m < order; ++m) e[k].first.push_back(ind[m][k]);
    e[k].second = static_cast<const double*>(v)[k];
  }
  std::sort(e.begin(), e.end());
  return e;
}

std::vector<double> mttkrp_values(spt_matrix* out) {
  spt_matrix_summary info;
  info.struct_size = sizeof info;
  spt_matrix_info(nullptr, out, &info);
  const spt_nnz rows = info.rows, cols = info.cols;
  std::vector<double> v(rows * cols);
  spt_matrix_copy_out(out, SPT_ROW_MAJOR, v.data(), cols);
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spt_fuzz;
  if (size < 3) return 0;
  spt_context* ctx = context();
  const uint32_t order = 2 + data[0] % 4;
  const uint32_t block = 2u << (data[1] % 8);  // 2 .. 256
  const spt_csf_policy policy = static_cast<spt_csf_policy>(data[2] % 4);
  data += 3;
  size -= 3;
  const spt_nnz nnz = size / (order + 1);
  if (nnz == 0) return 0;
  std::vector<spt_index> ind(order * nnz);
  std::vector<double> val(nnz);
  for (spt_nnz k = 0; k < nnz; ++k) {
    const uint8_t* p = data + k * (order + 1);
    for (uint32_t m = 0; m < order; ++m) ind[m * nnz + k] = p[m];
    val[k] = static_cast<double>(static_cast<int8_t>(p[order])) / 8.0;
  }
  spt_coo* x = nullptr;
  spt_status s =
      spt_coo_create_from_arrays(ctx, SPT_FLOAT64, order, nullptr, nnz, ind.data(), nnz, 0, val.data(), 0, &x);
  FUZZ_CHECK(s == SPT_OK);
  const std::vector<Entry> want = entries(x);
  std::vector<spt_index> dims(order);
  spt_coo_dims(x, dims.data());

  // HiCOO round trip.
  spt_hicoo_options ho;
  spt_hicoo_options_init(&ho);
  ho.block_size = block;
  spt_hicoo* h = nullptr;
  s = spt_hicoo_from_coo(ctx, x, &ho, &h);
  check_status(s);
  FUZZ_CHECK(s == SPT_OK);
  spt_coo* back = nullptr;
  FUZZ_CHECK(spt_hicoo_to_coo(ctx, h, &back) == SPT_OK);
  FUZZ_CHECK(entries(back) == want);
  spt_coo_free(back);

  // CSF, then MTTKRP on all three formats for every mode.
  spt_csf* c = nullptr;
  spt_csf_options csf_opts;
  spt_csf_options_init(&csf_opts);
  csf_opts.policy = policy;
  s = spt_csf_from_coo(ctx, x, &csf_opts, &c);
  FUZZ_CHECK(s == SPT_OK);
  const spt_index rank = 2;
  std::vector<spt_matrix*> f(order);
  for (uint32_t m = 0; m < order; ++m) {
    std::vector<double> v(static_cast<size_t>(dims[m]) * rank);
    for (size_t i = 0; i < v.size(); ++i) v[i] = 1.0 + static_cast<double>((i * 7 + m) % 5) / 4.0;
    spt_matrix_create_copy(ctx, SPT_FLOAT64, dims[m], rank, SPT_ROW_MAJOR, v.data(), rank, &f[m]);
  }
  for (uint32_t mode = 0; mode < order; ++mode) {
    spt_matrix* out = nullptr;
    spt_matrix_create(ctx, SPT_FLOAT64, dims[mode], rank, SPT_ROW_MAJOR, &out);
    FUZZ_CHECK(spt_mttkrp(ctx, x, f.data(), mode, out) == SPT_OK);
    std::vector<double> ref = mttkrp_values(out);
    FUZZ_CHECK(spt_mttkrp_csf(ctx, c, f.data(), mode, out) == SPT_OK);
    std::vector<double> got_csf = mttkrp_values(out);
    FUZZ_CHECK(spt_mttkrp_hicoo(ctx, h, f.data(), mode, out) == SPT_OK);
    std::vector<double> got_hicoo = mttkrp_values(out);
    for (size_t i = 0; i < ref.size(); ++i) {
      const double tol = 1e-9 * std::max(1.0, std::abs(ref[i]));
      FUZZ_CHECK(std::abs(ref[i] - got_csf[i]) <= tol);
      FUZZ_CHECK(std::abs(ref[i] - got_hicoo[i]) <= tol);
    }
    spt_matrix_free(out);
  }
  for (spt_matrix* m : f) spt_matrix_free(m);
  spt_csf_free(c);
  spt_hicoo_free(h);

  // Coalescing leaves no repeated coordinate.
  FUZZ_CHECK(spt_coo_coalesce(ctx, x, SPT_DUPLICATES_SUM) == SPT_OK);
  std::vector<Entry> merged = entries(x);
  for (size_t k = 1; k < merged.size(); ++k) FUZZ_CHECK(merged[k - 1].first != merged[k].first);
  spt_coo_free(x);
  return 0;
}
