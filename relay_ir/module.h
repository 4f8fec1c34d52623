// A module: named functions, "main" the one a build compiles. The unit that passes transform
// and the ONNX importer produces.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "relay_ir/expr.h"

namespace tessera::relay_ir {

class Module {
 public:
  Module() = default;
  explicit Module(Function main) { add("main", std::move(main)); }

  void add(const std::string& name, Function f);  // replaces a function of that name
  bool has(const std::string& name) const;
  const Function& get(const std::string& name) const;  // throws naming it
  const Function& main() const { return get("main"); }
  const std::vector<std::pair<std::string, Function>>& functions() const { return functions_; }

 private:
  std::vector<std::pair<std::string, Function>> functions_;
};

}  // namespace tessera::relay_ir
