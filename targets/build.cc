#include "targets/build.h"

#include "runtime/error.h"
#include "targets/llvm/build_llvm.h"

namespace tessera::targets {

std::shared_ptr<runtime::Module> build(const std::vector<tensor_ir::LoweredFunc>& funcs, const Target& target) {
  if (target.kind == "llvm") return build_llvm(funcs, target);
  fail("code generation for target '", target.str(), "' is not implemented yet (only llvm is)");
}

}  // namespace tessera::targets
