// Tensors larger than the device memory (plugin family STREAM): a COO
// tensor whose device copy does not fit runs its MTTKRP, and CP-ALS its
// sweeps, with the nonzeros streamed from host memory in chunks while the
// factors and the output stay on the device. The dispatcher's device files
// (device.cpp) call these where an upload fails for memory.
#pragma once

#include <cstdint>
#include <string>

#include "core/context.hpp"
#include "core/coo.hpp"
#include "core/matrix.hpp"
#include "dispatch/plugin_loader.hpp"

namespace spt::dispatch::detail {

// Why x streams without trying its in-memory device copies, or nullptr
// when they are tried first: the context's device streaming is ALWAYS
// (spt_context_set_device_streaming), or x's COO copy (indices and values)
// is larger than the whole memory of the context's device (no copy of it
// can fit).
const char* stream_without_trying(const spt_context_s& ctx, const CudaPlugin& cuda, const spt_coo_s& x);

// The chunk count a log line of a streamed run gives ("... streamed (why):
// ... N chunks of ..."), 0 for any other line. Beside the code that writes
// these lines so that the tests and benchmarks that read the log follow
// its format.
uint64_t streamed_chunks(const std::string& line);

// Why a tensor streams after its upload failed for memory.
constexpr const char* kCopyDoesNotFit = "the tensor's device copy does not fit the free device memory";

// spt_mttkrp of x in `mode` with the nonzeros streamed through the device
// (T = x's type). True when it ran there; otherwise the failure policy of
// device_failed (a note and false under AUTO: the CPU kernel runs; an
// error under CUDA forced), out-of-memory included: the factors and output
// do not fit even beside the smallest chunks. Logs (verbosity 1) that the
// MTTKRP was streamed, `why`, and in how many chunks.
template <typename T>
bool streamed_mttkrp(const spt_context_s& ctx, const spt_coo_s& x, const ConstMatRef<T>* factors, uint32_t mode,
                     MatRef<T> out, const char* why);

// A CP-ALS session of rank `rank` whose MTTKRPs stream x's nonzeros (x's
// arrays stay pinned until the session is released; x must not change
// until then). Returns the plugin's status; *out receives the session on
// success, `message` the plugin's message on failure. Logs (verbosity 1)
// that the run is streamed, `why`, and the chunk count.
int open_streamed_cp_session(const spt_context_s& ctx, const CudaPlugin& cuda, const spt_coo_s& x, spt_index rank,
                             const char* why, spt_plugin_cp_session** out, std::string& message);

}  // namespace spt::dispatch::detail
