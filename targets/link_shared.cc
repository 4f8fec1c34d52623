#include "targets/link_shared.h"

#include <fstream>
#include <sstream>
#include <vector>

#include "runtime/cpu_features.h"
#include "runtime/error.h"
#include "targets/run_program.h"

namespace tessera::targets {

namespace {

std::string arch_of(const std::string& triple) { return triple.substr(0, triple.find('-')); }

}  // namespace

void link_shared_library(const std::string& object, const std::string& triple, const std::string& requested_triple,
                         const std::string& output) {
  const std::string arch = arch_of(triple);
  const bool native = arch == runtime::host_arch();
  std::vector<std::string> drivers;
  if (native) {
    drivers = {"cc", "gcc", "clang", "c++", "g++"};
  } else {
    if (!requested_triple.empty()) drivers.push_back(requested_triple + "-gcc");
    if (requested_triple != arch + "-linux-gnu") drivers.push_back(arch + "-linux-gnu-gcc");
  }
  // -Bsymbolic: a module's references to its own symbols stay inside it, whatever else is
  // loaded (two modules define kernels of the same names). -z now: everything resolves at load.
  std::vector<std::string> argv;
  for (const auto& d : drivers) {
    std::string path = find_program(d);
    if (path.empty()) continue;
    // --no-undefined: a symbol the C library does not have fails the export, not a later load.
    argv = {path,
            "-shared",
            "-o",
            output,
            object,
            "-lm",
            "-Wl,-Bsymbolic",
            "-Wl,-z,now",
            "-Wl,-z,noexecstack",
            "-Wl,--no-undefined"};
    break;
  }
  if (argv.empty() && !native) {
    // Without a cross C library the library names no libc/libm; their symbols resolve from the
    // program that loads it (which links them).
    for (const char* lld : {"ld.lld", "ld.lld-14"}) {
      std::string path = find_program(lld);
      if (path.empty()) continue;
      argv = {path, "-shared", "-o", output, object, "-Bsymbolic", "-z", "now", "-z", "noexecstack"};
      break;
    }
  }
  if (argv.empty()) {
    std::string names;
    for (const auto& d : drivers) names += (names.empty() ? "" : ", ") + d;
    if (!native) names += ", ld.lld";
    fail("cannot link the exported module for ", triple, ": no linker found on PATH (looked for ", names, ")",
         native ? "; install a C compiler (Debian: build-essential)"
                : "; install a cross compiler (Debian: gcc-" + arch + "-linux-gnu) or lld");
  }
  std::string messages;
  int status = run_program(argv, &messages);
  if (status != 0) {
    std::string command;
    for (const auto& a : argv) command += (command.empty() ? "" : " ") + a;
    fail("linking the exported module failed (", command, ", exit status ", status, "):\n", messages);
  }
}

std::string read_shared_library(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!in) fail("cannot read the built library ", path);
  return bytes.str();
}

}  // namespace tessera::targets
