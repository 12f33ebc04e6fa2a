// The C ABI boundary. Every extern "C" function body runs inside guarded(),
// which converts exceptions into status codes and error messages, so no C++
// exception ever reaches a caller.
#pragma once

#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "core/context.hpp"
#include "core/error.hpp"

namespace spt {

// Records the message `compose()` builds. Building and storing it allocate;
// when memory is exhausted that throws (compose with std::string operations:
// cat()'s string streams would silently truncate the text instead), and the
// fixed message of record_out_of_memory is stored, so the guard never throws.
template <typename Compose>
void record_error_safely(spt_context* ctx, Compose&& compose) noexcept {
  try {
    record_error(ctx, compose());
  } catch (...) {
    record_out_of_memory(ctx);
  }
}

// Runs `body`, which returns void (meaning SPT_OK) or an spt_status (for
// warnings). `where` names the API function in messages.
template <typename Body>
spt_status guarded(spt_context* ctx, const char* where, Body&& body) noexcept {
  try {
    if constexpr (std::is_void_v<decltype(body())>) {
      body();
      return SPT_OK;
    } else {
      return body();
    }
  } catch (const Error& e) {
    record_error_safely(ctx, [&] { return std::string(where) + ": " + e.what(); });
    return e.code();
  } catch (const std::bad_array_new_length&) {
    // A size computed from the arguments beyond what new[] can express.
    record_error_safely(ctx, [&] {
      return std::string(where) + ": a size derived from the arguments is too large to allocate (overflow)";
    });
    return SPT_ERR_OVERFLOW;
  } catch (const std::length_error& e) {
    // std::vector / std::string asked for more than max_size(): a size
    // derived from user input, not a bug (checked sizes name the array; this
    // is the safety net for any size not checked explicitly).
    record_error_safely(ctx, [&] {
      return std::string(where) + ": a size derived from the arguments is too large to allocate (" + e.what() + ")";
    });
    return SPT_ERR_OVERFLOW;
  } catch (const std::bad_alloc&) {
    record_error_safely(ctx,
                        [&] { return std::string(where) + ": out of memory; free memory or use a smaller problem"; });
    return SPT_ERR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    record_error_safely(ctx,
                        [&] { return std::string(where) + ": internal error: " + e.what() + " (please report this)"; });
    return SPT_ERR_INTERNAL;
  } catch (...) {
    record_error_safely(
        ctx, [&] { return std::string(where) + ": internal error: unknown exception (please report this)"; });
    return SPT_ERR_INTERNAL;
  }
}

// Same, for functions that take no context.
template <typename Body>
spt_status guarded(const char* where, Body&& body) noexcept {
  return guarded(static_cast<spt_context*>(nullptr), where, std::forward<Body>(body));
}

}  // namespace spt
