// sptensor tucker FILE -r R1,R2,...: Tucker decomposition by HOOI.
//
// Output files (-o PREFIX):
//  - PREFIX.core.tns: the dense core R_1 x ... x R_N as a FROSTT .tns file
//    with EVERY entry listed (zeros too), one per line "r1 ... rN value",
//    1-based, first index fastest; since all entries are present the dims
//    are exact and `sptensor info` / spt_read read it back.
//  - PREFIX.mode-K.txt for K = 1..N (1-based, like cpd): I_K rows of R_K
//    space-separated values (orthonormal columns).
// Values are written with %.17g (float64) or %.9g (float32).
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cli.hpp"
#include "sptensor/tucker.h"

namespace sptcli {

const CommandSpec& tucker_spec() {
  static const CommandSpec spec = [] {
    CommandSpec s;
    s.name = "tucker";
    s.summary = "Tucker decomposition (HOOI) of a sparse tensor; prints fit, delta and seconds per iteration.";
    s.positionals = {"FILE"};
    s.description =
        "Runs Tucker-HOOI with Tensor Toolbox / pyttb tucker_als numerics and prints one line per iteration.\n"
        "-r takes one rank per mode (R1,R2,...) or a single rank for every mode; each rank must not exceed\n"
        "its mode's size. With -o PREFIX the model is written as PREFIX.core.tns (the dense core, every\n"
        "entry listed as 'r1 ... rN value', 1-based, first index fastest) and PREFIX.mode-K.txt for\n"
        "K = 1..N (dims[K] rows of R_K space-separated values; modes numbered from 1). Reaching --iters\n"
        "before --tol is not an error.";
    s.options = {
        {"rank", 'r', "R1,R2,..", "core size per mode (or one R for all modes; required)"},
        {"iters", 'n', "N", "maximum number of HOOI sweeps (default 50)"},
        {"tol", 0, "T", "stop when the fit changes by less than T (default 1e-4; 0 = run all sweeps)"},
        {"init", 0, "METHOD", "hosvd (leading singular vectors of each unfolding, default) or random"},
        {"seed", 's', "S", "seed of the random initial factors (default 0)"},
        {"ttmc", 0, "METHOD", "how each sweep forms Y_(n): auto (default), one_shot, chain or hls (GPU only)"},
        {"output", 'o', "PREFIX", "write PREFIX.core.tns and PREFIX.mode-K.txt"},
        {"quiet", 'q', "", "print only the final summary, not every iteration"},
    };
    for (auto& o : common_options()) s.options.push_back(o);
    return s;
  }();
  return spec;
}

namespace {

struct TuckerDeleter {
  void operator()(spt_ttensor* t) const { spt_ttensor_free(t); }
};
using TtensorPtr = std::unique_ptr<spt_ttensor, TuckerDeleter>;

// "4,3,5" -> {4, 3, 5}; a single value is repeated for every mode.
std::vector<spt_index> parse_ranks(const std::string& text, uint32_t order) {
  std::vector<spt_index> ranks;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    char* end = nullptr;
    errno = 0;
    unsigned long long v = item.empty() ? 0 : std::strtoull(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || errno == ERANGE || v < 1 || v > UINT32_MAX || item[0] == '-')
      throw UsageError("-r expects positive integers separated by commas (e.g. -r 8,8,4), got '" + text + "'");
    ranks.push_back(static_cast<spt_index>(v));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  if (ranks.size() == 1) ranks.assign(order, ranks[0]);
  if (ranks.size() != order)
    throw UsageError("-r gives " + std::to_string(ranks.size()) + " ranks but the tensor has " +
                     std::to_string(order) + " modes; give one rank per mode or a single rank");
  return ranks;
}

void close_or_throw(std::FILE* f, const std::string& path) {
  bool failed = std::ferror(f) != 0;
  failed |= std::fclose(f) != 0;
  if (failed) throw RuntimeError("cannot write '" + path + "': " + std::strerror(errno));
}

template <typename T>
void write_core(const std::string& path, const T* core, const std::vector<spt_index>& dims) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) throw RuntimeError("cannot write '" + path + "': " + std::strerror(errno));
  const char* fmt = sizeof(T) == 4 ? "%.9g\n" : "%.17g\n";
  uint64_t total = 1;
  for (spt_index d : dims) total *= d;
  std::vector<spt_index> idx(dims.size(), 0);
  for (uint64_t lin = 0; lin < total; ++lin) {
    for (spt_index i : idx) std::fprintf(f, "%u ", i + 1);
    std::fprintf(f, fmt, static_cast<double>(core[lin]));
    for (size_t m = 0; m < dims.size(); ++m) {  // first index fastest
      if (++idx[m] < dims[m]) break;
      idx[m] = 0;
    }
  }
  close_or_throw(f, path);
}

template <typename T>
void write_factor(const std::string& path, const spt_matrix* factor, spt_context* ctx) {
  spt_matrix_summary shape;
  shape.struct_size = sizeof shape;
  check(spt_matrix_info(ctx, factor, &shape), ctx, "querying factor shape");
  const spt_nnz rows = shape.rows, cols = shape.cols;
  std::vector<T> data(static_cast<size_t>(rows * cols));
  check(spt_matrix_copy_out(factor, SPT_ROW_MAJOR, data.data(), cols), ctx, "copying a factor");
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) throw RuntimeError("cannot write '" + path + "': " + std::strerror(errno));
  const char* fmt = sizeof(T) == 4 ? "%.9g" : "%.17g";
  for (spt_nnz i = 0; i < rows; ++i) {
    for (spt_nnz j = 0; j < cols; ++j) {
      if (j) std::fputc(' ', f);
      std::fprintf(f, fmt, static_cast<double>(data[i * cols + j]));
    }
    std::fputc('\n', f);
  }
  close_or_throw(f, path);
}

template <typename T>
void write_model(spt_context* ctx, const spt_ttensor* t, const std::string& prefix, uint32_t order) {
  std::vector<spt_index> core_dims(order);
  check(spt_ttensor_core_dims(t, core_dims.data(), nullptr), ctx, "querying the core");
  const void* core = nullptr;
  check(spt_ttensor_core(t, &core), ctx, "querying the core");
  write_core(prefix + ".core.tns", static_cast<const T*>(core), core_dims);
  for (uint32_t m = 0; m < order; ++m) {
    const spt_matrix* factor = nullptr;
    check(spt_ttensor_factor(t, m, &factor), ctx, "querying factor " + std::to_string(m + 1));
    write_factor<T>(prefix + ".mode-" + std::to_string(m + 1) + ".txt", factor, ctx);
  }
}

int print_iteration(void* user_data, int iteration, double fit, double delta, double seconds) {
  if (!*static_cast<bool*>(user_data)) {
    std::printf("iter %4d  fit %.10f  delta %+.3e  time %.4f s\n", iteration, fit, delta, seconds);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int run_tucker(const ParsedArgs& args) {
  const std::string path = args.positionals[0];
  if (!args.has("rank")) throw UsageError("missing -r R1,R2,... (the core size per mode) (see 'sptensor tucker --help')");
  const std::string rank_text = args.text("rank", "");
  int iters = static_cast<int>(args.integer("iters", 50, 1, 1000000));
  double tol = args.real("tol", 1e-4, 0.0);
  uint64_t seed = args.unsigned_integer("seed", 0);
  bool quiet = args.has("quiet");
  std::string init = args.choice("init", "hosvd", {"hosvd", "random"});
  const std::string ttmc = args.choice("ttmc", "auto", {"auto", "one_shot", "chain", "hls"});

  // The output files are checked before reading, the mode files (their
  // count is the tensor's order) before the first iteration.
  const std::string output_prefix = args.text("output", "");
  if (args.has("output")) {
    check_output_prefix(output_prefix, "-o");
    check_output_file(output_prefix + ".core.tns", "-o");
  }

  ContextPtr ctx = make_context(args);
  double read_seconds = 0;
  CooPtr x = read_tensor(ctx.get(), args, path, &read_seconds);
  TensorShape s = shape_of(x.get());
  if (args.has("output"))
    for (uint32_t m = 0; m < s.order; ++m)
      check_output_file(output_prefix + ".mode-" + std::to_string(m + 1) + ".txt", "-o");
  std::vector<spt_index> ranks = parse_ranks(rank_text, s.order);
  for (uint32_t m = 0; m < s.order; ++m)
    if (ranks[m] > s.dims[m])
      throw UsageError("rank " + std::to_string(ranks[m]) + " for mode " + std::to_string(m + 1) +
                       " exceeds that mode's size " + std::to_string(s.dims[m]));

  spt_tucker_options opts;
  check(spt_tucker_options_init(&opts), ctx.get(), "initialising Tucker options");
  opts.ranks = ranks.data();
  opts.ranks_count = s.order;
  opts.max_iters = iters;
  opts.tol = tol;
  opts.seed = seed;
  opts.init = init == "random" ? SPT_TUCKER_INIT_RANDOM : SPT_TUCKER_INIT_HOSVD;
  opts.ttmc = ttmc == "one_shot" ? SPT_TUCKER_TTMC_ONE_SHOT
              : ttmc == "chain"  ? SPT_TUCKER_TTMC_CHAIN
              : ttmc == "hls"    ? SPT_TUCKER_TTMC_HLS
                                 : SPT_TUCKER_TTMC_AUTO;
  opts.callback = print_iteration;
  opts.callback_data = &quiet;

  int threads = 0;
  check(spt_context_get_threads(ctx.get(), &threads), ctx.get(), "querying threads");
  std::printf("tensor %s: order %u, dims %s, nnz %llu, %s; read in %.3f s\n", printable(path).c_str(), s.order,
              dims_text(s.dims, "x").c_str(), static_cast<unsigned long long>(s.nnz), dtype_name(s.dtype),
              read_seconds);
  std::string init_text = init == "random" ? "random init (seed " + std::to_string(seed) + ")" : "HOSVD init";
  std::printf("Tucker-HOOI: ranks %s, max %d iterations, tol %g, %s, %d threads\n", dims_text(ranks, ",").c_str(),
              iters, tol, init_text.c_str(), threads);
  std::fflush(stdout);

  spt_ttensor* raw = nullptr;
  double start = now_seconds();
  spt_status st = spt_tucker_hooi(ctx.get(), x.get(), &opts, &raw);
  double total = now_seconds() - start;
  check(st, ctx.get(), "Tucker-HOOI failed");
  TtensorPtr model(raw);

  spt_ttensor_summary result;
  result.struct_size = sizeof result;
  check(spt_ttensor_info(ctx.get(), model.get(), &result), ctx.get(), "querying the result");
  const double fit = result.fit;
  const int done = result.iterations;
  int count = 0;
  const double* seconds = nullptr;
  check(spt_ttensor_history(model.get(), &count, nullptr, &seconds), ctx.get(), "querying the history");
  std::printf("final fit %.10f after %d iterations (%s); %s\n", fit, done,
              st == SPT_OK ? "converged" : "iteration limit reached",
              timing_summary(read_seconds, total, seconds, count).c_str());

  if (args.has("output")) {
    const std::string& prefix = output_prefix;
    if (s.dtype == SPT_FLOAT32) write_model<float>(ctx.get(), model.get(), prefix, s.order);
    else write_model<double>(ctx.get(), model.get(), prefix, s.order);
    std::printf("wrote %s.core.tns and %s.mode-{1..%u}.txt\n", printable(prefix).c_str(), printable(prefix).c_str(),
                s.order);
  }
  return kExitOk;
}

}  // namespace sptcli
