// The plugin table's entries that live outside plugin.cu (one file per
// group: plugin_hls.cu, plugin_ttm.cu, plugin_tucker.cu), declared here for
// the table in plugin.cu. Signatures and contracts: src/dispatch/plugin_abi.h.
#pragma once

#include "dispatch/plugin_abi.h"

namespace spt_plugin {

/* [v6-hls-begin] */
/* [v6-hls-end] */

/* [v6-ttm-begin] */
/* [v6-ttm-end] */

/* [v6-tucker-begin] */
/* [v6-tucker-end] */

}  // namespace spt_plugin
