// Type relations shared by many ops. Each validates its arguments and throws tessera::Error
// saying what is wrong (the caller adds the op and node).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "relay_ir/attrs.h"
#include "relay_ir/type.h"
#include "runtime/ndarray.h"  // shape_str, for the messages of relations

namespace tessera::relay_ir {

// Argument `i` as a tensor type, `what` naming it in messages (also when it is missing).
const TensorTypeNode& tensor_arg(const std::vector<Type>& args, size_t i, const std::string& what);
// Fails unless `t` is a float type (float16/32/64).
void require_float(const TensorTypeNode& t, const std::string& what);

// The type of the first argument (unary elementwise ops).
Type same_as_input(const std::vector<Type>& args, const Attrs& attrs);
// Unary elementwise ops restricted to a kind of dtype: the argument's type.
Type unary_float(const std::vector<Type>& args, const Attrs& attrs);    // float16/32/64
Type unary_numeric(const std::vector<Type>& args, const Attrs& attrs);  // anything but bool
Type unary_bool(const std::vector<Type>& args, const Attrs& attrs);
Type unary_integer(const std::vector<Type>& args, const Attrs& attrs);
// A float tensor in, a bool tensor of its shape out (isnan, isinf).
Type float_to_bool(const std::vector<Type>& args, const Attrs& attrs);

// numpy broadcasting of two tensors of one dtype (any dtype).
Type broadcast_binary(const std::vector<Type>& args, const Attrs& attrs);
// The same restricted to numeric, bool, integer or unsigned operands.
Type broadcast_numeric(const std::vector<Type>& args, const Attrs& attrs);
Type broadcast_bool(const std::vector<Type>& args, const Attrs& attrs);
Type broadcast_integer(const std::vector<Type>& args, const Attrs& attrs);
Type broadcast_unsigned(const std::vector<Type>& args, const Attrs& attrs);
// Comparisons: two tensors of one dtype broadcast, bool result.
Type broadcast_compare(const std::vector<Type>& args, const Attrs& attrs);
// where(condition bool, x, y): all three broadcast; x and y share the result dtype.
Type where_relation(const std::vector<Type>& args, const Attrs& attrs);

// The broadcast shape of two shapes; throws naming both if they do not broadcast. Symbolic
// dimensions broadcast against 1 or an equal dimension only; where `positive` is given, also
// against one equal where some variables are at least 1 (x[-L:] against L), which it collects
// (tensor_ir::same_dimension_where_positive): the op checks them at each call.
std::vector<int64_t> broadcast_shapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b);
Shape broadcast_shapes(const Shape& a, const Shape& b, std::vector<tensor_ir::Var>* positive = nullptr);

// The sizes of [N, C, spatial...] data, N as 1 when it is symbolic (each image is computed alike);
// the spatial sizes as they are, constants or expressions.
std::vector<tensor_ir::Expr> dims_per_image(const Shape& data);
// The output shape of an operator that keeps dimension 0 (the batch) and computes each of its
// indices alike (convolution, pooling): `relation` computes it from dims_per_image(data); a
// symbolic batch passes through.
Shape keep_batch(const Shape& data,
                 const std::function<std::vector<tensor_ir::Expr>(const std::vector<tensor_ir::Expr>&)>& relation);

// Reductions with attrs axes (ints, empty: all) and keepdims (0/1): the input's dtype.
Type reduce_relation(const std::vector<Type>& args, const Attrs& attrs);
// argmax/argmin with attrs axis, keepdims: int64 result.
Type arg_reduce_relation(const std::vector<Type>& args, const Attrs& attrs);

}  // namespace tessera::relay_ir
