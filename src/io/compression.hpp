// gzip / xz / zstd: detection by magic bytes, whole-buffer decompression for
// reading, and streaming compression sinks for writing. Each library is
// optional at build time (SPT_HAVE_ZLIB, SPT_HAVE_LZMA, SPT_HAVE_ZSTD);
// without it the calls fail with SPT_ERR_UNSUPPORTED naming the library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/buffer.hpp"
#include "io/output_file.hpp"

namespace spt::io {

// Compression of a byte prefix (at least the first 6 bytes when available):
// SPT_COMPRESS_GZIP, _XZ, _ZSTD, or SPT_COMPRESS_NONE.
spt_compression detect_compression(const unsigned char* head, size_t n);

const char* compression_name(spt_compression c);

// Decompress a whole compressed file image into memory. `path` is used in
// messages only. Corrupt or truncated input fails with SPT_ERR_PARSE.
buffer<char> decompress(spt_compression kind, const unsigned char* data, size_t size, int threads,
                        const std::string& path);

// A sink that compresses everything written to it into `out`. finish()
// flushes the compressor (it does not commit `out`).
std::unique_ptr<Sink> make_compressing_sink(spt_compression kind, Sink& out, int threads, const std::string& path);

}  // namespace spt::io
