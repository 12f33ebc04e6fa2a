#include "io/compression.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "io/memory.hpp"

#if SPT_HAVE_ZLIB
#include <zlib.h>
#endif
#if SPT_HAVE_LZMA
#include <lzma.h>
#endif
#if SPT_HAVE_ZSTD
#include <zstd.h>
#endif

namespace spt::io {

spt_compression detect_compression(const unsigned char* h, size_t n) {
  if (n >= 2 && h[0] == 0x1f && h[1] == 0x8b) return SPT_COMPRESS_GZIP;
  if (n >= 6 && std::memcmp(h, "\xFD" "7zXZ\0", 6) == 0) return SPT_COMPRESS_XZ;
  if (n >= 4 && h[0] == 0x28 && h[1] == 0xB5 && h[2] == 0x2F && h[3] == 0xFD) return SPT_COMPRESS_ZSTD;
  return SPT_COMPRESS_NONE;
}

const char* compression_name(spt_compression c) {
  switch (c) {
    case SPT_COMPRESS_GZIP: return "gzip";
    case SPT_COMPRESS_XZ: return "xz";
    case SPT_COMPRESS_ZSTD: return "zstd";
    case SPT_COMPRESS_NONE: return "none";
    default: return "auto";
  }
}

namespace {

[[noreturn, maybe_unused]] void missing_library(spt_compression kind, const std::string& path) {
  const char* lib = kind == SPT_COMPRESS_GZIP ? "zlib" : kind == SPT_COMPRESS_XZ ? "liblzma" : "libzstd";
  fail(SPT_ERR_UNSUPPORTED, "'", path, "' is ", compression_name(kind), "-compressed but this build of libsptensor ",
       "has no ", lib, "; rebuild with ", lib, " installed (SPT_WITH_COMPRESSION=ON) or decompress the file first");
}

// Output buffer that grows geometrically while a decoder fills it.
struct GrowingOutput {
  buffer<char> data;
  size_t used = 0;
  explicit GrowingOutput(size_t hint) {
    data.resize(std::max<size_t>(hint, 1 << 16));
    advise_huge_pages(data.data(), data.size());
  }
  char* free_ptr() { return data.data() + used; }
  size_t free_space() const { return data.size() - used; }
  void ensure_space() {
    if (free_space() != 0) return;
    buffer<char> bigger;
    bigger.resize(data.size() + data.size() / 2);
    advise_huge_pages(bigger.data(), bigger.size());
    std::memcpy(bigger.data(), data.data(), used);
    data.swap(bigger);
  }
  buffer<char> take() {
    data.resize(used);
    return std::move(data);
  }
};

constexpr size_t kMaxChunk = size_t(1) << 30;  // zlib counts in 32-bit units

// A decoder's first buffer from the size a file claims (gzip trailer, xz
// index, zstd frame header), capped at `max_ratio` times the compressed
// size: the claim is untrusted, and a corrupt or hostile file of a few
// bytes must not allocate gigabytes (found by fuzzing). Larger real outputs
// still decode; the buffer grows as needed.
size_t capped_hint(uint64_t claimed, size_t compressed, uint64_t max_ratio) {
  const uint64_t cap = uint64_t(compressed) * max_ratio + (uint64_t(1) << 20);
  return static_cast<size_t>(std::min(claimed, cap));
}

#if SPT_HAVE_LZMA
// Uncompressed size recorded in the index of the last xz stream; a capacity
// hint only (0 when it cannot be read).
size_t xz_size_hint(const unsigned char* data, size_t size) {
  while (size >= 4 && std::memcmp(data + size - 4, "\0\0\0\0", 4) == 0) size -= 4;  // stream padding
  if (size < 2 * LZMA_STREAM_HEADER_SIZE) return 0;
  lzma_stream_flags footer;
  if (lzma_stream_footer_decode(&footer, data + size - LZMA_STREAM_HEADER_SIZE) != LZMA_OK) return 0;
  if (footer.backward_size > size - 2 * LZMA_STREAM_HEADER_SIZE) return 0;
  const unsigned char* index = data + size - LZMA_STREAM_HEADER_SIZE - footer.backward_size;
  lzma_index* idx = nullptr;
  uint64_t memlimit = UINT64_MAX;
  size_t pos = 0;
  if (lzma_index_buffer_decode(&idx, &memlimit, nullptr, index, &pos, footer.backward_size) != LZMA_OK) return 0;
  uint64_t n = lzma_index_uncompressed_size(idx);
  lzma_index_end(idx, nullptr);
  return n < (uint64_t(1) << 40) ? static_cast<size_t>(n) : 0;
}

const char* lzma_message(lzma_ret r) {
  switch (r) {
    case LZMA_MEM_ERROR: return "out of memory";
    case LZMA_MEMLIMIT_ERROR: return "memory limit reached";
    case LZMA_FORMAT_ERROR: return "not an xz stream";
    case LZMA_OPTIONS_ERROR: return "unsupported xz options";
    case LZMA_DATA_ERROR: return "corrupt data";
    case LZMA_BUF_ERROR: return "unexpected end of input (truncated)";
    default: return "decoder error";
  }
}

buffer<char> decompress_xz(const unsigned char* data, size_t size, int threads, const std::string& path) {
  GrowingOutput out(capped_hint(xz_size_hint(data, size), size, 256) + 1);
  lzma_stream strm = LZMA_STREAM_INIT;
  lzma_mt mt{};
  mt.flags = LZMA_CONCATENATED;
  mt.threads = static_cast<uint32_t>(std::max(1, threads));
  mt.timeout = 0;
  uint64_t phys = lzma_physmem();
  mt.memlimit_threading = phys ? phys / 4 : (uint64_t(1) << 30);
  mt.memlimit_stop = UINT64_MAX;
  lzma_ret r = lzma_stream_decoder_mt(&strm, &mt);
  if (r != LZMA_OK) fail(SPT_ERR_INTERNAL, "cannot start the xz decoder for '", path, "': ", lzma_message(r));
  strm.next_in = data;
  strm.avail_in = size;
  for (;;) {
    out.ensure_space();
    // Bounded output windows: given one huge window, liblzma 5.4's
    // threaded decoder was measured to decode on a single thread.
    const size_t window = std::min<size_t>(out.free_space(), size_t(4) << 20);
    strm.next_out = reinterpret_cast<uint8_t*>(out.free_ptr());
    strm.avail_out = window;
    r = lzma_code(&strm, LZMA_FINISH);
    out.used += window - strm.avail_out;
    if (r == LZMA_STREAM_END) break;
    if (r != LZMA_OK) {
      lzma_end(&strm);
      if (r == LZMA_MEM_ERROR) throw std::bad_alloc();
      fail(SPT_ERR_PARSE, "'", path, "': xz stream is truncated or corrupt after ", out.used,
           " decompressed bytes (liblzma: ", lzma_message(r), "); re-download or re-create the file");
    }
  }
  lzma_end(&strm);
  return out.take();
}
#endif

#if SPT_HAVE_ZLIB
buffer<char> decompress_gzip(const unsigned char* data, size_t size, const std::string& path) {
  // The gzip trailer holds the size modulo 2^32: a capacity hint.
  size_t hint = size >= 4 ? (size_t(data[size - 4]) | size_t(data[size - 3]) << 8 | size_t(data[size - 2]) << 16 |
                             size_t(data[size - 1]) << 24)
                          : 0;
  // deflate expands at most 1032:1, so a larger claim is corrupt.
  GrowingOutput out(capped_hint(std::max(hint, size), size, 1032) + 1);
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 32) != Z_OK) fail(SPT_ERR_INTERNAL, "cannot start the gzip decoder");
  size_t in_pos = 0;
  bool stream_ended = false;
  for (;;) {
    if (zs.avail_in == 0 && in_pos < size) {
      size_t n = std::min(size - in_pos, kMaxChunk);
      zs.next_in = const_cast<Bytef*>(data + in_pos);
      zs.avail_in = static_cast<uInt>(n);
      in_pos += n;
    }
    out.ensure_space();
    size_t room = std::min(out.free_space(), kMaxChunk);
    zs.next_out = reinterpret_cast<Bytef*>(out.free_ptr());
    zs.avail_out = static_cast<uInt>(room);
    int r = inflate(&zs, Z_NO_FLUSH);
    out.used += room - zs.avail_out;
    if (r == Z_STREAM_END) {
      stream_ended = true;
      // Concatenated gzip members (as `cat a.gz b.gz`) decode as one file.
      size_t rest = zs.avail_in + (size - in_pos);
      const unsigned char* next = zs.next_in;
      if (rest >= 2 && next[0] == 0x1f && next[1] == 0x8b) {
        inflateReset(&zs);
        stream_ended = false;
        continue;
      }
      break;
    }
    if (r == Z_BUF_ERROR && zs.avail_in == 0 && in_pos == size) break;  // input ended early
    if (r != Z_OK && r != Z_BUF_ERROR) {
      std::string msg = zs.msg ? zs.msg : "corrupt data";
      inflateEnd(&zs);
      if (r == Z_MEM_ERROR) throw std::bad_alloc();
      fail(SPT_ERR_PARSE, "'", path, "': gzip stream is corrupt after ", out.used, " decompressed bytes (zlib: ", msg,
           ")");
    }
  }
  inflateEnd(&zs);
  if (!stream_ended)
    fail(SPT_ERR_PARSE, "'", path, "': gzip stream is truncated after ", out.used,
         " decompressed bytes; re-download or re-create the file");
  return out.take();
}
#endif

#if SPT_HAVE_ZSTD
buffer<char> decompress_zstd(const unsigned char* data, size_t size, const std::string& path) {
  unsigned long long hint = ZSTD_getFrameContentSize(data, size);
  if (hint == ZSTD_CONTENTSIZE_UNKNOWN || hint == ZSTD_CONTENTSIZE_ERROR || hint > (1ULL << 40)) hint = 4 * size;
  GrowingOutput out(capped_hint(hint, size, 256) + 1);
  ZSTD_DStream* ds = ZSTD_createDStream();
  if (!ds) throw std::bad_alloc();
  ZSTD_inBuffer in{data, size, 0};
  size_t last = 1;
  while (in.pos < in.size || last != 0) {
    out.ensure_space();
    ZSTD_outBuffer ob{out.free_ptr(), out.free_space(), 0};
    last = ZSTD_decompressStream(ds, &ob, &in);
    out.used += ob.pos;
    if (ZSTD_isError(last)) {
      std::string msg = ZSTD_getErrorName(last);
      ZSTD_freeDStream(ds);
      fail(SPT_ERR_PARSE, "'", path, "': zstd stream is corrupt after ", out.used, " decompressed bytes (libzstd: ", msg,
           ")");
    }
    if (in.pos == in.size && last != 0 && ob.pos < ob.size) {
      ZSTD_freeDStream(ds);
      fail(SPT_ERR_PARSE, "'", path, "': zstd stream is truncated after ", out.used,
           " decompressed bytes; re-download or re-create the file");
    }
  }
  ZSTD_freeDStream(ds);
  return out.take();
}
#endif

}  // namespace

buffer<char> decompress(spt_compression kind, const unsigned char* data, size_t size, int threads,
                        const std::string& path) {
  switch (kind) {
    case SPT_COMPRESS_XZ:
#if SPT_HAVE_LZMA
      return decompress_xz(data, size, threads, path);
#else
      missing_library(kind, path);
#endif
    case SPT_COMPRESS_GZIP:
#if SPT_HAVE_ZLIB
      return decompress_gzip(data, size, path);
#else
      missing_library(kind, path);
#endif
    case SPT_COMPRESS_ZSTD:
#if SPT_HAVE_ZSTD
      return decompress_zstd(data, size, path);
#else
      missing_library(kind, path);
#endif
    default:
      fail(SPT_ERR_INTERNAL, "decompress called for an uncompressed file");
  }
}

// ---------------------------------------------------------------------------
// Compressing sinks
// ---------------------------------------------------------------------------

namespace {

constexpr size_t kOutChunk = size_t(1) << 20;

#if SPT_HAVE_ZLIB
class GzipSink : public Sink {
 public:
  GzipSink(Sink& out, const std::string& path) : out_(out), path_(path), buf_(kOutChunk) {
    if (deflateInit2(&zs_, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
      fail(SPT_ERR_INTERNAL, "cannot start the gzip encoder");
  }
  ~GzipSink() override { deflateEnd(&zs_); }
  void write(const void* data, size_t n) override {
    const Bytef* p = static_cast<const Bytef*>(data);
    while (n > 0) {
      size_t take = std::min(n, kMaxChunk);
      zs_.next_in = const_cast<Bytef*>(p);
      zs_.avail_in = static_cast<uInt>(take);
      run(Z_NO_FLUSH);
      p += take;
      n -= take;
    }
  }
  void finish() override { run(Z_FINISH); }

 private:
  void run(int flush) {
    for (;;) {
      zs_.next_out = buf_.data();
      zs_.avail_out = static_cast<uInt>(buf_.size());
      int r = deflate(&zs_, flush);
      if (r == Z_STREAM_ERROR) fail(SPT_ERR_INTERNAL, "gzip encoder failed while writing '", path_, "'");
      out_.write(buf_.data(), buf_.size() - zs_.avail_out);
      if (flush == Z_FINISH ? r == Z_STREAM_END : (zs_.avail_in == 0 && zs_.avail_out != 0)) break;
    }
  }
  Sink& out_;
  std::string path_;
  z_stream zs_{};
  std::vector<Bytef> buf_;
};
#endif

#if SPT_HAVE_LZMA
class XzSink : public Sink {
 public:
  XzSink(Sink& out, int threads, const std::string& path) : out_(out), path_(path), buf_(kOutChunk) {
    lzma_ret r;
    if (threads > 1) {
      lzma_mt mt{};
      mt.threads = static_cast<uint32_t>(threads);
      mt.preset = 6;
      mt.check = LZMA_CHECK_CRC64;
      r = lzma_stream_encoder_mt(&strm_, &mt);
    } else {
      r = lzma_easy_encoder(&strm_, 6, LZMA_CHECK_CRC64);
    }
    if (r == LZMA_MEM_ERROR) throw std::bad_alloc();
    if (r != LZMA_OK) fail(SPT_ERR_INTERNAL, "cannot start the xz encoder (liblzma error ", int(r), ")");
  }
  ~XzSink() override { lzma_end(&strm_); }
  void write(const void* data, size_t n) override {
    // liblzma reports LZMA_BUF_ERROR for two calls in a row without progress
    // (as empty writes of an empty tensor's sections would be).
    if (n == 0) return;
    strm_.next_in = static_cast<const uint8_t*>(data);
    strm_.avail_in = n;
    run(LZMA_RUN);
  }
  void finish() override { run(LZMA_FINISH); }

 private:
  void run(lzma_action action) {
    for (;;) {
      strm_.next_out = buf_.data();
      strm_.avail_out = buf_.size();
      lzma_ret r = lzma_code(&strm_, action);
      if (r != LZMA_OK && r != LZMA_STREAM_END) {
        if (r == LZMA_MEM_ERROR) throw std::bad_alloc();
        fail(SPT_ERR_INTERNAL, "xz encoder failed while writing '", path_, "' (liblzma error ", int(r), ")");
      }
      out_.write(buf_.data(), buf_.size() - strm_.avail_out);
      if (action == LZMA_FINISH ? r == LZMA_STREAM_END : (strm_.avail_in == 0 && strm_.avail_out != 0)) break;
    }
  }
  Sink& out_;
  std::string path_;
  lzma_stream strm_ = LZMA_STREAM_INIT;
  std::vector<uint8_t> buf_;
};
#endif

#if SPT_HAVE_ZSTD
class ZstdSink : public Sink {
 public:
  ZstdSink(Sink& out, int threads, const std::string& path) : out_(out), path_(path), buf_(kOutChunk) {
    cctx_ = ZSTD_createCCtx();
    if (!cctx_) throw std::bad_alloc();
    ZSTD_CCtx_setParameter(cctx_, ZSTD_c_compressionLevel, 3);
    ZSTD_CCtx_setParameter(cctx_, ZSTD_c_checksumFlag, 1);
    // Ignored (error code) when libzstd was built without threads.
    if (threads > 1) ZSTD_CCtx_setParameter(cctx_, ZSTD_c_nbWorkers, threads);
  }
  ~ZstdSink() override { ZSTD_freeCCtx(cctx_); }
  void write(const void* data, size_t n) override {
    if (n == 0) return;
    ZSTD_inBuffer in{data, n, 0};
    run(in, ZSTD_e_continue);
  }
  void finish() override {
    ZSTD_inBuffer in{nullptr, 0, 0};
    run(in, ZSTD_e_end);
  }

 private:
  void run(ZSTD_inBuffer& in, ZSTD_EndDirective mode) {
    for (;;) {
      ZSTD_outBuffer ob{buf_.data(), buf_.size(), 0};
      size_t remaining = ZSTD_compressStream2(cctx_, &ob, &in, mode);
      if (ZSTD_isError(remaining))
        fail(SPT_ERR_INTERNAL, "zstd encoder failed while writing '", path_, "': ", ZSTD_getErrorName(remaining));
      out_.write(buf_.data(), ob.pos);
      if (mode == ZSTD_e_end ? remaining == 0 : in.pos == in.size) break;
    }
  }
  Sink& out_;
  std::string path_;
  ZSTD_CCtx* cctx_ = nullptr;
  std::vector<char> buf_;
};
#endif

}  // namespace

std::unique_ptr<Sink> make_compressing_sink(spt_compression kind, Sink& out, int threads, const std::string& path) {
  switch (kind) {
    case SPT_COMPRESS_GZIP:
#if SPT_HAVE_ZLIB
      return std::make_unique<GzipSink>(out, path);
#else
      missing_library(kind, path);
#endif
    case SPT_COMPRESS_XZ:
#if SPT_HAVE_LZMA
      return std::make_unique<XzSink>(out, threads, path);
#else
      missing_library(kind, path);
#endif
    case SPT_COMPRESS_ZSTD:
#if SPT_HAVE_ZSTD
      return std::make_unique<ZstdSink>(out, threads, path);
#else
      missing_library(kind, path);
#endif
    default:
      fail(SPT_ERR_INTERNAL, "make_compressing_sink called without a compression");
  }
}

}  // namespace spt::io
