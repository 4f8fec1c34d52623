// Replacing variables by expressions, in expressions and statements.
#pragma once
#include <unordered_map>
#include <vector>

#include "tensor_ir/ir.h"

namespace tessera::tensor_ir {

using VarMap = std::unordered_map<const VarNode*, Expr>;

Expr substitute(const Expr& e, const VarMap& map);
Stmt substitute(const Stmt& s, const VarMap& map);
Expr substitute(const Expr& e, const Var& var, const Expr& value);

// True if `e` (or `s`) reads `var`.
bool uses_var(const Expr& e, const VarNode* var);
bool uses_var(const Stmt& s, const VarNode* var);
// The variables `e` reads, each once, in the order they first appear.
std::vector<Var> vars_of(const Expr& e);

}  // namespace tessera::tensor_ir
