// The options-init contract of the C ABI. A caller compiled against an
// older header has a shorter options struct than this library's; the
// header's spt_X_options_init(opts) macro passes the caller's sizeof, and
// the library writes only that many bytes of defaults (never past the
// caller's struct), storing the count in struct_size so the consuming
// function knows which fields the caller has.
#pragma once

#include <algorithm>
#include <cstring>

#include "core/error.hpp"

namespace spt {

// Writes the first min(struct_size, sizeof(Options)) bytes of `defaults`
// into *opts. minimum_size is the struct's size in its first release.
template <typename Options>
void write_options_defaults(Options* opts, size_t struct_size, Options defaults, size_t minimum_size) {
  require_not_null(opts, "opts");
  require(struct_size >= minimum_size, "struct_size ", struct_size, " is smaller than the options struct of any release (",
          minimum_size, " bytes): pass sizeof(*opts), or use the header's options_init macro");
  const size_t n = std::min(struct_size, sizeof(Options));
  defaults.struct_size = n;
  std::memcpy(static_cast<void*>(opts), &defaults, n);
}

}  // namespace spt
