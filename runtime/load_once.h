// A value computed once per process that may fail, such as a driver library opened at run time: the
// failure is remembered, so every later use reports the same error without trying again.
#pragma once
#include <mutex>
#include <string>

#include "runtime/error.h"

namespace tessera::runtime {

template <typename T>
class LoadOnce {
 public:
  // Runs `load` (returning T, throwing Error) on the first call; returns its value or rethrows.
  template <typename Load>
  const T& get(Load load) {
    std::call_once(once_, [&] {
      try {
        value_ = load();
      } catch (const Error& e) {
        error_ = e.what();
      }
    });
    if (!error_.empty()) throw Error(error_);
    return value_;
  }

 private:
  std::once_flag once_;
  T value_{};
  std::string error_;
};

}  // namespace tessera::runtime
