#include "runtime/opencl_binary_cache.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/checksum.h"

namespace tessera::runtime {

namespace {

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!in && !in.eof()) return std::nullopt;
  return bytes.str();
}

// Written to a temporary name and renamed, so that a reader never sees half a file.
void write_file(const std::string& path, const std::string& bytes) {
  const std::string tmp = path + ".tmp" + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    out << bytes;
    if (!out) {
      std::remove(tmp.c_str());
      return;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::remove(tmp.c_str());
}

}  // namespace

std::string OpenCLBinaryCache::directory() {
  if (const char* dir = std::getenv("TESSERA_OPENCL_CACHE"); dir && *dir) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/tessera/opencl";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/tessera/opencl";
  return "";
}

OpenCLBinaryCache::OpenCLBinaryCache(const std::string& source, const std::string& device)
    : source_(device + '\0' + source) {
  const std::string dir = directory();
  if (dir.empty()) return;
  char key[17];
  std::snprintf(key, sizeof key, "%016llx", static_cast<unsigned long long>(xxhash64(source_.data(), source_.size())));
  path_ = dir + "/" + key + ".clbin";
}

// One file, so that an entry is replaced whole: the length of what it was built from, that, and
// the binary.
std::optional<std::string> OpenCLBinaryCache::read() const {
  if (path_.empty()) return std::nullopt;
  const std::optional<std::string> entry = read_file(path_);
  const std::string header = std::to_string(source_.size()) + "\n";
  if (!entry || entry->compare(0, header.size(), header) != 0 ||
      entry->compare(header.size(), source_.size(), source_) != 0)
    return std::nullopt;
  return entry->substr(header.size() + source_.size());
}

void OpenCLBinaryCache::write(const std::string& binary) const {
  if (path_.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path_).parent_path(), ec);
  if (!ec) write_file(path_, std::to_string(source_.size()) + "\n" + source_ + binary);
}

void OpenCLBinaryCache::remove() const {
  if (!path_.empty()) std::remove(path_.c_str());
}

}  // namespace tessera::runtime
