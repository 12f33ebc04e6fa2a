/* A plugin built against a future, incompatible interface: the core must
 * refuse it with a message (test CudaPlugin.VersionMismatchRefused). Every
 * entry is a "not compiled" stub stamped from the entry lists. */
#include "dispatch/plugin_abi.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"
SPT_PLUGIN_FAMILIES(SPT_PLUGIN_STUB_FAMILY)

static const spt_plugin_table future_table = {999u, sizeof(spt_plugin_table), "fake plugin from the future",
                                              SPT_PLUGIN_FAMILIES(SPT_PLUGIN_STUB_FILL_FAMILY)};

__attribute__((visibility("default"))) const spt_plugin_table *spt_cuda_plugin_entry(uint32_t core_abi_version) {
  (void)core_abi_version;
  return &future_table;
}
