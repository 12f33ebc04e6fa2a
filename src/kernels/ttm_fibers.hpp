// The fibers a sparse TTM (x times_mode U^T) reduces and the groups a
// semi-sparse TTM (SsTTM) reduces, with the shells of their semi-sparse
// results, shared by the CPU kernels (src/kernels/cpu/ttm.cpp,
// ttm_chain.cpp) and the GPU path (src/dispatch/device_ttm.cpp) so that
// both produce the same fibers in the same order.
#pragma once

#include <memory>
#include <vector>

#include "core/buffer.hpp"
#include "core/coo.hpp"
#include "core/scoo.hpp"
#include "kernels/kernels.hpp"
#include "core/sort.hpp"
#include "kernels/ttm_chain.hpp"

namespace spt::kernels {

// x's mode-`mode` fibers: x itself when it is sorted with `mode` last
// (grouped in place), else a sorted copy (the other modes ascending, then
// `mode`).
class TtmFibers {
 public:
  TtmFibers(const Exec& exec, const spt_coo_s& x, uint32_t mode);
  const spt_coo_s& sorted() const { return grouped_ ? grouped_->sorted() : x_; }
  const buffer<spt_nnz>& starts() const { return grouped_ ? grouped_->starts() : own_starts_; }
  const std::vector<uint32_t>& others() const { return others_; }
  spt_nnz count() const { return starts().size() - 1; }

 private:
  const spt_coo_s& x_;
  std::unique_ptr<sorting::ModeFibers> grouped_;
  std::vector<uint32_t> others_;
  buffer<spt_nnz> own_starts_;
};

// out = the semi-sparse shell of x times_mode U^T with `rank` columns: dims
// (dims[mode] = rank), one dense mode, the fiber order, each fiber's
// coordinates; values sized (fibers x rank) in x's dtype but not set.
void ttm_result_shell(const Exec& exec, const TtmFibers& fibers, const spt_coo_s& x, uint32_t mode, spt_nnz rank,
                      spt_scoo_s& out);

// The groups of an SsTTM of y in `mode`: fibers sharing every sparse
// coordinate but `mode`'s, in y's fiber order when y is sorted that way
// (fiber_order ends with `mode`), else in a stable sort by the other sparse
// modes ascending, then `mode`.
struct ScooTtmGroups {
  std::vector<uint32_t> key;  // the group key: the output's fiber order
  buffer<spt_nnz> perm;       // the fiber order (empty: y's own)
  buffer<spt_nnz> starts;     // groups + 1 positions in that order
  spt_nnz fiber(spt_nnz k) const { return perm.empty() ? k : perm[k]; }
  spt_nnz count() const { return starts.size() - 1; }
};
ScooTtmGroups scoo_ttm_groups(const Exec& exec, const spt_scoo_s& y, uint32_t mode);

// out = the semi-sparse shell of the SsTTM: dims and dense modes of
// `shape`, the fiber order, each group's coordinates; values sized
// (groups x shape.out_block) in y's dtype but not set.
void scoo_ttm_result_shell(const Exec& exec, const ScooTtmGroups& groups, const spt_scoo_s& y,
                           const ScooTtmShape& shape, spt_scoo_s& out);

}  // namespace spt::kernels
