#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

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
      {"cpu-isa", 0, "NAME",
       "build of the CPU kernels: auto (default: x86-64-v3 where the CPU has AVX2, FMA and BMI2, else baseline), "
       "baseline (any x86-64 CPU) or x86-64-v3 (an error where the CPU or the library lacks it)"},
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
  if (args.has("cpu-isa")) {
    std::string name = args.choice("cpu-isa", "auto", {"auto", "baseline", "x86-64-v3"});
    spt_cpu_isa isa = name == "baseline"    ? SPT_CPU_ISA_BASELINE
                      : name == "x86-64-v3" ? SPT_CPU_ISA_X86_64_V3
                                            : SPT_CPU_ISA_AUTO;
    check(spt_context_set_cpu_isa(ctx.get(), isa), ctx.get(), "setting --cpu-isa " + name);
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

std::string timing_summary(double read_seconds, double total, const double* sweeps, int count) {
  double iterating = 0;
  for (int i = 0; i < count; ++i) iterating += sweeps[i];
  const double setup = total > iterating ? total - iterating : 0.0;
  char text[256];
  std::snprintf(text, sizeof text, "read %.3f s, set-up %.3f s, %d iterations %.3f s (%.4f s per iteration)",
                read_seconds, setup, count, iterating, count > 0 ? iterating / count : 0.0);
  return text;
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

namespace {

// The directory part of a path ("." for a bare name, "/" for "/name").
std::string directory_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

void check_output_directory(const std::string& path, const std::string& option) {
  const std::string directory = directory_of(path);
  struct stat st;
  if (stat(directory.c_str(), &st) != 0)
    throw UsageError(option + ": cannot write '" + printable(path) + "': directory '" + printable(directory) +
                     "': " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode))
    throw UsageError(option + ": cannot write '" + printable(path) + "': '" + printable(directory) +
                     "' is not a directory");
  if (access(directory.c_str(), W_OK | X_OK) != 0)
    throw UsageError(option + ": cannot write '" + printable(path) + "': directory '" + printable(directory) +
                     "': " + std::strerror(errno));
}

}  // namespace

void check_output_file(const std::string& path, const std::string& option, bool replaced_by_rename) {
  if (path.empty()) throw UsageError(option + ": the output file name is empty");
  if (path.back() == '/')
    throw UsageError(option + ": '" + printable(path) + "' names a directory; give a file name (e.g. " +
                     printable(path) + "out.tns)");
  check_output_directory(path, option);
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return;  // created by the command
  if (S_ISDIR(st.st_mode))
    throw UsageError(option + ": cannot write '" + printable(path) + "': it is a directory");
  if (!replaced_by_rename && access(path.c_str(), W_OK) != 0)
    throw UsageError(option + ": cannot write '" + printable(path) + "': " + std::strerror(errno));
}

void check_output_prefix(const std::string& prefix, const std::string& option) {
  const size_t slash = prefix.find_last_of('/');
  const std::string stem = slash == std::string::npos ? prefix : prefix.substr(slash + 1);
  if (stem.empty() || stem == "." || stem == "..")
    throw UsageError(option + " PREFIX: '" + printable(prefix) +
                     "' has no file stem; PREFIX starts the names of the files written, e.g. " +
                     printable(prefix.empty() || prefix.back() == '/' ? prefix : prefix + "/") + "model");
  check_output_directory(prefix, option);
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
