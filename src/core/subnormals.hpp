// Float32 runs on the CPU with subnormal numbers flushed to zero.
//
// On x86 an operation on a subnormal float (|x| < 2^-126) takes a micro-code
// assist of about a hundred cycles. Factor entries of a CP model that decay
// towards zero over the sweeps (rows of power-law tensors with few nonzeros)
// reach that range in float32 and make every later MTTKRP and solve touching
// them several times slower (fb15k237, rank 16: 3.8x per iteration). While a
// ScopedFlushSubnormals lives, the calling thread and the OpenMP threads of
// its team flush subnormal results to zero and read subnormal inputs as zero
// (MXCSR FTZ and DAZ); each thread's previous mode is restored afterwards,
// also in pool threads created meanwhile, so no caller code runs with it. A
// value changes by less than 2^-126 where a subnormal would have been;
// float64 runs are not affected (they never use it). No-op off x86.
#pragma once

#include <thread>
#include <utility>
#include <vector>

#include "util/internal_api.hpp"

namespace spt {

class SPT_INTERNAL_API ScopedFlushSubnormals {
 public:
  // `threads`: the most OpenMP threads any region of the run uses.
  explicit ScopedFlushSubnormals(int threads);
  ~ScopedFlushSubnormals();
  ScopedFlushSubnormals(const ScopedFlushSubnormals&) = delete;
  ScopedFlushSubnormals& operator=(const ScopedFlushSubnormals&) = delete;

 private:
  int threads_ = 1;
  unsigned caller_mode_ = 0;                                   // the calling thread's FTZ/DAZ bits
  std::vector<std::pair<std::thread::id, unsigned>> saved_;    // per team thread: its control word
};

}  // namespace spt
