#include "frontend/onnx/program_graph.h"

#include <algorithm>
#include <unordered_map>

#include "frontend/onnx/converter.h"
#include "frontend/onnx/model_proto.h"
#include "frontend/onnx/tensor_proto.h"

namespace tessera::frontend::onnx {

bool is_step(const ::onnx::NodeProto& node) {
  const auto* entry = ConverterTable::global().find(node.domain(), node.op_type());
  return entry && entry->program_step;
}

std::string node_name(const ::onnx::NodeProto& node) { return node.name().empty() ? node.output(0) : node.name(); }

bool is_ai_onnx(const ::onnx::NodeProto& node) { return node.domain().empty() || node.domain() == "ai.onnx"; }

int ai_onnx_opset(const ::onnx::ModelProto& model) {
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") return static_cast<int>(o.version());
  return -1;
}
std::string origin_of(const ::onnx::NodeProto& node) { return node.op_type() + " (node '" + node_name(node) + "')"; }

void collect_reads(const ::onnx::NodeProto& node, std::set<std::string>& out) {
  for (const auto& in : node.input())
    if (!in.empty()) out.insert(in);
  for_each_subgraph(node, [&](const ::onnx::GraphProto& g) {
    for (const auto& n : g.node()) collect_reads(n, out);
    for (const auto& o : g.output()) out.insert(o.name());
  });
}

bool is_non_tensor(const ::onnx::TypeProto& t) { return t.has_sequence_type() || t.has_optional_type(); }

void collect_non_tensors(const ::onnx::GraphProto& graph, std::set<std::string>& out) {
  static const std::set<std::string> kMakers = {"SequenceConstruct", "SequenceEmpty", "SequenceInsert", "SequenceErase",
                                                "SplitToSequence",   "SequenceMap",   "Optional"};
  for (const auto* list : {&graph.input(), &graph.output(), &graph.value_info()})
    for (const auto& v : *list)
      if (is_non_tensor(v.type())) out.insert(v.name());
  for (const auto& node : graph.node()) {
    const bool identity = node.op_type() == "Identity" && node.input_size() == 1 && out.count(node.input(0));
    if (identity || kMakers.count(node.op_type()))
      for (const auto& o : node.output()) out.insert(o);
    for_each_subgraph(node, [&](const ::onnx::GraphProto& g) { collect_non_tensors(g, out); });
  }
}

namespace {

// Renames what `g` (a subgraph unless `top`) defines apart from `taken`, the names defined so far;
// `renames` maps the names of the scopes around it to their new names.
void rename_apart(::onnx::GraphProto& g, std::unordered_map<std::string, std::string> renames,
                  std::set<std::string>& taken, bool top) {
  auto define = [&](std::string* name) {
    if (name->empty()) return;
    if (!top && taken.count(*name)) {
      std::string unique;
      for (int k = 2; taken.count(unique = *name + "#" + std::to_string(k)); ++k) {
      }
      renames[*name] = unique;
      *name = unique;
    }
    taken.insert(*name);
  };
  auto use = [&](std::string* name) {
    if (auto it = renames.find(*name); it != renames.end()) *name = it->second;
  };
  for (auto& in : *g.mutable_input()) define(in.mutable_name());
  for (auto& init : *g.mutable_initializer()) {
    if (std::none_of(g.input().begin(), g.input().end(), [&](const auto& in) { return in.name() == init.name(); }))
      define(init.mutable_name());
    else use(init.mutable_name());  // an initializer that gives an input its default
  }
  for (auto& node : *g.mutable_node()) {
    for (auto& in : *node.mutable_input()) use(&in);
    for (auto& a : *node.mutable_attribute()) {
      if (a.has_g()) rename_apart(*a.mutable_g(), renames, taken, false);
      for (auto& sub : *a.mutable_graphs()) rename_apart(sub, renames, taken, false);
    }
    for (auto& out : *node.mutable_output()) define(&out);
  }
  for (auto& out : *g.mutable_output()) use(out.mutable_name());
  for (auto& v : *g.mutable_value_info()) use(v.mutable_name());
}

}  // namespace

::onnx::ModelProto with_unique_names(const ::onnx::ModelProto& model) {
  ::onnx::ModelProto out = model;
  std::set<std::string> taken;  // the main graph's names first: they keep their names
  const auto& g = model.graph();
  for (const auto& in : g.input()) taken.insert(in.name());
  for (const auto& init : g.initializer()) taken.insert(init.name());
  for (const auto& node : g.node()) taken.insert(node.output().begin(), node.output().end());
  rename_apart(*out.mutable_graph(), {}, taken, true);
  return out;
}

// Whether the model has an input of symbolic shape (neither an initializer, nor bound, nor given a
// shape).
bool has_symbolic_inputs(const ::onnx::ModelProto& model, const ImportOptions& options) {
  const auto& g = model.graph();
  std::set<std::string> initializers;
  for (const auto& init : g.initializer()) initializers.insert(init.name());
  return std::any_of(g.input().begin(), g.input().end(), [&](const auto& in) {
    if (initializers.count(in.name()) || options.bind.count(in.name()) || options.shapes.count(in.name())) return false;
    const auto& dims = in.type().tensor_type().shape().dim();
    return std::any_of(dims.begin(), dims.end(), [](const auto& d) { return !d.has_dim_value(); });
  });
}

DataDependence::DataDependence(const ::onnx::ModelProto& model, const ImportOptions& options)
    : symbolic_(has_symbolic_inputs(model, options)) {
  const auto& graph = model.graph();
  for (const auto& [name, value] : options.bind) known_[name] = false;
  add_graph(graph);
  for (const auto& in : graph.input())
    if (!known_.count(in.name())) known_[in.name()] = true;
}

bool DataDependence::depends(const std::string& name) {
  auto it = known_.find(name);
  if (it != known_.end()) return it->second;
  known_[name] = true;  // a cycle or an unknown producer: assume the data
  auto p = producers_.find(name);
  bool result = true;
  if (p != producers_.end()) {
    const ::onnx::NodeProto& node = *p->second;
    bool has_subgraph = false;
    for_each_subgraph(node, [&](const ::onnx::GraphProto&) { has_subgraph = true; });
    if (node.op_type() == "Shape" || node.op_type() == "Size") result = false;
    else if (symbolic_ && is_float_cast(node) && from_sizes(node.input(0))) result = true;
    else if (!has_subgraph && !is_step(node)) {
      result = false;
      for (const auto& in : node.input()) result = result || (!in.empty() && depends(in));
    }
  }
  return known_[name] = result;
}

bool DataDependence::is_float_cast(const ::onnx::NodeProto& node) {
  if (node.op_type() != "Cast" || !is_ai_onnx(node) || node.input_size() != 1) return false;
  for (const auto& a : node.attribute()) {
    if (a.name() != "to") continue;
    try {
      return dtype_from_onnx(static_cast<int>(a.i()), "Cast's to").is_float();
    } catch (const Error&) {
      return false;  // a type Tessera lacks (string): its converter names it
    }
  }
  return false;
}

bool DataDependence::from_sizes(const std::string& name) {
  if (auto it = from_sizes_.find(name); it != from_sizes_.end()) return it->second;
  from_sizes_[name] = false;  // a cycle: none
  auto p = producers_.find(name);
  bool result = false;
  if (p != producers_.end()) {
    const ::onnx::NodeProto& node = *p->second;
    result = node.op_type() == "Shape" || node.op_type() == "Size";
    for (const auto& in : node.input()) result = result || (!in.empty() && from_sizes(in));
  }
  return from_sizes_[name] = result;
}

std::vector<std::string> DataDependence::values_read(const ::onnx::NodeProto& node) {
  std::vector<std::string> out;
  const ConverterTable::Entry* entry = ConverterTable::global().find(node.domain(), node.op_type());
  if (!entry) return out;
  const std::vector<int>& run_time = entry->run_time_inputs;
  for (int i : entry->value_inputs)
    if (i < node.input_size() && !node.input(i).empty() && depends(node.input(i)) &&
        std::find(run_time.begin(), run_time.end(), i) == run_time.end())
      out.push_back(node.input(i));
  return out;
}

void DataDependence::add_graph(const ::onnx::GraphProto& g) {
  for (const auto& init : g.initializer()) known_[init.name()] = false;
  for (const auto& node : g.node()) {
    for (const auto& out : node.output()) producers_[out] = &node;
    for_each_subgraph(node, [&](const ::onnx::GraphProto& sub) {
      for (const auto& in : sub.input()) known_[in.name()] = true;
      add_graph(sub);
    });
  }
}

bool needs_program(const ::onnx::ModelProto& model, const ImportOptions& options) {
  for (const auto* list : {&model.graph().input(), &model.graph().output()})
    for (const auto& v : *list)
      if (is_non_tensor(v.type())) return true;
  DataDependence data(model, options);
  bool needs = false;
  for_each_node(model.graph(), [&](const ::onnx::NodeProto& node) {
    if (!needs && is_step(node))
      needs = node.op_type() != "If" || (node.input_size() > 0 && data.depends(node.input(0)));
  });
  return needs;
}

std::string program_steps(const ::onnx::GraphProto& graph) {
  std::string out;
  int count = 0;
  for_each_node(graph, [&](const ::onnx::NodeProto& node) {
    if (!is_step(node) || ++count > 5) return;
    out += (out.empty() ? "" : ", ") + origin_of(node);
  });
  if (count > 5) out += " and " + std::to_string(count - 5) + " more";
  return out;
}

}  // namespace tessera::frontend::onnx
