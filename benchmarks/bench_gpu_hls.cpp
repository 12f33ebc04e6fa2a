// GPU HLS benchmark: the tensor-core HLS MTTKRP and TTMc (every precision)
// against the other GPU formats - COO MTTKRP (spt_mttkrp), HB-CSF MTTKRP,
// F-COO MTTKRP and TTMc - on .tns files and on a generated block-structured
// tensor like the HLS paper's trajectory data (most nonzeros in dense 16^3
// clusters, the rest scattered). Everything goes through the public API on a
// context with backend CUDA; a kernel's time is the wall clock around the
// call (factors in and the output out included: what a caller sees), median
// of --reps (default 10) after 2 warm-ups. Each result's SMAPE and max
// relative error are taken against the float64 CPU result (the COO MTTKRP,
// or the F-COO TTMc, on a CPU context). One JSON line per (tensor, mode,
// kernel[, precision]).
//
//   bench_gpu_hls [--rank R] [--reps N] [--dtype float32|float64]
//                 [--synthetic-nnz N] [--no-synthetic] [--modes all|0,1,..]
//                 [--cpu] [FILE.tns ...]
//
// --cpu runs the same calls on the CPU backend (records say backend "cpu"):
// a check of the driver on a machine without a GPU, not a GPU measurement.
//
// The plugin is found as for any program (beside libsptensor.so or
// $SPT_PLUGIN_PATH); a build with the plugin points at its own.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "sptensor/sptensor.h"

using namespace spt_bench;

namespace {

struct Options {
  uint32_t rank = 16;
  int reps = 10;
  spt_dtype dtype = SPT_FLOAT32;
  uint64_t synthetic_nnz = 8000000;
  bool synthetic = true;
  bool cpu = false;
  std::vector<uint32_t> modes;  // empty = all
  std::vector<std::string> files;
};

struct CooDeleter {
  void operator()(spt_coo* x) const { spt_coo_free(x); }
};
using CooPtr = std::unique_ptr<spt_coo, CooDeleter>;

uint64_t lcg(uint64_t& s) {
  s = s * 6364136223846793005ull + 1442695040888963407ull;
  return s >> 17;
}

// The synthetic trajectory-like tensor: 2048^3, about 90% of `nnz` in dense
// 16^3 clusters aligned to the tile grid (each cell occupied with
// probability 0.3, no repeats), the rest scattered uniformly. Values in
// (0, 1].
spt_coo* synthetic_tensor(spt_context* ctx, spt_dtype dtype, uint64_t nnz) {
  const spt_index dims[3] = {2048, 2048, 2048};
  const double fill = 0.3;
  const uint64_t per_cluster = uint64_t(4096 * fill);
  const uint64_t clusters = std::max<uint64_t>(1, uint64_t(0.9 * double(nnz)) / per_cluster);
  std::vector<spt_index> ind[3];
  std::vector<double> val;
  uint64_t s = 12345;
  for (uint64_t c = 0; c < clusters; ++c) {
    spt_index base[3];
    for (int m = 0; m < 3; ++m) base[m] = spt_index(lcg(s) % (dims[m] / 16)) * 16;
    for (uint32_t cell = 0; cell < 4096; ++cell) {
      if (double(lcg(s) % 1000000) >= fill * 1e6) continue;
      ind[0].push_back(base[0] + (cell >> 8));
      ind[1].push_back(base[1] + ((cell >> 4) & 15));
      ind[2].push_back(base[2] + (cell & 15));
      val.push_back(double(lcg(s) % 1000000 + 1) * 1e-6);
    }
  }
  while (val.size() < nnz) {
    for (int m = 0; m < 3; ++m) ind[m].push_back(spt_index(lcg(s) % dims[m]));
    val.push_back(double(lcg(s) % 1000000 + 1) * 1e-6);
  }
  const spt_nnz n = val.size();
  std::vector<spt_index> mode_major(3 * n);
  for (int m = 0; m < 3; ++m) std::copy(ind[m].begin(), ind[m].end(), mode_major.begin() + size_t(m) * n);
  std::vector<float> val32(val.begin(), val.end());
  spt_coo* x = nullptr;
  check(spt_coo_create_from_arrays(ctx, dtype, 3, dims, n, mode_major.data(), n, 0,
                                   dtype == SPT_FLOAT32 ? static_cast<const void*>(val32.data()) : val.data(), 0, &x),
        ctx, "creating the synthetic tensor");
  return x;
}

// The matrix's values as float64, row-major.
std::vector<double> values_of(spt_matrix* m) {
  spt_matrix_summary info;
  info.struct_size = sizeof info;
  check(spt_matrix_info(nullptr, m, &info), nullptr, "spt_matrix_info");
  const spt_dtype dt = info.dtype;
  const spt_nnz rows = info.rows, cols = info.cols, ld = info.ld;
  const spt_layout layout = info.layout;
  void* data = nullptr;
  check(spt_matrix_data(m, &data), nullptr, "spt_matrix_data");
  std::vector<double> v(rows * cols);
  for (spt_nnz i = 0; i < rows; ++i)
    for (spt_nnz j = 0; j < cols; ++j) {
      const spt_nnz k = layout == SPT_ROW_MAJOR ? i * ld + j : j * ld + i;
      v[i * cols + j] = dt == SPT_FLOAT32 ? double(static_cast<float*>(data)[k]) : static_cast<double*>(data)[k];
    }
  return v;
}

// A copy of m in dtype (row-major).
MatrixPtr converted(spt_context* ctx, spt_matrix* m, spt_dtype dtype) {
  spt_matrix_summary info;
  info.struct_size = sizeof info;
  check(spt_matrix_info(ctx, m, &info), ctx, "spt_matrix_info");
  const spt_nnz rows = info.rows, cols = info.cols;
  const std::vector<double> v = values_of(m);
  spt_matrix* out = nullptr;
  check(spt_matrix_create(ctx, dtype, rows, cols, SPT_ROW_MAJOR, &out), ctx, "spt_matrix_create");
  MatrixPtr owned(out);
  void* data = nullptr;
  check(spt_matrix_data(out, &data), ctx, "spt_matrix_data");
  for (size_t k = 0; k < v.size(); ++k) {
    if (dtype == SPT_FLOAT32) static_cast<float*>(data)[k] = float(v[k]);
    else static_cast<double*>(data)[k] = v[k];
  }
  return owned;
}

struct Errors {
  double smape = 0, max_relative = 0;
};

Errors compare(const std::vector<double>& want, const std::vector<double>& got) {
  Errors e;
  double sum = 0;
  for (size_t k = 0; k < want.size(); ++k) {
    const double d = std::abs(got[k] - want[k]);
    const double mean = (std::abs(got[k]) + std::abs(want[k])) / 2;
    sum += mean > 0 ? d / mean : (d > 0 ? 2.0 : 0.0);
    if (want[k] != 0) e.max_relative = std::max(e.max_relative, d / std::abs(want[k]));
  }
  e.smape = want.empty() ? 0 : sum / double(want.size());
  return e;
}

const char* dtype_name(spt_dtype d) { return d == SPT_FLOAT32 ? "float32" : "float64"; }

struct Tensor {
  std::string name;
  CooPtr x;
  uint32_t order = 0;
  spt_nnz nnz = 0;
  std::vector<spt_index> dims;
};

class Bench {
 public:
  Bench(const Options& o, BenchEnv& env, spt_context* gpu, spt_context* cpu, const std::string& device)
      : o_(o), env_(env), gpu_(gpu), cpu_(cpu), device_(device) {}

  void run(const Tensor& t) {
    std::vector<uint32_t> modes = o_.modes;
    if (modes.empty())
      for (uint32_t m = 0; m < t.order; ++m) modes.push_back(m);
    spt_coo* x64 = nullptr;
    check(spt_coo_convert_dtype(cpu_, t.x.get(), SPT_FLOAT64, &x64), cpu_, "spt_coo_convert_dtype");
    CooPtr x64_owned(x64);
    for (uint32_t mode : modes) {
      if (mode >= t.order) continue;
      run_mode(t, x64, mode);
    }
  }

 private:
  Record base(const Tensor& t, const char* bench, const char* format, uint32_t mode) const {
    Record r;
    r.str("bench", bench).str("format", format).str("backend", o_.cpu ? "cpu" : "cuda").str("device", device_);
    r.integer("threads", env_.threads).str("tensor", t.name).integer("order", t.order).integer("nnz", t.nnz);
    r.integer("mode", mode).integer("rank", o_.rank).str("dtype", dtype_name(o_.dtype));
    return r;
  }

  void emit(Record& r, const CallTiming& tm, double flops, const Errors* e, double build_seconds) const {
    r.num("ms_median", tm.median_ms).num("ms_min", tm.min_ms).integer("reps", o_.reps);
    r.num("gflops", tm.median_ms > 0 ? flops / (tm.median_ms * 1e6) : 0);
    if (build_seconds >= 0) r.num("build_seconds", build_seconds);
    if (e) r.num("smape", e->smape).num("max_relative", e->max_relative);
    r.str("date", env_.date).str("commit", env_.commit);
    r.print();
  }

  void run_mode(const Tensor& t, spt_coo* x64, uint32_t mode) {
    const uint32_t N = t.order;
    const spt_nnz R = o_.rank;
    // Factors (dtype and float64 copies) and the CPU float64 references.
    std::vector<MatrixPtr> f, f64;
    std::vector<const spt_matrix*> fp(N, nullptr), fp64(N, nullptr);
    for (uint32_t m = 0; m < N; ++m) {
      f.push_back(random_factor(env_, o_.dtype, t.dims[m], R, 100 + m));
      f64.push_back(converted(cpu_, f.back().get(), SPT_FLOAT64));
      fp[m] = f[m].get();
      fp64[m] = f64[m].get();
    }
    spt_matrix* raw = nullptr;
    check(spt_matrix_create(cpu_, SPT_FLOAT64, t.dims[mode], R, SPT_ROW_MAJOR, &raw), cpu_, "spt_matrix_create");
    MatrixPtr want_mttkrp(raw);
    check(spt_mttkrp(cpu_, x64, fp64.data(), mode, want_mttkrp.get()), cpu_, "CPU reference MTTKRP");
    const std::vector<double> want_m = values_of(want_mttkrp.get());
    // TTMc: rank R per other mode, unless the output is too large.
    uint64_t cols = 1;
    for (uint32_t m = 0; m < N; ++m)
      if (m != mode) cols *= R;
    const bool do_ttmc = uint64_t(t.dims[mode]) * cols * 8 <= (uint64_t(4) << 30);
    std::vector<double> want_t;
    if (do_ttmc) {
      spt_fcoo* fc = nullptr;
      spt_fcoo_options fo;
      check(spt_fcoo_options_init(&fo), cpu_, "spt_fcoo_options_init");
      fo.mode = mode;
      check(spt_fcoo_from_coo(cpu_, x64, &fo, &fc), cpu_, "CPU F-COO");
      spt_matrix* yt = nullptr;
      check(spt_matrix_create(cpu_, SPT_FLOAT64, t.dims[mode], cols, SPT_ROW_MAJOR, &yt), cpu_, "spt_matrix_create");
      MatrixPtr owned(yt);
      const spt_status st = spt_ttmc_fcoo(cpu_, fc, fp64.data(), yt);
      spt_fcoo_free(fc);
      check(st, cpu_, "CPU reference TTMc");
      want_t = values_of(yt);
    } else {
      std::fprintf(stderr, "%s mode %u: TTMc output too large (%llu columns), skipped\n", t.name.c_str(), mode,
                   static_cast<unsigned long long>(cols));
    }
    const double mttkrp_flops = double(t.nnz) * double(R) * double(N);
    const double ttmc_flops = 2.0 * double(t.nnz) * double(cols);  // a bound: the paper's slice-wise form does less

    raw = nullptr;
    check(spt_matrix_create(gpu_, o_.dtype, t.dims[mode], R, SPT_ROW_MAJOR, &raw), gpu_, "spt_matrix_create");
    MatrixPtr out(raw);
    MatrixPtr yt;
    if (do_ttmc) {
      raw = nullptr;
      check(spt_matrix_create(gpu_, o_.dtype, t.dims[mode], cols, SPT_ROW_MAJOR, &raw), gpu_, "spt_matrix_create");
      yt.reset(raw);
    }

    // COO MTTKRP.
    {
      const CallTiming tm = time_calls(o_.reps, [&] {
        check(spt_mttkrp(gpu_, t.x.get(), fp.data(), mode, out.get()), gpu_, "GPU COO MTTKRP");
      });
      const Errors e = compare(want_m, values_of(out.get()));
      Record r = base(t, "mttkrp", "coo", mode);
      emit(r, tm, mttkrp_flops, &e, -1);
    }
    // HB-CSF MTTKRP (order >= 3).
    if (N >= 3) {
      spt_hbcsf* h = nullptr;
      const double t0 = now_seconds();
      spt_hbcsf_options ho;
      check(spt_hbcsf_options_init(&ho), gpu_, "spt_hbcsf_options_init");
      ho.root_mode = mode;
      check(spt_hbcsf_from_coo(gpu_, t.x.get(), &ho, &h), gpu_, "spt_hbcsf_from_coo");
      const double build = now_seconds() - t0;
      const CallTiming tm = time_calls(o_.reps, [&] {
        check(spt_mttkrp_hbcsf(gpu_, h, fp.data(), mode, out.get()), gpu_, "GPU HB-CSF MTTKRP");
      });
      const Errors e = compare(want_m, values_of(out.get()));
      spt_hbcsf_free(h);
      Record r = base(t, "mttkrp", "hbcsf", mode);
      emit(r, tm, mttkrp_flops, &e, build);
    }
    // F-COO MTTKRP and TTMc.
    {
      spt_fcoo* fc = nullptr;
      const double t0 = now_seconds();
      spt_fcoo_options fo;
      check(spt_fcoo_options_init(&fo), gpu_, "spt_fcoo_options_init");
      fo.mode = mode;
      check(spt_fcoo_from_coo(gpu_, t.x.get(), &fo, &fc), gpu_, "spt_fcoo_from_coo");
      const double build = now_seconds() - t0;
      CallTiming tm = time_calls(o_.reps, [&] {
        check(spt_mttkrp_fcoo(gpu_, fc, fp.data(), mode, out.get()), gpu_, "GPU F-COO MTTKRP");
      });
      Errors e = compare(want_m, values_of(out.get()));
      Record r = base(t, "mttkrp", "fcoo", mode);
      emit(r, tm, mttkrp_flops, &e, build);
      if (do_ttmc) {
        tm = time_calls(o_.reps, [&] {
          check(spt_ttmc_fcoo(gpu_, fc, fp.data(), yt.get()), gpu_, "GPU F-COO TTMc");
        });
        e = compare(want_t, values_of(yt.get()));
        Record rt = base(t, "ttmc", "fcoo", mode);
        rt.integer("ttmc_columns", static_cast<long long>(cols));
        emit(rt, tm, ttmc_flops, &e, build);
      }
      spt_fcoo_free(fc);
    }
    // HLS, every precision (orders 3 and 4).
    if (N != 3 && N != 4) return;
    const struct {
      spt_hls_precision p;
      const char* name;
    } precisions[] = {{SPT_HLS_PRECISION_FP16, "fp16"},
                      {SPT_HLS_PRECISION_BF16, "bf16"},
                      {SPT_HLS_PRECISION_TF32, "tf32"},
                      {SPT_HLS_PRECISION_EXACT, "exact"}};
    for (const auto& prec : precisions) {
      spt_hls_options o;
      check(spt_hls_options_init(&o), gpu_, "spt_hls_options_init");
      o.root_mode = mode;
      o.precision = prec.p;
      spt_hls* h = nullptr;
      const double t0 = now_seconds();
      check(spt_hls_from_coo(gpu_, t.x.get(), &o, &h), gpu_, "spt_hls_from_coo");
      const double build = now_seconds() - t0;  // includes the first threshold measurement of the process
      spt_hls_summary s;
      std::memset(&s, 0, sizeof s);
      s.struct_size = sizeof s;
      check(spt_hls_info(gpu_, h, &s), gpu_, "spt_hls_info");
      auto hls_fields = [&](Record& r) {
        r.str("precision", prec.name).num("dense_fraction", s.dense_fraction);
        r.integer("dense_threshold", s.dense_threshold).integer("threshold_calibrated", s.threshold_calibrated);
        r.integer("dense_tiles", static_cast<long long>(s.dense_tiles)).num("hls_build_seconds", s.build_seconds);
        r.integer("format_bytes", static_cast<long long>(s.bytes));
      };
      CallTiming tm = time_calls(o_.reps, [&] {
        check(spt_mttkrp_hls(gpu_, h, fp.data(), mode, out.get()), gpu_, "GPU HLS MTTKRP");
      });
      Errors e = compare(want_m, values_of(out.get()));
      Record r = base(t, "mttkrp", "hls", mode);
      hls_fields(r);
      emit(r, tm, mttkrp_flops, &e, build);
      if (do_ttmc) {
        tm = time_calls(o_.reps, [&] {
          check(spt_ttmc_hls(gpu_, h, fp.data(), yt.get()), gpu_, "GPU HLS TTMc");
        });
        e = compare(want_t, values_of(yt.get()));
        Record rt = base(t, "ttmc", "hls", mode);
        hls_fields(rt);
        rt.integer("ttmc_columns", static_cast<long long>(cols));
        emit(rt, tm, ttmc_flops, &e, build);
      }
      spt_hls_free(h);
    }
  }

  const Options& o_;
  BenchEnv& env_;
  spt_context* gpu_;
  spt_context* cpu_;
  std::string device_;
};

int usage() {
  std::fprintf(stderr,
               "usage: bench_gpu_hls [--rank R] [--reps N] [--dtype float32|float64] [--synthetic-nnz N] "
               "[--no-synthetic] [--modes all|0,1,..] [--cpu] [FILE.tns ...]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  use_built_cuda_plugin();
  Options o;
  const bool ok = read_gpu_command_line(argc, argv, o.rank, o.reps, o.dtype, o.files, [&](const std::string& a, auto& value) {
    if (a == "--cpu") {
      o.cpu = true;
    } else if (a == "--no-synthetic") {
      o.synthetic = false;
    } else if (a == "--synthetic-nnz" || a == "--modes") {
      const char* v = value();
      if (!v) return false;
      if (a == "--synthetic-nnz") {
        o.synthetic_nnz = std::strtoull(v, nullptr, 10);
      } else if (std::string(v) != "all") {
        for (const char* p = v; *p;) {
          o.modes.push_back(uint32_t(std::strtoul(p, const_cast<char**>(&p), 10)));
          if (*p == ',') ++p;
          else if (*p) return false;
        }
      }
    } else {
      return false;
    }
    return true;
  });
  if (!ok || o.rank == 0) return usage();
  try {
    BenchEnv env;
    env.open(0);
    spt_backend_info info;
    const ContextPtr gpu_owned = backend_context(o.cpu ? SPT_BACKEND_CPU : SPT_BACKEND_CUDA, &info);
    spt_context* gpu = gpu_owned.get();
    if (o.cpu) {
      std::snprintf(info.device_name, sizeof info.device_name, "%s", env.device.c_str());
    } else if (!info.cuda_available) {
      std::fprintf(stderr, "bench_gpu_hls: no usable CUDA device: %s\n", info.reason);
      return 1;
    }
    check(spt_context_set_backend(env.ctx, SPT_BACKEND_CPU), env.ctx, "spt_context_set_backend(CPU)");
    Bench bench(o, env, gpu, env.ctx, info.device_name);
    std::vector<Tensor> tensors;
    if (o.synthetic) {
      Tensor t;
      const uint64_t n = o.synthetic_nnz;
      t.name = "synthetic-blocks-" + (n % 1000000 == 0 ? std::to_string(n / 1000000) + "M" : std::to_string(n));
      t.x.reset(synthetic_tensor(env.ctx, o.dtype, o.synthetic_nnz));
      tensors.push_back(std::move(t));
    }
    for (const std::string& path : o.files) {
      Tensor t;
      t.name = tensor_stem(path);
      t.x.reset(read_tensor(env.ctx, path, o.dtype));
      tensors.push_back(std::move(t));
    }
    for (Tensor& t : tensors) {
      spt_coo_summary info;
      info.struct_size = sizeof info;
      check(spt_coo_info(env.ctx, t.x.get(), &info), env.ctx, "spt_coo_info");
      t.order = info.order;
      t.nnz = info.nnz;
      t.dims.resize(t.order);
      check(spt_coo_dims(t.x.get(), t.dims.data()), env.ctx, "spt_coo_dims");
      bench.run(t);
    }
  } catch (const Failure& e) {
    std::fprintf(stderr, "bench_gpu_hls: %s\n", e.what());
    return 1;
  }
  return 0;
}
