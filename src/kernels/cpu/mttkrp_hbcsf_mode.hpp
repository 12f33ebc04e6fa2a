// CPU (OpenMP) B-CSF / HB-CSF MTTKRP in any mode of one tree: the host
// counterpart of launch_mttkrp_hbcsf_nonroot (cuda/mttkrp_hbcsf.cu), same
// tasks and the same tree walk, so that "one tree plus a second kernel for
// the non-root modes" can be checked without a GPU and run where the GPU
// kernel cannot (orders above 8, no device); spt_mttkrp_hbcsf runs it for a non-root mode.
#pragma once

#include <cstdint>

#include "core/hbcsf.hpp"
#include "core/matrix.hpp"
#include "kernels/kernels.hpp"

namespace spt::kernels::cpu {

// out (dims[mode] x rank, overwritten) = the MTTKRP of h in `mode`, any
// mode < h.order(); factors by mode (factors[mode] not read; the root's
// factor is read for a non-root mode). The root mode runs
// kernels::cpu::mttkrp_hbcsf. A non-root mode at level l >= 1 adds, per
// nonzero, val * the product of the factor rows of every other level into
// out(i_l, :) with atomic adds (rows are shared by many slices), so its
// result depends on the summation order in the last bits. Uses exec.threads
// threads. Throws INVALID_ARGUMENT for a mode out of range. Thread safety:
// distinct outputs may be computed concurrently; h is only read.
void mttkrp_hbcsf_mode(const Exec& exec, const spt_hbcsf_s& h, const ConstMatRef<float>* factors, uint32_t mode,
                       MatRef<float> out);
void mttkrp_hbcsf_mode(const Exec& exec, const spt_hbcsf_s& h, const ConstMatRef<double>* factors, uint32_t mode,
                       MatRef<double> out);

}  // namespace spt::kernels::cpu
