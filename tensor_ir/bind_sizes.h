// A compute graph of symbolic sizes at given sizes: the same operations, names, axes and bodies,
// its dimension variables replaced by values, the extents folded to constants (operators compute
// shapes as integers where they are constant) and the bodies' expressions left as written
// (`min(i, N - 1)` becomes `min(i, 64 - 1)`, as an operator writes `m - 1` of a constant m). For
// most operators this is the graph they build at those sizes, the static kernel the symbolic one
// stands for, whose workload key finds the tuning records measured there; where an operator
// computes an index differently at constant sizes, the keys differ and no record is found.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tensor_ir/tensor.h"

namespace tessera::tensor_ir {

// The dimension variables of the graph behind `outputs` (those in its tensors' shapes and its
// reductions' extents), each once, in order of first appearance.
std::vector<Var> size_vars(const std::vector<Tensor>& outputs);

// The graph behind `outputs` with each dimension variable at `values` (by name); throws naming a
// variable without one. `as_static`: broadcasting operators (tag "broadcast") read a dimension
// that became 1 at index 0, as they do a dimension of constant size 1 (ops::broadcast_indices), so
// that a graph with a batch of 1 has the static kernel's key; a broadcasting operator that reads
// such a dimension otherwise (prelu's input) then differs from its static kernel.
std::vector<Tensor> bind_sizes(const std::vector<Tensor>& outputs, const std::map<std::string, int64_t>& values,
                               bool as_static = false);

}  // namespace tessera::tensor_ir
