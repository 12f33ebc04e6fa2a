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
// hashed in parallel. Loading reads each block by copy (pread; a mapping
// only with ReadOptions::map_binary), hashes it and copies it into the
// tensor's arrays while it is in cache.
#pragma once

#include <string>
#include <vector>

#include "core/context.hpp"
#include "core/coo.hpp"
#include "io/input_source.hpp"
#include "io/io.hpp"
#include "io/output_file.hpp"
#include "util/internal_api.hpp"

namespace spt::io {

constexpr size_t kSptbHeaderBytes = 64;
constexpr uint32_t kSptbVersion = 1;

constexpr uint64_t kSptbChecksumBlockBytes = uint64_t(1) << 18;  // 256 KiB

SPT_INTERNAL_API bool looks_like_sptb(const unsigned char* head, size_t n);
// The file size a header (its first n bytes) declares, when its order, nnz,
// dtype and payload size agree; else the header size (reading then fails
// with the header's problem). Bounds how much of a compressed or piped
// .sptb is decoded into memory.
uint64_t sptb_declared_bytes(const unsigned char* head, size_t n);

// The validated header of an .sptb file and where its sections start: what
// a process needs to read a share of the file (the MPI reader gives each
// rank a range of nonzeros and a range of checksum blocks).
struct SptbHeader {
  spt_dtype dtype = SPT_FLOAT64;  // the file's value type
  uint32_t order = 0;
  uint64_t nnz = 0;
  uint64_t payload = 0;
  uint64_t stored_checksum = 0;
  uint64_t header_digest = 0;           // XXH64 of the header with the checksum zeroed
  std::vector<uint64_t> section_offsets;  // dims, the order index arrays, the values
  std::vector<spt_index> dims;            // as stored (not yet checked for 0)
  uint64_t blocks() const { return (payload + kSptbChecksumBlockBytes - 1) / kSptbChecksumBlockBytes; }
};

// Reads and checks the header (magic, version, endianness, dtype, order,
// sizes against the file's length) and the dims. SPT_ERR_PARSE or
// SPT_ERR_UNSUPPORTED naming the file.
SPT_INTERNAL_API SptbHeader read_sptb_header(InputSource& in);
// The digests of checksum blocks [first, last) of the payload, read by copy
// (never mapped); a file that shrank since it was opened is SPT_ERR_IO.
SPT_INTERNAL_API std::vector<uint64_t> sptb_block_digests(const spt_context_s& ctx, InputSource& in, const SptbHeader& h,
                                         uint64_t first, uint64_t last);
// SPT_ERR_PARSE ("wrong checksum") unless the digests of all blocks, in
// order, give the stored checksum.
SPT_INTERNAL_API void verify_sptb_checksum(const SptbHeader& h, const std::vector<uint64_t>& digests, const std::string& path);
// Nonzeros [begin, end) of the file as an owned tensor of opts.dtype with
// the file's dims (the caller's dims when given), checked as read_spt_bin
// checks them (indices in range, finite values when asked; errors name the
// nonzero's position in the file) except for the checksum. Reads only that
// share, by copy straight into the arrays (never mapped); a file that
// shrank since it was opened is SPT_ERR_IO.
SPT_INTERNAL_API spt_coo_s read_spt_bin_range(const spt_context_s& ctx, InputSource& in, const SptbHeader& h, const ReadOptions& opts,
                             uint64_t begin, uint64_t end);


spt_coo_s read_spt_bin(const spt_context_s& ctx, InputSource& in, const ReadOptions& opts);
void write_spt_bin(const spt_context_s& ctx, const spt_coo_s& x, Sink& out);

}  // namespace spt::io
