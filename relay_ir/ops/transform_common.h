// Shared pieces of the transform family's op registrations (transform*.cc): the files that
// register_transform_ops calls, and small helpers for type relations and computes.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "relay_ir/op.h"
#include "tensor_ir/ops/transform_resize.h"

namespace tessera::relay_ir::transform {

void register_index_ops(OpRegistry& r);   // take, gather_*, scatter_* (transform_index.cc)
void register_resize_ops(OpRegistry& r);  // resize, topk (transform_resize.cc)

// The tensor type of argument i, or an Error naming it.
const TensorTypeNode& arg(const std::vector<Type>& args, size_t i, const char* what);
// Fails unless the argument's dtype is an integer type.
void require_integer(const TensorTypeNode& t, const char* what);

// The parameters of a resize call on data of shape `in`, as its compute reads them (scales from
// sizes when only sizes are given), checked.
tensor_ir::ops::ResizeParams resize_params(const std::vector<int64_t>& in, const Attrs& a);

inline AttrSpec required_ints(const std::string& name) { return {name, std::vector<int64_t>{}, true}; }
inline AttrSpec optional_ints(const std::string& name) { return {name, std::vector<int64_t>{}, false}; }

}  // namespace tessera::relay_ir::transform
