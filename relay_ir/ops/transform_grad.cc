// Gradients of the transform family's ops: data movement runs backwards. Shape ops are here;
// pad, the index-driven ops and resize have files of their own (transform_grad_*.cc).
#include "relay_ir/ops/transform_grad.h"

#include <numeric>

#include "relay_ir/ops/families.h"
#include "relay_ir/ops/grad_util.h"
#include "relay_ir/transforms/infer_type.h"
#include "runtime/error.h"

namespace tessera::relay_ir {

namespace transform_grad {

const CallNode& as_call(const Expr& e) { return *e.as<CallNode>(); }
const Expr& arg(const Expr& call, size_t i) { return as_call(call).args.at(i); }
const TensorTypeNode& tensor_of(const Expr& e) {
  if (!e->checked_type) infer_type(e);
  return as_tensor(e->checked_type, "value");
}

namespace {

template <typename F>
auto with_element_type(DataType t, F f) {
  if (t.is_float() && t.bits == 64) return f(double{});
  if (t.is_float() && t.bits == 32) return f(float{});
  if (t.is_int() && t.bits == 64) return f(int64_t{});
  if (t.is_int() && t.bits == 32) return f(int32_t{});
  if (t.is_int() && t.bits == 16) return f(int16_t{});
  if (t.is_int() && t.bits == 8) return f(int8_t{});
  if (t.is_uint() && t.bits == 64) return f(uint64_t{});
  if (t.is_uint() && t.bits == 32) return f(uint32_t{});
  if (t.is_uint() && t.bits == 16) return f(uint16_t{});
  if (t.is_uint() && t.bits == 8) return f(uint8_t{});
  fail("gradient: arrays of ", t.str(), " are not supported here");
}

template <typename V>
Expr constant_of(const std::vector<int64_t>& shape, DataType dtype, const std::vector<V>& values) {
  runtime::NDArray a = runtime::NDArray::empty(shape, dtype);
  if (static_cast<int64_t>(values.size()) != a.numel()) fail("internal error: ", values.size(), " values for a constant of ", a.shape_str());
  with_element_type(dtype, [&](auto zero) {
    using T = decltype(zero);
    for (int64_t i = 0; i < a.numel(); ++i) a.data_as<T>()[i] = static_cast<T>(values[i]);
    return 0;
  });
  return constant(a);
}

}  // namespace

int64_t int_at(const runtime::NDArray& a, int64_t i) {
  return with_element_type(a.dtype(), [&](auto zero) { return static_cast<int64_t>(a.data_as<decltype(zero)>()[i]); });
}

double float_at(const runtime::NDArray& a, int64_t i) {
  return with_element_type(a.dtype(), [&](auto zero) { return static_cast<double>(a.data_as<decltype(zero)>()[i]); });
}

Expr int_constant(const std::vector<int64_t>& shape, DataType dtype, const std::vector<int64_t>& values) {
  return constant_of(shape, dtype, values);
}

Expr float_constant(const std::vector<int64_t>& shape, DataType dtype, const std::vector<double>& values) {
  return constant_of(shape, dtype, values);
}

}  // namespace transform_grad

namespace {

using namespace transform_grad;
using E = const Expr&;

Expr reshape(E x, const std::vector<int64_t>& shape) { return call("reshape", {x}, {{"shape", shape}}); }

int64_t normalized_axis(int64_t axis, size_t rank) { return axis < 0 ? axis + static_cast<int64_t>(rank) : axis; }

// tile: the input's shape interleaved with the repeats ([r0, n0, r1, n1, ...], axes repeated
// once left out), summed over the repeats.
std::vector<Expr> tile_gradient(E c, E g) {
  const auto& x = tensor_of(arg(c, 0));
  const auto& repeats = as_call(c).attrs.get_ints("repeats");
  std::vector<int64_t> split, summed;
  for (size_t d = 0; d < x.ndim(); ++d) {
    if (repeats[d] != 1) {
      summed.push_back(static_cast<int64_t>(split.size()));
      split.push_back(repeats[d]);
    }
    split.push_back(x.shape[d]);
  }
  if (summed.empty()) return {g};
  Expr sum = call("reduce_sum", {reshape(g, split)}, {{"axes", summed}, {"keepdims", int64_t{0}}});
  return {reshape(sum, x.shape)};
}

// depth_to_space in CRD mode has no inverse op: undo its reshape-transpose-reshape.
Expr crd_depth_to_space_gradient(E g, const std::vector<int64_t>& x_shape, int64_t b) {
  const auto& gs = tensor_of(g).shape;  // [N, C, H b, W b]
  Expr blocks = reshape(g, {gs[0], gs[1], x_shape[2], b, x_shape[3], b});
  return reshape(call("transpose", {blocks}, {{"perm", std::vector<int64_t>{0, 1, 3, 5, 2, 4}}}), x_shape);
}

}  // namespace

void register_transform_gradients(OpRegistry& r) {
  register_ops(r);
  // A reshape of the cotangent back to the input's shape.
  auto reshape_back = [](E c, E g) { return std::vector<Expr>{reshape(g, tensor_of(arg(c, 0)).shape)}; };
  for (const char* op : {"reshape", "squeeze", "expand_dims"}) r.set_gradient(op, reshape_back);
  r.set_gradient("transpose", [](E c, E g) {
    std::vector<int64_t> perm = as_call(c).attrs.get_ints("perm");
    size_t n = tensor_of(arg(c, 0)).ndim();
    if (perm.empty()) {
      perm.resize(n);
      std::iota(perm.rbegin(), perm.rend(), 0);
    }
    std::vector<int64_t> inverse(n);
    for (size_t i = 0; i < n; ++i) inverse[normalized_axis(perm[i], n)] = static_cast<int64_t>(i);
    return std::vector<Expr>{call("transpose", {g}, {{"perm", inverse}})};
  });
  r.set_gradient("broadcast_to", [](E c, E g) { return std::vector<Expr>{collapse_sum_to(g, arg(c, 0)->checked_type)}; });
  r.set_gradient("concat", [](E c, E g) {
    const auto& args = as_call(c).args;
    if (args.size() == 1) return std::vector<Expr>{g};
    int64_t axis = normalized_axis(as_call(c).attrs.get_int("axis"), tensor_of(g).ndim());
    std::vector<int64_t> sizes;
    for (const auto& a : args) sizes.push_back(tensor_of(a).shape[axis]);
    Expr parts = call("split", {g}, {{"axis", axis}, {"sizes", sizes}});
    std::vector<Expr> grads;
    for (size_t i = 0; i < args.size(); ++i) grads.push_back(tuple_get(parts, static_cast<int64_t>(i)));
    return grads;
  });
  // The cotangent of a tuple arrives as a Tuple (zeros for the parts nobody used).
  r.set_gradient("split", [](E c, E g) {
    std::vector<Expr> parts;
    if (const auto* t = g.as<TupleNode>()) parts = t->elements;
    else
      for (size_t i = 0; i < as_call(c).attrs.get_ints("sizes").size(); ++i) parts.push_back(tuple_get(g, static_cast<int64_t>(i)));
    return std::vector<Expr>{call("concat", parts, {{"axis", as_call(c).attrs.get_int("axis")}})};
  });
  r.set_gradient("tile", tile_gradient);
  r.set_gradient("slice", [](E c, E g) {
    Attrs attrs = as_call(c).attrs;
    attrs.set("shape", tensor_of(arg(c, 0)).shape);
    return std::vector<Expr>{call("unslice", {g}, attrs)};
  });
  // space_to_depth is the inverse of depth_to_space in DCR mode.
  r.set_gradient("depth_to_space", [](E c, E g) {
    const Attrs& a = as_call(c).attrs;
    int64_t b = a.get_int("blocksize");
    if (a.get_str("mode") == "CRD") return std::vector<Expr>{crd_depth_to_space_gradient(g, tensor_of(arg(c, 0)).shape, b)};
    return std::vector<Expr>{call("space_to_depth", {g}, {{"blocksize", b}})};
  });
  r.set_gradient("space_to_depth", [](E c, E g) {
    return std::vector<Expr>{call("depth_to_space", {g}, {{"blocksize", as_call(c).attrs.get_int("blocksize")}, {"mode", std::string("DCR")}})};
  });
  r.set_gradient("trilu", [](E c, E g) { return std::vector<Expr>{call("trilu", {g}, as_call(c).attrs)}; });
  // Reversing the first lengths[b] steps is its own inverse; the lengths have no cotangent.
  r.set_gradient("reverse_sequence", [](E c, E g) {
    return std::vector<Expr>{call("reverse_sequence", {g, arg(c, 1)}, as_call(c).attrs), Expr()};
  });
  register_pad(r);
  register_index(r);
  register_resize(r);
}

}  // namespace tessera::relay_ir
