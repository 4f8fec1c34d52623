// Type relations shared by many ops.
#pragma once
#include <vector>

#include "relay_ir/attrs.h"
#include "relay_ir/type.h"

namespace tessera::relay_ir {

// The type of the first argument (unary elementwise ops).
Type same_as_input(const std::vector<Type>& args, const Attrs& attrs);
// numpy broadcasting of two tensors of one dtype.
Type broadcast_binary(const std::vector<Type>& args, const Attrs& attrs);
// The broadcast shape of two shapes; throws naming both if they do not broadcast.
std::vector<int64_t> broadcast_shapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b);

}  // namespace tessera::relay_ir
