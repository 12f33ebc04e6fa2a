/* A plugin built against a future, incompatible interface: the core must
 * refuse it with a message (test CudaPlugin.VersionMismatchRefused). */
#include "dispatch/plugin_abi.h"

static const spt_plugin_table future_table = {999u, sizeof(spt_plugin_table), "fake plugin from the future",
                                              0, 0, 0, 0, 0};

__attribute__((visibility("default"))) const spt_plugin_table *spt_cuda_plugin_entry(uint32_t core_abi_version) {
  (void)core_abi_version;
  return &future_table;
}
