// What tests of error messages share: the message a piece of code throws.
#pragma once
#include <string>

#include "runtime/error.h"

namespace tessera::testing {

// Runs `f` and returns the message of the tessera::Error it throws ("" when it throws none).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace tessera::testing
