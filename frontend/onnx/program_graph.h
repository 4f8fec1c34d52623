// Walking ONNX graphs for the program builder (frontend/onnx/program.cc): subgraphs, the nodes
// that are a program's steps, the names that are sequences or optionals, what a node reads.
#pragma once
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <onnx/onnx_pb.h>

#include "frontend/onnx/importer.h"

namespace tessera::frontend::onnx {

// A node the program executor runs between stages (control flow, a data-dependent shape, a
// sequence or optional operator: ConverterTable's program steps).
bool is_step(const ::onnx::NodeProto& node);
std::string node_name(const ::onnx::NodeProto& node);  // its name, else its first output's
bool is_ai_onnx(const ::onnx::NodeProto& node);        // of the default domain ("" or "ai.onnx")
int ai_onnx_opset(const ::onnx::ModelProto& model);    // the version it imports of it; -1: none
std::string origin_of(const ::onnx::NodeProto& node);  // "Loop (node 'decode')"

template <typename F>
void for_each_subgraph(const ::onnx::NodeProto& node, F f) {
  for (const auto& a : node.attribute()) {
    if (a.has_g()) f(a.g());
    for (const auto& g : a.graphs()) f(g);
  }
}

template <typename F>
void for_each_node(const ::onnx::GraphProto& graph, F f) {
  for (const auto& node : graph.node()) {
    f(node);
    for_each_subgraph(node, [&](const ::onnx::GraphProto& g) { for_each_node(g, f); });
  }
}

// The names a node reads, its subgraphs' reads included (a body reads values around it by name).
void collect_reads(const ::onnx::NodeProto& node, std::set<std::string>& out);

bool is_non_tensor(const ::onnx::TypeProto& t);  // a sequence or an optional
// The names of sequence and optional values, in `graph` and its subgraphs: declared so (inputs,
// outputs, value_info), made by a sequence or optional operator, or passed on by Identity.
void collect_non_tensors(const ::onnx::GraphProto& graph, std::set<std::string>& out);

// `model` with each name that a subgraph defines (an input, an initializer, a node's output) and
// the model defines elsewhere too renamed apart ("name#2"), and its uses where that definition is
// the one in scope: ONNX scopes names per graph (optimum's merged decoders compute
// '/model/decoder/Cast_output_0' in both branches of their If, from the data in one and from the
// sizes in the other), while the program builder's analyses know a value by its name.
::onnx::ModelProto with_unique_names(const ::onnx::ModelProto& model);

// Whether the model has an input of symbolic shape (neither an initializer, nor bound, nor given a
// shape).
bool has_symbolic_inputs(const ::onnx::ModelProto& model, const ImportOptions& options);

// Which values depend on the data rather than only on constants and shapes (a Shape's output does
// not): an If whose condition does chooses its branch at run time, and an input that sets a shape
// or a count and does is cut from the stage that computes it, to be taken as a value. In a model
// of symbolic sizes, a float cast from the sizes (a scale or size computed in float, floor(H *
// 1.5)) counts as the data too: the import's shape arithmetic keeps integer expressions, so the run
// computes it.
class DataDependence {
 public:
  DataDependence(const ::onnx::ModelProto& model, const ImportOptions& options);
  bool depends(const std::string& name);
  // The inputs `node` reads as constants (its converter's value inputs: a shape, a count, axes)
  // whose values depend on the data.
  std::vector<std::string> values_read(const ::onnx::NodeProto& node);

 private:
  void add_graph(const ::onnx::GraphProto& g);
  static bool is_float_cast(const ::onnx::NodeProto& node);
  bool from_sizes(const std::string& name);  // computed from a Shape or Size

  bool symbolic_;
  std::unordered_map<std::string, bool> known_, from_sizes_;
  std::unordered_map<std::string, const ::onnx::NodeProto*> producers_;
};

}  // namespace tessera::frontend::onnx
