// Text that is safe to print: messages and file names may hold any byte
// but NUL, so control bytes are written as C escapes (\n, \r, \t, \x1b, ...)
// and a message never moves the cursor or sends terminal commands when
// printed. Other bytes (UTF-8 names) are kept. Header-only, standard
// library only: the library and both command-line tools (which link only
// the public libraries) include it.
#pragma once

#include <string>

namespace spt::util {

// s with control bytes escaped; keep_newlines keeps '\n' as is (multi-line
// notes printed one per line).
inline std::string printable(const std::string& s, bool keep_newlines = false) {
  auto plain = [&](unsigned char c) { return (c >= 0x20 && c != 0x7f) || (keep_newlines && c == '\n'); };
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

}  // namespace spt::util
