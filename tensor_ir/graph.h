// The dataflow graph of operations: which tensors an operation reads, and all operations
// behind a set of outputs in dependency order.
#pragma once
#include <vector>

#include "tensor_ir/expr.h"
#include "tensor_ir/tensor.h"

namespace tessera::tensor_ir {

// Tensors read by `t`'s definition, each once, in order of first use.
std::vector<Tensor> input_tensors(const Tensor& t);
// The reads in `e` (of `only`, when given), in order.
std::vector<const ProducerLoad*> loads_in(const Expr& e, const Object* only = nullptr);
// Every operation `outputs` depend on (themselves included), producers before consumers.
// Iterative, so graphs of any depth are fine.
std::vector<Tensor> topological_order(const std::vector<Tensor>& outputs);

}  // namespace tessera::tensor_ir
