// An exception must not leave an OpenMP parallel region: the runtime then
// calls std::terminate, killing the caller's process (found by the
// allocation-failure test: a std::bad_alloc from a per-thread buffer).
// Region bodies that may throw (they allocate, or validate) run inside
// ParallelErrors::run; after the region, rethrow() throws the first
// exception caught, on the calling thread, where the C API guard maps it to
// a status code.
//
//   ParallelErrors errors;
//   #pragma omp parallel for
//   for (int c = 0; c < chunks; ++c) errors.run([&] { ... });
//   errors.rethrow();
#pragma once

#include <exception>

namespace spt {

class ParallelErrors {
 public:
  template <typename Body>
  void run(Body&& body) noexcept {
    try {
      body();
    } catch (...) {
      capture();
    }
  }

  // Throws the first captured exception, if any (call after the region).
  void rethrow() const {
    if (first_) std::rethrow_exception(first_);
  }

 private:
  void capture() noexcept {
#pragma omp critical(spt_parallel_errors)
    if (!first_) first_ = std::current_exception();
  }

  std::exception_ptr first_;
};

}  // namespace spt
