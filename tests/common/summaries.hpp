// The spt_X_info summaries of the core objects (COO, sCOO, matrix, ktensor,
// ttensor, dense tensor, permutation) for tests that only read a field:
// info_of(h) sets struct_size, calls spt_X_info and records a test failure
// unless it returns SPT_OK. Tests of the info functions themselves call them
// directly.
#pragma once

#include <gtest/gtest.h>

#include "sptensor/sptensor.h"

namespace spt_test {

namespace detail {

template <typename Summary, typename Handle>
Summary summary_of(spt_status (*info)(spt_context*, const Handle*, Summary*), const Handle* h, const char* what) {
  Summary s{};
  s.struct_size = sizeof s;
  const spt_status st = info(nullptr, h, &s);
  EXPECT_EQ(st, SPT_OK) << what << ": " << spt_thread_last_error();
  return s;
}

}  // namespace detail

inline spt_coo_summary info_of(const spt_coo* x) { return detail::summary_of(spt_coo_info, x, "spt_coo_info"); }
inline spt_scoo_summary info_of(const spt_scoo* y) { return detail::summary_of(spt_scoo_info, y, "spt_scoo_info"); }
inline spt_matrix_summary info_of(const spt_matrix* m) {
  return detail::summary_of(spt_matrix_info, m, "spt_matrix_info");
}
inline spt_ktensor_summary info_of(const spt_ktensor* k) {
  return detail::summary_of(spt_ktensor_info, k, "spt_ktensor_info");
}
inline spt_ttensor_summary info_of(const spt_ttensor* t) {
  return detail::summary_of(spt_ttensor_info, t, "spt_ttensor_info");
}
inline spt_dense_summary info_of(const spt_dense* t) {
  return detail::summary_of(spt_dense_info, t, "spt_dense_info");
}
inline spt_permutation_summary info_of(const spt_permutation* p) {
  return detail::summary_of(spt_permutation_info, p, "spt_permutation_info");
}

}  // namespace spt_test
