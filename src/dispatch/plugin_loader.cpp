#include "dispatch/plugin_loader.hpp"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>

#include "core/error.hpp"
#include "sptensor/sptensor.h"

namespace spt::dispatch {

namespace {

bool is_directory(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string directory_of(const std::string& file) {
  const size_t slash = file.rfind('/');
  return slash == std::string::npos ? std::string(".") : file.substr(0, slash);
}

// Directory of the binary holding this code: libsptensor.so, or the
// executable when the library was linked statically (tests).
std::string own_directory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cuda_plugin), &info) == 0 || info.dli_fname == nullptr) return {};
  return directory_of(info.dli_fname);
}

// Try one candidate; on success fill `plugin` and return true, else append
// what went wrong to `notes`.
bool try_load(const std::string& candidate, CudaPlugin& plugin, std::string& notes) {
  auto note = [&](const std::string& what) { notes += cat(notes.empty() ? "" : "; ", candidate, ": ", what); };
  dlerror();
  // RTLD_LOCAL: the plugin's statically linked CUDA runtime stays private.
  void* handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* err = dlerror();  // already names the file
    notes += cat(notes.empty() ? "" : "; ", err ? err : cat(candidate, ": dlopen failed"));
    return false;
  }
  auto entry = reinterpret_cast<spt_plugin_entry_fn>(dlsym(handle, SPT_CUDA_PLUGIN_ENTRY_NAME));
  if (!entry) {
    note("not a libsptensor plugin (no symbol " SPT_CUDA_PLUGIN_ENTRY_NAME ")");
    dlclose(handle);
    return false;
  }
  const spt_plugin_table* table = entry(SPT_PLUGIN_ABI_VERSION);
  if (!table) {
    note(cat("the plugin refused this libsptensor (plugin interface version ", SPT_PLUGIN_ABI_VERSION, ")"));
    dlclose(handle);
    return false;
  }
  if (table->abi_version != SPT_PLUGIN_ABI_VERSION || table->struct_size < sizeof(spt_plugin_table)) {
    note(cat("plugin interface version ", table->abi_version, " (table of ", table->struct_size,
             " bytes) but this libsptensor needs version ", SPT_PLUGIN_ABI_VERSION, " (", sizeof(spt_plugin_table),
             " bytes); install the plugin built with this libsptensor"));
    dlclose(handle);
    return false;
  }
  // Loaded: from here on the handle stays open for the life of the process.
  plugin.table = table;
  plugin.path = candidate;
  char message[512] = {0};
  int count = 0;
  if (table->device_count(&count, message, sizeof message) != 0 || count <= 0) {
    plugin.reason = cat("the CUDA plugin ", candidate, " found no usable device: ",
                        message[0] ? message : "no CUDA device");
    return true;
  }
  for (int d = 0; d < count; ++d) {
    spt_plugin_device_info info{};
    message[0] = 0;
    if (table->device_info(d, &info, message, sizeof message) != 0) {
      plugin.devices.clear();
      plugin.reason = cat("the CUDA plugin ", candidate, " could not query device ", d, ": ", message);
      return true;
    }
    plugin.devices.push_back(info);
  }
  return true;
}

// Whether the NVIDIA kernel driver is present (its control device
// /dev/nvidiactl exists). Asked before the plugin is loaded: loading it maps
// the CUDA runtime and math libraries (a few hundred MiB of resident
// memory), which a machine without a GPU must not pay for every context. A
// file test, not cuInit: initialising the driver takes a noticeable fraction
// of a second, which a CPU run on a machine with a GPU must not pay either
// (the plugin's device query initialises it when the plugin is loaded).
bool driver_present(std::string& why) {
  if (access("/dev/nvidiactl", F_OK) == 0) return true;
  why = "no usable device: no NVIDIA driver (/dev/nvidiactl does not exist)";
  return false;
}

CudaPlugin load() {
  CudaPlugin plugin;
  std::string notes;
  std::vector<std::string> candidates;
  const char* env = std::getenv("SPT_PLUGIN_PATH");
  const bool named = env && *env;
  // A plugin named by SPT_PLUGIN_PATH is always loaded (it may be a test
  // plugin that needs no driver); the search skips it without a device.
  if (std::string why; !named && !driver_present(why)) {
    plugin.reason = cat("the CUDA plugin was not loaded: ", why);
    return plugin;
  }
  if (named) {
    const std::string p(env);
    candidates.push_back(is_directory(p) ? p + "/" SPT_CUDA_PLUGIN_FILE_NAME : p);
  }
  if (const std::string dir = own_directory(); !dir.empty()) candidates.push_back(dir + "/" SPT_CUDA_PLUGIN_FILE_NAME);
  candidates.push_back(SPT_CUDA_PLUGIN_FILE_NAME);  // default loader path
  for (const std::string& c : candidates)
    if (try_load(c, plugin, notes)) return plugin;
  plugin.reason = cat("no usable CUDA plugin (" SPT_CUDA_PLUGIN_FILE_NAME
                      ") was found; this build may lack CUDA support. Searched: ",
                      notes, ". Set SPT_PLUGIN_PATH to the plugin's directory or file");
  return plugin;
}

}  // namespace

const CudaPlugin& cuda_plugin() {
  static std::once_flag once;
  static CudaPlugin* plugin = nullptr;  // never freed: device caches may call into it at exit
  std::call_once(once, [] { plugin = new CudaPlugin(load()); });
  return *plugin;
}

spt_backend effective_backend(const spt_context_s& ctx) {
  if (ctx.backend != SPT_BACKEND_AUTO) return ctx.backend;
  const CudaPlugin& cuda = cuda_plugin();
  return cuda.usable() && ctx.device < static_cast<int>(cuda.devices.size()) ? SPT_BACKEND_CUDA : SPT_BACKEND_CPU;
}

}  // namespace spt::dispatch
