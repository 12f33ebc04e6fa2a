// The C ABI boundary. Every extern "C" function body runs inside guarded(),
// which converts exceptions into status codes and error messages, so no C++
// exception ever reaches a caller.
#pragma once

#include <new>
#include <type_traits>

#include "core/context.hpp"
#include "core/error.hpp"

namespace spt {

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
    record_error(ctx, cat(where, ": ", e.what()));
    return e.code();
  } catch (const std::bad_alloc&) {
    record_error(ctx, cat(where, ": out of memory; free memory or use a smaller problem"));
    return SPT_ERR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    record_error(ctx, cat(where, ": internal error: ", e.what(), " (please report this)"));
    return SPT_ERR_INTERNAL;
  } catch (...) {
    record_error(ctx, cat(where, ": internal error: unknown exception (please report this)"));
    return SPT_ERR_INTERNAL;
  }
}

// Same, for functions that take no context.
template <typename Body>
spt_status guarded(const char* where, Body&& body) noexcept {
  return guarded(static_cast<spt_context*>(nullptr), where, std::forward<Body>(body));
}

}  // namespace spt
