// FROSTT .tns text reader (and the ParTI!/B-CSF "extended" variant whose
// first lines hold the order and the dims). The whole text is in memory; it
// is cut into chunks at line boundaries and the chunks are parsed in
// parallel straight into the tensor's arrays.
#pragma once

#include <cstddef>
#include <string>

#include "core/context.hpp"
#include "core/coo.hpp"
#include "io/io.hpp"

namespace spt::io {

// Where the entries of a parsed text file start, for locating entry k later.
struct TextLayout {
  size_t data_offset = 0;       // byte offset of the first entry line
  uint64_t data_first_line = 1; // its 1-based line number
  bool extended = false;        // had an order/dims header
};

// Parse `size` bytes of text (`path` names it in messages). Malformed input
// fails with SPT_ERR_PARSE "path:LINE: ..." (or SPT_ERR_OVERFLOW for an
// index beyond 32 bits), reporting the first error in file order.
spt_coo_s read_tns_text(const spt_context_s& ctx, const char* data, size_t size, const std::string& path,
                        const ReadOptions& opts, TextLayout* layout);

// 1-based line number of entry k (0-based, in file order) of a file parsed
// with read_tns_text; used to point at a duplicate coordinate.
uint64_t tns_entry_line(const char* data, size_t size, const TextLayout& layout, uint64_t k);

}  // namespace spt::io
