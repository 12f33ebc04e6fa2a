#include "io/compression.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
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

constexpr size_t kMaxChunk = size_t(1) << 30;  // zlib counts in 32-bit units
constexpr size_t kRawBufferBytes = size_t(1) << 20;

[[noreturn]] void trailing_data(const char* kind, uint64_t offset, const std::string& path) {
  fail(SPT_ERR_PARSE, "'", path, "': trailing data after the ", kind, " stream at byte ", offset,
       " (not another ", kind, " stream); remove it or re-create the file");
}

#if SPT_HAVE_LZMA
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

// xz streams one after another (as `xz` writes and reads them), each
// optionally followed by stream padding (a multiple of 4 zero bytes).
class XzDecoder : public Decoder {
 public:
  XzDecoder(RawInput& raw, int threads, const std::string& path) : raw_(raw), path_(path), threads_(threads) {
    start();
  }
  ~XzDecoder() override { lzma_end(&strm_); }
  size_t read(char* dst, size_t n) override {
    size_t out = 0;
    while (out < n && !done_) {
      if (!in_stream_) {
        next_stream();
        continue;
      }
      if (raw_.avail() == 0) raw_.ensure(1);
      strm_.next_in = raw_.data();
      strm_.avail_in = raw_.avail();
      // Bounded output windows: given one huge window, liblzma 5.4's
      // threaded decoder was measured to decode on a single thread.
      const size_t window = std::min<size_t>(n - out, size_t(4) << 20);
      strm_.next_out = reinterpret_cast<uint8_t*>(dst + out);
      strm_.avail_out = window;
      const lzma_ret r = lzma_code(&strm_, raw_.at_eof() ? LZMA_FINISH : LZMA_RUN);
      raw_.consume(raw_.avail() - strm_.avail_in);
      out += window - strm_.avail_out;
      produced_ += window - strm_.avail_out;
      if (r == LZMA_STREAM_END) {
        in_stream_ = false;
      } else if (r != LZMA_OK) {
        if (r == LZMA_MEM_ERROR) throw std::bad_alloc();
        fail(SPT_ERR_PARSE, "'", path_, "': xz stream is truncated or corrupt after ", produced_,
             " decompressed bytes (liblzma: ", lzma_message(r), "); re-download or re-create the file");
      }
    }
    return out;
  }

 private:
  void start() {
    lzma_end(&strm_);
    strm_ = LZMA_STREAM_INIT;
    lzma_mt mt{};
    mt.flags = 0;  // one stream per decoder: concatenation and padding are handled here
    mt.threads = static_cast<uint32_t>(std::max(1, threads_));
    mt.timeout = 0;
    const uint64_t phys = lzma_physmem();
    mt.memlimit_threading = phys ? phys / 4 : (uint64_t(1) << 30);
    mt.memlimit_stop = UINT64_MAX;
    const lzma_ret r = lzma_stream_decoder_mt(&strm_, &mt);
    if (r == LZMA_MEM_ERROR) throw std::bad_alloc();
    if (r != LZMA_OK) fail(SPT_ERR_INTERNAL, "cannot start the xz decoder for '", path_, "': ", lzma_message(r));
    in_stream_ = true;
  }
  // After a stream: skip padding, then start the next stream or stop.
  void next_stream() {
    uint64_t padding = 0;
    for (;;) {
      const size_t a = raw_.ensure(1);
      if (a == 0) break;
      const unsigned char* p = raw_.data();
      size_t z = 0;
      while (z < a && p[z] == 0) ++z;
      raw_.consume(z);
      padding += z;
      if (z < a) break;
    }
    const uint64_t at = raw_.offset();
    const size_t a = raw_.ensure(6);
    if (a == 0 && padding % 4 == 0) {
      done_ = true;
      return;
    }
    if (padding % 4 != 0 || a < 6 || std::memcmp(raw_.data(), "\xFD" "7zXZ\0", 6) != 0)
      trailing_data("xz", padding % 4 != 0 ? at - padding : at, path_);
    start();
  }

  RawInput& raw_;
  std::string path_;
  int threads_;
  lzma_stream strm_ = LZMA_STREAM_INIT;
  bool in_stream_ = false;
  bool done_ = false;
  uint64_t produced_ = 0;
};
#endif

#if SPT_HAVE_ZLIB
// gzip members one after another (as `cat a.gz b.gz`), like gzip -d.
class GzipDecoder : public Decoder {
 public:
  GzipDecoder(RawInput& raw, const std::string& path) : raw_(raw), path_(path) {
    if (inflateInit2(&zs_, 15 + 16) != Z_OK) fail(SPT_ERR_INTERNAL, "cannot start the gzip decoder");
  }
  ~GzipDecoder() override { inflateEnd(&zs_); }
  size_t read(char* dst, size_t n) override {
    size_t out = 0;
    while (out < n && !done_) {
      if (!in_member_) {
        const size_t a = raw_.ensure(2);
        if (a == 0) {
          done_ = true;
          break;
        }
        if (a < 2 || raw_.data()[0] != 0x1f || raw_.data()[1] != 0x8b) trailing_data("gzip", raw_.offset(), path_);
        inflateReset(&zs_);
        in_member_ = true;
      }
      if (raw_.avail() == 0) raw_.ensure(1);
      const size_t given = std::min(raw_.avail(), kMaxChunk);
      zs_.next_in = const_cast<Bytef*>(raw_.data());
      zs_.avail_in = static_cast<uInt>(given);
      const size_t room = std::min(n - out, kMaxChunk);
      zs_.next_out = reinterpret_cast<Bytef*>(dst + out);
      zs_.avail_out = static_cast<uInt>(room);
      const int r = inflate(&zs_, Z_NO_FLUSH);
      raw_.consume(given - zs_.avail_in);
      const size_t made = room - zs_.avail_out;
      out += made;
      produced_ += made;
      if (r == Z_STREAM_END) {
        in_member_ = false;
      } else if (r == Z_BUF_ERROR || (r == Z_OK && made == 0 && given == 0)) {
        if (raw_.avail() == 0 && raw_.at_eof())
          fail(SPT_ERR_PARSE, "'", path_, "': gzip stream is truncated after ", produced_,
               " decompressed bytes; re-download or re-create the file");
      } else if (r != Z_OK) {
        std::string msg = zs_.msg ? zs_.msg : "corrupt data";
        if (r == Z_MEM_ERROR) throw std::bad_alloc();
        fail(SPT_ERR_PARSE, "'", path_, "': gzip stream is corrupt after ", produced_, " decompressed bytes (zlib: ",
             msg, ")");
      }
    }
    return out;
  }

 private:
  RawInput& raw_;
  std::string path_;
  z_stream zs_{};
  bool in_member_ = true;
  bool done_ = false;
  uint64_t produced_ = 0;
};
#endif

#if SPT_HAVE_ZSTD
// zstd frames (and skippable frames) one after another, like zstd -d.
class ZstdDecoder : public Decoder {
 public:
  ZstdDecoder(RawInput& raw, const std::string& path) : raw_(raw), path_(path) {
    ds_ = ZSTD_createDStream();
    if (!ds_) throw std::bad_alloc();
  }
  ~ZstdDecoder() override { ZSTD_freeDStream(ds_); }
  size_t read(char* dst, size_t n) override {
    size_t out = 0;
    while (out < n && !done_) {
      if (!in_frame_) {
        const size_t a = raw_.ensure(4);
        if (a == 0) {
          done_ = true;
          break;
        }
        const uint32_t magic = a >= 4 ? (uint32_t(raw_.data()[0]) | uint32_t(raw_.data()[1]) << 8 |
                                         uint32_t(raw_.data()[2]) << 16 | uint32_t(raw_.data()[3]) << 24)
                                      : 0;
        if (magic != 0xFD2FB528u && (magic & 0xFFFFFFF0u) != 0x184D2A50u)
          trailing_data("zstd", raw_.offset(), path_);
        in_frame_ = true;
      }
      if (raw_.avail() == 0) raw_.ensure(1);
      ZSTD_inBuffer in{raw_.data(), raw_.avail(), 0};
      ZSTD_outBuffer ob{dst + out, n - out, 0};
      const size_t r = ZSTD_decompressStream(ds_, &ob, &in);
      raw_.consume(in.pos);
      out += ob.pos;
      produced_ += ob.pos;
      if (ZSTD_isError(r))
        fail(SPT_ERR_PARSE, "'", path_, "': zstd stream is corrupt after ", produced_,
             " decompressed bytes (libzstd: ", ZSTD_getErrorName(r), ")");
      if (r == 0) {
        in_frame_ = false;
      } else if (in.pos == 0 && ob.pos == 0 && raw_.avail() == 0 && raw_.at_eof()) {
        fail(SPT_ERR_PARSE, "'", path_, "': zstd stream is truncated after ", produced_,
             " decompressed bytes; re-download or re-create the file");
      }
    }
    return out;
  }

 private:
  RawInput& raw_;
  std::string path_;
  ZSTD_DStream* ds_ = nullptr;
  bool in_frame_ = true;
  bool done_ = false;
  uint64_t produced_ = 0;
};
#endif

}  // namespace

RawInput::RawInput(int fd, const std::string& path, uint64_t expected_size)
    : fd_(fd), path_(path), expected_(expected_size), buf_(kRawBufferBytes) {}

RawInput::RawInput(const unsigned char* data, size_t size, const std::string& path)
    : mem_(data), mem_size_(size), path_(path), expected_(kUnknownSize), buf_(kRawBufferBytes) {}

size_t RawInput::ensure(size_t want) {
  if (end_ - pos_ >= want || eof_) return end_ - pos_;
  if (want > buf_.size()) want = buf_.size();
  if (pos_ > 0) {
    std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
    base_ += pos_;
    end_ -= pos_;
    pos_ = 0;
  }
  while (end_ < want && !eof_) {
    if (fd_ < 0) {
      const size_t k = std::min(buf_.size() - end_, mem_size_ - mem_pos_);
      if (k) std::memcpy(buf_.data() + end_, mem_ + mem_pos_, k);
      mem_pos_ += k;
      end_ += k;
      if (k == 0) eof_ = true;
      continue;
    }
    const ssize_t r = ::read(fd_, buf_.data() + end_, buf_.size() - end_);
    if (r < 0) {
      if (errno == EINTR) continue;
      fail(SPT_ERR_IO, "reading '", path_, "' failed: ", std::strerror(errno));
    }
    if (r == 0) {
      eof_ = true;
      if (expected_ != kUnknownSize && base_ + end_ < expected_)
        fail(SPT_ERR_IO, "'", path_, "' shrank while being read: ", expected_, " bytes when opened, ", base_ + end_,
             " now; read it again once nothing writes to it");
      break;
    }
    end_ += static_cast<size_t>(r);
  }
  return end_ - pos_;
}

buffer<char> decompress(spt_compression kind, const unsigned char* data, size_t size, int threads,
                        const std::string& path) {
  RawInput raw(data, size, path);
  std::unique_ptr<Decoder> d = make_decoder(kind, raw, threads, path);
  buffer<char> out(size_t(1) << 16);
  size_t used = 0;
  for (;;) {
    if (used == out.size()) {
      buffer<char> bigger(out.size() * 2);
      std::memcpy(bigger.data(), out.data(), used);
      out.swap(bigger);
    }
    const size_t got = d->read(out.data() + used, out.size() - used);
    if (got == 0) break;
    used += got;
  }
  out.resize(used);
  return out;
}

std::unique_ptr<Decoder> make_decoder(spt_compression kind, RawInput& raw, int threads, const std::string& path) {
  (void)raw;
  (void)threads;
  switch (kind) {
    case SPT_COMPRESS_XZ:
#if SPT_HAVE_LZMA
      return std::make_unique<XzDecoder>(raw, threads, path);
#else
      missing_library(kind, path);
#endif
    case SPT_COMPRESS_GZIP:
#if SPT_HAVE_ZLIB
      return std::make_unique<GzipDecoder>(raw, path);
#else
      missing_library(kind, path);
#endif
    case SPT_COMPRESS_ZSTD:
#if SPT_HAVE_ZSTD
      return std::make_unique<ZstdDecoder>(raw, path);
#else
      missing_library(kind, path);
#endif
    default:
      fail(SPT_ERR_INTERNAL, "make_decoder called for an uncompressed file");
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
