// Internal error type. Inside the library, failures throw spt::Error; the C
// ABI layer (src/api/guard.hpp) turns every exception into a status code and
// a message, so nothing propagates to callers.
#pragma once

#include <exception>
#include <sstream>
#include <string>
#include <utility>

#include "sptensor/sptensor.h"

namespace spt {

class Error : public std::exception {
 public:
  Error(spt_status code, std::string message) : code_(code), message_(std::move(message)) {}
  spt_status code() const noexcept { return code_; }
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  spt_status code_;
  std::string message_;
};

// Concatenate any streamable values into a string.
template <typename... Args>
std::string cat(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}

template <typename... Args>
[[noreturn]] void fail(spt_status code, Args&&... args) {
  throw Error(code, cat(std::forward<Args>(args)...));
}

// Argument checks read as sentences at call sites:
//   require(order >= 1, "order must be >= 1, got ", order);
template <typename... Args>
void require(bool condition, Args&&... args) {
  if (!condition) fail(SPT_ERR_INVALID_ARGUMENT, std::forward<Args>(args)...);
}

template <typename T>
void require_not_null(const T* p, const char* what) {
  if (p == nullptr) fail(SPT_ERR_INVALID_ARGUMENT, what, " must not be NULL");
}

}  // namespace spt
