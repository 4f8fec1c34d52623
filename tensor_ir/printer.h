// The readable text form of the IR: expressions in infix with minimal parentheses, loop nests
// indented C-like. Distinct variables (or buffers) that share a name get suffixes (k, k_1) so
// the text is unambiguous, which also makes it a canonical form for comparisons and keys.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "tensor_ir/ir.h"

namespace tessera::tensor_ir {

std::string to_string(const Expr& e);
std::string to_string(const Stmt& s);
std::string to_string(const LoweredFunc& f);
// The compute definitions `outputs` depend on, inputs first, one line per operation.
std::string to_string(const std::vector<Tensor>& outputs);
// A shape of expressions as "(N, 3, L*4)", as runtime::shape_str writes static ones.
std::string shape_str(const std::vector<Expr>& shape);

std::ostream& operator<<(std::ostream& os, const Expr& e);
std::ostream& operator<<(std::ostream& os, const Stmt& s);

}  // namespace tessera::tensor_ir
