// `sptensor`: command-line front end of libsptensor.
//
//   sptensor info FILE       order, dims, nnz, density and per-mode statistics
//   sptensor convert IN OUT  convert between .tns, extended .tns, SPLATT .bin, .sptb
//   sptensor cpd FILE -r R   CP decomposition by alternating least squares
//   sptensor tucker FILE -r R1,R2,...  Tucker decomposition by HOOI
//
// Exit status: 0 success, 1 runtime error (unreadable file, library error),
// 2 usage error. Every error is reported as one line on stderr.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "cli.hpp"

namespace {

using namespace sptcli;

struct Command {
  const CommandSpec& (*spec)();
  int (*run)(const ParsedArgs&);
};

const Command kCommands[] = {
    {info_spec, run_info},
    {convert_spec, run_convert},
    {cpd_spec, run_cpd},
    {tucker_spec, run_tucker},
};

void print_overview(std::FILE* out) {
  std::fprintf(out,
               "Usage: sptensor COMMAND [ARGS] [options]\n"
               "       sptensor --version | --help | help COMMAND\n\n"
               "Sparse tensor tools of libsptensor %s.\n\nCommands:\n",
               spt_version());
  for (const auto& c : kCommands) std::fprintf(out, "  %-9s %s\n", c.spec().name.c_str(), c.spec().summary.c_str());
  std::fprintf(out,
               "\nRun 'sptensor COMMAND --help' for the options of a command.\n"
               "Exit status: 0 success, 1 runtime error, 2 usage error.\n");
}

const Command* find_command(const std::string& name) {
  for (const auto& c : kCommands)
    if (c.spec().name == name) return &c;
  return nullptr;
}

// Error messages are printed as exactly one line.
// Other control bytes (from file names in the message) are escaped.
std::string one_line(const char* text) {
  std::string s = text;
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return printable(s);
}

std::string command_list() {
  std::string list;
  for (const auto& c : kCommands) list += (list.empty() ? "" : ", ") + c.spec().name;
  return list;
}

int dispatch(int argc, char** argv) {
  if (argc < 2) throw UsageError("missing command; expected one of " + command_list() + " (see 'sptensor --help')");
  std::string first = argv[1];
  if (first == "--help" || first == "-h") {
    print_overview(stdout);
    return kExitOk;
  }
  if (first == "--version" || first == "-V") {
    int major = 0, minor = 0, patch = 0;
    spt_version_numbers(&major, &minor, &patch);
    std::printf("sptensor %s (libsptensor %d.%d.%d; built against header %d.%d.%d)\n", spt_version(), major, minor,
                patch, SPT_VERSION_MAJOR, SPT_VERSION_MINOR, SPT_VERSION_PATCH);
    return kExitOk;
  }
  if (first == "help") {
    if (argc < 3) {
      print_overview(stdout);
      return kExitOk;
    }
    const Command* c = find_command(argv[2]);
    if (!c) throw UsageError(std::string("unknown command '") + argv[2] + "'; expected one of " + command_list());
    std::fputs(help_text(c->spec()).c_str(), stdout);
    return kExitOk;
  }
  if (!first.empty() && first[0] == '-')
    throw UsageError("unknown option '" + first + "' before the command (see 'sptensor --help')");
  const Command* c = find_command(first);
  if (!c) throw UsageError("unknown command '" + first + "'; expected one of " + command_list() + " (see 'sptensor --help')");
  ParsedArgs args = parse_args(c->spec(), argc, argv, 2);
  if (args.help) {
    std::fputs(help_text(c->spec()).c_str(), stdout);
    return kExitOk;
  }
  return c->run(args);
}

}  // namespace

int main(int argc, char** argv) {
#ifdef __GLIBC__
  // Arrays of 1 MiB and more (a tensor's copies, a sort's scratch, a CSF
  // build's sorted coordinates) get their own mapping and go back to the
  // system when freed, so a run's peak resident memory is its live data.
  // Left dynamic, glibc raises this threshold after the first large free and
  // keeps later transient arrays in its heap, resident after they are freed.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
  try {
    int code = dispatch(argc, argv);
    if (std::fflush(stdout) != 0) {
      std::fprintf(stderr, "sptensor: error: writing to standard output failed: %s\n", std::strerror(errno));
      return kExitRuntime;
    }
    return code;
  } catch (const UsageError& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "sptensor: usage error: %s\n", one_line(e.what()).c_str());
    return kExitUsage;
  } catch (const RuntimeError& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "sptensor: error: %s\n", one_line(e.what()).c_str());
    return kExitRuntime;
  } catch (const std::bad_alloc&) {
    std::fflush(stdout);
    std::fprintf(stderr, "sptensor: error: out of memory\n");
    return kExitRuntime;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "sptensor: error: %s\n", one_line(e.what()).c_str());
    return kExitRuntime;
  }
}
