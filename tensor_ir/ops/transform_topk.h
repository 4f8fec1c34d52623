// Compute definition of topk (ONNX TopK): the k largest (or smallest) elements along an axis,
// sorted, with their int64 indices; equal values keep the lower index first. Inputs must be
// free of NaN (their order is undefined).
#pragma once
#include <vector>

#include "tensor_ir/tensor.h"

namespace tessera::tensor_ir::ops {

// Up to this k, topk selects the k elements one after the other (two reductions over the axis
// each); above it, every element is ranked against all others (quadratic in the axis length).
constexpr int64_t kTopkSelectionMaxK = 8;

// {values, indices}.
std::vector<Tensor> topk(const Tensor& x, int64_t k, int64_t axis, bool largest);

}  // namespace tessera::tensor_ir::ops
