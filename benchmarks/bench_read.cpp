// Read throughput of spt_read: for each tensor given (.tns or .tns.xz/.gz/
// .zst), time reading the plain text, the xz-compressed text and our binary
// (.sptb) with the public API, and print one JSON line per input (keys per
// DESIGN.md "Benchmarks").
//
//   bench_read [--reps N] [--threads T] [--tmpdir DIR] FILE...
//
// Temporary copies (plain .tns, .tns.xz, .sptb) go to a fresh directory
// under --tmpdir (default /tmp) and are removed afterwards. mb_per_s is
// uncompressed text bytes per second for the text inputs and file bytes per
// second for .sptb. Run with OMP_WAIT_POLICY=passive on small machines.
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "io/input_source.hpp"
#include "sptensor/sptensor.h"

namespace fs = std::filesystem;

namespace {

[[noreturn]] void die(const std::string& what, spt_context* ctx) {
  std::fprintf(stderr, "bench_read: %s: %s\n", what.c_str(), ctx ? spt_last_error(ctx) : "");
  std::exit(1);
}

struct Timing {
  double median_ms = 0, min_ms = 0;
  uint32_t order = 0;
  spt_nnz nnz = 0;
};

Timing time_reads(spt_context* ctx, const std::string& path, int reps) {
  std::vector<double> ms;
  Timing t;
  for (int r = 0; r < reps; ++r) {
    spt_coo* x = nullptr;
    auto t0 = std::chrono::steady_clock::now();
    if (spt_read(ctx, path.c_str(), nullptr, &x) != SPT_OK) die("reading " + path, ctx);
    auto t1 = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    spt_coo_summary info;
    info.struct_size = sizeof info;
    spt_coo_info(ctx, x, &info);
    t.order = info.order;
    t.nnz = info.nnz;
    spt_coo_free(x);
  }
  std::sort(ms.begin(), ms.end());
  t.median_ms = ms[ms.size() / 2];
  t.min_ms = ms.front();
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 5, threads = 0;
  std::string tmp_root = "/tmp";
  std::vector<std::string> inputs;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
    else if (a == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (a == "--tmpdir" && i + 1 < argc) tmp_root = argv[++i];
    else if (a == "-h" || a == "--help") {
      std::printf("usage: bench_read [--reps N] [--threads T] [--tmpdir DIR] FILE.tns[.xz]...\n");
      return 0;
    } else inputs.push_back(a);
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "usage: bench_read [--reps N] [--threads T] [--tmpdir DIR] FILE.tns[.xz]...\n");
    return 2;
  }
  spt_context* ctx = nullptr;
  spt_context_create(&ctx);
  if (threads > 0) spt_context_set_threads(ctx, threads);
  spt_context_get_threads(ctx, &threads);
  const char* commit_env = std::getenv("SPT_COMMIT");
  const std::string commit = commit_env ? commit_env : "unknown";
  const std::string device = spt_bench::cpu_model();

  std::string tmpl = (fs::path(tmp_root) / "bench_read_XXXXXX").string();
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) die("cannot create a directory under " + tmp_root, nullptr);
  const fs::path dir = buf.data();

  for (const std::string& input : inputs) {
    const std::string stem = spt_bench::tensor_stem(input);
    const std::string text = (dir / (stem + ".tns")).string();
    const std::string xz = (dir / (stem + ".tns.xz")).string();
    const std::string sptb = (dir / (stem + ".sptb")).string();
    uint64_t text_bytes = 0;
    try {
      // The plain text exactly as in the input (decompressed if needed).
      spt::io::InputSource src(input, threads);
      const char* bytes = src.bytes();  // loads a compressed file whole (size() is known after)
      text_bytes = src.size();
      std::ofstream out(text, std::ios::binary);
      out.write(bytes, static_cast<std::streamsize>(src.size()));
      if (!out) die("cannot write " + text, nullptr);
    } catch (const std::exception& e) {
      die(std::string("cannot load ") + input + ": " + e.what(), nullptr);
    }
    spt_coo* x = nullptr;
    if (spt_read(ctx, text.c_str(), nullptr, &x) != SPT_OK) die("reading " + text, ctx);
    if (spt_write(ctx, x, xz.c_str(), nullptr) != SPT_OK) die("writing " + xz, ctx);
    if (spt_write(ctx, x, sptb.c_str(), nullptr) != SPT_OK) die("writing " + sptb, ctx);
    spt_coo_free(x);

    struct Variant {
      const char* format;
      std::string path;
      bool text_basis;
    } variants[] = {{"tns", text, true}, {"tns.xz", xz, true}, {"sptb", sptb, false}};
    for (const Variant& v : variants) {
      const uint64_t file_bytes = fs::file_size(v.path);
      Timing t = time_reads(ctx, v.path, reps);
      const double basis = static_cast<double>(v.text_basis ? text_bytes : file_bytes);
      spt_bench::Record()
          .str("bench", "read")
          .str("format", v.format)
          .str("backend", "cpu")
          .str("device", device)
          .integer("threads", threads)
          .str("tensor", stem)
          .integer("order", t.order)
          .integer("nnz", static_cast<long long>(t.nnz))
          .str("dtype", "float64")
          .num("ms_median", t.median_ms)
          .num("ms_min", t.min_ms)
          .integer("reps", reps)
          .num("mb_per_s", basis / 1e6 / (t.median_ms / 1e3))
          .str("mb_per_s_basis", v.text_basis ? "uncompressed_text" : "file")
          .integer("file_bytes", static_cast<long long>(file_bytes))
          .integer("text_bytes", static_cast<long long>(text_bytes))
          .str("date", spt_bench::utc_now())
          .str("commit", commit)
          .print();
    }
    fs::remove(text);
    fs::remove(xz);
    fs::remove(sptb);
  }
  fs::remove_all(dir);
  spt_context_free(ctx);
  return 0;
}
