#include "io/splatt_binary.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

#include "core/parallel_errors.hpp"
#include "core/value_range.hpp"
#include "io/binary_util.hpp"
#include "io/memory.hpp"

namespace spt::io {

namespace {

constexpr int32_t kSplattCoord = 0;  // SPLATT_BIN_COORD
constexpr int32_t kSplattCsf = 1;    // SPLATT_BIN_CSF

bool valid_width(uint64_t w) { return w == 4 || w == 8; }

uint64_t load_width(const unsigned char* p, uint64_t width) {
  return width == 4 ? load_le<uint32_t>(p) : load_le<uint64_t>(p);
}

}  // namespace

uint64_t splatt_declared_bytes(InputSource& in) {
  unsigned char fixed[kSplattHeaderBytes];
  if (in.peek(fixed, sizeof(fixed)) < sizeof(fixed)) return kSplattHeaderBytes;
  const uint64_t iw = load_le<uint64_t>(fixed + 4), vw = load_le<uint64_t>(fixed + 12);
  if (!valid_width(iw) || !valid_width(vw)) return kSplattHeaderBytes;
  std::vector<unsigned char> head(kSplattHeaderBytes + iw);
  if (in.peek(head.data(), head.size()) < head.size()) return kSplattHeaderBytes;
  const uint64_t order = load_width(head.data() + kSplattHeaderBytes, iw);
  // Dims and nnz follow the order; peeking them is bounded by peek's 1 MiB.
  if (order < 1 || order > ((size_t(1) << 20) - kSplattHeaderBytes) / iw - 2) return kSplattHeaderBytes;
  head.resize(kSplattHeaderBytes + (order + 2) * iw);
  if (in.peek(head.data(), head.size()) < head.size()) return kSplattHeaderBytes;
  const uint64_t nnz = load_width(head.data() + kSplattHeaderBytes + (order + 1) * iw, iw);
  const uint64_t per = order * iw + vw;
  if (nnz != 0 && per > (UINT64_MAX - head.size()) / nnz) return kSplattHeaderBytes;
  return head.size() + nnz * per;
}

bool looks_like_splatt_bin(const unsigned char* head, size_t n) {
  if (n < kSplattHeaderBytes) return false;
  int32_t magic = load_le<int32_t>(head);
  return (magic == kSplattCoord || magic == kSplattCsf) && valid_width(load_le<uint64_t>(head + 4)) &&
         valid_width(load_le<uint64_t>(head + 12));
}

SplattHeader read_splatt_header(InputSource& in) {
  require_little_endian_host("SPLATT .bin");
  in.load(splatt_declared_bytes(in));  // streams only; bounded by the header
  const std::string& path = in.path();
  const uint64_t size = in.size();
  if (size < kSplattHeaderBytes)
    fail(SPT_ERR_PARSE, path, ": truncated SPLATT binary file: ", size, " bytes, shorter than its ",
         kSplattHeaderBytes, "-byte header");
  unsigned char fixed[kSplattHeaderBytes];
  in.read_at(0, fixed, sizeof(fixed));
  const int32_t magic = load_le<int32_t>(fixed);
  if (magic == kSplattCsf)
    fail(SPT_ERR_UNSUPPORTED, path, ": SPLATT CSF binary files are not supported; write a coordinate .bin with ",
         "SPLATT (splatt convert -t bin) or use .tns");
  if (magic != kSplattCoord)
    fail(SPT_ERR_PARSE, path, ": bad magic ", magic, " for a SPLATT binary file (expected 0, SPLATT_BIN_COORD)");
  const uint64_t iw = load_le<uint64_t>(fixed + 4);
  const uint64_t vw = load_le<uint64_t>(fixed + 12);
  if (!valid_width(iw)) fail(SPT_ERR_PARSE, path, ": SPLATT header: index width ", iw, " bytes (expected 4 or 8)");
  if (!valid_width(vw)) fail(SPT_ERR_PARSE, path, ": SPLATT header: value width ", vw, " bytes (expected 4 or 8)");

  uint64_t pos = kSplattHeaderBytes;
  auto need = [&](uint64_t extra, const char* what) {
    if (extra > size - pos)
      fail(SPT_ERR_PARSE, path, ": truncated SPLATT binary file: ", what, " needs ", extra, " bytes at offset ", pos,
           " but the file has ", size, " bytes");
  };
  // One header field of iw bytes at `at`, read by copy.
  auto field = [&](uint64_t at) {
    unsigned char b[8];
    in.read_at(at, b, iw);
    return load_width(b, iw);
  };
  need(iw, "the mode count");
  const uint64_t order64 = field(pos);
  pos += iw;
  if (order64 < 1) fail(SPT_ERR_PARSE, path, ": SPLATT header: the tensor has ", order64, " modes");
  if (order64 > (size - pos) / iw)
    fail(SPT_ERR_PARSE, path, ": truncated SPLATT binary file: the header says ", order64,
         " modes but the file is too short to hold their dims");
  if (order64 > SPT_MAX_ORDER)
    fail(SPT_ERR_PARSE, path, ": SPLATT header: order ", order64, " is above the supported maximum SPT_MAX_ORDER = ",
         SPT_MAX_ORDER);
  const uint32_t order = static_cast<uint32_t>(order64);
  std::vector<spt_index> dims(order);
  for (uint32_t m = 0; m < order; ++m) {
    const uint64_t d = field(pos);
    pos += iw;
    if (d == 0) fail(SPT_ERR_PARSE, path, ": SPLATT header: dims[", m, "] is 0");
    if (d > std::numeric_limits<spt_index>::max())
      fail(SPT_ERR_OVERFLOW, path, ": SPLATT header: dims[", m, "] = ", d, " does not fit a 32-bit spt_index");
    dims[m] = static_cast<spt_index>(d);
  }
  need(iw, "the nonzero count");
  const uint64_t nnz = field(pos);
  pos += iw;

  // Size check before allocating: a corrupt nnz must not trigger a huge
  // allocation. Overflowing products mean "more than the file holds".
  const uint64_t remaining = size - pos;
  const uint64_t per_nonzero = order64 * iw + vw;
  if (nnz != 0 && per_nonzero > remaining / nnz)
    fail(SPT_ERR_PARSE, path, ": truncated SPLATT binary file: the header says ", nnz, " nonzeros of ", order,
         " modes, which needs more than the ", remaining, " bytes after the header");
  if (nnz * per_nonzero != remaining)
    fail(SPT_ERR_PARSE, path, ": SPLATT binary file has ", remaining - nnz * per_nonzero,
         " unexpected bytes after its values (header: ", nnz, " nonzeros of ", order, " modes)");

  SplattHeader h;
  h.index_width = iw;
  h.value_width = vw;
  h.dims = std::move(dims);
  h.nnz = nnz;
  h.data_offset = pos;
  return h;
}

spt_coo_s read_splatt_bin_range(const spt_context_s& ctx, InputSource& in, const SplattHeader& h,
                                const ReadOptions& opts, uint64_t begin, uint64_t end) {
  const std::string& path = in.path();
  if (begin > end || end > h.nnz)
    fail(SPT_ERR_INTERNAL, path, ": nonzero range [", begin, ", ", end, ") outside the file's ", h.nnz);
  const uint64_t iw = h.index_width, vw = h.value_width, pos = h.data_offset;
  const uint32_t order = static_cast<uint32_t>(h.dims.size());
  const uint64_t order64 = order;
  const uint64_t nnz = end - begin;
  const int threads = thread_count(ctx);
  progress(ctx, "read", 0.1);
  spt_coo_s x;
  x.init_owned(opts.dtype, h.dims, nnz);
  advise_huge_pages(x);
  // Arrays are read by copy (pread of a plain file, never a mapping), in
  // pieces of kPiece elements; each piece is converted while in cache.
  constexpr spt_nnz kPiece = spt_nnz(1) << 15;
  const spt_nnz pieces = (nnz + kPiece - 1) / kPiece;
  std::vector<std::vector<unsigned char>> scratch(static_cast<size_t>(threads), std::vector<unsigned char>(kPiece * 8));
  // fn(k0, n, src): elements [k0, k0 + n) of the array at file offset `at`
  // with `width`-byte elements, in src. Not a generic lambda: clang cannot
  // capture into an OpenMP region inside one.
  auto for_pieces = [&](uint64_t at, uint64_t width,
                        const std::function<void(spt_nnz, spt_nnz, const unsigned char*)>& fn) {
    ParallelErrors errors;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (spt_nnz p = 0; p < pieces; ++p) {
      errors.run([&] {
        const spt_nnz k0 = p * kPiece, n = std::min(kPiece, nnz - k0);
        unsigned char* buf = scratch[static_cast<size_t>(omp_get_thread_num())].data();
        in.read_at(at + k0 * width, buf, n * width);
        fn(k0, n, buf);
      });
    }
    errors.rethrow();
  };
  for (uint32_t m = 0; m < order; ++m) {
    const uint64_t at = pos + (m * h.nnz + begin) * iw;
    spt_index* dst = x.mutable_ind(m);
    if (iw == 4) {
      for_pieces(at, 4, [&](spt_nnz k0, spt_nnz n, const unsigned char* s) { std::memcpy(dst + k0, s, n * 4); });
      continue;
    }
    std::vector<spt_nnz> first_big(static_cast<size_t>(pieces), std::numeric_limits<spt_nnz>::max());
    for_pieces(at, 8, [&](spt_nnz k0, spt_nnz n, const unsigned char* s) {
      for (spt_nnz k = 0; k < n; ++k) {
        const uint64_t v = load_le<uint64_t>(s + 8 * k);
        if (v > std::numeric_limits<spt_index>::max() - 1ull && first_big[k0 / kPiece] == std::numeric_limits<spt_nnz>::max())
          first_big[k0 / kPiece] = k0 + k;
        dst[k0 + k] = static_cast<spt_index>(v);
      }
    });
    const spt_nnz big = *std::min_element(first_big.begin(), first_big.end());
    if (big != std::numeric_limits<spt_nnz>::max()) {
      unsigned char b[8];
      in.read_at(at + 8 * big, b, 8);
      fail(SPT_ERR_OVERFLOW, path, ": nonzero ", begin + big, " has index ", load_le<uint64_t>(b), " in mode ", m,
           ", which does not fit a 32-bit spt_index");
    }
  }
  const uint64_t vat = pos + order64 * h.nnz * iw + begin * vw;
  with_dtype(opts.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = x.template mutable_values<T>();
    for_pieces(vat, vw, [&](spt_nnz k0, spt_nnz n, const unsigned char* s) {
      if (vw == sizeof(T)) {
        std::memcpy(dst + k0, s, n * sizeof(T));
      } else if (vw == 4) {
        for (spt_nnz k = 0; k < n; ++k) dst[k0 + k] = static_cast<T>(load_le<float>(s + 4 * k));
      } else {
        if constexpr (std::is_same_v<T, float>)
          check_float32_range(
              n, 1, path + ": reading float64 values as float32: ",
              [&](spt_nnz k) { return load_le<double>(s + 8 * k); },
              [&](spt_nnz k) { return nonzero_position(x, k0 + k, begin); });
        for (spt_nnz k = 0; k < n; ++k) dst[k0 + k] = static_cast<T>(load_le<double>(s + 8 * k));
      }
    });
  });
  check_loaded_tensor(ctx, x, opts, path, true, begin);
  x.file_dtype = vw == 4 ? SPT_FLOAT32 : SPT_FLOAT64;
  progress(ctx, "read", 1.0);
  return x;
}

spt_coo_s read_splatt_bin(const spt_context_s& ctx, InputSource& in, const ReadOptions& opts) {
  const SplattHeader h = read_splatt_header(in);
  return read_splatt_bin_range(ctx, in, h, opts, 0, h.nnz);
}

void write_splatt_bin(const spt_context_s& ctx, const spt_coo_s& x, Sink& out) {
  require_little_endian_host("SPLATT .bin");
  const uint32_t order = x.order();
  const spt_nnz nnz = x.nnz;
  const uint64_t iw = nnz < std::numeric_limits<uint32_t>::max() ? 4 : 8;
  const uint64_t vw = dtype_size(x.dtype());
  progress(ctx, "write", 0.0);

  std::vector<unsigned char> head(kSplattHeaderBytes + (order + 2) * iw);
  store_le<int32_t>(head.data(), kSplattCoord);
  store_le<uint64_t>(head.data() + 4, iw);
  store_le<uint64_t>(head.data() + 12, vw);
  auto put = [&](size_t at, uint64_t v) {
    if (iw == 4) store_le<uint32_t>(head.data() + at, static_cast<uint32_t>(v));
    else store_le<uint64_t>(head.data() + at, v);
  };
  put(kSplattHeaderBytes, order);
  for (uint32_t m = 0; m < order; ++m) put(kSplattHeaderBytes + (m + 1) * iw, x.dims[m]);
  put(kSplattHeaderBytes + (order + 1) * iw, nnz);
  out.write(head.data(), head.size());

  for (uint32_t m = 0; m < order; ++m) {
    if (iw == 4) {
      out.write(x.ind[m], nnz * sizeof(spt_index));
    } else {
      std::vector<uint64_t> wide(std::min<spt_nnz>(nnz, spt_nnz(1) << 20));
      for (spt_nnz b = 0; b < nnz; b += wide.size()) {
        const spt_nnz n = std::min<spt_nnz>(wide.size(), nnz - b);
        for (spt_nnz k = 0; k < n; ++k) wide[k] = x.ind[m][b + k];
        out.write(wide.data(), n * sizeof(uint64_t));
      }
    }
    progress(ctx, "write", static_cast<double>(m + 1) / (order + 1));
  }
  out.write(x.val, nnz * vw);
  progress(ctx, "write", 1.0);
}

}  // namespace spt::io
