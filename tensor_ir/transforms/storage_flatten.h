// Storage flattening: multi-dimensional tensor accesses become flat buffer accesses. Kernel
// arguments are dense row-major; each Realize becomes a local Allocate whose index origin is
// the realized region's minimum, in the memory scope its stage asks for, with strides padded where
// storage_align asks.
#pragma once
#include <unordered_map>
#include <utility>
#include <vector>

#include "tensor_ir/stmt.h"

namespace tessera::tensor_ir {

struct FlattenOptions {
  // The buffer bound to each argument tensor.
  std::vector<std::pair<Tensor, Buffer>> args;
  // Per tensor, per dimension: (factor, offset) so that stride % factor == offset; factor 0 = none.
  std::unordered_map<const Object*, std::vector<std::pair<int64_t, int64_t>>> storage_align;
  // The memory each realized tensor's buffer lives in (its stage's scope); Local when absent.
  std::unordered_map<const Object*, MemoryScope> scopes;
};

// Throws if a tensor is read or written that is neither an argument nor realized.
Stmt storage_flatten(const Stmt& s, const FlattenOptions& options);

}  // namespace tessera::tensor_ir
