// The dispatcher's entries for the GCP kernel list (kernels/gcp.hpp), kept
// apart from dispatch.hpp so that only GCP code includes the GCP kernels.
// The entries are stamped with dispatch.hpp's SPT_DISPATCH_ENTRY (HOST
// kernels: reference and cpu backends, no device version). Call them with
// SPT_DISPATCH as every other kernel.
#pragma once

#include "dispatch/dispatch.hpp"
#include "kernels/gcp.hpp"

namespace spt::dispatch::kernel_entries {

SPT_GCP_KERNELS(SPT_DISPATCH_ENTRY)

}  // namespace spt::dispatch::kernel_entries
