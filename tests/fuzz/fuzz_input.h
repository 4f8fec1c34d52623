// What every libFuzzer harness shares: bad input must end in a tessera::Error, which the harness
// catches as the expected answer. Anything else (a crash, a sanitizer report, another exception
// type escaping to std::terminate, an abort) is a finding.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "runtime/error.h"

namespace tessera::fuzz {

inline std::string as_string(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// Runs `body`, accepting a tessera::Error.
template <typename Body>
void expect_only_errors(Body&& body) {
  try {
    body();
  } catch (const Error&) {
  }
}

// A finding that is no crash (two readings of one input disagree): abort, so libFuzzer keeps it.
[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "fuzz finding: %s\n", what.c_str());
  std::abort();
}

}  // namespace tessera::fuzz
