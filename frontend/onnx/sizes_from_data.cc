#include "frontend/onnx/sizes_from_data.h"

#include <algorithm>

#include "frontend/onnx/program_graph.h"
#include "frontend/onnx/tensor_proto.h"
#include "runtime/element.h"

namespace tessera::frontend::onnx {

namespace {

// The index of the node's scales input, or -1 where it has none that the rewrite takes: Resize 10's
// (whose converter reads its scales as constants, bound per value) and Upsample 7's attribute.
int scales_input(const ::onnx::NodeProto& node, int opset) {
  if (!is_ai_onnx(node)) return -1;
  if (node.op_type() == "Resize" && opset >= 11) return 2;
  if (node.op_type() == "Upsample" && opset >= 9) return 1;
  return -1;
}

bool takes_data_scales(const ::onnx::NodeProto& node, int opset, DataDependence& data) {
  const int i = scales_input(node, opset);
  if (node.op_type() == "Resize" && node.input_size() > 3 && !node.input(3).empty()) return false;  // given sizes
  return i >= 0 && i < node.input_size() && !node.input(i).empty() && data.depends(node.input(i));
}

bool takes_data_depth(const ::onnx::NodeProto& node, DataDependence& data) {
  return is_ai_onnx(node) && node.op_type() == "OneHot" && node.input_size() > 1 && !node.input(1).empty() &&
         data.depends(node.input(1));
}

bool takes_sizes_from_data(const ::onnx::NodeProto& node, int opset, DataDependence& data) {
  return takes_data_scales(node, opset, data) || takes_data_depth(node, data);
}

// OneHot's depth as int64, from a Cast before the node.
void cast_depth(::onnx::NodeProto& node, ::onnx::GraphProto& graph) {
  const std::string depth = node.output(0) + "#depth";
  auto* cast = graph.add_node();
  cast->set_op_type("Cast");
  cast->set_name(node_name(node) + "#depth");
  cast->add_input(node.input(1));
  cast->add_output(depth);
  auto* to = cast->add_attribute();
  to->set_name("to");
  to->set_type(::onnx::AttributeProto::INT);
  to->set_i(::onnx::TensorProto::INT64);
  node.set_input(1, depth);
}

// The length of `name` where it is a 1-D float constant of ones in `graph` (an initializer, or a
// Constant node's value); 0 otherwise.
int64_t ones_length(const std::string& name, const ::onnx::GraphProto& graph) {
  const ::onnx::TensorProto* tensor = nullptr;
  for (const auto& init : graph.initializer())
    if (init.name() == name) tensor = &init;
  for (const auto& node : graph.node())
    if (node.op_type() == "Constant" && node.output_size() == 1 && node.output(0) == name)
      for (const auto& a : node.attribute())
        if (a.name() == "value" && a.has_t()) tensor = &a.t();
  if (!tensor || tensor->data_location() == ::onnx::TensorProto::EXTERNAL) return 0;
  const runtime::NDArray value = tensor_from_proto(*tensor, "");
  if (!value.dtype().is_float() || value.ndim() != 1) return 0;
  for (int64_t i = 0; i < value.numel(); ++i)
    if (runtime::element_as_double(value, i) != 1.0) return 0;
  return value.numel();
}

// The number of leading scales known to be 1: the constants of ones that a Concat (among the
// nodes already in `graph`) making `scales` starts with.
int64_t leading_unit_scales(const std::string& scales, const ::onnx::GraphProto& graph) {
  for (const auto& node : graph.node()) {
    if (node.output_size() != 1 || node.output(0) != scales) continue;
    if (node.op_type() != "Concat" || !is_ai_onnx(node)) return 0;
    int64_t count = 0;
    for (const auto& in : node.input()) {
      const int64_t ones = ones_length(in, graph);
      if (ones == 0) break;
      count += ones;
    }
    return count;
  }
  return 0;
}

// A step computing the node's output sizes from its scales, which it gives the node.
void compute_sizes(::onnx::NodeProto& node, int opset, ::onnx::GraphProto& graph) {
  const std::string sizes = node.output(0) + "#sizes";
  auto* step = graph.add_node();
  step->set_op_type(kResizeOutputSize);
  step->set_name(node_name(node) + "#sizes");
  step->add_input(node.input(0));
  step->add_input(node.input(scales_input(node, opset)));
  step->add_output(sizes);
  for (const auto& a : node.attribute())
    if (a.name() == "axes") *step->add_attribute() = a;
  while (node.input_size() < sizes_from_scales_input(node)) node.add_input("");
  node.add_input(sizes);
  auto* marker = node.add_attribute();
  marker->set_name(kSizesFromScales);
  marker->set_type(::onnx::AttributeProto::INT);
  marker->set_i(1);
  const bool axes =
      std::any_of(node.attribute().begin(), node.attribute().end(), [](const auto& a) { return a.name() == "axes"; });
  if (const int64_t ones = axes ? 0 : leading_unit_scales(node.input(scales_input(node, opset)), graph); ones > 0) {
    auto* unit = node.add_attribute();
    unit->set_name(kUnitScales);
    unit->set_type(::onnx::AttributeProto::INT);
    unit->set_i(ones);
  }
}

void rewrite(::onnx::GraphProto& graph, int opset, DataDependence& data) {
  ::onnx::GraphProto original;
  original.mutable_node()->Swap(graph.mutable_node());
  for (::onnx::NodeProto& node : *original.mutable_node()) {
    for (auto& a : *node.mutable_attribute()) {
      if (a.has_g()) rewrite(*a.mutable_g(), opset, data);
      for (auto& g : *a.mutable_graphs()) rewrite(g, opset, data);
    }
    if (takes_data_scales(node, opset, data)) compute_sizes(node, opset, graph);
    if (takes_data_depth(node, data)) cast_depth(node, graph);
    *graph.add_node() = std::move(node);
  }
}

}  // namespace

int sizes_from_scales_input(const ::onnx::NodeProto& node) { return node.op_type() == "Resize" ? 4 : 2; }

std::optional<::onnx::ModelProto> with_sizes_from_data(const ::onnx::ModelProto& model, const ImportOptions& options) {
  DataDependence data(model, options);
  const int opset = ai_onnx_opset(model);
  bool found = false;
  for_each_node(model.graph(),
                [&](const ::onnx::NodeProto& node) { found = found || takes_sizes_from_data(node, opset, data); });
  if (!found) return std::nullopt;  // no copy of the model and its weights
  ::onnx::ModelProto out = model;
  rewrite(*out.mutable_graph(), opset, data);
  return out;
}

}  // namespace tessera::frontend::onnx
