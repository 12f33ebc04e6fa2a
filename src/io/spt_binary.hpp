// libsptensor's own binary tensor file (.sptb), format version 1.
//
// All integers little-endian. A 64-byte header:
//   0  char[4]  magic "SPTB"
//   4  uint32   format version (1)
//   8  uint32   endianness marker 0x01020304 (reads 0x04030201 if byte-swapped)
//  12  uint32   dtype (1 = float32, 2 = float64, as spt_dtype)
//  16  uint32   order N
//  20  uint32   bytes per index (4)
//  24  uint64   nnz
//  32  uint64   payload bytes (everything after the header)
//  40  uint64   checksum (below)
//  48  16 bytes reserved, zero
// then the payload sections, each padded with zeros to a multiple of 8
// bytes (so every array starts 8-byte aligned): dims (N uint32), the N
// per-mode 0-based index arrays (nnz uint32 each), the values (nnz floats
// or doubles). The checksum is XXH64 (seed 0) of the digests (uint64 LE)
// of: the header with the checksum field zeroed, then each consecutive
// 256 KiB block of the payload (the last one shorter) - so blocks are
// hashed in parallel. Loading hashes each block straight from the mapped
// file and copies it into the tensor's arrays while it is in cache.
#pragma once

#include "core/context.hpp"
#include "core/coo.hpp"
#include "io/input_source.hpp"
#include "io/io.hpp"
#include "io/output_file.hpp"

namespace spt::io {

constexpr size_t kSptbHeaderBytes = 64;
constexpr uint32_t kSptbVersion = 1;

bool looks_like_sptb(const unsigned char* head, size_t n);

spt_coo_s read_spt_bin(const spt_context_s& ctx, InputSource& in, const ReadOptions& opts);
void write_spt_bin(const spt_context_s& ctx, const spt_coo_s& x, Sink& out);

}  // namespace spt::io
