#include "targets/link_shared.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "runtime/cpu_features.h"
#include "runtime/error.h"

extern char** environ;

namespace tessera::targets {

namespace {

// The first directory on PATH holding an executable `name`; empty if none does.
std::string find_program(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// Runs `argv` (no shell, so paths need no quoting); returns its exit status and what it printed.
int run(const std::vector<std::string>& argv, std::string* output) {
  std::string log_path = (std::filesystem::temp_directory_path() / "tessera-link-XXXXXX").string();
  int log = mkstemp(log_path.data());
  if (log < 0) fail("cannot create a temporary file for the linker's messages: ", std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, log, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, log, STDERR_FILENO);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  if (rc == 0)
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  close(log);
  std::ifstream in(log_path);
  std::ostringstream text;
  text << in.rdbuf();
  *output = text.str();
  unlink(log_path.c_str());
  if (rc != 0) fail("cannot start ", argv[0], ": ", std::strerror(rc));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

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
  int status = run(argv, &messages);
  if (status != 0) {
    std::string command;
    for (const auto& a : argv) command += (command.empty() ? "" : " ") + a;
    fail("linking the exported module failed (", command, ", exit status ", status, "):\n", messages);
  }
}

}  // namespace tessera::targets
