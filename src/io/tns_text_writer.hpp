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

// Writes x as text; `extended` puts the order line and the dims line first.
void write_tns_text(const spt_context_s& ctx, const spt_coo_s& x, Sink& out, const WriteOptions& opts, bool extended);

// Whether plain FROSTT text would lose x's dims: a reader infers each dim as
// the largest index + 1, so the header is needed when some dims[m] is larger
// than that, and for an empty tensor (no entries to infer anything from).
// spt_write's SPT_FILE_TNS (and AUTO resolving to text) writes the extended
// header exactly then, and plain FROSTT otherwise, so files whose dims are
// the max indices stay readable by other FROSTT tools.
bool tns_needs_header(const spt_context_s& ctx, const spt_coo_s& x);

}  // namespace spt::io
