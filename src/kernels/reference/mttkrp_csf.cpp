// Reference (sequential, obviously correct) MTTKRP on a CSF tensor: walks
// the tree the CPU kernel would use, rebuilds each leaf's full coordinate
// from its path and adds value * product of the other modes' factor rows,
// exactly as the COO reference does per nonzero.
#include <vector>

#include "kernels/kernels.hpp"

namespace spt::kernels::reference {

namespace {

template <typename T>
struct LeafWalk {
  const CsfTree& tree;
  const ConstMatRef<T>* factors;
  uint32_t mode;
  MatRef<T> out;
  std::vector<spt_index> coord;  // by mode
  std::vector<T> row;

  void node(uint32_t level, spt_nnz n) {
    coord[tree.mode_order[level]] = tree.fids[level][n];
    if (level + 1 == tree.levels()) {
      const spt_nnz rank = out.cols;
      for (spt_nnz r = 0; r < rank; ++r) row[r] = tree.vals.get<T>()[n];
      for (uint32_t m = 0; m < coord.size(); ++m) {
        if (m == mode) continue;
        const T* f = factors[m].row(coord[m]);
        for (spt_nnz r = 0; r < rank; ++r) row[r] *= f[r];
      }
      T* o = out.row(coord[mode]);
      for (spt_nnz r = 0; r < rank; ++r) o[r] += row[r];
      return;
    }
    for (spt_nnz c = tree.fptr[level][n]; c < tree.fptr[level][n + 1]; ++c) node(level + 1, c);
  }
};

template <typename T>
void mttkrp_csf_impl(const spt_csf_s& x, const ConstMatRef<T>* factors, uint32_t mode, MatRef<T> out) {
  for (spt_nnz i = 0; i < out.rows; ++i)
    for (spt_nnz r = 0; r < out.cols; ++r) out(i, r) = T(0);
  const CsfTree& tree = x.tree_for_mode(mode);
  LeafWalk<T> walk{tree, factors, mode, out, std::vector<spt_index>(x.order()), std::vector<T>(out.cols)};
  for (spt_nnz s = 0; s < tree.nodes(0); ++s) walk.node(0, s);
}

}  // namespace

#define SPT_INSTANTIATE(T)                                                                             \
  void mttkrp_csf(const Exec&, const spt_csf_s& x, const ConstMatRef<T>* factors, uint32_t mode,      \
                  MatRef<T> out) {                                                                     \
    mttkrp_csf_impl<T>(x, factors, mode, out);                                                         \
  }

SPT_INSTANTIATE(float)
SPT_INSTANTIATE(double)
#undef SPT_INSTANTIATE

}  // namespace spt::kernels::reference
