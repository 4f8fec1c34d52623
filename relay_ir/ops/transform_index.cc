// Operators that read or write at indices held in a tensor: take (ONNX Gather),
// gather_elements, gather_nd, scatter_elements, scatter_nd. Out-of-range indices are clamped
// (see tensor_ir/ops/transform_index.h).
#include "relay_ir/ops/transform_common.h"
#include "runtime/error.h"
#include "tensor_ir/ops/transform_index.h"

namespace tessera::relay_ir::transform {

namespace {

namespace ops = tensor_ir::ops;
using Tensors = std::vector<tensor_ir::Tensor>;

// (data, indices) -> data's dtype with the shape `shape_fn` gives.
TypeRelation gather_rel(std::function<ops::Shape(const ops::Shape&, const ops::Shape&, const Attrs&)> shape_fn) {
  return [shape_fn](const std::vector<Type>& args, const Attrs& attrs) {
    const auto& data = arg(args, 0, "data");
    const auto& indices = arg(args, 1, "indices");
    require_integer(indices, "indices");
    return tensor_type(shape_fn(data.shape, indices.shape, attrs), data.dtype);
  };
}

// (data, indices, updates) -> data's type, after `check` validates the shapes.
TypeRelation scatter_rel(std::function<void(const ops::Shape&, const ops::Shape&, const ops::Shape&, const Attrs&)> check) {
  return [check](const std::vector<Type>& args, const Attrs& attrs) {
    const auto& data = arg(args, 0, "data");
    const auto& indices = arg(args, 1, "indices");
    const auto& updates = arg(args, 2, "updates");
    require_integer(indices, "indices");
    if (updates.dtype != data.dtype) fail("updates are ", updates.dtype.str(), ", data is ", data.dtype.str());
    auto reduction = ops::parse_scatter_reduction(attrs.get_str("reduction"));
    if (reduction != ops::ScatterReduction::None && data.dtype.is_bool()) fail("reduction '", attrs.get_str("reduction"), "' of bool tensors");
    check(data.shape, indices.shape, updates.shape, attrs);
    return args[0];
  };
}

}  // namespace

void register_index_ops(OpRegistry& r) {
  const auto injective = OpPattern::Injective;
  r.add({"take", "take(data, indices): ONNX Gather along an axis; negative indices wrap", 2, 2, {{"axis", int64_t{0}}},
         gather_rel([](const auto& d, const auto& i, const Attrs& a) { return ops::take_shape(d, i, a.get_int("axis")); }), injective,
         single_output([](const Tensors& in, const Attrs& a) { return ops::take(in[0], in[1], a.get_int("axis")); })});
  r.add({"gather_elements", "gather_elements(data, indices): out[i] = data[i with indices[i] on the axis]", 2, 2,
         {{"axis", int64_t{0}}},
         gather_rel([](const auto& d, const auto& i, const Attrs& a) { return ops::gather_elements_shape(d, i, a.get_int("axis")); }),
         injective, single_output([](const Tensors& in, const Attrs& a) { return ops::gather_elements(in[0], in[1], a.get_int("axis")); })});
  r.add({"gather_nd", "gather_nd(data, indices): slices of data at index tuples (the last axis of indices)", 2, 2,
         {{"batch_dims", int64_t{0}}},
         gather_rel([](const auto& d, const auto& i, const Attrs& a) { return ops::gather_nd_shape(d, i, a.get_int("batch_dims")); }),
         injective, single_output([](const Tensors& in, const Attrs& a) { return ops::gather_nd(in[0], in[1], a.get_int("batch_dims")); })});
  r.add({"scatter_elements", "scatter_elements(data, indices, updates): data with updates written along an axis (reduction none|add|mul)",
         3, 3, {{"axis", int64_t{0}}, {"reduction", std::string("none")}},
         scatter_rel([](const auto& d, const auto& i, const auto& u, const Attrs& a) { ops::check_scatter_elements(d, i, u, a.get_int("axis")); }),
         OpPattern::Opaque, single_output([](const Tensors& in, const Attrs& a) {
           return ops::scatter_elements(in[0], in[1], in[2], a.get_int("axis"), ops::parse_scatter_reduction(a.get_str("reduction")));
         })});
  r.add({"scatter_nd", "scatter_nd(data, indices, updates): data with slices written at index tuples (reduction none|add|mul)", 3, 3,
         {{"reduction", std::string("none")}},
         scatter_rel([](const auto& d, const auto& i, const auto& u, const Attrs&) { ops::check_scatter_nd(d, i, u); }), OpPattern::Opaque,
         single_output([](const Tensors& in, const Attrs& a) {
           return ops::scatter_nd(in[0], in[1], in[2], ops::parse_scatter_reduction(a.get_str("reduction")));
         })});
}

}  // namespace tessera::relay_ir::transform
