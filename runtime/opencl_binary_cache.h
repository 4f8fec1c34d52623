// Built OpenCL programs kept on disk, so that the driver compiles a kernel's source once per
// device and driver version rather than at every process start. An entry (one file, named by a
// hash) holds what it was built from, compared in full so that a hash collision cannot hand back
// another program's code, and the device's binary. The cache is best effort: what cannot be read
// or written is built again.
#pragma once
#include <optional>
#include <string>

namespace tessera::runtime {

class OpenCLBinaryCache {
 public:
  // $TESSERA_OPENCL_CACHE, else $XDG_CACHE_HOME/tessera/opencl, else ~/.cache/tessera/opencl;
  // empty (no caching) when none can be named.
  static std::string directory();

  // The entry for `source` built for `device` (its name, OpenCL and driver versions, together).
  OpenCLBinaryCache(const std::string& source, const std::string& device);

  // The binary built from exactly this source for this device, if the cache holds one.
  std::optional<std::string> read() const;
  void write(const std::string& binary) const;
  // Drops the entry (a binary the driver refused).
  void remove() const;

 private:
  std::string source_;  // the device's description and the source
  std::string path_;    // empty: no cache
};

}  // namespace tessera::runtime
