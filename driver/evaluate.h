// Evaluating a closed graph expression with Tessera's own kernels: what constant folding (at
// import and in FoldConstant) uses. Kernels compiled here are cached by their key for the
// life of the process, so repeated folds of the same op and shapes compile once.
#pragma once
#include <vector>

#include "relay_ir/expr.h"
#include "runtime/ndarray.h"

namespace tessera::driver {

// The value(s) of `e`, which must have no free variables: one array per tensor of its type.
std::vector<runtime::NDArray> evaluate(const relay_ir::Expr& e);

}  // namespace tessera::driver
