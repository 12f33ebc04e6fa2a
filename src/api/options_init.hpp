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
#include "sptensor/sptensor.h"

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

namespace spt {

// The defaults every decomposition's options share: seed 0, no user
// factors, no callback.
template <typename Options>
void set_run_defaults(Options& d) {
  d.seed = 0;
  d.init_factors = nullptr;
  d.callback = nullptr;
  d.callback_data = nullptr;
}

// The CP-ALS defaults, one source for spt_cpd_options and the MPI library's
// spt_mpi_cpd_options (which adds its own fields): rank 10, at most 50
// sweeps, tol 1e-4, random initial factors.
template <typename CpdOptions>
void set_cpd_defaults(CpdOptions& d) {
  set_run_defaults(d);
  d.rank = 10;
  d.max_iters = 50;
  d.tol = 1e-4;
  d.init = SPT_CPD_INIT_RANDOM;
}

}  // namespace spt

namespace spt {

// The info-struct contract of the C ABI (spt_X_info): the caller sets
// info->struct_size to its sizeof; at least `minimum_size` (the struct's
// size in the release that introduced it) is required, and only
// min(struct_size, sizeof(Info)) bytes are written (struct_size is kept).
template <typename Info>
void write_info(Info* info, const Info& filled, size_t minimum_size, const char* type_name) {
  require_not_null(info, "info");
  const size_t given = info->struct_size;
  require(given >= minimum_size, "info->struct_size is ", given, ", smaller than any release's ", type_name, " (",
          minimum_size, " bytes): set it to sizeof(", type_name, ") before the call");
  const size_t n = std::min(given, sizeof(Info));
  std::memcpy(static_cast<void*>(info), &filled, n);
  info->struct_size = given;
}

}  // namespace spt

namespace spt {

// The options-reading contract of the C ABI (spt_X_from_coo and friends):
// NULL means `defaults`; otherwise opts->struct_size must be at least
// `minimum_size` (the struct's size in its first release), and fields the
// caller's shorter struct lacks keep their defaults.
template <typename Options>
Options read_options(const Options* opts, Options defaults, size_t minimum_size, const char* type_name) {
  if (!opts) return defaults;
  const size_t given = opts->struct_size;
  require(given >= minimum_size, "opts->struct_size is ", given, ", smaller than any release's ", type_name, " (",
          minimum_size, " bytes): initialise the options with ", type_name, "_init");
  std::memcpy(static_cast<void*>(&defaults), opts, std::min(given, sizeof(Options)));
  defaults.struct_size = sizeof(Options);
  return defaults;
}

}  // namespace spt
