#include <sys/stat.h>

#include <chrono>
#include <cstdio>

#include "cli.hpp"
#include "progress.hpp"

namespace sptcli {

void check(spt_status status, const spt_context* ctx, const std::string& doing) {
  if (status >= 0) return;
  std::string message = spt_last_error(ctx);
  if (message.empty()) message = spt_status_string(status);
  throw RuntimeError(doing.empty() ? message : doing + ": " + message);
}

std::vector<OptionSpec> common_options() {
  return {
      {"threads", 't', "N", "threads for the kernels (default: all cores, or OMP_NUM_THREADS)"},
      {"dtype", 0, "TYPE", "value type: float64 (default) or float32"},
      {"index-base", 0, "B", "text files: first index is B, 1 (FROSTT, default) or 0"},
      {"backend", 0, "NAME",
       "compute backend: auto (default; env SPT_BACKEND: the GPU when the CUDA plugin finds one and the "
       "work fits, else the CPU), cpu, cuda (an error without a usable GPU) or reference"},
      {"progress", 0, "", "show a progress bar on stderr while loading (default: on a terminal for files >= 4 MiB)"},
      {"mmap", 0, "",
       "load an uncompressed .sptb file zero-copy from a mapping of the file (faster, less memory); the "
       "process is killed (SIGBUS) if the file is truncated meanwhile. Default: read by copy"},
      {"verbose", 'v', "", "print the library's notes on stderr"},
  };
}

namespace {

void print_log(void*, int level, const char* message) {
  std::fprintf(stderr, "sptensor: %s: %s\n", level <= 1 ? "note" : "detail", printable(message, true).c_str());
}

}  // namespace

ContextPtr make_context(const ParsedArgs& args) {
  spt_context* raw = nullptr;
  spt_status st = spt_context_create(&raw);
  if (st < 0) throw RuntimeError(std::string("cannot create a library context: ") + spt_thread_last_error());
  ContextPtr ctx(raw);
  if (args.has("threads")) {
    int threads = static_cast<int>(args.integer("threads", 0, 1, SPT_MAX_THREADS));
    check(spt_context_set_threads(ctx.get(), threads), ctx.get(), "setting --threads");
  }
  if (args.has("backend")) {
    std::string name = args.choice("backend", "auto", {"auto", "cpu", "reference", "cuda"});
    spt_backend backend = name == "cpu"         ? SPT_BACKEND_CPU
                          : name == "reference" ? SPT_BACKEND_REFERENCE
                          : name == "cuda"      ? SPT_BACKEND_CUDA
                                                : SPT_BACKEND_AUTO;
    check(spt_context_set_backend(ctx.get(), backend), ctx.get(), "setting --backend " + name);
  }
  if (args.has("verbose")) {
    check(spt_context_set_verbosity(ctx.get(), 1), ctx.get(), "setting --verbose");
    check(spt_context_set_log(ctx.get(), print_log, nullptr), ctx.get(), "setting --verbose");
  }
  return ctx;
}

spt_dtype dtype_option(const ParsedArgs& args) {
  return args.choice("dtype", "float64", {"float32", "float64"}) == "float32" ? SPT_FLOAT32 : SPT_FLOAT64;
}

const char* dtype_name(spt_dtype dtype) { return dtype == SPT_FLOAT32 ? "float32" : "float64"; }

unsigned long long file_size(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return 0;
  return static_cast<unsigned long long>(st.st_size);
}

double now_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

CooPtr read_tensor(spt_context* ctx, const ParsedArgs& args, const std::string& path, double* seconds) {
  spt_read_options opts;
  check(spt_read_options_init(&opts), ctx, "initialising read options");
  opts.dtype = dtype_option(args);
  opts.index_base = static_cast<int>(args.integer("index-base", 1, 0, 1));
  opts.map_binary = args.has("mmap") ? 1 : 0;

  ProgressBar bar(stderr_is_terminal());
  bool show = want_progress(args.has("progress"), file_size(path));
  if (show) check(spt_context_set_progress(ctx, ProgressBar::callback, &bar), ctx, "installing progress bar");

  spt_coo* raw = nullptr;
  double start = now_seconds();
  spt_status st = spt_read(ctx, path.c_str(), &opts, &raw);
  double elapsed = now_seconds() - start;
  bar.finish();
  if (show) spt_context_set_progress(ctx, nullptr, nullptr);
  check(st, ctx, "");  // the library's message names the file (and line)
  if (seconds) *seconds = elapsed;
  return CooPtr(raw);
}

TensorShape shape_of(const spt_coo* x) {
  TensorShape s;
  spt_coo_summary info;
  info.struct_size = sizeof info;
  check(spt_coo_info(nullptr, x, &info), nullptr, "querying the tensor");
  s.dtype = info.dtype;
  s.order = info.order;
  s.nnz = info.nnz;
  s.dims.resize(s.order);
  check(spt_coo_dims(x, s.dims.data()), nullptr, "querying the tensor dims");
  return s;
}

std::string dims_text(const std::vector<spt_index>& dims, const char* separator) {
  std::string out;
  for (size_t m = 0; m < dims.size(); ++m) {
    if (m) out += separator;
    out += std::to_string(dims[m]);
  }
  return out;
}

}  // namespace sptcli
