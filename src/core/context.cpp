#include "core/context.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <strings.h>

#include "dispatch/plugin_loader.hpp"

namespace spt {

namespace {
thread_local spt_context_s default_context;
thread_local std::string thread_last_error;
}  // namespace

spt_context_s& resolve(spt_context* ctx) { return ctx ? *ctx : default_context; }
const spt_context_s& resolve(const spt_context* ctx) { return ctx ? *ctx : default_context; }

int thread_count(const spt_context_s& ctx) {
  if (ctx.threads > 0) return ctx.threads;
  // OpenMP's default follows OMP_NUM_THREADS, which may ask for more
  // threads than the runtime can start (libgomp then crashes or exits the
  // process): never more than the processors we may run on.
  const int n = std::min({omp_get_max_threads(), omp_get_num_procs(), SPT_MAX_THREADS});
  return n > 0 ? n : 1;
}

spt_backend effective_backend(const spt_context_s& ctx) {
  if (ctx.backend != SPT_BACKEND_AUTO) return ctx.backend;
  const dispatch::CudaPlugin& cuda = dispatch::cuda_plugin();
  return cuda.usable() && ctx.device < static_cast<int>(cuda.devices.size()) ? SPT_BACKEND_CUDA : SPT_BACKEND_CPU;
}

void log(const spt_context_s& ctx, int level, const std::string& message) {
  if (ctx.log && level <= ctx.verbosity) ctx.log(ctx.log_data, level, message.c_str());
}

void progress(const spt_context_s& ctx, const char* stage, double fraction) {
  if (ctx.progress) ctx.progress(ctx.progress_data, stage, fraction);
}

namespace {

// Messages name files, and a path may hold any byte but NUL:
// control bytes are written as C escapes (\n, \t, \x1b, ...) so that a
// message never moves the cursor or sends terminal commands when printed.
// Other bytes (UTF-8 names) are kept.
std::string printable(const std::string& s) {
  auto plain = [](unsigned char c) { return c >= 0x20 && c != 0x7f; };
  bool clean = true;
  for (unsigned char c : s) clean = clean && plain(c);
  if (clean) return s;
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size() + 16);
  for (unsigned char c : s) {
    if (plain(c)) {
      out += static_cast<char>(c);
      continue;
    }
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        out += "\\x";
        out += kHex[c >> 4];
        out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace

void record_error(spt_context* ctx, const std::string& message) {
  thread_last_error = printable(message);
  if (ctx) ctx->last_error = thread_last_error;
}

void record_out_of_memory(spt_context* ctx) noexcept {
  static constexpr char kMessage[] = "out of memory";
  static_assert(sizeof(kMessage) - 1 < 15, "must fit the inline buffer of every std::string");
  thread_last_error.assign(kMessage, sizeof(kMessage) - 1);
  if (ctx) ctx->last_error.assign(kMessage, sizeof(kMessage) - 1);
}

void clear_thread_error() { thread_last_error.clear(); }
const char* thread_error() { return thread_last_error.c_str(); }

bool parse_backend(const char* text, spt_backend* out) {
  struct Name {
    const char* name;
    spt_backend value;
  };
  static const Name names[] = {{"auto", SPT_BACKEND_AUTO},
                               {"cpu", SPT_BACKEND_CPU},
                               {"cuda", SPT_BACKEND_CUDA},
                               {"reference", SPT_BACKEND_REFERENCE}};
  for (const Name& n : names) {
    if (strcasecmp(text, n.name) == 0) {
      *out = n.value;
      return true;
    }
  }
  return false;
}

}  // namespace spt
