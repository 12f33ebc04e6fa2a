// Reference (sequential, obviously correct) MTTKRP on a CSF tensor: walks
// the tree the CPU kernel would use, rebuilds each leaf's full coordinate
// from its path and adds value * product of the other modes' factor rows,
// exactly as the COO reference does per nonzero. Also the inner product
// with a Kruskal tensor, leaf by leaf as the COO reference.
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

// <x, [[lambda; factors]]>: each leaf's value times the Kruskal model at
// its coordinate, everything in double.
template <typename T>
struct InnerWalk {
  const CsfTree& tree;
  const T* lambda;
  const ConstMatRef<T>* factors;
  spt_index rank;
  std::vector<spt_index> coord;  // by mode
  double total = 0.0;

  void node(uint32_t level, spt_nnz n) {
    coord[tree.mode_order[level]] = tree.fids[level][n];
    if (level + 1 == tree.levels()) {
      double s = 0.0;
      for (spt_index r = 0; r < rank; ++r) {
        double p = lambda[r];
        for (uint32_t m = 0; m < coord.size(); ++m) p *= factors[m](coord[m], r);
        s += p;
      }
      total += static_cast<double>(tree.vals.get<T>()[n]) * s;
      return;
    }
    for (spt_nnz c = tree.fptr[level][n]; c < tree.fptr[level][n + 1]; ++c) node(level + 1, c);
  }
};

template <typename T>
double inner_csf_impl(const spt_csf_s& x, const T* lambda, const ConstMatRef<T>* factors, spt_index rank) {
  if (x.trees.empty()) return 0.0;
  const CsfTree& tree = x.trees[0];
  InnerWalk<T> walk{tree, lambda, factors, rank, std::vector<spt_index>(x.order())};
  for (spt_nnz s = 0; s < tree.nodes(0); ++s) walk.node(0, s);
  return walk.total;
}

}  // namespace

#define SPT_INSTANTIATE(T)                                                                             \
  void mttkrp_csf(const Exec&, const spt_csf_s& x, const ConstMatRef<T>* factors, uint32_t mode,      \
                  MatRef<T> out) {                                                                     \
    mttkrp_csf_impl<T>(x, factors, mode, out);                                                         \
  }                                                                                                    \
  double inner_ktensor_csf(const Exec&, const spt_csf_s& x, const T* lambda, const ConstMatRef<T>* factors, \
                           spt_index rank) {                                                           \
    return inner_csf_impl<T>(x, lambda, factors, rank);                                                \
  }

SPT_INSTANTIATE(float)
SPT_INSTANTIATE(double)
#undef SPT_INSTANTIATE

}  // namespace spt::kernels::reference
