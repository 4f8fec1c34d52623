// Converters of ONNX Gather, GatherElements, GatherND, Scatter, ScatterElements, ScatterND.
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
  t.add("GatherND", convert_gather_nd);
  t.add("Scatter", convert_scatter_elements);  // opset 9-10's name of ScatterElements
  t.add("ScatterElements", convert_scatter_elements);
  t.add("ScatterND", convert_scatter_nd);
}

}  // namespace tessera::frontend::onnx
