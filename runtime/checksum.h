// XXH64, the 64-bit xxHash: the checksum of the sections of a module file. It runs at memory
// speed, so a module's code and weights are verified on every load, not just its header.
#pragma once
#include <cstddef>
#include <cstdint>

namespace tessera::runtime {

uint64_t xxhash64(const void* data, size_t size, uint64_t seed = 0);

}  // namespace tessera::runtime
