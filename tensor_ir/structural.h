// Structural equality and hashing, derived from each node's field list. Variables and buffers
// match up to renaming (alpha-equivalence): two programs that differ only in the names or
// identities of their variables are equal and hash alike.
#pragma once
#include <cstdint>

#include "tensor_ir/ir.h"

namespace tessera::tensor_ir {

bool structural_equal(const Expr& a, const Expr& b);
bool structural_equal(const Stmt& a, const Stmt& b);
bool structural_equal(const Tensor& a, const Tensor& b);
uint64_t structural_hash(const Expr& e);
uint64_t structural_hash(const Stmt& s);
uint64_t structural_hash(const Tensor& t);

}  // namespace tessera::tensor_ir
