// The plugin's table entries, declared from the entry lists of
// src/dispatch/plugin_abi.h (signatures and contracts there): entry `name`
// is spt_plugin::plugin_<name>, defined in plugin.cu or in the file of its
// family (plugin_hls.cu, plugin_ttm.cu, plugin_tucker.cu). plugin.cu fills
// the table from the same lists, so a signature that drifts from the list
// fails to compile and a missing entry fails to link.
#pragma once

#include "dispatch/plugin_abi.h"

namespace spt_plugin {

#define SPT_PLUGIN_DECLARE_ENTRY(name, params) int plugin_##name params;
#define SPT_PLUGIN_DECLARE_RELEASE(name, params) void plugin_##name params;
#define SPT_PLUGIN_DECLARE_FAMILY(family) \
  SPT_PLUGIN_##family##_ENTRIES(SPT_PLUGIN_DECLARE_ENTRY, SPT_PLUGIN_DECLARE_RELEASE)

SPT_PLUGIN_FAMILIES(SPT_PLUGIN_DECLARE_FAMILY)

#undef SPT_PLUGIN_DECLARE_FAMILY
#undef SPT_PLUGIN_DECLARE_RELEASE
#undef SPT_PLUGIN_DECLARE_ENTRY

}  // namespace spt_plugin
