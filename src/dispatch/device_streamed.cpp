#include "dispatch/device_streamed.hpp"

#include <cstdlib>
#include <vector>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "dispatch/device_common.hpp"

namespace spt::dispatch::detail {

namespace {

std::string describe(const spt_plugin_stream_info& info) {
  return cat(info.chunks, info.chunks == 1 ? " chunk" : " chunks", " of up to ", info.chunk_nnz, " nonzeros, ",
             info.buffers, " device buffers of ", info.ring_bytes / info.buffers, " bytes",
             info.pinned ? ", from pinned host memory" : ", from pageable host memory (it could not be pinned: no overlap)");
}

}  // namespace

uint64_t streamed_chunks(const std::string& line) {
  if (line.find("streamed") == std::string::npos) return 0;
  const size_t at = line.find(" chunk");
  if (at == std::string::npos) return 0;
  size_t begin = at;
  while (begin > 0 && line[begin - 1] >= '0' && line[begin - 1] <= '9') --begin;
  return begin < at ? std::strtoull(line.c_str() + begin, nullptr, 10) : 0;
}

const char* stream_without_trying(const spt_context_s& ctx, const CudaPlugin& cuda, const spt_coo_s& x) {
  if (ctx.device_streaming == SPT_DEVICE_STREAMING_ALWAYS) return "the context's device streaming is ALWAYS";
  const int device = ctx.device;
  if (device < 0 || device >= static_cast<int>(cuda.devices.size())) return nullptr;
  const uint64_t bytes = uint64_t(x.nnz) * (uint64_t(x.order()) * sizeof(spt_index) + dtype_size(x.dtype()));
  return bytes > cuda.devices[device].total_memory ? "the tensor is larger than the device's memory" : nullptr;
}

template <typename T>
bool streamed_mttkrp(const spt_context_s& ctx, const spt_coo_s& x, const ConstMatRef<T>* factors, uint32_t mode,
                     MatRef<T> out, const char* why) {
  const CudaPlugin& cuda = cuda_plugin();
  const char* kernel = "MTTKRP (streamed)";
  if (!cuda.usable()) return device_failed(ctx, kernel, SPT_ERR_DEVICE, cuda.reason);
  const spt_plugin_coo view = plugin_view(x);
  std::vector<spt_plugin_matrix> f = plugin_mttkrp_factor_views(factors, x.order(), mode);
  spt_plugin_matrix o{out.data, out.rows, out.cols, out.ld};
  spt_plugin_stream_info info{};
  char buffer[512] = {0};
  const int status = cuda.table->mttkrp_streamed(ctx.device, &view, f.data(), mode, &o, &info, buffer, sizeof buffer);
  if (status == SPT_ERR_UNSUPPORTED) {
    log(ctx, 2, cat("note: ", kernel, " runs on the CPU: ", buffer));
    return false;
  }
  if (status != SPT_OK) return device_failed(ctx, kernel, status, buffer);
  log(ctx, 1, cat("MTTKRP mode ", mode, " on the GPU, streamed (", why, "): ", describe(info)));
  return true;
}

template bool streamed_mttkrp<float>(const spt_context_s&, const spt_coo_s&, const ConstMatRef<float>*, uint32_t,
                                     MatRef<float>, const char*);
template bool streamed_mttkrp<double>(const spt_context_s&, const spt_coo_s&, const ConstMatRef<double>*, uint32_t,
                                      MatRef<double>, const char*);

int open_streamed_cp_session(const spt_context_s& ctx, const CudaPlugin& cuda, const spt_coo_s& x, spt_index rank,
                             const char* why, spt_plugin_cp_session** out, std::string& message) {
  const spt_plugin_coo view = plugin_view(x);
  spt_plugin_stream_info info{};
  char buffer[1024] = {0};
  const int status = cuda.table->cp_session_streamed(ctx.device, &view, static_cast<uint32_t>(rank), out, &info,
                                                     buffer, sizeof buffer);
  if (status != SPT_OK) {
    message = buffer;
    return status;
  }
  log(ctx, 1,
      cat("CP-ALS on the GPU, streamed (", why, "): the factors stay on the device and each MTTKRP streams the "
          "nonzeros in ",
          describe(info)));
  return SPT_OK;
}

}  // namespace spt::dispatch::detail
