// Owning holders of the C API's handles for tests: std::unique_ptr with the
// handle's free function as its deleter, and a context on the CPU backend.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "sptensor/sptensor.h"

namespace spt::test {

// A std::unique_ptr deleter calling the C API's free function `Free`.
template <auto Free>
struct FreeWith {
  template <typename T>
  void operator()(T* p) const {
    Free(p);
  }
};

using ContextPtr = std::unique_ptr<spt_context, FreeWith<spt_context_free>>;
using CooPtr = std::unique_ptr<spt_coo, FreeWith<spt_coo_free>>;
using MatrixPtr = std::unique_ptr<spt_matrix, FreeWith<spt_matrix_free>>;
using KtensorPtr = std::unique_ptr<spt_ktensor, FreeWith<spt_ktensor_free>>;

// A new context on the CPU backend with `threads` threads.
inline ContextPtr cpu_context(int threads) {
  spt_context* c = nullptr;
  EXPECT_EQ(spt_context_create(&c), SPT_OK);
  EXPECT_EQ(spt_context_set_backend(c, SPT_BACKEND_CPU), SPT_OK);
  EXPECT_EQ(spt_context_set_threads(c, threads), SPT_OK);
  return ContextPtr(c);
}

}  // namespace spt::test
