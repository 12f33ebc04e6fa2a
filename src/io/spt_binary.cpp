#include "io/spt_binary.hpp"

#include <algorithm>
#include <cstring>
#include <iomanip>
#include <limits>
#include <memory>
#include <sstream>
#include <type_traits>
#include <vector>

#include "core/parallel_errors.hpp"
#include "core/value_range.hpp"
#include "io/binary_util.hpp"
#include "io/checksum.hpp"
#include "io/memory.hpp"

namespace spt::io {

namespace {

constexpr uint32_t kEndianMarker = 0x01020304u;
constexpr uint32_t kSwappedMarker = 0x04030201u;
constexpr size_t kChecksumOffset = 40;

uint64_t pad8(uint64_t n) { return (n + 7) & ~uint64_t(7); }

// One payload section: `bytes` of data at `offset`, followed by zero
// padding up to the next multiple of 8.
struct Section {
  uint64_t offset = 0;
  uint64_t bytes = 0;
  void* dst = nullptr;          // reading: where the data goes
  const void* src = nullptr;    // writing: where the data comes from
};

constexpr uint64_t kBlockBytes = kSptbChecksumBlockBytes;  // checksum block (stays in L2)
constexpr uint64_t kPieceBytes = uint64_t(1) << 14;  // read-side streaming piece (16 KiB, stays in L1)

// True when some ind[k] >= limit. Written as compare-and-OR into eight
// independent lanes: GCC turns it into SSE2 compares with no loop-carried
// max chain (a std::max reduction compiled to a 5-instruction unsigned-max
// emulation on one accumulator and took as long as the checksum).
inline bool any_index_at_least(const spt_index* ind, uint64_t n, spt_index limit) {
  uint32_t lanes[8] = {};
  uint64_t k = 0;
  for (; k + 8 <= n; k += 8)
    for (int j = 0; j < 8; ++j) lanes[j] |= static_cast<uint32_t>(ind[k + j] >= limit);
  uint32_t any = 0;
  for (; k < n; ++k) any |= static_cast<uint32_t>(ind[k] >= limit);
  for (int j = 0; j < 8; ++j) any |= lanes[j];
  return any != 0;
}

// Section sizes for a tensor; returns the payload size, failing with
// `overflow_code` when the sizes do not fit 64 bits.
uint64_t layout_sections(uint32_t order, uint64_t nnz, uint64_t value_size, std::vector<Section>& sections,
                         const std::string& path) {
  sections.assign(order + 2, Section{});
  uint64_t pos = kSptbHeaderBytes;
  auto add = [&](Section& s, uint64_t bytes) {
    s.offset = pos;
    s.bytes = bytes;
    if (bytes > std::numeric_limits<uint64_t>::max() - 8 - pos)
      fail(SPT_ERR_PARSE, path, ": corrupt .sptb header: ", nnz, " nonzeros of order ", order,
           " would need more than 2^64 bytes");
    pos += pad8(bytes);
  };
  auto checked = [&](uint64_t a, uint64_t b) {
    if (a != 0 && b > std::numeric_limits<uint64_t>::max() / a)
      fail(SPT_ERR_PARSE, path, ": corrupt .sptb header: ", nnz, " nonzeros of order ", order,
           " would need more than 2^64 bytes");
    return a * b;
  };
  add(sections[0], uint64_t(order) * 4);
  for (uint32_t m = 0; m < order; ++m) add(sections[1 + m], checked(nnz, 4));
  add(sections[order + 1], checked(nnz, value_size));
  return pos - kSptbHeaderBytes;
}

// in.read_at of n bytes at `offset` into dst, split into pieces read by
// several threads (large reads into fresh memory are bound by page faults
// and per-core copy bandwidth). A file that shrank is SPT_ERR_IO.
void parallel_read(const InputSource& in, uint64_t offset, void* dst, uint64_t n, int threads) {
  constexpr uint64_t kPiece = uint64_t(8) << 20;
  const uint64_t pieces = (n + kPiece - 1) / kPiece;
  ParallelErrors errors;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1) if (pieces > 1)
  for (uint64_t i = 0; i < pieces; ++i) {
    errors.run([&] {
      const uint64_t b = i * kPiece;
      in.read_at(offset + b, static_cast<char*>(dst) + b, static_cast<size_t>(std::min(kPiece, n - b)));
    });
  }
  errors.rethrow();
}

std::string hex(uint64_t v) {
  std::ostringstream os;
  os << "0x" << std::hex << std::setw(16) << std::setfill('0') << v;
  return os.str();
}

uint64_t combine(uint64_t header_digest, const std::vector<uint64_t>& block_digests) {
  Xxh64 h;
  h.update(&header_digest, sizeof(header_digest));
  h.update(block_digests.data(), block_digests.size() * sizeof(uint64_t));
  return h.digest();
}

}  // namespace

bool looks_like_sptb(const unsigned char* head, size_t n) { return n >= 4 && std::memcmp(head, "SPTB", 4) == 0; }

uint64_t sptb_declared_bytes(const unsigned char* head, size_t n) {
  if (n < kSptbHeaderBytes) return kSptbHeaderBytes;
  const uint32_t file_dtype = load_le<uint32_t>(head + 12);
  const uint32_t order = load_le<uint32_t>(head + 16);
  const uint64_t nnz = load_le<uint64_t>(head + 24);
  const uint64_t payload = load_le<uint64_t>(head + 32);
  if (file_dtype != static_cast<uint32_t>(SPT_FLOAT32) && file_dtype != static_cast<uint32_t>(SPT_FLOAT64))
    return kSptbHeaderBytes;
  std::vector<Section> sections;
  try {
    if (layout_sections(order, nnz, dtype_size(static_cast<spt_dtype>(file_dtype)), sections, "") != payload)
      return kSptbHeaderBytes;
  } catch (const Error&) {
    return kSptbHeaderBytes;  // read_sptb_header names the problem
  }
  return kSptbHeaderBytes + payload;
}

SptbHeader read_sptb_header(InputSource& in) {
  require_little_endian_host(".sptb");
  if (!in.random_access()) {
    // A stream is held whole, but never beyond the size its header declares.
    unsigned char first[kSptbHeaderBytes];
    in.load(sptb_declared_bytes(first, in.peek(first, sizeof(first))));
  }
  const std::string& path = in.path();
  const uint64_t size = in.size();
  if (size < kSptbHeaderBytes)
    fail(SPT_ERR_PARSE, path, ": truncated .sptb file: ", size, " bytes, shorter than its ", kSptbHeaderBytes,
         "-byte header");
  unsigned char head[kSptbHeaderBytes];
  in.read_at(0, head, sizeof(head));
  if (!looks_like_sptb(head, sizeof(head)))
    fail(SPT_ERR_PARSE, path, ": bad magic: expected \"SPTB\" at the start of a .sptb file");
  const uint32_t version = load_le<uint32_t>(head + 4);
  const uint32_t marker = load_le<uint32_t>(head + 8);
  if (marker == kSwappedMarker)
    fail(SPT_ERR_UNSUPPORTED, path, ": the .sptb file was written big-endian; this build reads little-endian files");
  if (marker != kEndianMarker) fail(SPT_ERR_PARSE, path, ": corrupt .sptb header (bad endianness marker)");
  if (version != kSptbVersion)
    fail(version > kSptbVersion ? SPT_ERR_UNSUPPORTED : SPT_ERR_PARSE, path, ": .sptb format version ", version,
         " is not supported (this library reads version ", kSptbVersion, ")",
         version > kSptbVersion ? "; upgrade libsptensor to read it" : "");
  const uint32_t file_dtype = load_le<uint32_t>(head + 12);
  const uint32_t order = load_le<uint32_t>(head + 16);
  const uint32_t index_bytes = load_le<uint32_t>(head + 20);
  const uint64_t nnz = load_le<uint64_t>(head + 24);
  const uint64_t payload = load_le<uint64_t>(head + 32);
  const uint64_t stored_checksum = load_le<uint64_t>(head + kChecksumOffset);
  // Compared as an integer: casting an arbitrary file value to spt_dtype
  // first is undefined behaviour (UBSan, found by fuzzing).
  if (file_dtype != static_cast<uint32_t>(SPT_FLOAT32) && file_dtype != static_cast<uint32_t>(SPT_FLOAT64))
    fail(SPT_ERR_PARSE, path, ": corrupt .sptb header: dtype ", file_dtype, " (expected 1 or 2)");
  if (order < 1) fail(SPT_ERR_PARSE, path, ": corrupt .sptb header: order 0");
  // The dims alone take order * 4 bytes: check that before sizing anything
  // by the order (a corrupt order would otherwise allocate gigabytes).
  if (uint64_t(order) * 4 > size - kSptbHeaderBytes)
    fail(SPT_ERR_PARSE, path, ": truncated .sptb file: the header says order ", order, ", whose dims need ",
         uint64_t(order) * 4, " bytes, but the file has ", size - kSptbHeaderBytes, " after the header");
  if (order > SPT_MAX_ORDER)
    fail(SPT_ERR_PARSE, path, ": the .sptb header gives order ", order,
         ", above the supported maximum SPT_MAX_ORDER = ", SPT_MAX_ORDER);
  if (index_bytes != 4)
    fail(SPT_ERR_PARSE, path, ": corrupt .sptb header: ", index_bytes, "-byte indices (version 1 has 4)");
  SptbHeader h;
  h.dtype = static_cast<spt_dtype>(file_dtype);
  h.order = order;
  h.nnz = nnz;
  h.payload = payload;
  h.stored_checksum = stored_checksum;
  std::vector<Section> sections;
  const uint64_t expected = layout_sections(order, nnz, dtype_size(h.dtype), sections, path);
  if (payload != expected)
    fail(SPT_ERR_PARSE, path, ": corrupt .sptb header: payload size ", payload, " does not match ", nnz,
         " nonzeros of order ", order, " (", expected, " bytes)");
  if (size - kSptbHeaderBytes < payload)
    fail(SPT_ERR_PARSE, path, ": truncated .sptb file: the header says ", nnz, " nonzeros of order ", order,
         ", which needs ", kSptbHeaderBytes + payload, " bytes, but the file has ", size);
  if (size - kSptbHeaderBytes > payload)
    fail(SPT_ERR_PARSE, path, ": .sptb file has ", size - kSptbHeaderBytes - payload,
         " unexpected bytes after its values");
  for (const Section& s : sections) h.section_offsets.push_back(s.offset);
  h.dims.resize(order);
  in.read_at(sections[0].offset, h.dims.data(), order * sizeof(spt_index));
  store_le<uint64_t>(head + kChecksumOffset, 0);
  h.header_digest = Xxh64::hash(head, sizeof(head));
  return h;
}

std::vector<uint64_t> sptb_block_digests(const spt_context_s& ctx, InputSource& in, const SptbHeader& h,
                                         uint64_t first, uint64_t last) {
  last = std::min(last, h.blocks());
  first = std::min(first, last);
  // A loaded stream is hashed in place; a plain file is read by copy, one
  // checksum block at a time into a per-thread buffer (never mapped: a
  // mapped file truncated while in use raises SIGBUS; read_at reports
  // SPT_ERR_IO instead).
  const char* image = in.random_access() ? nullptr : in.bytes();
  std::vector<uint64_t> digests(last - first);
  ParallelErrors errors;
#pragma omp parallel num_threads(thread_count(ctx))
  {
    buffer<char> local;  // sized on the first block (inside run: it may throw)
#pragma omp for schedule(dynamic, 4)
    for (uint64_t b = first; b < last; ++b) {
      errors.run([&] {
        const uint64_t begin = kSptbHeaderBytes + b * kBlockBytes;
        const uint64_t end = std::min(kSptbHeaderBytes + h.payload, begin + kBlockBytes);
        const char* src = image ? image + begin : nullptr;
        if (!src) {
          if (local.size() < kBlockBytes) local.resize(kBlockBytes);
          in.read_at(begin, local.data(), end - begin);
          src = local.data();
        }
        digests[b - first] = Xxh64::hash(src, end - begin);
      });
    }
  }
  errors.rethrow();
  return digests;
}

void verify_sptb_checksum(const SptbHeader& h, const std::vector<uint64_t>& digests, const std::string& path) {
  if (digests.size() != h.blocks())
    fail(SPT_ERR_INTERNAL, path, ": ", digests.size(), " checksum block digests for ", h.blocks(), " blocks");
  const uint64_t computed = combine(h.header_digest, digests);
  if (computed != h.stored_checksum)
    fail(SPT_ERR_PARSE, path, ": wrong checksum: the .sptb file is corrupt (stored ", hex(h.stored_checksum),
         ", computed ", hex(computed), "); re-create it from the source data");
}

spt_coo_s read_spt_bin_range(const spt_context_s& ctx, InputSource& in, const SptbHeader& h, const ReadOptions& opts,
                             uint64_t begin, uint64_t end) {
  const std::string& path = in.path();
  if (begin > end || end > h.nnz)
    fail(SPT_ERR_INTERNAL, path, ": nonzero range [", begin, ", ", end, ") outside the file's ", h.nnz);
  for (uint32_t m = 0; m < h.order; ++m)
    if (h.dims[m] == 0) fail(SPT_ERR_PARSE, path, ": corrupt .sptb file: dims[", m, "] is 0");
  const uint64_t n = end - begin;
  const int threads = thread_count(ctx);
  spt_coo_s x;
  x.init_owned(opts.dtype, h.dims, n);
  advise_huge_pages(x);
  // Read by copy straight into the tensor's arrays (never mapped, see
  // sptb_block_digests): one slice of each section, in parallel pieces.
  for (uint32_t m = 0; m < h.order; ++m)
    parallel_read(in, h.section_offsets[1 + m] + begin * sizeof(spt_index), x.mutable_ind(m),
                  n * sizeof(spt_index), threads);
  const uint64_t values = h.section_offsets[h.order + 1];
  with_dtype(h.dtype, [&](auto stag) {
    using S = typename decltype(stag)::type;
    with_dtype(opts.dtype, [&](auto dtag) {
      using D = typename decltype(dtag)::type;
      D* d = x.template mutable_values<D>();
      if constexpr (std::is_same_v<S, D>) {
        parallel_read(in, values + begin * sizeof(S), d, n * sizeof(S), threads);
      } else {
        // The file's values first (this share only), then converted.
        buffer<unsigned char> file_values;
        file_values.resize(n * sizeof(S));
        parallel_read(in, values + begin * sizeof(S), file_values.data(), n * sizeof(S), threads);
        const unsigned char* s = file_values.data();
        if constexpr (std::is_same_v<S, double> && std::is_same_v<D, float>)
          check_float32_range(
              n, threads, path + ": reading float64 values as float32: ",
              [&](uint64_t k) { return load_le<double>(s + k * sizeof(double)); },
              [&](uint64_t k) { return nonzero_position(x, k, begin); });
#pragma omp parallel for num_threads(threads)
        for (uint64_t k = 0; k < n; ++k) d[k] = static_cast<D>(load_le<S>(s + k * sizeof(S)));
      }
    });
  });
  check_loaded_tensor(ctx, x, opts, path, true, begin);
  x.file_dtype = h.dtype;
  return x;
}

spt_coo_s read_spt_bin(const spt_context_s& ctx, InputSource& in, const ReadOptions& opts) {
  const std::string& path = in.path();
  const SptbHeader hdr = read_sptb_header(in);
  const uint32_t order = hdr.order;
  const uint64_t nnz = hdr.nnz;
  const uint64_t payload = hdr.payload;
  const spt_dtype fdtype = hdr.dtype;
  std::vector<Section> sections;
  layout_sections(order, nnz, dtype_size(fdtype), sections, path);

  progress(ctx, "read", 0.05);
  std::vector<spt_index> dims(order);
  spt_coo_s x;
  // A plain file is read by copy (pread) unless the caller opted into a
  // mapping: a mapped file that is truncated while in use raises SIGBUS.
  // Same dtype in file and result, from a mapping or a loaded stream: the
  // tensor's arrays are the image itself and loading costs one checksum
  // pass and no copy. Otherwise the payload is copied into owned arrays
  // (values converted when the requested dtype differs).
  const bool in_memory = !in.random_access();
  const bool zero_copy = fdtype == opts.dtype && (in_memory || opts.map_binary);
  std::shared_ptr<const char> owner;
  const char* image = nullptr;  // nullptr: read blocks with pread
  buffer<char> converted;  // file values when the requested dtype differs
  if (zero_copy) {
    owner = in.share_bytes();
    image = owner.get();
  } else {
    if (in_memory || opts.map_binary) image = in.bytes();
    x.init_owned(opts.dtype, std::vector<spt_index>(order, 1), nnz);
    advise_huge_pages(x);
    for (uint32_t m = 0; m < order; ++m) sections[1 + m].dst = x.mutable_ind(m);
    if (fdtype == opts.dtype) {
      sections[order + 1].dst = x.own_val.data();
    } else {
      converted.resize(nnz * dtype_size(fdtype));
      advise_huge_pages(converted.data(), converted.size());
      sections[order + 1].dst = converted.data();
    }
  }

  // Hash the payload block by block: a plain file's blocks are pread
  // straight into the arrays and hashed there; from an image (a mapping or
  // a loaded stream) each block is hashed in place and, when copying, its
  // pieces are copied into the arrays while in cache. Blocks are
  // independent, so this runs in parallel.
  const int threads = thread_count(ctx);
  // The dims come first so that every block can check its indices while
  // they are in cache (against the caller's dims when given).
  in.read_at(sections[0].offset, dims.data(), order * sizeof(spt_index));
  const std::vector<spt_index>& limit = opts.dims.empty() ? dims : opts.dims;
  if (limit.size() != order)
    fail(SPT_ERR_PARSE, path, ": the file holds an order-", order, " tensor but the caller expects order ",
         limit.size());
  const uint64_t nblocks = (payload + kBlockBytes - 1) / kBlockBytes;
  std::vector<uint64_t> block_digests(nblocks);
  int indices_outside = 0;
  std::vector<char> dims_bytes(image ? 0 : order * sizeof(spt_index));  // section 0 as stored
  ParallelErrors errors;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 4) reduction(| : indices_outside)
  for (uint64_t b = 0; b < nblocks; ++b) {
    errors.run([&] {
      const uint64_t begin = kSptbHeaderBytes + b * kBlockBytes;
      const uint64_t end = std::min(kSptbHeaderBytes + payload, begin + kBlockBytes);
      if (!image) {
        // By copy: each section's part of the block is pread straight into
        // its array and hashed (with the padding after it, as stored) and
        // bounds-checked while in cache; no intermediate buffer, one copy.
        Xxh64 h;
        for (size_t i = 0; i < sections.size(); ++i) {
          const Section& s = sections[i];
          const uint64_t lo = std::max(begin, s.offset), hi = std::min(end, s.offset + s.bytes);
          if (lo < hi) {
            char* dst = (i == 0 ? dims_bytes.data() : static_cast<char*>(s.dst)) + (lo - s.offset);
            in.read_at(lo, dst, hi - lo);
            h.update(dst, hi - lo);
            if (i >= 1 && i <= order)  // an index section
              indices_outside |= any_index_at_least(reinterpret_cast<const spt_index*>(dst),
                                                    (hi - lo) / sizeof(spt_index), limit[i - 1]);
          }
          const uint64_t pad_lo = std::max(begin, s.offset + s.bytes), pad_hi = std::min(end, s.offset + pad8(s.bytes));
          if (pad_lo < pad_hi) {
            char pad[8];
            in.read_at(pad_lo, pad, pad_hi - pad_lo);
            h.update(pad, pad_hi - pad_lo);
          }
        }
        block_digests[b] = h.digest();
        return;
      }
      // src[i] is the byte at file offset begin + i.
      const char* src = image + begin;
      // Streamed in L1-sized pieces: each piece is hashed, then copied and
      // bounds-checked while it is still in L1 (one pass over memory; the
      // streaming digest equals the one-shot digest of the block).
      Xxh64 h;
      for (uint64_t piece = begin; piece < end; piece += kPieceBytes) {
        const uint64_t piece_end = std::min(end, piece + kPieceBytes);
        h.update(src + (piece - begin), piece_end - piece);
        for (size_t i = 1; i < sections.size(); ++i) {
          const Section& s = sections[i];
          const uint64_t lo = std::max(piece, s.offset), hi = std::min(piece_end, s.offset + s.bytes);
          if (lo >= hi) continue;
          if (s.dst) std::memcpy(static_cast<char*>(s.dst) + (lo - s.offset), src + (lo - begin), hi - lo);
          if (i <= order)  // an index section
            indices_outside |= any_index_at_least(reinterpret_cast<const spt_index*>(src + (lo - begin)),
                                                  (hi - lo) / sizeof(spt_index), limit[i - 1]);
        }
      }
      block_digests[b] = h.digest();
    });
  }
  errors.rethrow();
  progress(ctx, "read", 0.8);

  verify_sptb_checksum(hdr, block_digests, path);

  for (uint32_t m = 0; m < order; ++m)
    if (dims[m] == 0) fail(SPT_ERR_PARSE, path, ": corrupt .sptb file: dims[", m, "] is 0");
  if (zero_copy) {
    x.own_ind.assign(order, {});
    x.own_val.set_dtype(fdtype);
    x.ind.resize(order);
    for (uint32_t m = 0; m < order; ++m)
      x.ind[m] = reinterpret_cast<const spt_index*>(image + sections[1 + m].offset);
    x.val = image + sections[order + 1].offset;
    x.nnz = nnz;
    x.backing = std::move(owner);
  }
  x.dims = dims;
  if (fdtype != opts.dtype) {
    with_dtype(fdtype, [&](auto stag) {
      using S = typename decltype(stag)::type;
      with_dtype(opts.dtype, [&](auto dtag) {
        using D = typename decltype(dtag)::type;
        const S* s = reinterpret_cast<const S*>(converted.data());
        if constexpr (std::is_same_v<S, double> && std::is_same_v<D, float>)
          check_float32_range(
              nnz, threads, path + ": reading float64 values as float32: ", [&](spt_nnz k) { return s[k]; },
              [&](spt_nnz k) { return nonzero_position(x, k); });
        D* d = x.template mutable_values<D>();
#pragma omp parallel for num_threads(threads)
        for (spt_nnz k = 0; k < nnz; ++k) d[k] = static_cast<D>(s[k]);
      });
    });
  }
  // Finds and names the offending nonzero when a block saw one.
  check_loaded_tensor(ctx, x, opts, path, indices_outside != 0);
  x.file_dtype = fdtype;
  progress(ctx, "read", 1.0);
  return x;
}

void write_spt_bin(const spt_context_s& ctx, const spt_coo_s& x, Sink& out) {
  require_little_endian_host(".sptb");
  const uint32_t order = x.order();
  std::vector<Section> sections;
  const uint64_t payload = layout_sections(order, x.nnz, dtype_size(x.dtype()), sections, "(writing)");
  sections[0].src = x.dims.data();
  for (uint32_t m = 0; m < order; ++m) sections[1 + m].src = x.ind[m];
  sections[order + 1].src = x.val;
  progress(ctx, "write", 0.0);

  // Digest each payload block from the tensor's arrays (zero padding
  // between sections included), in parallel.
  const unsigned char zeros[8] = {};
  const uint64_t nblocks = (payload + kBlockBytes - 1) / kBlockBytes;
  std::vector<uint64_t> block_digests(nblocks);
#pragma omp parallel for num_threads(thread_count(ctx)) schedule(dynamic, 4)
  for (uint64_t b = 0; b < nblocks; ++b) {
    const uint64_t begin = kSptbHeaderBytes + b * kBlockBytes;
    const uint64_t end = std::min(kSptbHeaderBytes + payload, begin + kBlockBytes);
    Xxh64 h;
    for (const Section& s : sections) {
      const uint64_t padded_end = s.offset + pad8(s.bytes);
      const uint64_t lo = std::max(begin, s.offset), hi = std::min(end, padded_end);
      if (lo >= hi) continue;
      const uint64_t data_hi = std::min(hi, s.offset + s.bytes);
      if (lo < data_hi) h.update(static_cast<const char*>(s.src) + (lo - s.offset), data_hi - lo);
      if (hi > std::max(lo, data_hi)) h.update(zeros, hi - std::max(lo, data_hi));
    }
    block_digests[b] = h.digest();
  }
  const int nsec = static_cast<int>(sections.size());

  unsigned char head[kSptbHeaderBytes] = {};
  std::memcpy(head, "SPTB", 4);
  store_le<uint32_t>(head + 4, kSptbVersion);
  store_le<uint32_t>(head + 8, kEndianMarker);
  store_le<uint32_t>(head + 12, static_cast<uint32_t>(x.dtype()));
  store_le<uint32_t>(head + 16, order);
  store_le<uint32_t>(head + 20, 4);
  store_le<uint64_t>(head + 24, x.nnz);
  store_le<uint64_t>(head + 32, payload);
  store_le<uint64_t>(head + kChecksumOffset, combine(Xxh64::hash(head, sizeof(head)), block_digests));
  out.write(head, sizeof(head));
  for (int i = 0; i < nsec; ++i) {
    out.write(sections[i].src, sections[i].bytes);
    out.write(zeros, pad8(sections[i].bytes) - sections[i].bytes);
    progress(ctx, "write", static_cast<double>(i + 1) / nsec);
  }
}

}  // namespace spt::io
