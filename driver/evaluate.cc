#include "driver/evaluate.h"

#include "driver/build.h"
#include "relay_ir/functor.h"
#include "runtime/error.h"

namespace tessera::driver {

std::vector<runtime::NDArray> evaluate(const relay_ir::Expr& e) {
  for (const auto& node : relay_ir::post_order(e))
    if (const auto* v = node.as<relay_ir::VarNode>()) fail("evaluate: the expression depends on the input %", v->name);
  // Level 0: the expression is evaluated as it is (folding it again would recurse).
  BuildOptions options;
  options.opt_level = 0;
  BuildResult r = build(relay_ir::Module(relay_ir::function({}, e)), targets::Target::parse("llvm"), options);
  std::vector<runtime::NDArray> out = r.executor->run({});
  return out;  // the executor's buffers stay alive through these references
}

}  // namespace tessera::driver
