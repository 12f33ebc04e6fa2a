#include "args.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace sptcli {

namespace {

std::string option_label(const OptionSpec& o) {
  std::string label = o.short_name ? std::string("-") + o.short_name + ", " : std::string("    ");
  label += "--" + o.long_name;
  if (!o.value_name.empty()) label += " " + o.value_name;
  return label;
}

const OptionSpec* find_long(const CommandSpec& spec, const std::string& name) {
  for (const auto& o : spec.options)
    if (o.long_name == name) return &o;
  return nullptr;
}

const OptionSpec* find_short(const CommandSpec& spec, char c) {
  for (const auto& o : spec.options)
    if (o.short_name == c) return &o;
  return nullptr;
}

std::string see_help(const CommandSpec& spec) { return " (see 'sptensor " + spec.name + " --help')"; }

}  // namespace

ParsedArgs parse_args(const CommandSpec& spec, int argc, char** argv, int first) {
  ParsedArgs out;
  bool only_positionals = false;
  std::vector<std::string> errors;  // report the first one unless --help is present

  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (only_positionals || arg == "-" || arg.empty() || arg[0] != '-') {
      out.positionals.push_back(arg);
      continue;
    }
    if (arg == "--") {
      only_positionals = true;
      continue;
    }
    if (arg == "-h" || arg == "--help") {
      out.help = true;
      continue;
    }
    const OptionSpec* opt = nullptr;
    std::string inline_value;
    bool has_inline_value = false;
    if (arg.rfind("--", 0) == 0) {
      std::string name = arg.substr(2);
      size_t eq = name.find('=');
      if (eq != std::string::npos) {
        inline_value = name.substr(eq + 1);
        has_inline_value = true;
        name = name.substr(0, eq);
      }
      opt = find_long(spec, name);
    } else {
      opt = find_short(spec, arg[1]);
      if (opt && arg.size() > 2) {  // -r16
        inline_value = arg.substr(2);
        has_inline_value = true;
      }
    }
    if (!opt) {
      errors.push_back("unknown option '" + arg + "'" + see_help(spec));
      continue;
    }
    if (opt->value_name.empty()) {
      if (has_inline_value) errors.push_back("option --" + opt->long_name + " takes no value");
      out.values[opt->long_name] = "";
      continue;
    }
    if (has_inline_value) {
      out.values[opt->long_name] = inline_value;
    } else if (i + 1 < argc) {
      out.values[opt->long_name] = argv[++i];
    } else {
      errors.push_back("option --" + opt->long_name + " needs a value " + opt->value_name + see_help(spec));
    }
  }
  if (out.help) return out;
  if (!errors.empty()) throw UsageError(errors.front());
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
    os << "option --" << name << ": expected a number >= " << min << ", got '" << s << "'";
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
