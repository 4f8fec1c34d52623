// SHA-256 (FIPS 180-4), for workload keys that are the same on every machine and build.
#pragma once
#include <string>

namespace tessera::autotune {

// The digest of `data` as 64 lowercase hex characters.
std::string sha256_hex(const std::string& data);

}  // namespace tessera::autotune
