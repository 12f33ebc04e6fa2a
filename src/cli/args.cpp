#include "args.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include <CLI/CLI.hpp>

namespace sptcli {

namespace {

std::string option_label(const OptionSpec& o) {
  std::string label = o.short_name ? std::string("-") + o.short_name + ", " : std::string("    ");
  label += "--" + o.long_name;
  if (!o.value_name.empty()) label += " " + o.value_name;
  return label;
}

std::string see_help(const CommandSpec& spec) { return " (see 'sptensor " + spec.name + " --help')"; }

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

// -h or --help among the options (before a "--"), whether or not the rest parses.
bool asks_for_help(int argc, char** argv, int first) {
  for (int i = first; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") return false;
    if (arg == "-h" || arg == "--help") return true;
  }
  return false;
}

// CLI11's message for a mistake it stops at, in this tool's words: an option
// without its value (always the last argument, as the next one is taken as
// the value whatever it is), or a flag given a value.
std::string usage_message(const CommandSpec& spec, const CLI::ParseError& e) {
  const std::string what = e.what();
  for (const auto& o : spec.options) {
    if (!o.value_name.empty() && starts_with(what, "--" + o.long_name + ":"))
      return "option --" + o.long_name + " needs a value " + o.value_name + see_help(spec);
    if (o.value_name.empty() && starts_with(what, o.long_name + " was given"))
      return "option --" + o.long_name + " takes no value";
  }
  return what + see_help(spec);
}

}  // namespace

// GNU-style parsing is CLI11's; this layer keeps the tool's contract: its own
// --help text (the man page is generated from it), values kept as text for
// the typed getters, the last of a repeated option wins, and usage errors
// worded as before (unknown options first, in the order given).
ParsedArgs parse_args(const CommandSpec& spec, int argc, char** argv, int first) {
  ParsedArgs out;
  CLI::App app;
  app.set_help_flag();
  app.allow_extras();  // unknown options come back in remaining(), reported below
  std::vector<std::string> values(spec.options.size());
  std::vector<CLI::Option*> options;
  for (size_t i = 0; i < spec.options.size(); ++i) {
    const OptionSpec& o = spec.options[i];
    const std::string names = (o.short_name ? std::string("-") + o.short_name + "," : std::string()) + "--" + o.long_name;
    if (o.value_name.empty()) options.push_back(app.add_flag(names)->disable_flag_override());
    else options.push_back(app.add_option(names, values[i])->multi_option_policy(CLI::MultiOptionPolicy::TakeLast));
  }
  app.add_flag("-h,--help", out.help);
  app.add_option("arguments", out.positionals);
  // CLI11 takes the arguments last first. An empty inline value ("--threads=")
  // goes in as an empty argument, so the typed getter words the error.
  int options_end = first;  // arguments from a "--" on are positional
  while (options_end < argc && std::string(argv[options_end]) != "--") ++options_end;
  std::vector<std::string> args;
  for (int i = argc - 1; i >= first; --i) {
    const std::string arg = argv[i];
    if (i < options_end && arg.size() > 3 && starts_with(arg, "--") && arg.find('=') == arg.size() - 1) {
      args.push_back("");
      args.push_back(arg.substr(0, arg.size() - 1));
    } else {
      args.push_back(arg);
    }
  }
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    if (asks_for_help(argc, argv, first)) {
      out.help = true;
      return out;
    }
    for (const std::string& arg : app.remaining())
      if (arg != "--") throw UsageError("unknown option '" + arg + "'" + see_help(spec));
    throw UsageError(usage_message(spec, e));
  }
  if (out.help) return out;
  for (const std::string& arg : app.remaining())
    if (arg != "--") throw UsageError("unknown option '" + arg + "'" + see_help(spec));
  for (size_t i = 0; i < spec.options.size(); ++i)
    if (options[i]->count() > 0) out.values[spec.options[i].long_name] = values[i];
  if (out.positionals.size() != spec.positionals.size()) {
    std::string expected;
    for (const auto& p : spec.positionals) expected += (expected.empty() ? "" : " ") + p;
    if (out.positionals.size() < spec.positionals.size())
      throw UsageError("missing argument " + spec.positionals[out.positionals.size()] + "; expected: " +
                       expected + see_help(spec));
    throw UsageError("unexpected argument '" + out.positionals[spec.positionals.size()] +
                     "'; expected: " + expected + see_help(spec));
  }
  return out;
}

std::string ParsedArgs::text(const std::string& name, const std::string& fallback) const {
  auto it = values.find(name);
  return it == values.end() ? fallback : it->second;
}

int64_t ParsedArgs::integer(const std::string& name, int64_t fallback, int64_t min, int64_t max) const {
  auto it = values.find(name);
  if (it == values.end()) return fallback;
  const std::string& s = it->second;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  bool ok = !s.empty() && end && *end == '\0' && errno == 0 && v >= min && v <= max;
  if (!ok) {
    std::ostringstream os;
    os << "option --" << name << ": expected an integer";
    if (max == INT64_MAX) os << " >= " << min;
    else os << " in " << min << ".." << max;
    os << ", got '" << s << "'";
    throw UsageError(os.str());
  }
  return v;
}

uint64_t ParsedArgs::unsigned_integer(const std::string& name, uint64_t fallback) const {
  auto it = values.find(name);
  if (it == values.end()) return fallback;
  const std::string& s = it->second;
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (s.empty() || s[0] == '-' || !end || *end != '\0' || errno != 0)
    throw UsageError("option --" + name + ": expected a non-negative integer, got '" + s + "'");
  return v;
}

double ParsedArgs::real(const std::string& name, double fallback, double min) const {
  auto it = values.find(name);
  if (it == values.end()) return fallback;
  const std::string& s = it->second;
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || !end || *end != '\0' || errno != 0 || !std::isfinite(v) || v < min) {
    std::ostringstream os;
    os << "option --" << name << ": expected a finite number >= " << min << ", got '" << s << "'";
    throw UsageError(os.str());
  }
  return v;
}

std::string ParsedArgs::choice(const std::string& name, const std::string& fallback,
                               const std::vector<std::string>& choices) const {
  std::string v = text(name, fallback);
  for (const auto& c : choices)
    if (c == v) return v;
  std::string list;
  for (const auto& c : choices) list += (list.empty() ? "" : "|") + c;
  throw UsageError("option --" + name + ": expected " + list + ", got '" + v + "'");
}

std::string help_text(const CommandSpec& spec) {
  std::ostringstream os;
  os << "Usage: sptensor " << spec.name;
  for (const auto& p : spec.positionals) os << " " << p;
  os << " [options]\n\n" << spec.summary << "\n";
  if (!spec.description.empty()) os << "\n" << spec.description << "\n";
  os << "\nOptions:\n";
  std::vector<OptionSpec> all = spec.options;
  all.push_back({"help", 'h', "", "show this help and exit"});
  size_t width = 0;
  for (const auto& o : all) width = std::max(width, option_label(o).size());
  for (const auto& o : all) {
    std::string label = option_label(o);
    os << "  " << label << std::string(width - label.size() + 2, ' ') << o.help << "\n";
  }
  return os.str();
}

}  // namespace sptcli
