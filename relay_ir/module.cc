#include "relay_ir/module.h"

#include "runtime/error.h"

namespace tessera::relay_ir {

void Module::add(const std::string& name, Function f) {
  for (auto& [n, existing] : functions_)
    if (n == name) {
      existing = std::move(f);
      return;
    }
  functions_.emplace_back(name, std::move(f));
}

bool Module::has(const std::string& name) const {
  for (const auto& [n, f] : functions_)
    if (n == name) return true;
  return false;
}

const Function& Module::get(const std::string& name) const {
  for (const auto& [n, f] : functions_)
    if (n == name) return f;
  fail("module has no function '", name, "'");
}

}  // namespace tessera::relay_ir
