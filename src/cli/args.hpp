// Command-line parsing for the `sptensor` tool: GNU-style options
// (-r 4, --rank 4, --rank=4, flags; tokenised by CLI11), positional
// arguments, help text, and typed getters that turn bad values into
// one-line usage errors.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace sptcli {

// A mistake in how the tool was called (exit status 2).
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A failure while doing the work: library error, bad file (exit status 1).
class RuntimeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct OptionSpec {
  std::string long_name;   // without the leading "--"
  char short_name = 0;     // 0 when the option has no short form
  std::string value_name;  // empty for a flag that takes no value
  std::string help;
};

struct CommandSpec {
  std::string name;                      // e.g. "cpd"
  std::string summary;                   // one line for the command list
  std::vector<std::string> positionals;  // names of required positional arguments
  std::string description;               // paragraph(s) printed by --help
  std::vector<OptionSpec> options;       // --help is added automatically
};

class ParsedArgs {
 public:
  bool help = false;
  std::vector<std::string> positionals;
  std::map<std::string, std::string> values;  // long name -> value ("" for flags)

  bool has(const std::string& name) const { return values.count(name) != 0; }
  std::string text(const std::string& name, const std::string& fallback) const;

  // Typed getters. Out-of-range or malformed values throw UsageError naming
  // the option, the accepted range and the value given.
  int64_t integer(const std::string& name, int64_t fallback, int64_t min, int64_t max) const;
  uint64_t unsigned_integer(const std::string& name, uint64_t fallback) const;
  double real(const std::string& name, double fallback, double min) const;
  // One of `choices`, else UsageError.
  std::string choice(const std::string& name, const std::string& fallback,
                     const std::vector<std::string>& choices) const;
};

// Parse argv[first..argc) against `spec`. Unknown options, missing values and
// a wrong number of positionals throw UsageError (unless --help was given).
ParsedArgs parse_args(const CommandSpec& spec, int argc, char** argv, int first);

// The --help text of a command.
std::string help_text(const CommandSpec& spec);

}  // namespace sptcli
