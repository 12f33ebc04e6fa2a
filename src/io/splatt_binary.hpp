// SPLATT's binary coordinate file (.bin), as written by SPLATT's
// tt_write_binary: int32 magic 0 (SPLATT_BIN_COORD), uint64 idx_width,
// uint64 val_width, then nmodes, dims[nmodes] and nnz as idx_width-byte
// integers, the per-mode 0-based index arrays (idx_width bytes each) and
// the values (val_width bytes), all little-endian and unpadded.
//
// We read idx widths 4 and 8 and value widths 4 and 8. We write idx_width 4
// (8 only when nnz >= 2^32 - 1, as SPLATT itself does) and val_width = the
// tensor's value size, which a default SPLATT build (64-bit idx and val)
// reads; a float32 tensor also suits a 32-bit-value SPLATT build.
#pragma once

#include <vector>

#include "core/context.hpp"
#include "core/coo.hpp"
#include "io/input_source.hpp"
#include "io/io.hpp"
#include "io/output_file.hpp"
#include "util/internal_api.hpp"

namespace spt::io {

constexpr size_t kSplattHeaderBytes = 20;

// True when the first bytes look like a SPLATT binary header (coord or CSF).
SPT_INTERNAL_API bool looks_like_splatt_bin(const unsigned char* head, size_t n);
// The file size the header of `in` declares (peeked, not consumed), or the
// fixed header size when it is not a valid coordinate header. Bounds how
// much of a compressed or piped .bin is decoded into memory.
uint64_t splatt_declared_bytes(InputSource& in);

spt_coo_s read_splatt_bin(const spt_context_s& ctx, InputSource& in, const ReadOptions& opts);

// The checked header of a SPLATT coordinate file: what a process needs to
// read a range of its nonzeros (the MPI reader gives each rank one).
struct SplattHeader {
  uint64_t index_width = 4, value_width = 8;  // bytes
  std::vector<spt_index> dims;
  uint64_t nnz = 0;
  uint64_t data_offset = 0;  // where the first index array starts
};
// Reads and checks the header (magic, widths, dims, sizes against the
// file's length). SPT_ERR_PARSE / SPT_ERR_UNSUPPORTED / SPT_ERR_OVERFLOW
// naming the file.
SPT_INTERNAL_API SplattHeader read_splatt_header(InputSource& in);
// Nonzeros [begin, end) as an owned tensor of opts.dtype, checked as
// read_splatt_bin checks them; errors name positions in the file.
SPT_INTERNAL_API spt_coo_s read_splatt_bin_range(const spt_context_s& ctx, InputSource& in, const SplattHeader& h,
                                const ReadOptions& opts, uint64_t begin, uint64_t end);
void write_splatt_bin(const spt_context_s& ctx, const spt_coo_s& x, Sink& out);

}  // namespace spt::io
