// The graph ops that only gradients build: unslice (slice's transpose), take_grad (take's) and
// weighted_gather (a sparse linear map along one axis, from constant tables: resize's gradient
// is one per resized axis). Each is differentiable again, so gradients of gradients work.
#include <algorithm>

#include "relay_ir/ops/transform_common.h"
#include "runtime/error.h"
#include "tensor_ir/ops/transform_grad_ops.h"

namespace tessera::relay_ir::transform {

namespace {

namespace ops = tensor_ir::ops;
using Tensors = std::vector<tensor_ir::Tensor>;
using E = const Expr&;

Type unslice_rel(const std::vector<Type>& args, const Attrs& a) {
  const auto& x = tensor_arg(args, 0, "input");
  const auto& shape = a.get_ints("shape");
  ops::Shape expected;
  for (const auto& d :
       ops::slice_dims(shape, a.get_ints("starts"), a.get_ints("ends"), a.get_ints("axes"), a.get_ints("steps")))
    expected.push_back(d.length);
  if (x.shape != expected)
    fail("the input is ", runtime::shape_str(x.shape), ", but the slice of ", runtime::shape_str(shape), " is ",
         runtime::shape_str(expected));
  return tensor_type(shape, x.dtype);
}

Type take_grad_rel(const std::vector<Type>& args, const Attrs& a) {
  const auto& x = tensor_arg(args, 0, "input");
  const auto& indices = tensor_arg(args, 1, "indices");
  require_integer(indices, "indices");
  return tensor_type(ops::take_grad_shape(x.shape, indices.shape, a.get_int("axis"), a.get_int("size")), x.dtype);
}

Type weighted_gather_rel(const std::vector<Type>& args, const Attrs& a) {
  const auto& x = tensor_arg(args, 0, "input");
  const auto& index = tensor_arg(args, 1, "index table");
  const auto& weight = tensor_arg(args, 2, "weight table");
  require_integer(index, "the index table");
  if (!x.dtype.is_float()) fail("the input must be a float tensor, got ", x.dtype.str());
  if (weight.dtype != x.dtype) fail("the weights are ", weight.dtype.str(), ", the input ", x.dtype.str());
  if (index.ndim() != 2 || weight.shape != index.shape)
    fail("index and weight must be [n, K] tables of one shape, got ", runtime::shape_str(index.shape), " and ",
         runtime::shape_str(weight.shape));
  int64_t axis = ops::normalize_axis(a.get_int("axis"), static_cast<int64_t>(x.ndim()), "axis");
  std::vector<int64_t> out = x.shape;
  out[axis] = index.shape[0];
  return tensor_type(out, x.dtype);
}

std::vector<Expr> weighted_gather_gradient(E c, E g) {
  const Expr &x = arg(c, 0), &index = arg(c, 1), &weight = arg(c, 2);
  const auto& xt = tensor_of(x);
  auto rank = static_cast<int64_t>(xt.ndim());
  int64_t axis = ops::normalize_axis(as_call(c).attrs.get_int("axis"), rank, "axis");
  const auto& table = tensor_of(index).shape;
  // Shapes with the axis widened into [n, taps].
  auto widened = [&](std::vector<int64_t> shape, int64_t taps) {
    shape[axis] = taps;
    shape.insert(shape.begin() + axis, table[0]);
    return shape;
  };
  auto reshape = [](E v, const std::vector<int64_t>& shape) { return call("reshape", {v}, {{"shape", shape}}); };
  Expr flat_index = reshape(index, {table[0] * table[1]});
  Expr g_wide = reshape(g, widened(xt.shape, 1));
  Expr dx;
  const auto *ic = index.as<ConstantNode>(), *wc = weight.as<ConstantNode>();
  if (ic && wc) {
    AxisMap map{table[0], table[1], {}, {}};
    for (int64_t i = 0; i < table[0] * table[1]; ++i) {
      map.index.push_back(int_at(ic->data, i));
      map.weight.push_back(float_at(wc->data, i));
    }
    dx = transposed_gather(g, map, axis, xt.shape[axis]);
  } else {  // tables computed in the graph: every (i, k) scattered, slower but general
    std::vector<int64_t> w_shape(static_cast<size_t>(rank + 1), 1);
    w_shape[axis] = table[0];
    w_shape[axis + 1] = table[1];
    std::vector<int64_t> flat = xt.shape;
    flat[axis] = table[0] * table[1];
    Expr weighted = reshape(mul(g_wide, reshape(weight, w_shape)), flat);
    dx = call("take_grad", {weighted, flat_index}, {{"axis", axis}, {"size", xt.shape[axis]}});
  }
  // d weight[i, k] = sum over the other axes of g[.., i, ..] x[.., index[i, k], ..].
  Expr read = reshape(call("take", {x, flat_index}, {{"axis", axis}}), widened(xt.shape, table[1]));
  Expr product = mul(read, g_wide);
  std::vector<int64_t> others;
  for (int64_t d = 0; d <= rank; ++d)
    if (d != axis && d != axis + 1) others.push_back(d);
  Expr dw = others.empty() ? product : call("reduce_sum", {product}, {{"axes", others}, {"keepdims", int64_t{0}}});
  return {dx, Expr(), dw};
}

std::vector<Expr> unslice_gradient(E c, E g) {
  const Attrs& a = as_call(c).attrs;
  return {call("slice", {g},
               {{"starts", a.get_ints("starts")},
                {"ends", a.get_ints("ends")},
                {"axes", a.get_ints("axes")},
                {"steps", a.get_ints("steps")}})};
}

std::vector<Expr> take_grad_gradient(E c, E g) {
  return {call("take", {g, arg(c, 1)}, {{"axis", as_call(c).attrs.get_int("axis")}}), Expr()};
}

}  // namespace

Expr transposed_gather(const Expr& g, const AxisMap& map, int64_t axis, int64_t length) {
  // For each position of the axis, the rows that read it and with which weights (merged when
  // a row reads it twice; zero weights left out).
  std::vector<std::vector<std::pair<int64_t, double>>> readers(static_cast<size_t>(length));
  for (int64_t i = 0; i < map.rows; ++i)
    for (int64_t k = 0; k < map.taps; ++k) {
      double w = map.weight[i * map.taps + k];
      if (w == 0) continue;
      int64_t j = map.index[i * map.taps + k];
      j = std::clamp<int64_t>(j < 0 ? j + length : j, 0, length - 1);  // as weighted_gather reads it
      auto& list = readers[j];
      if (!list.empty() && list.back().first == i) list.back().second += w;
      else list.emplace_back(i, w);
    }
  size_t width = 0;
  for (const auto& list : readers) width = std::max(width, list.size());
  std::vector<int64_t> index(static_cast<size_t>(length) * width, 0);
  std::vector<double> weight(index.size(), 0.0);
  for (size_t j = 0; j < readers.size(); ++j)
    for (size_t k = 0; k < readers[j].size(); ++k) {
      index[j * width + k] = readers[j][k].first;
      weight[j * width + k] = readers[j][k].second;
    }
  std::vector<int64_t> shape{length, static_cast<int64_t>(width)};
  return call("weighted_gather",
              {g, int_constant(shape, runtime::kInt64, index), float_constant(shape, tensor_of(g).dtype, weight)},
              {{"axis", axis}});
}

void register_grad_ops(OpRegistry& r) {
  r.add({"unslice",
         "zeros of `shape` holding x where slice(starts, ends, axes, steps) reads (slice's transpose)",
         1,
         1,
         {required_ints("shape"), required_ints("starts"), required_ints("ends"), optional_ints("axes"),
          optional_ints("steps")},
         unslice_rel,
         OpPattern::Injective,
         single_output([](const Tensors& in, const Attrs& a) {
           return ops::unslice(in[0], a.get_ints("shape"), a.get_ints("starts"), a.get_ints("ends"), a.get_ints("axes"),
                               a.get_ints("steps"));
         }),
         "transform",
         unslice_gradient});
  r.add({"take_grad",
         "take_grad(x, indices): x summed into zeros along axis (length size) at the indices (take's transpose)",
         2,
         2,
         {{"axis", int64_t{0}}, {"size", int64_t{0}, true}},
         take_grad_rel,
         OpPattern::Opaque,
         single_output([](const Tensors& in, const Attrs& a) {
           return ops::take_grad(in[0], in[1], a.get_int("axis"), a.get_int("size"));
         }),
         "scatter",
         take_grad_gradient});
  r.add({"weighted_gather",
         "weighted_gather(x, index, weight): out[.., i, ..] = sum_k weight[i, k] x[.., index[i, k], ..] along axis",
         3,
         3,
         {{"axis", int64_t{0}}},
         weighted_gather_rel,
         OpPattern::Opaque,
         single_output([](const Tensors& in, const Attrs& a) {
           return ops::weighted_gather(in[0], in[1], in[2], a.get_int("axis"));
         }),
         "scatter",
         weighted_gather_gradient});
}

}  // namespace tessera::relay_ir::transform
