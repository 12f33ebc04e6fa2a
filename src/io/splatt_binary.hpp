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

#include "core/context.hpp"
#include "core/coo.hpp"
#include "io/input_source.hpp"
#include "io/io.hpp"
#include "io/output_file.hpp"

namespace spt::io {

constexpr size_t kSplattHeaderBytes = 20;

// True when the first bytes look like a SPLATT binary header (coord or CSF).
bool looks_like_splatt_bin(const unsigned char* head, size_t n);

spt_coo_s read_splatt_bin(const spt_context_s& ctx, InputSource& in, const ReadOptions& opts);
void write_splatt_bin(const spt_context_s& ctx, const spt_coo_s& x, Sink& out);

}  // namespace spt::io
