// Which GPU format a mode's MTTKRP runs on when the caller leaves the
// choice to the library (spt_mttkrp on a COO tensor under the CUDA backend,
// CP-ALS with format AUTO on the GPU).
//
// The model, from the H100 measurements of every format on every bundled
// tensor-mode at ranks 16 and 32 (benchmarks/results/gpu-h100-formats-all-*,
// gpu-h100-hbcsf-*; docs/formats/gpu-format-choice.md has the table):
//
//  * COO (atomics into the output, a copy sorted by the mode) wins when the
//    mode's slices are small: few nonzeros per output row collide.
//  * F-COO (segmented scan, one write per segment) wins when the slices are
//    large: COO's atomics then pile onto few rows. Its margin grew with the
//    mean nonzeros per non-empty slice (2-9x at 60,000-100,000: coads,
//    flights, wordnet's relation mode) and vanished below a few hundred.
//  * HiCOO was never the fastest on the GPU (within 10% of the best on 1 of
//    130 tensor-modes); HB-CSF (by leaf chunks) was the fastest on 2 of 124
//    (coads' short modes at rank 32, 1.3x ahead of F-COO), too few for a
//    rule, so the model picks neither; they run when the caller asks.
//
// Rule: F-COO when nnz >= kGpuFcooMinNnz and nnz / (non-empty slices of the
// mode) >= kGpuFcooMinMeanSlice, else COO. Below kGpuFcooMinNnz both run in
// a few microseconds and COO needs no conversion.
#pragma once

#include <vector>

#include "core/context.hpp"
#include "core/coo.hpp"

namespace spt::dispatch {

constexpr spt_nnz kGpuFcooMinNnz = 32768;
constexpr double kGpuFcooMinMeanSlice = 500.0;

enum class GpuMttkrpFormat { coo, fcoo };

const char* gpu_mttkrp_format_name(GpuMttkrpFormat f);

// The rule above for one mode (rank is not used yet: measured at 16 and 32,
// where the same threshold held).
GpuMttkrpFormat gpu_mttkrp_format(spt_nnz nnz, spt_nnz nonempty_slices, spt_index rank);

// Non-empty slices of every mode (one pass over the indices per mode, on
// `threads` threads).
std::vector<spt_nnz> nonempty_slices_per_mode(const spt_coo_s& x, int threads);

// The per-mode choice for x, with env SPT_CUDA_MTTKRP_FORMAT = coo | fcoo |
// auto (unset/empty/other = auto) forcing one format for every mode.
std::vector<GpuMttkrpFormat> gpu_mttkrp_formats(const spt_coo_s& x, spt_index rank, int threads);

}  // namespace spt::dispatch
