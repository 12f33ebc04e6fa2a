// Internal entry points of file I/O (the C API in src/api/api_io.cpp is a
// thin wrapper). Readers and writers for each format live in their own
// files; this header holds the options they share.
#pragma once

#include <string>
#include <vector>

#include "core/context.hpp"
#include "core/coo.hpp"
#include "util/internal_api.hpp"

namespace spt::io {

struct ReadOptions {
  spt_file_format format = SPT_FILE_AUTO;
  spt_dtype dtype = SPT_FLOAT64;
  int index_base = 1;
  uint32_t order = 0;                  // 0 = infer
  std::vector<spt_index> dims;         // empty = infer
  spt_duplicates duplicates = SPT_DUPLICATES_KEEP;
  bool reject_nonfinite = false;
  bool copy_binary = false;            // .sptb: copy (the default; kept for older callers)
  bool map_binary = false;             // .sptb: zero-copy mapping of a plain file (opt-in: SIGBUS risk)
};

struct WriteOptions {
  spt_file_format format = SPT_FILE_AUTO;
  spt_compression compression = SPT_COMPRESS_AUTO;
  int index_base = 1;
  int precision = 0;  // 0 = shortest round trip
};

// Defaults of the public option structs (for the *_options_init calls).
void default_read_options(spt_read_options* opts);
void default_write_options(spt_write_options* opts);

// Validated conversions from the public option structs (NULL = defaults).
SPT_INTERNAL_API ReadOptions read_options_from(const spt_read_options* opts);
WriteOptions write_options_from(const spt_write_options* opts);

// Format a write to `path` resolves to under `opts` (extension rules), and
// the compression.
spt_file_format resolve_write_format(const std::string& path, const WriteOptions& opts);
spt_compression resolve_write_compression(const std::string& path, const WriteOptions& opts);

SPT_INTERNAL_API spt_coo_s read_tensor(const spt_context_s& ctx, const std::string& path, const ReadOptions& opts);
void write_tensor(const spt_context_s& ctx, const spt_coo_s& x, const std::string& path, const WriteOptions& opts);

}  // namespace spt::io
