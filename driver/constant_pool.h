// Constants shared by the builds of one model: its builds at several sizes (a DynamicLibrary), a
// program's stage at several signatures. The weights after the graph passes do not depend on the
// size, so each build would otherwise hold a copy of them; interned, an equal constant (same
// dtype, shape and bytes) is kept once.
#pragma once
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "runtime/ndarray.h"

namespace tessera::driver {

class ConstantPool {
 public:
  // Replaces each of `constants` by an equal one interned before, and interns the others.
  void intern(std::vector<runtime::NDArray>& constants);
  size_t size() const;  // the distinct constants interned

 private:
  mutable std::mutex mutex_;
  std::unordered_multimap<uint64_t, runtime::NDArray> by_hash_;
};

}  // namespace tessera::driver
