// FROSTT .tns text writer (optionally with the extended order/dims header).
// Entries are formatted in parallel chunks and written in order; values use
// the shortest representation that reads back to the same number unless a
// precision is requested.
#pragma once

#include "core/context.hpp"
#include "core/coo.hpp"
#include "io/io.hpp"
#include "io/output_file.hpp"

namespace spt::io {

void write_tns_text(const spt_context_s& ctx, const spt_coo_s& x, Sink& out, const WriteOptions& opts, bool extended);

}  // namespace spt::io
