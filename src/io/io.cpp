// File I/O entry points: option validation, format and compression
// detection, and dispatch to the per-format readers and writers.
#include "io/io.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "core/error.hpp"
#include "io/compression.hpp"
#include "io/duplicates.hpp"
#include "io/input_source.hpp"
#include "io/output_file.hpp"
#include "io/splatt_binary.hpp"
#include "io/spt_binary.hpp"
#include "io/tns_text_reader.hpp"
#include "io/tns_text_writer.hpp"

namespace spt::io {

namespace {

bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// Compression named by the extension, and the path without it.
spt_compression compression_from_extension(const std::string& path, std::string* stem) {
  struct Ext {
    const char* ext;
    spt_compression kind;
  };
  static const Ext exts[] = {{".gz", SPT_COMPRESS_GZIP},
                             {".xz", SPT_COMPRESS_XZ},
                             {".zst", SPT_COMPRESS_ZSTD},
                             {".zstd", SPT_COMPRESS_ZSTD}};
  for (const Ext& e : exts) {
    if (ends_with(path, e.ext)) {
      if (stem) *stem = path.substr(0, path.size() - std::strlen(e.ext));
      return e.kind;
    }
  }
  if (stem) *stem = path;
  return SPT_COMPRESS_NONE;
}

bool valid_format(int f) { return f >= SPT_FILE_AUTO && f <= SPT_FILE_SPT_BIN; }

}  // namespace

void default_read_options(spt_read_options* o) {
  std::memset(o, 0, sizeof(*o));
  o->struct_size = sizeof(*o);
  o->format = SPT_FILE_AUTO;
  o->dtype = SPT_FLOAT64;
  o->index_base = 1;
  o->order = 0;
  o->dims = nullptr;
  o->duplicates = SPT_DUPLICATES_KEEP;
  o->reject_nonfinite = 0;
  o->copy_binary = 0;
  o->map_binary = 0;
}

void default_write_options(spt_write_options* o) {
  std::memset(o, 0, sizeof(*o));
  o->struct_size = sizeof(*o);
  o->format = SPT_FILE_AUTO;
  o->compression = SPT_COMPRESS_AUTO;
  o->index_base = 1;
  o->precision = 0;
}

ReadOptions read_options_from(const spt_read_options* opts) {
  spt_read_options o;
  default_read_options(&o);
  if (opts) {
    require(opts->struct_size != 0, "opts->struct_size is 0: initialise the options with spt_read_options_init()");
    // Fields the caller's (possibly older) struct has; the rest keep defaults.
    std::memcpy(&o, opts, std::min(opts->struct_size, sizeof(o)));
  }
  ReadOptions r;
  require(valid_format(o.format), "opts->format must be an spt_file_format (0..4), got ", static_cast<int>(o.format));
  check_dtype(o.dtype);
  require(o.index_base == 0 || o.index_base == 1, "opts->index_base must be 0 or 1, got ", o.index_base);
  require(o.duplicates >= SPT_DUPLICATES_KEEP && o.duplicates <= SPT_DUPLICATES_REJECT,
          "opts->duplicates must be KEEP, SUM or REJECT, got ", static_cast<int>(o.duplicates));
  require(o.order <= SPT_MAX_ORDER, "opts->order ", o.order, " is above the supported maximum SPT_MAX_ORDER = ",
          SPT_MAX_ORDER);
  if (o.dims) {
    require(o.order >= 1, "opts->dims is set but opts->order is 0; give the order of the dims array");
    for (uint32_t m = 0; m < o.order; ++m) require(o.dims[m] >= 1, "opts->dims[", m, "] must be at least 1, got 0");
    r.dims.assign(o.dims, o.dims + o.order);
  }
  r.format = o.format;
  r.dtype = o.dtype;
  r.index_base = o.index_base;
  r.order = o.order;
  r.duplicates = o.duplicates;
  r.reject_nonfinite = o.reject_nonfinite != 0;
  r.copy_binary = o.copy_binary != 0;
  r.map_binary = o.map_binary != 0 && !r.copy_binary;
  return r;
}

WriteOptions write_options_from(const spt_write_options* opts) {
  spt_write_options o;
  default_write_options(&o);
  if (opts) {
    require(opts->struct_size != 0, "opts->struct_size is 0: initialise the options with spt_write_options_init()");
    std::memcpy(&o, opts, std::min(opts->struct_size, sizeof(o)));
  }
  require(valid_format(o.format), "opts->format must be an spt_file_format (0..4), got ", static_cast<int>(o.format));
  require(o.compression >= SPT_COMPRESS_AUTO && o.compression <= SPT_COMPRESS_ZSTD,
          "opts->compression must be an spt_compression (0..4), got ", static_cast<int>(o.compression));
  require(o.index_base == 0 || o.index_base == 1, "opts->index_base must be 0 or 1, got ", o.index_base);
  require(o.precision >= 0, "opts->precision must be >= 0 (0 = shortest exact), got ", o.precision);
  WriteOptions w;
  w.format = o.format;
  w.compression = o.compression;
  w.index_base = o.index_base;
  w.precision = o.precision;
  return w;
}

spt_compression resolve_write_compression(const std::string& path, const WriteOptions& opts) {
  if (opts.compression != SPT_COMPRESS_AUTO) return opts.compression;
  return compression_from_extension(path, nullptr);
}

spt_file_format resolve_write_format(const std::string& path, const WriteOptions& opts) {
  if (opts.format != SPT_FILE_AUTO) return opts.format;
  std::string stem;
  compression_from_extension(path, &stem);
  if (ends_with(stem, ".bin")) return SPT_FILE_SPLATT_BIN;
  if (ends_with(stem, ".sptb")) return SPT_FILE_SPT_BIN;
  return SPT_FILE_TNS;
}

spt_coo_s read_tensor(const spt_context_s& ctx, const std::string& path, const ReadOptions& opts) {
  const int threads = thread_count(ctx);
  InputSource in(path, threads);
  unsigned char head[kSptbHeaderBytes] = {};
  const size_t head_size = in.peek(head, sizeof(head));

  spt_file_format format = opts.format;
  if (format == SPT_FILE_AUTO) {
    if (looks_like_sptb(head, head_size)) format = SPT_FILE_SPT_BIN;
    else if (looks_like_splatt_bin(head, head_size)) format = SPT_FILE_SPLATT_BIN;
  }

  spt_coo_s x;
  std::function<std::string(spt_nnz)> where;
  TextLayout layout;
  bool text = false;
  // A compressed (or piped) binary file is decoded whole before it is read:
  // that shows as its own stage.
  in.set_load_progress([&ctx](double f) { progress(ctx, "decompress", f); });
  switch (format) {
    case SPT_FILE_SPT_BIN:  // a stream is loaded up to its header's declared size
      x = read_spt_bin(ctx, in, opts);
      break;
    case SPT_FILE_SPLATT_BIN:
      x = read_splatt_bin(ctx, in, opts);
      break;
    default: {
      text = true;
      StreamHint hint;
      hint.fraction = [&in] { return in.fraction(); };
      if (in.random_access()) hint.size = in.size();
      const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
      hint.max_reserve_bytes = pages > 0 && page > 0 ? 0.5 * double(pages) * double(page) : 0.0;
      x = read_tns_text_stream(ctx, [&in](char* d, size_t n) { return in.read(d, n); }, hint, path, opts, &layout);
      break;
    }
  }
  if (opts.duplicates != SPT_DUPLICATES_KEEP) {
    if (text && in.rereadable()) {
      // Read the file again to name the line (only on this error path).
      where = [&](spt_nnz k) {
        InputSource again(path, threads);
        return cat(path, ":", tns_entry_line([&again](char* d, size_t n) { return again.read(d, n); }, layout, k));
      };
    } else if (text) {
      where = [&](spt_nnz k) { return cat(path, ": entry ", k + 1); };
    } else {
      where = [&](spt_nnz k) { return cat(path, ": nonzero ", k); };
    }
    apply_duplicate_policy(ctx, x, opts.duplicates, where);
  }
  return x;
}

void write_tensor(const spt_context_s& ctx, const spt_coo_s& x, const std::string& path, const WriteOptions& opts) {
  const spt_file_format format = resolve_write_format(path, opts);
  const spt_compression compression = resolve_write_compression(path, opts);
  AtomicFile file(path);
  std::unique_ptr<Sink> compressor;
  Sink* sink = &file;
  if (compression != SPT_COMPRESS_NONE) {
    compressor = make_compressing_sink(compression, file, thread_count(ctx), path);
    sink = compressor.get();
  }
  switch (format) {
    case SPT_FILE_SPT_BIN:
      write_spt_bin(ctx, x, *sink);
      break;
    case SPT_FILE_SPLATT_BIN:
      write_splatt_bin(ctx, x, *sink);
      break;
    case SPT_FILE_TNS_EXTENDED:
      write_tns_text(ctx, x, *sink, opts, true);
      break;
    default:
      // Plain FROSTT unless that would lose the dims (see tns_needs_header).
      write_tns_text(ctx, x, *sink, opts, tns_needs_header(ctx, x));
      break;
  }
  if (compressor) compressor->finish();
  file.commit();
}

}  // namespace spt::io
