// Shared pieces of the `sptensor` command-line tool. The tool uses only the
// public C API (sptensor/sptensor.h) and links the shared library, so it is
// also a worked example of a client program.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "args.hpp"
#include "sptensor/sptensor.h"
#include "util/printable.hpp"

namespace sptcli {

// Exit statuses of the tool.
enum ExitCode { kExitOk = 0, kExitRuntime = 1, kExitUsage = 2 };

// Owning handles for library objects.
struct CooDeleter {
  void operator()(spt_coo* x) const { spt_coo_free(x); }
};
struct KtensorDeleter {
  void operator()(spt_ktensor* k) const { spt_ktensor_free(k); }
};
struct MatrixDeleter {
  void operator()(spt_matrix* m) const { spt_matrix_free(m); }
};
struct ContextDeleter {
  void operator()(spt_context* c) const { spt_context_free(c); }
};
using CooPtr = std::unique_ptr<spt_coo, CooDeleter>;
using KtensorPtr = std::unique_ptr<spt_ktensor, KtensorDeleter>;
using MatrixPtr = std::unique_ptr<spt_matrix, MatrixDeleter>;
using ContextPtr = std::unique_ptr<spt_context, ContextDeleter>;

// Throws RuntimeError "<doing>: <library message>" (just the message when
// `doing` is empty) when status is an error (negative). Warnings pass.
void check(spt_status status, const spt_context* ctx, const std::string& doing);

// Options shared by the commands that load a tensor.
std::vector<OptionSpec> common_options();

// A context configured from the common options (--threads, --backend,
// --verbose). Throws UsageError/RuntimeError.
ContextPtr make_context(const ParsedArgs& args);

// --dtype (float32|float64, default float64).
spt_dtype dtype_option(const ParsedArgs& args);
const char* dtype_name(spt_dtype dtype);

// Read a tensor file with the common read options (--dtype, --index-base),
// showing a progress bar when wanted (see want_progress). `seconds` receives
// the read time if non-NULL.
CooPtr read_tensor(spt_context* ctx, const ParsedArgs& args, const std::string& path, double* seconds);

// Output paths are checked before any reading or iterating, so that a run is
// never lost to a file that cannot be written at its end. Each throws
// UsageError (exit 2, like every other bad argument) naming the option:
//  - check_output_prefix: PREFIX of an option such as -o that names a family
//    of files (PREFIX.lambda.txt, ...): it must have a file stem (not "dir/",
//    "." or ".."), and its directory must exist and be writable;
//  - check_output_file: one file to be written (created or replaced): its
//    directory must exist and be writable, and the file, if it exists, must not
//    be a directory and must be writable (unless the command writes a new
//    file and renames it over the old one, as spt_write does).
void check_output_prefix(const std::string& prefix, const std::string& option);
void check_output_file(const std::string& path, const std::string& option, bool replaced_by_rename = false);

// Order, dims and nnz of a tensor.
struct TensorShape {
  uint32_t order = 0;
  spt_nnz nnz = 0;
  spt_dtype dtype = SPT_FLOAT64;
  std::vector<spt_index> dims;
};
TensorShape shape_of(const spt_coo* x);
// File names and messages printed to a terminal go through printable.
using spt::util::printable;

std::string dims_text(const std::vector<spt_index>& dims, const char* separator);

// The end of a decomposition's summary line: "read R s, set-up S s, N
// iterations T s (P s per iteration)". `total` is the decomposition call's
// wall time, `sweeps` the library's per-iteration times (count of them);
// set-up is what the call spent outside the iterations (initialisation,
// format conversion).
std::string timing_summary(double read_seconds, double total, const double* sweeps, int count);

// Seconds since an arbitrary epoch (monotonic).
double now_seconds();

// Size of a file in bytes, 0 if it cannot be stat'ed.
unsigned long long file_size(const std::string& path);

// The commands. Each returns an exit code; errors are thrown.
const CommandSpec& info_spec();
const CommandSpec& convert_spec();
const CommandSpec& cpd_spec();
const CommandSpec& tucker_spec();
int run_info(const ParsedArgs& args);
int run_convert(const ParsedArgs& args);
int run_cpd(const ParsedArgs& args);
int run_tucker(const ParsedArgs& args);

}  // namespace sptcli
