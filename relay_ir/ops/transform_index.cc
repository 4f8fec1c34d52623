// Operators that read or write at indices held in a tensor: take (ONNX Gather),
// gather_elements, gather_nd, scatter_elements, scatter_nd. Out-of-range indices are clamped
// (see tensor_ir/ops/transform_index.h).
// Gradients: a gather's cotangent is scattered back with "add" (so repeated indices accumulate);
// a scatter's data gets the cotangent where nothing overwrote it and its updates read the
// cotangent at their targets. Indices never have a cotangent.
#include "relay_ir/ops/transform_common.h"
#include "runtime/error.h"
#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/op.h"
#include "tensor_ir/ops/transform_index.h"
#include "tensor_ir/ops/transform_shape.h"

namespace tessera::relay_ir::transform {

namespace {

namespace ops = tensor_ir::ops;
using Tensors = std::vector<tensor_ir::Tensor>;

using GatherDims = std::vector<tensor_ir::Expr> (*)(const std::vector<tensor_ir::Expr>&,
                                                    const std::vector<tensor_ir::Expr>&, int64_t);

// (data, integer indices) -> data's dtype, of the dimensions `dims` gives from both and the
// integer attribute `attr` (gather_elements' axis, gather_nd's batch_dims).
TypeRelation gather_rel(GatherDims dims, const char* attr) {
  return [dims, attr](const std::vector<Type>& args, const Attrs& attrs) {
    const auto& data = tensor_arg(args, 0, "data");
    const auto& indices = tensor_arg(args, 1, "indices");
    require_integer(indices, "indices");
    return tensor_type(Shape(dims(data.shape.dims(), indices.shape.dims(), attrs.get_int(attr))), data.dtype);
  };
}

// data.shape[:axis] + indices.shape + data.shape[axis + 1:].
Type take_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& data = tensor_arg(args, 0, "data");
  const auto& indices = tensor_arg(args, 1, "indices");
  require_integer(indices, "indices");
  const int64_t axis = attrs.get_int("axis");
  if (data.shape.is_static() && indices.shape.is_static())
    return tensor_type(ops::take_shape(data.shape, indices.shape, axis), data.dtype);
  const size_t a =
      static_cast<size_t>(ops::normalize_axis(axis, static_cast<int64_t>(data.shape.size()), "take: axis"));
  std::vector<tensor_ir::Expr> out;
  for (size_t d = 0; d < a; ++d) out.push_back(data.shape.dim(d));
  for (const tensor_ir::Expr& d : indices.shape.dims()) out.push_back(d);
  for (size_t d = a + 1; d < data.shape.size(); ++d) out.push_back(data.shape.dim(d));
  return tensor_type(Shape(out), data.dtype);
}

// A gathered axis of symbolic size must have an element to read, where there are indices (take,
// gather_elements).
std::vector<OpDef::NonEmptyDim> take_nonempty(const CallNode& call) {
  const Shape& shape = tensor_of(call.args.at(0)).shape;
  const int64_t axis = ops::normalize_axis(call.attrs.get_int("axis"), static_cast<int64_t>(shape.size()), "axis");
  if (shape.is_static(static_cast<size_t>(axis))) return {};
  return {{shape.dim(static_cast<size_t>(axis)), tensor_of(call.args.at(1)).shape.numel()}};
}

// The indexed dimensions of symbolic size must have an element to read, where there are index
// tuples.
std::vector<OpDef::NonEmptyDim> gather_nd_nonempty(const CallNode& call) {
  const Shape& data = tensor_of(call.args.at(0)).shape;
  const Shape& indices = tensor_of(call.args.at(1)).shape;
  const int64_t b = call.attrs.get_int("batch_dims");
  if (indices.empty() || !indices.is_static(indices.size() - 1)) return {};
  const int64_t depth = indices[indices.size() - 1];
  tensor_ir::Expr tuples = 1;
  for (size_t d = 0; d + 1 < indices.size(); ++d) tuples = tuples * indices.dim(d);
  tuples = tensor_ir::arith::simplify(tuples);
  std::vector<OpDef::NonEmptyDim> dims;
  for (int64_t d = b; d < b + depth && d < static_cast<int64_t>(data.size()); ++d)
    if (!data.is_static(static_cast<size_t>(d))) dims.push_back({data.dim(static_cast<size_t>(d)), tuples});
  return dims;
}

// (data, indices, updates) -> data's type, after `check` validates the shapes.
TypeRelation scatter_rel(
    std::function<void(const ops::Shape&, const ops::Shape&, const ops::Shape&, const Attrs&)> check) {
  return [check](const std::vector<Type>& args, const Attrs& attrs) {
    const auto& data = tensor_arg(args, 0, "data");
    const auto& indices = tensor_arg(args, 1, "indices");
    const auto& updates = tensor_arg(args, 2, "updates");
    require_integer(indices, "indices");
    if (updates.dtype != data.dtype) fail("updates are ", updates.dtype.str(), ", data is ", data.dtype.str());
    auto reduction = ops::parse_scatter_reduction(attrs.get_str("reduction"));
    if (reduction != ops::ScatterReduction::None && data.dtype.is_bool())
      fail("reduction '", attrs.get_str("reduction"), "' of bool tensors");
    check(data.shape, indices.shape, updates.shape, attrs);
    return args[0];
  };
}

}  // namespace

namespace {
namespace ops = tensor_ir::ops;
using E = const Expr&;
using Ints = std::vector<int64_t>;

Expr where(E c, E a, E b) { return call("where", {c, a, b}); }
Expr equal(E a, E b) { return call("equal", {a, b}); }
Expr zero(E like) { return scalar_of(0, tensor_of(like).dtype); }

// Where an op's scatter and gather differ: scatter_elements / gather_elements along an axis,
// or scatter_nd / gather_nd.
struct ScatterKind {
  bool elements;
  int64_t axis;
  Expr scatter(E data, E indices, E updates, const char* reduction) const {
    if (elements)
      return call("scatter_elements", {data, indices, updates},
                  {{"axis", axis}, {"reduction", std::string(reduction)}});
    return call("scatter_nd", {data, indices, updates}, {{"reduction", std::string(reduction)}});
  }
  Expr gather(E data, E indices) const {
    if (elements) return call("gather_elements", {data, indices}, {{"axis", axis}});
    return call("gather_nd", {data, indices});
  }
};

// Each update's position number: its coordinate along the axis (elements), or its row's flat
// number (nd); the forward op lets the highest number aimed at a target win.
Expr update_numbers(const ScatterKind& k, const Ints& shape) {
  Ints values(static_cast<size_t>(ops::numel(shape)));
  int64_t inner = 1;
  for (size_t d = k.elements ? static_cast<size_t>(k.axis) + 1 : shape.size(); d < shape.size(); ++d) inner *= shape[d];
  int64_t extent = k.elements ? shape[k.axis] : ops::numel(shape);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = (static_cast<int64_t>(i) / inner) % std::max<int64_t>(extent, 1);
  return int_constant(shape, runtime::kInt64, values);
}

// d updates of a replacing scatter: the cotangent at the target, for the update that won it.
Expr winning_updates_gradient(const ScatterKind& k, E data, E indices, E updates, E g) {
  const auto& ut = tensor_of(updates);
  Ints numbered = ut.shape, unnumbered;  // nd: numbers per row, the row's trailing axes apart
  Ints target = tensor_of(data).shape;
  if (!k.elements) {
    size_t rows = tensor_of(indices).ndim() - 1;
    numbered.resize(rows);
    unnumbered = numbered;
    unnumbered.resize(ut.ndim(), 1);
    target.resize(static_cast<size_t>(tensor_of(indices).shape.back()));
  }
  Expr numbers = update_numbers(k, numbered);
  Expr none = int_constant(target, runtime::kInt64, Ints(static_cast<size_t>(ops::numel(target)), -1));
  Expr winner = equal(k.gather(k.scatter(none, indices, numbers, "none"), indices), numbers);
  if (!k.elements) winner = call("reshape", {winner}, {{"shape", unnumbered}});
  return where(winner, k.gather(g, indices), zero(g));
}

// scatter with reduction mul: out = data * (product of the updates aimed at each element).
// d updates is the cotangent times data times the product of the other updates at the same
// target, computed without dividing by zero (zeros replaced by ones, and zeroed where another
// update at the target is zero).
std::pair<Expr, Expr> product_gradients(const ScatterKind& k, E data, E indices, E updates, E g) {
  Expr ones = ones_like(data->checked_type), zeros = zeros_like(data->checked_type);
  Expr d_data = mul(g, k.scatter(ones, indices, updates, "mul"));
  Expr is_zero = equal(updates, zero(updates));
  Expr safe = where(is_zero, scalar_of(1, tensor_of(updates).dtype), updates);
  Expr zeros_here = as_mask(is_zero, updates);
  Expr others = div(k.gather(k.scatter(ones, indices, safe, "mul"), indices), safe);
  Expr zeros_at_target = k.gather(k.scatter(zeros, indices, zeros_here, "add"), indices);
  Expr none_elsewhere = as_mask(equal(zeros_at_target, zeros_here), updates);
  Expr d_updates = mul(mul(k.gather(mul(g, data), indices), others), none_elsewhere);
  return {d_data, d_updates};
}

GradientFn scatter_gradient(bool elements) {
  return [elements](E c, E g) {
    const Expr &data = arg(c, 0), &indices = arg(c, 1), &updates = arg(c, 2);
    const Attrs& a = as_call(c).attrs;
    ScatterKind k{elements, 0};
    if (elements) k.axis = ops::normalize_axis(a.get_int("axis"), static_cast<int64_t>(tensor_of(data).ndim()));
    const std::string& reduction = a.get_str("reduction");
    if (reduction == "max" || reduction == "min")
      fail("scatter with reduction ", reduction, " has no gradient yet (which update wins is data-dependent)");
    if (reduction == "add") return std::vector<Expr>{g, Expr(), k.gather(g, indices)};
    if (reduction == "mul") {
      auto [d_data, d_updates] = product_gradients(k, data, indices, updates, g);
      return std::vector<Expr>{d_data, Expr(), d_updates};
    }
    Expr d_data = k.scatter(g, indices, zeros_like(updates->checked_type), "none");
    return std::vector<Expr>{d_data, Expr(), winning_updates_gradient(k, data, indices, updates, g)};
  };
}

// gather_nd with batch dims: the batch coordinates are prepended to every index tuple, so that
// scatter_nd (which has no batch dims) puts each slice back in its batch.
Expr with_batch_coordinates(E indices, int64_t batch_dims) {
  const auto& it = tensor_of(indices);
  Ints rows(it.shape.begin(), it.shape.end() - 1), shape = rows;
  shape.push_back(batch_dims);
  Ints values;
  int64_t count = ops::numel(rows);
  for (int64_t r = 0; r < count; ++r) {
    Ints coords(rows.size());
    for (size_t d = rows.size(), rest = static_cast<size_t>(r); d-- > 0;) {
      coords[d] = static_cast<int64_t>(rest) % rows[d];
      rest /= static_cast<size_t>(rows[d]);
    }
    values.insert(values.end(), coords.begin(), coords.begin() + batch_dims);
  }
  Expr batch = int_constant(shape, it.dtype, values);
  return call("concat", {batch, indices}, {{"axis", static_cast<int64_t>(it.ndim()) - 1}});
}

std::vector<Expr> take_gradient(const Expr& c, const Expr& g) {
  const auto& data = tensor_of(arg(c, 0));
  int64_t axis = ops::normalize_axis(as_call(c).attrs.get_int("axis"), static_cast<int64_t>(data.ndim()));
  return std::vector<Expr>{call("take_grad", {g, arg(c, 1)}, {{"axis", axis}, {"size", data.shape[axis]}}), Expr()};
}

std::vector<Expr> gather_elements_gradient(const Expr& c, const Expr& g) {
  const Expr& data = arg(c, 0);
  return std::vector<Expr>{call("scatter_elements", {zeros_like(data->checked_type), arg(c, 1), g},
                                {{"axis", as_call(c).attrs.get_int("axis")}, {"reduction", std::string("add")}}),
                           Expr()};
}

std::vector<Expr> gather_nd_gradient(const Expr& c, const Expr& g) {
  const Expr& data = arg(c, 0);
  int64_t batch_dims = as_call(c).attrs.get_int("batch_dims");
  Expr indices = batch_dims > 0 ? with_batch_coordinates(arg(c, 1), batch_dims) : arg(c, 1);
  return std::vector<Expr>{
      call("scatter_nd", {zeros_like(data->checked_type), indices, g}, {{"reduction", std::string("add")}}), Expr()};
}

}  // namespace

void register_index_ops(OpRegistry& r) {
  const auto injective = OpPattern::Injective;
  r.add({"take",
         "take(data, indices): ONNX Gather along an axis; negative indices wrap",
         2,
         2,
         {{"axis", int64_t{0}}},
         take_rel,
         injective,
         single_output([](const Tensors& in, const Attrs& a) { return ops::take(in[0], in[1], a.get_int("axis")); }),
         "transform",
         take_gradient,
         /*is_view=*/false,
         take_nonempty});
  r.add({"gather_elements",
         "gather_elements(data, indices): out[i] = data[i with indices[i] on the axis]",
         2,
         2,
         {{"axis", int64_t{0}}},
         gather_rel(ops::gather_elements_dims, "axis"),
         injective,
         single_output(
             [](const Tensors& in, const Attrs& a) { return ops::gather_elements(in[0], in[1], a.get_int("axis")); }),
         "transform",
         gather_elements_gradient,
         /*is_view=*/false,
         take_nonempty});
  r.add({"gather_nd",
         "gather_nd(data, indices): slices of data at index tuples (the last axis of indices)",
         2,
         2,
         {{"batch_dims", int64_t{0}}},
         gather_rel(ops::gather_nd_dims, "batch_dims"),
         injective,
         single_output(
             [](const Tensors& in, const Attrs& a) { return ops::gather_nd(in[0], in[1], a.get_int("batch_dims")); }),
         "transform",
         gather_nd_gradient,
         /*is_view=*/false,
         gather_nd_nonempty});
  r.add({"scatter_elements",
         "scatter_elements(data, indices, updates): data with updates written along an axis (reduction none|add|mul)",
         3,
         3,
         {{"axis", int64_t{0}}, {"reduction", std::string("none")}},
         scatter_rel([](const auto& d, const auto& i, const auto& u, const Attrs& a) {
           ops::check_scatter_elements(d, i, u, a.get_int("axis"));
         }),
         OpPattern::Opaque,
         single_output([](const Tensors& in, const Attrs& a) {
           return ops::scatter_elements(in[0], in[1], in[2], a.get_int("axis"),
                                        ops::parse_scatter_reduction(a.get_str("reduction")));
         }),
         "scatter",
         scatter_gradient(true)});
  r.add({"scatter_nd",
         "scatter_nd(data, indices, updates): data with slices written at index tuples (reduction none|add|mul)",
         3,
         3,
         {{"reduction", std::string("none")}},
         scatter_rel([](const auto& d, const auto& i, const auto& u, const Attrs&) { ops::check_scatter_nd(d, i, u); }),
         OpPattern::Opaque,
         single_output([](const Tensors& in, const Attrs& a) {
           return ops::scatter_nd(in[0], in[1], in[2], ops::parse_scatter_reduction(a.get_str("reduction")));
         }),
         "scatter",
         scatter_gradient(false)});
}

}  // namespace tessera::relay_ir::transform
