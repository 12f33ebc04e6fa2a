// How a parallel routine may execute: the thread count and, for the MTTKRP
// kernels, how they resolve write conflicts. Core's format builders and
// sorts take it as the kernels do; the dispatcher fills it from the context
// (dispatch::exec_for).
#pragma once

#include "sptensor/sptensor.h"

namespace spt {

// How the CPU MTTKRP resolves write conflicts on output rows. `automatic`
// picks: race-free row ranges when the tensor is sorted with `mode` first,
// else per-thread private outputs when they are small next to the work,
// else atomics. Forcing one is for tests and benchmarks (forcing
// sorted_rows on a tensor not sorted by the mode falls back to automatic).
enum class MttkrpStrategy { automatic, privatized, atomic, sorted_rows };

// Which build of the CPU kernels runs (kernels/cpu/variant.hpp): the one
// for any CPU of the architecture, or the x86-64-v3 one (AVX2, FMA, BMI2).
enum class CpuIsa { baseline, x86_64_v3 };

struct Exec {
  int threads = 1;
  MttkrpStrategy mttkrp_strategy = MttkrpStrategy::automatic;
  CpuIsa cpu_isa = CpuIsa::baseline;
};

// A tensor is the sum of its entries: entries that repeat a coordinate add
// up. The statistics of that summed tensor, whatever the storage holds.
struct SummedStats {
  double norm_squared = 0.0;  // squared Frobenius norm, accumulated in double
  spt_nnz distinct = 0;       // distinct coordinates (nnz minus the repeats)
};

}  // namespace spt
