// A folder for one test process's files, made on first use and removed with everything in it
// when the process exits, so test runs leave nothing behind in the temporary folder.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <string>

namespace tessera::testing {

inline const std::filesystem::path& test_temp_dir() {
  struct Dir {
    std::filesystem::path path;
    pid_t owner = getpid();
    ~Dir() {
      std::error_code ignored;
      if (getpid() == owner) std::filesystem::remove_all(path, ignored);  // not from a forked child
    }
  };
  static const Dir dir{[] {
    auto p = std::filesystem::temp_directory_path() / ("tessera-test-" + std::to_string(getpid()));
    std::filesystem::create_directories(p);
    return p;
  }()};
  return dir.path;
}

}  // namespace tessera::testing
