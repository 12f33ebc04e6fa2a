// Which GPU format a mode's MTTKRP runs on when the caller leaves the
// choice to the library (spt_mttkrp on a COO tensor under the CUDA backend,
// CP-ALS with format AUTO on the GPU), and F-COO's partition length there.
//
// The model, fitted on measurements of every format on every bundled
// tensor-mode at ranks 16 and 32, float32 (the table and the numbers:
// docs/formats/gpu-format-choice.md):
//
//  * COO (atomics into the output, a copy sorted by the mode) wins when the
//    mode's slices are small: few nonzeros per output row collide.
//  * F-COO (segmented scan, one write per segment) wins when the slices are
//    large: COO's atomics then pile onto few rows. Its margin grows with the
//    mean nonzeros per non-empty slice and vanishes below about a thousand,
//    hence the threshold of 800.
//  * With output rows of at most 64 bytes (rank 16 float32), F-COO also won
//    on large tensors with moderate slices; at rank 32 COO kept up there.
//  * HiCOO was never the fastest on the GPU: never picked.
//  * HB-CSF (by leaf chunks, leaf rows loaded ahead) beat F-COO only on an
//    order-4 mode with a handful of slices, where every F-COO warp's
//    boundary add lands on a few rows while HB-CSF sums each slice's fibers
//    in registers; it lost on modes with a few dozen slices, on order 3 and
//    on small tensors. A narrow rule, fitted on one tensor. CP-ALS (the
//    mixed-format sweep has no HB-CSF path) runs such a mode on F-COO.
//
// Rule: COO below kGpuFcooMinNnz nonzeros (both run in a few microseconds
// and COO needs no conversion); else F-COO when nnz / (non-empty slices of
// the mode) >= kGpuFcooMinMeanSlice, or when rows are at most
// kGpuSmallRowBytes, nnz >= kGpuFcooLargeNnz and the mean slice >=
// kGpuFcooLargeMinMeanSlice; else COO. A mode given to F-COO goes to
// HB-CSF instead when the order is at least kGpuHbcsfMinOrder, rows have at
// least kGpuHbcsfMinRowBytes, the mode has at most kGpuHbcsfMaxSlices
// non-empty slices and the tensor at least kGpuHbcsfMinNnz nonzeros. F-COO's
// threadlen is fcoo::suggested_threadlen with the mode's slice count.
#pragma once

#include <cstdint>
#include <vector>

#include "core/context.hpp"
#include "core/coo.hpp"

namespace spt::dispatch {

constexpr spt_nnz kGpuFcooMinNnz = 32768;
constexpr double kGpuFcooMinMeanSlice = 800.0;
constexpr uint64_t kGpuSmallRowBytes = 64;
constexpr spt_nnz kGpuFcooLargeNnz = spt_nnz(1) << 21;
constexpr double kGpuFcooLargeMinMeanSlice = 100.0;
constexpr uint32_t kGpuHbcsfMinOrder = 4;
constexpr uint64_t kGpuHbcsfMinRowBytes = 128;
constexpr spt_nnz kGpuHbcsfMaxSlices = 16;
constexpr spt_nnz kGpuHbcsfMinNnz = spt_nnz(1) << 17;

enum class GpuMttkrpFormat { coo, fcoo, hbcsf };

const char* gpu_mttkrp_format_name(GpuMttkrpFormat f);

// The format rule above for one mode of an order-`order` tensor; row_bytes =
// rank x value size.
GpuMttkrpFormat gpu_mttkrp_format(spt_nnz nnz, spt_nnz nonempty_slices, uint64_t row_bytes, uint32_t order);

// One mode's choice: the format and, for F-COO, its threadlen.
struct GpuMttkrpChoice {
  GpuMttkrpFormat format = GpuMttkrpFormat::coo;
  uint32_t fcoo_threadlen = 8;
  bool operator==(const GpuMttkrpChoice& o) const {
    return format == o.format && fcoo_threadlen == o.fcoo_threadlen;
  }
};

// The per-mode choice for x from its slice counts (distinct_indices_per_mode;
// may be empty below kGpuFcooMinNnz nonzeros), for output rows of
// `row_bytes` on a GPU with `multiprocessors` SMs (0 = 132). A caller who
// wants another format builds its handle (spt_fcoo_from_coo,
// spt_hbcsf_from_coo) or sets spt_cpd_options.format.
std::vector<GpuMttkrpChoice> gpu_mttkrp_choices(const spt_coo_s& x, const std::vector<spt_nnz>& nonempty_slices,
                                                uint64_t row_bytes, int multiprocessors);

}  // namespace spt::dispatch
