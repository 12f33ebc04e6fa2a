#include "io/tns_text_writer.hpp"

#include <omp.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace spt::io {

namespace {

constexpr spt_nnz kEntriesPerChunk = spt_nnz(1) << 17;
constexpr size_t kMaxIndexChars = 11;  // 4294967295 plus a separator
constexpr size_t kMaxValueChars = 64;  // generous for any double in any format

template <typename T>
size_t format_chunk(const spt_coo_s& x, spt_nnz begin, spt_nnz end, uint64_t base, int precision, char* out) {
  const uint32_t order = x.order();
  const T* values = x.values<T>();
  char* p = out;
  for (spt_nnz k = begin; k < end; ++k) {
    for (uint32_t m = 0; m < order; ++m) {
      p = std::to_chars(p, p + kMaxIndexChars, static_cast<uint64_t>(x.ind[m][k]) + base).ptr;
      *p++ = ' ';
    }
    const T v = values[k];
    char* limit = p + kMaxValueChars;
    if (precision > 0) p = std::to_chars(p, limit, v, std::chars_format::general, precision).ptr;
    else p = std::to_chars(p, limit, v).ptr;  // shortest exact round trip
    *p++ = '\n';
  }
  return static_cast<size_t>(p - out);
}

}  // namespace

bool tns_needs_header(const spt_context_s& ctx, const spt_coo_s& x) {
  if (x.nnz == 0) return true;
  const uint32_t order = x.order();
  const int threads = thread_count(ctx);
  for (uint32_t m = 0; m < order; ++m) {
    const spt_index* ind = x.ind[m];
    spt_index mx = 0;
#pragma omp parallel for num_threads(threads) reduction(max : mx) schedule(static)
    for (spt_nnz k = 0; k < x.nnz; ++k) mx = std::max(mx, ind[k]);
    if (static_cast<uint64_t>(mx) + 1 != x.dims[m]) return true;
  }
  return false;
}

void write_tns_text(const spt_context_s& ctx, const spt_coo_s& x, Sink& out, const WriteOptions& opts, bool extended) {
  const uint32_t order = x.order();
  const uint64_t base = static_cast<uint64_t>(opts.index_base);
  const int threads = thread_count(ctx);
  // More digits than max_digits10 add nothing; clamp so the buffer bound holds.
  const int precision =
      std::min(opts.precision, x.dtype() == SPT_FLOAT32 ? std::numeric_limits<float>::max_digits10
                                                        : std::numeric_limits<double>::max_digits10);
  progress(ctx, "write", 0.0);

  if (extended) {
    std::string header = cat(order, "\n");
    for (uint32_t m = 0; m < order; ++m) header += cat(x.dims[m], m + 1 < order ? " " : "\n");
    out.write(header.data(), header.size());
  }

  const size_t bytes_per_entry = order * kMaxIndexChars + kMaxValueChars + 1;
  const size_t chunks_per_batch = static_cast<size_t>(threads) * 2;
  std::vector<buffer<char>> text(chunks_per_batch);
  std::vector<size_t> used(chunks_per_batch);
  const spt_nnz batch_entries = kEntriesPerChunk * chunks_per_batch;
  for (auto& t : text) t.resize(std::min<spt_nnz>(kEntriesPerChunk, x.nnz) * bytes_per_entry);

  with_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (spt_nnz batch_begin = 0; batch_begin < x.nnz; batch_begin += batch_entries) {
      const spt_nnz batch_end = std::min(x.nnz, batch_begin + batch_entries);
      const size_t nchunks = static_cast<size_t>((batch_end - batch_begin + kEntriesPerChunk - 1) / kEntriesPerChunk);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
      for (size_t c = 0; c < nchunks; ++c) {
        const spt_nnz b = batch_begin + c * kEntriesPerChunk;
        const spt_nnz e = std::min(batch_end, b + kEntriesPerChunk);
        used[c] = format_chunk<T>(x, b, e, base, precision, text[c].data());
      }
      for (size_t c = 0; c < nchunks; ++c) out.write(text[c].data(), used[c]);
      progress(ctx, "write", static_cast<double>(batch_end) / static_cast<double>(x.nnz));
    }
  });
  progress(ctx, "write", 1.0);
}

}  // namespace spt::io
