// See subnormals.hpp.
#include "core/subnormals.hpp"

#include <omp.h>

#include <algorithm>

#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#define SPT_HAVE_MXCSR 1
#endif

namespace spt {

namespace {

#if defined(SPT_HAVE_MXCSR)
constexpr unsigned kFlushBits = 0x8000u | 0x0040u;  // FTZ | DAZ
unsigned read_mode() { return _mm_getcsr(); }
void write_mode(unsigned mode) { _mm_setcsr(mode); }
#endif

}  // namespace

// The calling thread's mode is set outside any parallel region: LLVM's
// OpenMP runtime gives workers the master's floating-point control words at
// each fork and puts the master's back at each join, so a setting made on
// the master inside a region does not last. GCC's runtime propagates
// nothing, so the team's threads are also set inside a region, before the
// master's: a pool thread created there inherits the master's original mode
// and saves that.
ScopedFlushSubnormals::ScopedFlushSubnormals(int threads) : threads_(std::max(1, threads)) {
#if defined(SPT_HAVE_MXCSR)
  const unsigned caller = read_mode();
  caller_mode_ = caller & kFlushBits;
  saved_.assign(static_cast<size_t>(threads_), {std::thread::id(), 0u});
#pragma omp parallel num_threads(threads_)
  {
    const int t = omp_get_thread_num();
    if (t < threads_) {
      const unsigned mode = read_mode();
      saved_[static_cast<size_t>(t)] = {std::this_thread::get_id(), t == 0 ? caller : mode};
      write_mode(mode | kFlushBits);
    }
  }
  write_mode(caller | kFlushBits);
#endif
}

ScopedFlushSubnormals::~ScopedFlushSubnormals() {
#if defined(SPT_HAVE_MXCSR)
  const std::thread::id caller = std::this_thread::get_id();
  unsigned caller_saved = 0;
  bool caller_found = false;
  for (const auto& s : saved_)
    if (s.first == caller) {
      caller_saved = s.second;
      caller_found = true;
    }
#pragma omp parallel num_threads(threads_)
  {
    // A thread's own saved mode; a thread the constructor did not see (a
    // pool thread created since, which may have inherited the flushing
    // mode) gets the caller's original bits.
    const std::thread::id me = std::this_thread::get_id();
    const auto it = std::find_if(saved_.begin(), saved_.end(), [&](const auto& s) { return s.first == me; });
    const unsigned mode = read_mode();
    write_mode(it != saved_.end() ? it->second : (mode & ~kFlushBits) | caller_mode_);
  }
  // The caller last, outside the region (see the constructor).
  const unsigned mode = read_mode();
  write_mode(caller_found ? caller_saved : (mode & ~kFlushBits) | caller_mode_);
#endif
}

}  // namespace spt
