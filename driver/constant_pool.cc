#include "driver/constant_pool.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace tessera::driver {

namespace {

// FNV-1a over the dtype, the shape and the bytes.
uint64_t hash_of(const runtime::NDArray& a) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  };
  const std::string dtype = a.dtype().str();
  mix(dtype.data(), dtype.size());
  mix(a.shape().data(), a.shape().size() * sizeof(int64_t));
  mix(a.data(), a.nbytes());
  return h;
}

bool equal(const runtime::NDArray& a, const runtime::NDArray& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

}  // namespace

void ConstantPool::intern(std::vector<runtime::NDArray>& constants) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (runtime::NDArray& c : constants) {
    if (c.device().type != runtime::DeviceType::CPU) continue;
    const uint64_t h = hash_of(c);
    auto [begin, end] = by_hash_.equal_range(h);
    auto it = std::find_if(begin, end, [&](const auto& entry) { return equal(entry.second, c); });
    if (it != end) c = it->second;
    else by_hash_.emplace(h, c);
  }
}

size_t ConstantPool::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return by_hash_.size();
}

}  // namespace tessera::driver
