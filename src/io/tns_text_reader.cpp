#include "io/tns_text_reader.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <future>
#include <limits>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

#include "core/error.hpp"
#include "core/value_range.hpp"
#include "io/memory.hpp"

namespace spt::io {

namespace {

constexpr uint64_t kMaxIndex = 0xFFFFFFFEull;  // largest 0-based spt_index (dims must fit 32 bits)

inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }
inline bool is_separator(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
inline bool is_digit(char c) { return static_cast<unsigned>(c - '0') < 10u; }

// ---------------------------------------------------------------------------
// Sequential helpers for the header and for error messages (bounds-checked:
// they may run on the last line, which need not end with '\n').
// ---------------------------------------------------------------------------

struct LineRef {
  const char* begin = nullptr;
  const char* end = nullptr;  // at '\n' or the end of data
  uint64_t number = 0;        // 1-based
};

std::vector<std::string_view> tokens_of(const char* b, const char* e) {
  std::vector<std::string_view> out;
  const char* p = b;
  while (p < e) {
    while (p < e && is_space(*p)) ++p;
    if (p >= e || *p == '\n') break;
    const char* t = p;
    while (p < e && !is_separator(*p)) ++p;
    out.emplace_back(t, static_cast<size_t>(p - t));
  }
  return out;
}

// The next line that holds something other than blanks or a '#' comment.
// `pos` and `line` (number of the line at pos) advance past it.
bool next_content_line(const char* data, size_t size, size_t& pos, uint64_t& line, LineRef& out) {
  const char* end = data + size;
  while (pos < size) {
    const char* b = data + pos;
    const char* nl = static_cast<const char*>(std::memchr(b, '\n', size - pos));
    const char* e = nl ? nl : end;
    const char* q = b;
    while (q < e && is_space(*q)) ++q;
    uint64_t this_line = line;
    pos = nl ? static_cast<size_t>(nl - data) + 1 : size;
    ++line;
    if (q < e && *q != '#') {
      out = {b, e, this_line};
      return true;
    }
  }
  return false;
}

// A token for a message: at most 40 bytes, with control and non-ASCII bytes
// written as \xHH (binary garbage must not put a NUL, which would cut the
// C string, or terminal control codes into the message).
std::string quote(std::string_view t) {
  static const char kHex[] = "0123456789abcdef";
  std::string out = "'";
  for (size_t i = 0; i < t.size() && i < 40; ++i) {
    const unsigned char c = static_cast<unsigned char>(t[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  out += t.size() > 40 ? "...'" : "'";
  return out;
}

// Parse a header integer (order or a dim): decimal, fits 64 bits.
uint64_t header_integer(std::string_view tok, const std::string& where, const char* what) {
  uint64_t v = 0;
  auto r = std::from_chars(tok.data(), tok.data() + tok.size(), v);
  if (r.ec == std::errc::result_out_of_range)
    fail(SPT_ERR_OVERFLOW, where, ": ", what, " ", quote(tok), " does not fit 64 bits");
  if (r.ec != std::errc() || r.ptr != tok.data() + tok.size())
    fail(SPT_ERR_PARSE, where, ": expected ", what, " as a non-negative integer, found ", quote(tok));
  return v;
}

// ---------------------------------------------------------------------------
// Parallel parsing of entry lines
// ---------------------------------------------------------------------------

enum class Problem {
  kNone,
  kTooFewColumns,
  kTooManyColumns,
  kBadIndex,
  kNegativeIndex,
  kBelowBase,
  kIndexOverflow,
  kOutsideDims,
  kBadValue,
  kNonFinite,
  kLineTooLong,
  kFloat32Overflow  // finite in the text, beyond float32's range (reading as float32)
};

struct ChunkResult {
  spt_nnz count = 0;
  Problem problem = Problem::kNone;
  uint64_t line = 0;              // line number of the problem
  const char* line_begin = nullptr;
  const char* token = nullptr;    // offending token
  uint32_t column = 0;            // 1-based column of the token
  std::vector<spt_index> max_index;
  bool content = false;           // saw an entry or a comment line
  uint64_t lead_blank = 0;        // bytes of blank lines before the first entry/comment
  uint64_t trail_blank = 0;       // bytes of blank lines after the last entry/comment
};

struct Chunk {
  const char* begin;
  const char* end;  // every line in [begin, end) ends with '\n'
  uint64_t first_line = 0;
  spt_nnz first_entry = 0;  // upper-bound offset into the output arrays
  spt_nnz lines = 0;        // '\n' count
  spt_nnz candidates = 0;   // lines that may hold an entry (upper bound)
  bool nul = false;         // holds a NUL byte
};

struct ParseSetup {
  uint32_t order;
  uint64_t base;
  const spt_index* dim_limit;  // nullptr: dims are inferred
  bool reject_nonfinite;
  spt_index* const* ind;       // order output arrays
};

// Inlined into the entry loop (it is also called once more for the rare
// float32 overflow check, which would otherwise keep it out of line).
template <typename T>
[[gnu::always_inline]] inline bool parse_value(const char*& q, const char* end, T& out) {
  // Fast path: a plain integer of up to 15 digits is exact in double.
  const char* s = q;
  bool negative = false;
  if (*s == '-') {
    negative = true;
    ++s;
  } else if (*s == '+') {
    ++s;
  }
  const char* digits = s;
  uint64_t iv = 0;
  while (is_digit(*s)) {
    iv = iv * 10 + static_cast<unsigned>(*s - '0');
    ++s;
  }
  size_t nd = static_cast<size_t>(s - digits);
  if (nd > 0 && nd <= 15 && is_separator(*s)) {
    double d = static_cast<double>(iv);
    out = static_cast<T>(negative ? -d : d);
    q = s;
    return true;
  }
  const char* start = (*q == '+' && q[1] != '-') ? q + 1 : q;
  T v{};
  auto r = std::from_chars(start, end, v);
  if (r.ec == std::errc::invalid_argument || !is_separator(*r.ptr)) return false;
  if (r.ec == std::errc::result_out_of_range) {
    // Overflow or underflow: take strtod's answer (+-inf, or a denormal/0).
    // A fixed buffer: no allocation inside the parallel region.
    char tok[128];
    const size_t len = static_cast<size_t>(r.ptr - start);
    if (len >= sizeof(tok)) return false;
    std::memcpy(tok, start, len);
    tok[len] = '\0';
    v = static_cast<T>(std::strtod(tok, nullptr));
  }
  out = v;
  q = r.ptr;
  return true;
}

template <typename T>
void parse_chunk(const Chunk& c, const ParseSetup& s, T* values, ChunkResult& res) {
  const char* p = c.begin;
  const char* const end = c.end;
  uint64_t line = c.first_line;
  spt_nnz k = c.first_entry;
  const uint32_t order = s.order;
  spt_index* maxv = res.max_index.data();
  // Kept in registers while parsing (res may alias the output arrays for
  // the compiler), stored into res on every exit.
  bool content = false;
  uint64_t lead_blank = 0, trail_blank = 0;
  auto flush = [&] {
    res.content = content;
    res.lead_blank = lead_blank;
    res.trail_blank = trail_blank;
  };
  auto problem = [&](Problem what, const char* line_begin, const char* tok, uint32_t column) {
    flush();
    res.problem = what;
    res.line = line;
    res.line_begin = line_begin;
    res.token = tok;
    res.column = column;
  };
  while (p < end) {
    const char* q = p;
    while (is_space(*q)) ++q;
    if (*q == '\n') {  // blank line
      (content ? trail_blank : lead_blank) += static_cast<uint64_t>(q + 1 - p);
      p = q + 1;
      ++line;
      continue;
    }
    content = true;
    trail_blank = 0;
    if (*q == '#') {  // comment line (any length)
      p = static_cast<const char*>(std::memchr(q, '\n', static_cast<size_t>(end - q))) + 1;
      ++line;
      continue;
    }
    for (uint32_t m = 0; m < order; ++m) {
      while (is_space(*q)) ++q;
      const char* tok = q;
      uint64_t v = 0;
      while (is_digit(*q)) {
        v = v * 10 + static_cast<unsigned>(*q - '0');
        ++q;
      }
      size_t nd = static_cast<size_t>(q - tok);
      if (nd == 0 || !is_separator(*q)) {
        Problem what = *tok == '\n' ? Problem::kTooFewColumns
                       : *tok == '-' ? Problem::kNegativeIndex
                                     : Problem::kBadIndex;
        problem(what, p, tok, m + 1);
        return;
      }
      if (nd > 10) {  // more than 10 significant digits cannot fit 32 bits
        const char* z = tok;
        while (*z == '0') ++z;
        if (q - z > 10) {
          problem(Problem::kIndexOverflow, p, tok, m + 1);
          return;
        }
      }
      if (v < s.base) {
        problem(Problem::kBelowBase, p, tok, m + 1);
        return;
      }
      v -= s.base;
      if (v > kMaxIndex) {
        problem(Problem::kIndexOverflow, p, tok, m + 1);
        return;
      }
      if (s.dim_limit && v >= s.dim_limit[m]) {
        problem(Problem::kOutsideDims, p, tok, m + 1);
        return;
      }
      const spt_index i = static_cast<spt_index>(v);
      s.ind[m][k] = i;
      if (i > maxv[m]) maxv[m] = i;
    }
    while (is_space(*q)) ++q;
    if (*q == '\n') {
      problem(Problem::kTooFewColumns, p, q, order + 1);
      return;
    }
    const char* tok = q;
    T value;
    if (!parse_value(q, end, value)) {
      problem(Problem::kBadValue, p, tok, order + 1);
      return;
    }
    if constexpr (std::is_same_v<T, float>) {
      // Rare path: only an infinite result is looked at again.
      if (std::isinf(value)) {
        double wide = 0;
        const char* again = tok;
        if (parse_value(again, end, wide) && std::isfinite(wide)) {
          problem(Problem::kFloat32Overflow, p, tok, order + 1);
          return;
        }
      }
    }
    if (s.reject_nonfinite && !std::isfinite(value)) {
      problem(Problem::kNonFinite, p, tok, order + 1);
      return;
    }
    values[k] = value;
    while (is_space(*q)) ++q;
    if (*q != '\n') {
      problem(Problem::kTooManyColumns, p, q, order + 2);
      return;
    }
    if (static_cast<size_t>(q - p) > kMaxLineBytes) {
      problem(Problem::kLineTooLong, p, p, 1);
      return;
    }
    p = q + 1;
    ++line;
    ++k;
  }
  flush();
  res.count = k - c.first_entry;
}

std::string_view token_at(const char* t) {
  const char* e = t;
  while (!is_separator(*e) && e - t < 64) ++e;
  return std::string_view(t, static_cast<size_t>(e - t));
}

// A '\r' followed by more text on a line of plain text (printable ASCII,
// blanks): the file's lines end in CR only (classic Mac OS), so what looks
// like one line is many. Binary garbage (other control or non-ASCII bytes)
// is not taken for that.
bool has_bare_cr(const char* b, const char* e) {
  bool bare = false;
  for (const char* p = b; p < e; ++p) {
    const unsigned char c = static_cast<unsigned char>(*p);
    if (c == '\r') {
      const char* q = p + 1;
      while (q < e && (*q == ' ' || *q == '\t' || *q == '\r')) ++q;
      if (q < e && *q != '\n') bare = true;
    } else if ((c < 0x20 && c != '\t' && c != '\n') || c >= 0x7f) {
      return false;
    }
  }
  return bare;
}

[[noreturn]] void cr_only(const std::string& path, uint64_t line) {
  fail(SPT_ERR_PARSE, path, ":", line, ": line endings are CR only (classic Mac OS); convert them to LF with ",
       "\"tr '\\r' '\\n' < FILE > FILE.tns\" (or mac2unix) and read the converted file");
}

[[noreturn]] void report(const ChunkResult& r, const std::string& path, uint32_t order, int base,
                         const std::string& order_source, const spt_index* dim_limit, uint64_t line_offset) {
  const std::string where = cat(path, ":", r.line, ": column ", r.column);
  const std::string tok = r.token ? quote(token_at(r.token)) : "''";
  // The line is complete in memory up to its '\n' (chunks end with one).
  const char* nl = r.line_begin;
  while (*nl != '\n') ++nl;
  if (has_bare_cr(r.line_begin, nl)) cr_only(path, r.line);
  if (r.problem == Problem::kLineTooLong || static_cast<size_t>(nl - r.line_begin) > kMaxLineBytes)
    fail(SPT_ERR_PARSE, path, ":", r.line, ": line of ", nl - r.line_begin, " bytes at byte offset ", line_offset,
         " is longer than the ", kMaxLineBytes, "-byte limit for an entry line");
  // A wrong column count explains any other problem on the line best
  // ("1 2 3.0" in an order-3 file lacks a column; '3.0' is not the issue).
  const size_t found = tokens_of(r.line_begin, nl).size();
  if (found != static_cast<size_t>(order) + 1)
    fail(SPT_ERR_PARSE, path, ":", r.line, ": expected ", order + 1, " columns (", order, " indices and a value; order ",
         order, " ", order_source, "), found ", found);
  switch (r.problem) {
    case Problem::kTooFewColumns:
    case Problem::kTooManyColumns:
    case Problem::kLineTooLong:
      fail(SPT_ERR_INTERNAL, "text reader: column count problem on a line with the right count");
    case Problem::kNegativeIndex:
      fail(SPT_ERR_PARSE, where, ": negative index ", tok, "; indices count from ", base,
           (base == 1 ? " (read 0-based files with index_base = 0)" : ""));
    case Problem::kBadIndex:
      fail(SPT_ERR_PARSE, where, ": expected a non-negative integer index, found ", tok);
    case Problem::kBelowBase:
      fail(SPT_ERR_PARSE, where, ": index ", tok, " is below the index base ", base,
           " (FROSTT files are 1-based; read 0-based files with index_base = 0)");
    case Problem::kIndexOverflow:
      fail(SPT_ERR_OVERFLOW, where, ": index ", tok, " does not fit a 32-bit spt_index (largest allowed: ",
           kMaxIndex + static_cast<uint64_t>(base), " with index base ", base, ")");
    case Problem::kOutsideDims:
      fail(SPT_ERR_PARSE, where, ": index ", tok, " is outside dims[", r.column - 1, "] = ", dim_limit[r.column - 1],
           " (index base ", base, ")");
    case Problem::kBadValue:
      fail(SPT_ERR_PARSE, where, ": expected a number as the value, found ", tok);
    case Problem::kNonFinite:
      fail(SPT_ERR_PARSE, where, ": value ", tok, " is not finite (reject_nonfinite is set)");
    case Problem::kFloat32Overflow:
      fail(SPT_ERR_OVERFLOW, where, ": value ", tok, " is beyond float32's range (largest finite ",
           shortest_text(std::numeric_limits<float>::max()), ") and would become infinite; read it as float64");
    case Problem::kNone:
      break;
  }
  fail(SPT_ERR_INTERNAL, "text reader: unknown problem");
}

// Count '\n' bytes, and the lines that may hold an entry: the piece's first
// line and every line after a '\n' that starts with neither '\n' nor '#'
// (an upper bound on the entries; reads e[0], which must be readable).
void count_lines(const char* b, const char* e, spt_nnz& lines, spt_nnz& candidates, bool& nul) {
  spt_nnz n = 0, c = (*b != '\n' && *b != '#') ? 1 : 0;
  // Byte-wise counts in 32-bit lanes over blocks (they vectorize), summed
  // per block; NUL bytes by memchr (a separate, faster pass).
  constexpr size_t kBlock = size_t(1) << 16;
  for (const char* blk = b; blk < e; blk += std::min<size_t>(kBlock, static_cast<size_t>(e - blk))) {
    const char* blk_end = blk + std::min<size_t>(kBlock, static_cast<size_t>(e - blk));
    uint32_t bn = 0, bc = 0;
    for (const char* p = blk; p < blk_end; ++p) {
      const uint32_t nl = *p == '\n';
      bn += nl;
      bc += nl & static_cast<uint32_t>(p[1] != '\n') & static_cast<uint32_t>(p[1] != '#');
    }
    n += bn;
    c += bc;
  }
  nul = std::memchr(b, 0, static_cast<size_t>(e - b)) != nullptr;
  // The '\n' ending the piece starts no line of this piece.
  if (e > b && e[-1] == '\n' && e[0] != '\n' && e[0] != '#') --c;
  lines = n;
  candidates = c;
}

// Fails naming the first NUL byte in [b, e), which starts at stream byte
// `offset` and line `line` (text never holds one: /dev/zero, binary data).
void nul_byte(const std::string& path, const char* b, const char* e, uint64_t offset, uint64_t line) {
  const char* z = static_cast<const char*>(std::memchr(b, 0, static_cast<size_t>(e - b)));
  if (!z) return;
  fail(SPT_ERR_PARSE, path, ":", line + static_cast<uint64_t>(std::count(b, z, '\n')), ": NUL byte at byte offset ",
       offset + static_cast<uint64_t>(z - b), ": this is not a text .tns file (binary data?)");
}

// Streaming parser state: the header (found line by line, however many
// comment lines come first), then the entries, parsed one buffer of
// complete lines at a time in parallel, appended to growing arrays.
class TextParser {
 public:
  TextParser(const spt_context_s& ctx, const std::string& path, const ReadOptions& opts, const StreamHint& hint)
      : path_(path), opts_(opts), hint_(hint), threads_(thread_count(ctx)), base_(opts.index_base) {}

  // Parse the complete lines [b, e) (e[-1] == '\n', e[0] readable) that
  // start at stream byte `offset` and line `line`; returns the line number
  // after them.
  uint64_t lines(const char* b, const char* e, uint64_t offset, uint64_t line) {
    const char* p = b;
    while (stage_ != Stage::kEntries && p < e) {
      const char* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(e - p)));
      const char* q = p;
      while (is_space(*q)) ++q;
      if (q == nl) {
        add_blank(static_cast<uint64_t>(nl + 1 - p), offset + static_cast<uint64_t>(nl + 1 - b));
      } else {
        blank_run_ = 0;
        if (*q != '#') {
          const uint64_t at = offset + static_cast<uint64_t>(p - b);
          if (static_cast<size_t>(nl - p) > kMaxLineBytes)
            fail(SPT_ERR_PARSE, path_, ":", line, ": line of ", nl - p, " bytes at byte offset ", at,
                 " is longer than the ", kMaxLineBytes, "-byte limit");
          if (has_bare_cr(p, nl)) cr_only(path_, line);
          if (header_line(p, nl, line, at)) break;  // p is the first entry line
        }
      }
      p = nl + 1;
      ++line;
    }
    if (stage_ == Stage::kEntries && p < e) line = entries(p, e, offset + static_cast<uint64_t>(p - b), line);
    return line;
  }

  bool in_entries() const { return stage_ == Stage::kEntries; }
  // Share of the input read up to the end of the text being parsed (< 0:
  // unknown), for sizing the arrays.
  void set_fraction(double f) { fraction_ = f; }

  spt_coo_s finish(uint64_t end_offset, uint64_t end_line, TextLayout* layout) {
    if (stage_ == Stage::kDims)
      fail(SPT_ERR_PARSE, path_, ":", end_line, ": extended .tns header: expected a line with ", order_,
           " dims after the order line, found the end of the file");
    std::vector<spt_index> dim_limit = !opts_.dims.empty() ? opts_.dims : header_dims_;
    if (stage_ != Stage::kEntries) {
      if (dim_limit.empty())
        fail(SPT_ERR_PARSE, path_, ": no nonzeros (the file is empty or holds only comments and blank lines); ",
             "an empty tensor has no dims to infer: pass order and dims in spt_read_options");
      spt_coo_s x;
      x.init_owned(opts_.dtype, dim_limit, 0);
      if (layout) *layout = {static_cast<size_t>(end_offset), end_line, extended_};
      return x;
    }
    x_.resize(total_);
    if (!dim_limit_.empty()) {
      x_.dims = dim_limit_;
    } else {
      for (uint32_t m = 0; m < order_; ++m) x_.dims[m] = max_index_[m] + 1;  // max <= 2^32 - 2, so this fits
    }
    if (layout) *layout = {static_cast<size_t>(data_offset_), data_first_line_, extended_};
    return std::move(x_);
  }

 private:
  enum class Stage { kFirst, kDims, kEntry, kEntries };

  void add_blank(uint64_t bytes, uint64_t end_offset) {
    blank_run_ += bytes;
    if (blank_run_ > kMaxBlankBytes)
      fail(SPT_ERR_PARSE, path_, ": no progress: more than ", kMaxBlankBytes,
           " bytes of blank lines (no entry, no comment) before byte offset ", end_offset,
           "; this is not a .tns file, or it is damaged");
  }

  // One header-stage content line; true when it is the first entry line
  // (the entries stage then parses it).
  bool header_line(const char* b, const char* e, uint64_t line, uint64_t offset) {
    auto toks = tokens_of(b, e);
    if (stage_ == Stage::kFirst) {
      first_line_ = line;
      extended_ = opts_.format == SPT_FILE_TNS_EXTENDED || (opts_.format != SPT_FILE_TNS && toks.size() == 1);
      if (opts_.format == SPT_FILE_TNS && toks.size() < 2)
        fail(SPT_ERR_PARSE, path_, ":", line, ": expected at least 2 columns (indices then a value), found ",
             toks.size(), "; files with an order/dims header need SPT_FILE_TNS_EXTENDED or SPT_FILE_AUTO");
      if (!extended_) return first_entry(toks.size(), line, offset);
      const std::string where = cat(path_, ":", line);
      if (toks.size() != 1)
        fail(SPT_ERR_PARSE, where, ": extended .tns header: expected the order (one integer) on the first line, found ",
             toks.size(), " tokens");
      uint64_t n = header_integer(toks[0], where, "the order");
      if (n < 1) fail(SPT_ERR_PARSE, where, ": extended .tns header: order must be >= 1, found ", n);
      if (n > SPT_MAX_ORDER)
        fail(SPT_ERR_PARSE, where, ": extended .tns header: order ", n, " is above the supported maximum SPT_MAX_ORDER = ",
             SPT_MAX_ORDER);
      order_ = static_cast<uint32_t>(n);
      if (opts_.order != 0 && opts_.order != order_)
        fail(SPT_ERR_PARSE, where, ": the header gives order ", order_, " but the caller expects order ", opts_.order);
      stage_ = Stage::kDims;
      return false;
    }
    if (stage_ == Stage::kDims) {
      const std::string dwhere = cat(path_, ":", line);
      if (toks.size() != order_)
        fail(SPT_ERR_PARSE, dwhere, ": extended .tns header: expected ", order_, " dims (order ", order_,
             " from line ", first_line_, "), found ", toks.size());
      header_dims_.resize(order_);
      for (uint32_t m = 0; m < order_; ++m) {
        uint64_t d = header_integer(toks[m], dwhere, "a dimension");
        if (d == 0) fail(SPT_ERR_PARSE, dwhere, ": extended .tns header: dims[", m, "] is 0; dims must be >= 1");
        if (d > UINT32_MAX)
          fail(SPT_ERR_OVERFLOW, dwhere, ": extended .tns header: dims[", m, "] = ", d,
               " does not fit a 32-bit spt_index (at most 4294967295)");
        header_dims_[m] = static_cast<spt_index>(d);
      }
      if (!opts_.dims.empty()) {
        for (uint32_t m = 0; m < order_; ++m)
          if (opts_.dims[m] != header_dims_[m])
            fail(SPT_ERR_PARSE, dwhere, ": the header gives dims[", m, "] = ", header_dims_[m],
                 " but the caller passed dims[", m, "] = ", opts_.dims[m]);
      }
      order_source_ = cat("from the header on line ", first_line_);
      stage_ = Stage::kEntry;
      return false;
    }
    return first_entry(toks.size(), line, offset);
  }

  bool first_entry(size_t ncols, uint64_t line, uint64_t offset) {
    if (extended_ || opts_.order != 0) {
      if (!extended_) {
        order_ = opts_.order;
        order_source_ = "given by the caller";
      }
      if (ncols != static_cast<size_t>(order_) + 1)
        fail(SPT_ERR_PARSE, path_, ":", line, ": expected ", order_ + 1, " columns (", order_,
             " indices and a value; order ", order_, " ", order_source_, "), found ", ncols);
    } else {
      // Checked before anything is sized by the order (a single long line
      // would otherwise mean millions of per-mode arrays).
      if (ncols > static_cast<size_t>(SPT_MAX_ORDER) + 1)
        fail(SPT_ERR_PARSE, path_, ":", line, ": the first entry has ", ncols, " columns, i.e. order ", ncols - 1,
             ", above the supported maximum SPT_MAX_ORDER = ", SPT_MAX_ORDER);
      order_ = static_cast<uint32_t>(ncols - 1);
      order_source_ = cat("from the first entry on line ", line);
    }
    dim_limit_ = !opts_.dims.empty() ? opts_.dims : header_dims_;
    if (!dim_limit_.empty() && dim_limit_.size() != order_)
      fail(SPT_ERR_PARSE, path_, ":", line, ": the entries have order ", order_, " but the caller passed ",
           dim_limit_.size(), " dims");
    data_offset_ = offset;
    data_first_line_ = line;
    x_.init_owned(opts_.dtype, std::vector<spt_index>(order_, 1), 0);
    max_index_.assign(order_, 0);
    stage_ = Stage::kEntries;
    return true;
  }

  // Room for `need` nonzeros. Arrays grow one at a time (only one old copy
  // is alive at once); a size hint (the share of the file read so far)
  // lets most reads allocate once.
  void reserve(spt_nnz need) {
    if (need <= capacity_) return;
    spt_nnz cap = std::max<spt_nnz>(need, capacity_ + capacity_ / 2);
    const double f = fraction_;
    if (f > 0.0 && f < 1.0) {
      const double estimate = static_cast<double>(need) / f * 1.02;
      const double bytes = estimate * (static_cast<double>(order_) * sizeof(spt_index) + dtype_size(opts_.dtype));
      if (bytes < hint_.max_reserve_bytes) cap = std::max(cap, static_cast<spt_nnz>(estimate));
    }
    for (uint32_t m = 0; m < order_; ++m) {
      buffer<spt_index> bigger;
      bigger.resize(cap);
      advise_huge_pages(bigger.data(), cap * sizeof(spt_index));
      if (total_) std::memcpy(bigger.data(), x_.own_ind[m].data(), total_ * sizeof(spt_index));
      x_.own_ind[m].swap(bigger);
    }
    with_dtype(opts_.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      buffer<T> bigger;
      bigger.resize(cap);
      advise_huge_pages(bigger.data(), cap * sizeof(T));
      if (total_) std::memcpy(bigger.data(), x_.own_val.template get<T>().data(), total_ * sizeof(T));
      x_.own_val.template get<T>().swap(bigger);
    });
    capacity_ = cap;
  }

  uint64_t entries(const char* region, const char* region_end, uint64_t offset, uint64_t line) {
    const size_t region_size = static_cast<size_t>(region_end - region);
    size_t target = std::max<size_t>(static_cast<size_t>(threads_) * 4, region_size >> 22);  // <= ~4 MiB each
    target = std::min(target, std::max<size_t>(1, region_size >> 14));                     // >= ~16 KiB each
    std::vector<Chunk> chunks;
    const char* b = region;
    for (size_t i = 1; i <= target && b < region_end; ++i) {
      const char* e = region + region_size * i / target;
      if (e <= b) continue;
      if (i < target) {
        const char* nl = static_cast<const char*>(std::memchr(e - 1, '\n', static_cast<size_t>(region_end - (e - 1))));
        e = nl ? nl + 1 : region_end;
      } else {
        e = region_end;
      }
      chunks.push_back({b, e});
      b = e;
    }
    const size_t nchunks = chunks.size();
#pragma omp parallel for num_threads(threads_) schedule(dynamic, 1)
    for (size_t c = 0; c < nchunks; ++c)
      count_lines(chunks[c].begin, chunks[c].end, chunks[c].lines, chunks[c].candidates, chunks[c].nul);
    spt_nnz need = total_;
    uint64_t line_no = line;
    for (Chunk& c : chunks) {
      if (c.nul) nul_byte(path_, c.begin, c.end, offset + static_cast<uint64_t>(c.begin - region), line_no);
      c.first_entry = need;
      c.first_line = line_no;
      need += c.candidates;
      line_no += c.lines;
    }
    reserve(need);

    std::vector<ChunkResult> results(nchunks);
    for (auto& r : results) r.max_index.assign(order_, 0);
    std::vector<spt_index*> ind(order_);
    for (uint32_t m = 0; m < order_; ++m) ind[m] = x_.mutable_ind(m);
    ParseSetup setup{order_, static_cast<uint64_t>(base_), dim_limit_.empty() ? nullptr : dim_limit_.data(),
                     opts_.reject_nonfinite, ind.data()};
    with_dtype(opts_.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* values = x_.template mutable_values<T>();
#pragma omp parallel for num_threads(threads_) schedule(dynamic, 1)
      for (size_t c = 0; c < nchunks; ++c) parse_chunk<T>(chunks[c], setup, values, results[c]);
    });
    for (size_t c = 0; c < nchunks; ++c) {
      const ChunkResult& r = results[c];
      if (r.problem != Problem::kNone)
        report(r, path_, order_, base_, order_source_, setup.dim_limit,
               offset + static_cast<uint64_t>(r.line_begin - region));
      const uint64_t chunk_end = offset + static_cast<uint64_t>(chunks[c].end - region);
      if (!r.content) {
        add_blank(r.lead_blank, chunk_end);
      } else {
        add_blank(r.lead_blank, chunk_end);
        blank_run_ = r.trail_blank;
      }
    }

    // Close the gaps left by blank and comment lines.
    const size_t value_size = dtype_size(opts_.dtype);
    char* values_bytes = static_cast<char*>(x_.own_val.data());
    for (size_t c = 0; c < nchunks; ++c) {
      const spt_nnz from = chunks[c].first_entry, n = results[c].count;
      if (from != total_ && n > 0) {
        for (uint32_t m = 0; m < order_; ++m) std::memmove(ind[m] + total_, ind[m] + from, n * sizeof(spt_index));
        std::memmove(values_bytes + total_ * value_size, values_bytes + from * value_size, n * value_size);
      }
      total_ += n;
      for (uint32_t m = 0; m < order_; ++m) max_index_[m] = std::max(max_index_[m], results[c].max_index[m]);
    }
    return line_no;
  }

  const std::string& path_;
  const ReadOptions& opts_;
  StreamHint hint_;
  double fraction_ = -1.0;
  int threads_;
  int base_;
  Stage stage_ = Stage::kFirst;
  bool extended_ = false;
  uint32_t order_ = 0;
  uint64_t first_line_ = 0;
  std::vector<spt_index> header_dims_;
  std::vector<spt_index> dim_limit_;
  std::string order_source_;
  uint64_t data_offset_ = 0;
  uint64_t data_first_line_ = 1;
  uint64_t blank_run_ = 0;
  spt_coo_s x_;
  spt_nnz total_ = 0;
  spt_nnz capacity_ = 0;
  std::vector<spt_index> max_index_;
};

}  // namespace

spt_coo_s read_tns_text_stream(const spt_context_s& ctx, const std::function<size_t(char*, size_t)>& produce,
                               const StreamHint& hint, const std::string& path, const ReadOptions& opts,
                               TextLayout* layout) {
  progress(ctx, "read", 0.0);
  TextParser parser(ctx, path, opts, hint);
  // Two buffers: the next chunk is read (or decompressed) into one on a
  // helper thread while the other is parsed. Each is [room for a carried
  // incomplete line | one chunk of new text | '\n' appended to an
  // unterminated last line | the byte after it that count_lines reads].
  // They are sized to the input: a chunk is kTextChunkBytes, or what is
  // left of an input of known size (+1, so a full read means more text);
  // a stream's chunks start at kFirstStreamChunk and double. The room for
  // a carried line is at most kMaxLineBytes and at most the text held.
  // So a small input allocates little, and no read holds more than two
  // buffers of kMaxLineBytes + kTextChunkBytes + 2 bytes.
  constexpr size_t kFirstStreamChunk = size_t(64) << 10;
  struct Buf {
    buffer<char> mem;
    size_t prefix = 0;  // bytes before the new text
    size_t chunk = 0;   // new text asked for
    char* text() { return mem.data() + prefix; }
  };
  Buf bufs[2];
  const bool sized = hint.size != kUnknownSize;
  uint64_t consumed = 0;  // bytes produced so far (all fills that finished)
  auto prepare = [&](Buf& b, size_t prefix, size_t last_chunk) {
    size_t chunk;
    if (sized && consumed <= hint.size)
      chunk = static_cast<size_t>(std::min<uint64_t>(kTextChunkBytes, hint.size - consumed + 1));
    else
      chunk = last_chunk == 0 ? kFirstStreamChunk : std::min(kTextChunkBytes, last_chunk * 2);
    if (b.mem.size() < prefix + chunk + 2) {
      buffer<char> fresh;  // the old bytes are not needed: no copy
      fresh.resize(prefix + chunk + 2);
      advise_huge_pages(fresh.data(), fresh.size());  // a large buffer: fewer page faults
      b.mem.swap(fresh);
    }
    b.prefix = b.mem.size() - chunk - 2;  // >= prefix
    b.chunk = chunk;
  };
  // Progress while a chunk is read: the reader thread asks for the chunk in
  // pieces and publishes the input's fraction after each one; the calling
  // thread, waiting for the chunk, reports it (the callback belongs to the
  // calling thread). Without this a compressed input, whose 32 MiB chunks
  // take seconds to decompress, showed no progress in between.
  static constexpr size_t kProgressPieceBytes = size_t(2) << 20;
  std::atomic<double> read_fraction{-1.0};
  auto fill = [&produce, &hint, &read_fraction](char* dst, size_t n) {
    size_t got = 0;
    while (got < n) {
      const size_t r = produce(dst + got, std::min(n - got, kProgressPieceBytes));
      if (r == 0) break;
      got += r;
      if (hint.fraction) read_fraction.store(hint.fraction(), std::memory_order_relaxed);
    }
    return got;
  };
  int cur = 0;
  prepare(bufs[0], 1, 0);
  size_t got = fill(bufs[0].text(), bufs[0].chunk);
  consumed += got;
  size_t carry = 0;          // incomplete line carried in front of the new text
  uint64_t offset = 0;       // stream offset of the carried line's start
  uint64_t line = 1;         // its line number
  bool skipping = false;     // inside an over-long comment line
  for (;;) {
    const bool eof = got < bufs[cur].chunk;
    const double f = hint.fraction ? hint.fraction() : -1.0;  // before the reader thread runs again
    parser.set_fraction(f);
    // The future's destructor waits for the read, also when parsing throws.
    std::future<size_t> next;
    size_t next_got = 0;  // a synchronous read when no thread can be started
    bool read_ahead = false;
    if (!eof) {
      // What this buffer leaves over (at most all it holds) is carried in
      // front of the next chunk.
      prepare(bufs[1 - cur], std::min(kMaxLineBytes, carry + got) + 1, bufs[cur].chunk);
      Buf& o = bufs[1 - cur];
      try {
        next = std::async(std::launch::async, fill, o.text(), o.chunk);
        read_ahead = true;
      } catch (const std::system_error&) {
        next_got = fill(o.text(), o.chunk);
      }
    }
    char* buf = bufs[cur].text() - carry;
    char* other = bufs[1 - cur].text();  // where the next chunk's new text starts
    size_t len = carry + got;
    size_t begin = 0;
    bool whole_chunk_skipped = false;
    // NUL bytes: checked here until the entries start, then while counting
    // lines in parallel (and below for an over-long remainder).
    if (!parser.in_entries()) nul_byte(path, buf, buf + len, offset, line);
    if (skipping) {
      const char* nl = static_cast<const char*>(std::memchr(buf, '\n', len));
      nul_byte(path, buf, nl ? nl : buf + len, offset, line);
      if (nl) {
        begin = static_cast<size_t>(nl - buf) + 1;
        ++line;
        skipping = false;
      } else {
        whole_chunk_skipped = true;
      }
    }
    if (whole_chunk_skipped) {
      offset += len;
      carry = 0;
    } else {
      if (eof && len > begin && buf[len - 1] != '\n') buf[len++] = '\n';
      const char* last = len > begin ? static_cast<const char*>(memrchr(buf + begin, '\n', len - begin)) : nullptr;
      const size_t end = last ? static_cast<size_t>(last - buf) + 1 : begin;
      buf[len] = '\n';  // count_lines reads one byte past the region
      if (end > begin) line = parser.lines(buf + begin, buf + end, offset + begin, line);
      const size_t rem = len - end;
      if (rem > kMaxLineBytes) {
        const char* p = buf + end;
        while (p < buf + len && is_space(*p)) ++p;
        if (p < buf + len && *p == '#') {
          skipping = true;  // skipped without being held
          offset += len;
          carry = 0;
        } else {
          nul_byte(path, buf + end, buf + len, offset + end, line);
          if (has_bare_cr(buf + end, buf + len)) cr_only(path, line);
          fail(SPT_ERR_PARSE, path, ":", line, ": line at byte offset ", offset + end, " is longer than the ",
               kMaxLineBytes, "-byte limit (no line break in the next ", rem, " bytes)");
        }
      } else {
        // The reader thread writes only from `other` on. (At the end rem is
        // 0 and the other buffer may be unallocated.)
        if (rem != 0) std::memcpy(other - rem, buf + end, rem);
        offset += end;
        carry = rem;
      }
    }
    if (f >= 0.0) progress(ctx, "read", 0.95 * f);
    if (eof) break;
    if (read_ahead) {
      while (next.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
        const double rf = read_fraction.load(std::memory_order_relaxed);
        if (rf >= 0.0) progress(ctx, "read", 0.95 * rf);
      }
    }
    got = read_ahead ? next.get() : next_got;
    consumed += got;
    cur = 1 - cur;
  }
  spt_coo_s x = parser.finish(offset, line, layout);
  progress(ctx, "read", 1.0);
  return x;
}

spt_coo_s read_tns_text(const spt_context_s& ctx, const char* data, size_t size, const std::string& path,
                        const ReadOptions& opts, TextLayout* layout) {
  size_t pos = 0;
  auto produce = [&](char* dst, size_t n) {
    const size_t k = std::min(n, size - pos);
    std::memcpy(dst, data + pos, k);
    pos += k;
    return k;
  };
  StreamHint hint;
  hint.fraction = [&] { return size ? static_cast<double>(pos) / static_cast<double>(size) : -1.0; };
  hint.size = size;
  return read_tns_text_stream(ctx, produce, hint, path, opts, layout);
}

uint64_t tns_entry_line(const char* data, size_t size, const TextLayout& layout, uint64_t k) {
  size_t pos = layout.data_offset;
  uint64_t line = layout.data_first_line;
  LineRef ref;
  uint64_t seen = 0;
  while (next_content_line(data, size, pos, line, ref)) {
    if (seen == k) return ref.number;
    ++seen;
  }
  return 0;
}

uint64_t tns_entry_line(const std::function<size_t(char*, size_t)>& produce, const TextLayout& layout, uint64_t k) {
  // Line by line through a fixed buffer; over-long lines are comments here
  // (the parse that found entry k accepted every entry line).
  std::vector<char> buf(2 * kMaxLineBytes);
  size_t have = 0;
  uint64_t offset = 0;  // stream offset of buf[0]
  uint64_t line = 1;
  uint64_t seen = 0;
  bool eof = false, skipping = false;
  while (!eof || have > 0) {
    if (!eof) {
      const size_t r = produce(buf.data() + have, buf.size() - have);
      if (r == 0) eof = true;
      have += r;
    }
    size_t p = 0;
    for (;;) {
      const char* nl = static_cast<const char*>(std::memchr(buf.data() + p, '\n', have - p));
      if (!nl && !(eof && p < have)) break;
      const size_t e = nl ? static_cast<size_t>(nl - buf.data()) : have;
      if (!skipping && offset + p >= layout.data_offset) {
        size_t q = p;
        while (q < e && is_space(buf[q])) ++q;
        if (q < e && buf[q] != '#') {
          if (seen == k) return line;
          ++seen;
        }
      }
      skipping = false;
      p = nl ? e + 1 : have;
      ++line;
    }
    if (p == 0 && have == buf.size()) {  // a line longer than the buffer: skip it
      skipping = true;                    // (counted once, when its '\n' arrives)
      p = have;
    }
    std::memmove(buf.data(), buf.data() + p, have - p);
    offset += p;
    have -= p;
  }
  return 0;
}

}  // namespace spt::io
