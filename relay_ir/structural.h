// Structural equality and hashing of graphs, for tests, CSE-like deduplication and caches keyed
// by a graph. Graphs compare as DAGs: a node shared on one side must correspond to one shared
// node on the other. Function parameters match up to renaming; free variables must be the same
// nodes unless `map_free_vars`. Names of variables, CallNode::origin and checked_type are not
// part of a graph's structure. Equal graphs hash alike, and hashes never depend on addresses,
// so they are the same from run to run.
#pragma once
#include <cstdint>

#include "relay_ir/module.h"

namespace tessera::relay_ir {

bool structural_equal(const Expr& a, const Expr& b, bool map_free_vars = false);
// Functions correspond by name, in any order.
bool structural_equal(const Module& a, const Module& b, bool map_free_vars = false);
bool structural_equal(const Type& a, const Type& b);

uint64_t structural_hash(const Expr& e);
uint64_t structural_hash(const Module& m);
uint64_t structural_hash(const Type& t);

}  // namespace tessera::relay_ir
