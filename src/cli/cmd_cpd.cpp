// sptensor cpd FILE -r R: CP decomposition by alternating least squares.
//
// Factor files (written by -o PREFIX, read by --init PREFIX): PREFIX.mode-K.txt
// for K = 1..N (1-based, like FROSTT's .map files), one row per index of mode
// K, R space-separated values per row; PREFIX.lambda.txt holds the R weights,
// one per line. Values are written with %.17g (float64) or %.9g (float32),
// enough digits to read back exactly.
#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <vector>

#include "cli.hpp"
#include "cmd_cpd_gcp.hpp"

namespace sptcli {

const CommandSpec& cpd_spec() {
  static const CommandSpec spec = [] {
    CommandSpec s;
    s.name = "cpd";
    s.summary = "CP decomposition (CP-ALS) of a sparse tensor; prints fit, delta and seconds per iteration.";
    s.positionals = {"FILE"};
    s.description =
        "Runs CP-ALS with Tensor Toolbox / pyttb numerics and prints one line per iteration on stdout.\n"
        "With -o PREFIX the model is written as PREFIX.lambda.txt (R weights, one per line) and\n"
        "PREFIX.mode-K.txt for K = 1..N (dims[K] rows of R space-separated values; modes numbered\n"
        "from 1). --init PREFIX reads starting factors in the same format (R is then taken from the\n"
        "files when -r is not given). Reaching --iters before --tol is not an error.\n"
        "--reorder relabels the tensor's indices before the decomposition (for locality) and maps the\n"
        "factors back, so -o writes them in the file's labels; --init factors are read in the file's\n"
        "labels too. Random initial factors are drawn in the relabelled index space, so a run with\n"
        "--reorder starts elsewhere than one without.";
    s.options = {
        {"rank", 'r', "R", "number of components (required unless --init is given)"},
        {"iters", 'n', "N", "maximum number of ALS sweeps (default 50)"},
        {"tol", 0, "T", "stop when the fit changes by less than T (default 1e-4; 0 = run all sweeps)"},
        {"seed", 's', "S", "seed of the random initial factors (default 0)"},
        {"init", 0, "PREFIX", "start from PREFIX.mode-K.txt instead of random factors"},
        {"output", 'o', "PREFIX", "write PREFIX.lambda.txt and PREFIX.mode-K.txt"},
        {"quiet", 'q', "", "print only the final summary, not every iteration"},
        {"format", 0, "FMT",
         "storage the MTTKRPs run on: auto (default: chosen from the tensor's statistics, as "
         "spt_suggest_format; -v shows why), coo, csf, hicoo, fcoo (F-COO, one copy per mode; with "
         "--backend cuda the whole CP-ALS runs on the GPU, as with coo), hbcsf or hls (named, but a handle "
         "of either serves one mode, so CP-ALS refuses them with the library's UNSUPPORTED error)"},
        {"csf-policy", 0, "P",
         "with CSF: onemode (one tree), twomode (two trees), allmode (one per mode), memoized (one tree, "
         "intermediates kept across a sweep; ADATM) or auto (default: allmode when it fits 4x the COO's memory, "
         "keeping only the trees the MTTKRPs run on)"},
        {"reorder", 0, "METHOD",
         "relabel indices first: lexi (LEXI-ORDER, 3 sweeps), bfs (BFS-MCS), random (from --seed) or none "
         "(default)"},
        {"model", 0, "M",
         "als (least squares CP-ALS, default) or poisson (CP-APR multiplicative updates for count data, "
         "pyttb cp_apr numerics: --iters = outer iterations, --tol = KKT violation tolerance; prints the "
         "log-likelihood per iteration; --format coo, hicoo or auto picks the storage of its Phi kernel, "
         "csf is refused; --csf-policy ignored) or gcp (Generalized CP by GCP-OPT, pyttb gcp_opt numerics: "
         "L-BFGS-B over every entry of the full tensor, zeros included, so at most 1e8 entries; --loss picks "
         "the loss; --iters = L-BFGS-B iterations (default 1000), --tol = projected-gradient tolerance "
         "(default 1e-5); prints the objective per iteration; float64 only; --format and --csf-policy "
         "ignored; --optimizer sgd for GCP-SGD, which samples the zeros and takes any size)"},
        {"optimizer", 0, "NAME",
         "with --model gcp: lbfgsb (GCP-OPT, default) or sgd (GCP-SGD, pyttb gcp_opt with Adam: stratified "
         "samples of nonzeros and zeros; --iters = epochs (default 1000), prints the objective estimate per "
         "epoch)"},
        {"rate", 0, "R", "with --optimizer sgd: Adam learning rate (default 1e-3)"},
        {"epoch-iters", 0, "N", "with --optimizer sgd: Adam steps per epoch (default 1000)"},
        {"max-fails", 0, "N", "with --optimizer sgd: stop after more than N epochs that raised the estimate (default 1)"},
        {"gradient-samples", 0, "N",
         "with --optimizer sgd: nonzeros and zeros sampled per step, N of each (default pyttb's: "
         "max(1000, 3 nnz / 1000))"},
        {"function-samples", 0, "N",
         "with --optimizer sgd: nonzeros and zeros in the objective-estimate sample, N of each (default "
         "pyttb's: max(nnz / 100, 100000))"},
        {"loss", 0, "NAME",
         "with --model gcp: gaussian (default), poisson (identity link, factors >= 0), poisson-log, "
         "bernoulli (logit link; = bernoulli-logit), bernoulli-odds (factors >= 0), gamma, rayleigh, huber"},
        {"huber-threshold", 0, "T", "with --loss huber: the threshold (default 0.25)"},
        {"lower-bound", 0, "B", "with --model gcp: lower bound on every factor entry (default: the loss's own)"},
        {"missing", 0, "FILE",
         "with --model gcp: a tensor file (same reader options) whose coordinates are missing entries, left "
         "out of the fit (CP-WOPT); its values are ignored"},
        {"devices", 0, "LIST",
         "CUDA devices a CP-ALS on COO may split the tensor among, lead first, e.g. 0,1 (default: every "
         "device, for tensors of at least 2^20 nonzeros per device; one device: that GPU alone)"},
        {"nccl-library", 0, "FILE",
         "the NCCL library file a CP-ALS on several GPUs loads (default: libnccl.so.2 on the loader's path, "
         "else the nvidia-nccl-cu13 Python package of the active environment)"},
        {"stream", 0, "",
         "on the GPU, stream the COO tensor's nonzeros from host memory even when it fits the device (as "
         "for a tensor larger than the device; to measure the streamed path)"},
    };
    for (auto& o : common_options()) s.options.push_back(o);
    return s;
  }();
  return spec;
}

namespace {

// A .tns file has no dims: the reader takes each mode's largest index. A
// --missing file that lists none of the last slices of some mode therefore
// reads smaller than the tensor; it gets the tensor's dims (same order, no
// index beyond them), else it is left as read and the library names the
// mismatch.
CooPtr widen_to_dims(spt_context* ctx, CooPtr missing, const spt_coo* x) {
  spt_coo_summary mi{}, xi{};
  mi.struct_size = xi.struct_size = sizeof(spt_coo_summary);
  check(spt_coo_info(ctx, missing.get(), &mi), ctx, "querying --missing");
  check(spt_coo_info(ctx, x, &xi), ctx, "querying the tensor");
  if (mi.order != xi.order) return missing;
  std::vector<spt_index> mdims(mi.order), xdims(xi.order);
  check(spt_coo_dims(missing.get(), mdims.data()), ctx, "querying --missing");
  check(spt_coo_dims(x, xdims.data()), ctx, "querying the tensor");
  if (mdims == xdims) return missing;
  for (uint32_t m = 0; m < mi.order; ++m)
    if (mdims[m] > xdims[m]) return missing;
  std::vector<spt_index> indices(static_cast<size_t>(mi.nnz) * mi.order);
  for (uint32_t m = 0; m < mi.order; ++m) {
    const spt_index* ind = nullptr;
    check(spt_coo_indices(missing.get(), m, &ind), ctx, "reading --missing");
    std::copy(ind, ind + mi.nnz, indices.begin() + static_cast<std::ptrdiff_t>(m * mi.nnz));
  }
  const void* values = nullptr;
  check(spt_coo_values(missing.get(), &values), ctx, "reading --missing");
  spt_coo* wide = nullptr;
  check(spt_coo_create(ctx, mi.dtype, mi.order, xdims.data(), &wide), ctx, "widening --missing");
  CooPtr out(wide);
  check(spt_coo_append(ctx, wide, mi.nnz, indices.data(), mi.nnz, 0, values, 0), ctx, "widening --missing");
  return out;
}

// --devices "1,0" -> {1, 0}: CUDA device ordinals, lead first (the library
// checks that they exist and differ).
std::vector<int> parse_devices(const std::string& text) {
  std::vector<int> ids;
  bool ok = !text.empty() && text.back() != ',';
  std::istringstream items(text);
  std::string item;
  while (ok && std::getline(items, item, ',')) {
    char* end = nullptr;
    errno = 0;
    const long long id = std::strtoll(item.c_str(), &end, 10);
    ok = !item.empty() && item[0] >= '0' && item[0] <= '9' && *end == '\0' && errno == 0 && id <= INT_MAX;
    ids.push_back(static_cast<int>(id));
  }
  if (!ok)
    throw UsageError("--devices expects device ordinals >= 0 separated by commas (e.g. --devices 0,1), got '" +
                     text + "'");
  return ids;
}

// --devices, --nccl-library and --stream on the context.
void set_device_options(spt_context* ctx, const ParsedArgs& args) {
  if (args.has("devices")) {
    const std::vector<int> ids = parse_devices(args.text("devices", ""));
    check(spt_context_set_devices(ctx, ids.data(), static_cast<int>(ids.size())), ctx,
          "setting --devices " + args.text("devices", ""));
  }
  if (args.has("nccl-library"))
    check(spt_context_set_nccl_library(ctx, args.text("nccl-library", "").c_str()), ctx, "setting --nccl-library");
  if (args.has("stream"))
    check(spt_context_set_device_streaming(ctx, SPT_DEVICE_STREAMING_ALWAYS), ctx, "setting --stream");
}

std::string factor_path(const std::string& prefix, uint32_t mode) {
  return prefix + ".mode-" + std::to_string(mode + 1) + ".txt";
}

// One factor matrix read from text: rows x cols values, row-major.
struct TextMatrix {
  size_t rows = 0, cols = 0;
  std::vector<double> values;
};

TextMatrix read_text_matrix(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw RuntimeError("cannot open initial factor file '" + path + "': " + std::strerror(errno));
  TextMatrix m;
  std::string line;
  size_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;  // blank line or comment
    const char* p = line.c_str();
    size_t count = 0;
    while (true) {
      while (*p == ' ' || *p == '\t' || *p == '\r') ++p;
      if (!*p) break;
      char* end = nullptr;
      errno = 0;
      double v = std::strtod(p, &end);
      if (end == p || errno == ERANGE || !std::isfinite(v))
        throw RuntimeError(path + ":" + std::to_string(line_no) + ": expected a finite number, found '" +
                           std::string(p).substr(0, 20) + "'");
      m.values.push_back(v);
      ++count;
      p = end;
    }
    if (m.rows == 0) m.cols = count;
    else if (count != m.cols)
      throw RuntimeError(path + ":" + std::to_string(line_no) + ": expected " + std::to_string(m.cols) +
                         " values like the first row, found " + std::to_string(count));
    ++m.rows;
  }
  if (m.rows == 0) throw RuntimeError("initial factor file '" + path + "' holds no rows");
  return m;
}

template <typename T>
void write_rows(std::FILE* f, const T* data, spt_nnz rows, spt_nnz cols) {
  const char* fmt = sizeof(T) == 4 ? "%.9g" : "%.17g";
  for (spt_nnz i = 0; i < rows; ++i) {
    for (spt_nnz j = 0; j < cols; ++j) {
      if (j) std::fputc(' ', f);
      std::fprintf(f, fmt, static_cast<double>(data[i * cols + j]));
    }
    std::fputc('\n', f);
  }
}

// Writes rows x cols values of `dtype` (row-major) to `path` as text.
void write_text_matrix(const std::string& path, spt_dtype dtype, const void* data, spt_nnz rows, spt_nnz cols) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) throw RuntimeError("cannot write '" + path + "': " + std::strerror(errno));
  if (dtype == SPT_FLOAT32) write_rows(f, static_cast<const float*>(data), rows, cols);
  else write_rows(f, static_cast<const double*>(data), rows, cols);
  bool failed = std::ferror(f) != 0;
  failed |= std::fclose(f) != 0;
  if (failed) throw RuntimeError("cannot write '" + path + "': " + std::strerror(errno));
}

void write_model(spt_context* ctx, spt_ktensor* k, const std::string& prefix) {
  spt_ktensor_summary info;
  info.struct_size = sizeof info;
  check(spt_ktensor_info(ctx, k, &info), ctx, "querying the model");
  const spt_dtype dtype = info.dtype;
  const uint32_t order = info.order;
  const spt_index rank = info.rank;
  void* lambda = nullptr;
  check(spt_ktensor_lambda(k, &lambda), ctx, "querying lambda");
  write_text_matrix(prefix + ".lambda.txt", dtype, lambda, rank, 1);
  size_t value_bytes = dtype == SPT_FLOAT32 ? 4 : 8;
  for (uint32_t m = 0; m < order; ++m) {
    spt_matrix* factor = nullptr;
    check(spt_ktensor_factor(k, m, &factor), ctx, "querying factor " + std::to_string(m + 1));
    spt_matrix_summary shape;
    shape.struct_size = sizeof shape;
    check(spt_matrix_info(ctx, factor, &shape), ctx, "querying factor shape");
    const spt_nnz rows = shape.rows, cols = shape.cols;
    std::vector<unsigned char> buffer(static_cast<size_t>(rows * cols) * value_bytes);
    check(spt_matrix_copy_out(factor, SPT_ROW_MAJOR, buffer.data(), cols), ctx, "copying factor");
    write_text_matrix(factor_path(prefix, m), dtype, buffer.data(), rows, cols);
  }
}

// Loads PREFIX.mode-K.txt for every mode, checking shapes against the tensor;
// returns the matrices (of the tensor's dtype) and sets `rank`.
std::vector<MatrixPtr> load_initial_factors(spt_context* ctx, const std::string& prefix, const TensorShape& s,
                                            spt_index* rank) {
  std::vector<MatrixPtr> factors;
  for (uint32_t m = 0; m < s.order; ++m) {
    std::string path = factor_path(prefix, m);
    TextMatrix t = read_text_matrix(path);
    if (t.rows != s.dims[m])
      throw RuntimeError("'" + path + "' has " + std::to_string(t.rows) + " rows but mode " + std::to_string(m + 1) +
                         " of the tensor has size " + std::to_string(s.dims[m]));
    if (*rank == 0) *rank = static_cast<spt_index>(t.cols);
    if (t.cols != *rank)
      throw RuntimeError("'" + path + "' has " + std::to_string(t.cols) + " columns but the rank is " +
                         std::to_string(*rank));
    spt_matrix* raw = nullptr;
    if (s.dtype == SPT_FLOAT32) {
      std::vector<float> f(t.values.begin(), t.values.end());
      check(spt_matrix_create_copy(ctx, SPT_FLOAT32, t.rows, t.cols, SPT_ROW_MAJOR, f.data(), t.cols, &raw), ctx,
            "storing '" + path + "'");
    } else {
      check(spt_matrix_create_copy(ctx, SPT_FLOAT64, t.rows, t.cols, SPT_ROW_MAJOR, t.values.data(), t.cols, &raw),
            ctx, "storing '" + path + "'");
    }
    factors.emplace_back(raw);
  }
  return factors;
}

struct PermutationDeleter {
  void operator()(spt_permutation* p) const { spt_permutation_free(p); }
};
using PermutationPtr = std::unique_ptr<spt_permutation, PermutationDeleter>;

// --reorder: computes the relabelling, applies it to x in place and prints
// what it did. Returns null for "none".
PermutationPtr reorder_tensor(spt_context* ctx, const std::string& method, uint64_t seed, spt_coo* x) {
  if (method == "none") return nullptr;
  spt_reorder_options ro;
  check(spt_reorder_options_init(&ro), ctx, "initialising reorder options");
  ro.method = method == "lexi" ? SPT_REORDER_LEXI : method == "bfs" ? SPT_REORDER_BFS_MCS : SPT_REORDER_RANDOM;
  ro.seed = seed;
  spt_permutation* raw = nullptr;
  double start = now_seconds();
  check(spt_reorder_compute(ctx, x, &ro, &raw), ctx, "reordering the tensor (" + method + ")");
  PermutationPtr perm(raw);
  check(spt_coo_relabel(ctx, x, perm.get()), ctx, "relabelling the tensor");
  std::printf("reordered (%s) in %.3f s\n", method.c_str(), now_seconds() - start);
  return perm;
}

struct IterationPrinter {
  bool quiet = false;
};

int print_iteration(void* user_data, int iteration, double fit, double delta, double seconds) {
  if (!static_cast<IterationPrinter*>(user_data)->quiet) {
    std::printf("iter %4d  fit %.10f  delta %+.3e  time %.4f s\n", iteration, fit, delta, seconds);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

// cmd_cpd_poisson.cpp: CP-APR with the options built here (--model poisson).
spt_status run_cp_apr(spt_context* ctx, const spt_coo* x, const spt_cpd_options& als, bool quiet,
                      spt_ktensor** out);

int run_cpd(const ParsedArgs& args) {
  const std::string path = args.positionals[0];
  if (!args.has("rank") && !args.has("init"))
    throw UsageError("missing -r R (the number of components) (see 'sptensor cpd --help')");
  spt_index rank = static_cast<spt_index>(args.integer("rank", 0, 1, UINT32_MAX));
  int iters = static_cast<int>(args.integer("iters", 50, 1, 1000000));
  double tol = args.real("tol", 1e-4, 0.0);
  uint64_t seed = args.unsigned_integer("seed", 0);
  bool quiet = args.has("quiet");
  const std::string model_name = args.choice("model", "als", {"als", "poisson", "gcp"});
  const bool poisson = model_name == "poisson";
  const bool gcp = model_name == "gcp";
  GcpCliSettings gcp_settings;
  if (gcp) {
    gcp_settings.loss = gcp_loss_from_name(args.choice(
        "loss", "gaussian",
        {"gaussian", "poisson", "poisson-log", "bernoulli", "bernoulli-logit", "bernoulli-odds", "gamma", "rayleigh",
         "huber"}));
    gcp_settings.huber_threshold = args.real("huber-threshold", 0.25, 0.0);
    gcp_settings.lower_bound = args.has("lower-bound") ? args.real("lower-bound", 0.0, -std::numeric_limits<double>::max())
                                                       : std::numeric_limits<double>::quiet_NaN();
    gcp_settings.max_iters = static_cast<int>(args.integer("iters", 1000, 1, 1000000));
    gcp_settings.pgtol = args.real("tol", 1e-5, 0.0);
    gcp_settings.sgd = args.choice("optimizer", "lbfgsb", {"lbfgsb", "sgd"}) == "sgd";
    if (gcp_settings.sgd) {
      gcp_settings.rate = args.real("rate", 1e-3, 0.0);
      gcp_settings.epoch_iters = static_cast<int>(args.integer("epoch-iters", 1000, 1, 100000000));
      gcp_settings.max_fails = static_cast<int>(args.integer("max-fails", 1, 0, 1000000));
      gcp_settings.gradient_samples = args.unsigned_integer("gradient-samples", 0);
      gcp_settings.function_samples = args.unsigned_integer("function-samples", 0);
      if (args.has("tol")) throw UsageError("--tol is L-BFGS-B's; GCP-SGD stops by --max-fails and --iters");
    } else {
      for (const char* name : {"rate", "epoch-iters", "max-fails", "gradient-samples", "function-samples"})
        if (args.has(name)) throw UsageError(std::string("--") + name + " needs --optimizer sgd");
    }
  } else {
    for (const char* name : {"loss", "huber-threshold", "lower-bound", "missing", "optimizer", "rate", "epoch-iters",
                             "max-fails", "gradient-samples", "function-samples"})
      if (args.has(name)) throw UsageError(std::string("--") + name + " needs --model gcp");
  }
  const std::string format =
      args.choice("format", "auto", {"auto", "coo", "csf", "hicoo", "fcoo", "hbcsf", "hls"});
  const std::string csf_policy =
      args.choice("csf-policy", "auto", {"auto", "onemode", "twomode", "allmode", "memoized"});
  std::string reorder = args.choice("reorder", "none", {"lexi", "bfs", "random", "none"});
  if (poisson && format != "auto" && format != "coo" && format != "hicoo")
    throw UsageError("--model poisson runs on --format coo, hicoo or auto (CP-APR has no " +
                     std::string(format == "csf" ? "CSF" : format == "fcoo" ? "F-COO" : format == "hbcsf" ? "HB-CSF" : "HLS") +
                     " kernel)");

  // The output files are checked before reading, the mode files (their
  // count is the tensor's order) before the first iteration.
  const std::string output_prefix = args.text("output", "");
  if (args.has("output")) {
    check_output_prefix(output_prefix, "-o");
    check_output_file(output_prefix + ".lambda.txt", "-o");
  }

  ContextPtr ctx = make_context(args);
  set_device_options(ctx.get(), args);
  double read_seconds = 0;
  CooPtr x = read_tensor(ctx.get(), args, path, &read_seconds);
  TensorShape s = shape_of(x.get());
  CooPtr missing;
  if (gcp && args.has("missing")) {
    double missing_seconds = 0;
    missing = read_tensor(ctx.get(), args, args.text("missing", ""), &missing_seconds);
    read_seconds += missing_seconds;
    missing = widen_to_dims(ctx.get(), std::move(missing), x.get());
  }
  if (args.has("output"))
    for (uint32_t m = 0; m < s.order; ++m) check_output_file(factor_path(output_prefix, m), "-o");

  spt_cpd_options opts;
  check(spt_cpd_options_init(&opts), ctx.get(), "initialising CP-ALS options");
  std::vector<MatrixPtr> init_factors;
  std::vector<const spt_matrix*> init_pointers;
  if (args.has("init")) {
    init_factors = load_initial_factors(ctx.get(), args.text("init", ""), s, &rank);
    // Read in the file's labels; moved into the relabelled space below.
    for (auto& f : init_factors) init_pointers.push_back(f.get());
    opts.init = SPT_CPD_INIT_USER;
    opts.init_factors = init_pointers.data();
  }
  IterationPrinter printer{quiet};
  opts.rank = rank;
  opts.max_iters = iters;
  opts.tol = tol;
  opts.seed = seed;
  opts.callback = print_iteration;
  opts.callback_data = &printer;
  opts.format = format == "coo"     ? SPT_TENSOR_FORMAT_COO
                : format == "csf"   ? SPT_TENSOR_FORMAT_CSF
                : format == "hicoo" ? SPT_TENSOR_FORMAT_HICOO
                : format == "fcoo"  ? SPT_TENSOR_FORMAT_FCOO
                : format == "hbcsf" ? SPT_TENSOR_FORMAT_HBCSF
                : format == "hls"   ? SPT_TENSOR_FORMAT_HLS
                                    : SPT_TENSOR_FORMAT_AUTO;
  opts.csf_policy = csf_policy == "onemode"   ? SPT_CSF_ONEMODE
                    : csf_policy == "twomode" ? SPT_CSF_TWOMODE
                    : csf_policy == "allmode"  ? SPT_CSF_ALLMODE
                    : csf_policy == "memoized" ? SPT_CSF_MEMOIZED
                                               : SPT_CSF_AUTO;

  int threads = 0;
  check(spt_context_get_threads(ctx.get(), &threads), ctx.get(), "querying threads");
  std::printf("tensor %s: order %u, dims %s, nnz %llu, %s; read in %.3f s\n", printable(path).c_str(), s.order,
              dims_text(s.dims, "x").c_str(), static_cast<unsigned long long>(s.nnz), dtype_name(s.dtype),
              read_seconds);
  PermutationPtr perm = reorder_tensor(ctx.get(), reorder, seed, x.get());
  if (perm && missing) check(spt_coo_relabel(ctx.get(), missing.get(), perm.get()), ctx.get(), "relabelling --missing");
  gcp_settings.missing = missing.get();
  if (perm) {
    for (uint32_t m = 0; m < init_factors.size(); ++m)
      check(spt_matrix_permute_rows(ctx.get(), init_factors[m].get(), perm.get(), m), ctx.get(),
            "relabelling initial factor " + std::to_string(m + 1));
  }
  std::string init = args.has("init") ? "user init" : "random init (seed " + std::to_string(seed) + ")";
  // Where it runs: with backend cuda (or auto finding a GPU) CP-ALS runs on
  // the device on COO and F-COO, with GPU MTTKRPs on HiCOO (CSF: an
  // UNSUPPORTED error under cuda, the CPU under auto; the library says so).
  spt_backend_info backend{};
  backend.struct_size = sizeof backend;
  check(spt_context_backend_info(ctx.get(), &backend), ctx.get(), "querying the backend");
  const std::string backend_text = backend.backend == SPT_BACKEND_CUDA ? std::string("cuda (") + backend.device_name + ")"
                                   : backend.backend == SPT_BACKEND_REFERENCE ? "reference"
                                   : backend.cpu_isa == SPT_CPU_ISA_X86_64_V3  ? "cpu (x86-64-v3)"
                                                                               : "cpu";
  if (gcp && gcp_settings.sgd)
    std::printf("GCP-SGD: loss %s, rank %u, max %d epochs of %d Adam steps, rate %g, %s, %d threads, backend %s",
                args.text("loss", "gaussian").c_str(), rank, gcp_settings.max_iters, gcp_settings.epoch_iters,
                gcp_settings.rate, init.c_str(), threads, backend_text.c_str());
  else if (gcp)
    std::printf("GCP-OPT: loss %s, rank %u, max %d iterations, pgtol %g, %s, %d threads%s", args.text("loss", "gaussian").c_str(),
                rank, gcp_settings.max_iters, gcp_settings.pgtol, init.c_str(), threads,
                missing ? ", missing entries from --missing" : "");
  else
    std::printf("%s: rank %u, max %d iterations, tol %g, %s, %d threads, backend %s, format %s",
                poisson ? "CP-APR" : "CP-ALS", rank, iters, tol, init.c_str(), threads, backend_text.c_str(),
                format.c_str());
  if (!poisson && !gcp && (format == "csf" || format == "auto")) std::printf(" (csf policy %s)", csf_policy.c_str());
  std::printf("\n");
  std::fflush(stdout);

  spt_ktensor* raw = nullptr;
  double start = now_seconds();
  spt_status st;
  if (poisson) {
    st = run_cp_apr(ctx.get(), x.get(), opts, quiet, &raw);
  } else if (gcp) {
    st = run_gcp(ctx.get(), x.get(), opts, gcp_settings, quiet, &raw);
  } else {
    // CP-ALS takes the tensor over (it is not needed afterwards), so the
    // library frees it once the CSF trees no longer need it.
    spt_coo* taken = x.release();
    st = spt_cpd_als_take(ctx.get(), &taken, &opts, &raw);
  }
  double total = now_seconds() - start;
  check(st, ctx.get(), poisson ? "CP-APR failed" : gcp ? (gcp_settings.sgd ? "GCP-SGD failed" : "GCP-OPT failed") : "CP-ALS failed");
  KtensorPtr model(raw);
  if (perm) check(spt_ktensor_unpermute(ctx.get(), model.get(), perm.get()), ctx.get(), "mapping factors back");

  double fit = 0;
  int done = 0, converged = 0;
  check(spt_ktensor_result(model.get(), &fit, &done, &converged), ctx.get(), "querying the result");
  int count = 0;
  const double* seconds = nullptr;
  check(spt_ktensor_history(model.get(), &count, nullptr, &seconds), ctx.get(), "querying the history");
  // CP-APR stores the final Poisson log-likelihood in the fit slot, GCP-OPT its objective.
  // GCP-SGD: the estimate from its objective sample, per epoch.
  const bool sgd = gcp && gcp_settings.sgd;
  std::printf(poisson ? "final log-likelihood %.10e after %d iterations (%s); %s\n"
              : sgd   ? "final objective estimate %.10e after %d epochs (%s); %s\n"
              : gcp   ? "final objective %.10e after %d iterations (%s); %s\n"
                      : "final fit %.10f after %d iterations (%s); %s\n",
              fit, done, converged ? (sgd ? "stopped by --max-fails" : "converged")
                                   : (sgd ? "epoch limit reached" : "iteration limit reached"),
              timing_summary(read_seconds, total, seconds, count).c_str());

  if (args.has("output")) {
    const std::string& prefix = output_prefix;
    write_model(ctx.get(), model.get(), prefix);
    std::printf("wrote %s.lambda.txt and %s.mode-{1..%u}.txt\n", printable(prefix).c_str(), printable(prefix).c_str(),
                s.order);
  }
  return kExitOk;
}

}  // namespace sptcli
