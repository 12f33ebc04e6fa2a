// sptensor convert IN OUT: read any supported tensor file, write another.
#include <cstdio>

#include "cli.hpp"

namespace sptcli {

const CommandSpec& convert_spec() {
  static const CommandSpec spec = [] {
    CommandSpec s;
    s.name = "convert";
    s.summary = "Convert a tensor file between .tns, extended .tns, SPLATT .bin and .sptb (optionally compressed).";
    s.positionals = {"IN", "OUT"};
    s.description =
        "The input format and compression are detected from the content. The output format follows\n"
        "OUT's extension unless --to is given: .bin SPLATT binary, .sptb libsptensor binary, anything\n"
        "else FROSTT text; a trailing .gz, .xz or .zst compresses. Text output is exact (shortest\n"
        "round-trip values) and keeps the dims: it starts with the extended header (order, dims)\n"
        "when the dims are not the largest indices or the tensor is empty. --dtype float32 on\n"
        "values beyond float32's range is an error. OUT is written to a temporary name and\n"
        "renamed, so a failure never leaves a truncated file.";
    s.options = common_options();
    s.options.push_back({"to", 0, "FORMAT", "output format: auto (default), tns, tns-ext, bin or sptb"});
    s.options.push_back({"compress", 0, "KIND", "output compression: auto (by extension), none, gzip, xz or zstd"});
    s.options.push_back({"out-base", 0, "B", "text output: first index is B, 1 (default) or 0"});
    s.options.push_back({"precision", 0, "DIGITS", "text output: significant digits (default 0 = shortest exact)"});
    s.options.push_back({"sum-duplicates", 0, "", "merge repeated coordinates by summing their values"});
    return s;
  }();
  return spec;
}

int run_convert(const ParsedArgs& args) {
  const std::string in = args.positionals[0];
  const std::string out = args.positionals[1];

  spt_write_options wopts;
  check(spt_write_options_init(&wopts), nullptr, "initialising write options");
  std::string to = args.choice("to", "auto", {"auto", "tns", "tns-ext", "bin", "sptb"});
  wopts.format = to == "tns"       ? SPT_FILE_TNS
                 : to == "tns-ext" ? SPT_FILE_TNS_EXTENDED
                 : to == "bin"     ? SPT_FILE_SPLATT_BIN
                 : to == "sptb"    ? SPT_FILE_SPT_BIN
                                   : SPT_FILE_AUTO;
  std::string compress = args.choice("compress", "auto", {"auto", "none", "gzip", "xz", "zstd"});
  wopts.compression = compress == "none"   ? SPT_COMPRESS_NONE
                      : compress == "gzip" ? SPT_COMPRESS_GZIP
                      : compress == "xz"   ? SPT_COMPRESS_XZ
                      : compress == "zstd" ? SPT_COMPRESS_ZSTD
                                           : SPT_COMPRESS_AUTO;
  wopts.index_base = static_cast<int>(args.integer("out-base", 1, 0, 1));
  wopts.precision = static_cast<int>(args.integer("precision", 0, 0, 17));

  // Checked before reading: a big input is not read for nothing. spt_write
  // writes a temporary file and renames it over OUT.
  check_output_file(out, "OUT", true);

  ContextPtr ctx = make_context(args);
  double read_seconds = 0;
  CooPtr x = read_tensor(ctx.get(), args, in, &read_seconds);
  if (args.has("sum-duplicates"))
    check(spt_coo_coalesce(ctx.get(), x.get(), SPT_DUPLICATES_SUM), ctx.get(), "merging duplicates");
  TensorShape s = shape_of(x.get());

  double start = now_seconds();
  check(spt_write(ctx.get(), x.get(), out.c_str(), &wopts), ctx.get(), "");
  double write_seconds = now_seconds() - start;

  std::printf("%s -> %s: order %u, dims %s, nnz %llu, %s (read %.3f s, write %.3f s)\n", printable(in).c_str(),
              printable(out).c_str(),
              s.order, dims_text(s.dims, "x").c_str(), static_cast<unsigned long long>(s.nnz), dtype_name(s.dtype),
              read_seconds, write_seconds);
  return kExitOk;
}

}  // namespace sptcli
