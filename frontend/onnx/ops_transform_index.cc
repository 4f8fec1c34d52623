// Converters of ONNX Gather, GatherElements, GatherND, Scatter, ScatterElements, ScatterND and
// TensorScatter.
#include "frontend/onnx/ops_math.h"
#include "frontend/onnx/ops_transform.h"

namespace tessera::frontend::onnx {

using relay_ir::Expr;
using Exprs = std::vector<Expr>;

namespace {

Exprs convert_gather(ConvertContext& c) {
  c.check_attrs({"axis"});
  return {c.call("take", {c.input(0), c.input(1)}, {{"axis", c.attr_int("axis", 0)}})};
}

Exprs convert_gather_elements(ConvertContext& c) {
  c.check_attrs({"axis"});
  return {c.call("gather_elements", {c.input(0), c.input(1)}, {{"axis", c.attr_int("axis", 0)}})};
}

Exprs convert_gather_nd(ConvertContext& c) {
  c.check_attrs({"batch_dims"});
  return {c.call("gather_nd", {c.input(0), c.input(1)}, {{"batch_dims", c.attr_int("batch_dims", 0)}})};
}

// TensorScatter (24): a KV cache with `update` written into it along `axis` from each batch's
// write index (modulo the cache's length in circular mode). Each cache position looks up the
// update position that lands on it, if any: a gather_elements of the update, where it lands.
Exprs convert_tensor_scatter(ConvertContext& c) {
  c.check_attrs({"axis", "mode"});
  const auto& cache = c.input_type(0);
  const auto& update = c.input_type(1);
  const int64_t rank = static_cast<int64_t>(cache.ndim());
  int64_t axis = c.attr_int("axis", -2);
  if (axis < 0) axis += rank;
  if (axis <= 0 || axis >= rank)
    c.error("axis " + std::to_string(c.attr_int("axis", -2)) + " must name a dimension after the batch's");
  const std::string mode = c.attr_string("mode", "linear");
  if (mode != "linear" && mode != "circular") c.error("mode must be linear or circular, got '" + mode + "'");
  std::vector<int64_t> expected = cache.shape;
  expected[axis] = update.shape.size() == cache.shape.size() ? update.shape[axis] : -1;
  if (update.shape != expected || update.dtype != cache.dtype || expected[axis] > cache.shape[axis])
    c.error("update must be past_cache's shape " + runtime::shape_str(cache.shape) + " with at most as long an axis " +
            std::to_string(axis) + ", and its dtype; got " + update.dtype.str() + runtime::shape_str(update.shape));
  const int64_t length = cache.shape[axis], written = update.shape[axis];
  // The cache position along the axis, broadcast over the others: [1, .., length, .., 1].
  std::vector<int64_t> along(rank, 1), batch(rank, 1);
  along[axis] = length;
  batch[0] = cache.shape[0];
  runtime::NDArray positions = runtime::NDArray::empty({length}, runtime::kInt64);
  for (int64_t s = 0; s < length; ++s) positions.data_as<int64_t>()[s] = s;
  Expr at = c.call("reshape", {relay_ir::constant(positions)}, {{"shape", along}});
  auto int64 = [&](double v) { return scalar_constant(v, runtime::kInt64); };
  Expr offset = at;  // the update position landing at each cache position
  if (c.has_input(2)) {
    Expr starts = c.call("reshape", {c.call("cast", {c.input(2)}, {{"dtype", std::string("int64")}})}, {{"shape", batch}});
    offset = c.call("sub", {at, starts});
    if (mode == "circular") offset = c.call("mod", {offset, int64(static_cast<double>(length))}, {{"fmod", int64_t{0}}});
  }
  Expr lands = c.call("logical_and", {c.call("greater_equal", {offset, int64(0)}),
                                      c.call("less", {offset, int64(static_cast<double>(written))})});
  Expr index = c.call("broadcast_to", {c.call("clip", {offset}, {{"a_min", 0.0}, {"a_max", double(written - 1)}})},
                      {{"shape", cache.shape}});
  Expr gathered = c.call("gather_elements", {c.input(1), index}, {{"axis", axis}});
  return {c.call("where", {lands, gathered, c.input(0)})};
}

// Reductions came with opset 16 (none, add, mul), max and min with opset 18.
std::string reduction_of(const ConvertContext& c) {
  std::string r = c.attr_string("reduction", "none");
  const bool known = r == "none" || r == "add" || r == "mul" || ((r == "max" || r == "min") && c.opset() >= 18);
  if (!known)
    c.error("reduction '" + r + "' is not one of opset " + std::to_string(c.opset()) + "'s (none, add, mul" +
            (c.opset() >= 18 ? ", max, min)" : ")"));
  return r;
}

Exprs convert_scatter_elements(ConvertContext& c) {
  c.check_attrs({"axis", "reduction"});
  return {c.call("scatter_elements", {c.input(0), c.input(1), c.input(2)},
                 {{"axis", c.attr_int("axis", 0)}, {"reduction", reduction_of(c)}})};
}

Exprs convert_scatter_nd(ConvertContext& c) {
  c.check_attrs({"reduction"});
  return {c.call("scatter_nd", {c.input(0), c.input(1), c.input(2)}, {{"reduction", reduction_of(c)}})};
}

}  // namespace

void register_transform_index_converters(ConverterTable& t) {
  t.add("Gather", convert_gather);
  t.add("GatherElements", convert_gather_elements);
  t.add("TensorScatter", convert_tensor_scatter);
  t.add("GatherND", convert_gather_nd);
  t.add("Scatter", convert_scatter_elements);  // opset 9-10's name of ScatterElements
  t.add("ScatterElements", convert_scatter_elements);
  t.add("ScatterND", convert_scatter_nd);
}

}  // namespace tessera::frontend::onnx
