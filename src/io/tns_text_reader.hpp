// FROSTT .tns text reader (and the ParTI!/B-CSF "extended" variant whose
// first lines hold the order and the dims). The text is streamed: it is
// read kTextChunkBytes at a time into two buffers (one helper thread
// reads or decompresses the next chunk while the other is parsed), cut at
// the last line break, and each chunk of complete lines is parsed in
// parallel straight into the tensor's growing arrays. Nothing but the
// tensor and the two buffers is held, whatever the file holds (comment
// lines of any length are skipped without being held).
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "core/context.hpp"
#include "core/coo.hpp"
#include "io/compression.hpp"
#include "io/io.hpp"
#include "util/internal_api.hpp"

namespace spt::io {

// Most bytes of text read and parsed per step (each of the two read
// buffers holds at most this plus one carried line: 2 x 5 MiB in all;
// a smaller input, or the start of a stream, takes less).
constexpr size_t kTextChunkBytes = size_t(4) << 20;
// Longest entry or header line (comment lines may be longer): a longer one
// fails with SPT_ERR_PARSE naming its byte offset.
constexpr size_t kMaxLineBytes = size_t(1) << 20;
// Most bytes of consecutive blank (whitespace-only) lines accepted without
// an entry or a comment in between; more fail as "no progress".
constexpr uint64_t kMaxBlankBytes = uint64_t(256) << 20;

// Where the entries of a parsed text file start, for locating entry k later.
struct TextLayout {
  size_t data_offset = 0;       // byte offset of the first entry line
  uint64_t data_first_line = 1; // its 1-based line number
  bool extended = false;        // had an order/dims header
};

// What the reader may know about the stream's size, to size the tensor's
// arrays once instead of growing them.
struct StreamHint {
  std::function<double()> fraction;  // share of the input consumed so far, or < 0 when unknown
  double max_reserve_bytes = 0;      // never reserve more than this from an estimate
  // The input's size when known (a regular file, text in memory), else
  // kUnknownSize: the read buffers are then sized to it (text beyond it is
  // still read, in growing chunks as from a stream).
  uint64_t size = kUnknownSize;
};

// Parse the text that `produce` yields (up to n bytes per call; 0 at the
// end); `path` names it in messages. Malformed input fails with
// SPT_ERR_PARSE "path:LINE: ..." (or SPT_ERR_OVERFLOW for an index beyond
// 32 bits), reporting the first error in file order; NUL bytes, an
// over-long line and too many blank lines fail with their byte offset.
spt_coo_s read_tns_text_stream(const spt_context_s& ctx, const std::function<size_t(char*, size_t)>& produce,
                               const StreamHint& hint, const std::string& path, const ReadOptions& opts,
                               TextLayout* layout);

// The same for `size` bytes of text in memory.
SPT_INTERNAL_API spt_coo_s read_tns_text(const spt_context_s& ctx, const char* data, size_t size, const std::string& path,
                        const ReadOptions& opts, TextLayout* layout);

// 1-based line number of entry k (0-based, in file order) of a text parsed
// with read_tns_text (0 if there is no such entry); used to point at a
// duplicate coordinate. The second form reads the text again from
// `produce`.
uint64_t tns_entry_line(const char* data, size_t size, const TextLayout& layout, uint64_t k);
uint64_t tns_entry_line(const std::function<size_t(char*, size_t)>& produce, const TextLayout& layout, uint64_t k);

}  // namespace spt::io
