// Structural equality and hashing, derived from each node's field list. Variables bound inside
// the compared IR (loop variables, lets, reduction axes, allocations) match up to renaming.
// Free variables and buffers must be the same nodes, unless `map_free_vars` is set: then two
// programs that differ only in the names or identities of their variables are equal.
// Equal IR always hashes alike.
#pragma once
#include <cstdint>

#include "tensor_ir/ir.h"
#include "tensor_ir/stmt.h"

namespace tessera::tensor_ir {

bool structural_equal(const Expr& a, const Expr& b, bool map_free_vars = false);
bool structural_equal(const Stmt& a, const Stmt& b, bool map_free_vars = false);
bool structural_equal(const Tensor& a, const Tensor& b, bool map_free_vars = false);
bool structural_equal(const LoweredFunc& a, const LoweredFunc& b);  // arguments map in order
uint64_t structural_hash(const Expr& e);
uint64_t structural_hash(const Stmt& s);
uint64_t structural_hash(const Tensor& t);

}  // namespace tessera::tensor_ir
