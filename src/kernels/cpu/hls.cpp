// CPU (OpenMP) HLS MTTKRP and TTMc in the handle's root mode (layout:
// src/core/hls.hpp), the executable specification of the tensor-core
// kernels: the dense part is computed the paper's way, one 16 x 16 slice
// X(i,:,:) of a (sub-)tile at a time, as matrix products,
//   TTMc:   Y(i,:,:) += B_t^T (X(i,:,:) C_t)      (B_t, C_t: the tile's 16-row
//                                                 blocks of the level-1 and
//                                                 level-2 factors; order 4
//                                                 scales by the slab's row of
//                                                 the level-3 factor)
//   MTTKRP: out(i,:) += the diagonal of the same product, sum_j B_t(j,:) *
//           (X(i,:,:) C_t)(j,:) (order 4: C_t rows times the level-3 row).
// The sparse part is one nonzero at a time.
//
// Tasks and write conflicts: phase 1 runs one task per root group (all dense
// tiles of one root tile: 16 output rows that no other task writes), phase
// 2 one task per sparse output row, after a barrier. No atomics; every
// output element is summed in the same order whatever the thread count
// (dense tiles in order, then sparse nonzeros in order), so results are
// bitwise independent of it. Sums are kept in double (a root group's 16
// rows, a sparse row, the X(i,:,:) C_t products) and rounded to T once per
// phase, so float32 results carry at most two roundings per output element.
// All scratch is allocated before the parallel region.
#include <omp.h>

#include <algorithm>
#include <vector>

#include "core/error.hpp"
#include "kernels/kernels.hpp"
#include "kernels/cpu/variant.hpp"

SPT_CPU_VARIANT_TARGET
namespace spt::kernels::SPT_CPU_VARIANT {

namespace {

// Below this many nonzeros per thread the fork costs more than it saves.
constexpr spt_nnz kMinNnzPerThread = 2048;

template <typename T>
void hls_impl(const Exec& exec, const spt_hls_s& h, const ConstMatRef<T>* factors, MatRef<T> out, bool ttmc) {
  const uint32_t order = h.order();
  const uint32_t root = h.root();
  const char* what = ttmc ? "TTMc" : "MTTKRP";
  require(out.rows == h.dims[root], "HLS ", what, " output has ", out.rows, " rows, expected dims[", root,
          "] = ", h.dims[root]);
  // Factor and column count of each level (level 0 is the output).
  ConstMatRef<T> F[4];
  spt_nnz R[4] = {0, 1, 1, 1};
  spt_nnz maxR = 1;
  uint64_t columns = 1;
  for (uint32_t l = 1; l < order; ++l) {
    const uint32_t m = h.modes[l];
    F[l] = factors[m];
    require(F[l].rows == h.dims[m], "factor ", m, " has ", F[l].rows, " rows, expected ", h.dims[m]);
    R[l] = F[l].cols;
    require(R[l] >= 1, "factor ", m, " has no columns");
    if (!ttmc) require(R[l] == out.cols, "factor ", m, " has ", R[l], " columns, expected R = ", out.cols);
    maxR = std::max(maxR, R[l]);
    columns = checked_mul(columns, R[l], "the TTMc column count");
  }
  if (ttmc) require(out.cols == columns, "HLS TTMc output has ", out.cols, " columns, expected ", columns);
  else require(out.cols >= 1, "MTTKRP output needs at least one column");
  const spt_nnz RO = out.cols;
  const spt_nnz R1 = R[1], R2 = R[2], R3 = order == 4 ? R[3] : 1;

  const int threads = static_cast<int>(
      std::max<spt_nnz>(1, std::min<spt_nnz>(spt_nnz(std::max(exec.threads, 1)), h.nnz() / kMinNnzPerThread)));
  // Per thread: X slice (256), C block (16 x maxR), one product row (maxR).
  const size_t stride = 256 + 17 * size_t(maxR);
  std::vector<T> scratch(checked_mul(uint64_t(threads), stride, "HLS kernel scratch"));
  // Per thread, double sums: a root group's 16 rows, one sparse row, one product row.
  const size_t wide_stride = checked_mul(17, uint64_t(RO), "HLS kernel sums") + size_t(maxR);
  std::vector<double> wide(checked_mul(uint64_t(threads), wide_stride, "HLS kernel sums"));

  const uint32_t W = h.words_per_tile();
  const uint32_t D = h.slab_depth;
  const T* dval = h.d_val.get<T>().data();
  const T* sval = h.s_val.get<T>().data();
  const int64_t groups = int64_t(h.d_root_tile.size());
  const int64_t srows = int64_t(h.s_row.size());
  // Packed-index decoding of the sparse part.
  uint32_t below[4] = {0, 0, 0, 0};
  uint64_t mask[4] = {0, 0, 0, 0};
  for (uint32_t l = 0; l < order; ++l) {
    for (uint32_t k = l + 1; k < order; ++k) below[l] += h.bits[k];
    mask[l] = h.bits[l] == 0 ? 0 : (~uint64_t(0) >> (64 - h.bits[l]));
  }
  const spt_index dim1 = h.dims[h.modes[1]], dim2 = h.dims[h.modes[2]];
  const spt_index dim0 = h.dims[root];

#pragma omp parallel num_threads(threads)
  {
    T* X = scratch.data() + size_t(omp_get_thread_num()) * stride;
    T* CB = X + 256;        // 16 x maxR (row k at k * maxR)
    double* group = wide.data() + size_t(omp_get_thread_num()) * wide_stride;  // 16 x RO
    double* srow = group + 16 * RO;                                                // RO
    double* xc = srow + RO;                                                        // maxR

#pragma omp for schedule(static)
    for (int64_t i = 0; i < int64_t(out.rows); ++i) std::fill(out.row(i), out.row(i) + RO, T(0));
    // (implicit barrier)

    // Phase 1: dense part, one root group (16 output rows) per task.
#pragma omp for schedule(dynamic, 1)
    for (int64_t g = 0; g < groups; ++g) {
      const uint32_t r0 = h.d_root_tile[g] << 4;
      const uint32_t in = std::min<uint32_t>(16, dim0 - r0);
      std::fill(group, group + size_t(in) * RO, 0.0);
      for (uint64_t d = h.d_root_ptr[g]; d < h.d_root_ptr[g + 1]; ++d) {
        const uint32_t b1 = h.unpack_tile(h.d_tile[d], 1) << 4;
        const uint32_t b2 = h.unpack_tile(h.d_tile[d], 2) << 4;
        const uint32_t b3 = order == 4 ? h.unpack_tile(h.d_tile[d], 3) << h.shift[3] : 0;
        const uint32_t jn = std::min<uint32_t>(16, dim1 - b1), kn = std::min<uint32_t>(16, dim2 - b2);
        const uint64_t* bm = h.d_bitmap.data() + d * W;
        const T* v = dval + h.d_val_ptr[d];
        for (uint32_t s = 0; s < D; ++s) {
          const uint64_t* sb = bm + s * hls::kWordsPerSubtile;
          bool any = false;
          for (uint32_t w = 0; w < hls::kWordsPerSubtile && !any; ++w) any = sb[w] != 0;
          if (!any) continue;
          const T* frow = order == 4 ? F[3].row(b3 + s) : nullptr;  // the slab's level-3 factor row
          // C block: the level-2 rows of the tile (MTTKRP: times the level-3 row).
          const spt_nnz cw = ttmc ? R2 : RO;
          for (uint32_t k = 0; k < kn; ++k) {
            const T* c = F[2].row(b2 + k);
            T* cb = CB + size_t(k) * maxR;
            if (!ttmc && frow)
              for (spt_nnz r = 0; r < cw; ++r) cb[r] = c[r] * frow[r];
            else
              std::copy(c, c + cw, cb);
          }
          for (uint32_t i = 0; i < in; ++i) {
            const uint64_t* ws = sb + 4 * i;  // the 256 cells of slice i
            if ((ws[0] | ws[1] | ws[2] | ws[3]) == 0) continue;
            std::fill(X, X + 256, T(0));
            for (uint32_t w = 0; w < 4; ++w)
              for (uint64_t word = ws[w]; word; word &= word - 1) X[w * 64 + uint32_t(__builtin_ctzll(word))] = *v++;
            double* o = group + size_t(i) * RO;
            for (uint32_t j = 0; j < jn; ++j) {
              if (((ws[j / 4] >> (16 * (j % 4))) & 0xffffu) == 0) continue;
              // xc = (X(i,:,:) C_t)(j,:)
              std::fill(xc, xc + cw, 0.0);
              const T* xr = X + 16 * j;
              for (uint32_t k = 0; k < kn; ++k) {
                const T x = xr[k];
                if (x == T(0)) continue;
                const T* cb = CB + size_t(k) * maxR;
                for (spt_nnz r = 0; r < cw; ++r) xc[r] += x * cb[r];
              }
              const T* brow = F[1].row(b1 + j);
              if (!ttmc) {
                for (spt_nnz r = 0; r < RO; ++r) o[r] += brow[r] * xc[r];
              } else {
                // Y(i,:,:) += B_t(j,:)^T xc (times the level-3 row for order 4).
                for (spt_nnz c = 0; c < R3; ++c) {
                  const T dc = frow ? frow[c] : T(1);
                  for (spt_nnz b = 0; b < R2; ++b) {
                    const double wgt = xc[b] * dc;
                    if (wgt == 0.0) continue;
                    double* y = o + R1 * (b + R2 * c);
                    for (spt_nnz a = 0; a < R1; ++a) y[a] += brow[a] * wgt;
                  }
                }
              }
            }
          }
        }
      }
      for (uint32_t i = 0; i < in; ++i) {
        T* o = out.row(r0 + i);
        for (spt_nnz q = 0; q < RO; ++q) o[q] = static_cast<T>(group[size_t(i) * RO + q]);
      }
    }
    // (implicit barrier: the dense phase wrote its rows)

    // Phase 2: sparse part, one output row per task.
#pragma omp for schedule(dynamic, 16)
    for (int64_t r = 0; r < srows; ++r) {
      double* o = srow;
      std::fill(o, o + RO, 0.0);
      for (uint64_t z = h.s_row_ptr[r]; z < h.s_row_ptr[r + 1]; ++z) {
        const uint64_t p = h.s_ind[z];
        const T v = sval[z];
        const T* f1 = F[1].row((p >> below[1]) & mask[1]);
        const T* f2 = F[2].row((p >> below[2]) & mask[2]);
        const T* f3 = order == 4 ? F[3].row((p >> below[3]) & mask[3]) : nullptr;
        if (!ttmc) {
          if (f3)
            for (spt_nnz q = 0; q < RO; ++q) o[q] += v * f1[q] * f2[q] * f3[q];
          else
            for (spt_nnz q = 0; q < RO; ++q) o[q] += v * f1[q] * f2[q];
        } else {
          for (spt_nnz c = 0; c < R3; ++c) {
            const T vc = f3 ? v * f3[c] : v;
            for (spt_nnz b = 0; b < R2; ++b) {
              const T wgt = vc * f2[b];
              double* y = o + R1 * (b + R2 * c);
              for (spt_nnz a = 0; a < R1; ++a) y[a] += f1[a] * wgt;
            }
          }
        }
      }
      T* dst = out.row(h.s_row[r]);
      for (spt_nnz q = 0; q < RO; ++q) dst[q] = static_cast<T>(static_cast<double>(dst[q]) + o[q]);
    }
  }
}

}  // namespace

void mttkrp_hls(const Exec& exec, const spt_hls_s& h, const ConstMatRef<float>* factors, MatRef<float> out) {
  hls_impl(exec, h, factors, out, false);
}
void mttkrp_hls(const Exec& exec, const spt_hls_s& h, const ConstMatRef<double>* factors, MatRef<double> out) {
  hls_impl(exec, h, factors, out, false);
}
void ttmc_hls(const Exec& exec, const spt_hls_s& h, const ConstMatRef<float>* factors, MatRef<float> out) {
  hls_impl(exec, h, factors, out, true);
}
void ttmc_hls(const Exec& exec, const spt_hls_s& h, const ConstMatRef<double>* factors, MatRef<double> out) {
  hls_impl(exec, h, factors, out, true);
}

}  // namespace spt::kernels::SPT_CPU_VARIANT
