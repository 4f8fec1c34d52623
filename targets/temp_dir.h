// A scratch folder for a compiler's inputs and outputs (objects, libraries, PTX), removed with
// everything in it. Internal to targets.
#pragma once
#include <cstdlib>
#include <filesystem>
#include <string>

#include "runtime/error.h"

namespace tessera::targets {

struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& prefix = "tessera-build") {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (!mkdtemp(pattern.data())) fail("cannot create a temporary folder for ", pattern);
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

}  // namespace tessera::targets
