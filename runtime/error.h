// The one exception type Tessera throws for user-facing failures. Messages name the thing
// (op, stage, loop, buffer, file) and what was expected, so callers can show them as they are.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace tessera {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

namespace detail {
inline void append(std::ostringstream&) {}
template <typename T, typename... Rest>
void append(std::ostringstream& os, const T& first, const Rest&... rest) {
  os << first;
  append(os, rest...);
}
}  // namespace detail

// Builds a message from its parts and throws Error: fail("stage ", name, " has no axis ", axis).
template <typename... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  std::ostringstream os;
  detail::append(os, parts...);
  throw Error(os.str());
}

// Internal invariant check: a failure here is a Tessera bug, not bad input.
#define TESSERA_CHECK(cond, ...)                                                                               \
  do {                                                                                                         \
    if (!(cond))                                                                                               \
      ::tessera::fail("internal error: ", #cond, " failed at ", __FILE__, ":", __LINE__, ": ", ##__VA_ARGS__); \
  } while (0)

}  // namespace tessera
