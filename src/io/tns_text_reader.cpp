#include "io/tns_text_reader.hpp"

#include <omp.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string_view>
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

// Number of tokens in [b, e).
size_t count_tokens(const char* b, const char* e) {
  size_t n = 0;
  const char* p = b;
  while (p < e) {
    while (p < e && is_space(*p)) ++p;
    if (p >= e || *p == '\n') break;
    ++n;
    while (p < e && !is_separator(*p)) ++p;
  }
  return n;
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
};

struct Chunk {
  const char* begin;
  const char* end;  // every line in [begin, end) ends with '\n'
  uint64_t first_line = 0;
  spt_nnz first_entry = 0;  // upper-bound offset into the output arrays
  spt_nnz lines = 0;
};

struct ParseSetup {
  uint32_t order;
  uint64_t base;
  const spt_index* dim_limit;  // nullptr: dims are inferred
  bool reject_nonfinite;
  spt_index* const* ind;       // order output arrays
};

template <typename T>
bool parse_value(const char*& q, const char* end, T& out) {
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
  auto problem = [&](Problem what, const char* line_begin, const char* tok, uint32_t column) {
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
      p = q + 1;
      ++line;
      continue;
    }
    if (*q == '#') {  // comment line
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
    p = q + 1;
    ++line;
    ++k;
  }
  res.count = k - c.first_entry;
}

std::string_view token_at(const char* t) {
  const char* e = t;
  while (!is_separator(*e) && e - t < 64) ++e;
  return std::string_view(t, static_cast<size_t>(e - t));
}

[[noreturn]] void report(const ChunkResult& r, const std::string& path, uint32_t order, int base,
                         const std::string& order_source, const spt_index* dim_limit) {
  const std::string where = cat(path, ":", r.line, ": column ", r.column);
  const std::string tok = r.token ? quote(token_at(r.token)) : "''";
  // A wrong column count explains any other problem on the line best
  // ("1 2 3.0" in an order-3 file lacks a column; '3.0' is not the issue).
  // The line is complete in memory up to its '\n' (chunks end with one).
  const char* nl = r.line_begin;
  while (*nl != '\n') ++nl;
  const size_t found = tokens_of(r.line_begin, nl).size();
  if (found != static_cast<size_t>(order) + 1)
    fail(SPT_ERR_PARSE, path, ":", r.line, ": expected ", order + 1, " columns (", order, " indices and a value; order ",
         order, " ", order_source, "), found ", found);
  switch (r.problem) {
    case Problem::kTooFewColumns:
    case Problem::kTooManyColumns:
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

// Count '\n' bytes (vectorises well).
spt_nnz count_newlines(const char* b, const char* e) {
  spt_nnz n = 0;
  for (const char* p = b; p < e; ++p) n += (*p == '\n');
  return n;
}

}  // namespace

spt_coo_s read_tns_text(const spt_context_s& ctx, const char* data, size_t size, const std::string& path,
                        const ReadOptions& opts, TextLayout* layout) {
  const int threads = thread_count(ctx);
  const int base = opts.index_base;
  progress(ctx, "read", 0.0);

  // ---- Header and order detection (sequential, first lines only) ----------
  size_t pos = 0;
  uint64_t line = 1;
  LineRef first;
  bool has_content = size > 0 && next_content_line(data, size, pos, line, first);
  bool extended = false;
  uint32_t order = 0;
  std::vector<spt_index> header_dims;
  std::string order_source;
  LineRef entry;
  bool has_entries = false;

  if (has_content) {
    auto toks = tokens_of(first.begin, first.end);
    extended = opts.format == SPT_FORMAT_TNS_EXTENDED || (opts.format != SPT_FORMAT_TNS && toks.size() == 1);
    if (opts.format == SPT_FORMAT_TNS && toks.size() < 2)
      fail(SPT_ERR_PARSE, path, ":", first.number, ": expected at least 2 columns (indices then a value), found ",
           toks.size(), "; files with an order/dims header need SPT_FORMAT_TNS_EXTENDED or SPT_FORMAT_AUTO");
    if (extended) {
      const std::string where = cat(path, ":", first.number);
      if (toks.size() != 1)
        fail(SPT_ERR_PARSE, where, ": extended .tns header: expected the order (one integer) on the first line, found ",
             toks.size(), " tokens");
      uint64_t n = header_integer(toks[0], where, "the order");
      if (n < 1) fail(SPT_ERR_PARSE, where, ": extended .tns header: order must be >= 1, found ", n);
      if (n > SPT_MAX_ORDER)
        fail(SPT_ERR_PARSE, where, ": extended .tns header: order ", n, " is above the supported maximum SPT_MAX_ORDER = ",
             SPT_MAX_ORDER);
      order = static_cast<uint32_t>(n);
      LineRef dims_line;
      if (!next_content_line(data, size, pos, line, dims_line))
        fail(SPT_ERR_PARSE, path, ":", line, ": extended .tns header: expected a line with ", order,
             " dims after the order line, found the end of the file");
      const std::string dwhere = cat(path, ":", dims_line.number);
      auto dtoks = tokens_of(dims_line.begin, dims_line.end);
      if (dtoks.size() != order)
        fail(SPT_ERR_PARSE, dwhere, ": extended .tns header: expected ", order, " dims (order ", order, " from line ",
             first.number, "), found ", dtoks.size());
      header_dims.resize(order);
      for (uint32_t m = 0; m < order; ++m) {
        uint64_t d = header_integer(dtoks[m], dwhere, "a dimension");
        if (d == 0) fail(SPT_ERR_PARSE, dwhere, ": extended .tns header: dims[", m, "] is 0; dims must be >= 1");
        if (d > UINT32_MAX)
          fail(SPT_ERR_OVERFLOW, dwhere, ": extended .tns header: dims[", m, "] = ", d,
               " does not fit a 32-bit spt_index (at most 4294967295)");
        header_dims[m] = static_cast<spt_index>(d);
      }
      if (opts.order != 0 && opts.order != order)
        fail(SPT_ERR_PARSE, where, ": the header gives order ", order, " but the caller expects order ", opts.order);
      if (!opts.dims.empty()) {
        for (uint32_t m = 0; m < order; ++m)
          if (opts.dims[m] != header_dims[m])
            fail(SPT_ERR_PARSE, dwhere, ": the header gives dims[", m, "] = ", header_dims[m],
                 " but the caller passed dims[", m, "] = ", opts.dims[m]);
      }
      order_source = cat("from the header on line ", first.number);
      has_entries = next_content_line(data, size, pos, line, entry);
    } else {
      entry = first;
      has_entries = true;
    }
  }

  if (has_entries) {
    // Counted without storing the tokens: one pass, no allocation, even for
    // a line of millions of columns (refused below by its count).
    const size_t ncols = count_tokens(entry.begin, entry.end);
    if (extended || opts.order != 0) {
      if (!extended) {
        order = opts.order;
        order_source = "given by the caller";
      }
      if (ncols != static_cast<size_t>(order) + 1)
        fail(SPT_ERR_PARSE, path, ":", entry.number, ": expected ", order + 1, " columns (", order,
             " indices and a value; order ", order, " ", order_source, "), found ", ncols);
    } else {
      // Checked before anything is sized by the order (a single long line
      // would otherwise mean millions of per-mode arrays).
      if (ncols > static_cast<size_t>(SPT_MAX_ORDER) + 1)
        fail(SPT_ERR_PARSE, path, ":", entry.number, ": the first entry has ", ncols, " columns, i.e. order ", ncols - 1,
             ", above the supported maximum SPT_MAX_ORDER = ", SPT_MAX_ORDER);
      order = static_cast<uint32_t>(ncols - 1);
      order_source = cat("from the first entry on line ", entry.number);
    }
  }

  // Dims every index must respect: the caller's, else the header's.
  std::vector<spt_index> dim_limit = !opts.dims.empty() ? opts.dims : header_dims;

  spt_coo_s x;
  if (!has_entries) {
    if (dim_limit.empty())
      fail(SPT_ERR_PARSE, path, ": no nonzeros (the file is empty or holds only comments and blank lines); ",
           "an empty tensor has no dims to infer: pass order and dims in spt_read_options");
    x.init_owned(opts.dtype, dim_limit, 0);
    if (layout) *layout = {size, line, extended};
    progress(ctx, "read", 1.0);
    return x;
  }
  if (!dim_limit.empty() && dim_limit.size() != order)
    fail(SPT_ERR_PARSE, path, ":", entry.number, ": the entries have order ", order, " but the caller passed ",
         dim_limit.size(), " dims");

  const size_t data_offset = static_cast<size_t>(entry.begin - data);
  if (layout) *layout = {data_offset, entry.number, extended};

  // ---- Chunks at line boundaries -------------------------------------------
  // A last line without '\n' is copied with one appended, so the parser can
  // rely on every line ending in '\n' and never reads past its chunk.
  const char* region = data + data_offset;
  const char* region_end = data + size;
  std::string tail;
  if (region_end[-1] != '\n') {
    const char* last_nl = region_end - 1;
    while (last_nl >= region && *last_nl != '\n') --last_nl;
    const char* tail_begin = last_nl + 1;
    tail.assign(tail_begin, region_end);
    tail.push_back('\n');
    region_end = tail_begin;
  }
  const size_t region_size = static_cast<size_t>(region_end - region);
  size_t target = std::max<size_t>(static_cast<size_t>(threads) * 4, region_size >> 22);  // <= ~4 MiB each
  target = std::min(target, std::max<size_t>(1, region_size >> 14));                   // >= ~16 KiB each
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
  if (!tail.empty()) chunks.push_back({tail.data(), tail.data() + tail.size()});
  const size_t nchunks = chunks.size();

#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (size_t c = 0; c < nchunks; ++c) chunks[c].lines = count_newlines(chunks[c].begin, chunks[c].end);
  spt_nnz capacity = 0;
  uint64_t line_no = entry.number;
  for (Chunk& c : chunks) {
    c.first_entry = capacity;
    c.first_line = line_no;
    capacity += c.lines;
    line_no += c.lines;
  }
  progress(ctx, "read", 0.05);

  // ---- Parse in batches (progress between batches) --------------------------
  x.init_owned(opts.dtype, std::vector<spt_index>(order, 1), capacity);
  advise_huge_pages(x);
  std::vector<ChunkResult> results(nchunks);
  for (auto& r : results) r.max_index.assign(order, 0);
  std::vector<spt_index*> ind(order);
  for (uint32_t m = 0; m < order; ++m) ind[m] = x.mutable_ind(m);
  ParseSetup setup{order, static_cast<uint64_t>(base), dim_limit.empty() ? nullptr : dim_limit.data(),
                   opts.reject_nonfinite, ind.data()};
  const size_t batch = static_cast<size_t>(threads) * 8;
  with_dtype(opts.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* values = x.template mutable_values<T>();
    for (size_t first_chunk = 0; first_chunk < nchunks; first_chunk += batch) {
      const size_t last_chunk = std::min(nchunks, first_chunk + batch);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
      for (size_t c = first_chunk; c < last_chunk; ++c) parse_chunk<T>(chunks[c], setup, values, results[c]);
      for (size_t c = first_chunk; c < last_chunk; ++c)
        if (results[c].problem != Problem::kNone)
          report(results[c], path, order, base, order_source, setup.dim_limit);
      progress(ctx, "read", 0.05 + 0.9 * static_cast<double>(last_chunk) / static_cast<double>(nchunks));
    }
  });

  // ---- Close the gaps left by blank and comment lines ------------------------
  spt_nnz total = 0;
  const size_t value_size = dtype_size(opts.dtype);
  char* values_bytes = static_cast<char*>(x.own_val.data());
  for (size_t c = 0; c < nchunks; ++c) {
    const spt_nnz from = chunks[c].first_entry, n = results[c].count;
    if (from != total && n > 0) {
      for (uint32_t m = 0; m < order; ++m) std::memmove(ind[m] + total, ind[m] + from, n * sizeof(spt_index));
      std::memmove(values_bytes + total * value_size, values_bytes + from * value_size, n * value_size);
    }
    total += n;
  }
  x.resize(total);

  if (!dim_limit.empty()) {
    x.dims = dim_limit;
  } else {
    for (uint32_t m = 0; m < order; ++m) {
      spt_index mx = 0;
      for (const auto& r : results) mx = std::max(mx, r.max_index[m]);
      x.dims[m] = mx + 1;  // mx <= 2^32 - 2, so this fits
    }
  }
  progress(ctx, "read", 1.0);
  return x;
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

}  // namespace spt::io
