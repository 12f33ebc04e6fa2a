// Loads NCCL with dlopen (see nccl_loader.cuh).
#include "nccl_loader.cuh"

#include <dlfcn.h>
#include <glob.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace spt::cuda::nccl {

namespace {

constexpr const char* kSoname = "libnccl.so.2";

// libnccl.so.2 of the nvidia-nccl-cu13 (or -cu12) Python package, pip-installed
// into the active virtual or conda environment or the system prefixes
// (docs/guide.md, "Several GPUs").
std::vector<std::string> python_package_candidates() {
  std::vector<std::string> prefixes;
  for (const char* var : {"VIRTUAL_ENV", "CONDA_PREFIX"})
    if (const char* p = std::getenv(var); p && *p) prefixes.emplace_back(p);
  prefixes.emplace_back("/usr/local");
  prefixes.emplace_back("/usr");
  std::vector<std::string> found;
  for (const std::string& prefix : prefixes) {
    const std::string pattern = prefix + "/lib{,64}/python3*/{site,dist}-packages/nvidia/nccl/lib/" + kSoname;
    glob_t g{};
    if (glob(pattern.c_str(), GLOB_BRACE, nullptr, &g) == 0)
      for (size_t i = 0; i < g.gl_pathc; ++i) found.emplace_back(g.gl_pathv[i]);
    globfree(&g);
  }
  return found;
}

template <typename F>
bool resolve(void* handle, const char* name, F& out, std::string& missing) {
  out = reinterpret_cast<F>(dlsym(handle, name));
  if (!out) missing += std::string(missing.empty() ? "" : ", ") + name;
  return out != nullptr;
}

// The API of the library at `path` (kept for the process), or nullptr with
// `why` extended.
std::unique_ptr<Api> open_library(const std::string& path, std::string& why) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* err = dlerror();
    why += std::string(why.empty() ? "" : "; ") + (err ? err : path + ": cannot be loaded");
    return nullptr;
  }
  auto api = std::make_unique<Api>();
  std::string missing;
  resolve(handle, "ncclCommInitAll", api->comm_init_all, missing);
  resolve(handle, "ncclCommDestroy", api->comm_destroy, missing);
  resolve(handle, "ncclCommAbort", api->comm_abort, missing);
  resolve(handle, "ncclAllReduce", api->all_reduce, missing);
  resolve(handle, "ncclReduceScatter", api->reduce_scatter, missing);
  resolve(handle, "ncclAllGather", api->all_gather, missing);
  resolve(handle, "ncclGroupStart", api->group_start, missing);
  resolve(handle, "ncclGroupEnd", api->group_end, missing);
  resolve(handle, "ncclGetErrorString", api->error_string, missing);
  resolve(handle, "ncclGetVersion", api->get_version, missing);
  if (!missing.empty()) {
    why += std::string(why.empty() ? "" : "; ") + path + " lacks " + missing;
    dlclose(handle);
    return nullptr;
  }
  if (api->get_version(&api->version) != kSuccess) api->version = 0;
  api->path = path;
  // The file actually mapped, for the log.
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(api->comm_init_all), &info) && info.dli_fname) api->path = info.dli_fname;
  return api;
}

}  // namespace

const Api* load(const std::string& library, std::string& why) {
  static std::mutex mutex;
  // One Api per file name asked for (loaded once, never unloaded: NCCL
  // keeps threads and device state for the process).
  static std::map<std::string, std::unique_ptr<Api>> loaded;
  // What each request (a file name, or "" for the default search) found:
  // later runs skip the search of the Python packages' folders. Failures
  // are not kept, so a library installed later is found.
  static std::map<std::string, const Api*> found_for;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = found_for.find(library); it != found_for.end()) return it->second;
  std::vector<std::string> candidates;
  if (!library.empty()) {
    candidates.push_back(library);
  } else {
    candidates.emplace_back(kSoname);
    for (std::string& c : python_package_candidates()) candidates.push_back(std::move(c));
  }
  why.clear();
  // NVLink multicast off unless the user chose (see cp_group_create), set
  // before NCCL first reads its environment.
  setenv("NCCL_NVLS_ENABLE", "0", 0);
  for (const std::string& c : candidates) {
    if (auto it = loaded.find(c); it != loaded.end()) return found_for[library] = it->second.get();
    if (std::unique_ptr<Api> api = open_library(c, why)) {
      const Api* out = api.get();
      loaded.emplace(c, std::move(api));
      return found_for[library] = out;
    }
  }
  why = "NCCL (" + std::string(kSoname) + ") was not found: " + why +
        " (install the nvidia-nccl-cu13 Python package or NCCL, or name the library's file with "
        "spt_context_set_nccl_library or sptensor cpd --nccl-library)";
  return nullptr;
}

std::string describe(const Api& api, Result result) {
  const char* text = api.error_string ? api.error_string(result) : nullptr;
  return "NCCL error " + std::to_string(result) + (text ? std::string(" (") + text + ")" : std::string());
}

}  // namespace spt::cuda::nccl
