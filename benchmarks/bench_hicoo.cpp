// bench_hicoo: COO -> HiCOO conversion time and HiCOO MTTKRP per mode, next
// to the COO MTTKRP, through the public C API (sptensor/sptensor.h).
//
//   bench_hicoo FILE [--rank 16] [--reps 10] [--conv-reps 5] [--threads N]
//                    [--dtype float32|float64] [--block B] [--superblock L]
//                    [--strategies auto,direct,privatized] [--tensor NAME]
//
// Prints JSON Lines on stdout (keys of ../shared/DESIGN.md "Benchmarks"):
//  - bench "hicoo_convert": spt_hicoo_from_coo, --conv-reps timed calls after
//    one warm-up; extra keys block, superblock, blocks, superblocks,
//    hicoo_bytes, coo_bytes, alpha_b, c_b.
//  - bench "mttkrp", format "hicoo" (one line per mode and strategy; key
//    strategy = what was asked, used = what ran) and format "coo" (spt_mttkrp,
//    for the same factors): 1 warm-up, then --reps timed calls.
//      flops = N * nnz * R; bytes = format bytes + factors read once + output
//      written once (gbps_effective = bytes / median).
// The stats explanation (why B, L and each strategy) goes to stderr.
// Run with OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive OPENBLAS_NUM_THREADS=1.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "sptensor/sptensor.h"

namespace {

using namespace spt_bench;

// Unlike spt_bench::tensor_stem, also drops the .f32 / .f64 suffixes.
std::string tensor_stem(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  for (const char* suffix : {".xz", ".gz", ".zst", ".tns", ".sptb", ".f32", ".f64", ".bin"}) {
    const size_t n = std::strlen(suffix);
    if (name.size() > n && name.compare(name.size() - n, n, suffix) == 0) name.resize(name.size() - n);
  }
  return name;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(item);
  return out;
}

struct Args {
  std::string file, tensor;
  int rank = 16, reps = 10, conv_reps = 5, threads = 0;
  spt_dtype dtype = SPT_FLOAT32;
  uint32_t block = 0, superblock = 0;
  std::vector<std::string> strategies{"auto", "direct", "privatized"};
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw Failure(k + " needs a value");
      return argv[++i];
    };
    if (k == "--rank") a.rank = std::stoi(value());
    else if (k == "--reps") a.reps = std::stoi(value());
    else if (k == "--conv-reps") a.conv_reps = std::stoi(value());
    else if (k == "--threads") a.threads = std::stoi(value());
    else if (k == "--dtype") a.dtype = value() == "float64" ? SPT_FLOAT64 : SPT_FLOAT32;
    else if (k == "--block") a.block = std::stoul(value());
    else if (k == "--superblock") a.superblock = std::stoul(value());
    else if (k == "--strategies") a.strategies = split(value());
    else if (k == "--tensor") a.tensor = value();
    else if (!k.empty() && k[0] == '-') throw Failure("unknown option " + k);
    else a.file = k;
  }
  if (a.file.empty()) throw Failure("usage: bench_hicoo FILE [options]");
  if (a.tensor.empty()) a.tensor = tensor_stem(a.file);
  return a;
}

spt_hicoo_strategy strategy_of(const std::string& s) {
  if (s == "direct") return SPT_HICOO_STRATEGY_DIRECT;
  if (s == "privatized") return SPT_HICOO_STRATEGY_PRIVATIZED;
  if (s == "auto") return SPT_HICOO_STRATEGY_AUTO;
  throw Failure("unknown strategy " + s);
}

const char* strategy_name(spt_hicoo_strategy s) {
  return s == SPT_HICOO_STRATEGY_DIRECT ? "direct" : s == SPT_HICOO_STRATEGY_PRIVATIZED ? "privatized" : "auto";
}

int run(const Args& a) {
  spt_context* ctx = nullptr;
  check(spt_context_create(&ctx), nullptr, "context");
  if (a.threads > 0) check(spt_context_set_threads(ctx, a.threads), ctx, "threads");
  int threads = 0;
  spt_context_get_threads(ctx, &threads);
  spt_coo* x = read_tensor(ctx, a.file, a.dtype);
  spt_coo_summary info;
  info.struct_size = sizeof info;
  spt_coo_info(ctx, x, &info);
  const uint32_t order = info.order;
  const spt_nnz nnz = info.nnz;
  std::vector<spt_index> dims(order);
  spt_coo_dims(x, dims.data());
  const size_t vbytes = a.dtype == SPT_FLOAT32 ? 4 : 8;
  const char* commit = std::getenv("SPT_COMMIT");
  const std::string device = cpu_model(), date = utc_now();
  // A record's leading keys: bench, format, then the host and tensor fields.
  auto record = [&](const char* bench, const char* format) {
    Record r;
    r.str("bench", bench)
        .str("format", format)
        .str("backend", "cpu")
        .str("device", device)
        .integer("threads", threads)
        .integer("ranks", 1)
        .str("tensor", a.tensor)
        .integer("order", order)
        .integer("nnz", static_cast<long long>(nnz))
        .str("dtype", a.dtype == SPT_FLOAT32 ? "float32" : "float64")
        .str("date", date)
        .str("commit", commit ? commit : "unknown");
    return r;
  };

  spt_hicoo_options ho;
  spt_hicoo_options_init(&ho);
  ho.block_size = a.block;
  ho.superblock_size = a.superblock;

  // Conversion: one warm-up, then timed.
  std::vector<double> conv;
  spt_hicoo* h = nullptr;
  for (int r = 0; r <= a.conv_reps; ++r) {
    spt_hicoo_free(h);
    h = nullptr;
    const double t0 = now_seconds();
    check(spt_hicoo_from_coo(ctx, x, &ho, &h), ctx, "spt_hicoo_from_coo");
    if (r > 0) conv.push_back((now_seconds() - t0) * 1e3);
  }
  std::vector<char> reason(1 << 16);
  spt_hicoo_statistics st{};
  st.struct_size = sizeof(st);
  st.reason = reason.data();
  st.reason_capacity = reason.size();
  check(spt_hicoo_stats(ctx, h, &st), ctx, "spt_hicoo_stats");
  std::fprintf(stderr, "%s: B=%u L=%u n_b=%llu n_l=%llu alpha_b=%.4f Mb=%.2f c_b=%.4f bytes hicoo=%llu coo=%llu\n%s\n",
               a.tensor.c_str(), st.block_size, st.superblock_size, (unsigned long long)st.num_blocks,
               (unsigned long long)st.num_superblocks, st.block_ratio, st.geomean_nnz_per_block, st.slice_per_block,
               (unsigned long long)st.hicoo_bytes, (unsigned long long)st.coo_bytes, reason.data());
  record("hicoo_convert", "hicoo")
      .integer("mode", -1)
      .null("rank")
      .num("ms_median", median(conv))
      .num("ms_min", conv.empty() ? 0.0 : *std::min_element(conv.begin(), conv.end()))
      .integer("reps", a.conv_reps)
      .null("gflops")
      .null("gbps_effective")
      .integer("block", st.block_size)
      .integer("superblock", st.superblock_size)
      .integer("blocks", static_cast<long long>(st.num_blocks))
      .integer("superblocks", static_cast<long long>(st.num_superblocks))
      .integer("hicoo_bytes", static_cast<long long>(st.hicoo_bytes))
      .integer("coo_bytes", static_cast<long long>(st.coo_bytes))
      .num("alpha_b", st.block_ratio)
      .num("c_b", st.slice_per_block)
      .print();

  // Factors and outputs.
  std::vector<spt_matrix*> f(order, nullptr), out(order, nullptr);
  for (uint32_t m = 0; m < order; ++m) {
    std::vector<double> v(size_t(dims[m]) * a.rank);
    uint64_t s = 0x9E3779B97F4A7C15ull * (m + 1);
    for (double& e : v) {
      s ^= s << 13, s ^= s >> 7, s ^= s << 17;
      e = double(s % 1000) / 1000.0;
    }
    std::vector<float> vf(v.begin(), v.end());
    check(spt_matrix_create_copy(ctx, a.dtype, dims[m], a.rank, SPT_ROW_MAJOR,
                                 a.dtype == SPT_FLOAT32 ? static_cast<const void*>(vf.data()) : v.data(), a.rank, &f[m]),
          ctx, "factor");
    check(spt_matrix_create(ctx, a.dtype, dims[m], a.rank, SPT_ROW_MAJOR, &out[m]), ctx, "out");
  }
  uint64_t factor_bytes = 0;
  for (uint32_t m = 0; m < order; ++m) factor_bytes += uint64_t(dims[m]) * a.rank * vbytes;

  auto time_calls = [&](auto&& call) {
    call();
    std::vector<double> t;
    for (int r = 0; r < a.reps; ++r) {
      const double t0 = now_seconds();
      call();
      t.push_back((now_seconds() - t0) * 1e3);
    }
    return t;
  };
  // The MTTKRP record of `format` in `mode` from the call times t; the
  // caller adds its own keys and prints it.
  auto mttkrp_record = [&](const char* format, uint32_t mode, const std::vector<double>& t, uint64_t tensor_bytes) {
    const double ms = median(t);
    const double flops = double(order) * double(nnz) * a.rank;
    const double bytes = double(tensor_bytes) + double(factor_bytes);  // others read + output written
    Record r = record("mttkrp", format);
    r.integer("mode", mode)
        .integer("rank", a.rank)
        .num("ms_median", ms)
        .num("ms_min", t.empty() ? 0.0 : *std::min_element(t.begin(), t.end()))
        .integer("reps", a.reps)
        .num("gflops", flops / ms / 1e6)
        .num("gbps_effective", bytes / ms / 1e6);
    return r;
  };

  const uint64_t coo_bytes = nnz * (uint64_t(order) * 4 + vbytes);
  for (uint32_t mode = 0; mode < order; ++mode) {
    auto t = time_calls([&] { check(spt_mttkrp(ctx, x, f.data(), mode, out[mode]), ctx, "spt_mttkrp"); });
    mttkrp_record("coo", mode, t, coo_bytes).print();
  }
  for (const std::string& sname : a.strategies) {
    spt_hicoo* hs = h;
    if (strategy_of(sname) != SPT_HICOO_STRATEGY_AUTO) {
      spt_hicoo_options o2 = ho;
      o2.block_size = st.block_size;
      o2.superblock_size = st.superblock_size;
      o2.strategy = strategy_of(sname);
      check(spt_hicoo_from_coo(ctx, x, &o2, &hs), ctx, "spt_hicoo_from_coo");
    }
    for (uint32_t mode = 0; mode < order; ++mode) {
      spt_hicoo_mode_statistics ms{};
      ms.struct_size = sizeof(ms);
      check(spt_hicoo_mode_stats(ctx, hs, mode, &ms), ctx, "spt_hicoo_mode_stats");
      auto t = time_calls([&] { check(spt_mttkrp_hicoo(ctx, hs, f.data(), mode, out[mode]), ctx, "mttkrp_hicoo"); });
      mttkrp_record("hicoo", mode, t, st.hicoo_bytes)
          .str("strategy", sname)
          .str("used", strategy_name(ms.strategy))
          .integer("block", st.block_size)
          .integer("superblock", st.superblock_size)
          .integer("slabs", static_cast<long long>(ms.slabs))
          .integer("iterations", static_cast<long long>(ms.iterations))
          .print();
    }
    if (hs != h) spt_hicoo_free(hs);
  }
  for (auto* m : f) spt_matrix_free(m);
  for (auto* m : out) spt_matrix_free(m);
  spt_hicoo_free(h);
  spt_coo_free(x);
  spt_context_free(ctx);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_hicoo: %s\n", e.what());
    return 1;
  }
}
