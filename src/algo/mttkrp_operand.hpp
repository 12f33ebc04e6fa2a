// The view of a sparse tensor that CP-ALS needs: an MTTKRP in each mode.
// Each storage format (COO, CSF, HiCOO, ...) provides one implementation, so
// the CP-ALS driver stays format-neutral.
#pragma once

#include <cstdint>
#include <optional>

#include "core/context.hpp"
#include "core/matrix.hpp"

namespace spt::algo {
// A sparse tensor in some storage format, as CP-ALS sees it: it only needs
// the MTTKRP in each mode. Implementations own (or reference) their format.
template <typename T>
class MttkrpOperand {
 public:
  virtual ~MttkrpOperand() = default;
  // out (dims[mode] x rank, row-major) = MTTKRP of the tensor with `factors` in `mode`.
  virtual void mttkrp(spt_context_s& ctx, const ConstMatRef<T>* factors, uint32_t mode, MatRef<T> out) = 0;
  // Short name for logs and benchmarks, e.g. "coo", "csf-allmode", "hicoo".
  virtual const char* name() const = 0;
  // The tensor's squared norm and distinct coordinates, repeats summed,
  // when the format has them at a pass's cost (repeats adjacent, as in a
  // CSF tree); else nullopt (sorting::summed_stats on the source then).
  virtual std::optional<SummedStats> summed_stats(const Exec&) const { return std::nullopt; }
};
}  // namespace spt::algo
