#include "frontend/onnx/program.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "frontend/onnx/converter.h"
#include "frontend/onnx/model_proto.h"
#include "frontend/onnx/tensor_proto.h"

namespace tessera::frontend::onnx {

using relay_ir::Program;
using relay_ir::ProgramStep;
using runtime::NDArray;

namespace {

// A stage binds an input to its value when a converter needs it as a constant (a shape, an axis,
// a count); binding a larger one would build the stage again for every new value of real data.
constexpr int64_t kMaxBoundElements = 4096;

// ONNX's sequence and optional operators without attributes of their own, by their builtins' names.
const std::map<std::string, std::string> kSequenceBuiltins = {{"Identity", "identity"},
                                                              {"SequenceConstruct", "sequence_construct"},
                                                              {"SequenceEmpty", "sequence_empty"},
                                                              {"SequenceInsert", "sequence_insert"},
                                                              {"SequenceAt", "sequence_at"},
                                                              {"SequenceErase", "sequence_erase"},
                                                              {"SequenceLength", "sequence_length"},
                                                              {"Optional", "optional"},
                                                              {"OptionalHasElement", "optional_has_element"},
                                                              {"OptionalGetElement", "optional_get_element"}};

bool is_step(const ::onnx::NodeProto& node) {
  const auto* entry = ConverterTable::global().find(node.domain(), node.op_type());
  return entry && entry->program_step;
}

std::string node_name(const ::onnx::NodeProto& node) { return node.name().empty() ? node.output(0) : node.name(); }
std::string origin_of(const ::onnx::NodeProto& node) { return node.op_type() + " (node '" + node_name(node) + "')"; }

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
void collect_reads(const ::onnx::NodeProto& node, std::set<std::string>& out) {
  for (const auto& in : node.input())
    if (!in.empty()) out.insert(in);
  for_each_subgraph(node, [&](const ::onnx::GraphProto& g) {
    for (const auto& n : g.node()) collect_reads(n, out);
    for (const auto& o : g.output()) out.insert(o.name());
  });
}

bool is_non_tensor(const ::onnx::TypeProto& t) { return t.has_sequence_type() || t.has_optional_type(); }

// The names of sequence and optional values, in `graph` and its subgraphs: declared so (inputs,
// outputs, value_info), made by a sequence or optional operator, or passed on by Identity.
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

// Which values depend on the data rather than only on constants and shapes: an If whose condition
// does must choose its branch at run time.
class DataDependence {
 public:
  DataDependence(const ::onnx::ModelProto& model, const ImportOptions& options) {
    const auto& graph = model.graph();
    for (const auto& [name, value] : options.bind) known_[name] = false;
    add_graph(graph);
    for (const auto& in : graph.input())
      if (!known_.count(in.name())) known_[in.name()] = true;
  }

  bool depends(const std::string& name) {
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
      else if (!has_subgraph && !is_step(node)) {
        result = false;
        for (const auto& in : node.input()) result = result || (!in.empty() && depends(in));
      }
    }
    return known_[name] = result;
  }

 private:
  void add_graph(const ::onnx::GraphProto& g) {
    for (const auto& init : g.initializer()) known_[init.name()] = false;
    for (const auto& node : g.node()) {
      for (const auto& out : node.output()) producers_[out] = &node;
      for_each_subgraph(node, [&](const ::onnx::GraphProto& sub) {
        for (const auto& in : sub.input()) known_[in.name()] = true;
        add_graph(sub);
      });
    }
  }

  std::unordered_map<std::string, bool> known_;
  std::unordered_map<std::string, const ::onnx::NodeProto*> producers_;
};

// A run of static nodes, imported at the values the executor gives it.
class OnnxStage : public relay_ir::StageSource {
 public:
  OnnxStage(::onnx::ModelProto proto, std::vector<std::string> inputs, std::vector<std::string> constant_names,
            std::shared_ptr<const std::map<std::string, NDArray>> constants, std::string base_dir,
            ConstantEvaluator evaluate)
      : proto_(std::move(proto)),
        inputs_(std::move(inputs)),
        constant_names_(std::move(constant_names)),
        constants_(std::move(constants)),
        base_dir_(std::move(base_dir)),
        evaluate_(std::move(evaluate)) {}

  relay_ir::StageSpecialization specialize(const std::vector<NDArray>& values,
                                           const std::vector<bool>& bound) const override {
    std::vector<bool> b = bound;
    for (;;) {
      try {
        return {import_model_proto(at(values), base_dir_, options(values, b)), b};
      } catch (const BindingRequired& e) {
        if (!bind_more(e, values, b)) throw;
      }
    }
  }

 private:
  // The stage's model with its inputs' element types (the importer takes their shapes as options).
  ::onnx::ModelProto at(const std::vector<NDArray>& values) const {
    ::onnx::ModelProto m = proto_;
    auto add_input = [&](const std::string& name, runtime::DataType dtype) {
      auto* v = m.mutable_graph()->add_input();
      v->set_name(name);
      v->mutable_type()->mutable_tensor_type()->set_elem_type(onnx_type_of(dtype));
    };
    for (size_t i = 0; i < inputs_.size(); ++i) add_input(inputs_[i], values[i].dtype());
    for (const std::string& c : constant_names_) add_input(c, constants_->at(c).dtype());
    return m;
  }

  ImportOptions options(const std::vector<NDArray>& values, const std::vector<bool>& bound) const {
    ImportOptions o;
    o.evaluate = evaluate_;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      if (!bound[i]) {
        o.shapes[inputs_[i]] = values[i].shape();
        continue;
      }
      NDArray copy = NDArray::empty(values[i].shape(), values[i].dtype());  // the build keeps it as a constant
      copy.copy_from(values[i]);
      o.bind[inputs_[i]] = copy;
    }
    for (const std::string& c : constant_names_) o.bind[c] = constants_->at(c);
    return o;
  }

  // Marks the inputs `e` names as bound; false when none is left to bind.
  bool bind_more(const BindingRequired& e, const std::vector<NDArray>& values, std::vector<bool>& bound) const {
    bool more = false;
    for (const std::string& name : e.inputs)
      for (size_t i = 0; i < inputs_.size(); ++i) {
        if (inputs_[i] != name || bound[i]) continue;
        if (values[i].numel() > kMaxBoundElements)
          fail(e.what(), "; '", name, "' holds ", values[i].numel(),
               " values, too many to compile for each of them: compute it from fewer values");
        bound[i] = more = true;
      }
    return more;
  }

  ::onnx::ModelProto proto_;  // the nodes and outputs; inputs are added per specialization
  std::vector<std::string> inputs_;
  std::vector<std::string> constant_names_;
  std::shared_ptr<const std::map<std::string, NDArray>> constants_;
  std::string base_dir_;
  ConstantEvaluator evaluate_;
};

class ProgramBuilder {
 public:
  ProgramBuilder(const ::onnx::ModelProto& model, std::string base_dir, const ImportOptions& options)
      : model_(model),
        base_dir_(std::move(base_dir)),
        options_(options),
        constants_(std::make_shared<std::map<std::string, NDArray>>(options.bind.begin(), options.bind.end())) {
    collect_non_tensors(model.graph(), non_tensors_);
  }

  std::shared_ptr<Program> main() {
    std::vector<std::string> inputs;
    std::set<std::string> initializers;
    for (const auto& init : model_.graph().initializer()) initializers.insert(init.name());
    for (const auto& in : model_.graph().input())
      if (!initializers.count(in.name()) && !options_.bind.count(in.name())) inputs.push_back(in.name());
    return program(model_.graph(), inputs);
  }

 private:
  std::shared_ptr<Program> program(const ::onnx::GraphProto& graph, std::vector<std::string> inputs) {
    for (const auto& init : graph.initializer()) (*constants_)[init.name()] = tensor_from_proto(init, base_dir_);
    auto p = std::make_shared<Program>();
    p->inputs = std::move(inputs);
    bool typed = true;
    for (const auto& out : graph.output()) {
      p->outputs.push_back(out.name());
      const int t = out.type().tensor_type().elem_type();
      typed = typed && t != 0;
      if (typed) p->output_dtypes.push_back(dtype_from_onnx(t, "graph output '" + out.name() + "'"));
    }
    if (!typed) p->output_dtypes.clear();

    // The last node (graph.node_size() for the outputs) that reads each name.
    std::map<std::string, int> last_read;
    for (int i = 0; i < graph.node_size(); ++i) {
      std::set<std::string> reads;
      collect_reads(graph.node(i), reads);
      for (const auto& name : reads) last_read[name] = i;
    }
    for (const auto& name : p->outputs) last_read[name] = graph.node_size();

    std::vector<int> stage;  // node indices
    for (int i = 0; i < graph.node_size(); ++i) {
      if (!is_step(graph.node(i)) && !passes_non_tensor(graph.node(i))) {
        stage.push_back(i);
        continue;
      }
      add_stage(*p, graph, stage, last_read);
      stage.clear();
      p->steps.push_back(step_of(graph.node(i)));
    }
    add_stage(*p, graph, stage, last_read);
    for (const auto& name : p->outputs)
      if (constants_->count(name)) p->constants.emplace_back(name, constants_->at(name));
    for (const ProgramStep& s : p->steps)
      for (const auto& name : s.inputs)
        if (constants_->count(name)) p->constants.emplace_back(name, constants_->at(name));
    return p;
  }

  void add_stage(Program& p, const ::onnx::GraphProto& graph, const std::vector<int>& nodes,
                 const std::map<std::string, int>& last_read) {
    if (nodes.empty()) return;
    if (nodes.size() == 1 && graph.node(nodes[0]).op_type() == "Identity") {  // nothing to compile
      p.steps.push_back(step_of(graph.node(nodes[0])));
      return;
    }
    ::onnx::ModelProto proto;
    proto.set_ir_version(model_.ir_version());
    *proto.mutable_opset_import() = model_.opset_import();
    auto* g = proto.mutable_graph();
    g->set_name(graph.name());
    std::set<std::string> produced, seen;
    std::vector<std::string> inputs, constants;
    for (int i : nodes) {
      const auto& node = graph.node(i);
      for (const auto& in : node.input()) {
        if (in.empty() || produced.count(in) || !seen.insert(in).second) continue;
        (constants_->count(in) ? constants : inputs).push_back(in);
      }
      for (const auto& out : node.output())
        if (!out.empty()) produced.insert(out);
      *g->add_node() = node;
    }
    ProgramStep step;
    step.kind = ProgramStep::Kind::Stage;
    step.inputs = inputs;
    for (int i : nodes)
      for (const auto& out : graph.node(i).output()) {
        auto it = last_read.find(out);
        if (out.empty() || it == last_read.end() || it->second <= nodes.back()) continue;
        step.outputs.push_back(out);
        g->add_output()->set_name(out);
      }
    if (step.outputs.empty()) return;  // nothing after it reads what it computes
    step.origin = "the nodes '" + node_name(graph.node(nodes.front())) + "' to '" +
                  node_name(graph.node(nodes.back())) + "' (" + std::to_string(nodes.size()) + ")";
    step.stage =
        std::make_shared<OnnxStage>(std::move(proto), inputs, constants, constants_, base_dir_, options_.evaluate);
    p.steps.push_back(std::move(step));
  }

  ProgramStep step_of(const ::onnx::NodeProto& node) {
    ProgramStep step;
    step.origin = origin_of(node);
    step.inputs.assign(node.input().begin(), node.input().end());
    step.outputs.assign(node.output().begin(), node.output().end());
    const std::string& op = node.op_type();
    std::map<std::string, const ::onnx::AttributeProto*> attrs;
    for (const auto& a : node.attribute()) attrs[a.name()] = &a;
    auto check_attrs = [&](std::set<std::string> known) {
      for (const auto& [name, a] : attrs)
        if (!known.count(name)) fail(step.origin, ": unknown attribute '", name, "'");
    };
    auto graph_attr = [&](const std::string& name) -> const ::onnx::GraphProto& {
      auto it = attrs.find(name);
      if (it == attrs.end() || !it->second->has_g()) fail(step.origin, ": has no ", name, " graph");
      return it->second->g();
    };
    auto int_attr = [&](const std::string& name, int64_t fallback) {
      auto it = attrs.find(name);
      step.attrs.set(name, it == attrs.end() ? fallback : it->second->i());
    };
    auto ints_attr = [&](const std::string& name) {
      auto it = attrs.find(name);
      if (it != attrs.end())
        step.attrs.set(name, std::vector<int64_t>(it->second->ints().begin(), it->second->ints().end()));
    };
    auto body_inputs = [](const ::onnx::GraphProto& g) {
      std::vector<std::string> names;
      for (const auto& in : g.input()) names.push_back(in.name());
      return names;
    };
    if (op == "If") {
      check_attrs({"then_branch", "else_branch"});
      step.kind = ProgramStep::Kind::If;
      for (const char* branch : {"then_branch", "else_branch"}) {
        step.bodies.push_back(program(graph_attr(branch), {}));
        if (step.bodies.back()->outputs.size() != step.outputs.size())
          fail(step.origin, ": ", branch, " has ", step.bodies.back()->outputs.size(), " outputs, the node ",
               step.outputs.size());
      }
    } else if (op == "Loop") {
      check_attrs({"body"});
      step.kind = ProgramStep::Kind::Loop;
      step.inputs.resize(std::max<size_t>(step.inputs.size(), 2));
      step.bodies.push_back(program(graph_attr("body"), body_inputs(graph_attr("body"))));
    } else if (op == "Scan") {
      const int opset = opset_of(node);
      check_attrs({"body", "num_scan_inputs", "directions", "scan_input_axes", "scan_input_directions",
                   "scan_output_axes", "scan_output_directions"});
      step.kind = ProgramStep::Kind::Scan;
      if (!attrs.count("num_scan_inputs")) fail(step.origin, ": has no num_scan_inputs attribute");
      int_attr("num_scan_inputs", 0);
      step.attrs.set("batched", int64_t{opset < 9});
      for (const char* name :
           {"directions", "scan_input_axes", "scan_input_directions", "scan_output_axes", "scan_output_directions"})
        ints_attr(name);
      step.bodies.push_back(program(graph_attr("body"), body_inputs(graph_attr("body"))));
    } else if (op == "SequenceMap") {
      check_attrs({"body"});
      step.kind = ProgramStep::Kind::SequenceMap;
      step.bodies.push_back(program(graph_attr("body"), body_inputs(graph_attr("body"))));
    } else {
      step.kind = ProgramStep::Kind::Builtin;
      if (op == "NonZero") {
        check_attrs({});
        step.builtin = "nonzero";
      } else if (op == "Compress") {
        check_attrs({"axis"});
        step.builtin = "compress";
        if (attrs.count("axis")) int_attr("axis", 0);
      } else if (op == "Unique") {
        check_attrs({"axis", "sorted"});
        step.builtin = "unique";
        if (attrs.count("axis")) int_attr("axis", 0);
        int_attr("sorted", 1);
      } else if (op == "NonMaxSuppression") {
        check_attrs({"center_point_box"});
        step.builtin = "non_max_suppression";
        int_attr("center_point_box", 0);
      } else if (op == "SplitToSequence") {
        check_attrs({"axis", "keepdims"});
        step.builtin = "split_to_sequence";
        int_attr("axis", 0);
        int_attr("keepdims", 1);
      } else if (op == "ConcatFromSequence") {
        check_attrs({"axis", "new_axis"});
        if (!attrs.count("axis")) fail(step.origin, ": has no axis attribute");
        step.builtin = "concat_from_sequence";
        int_attr("axis", 0);
        int_attr("new_axis", 0);
      } else if (kSequenceBuiltins.count(op)) {
        check_attrs({"dtype", "type"});  // SequenceEmpty's and Optional's element types: values carry theirs
        step.builtin = kSequenceBuiltins.at(op);
      } else {
        fail(step.origin, ": not a program step");
      }
    }
    return step;
  }

  // Identity of a sequence or an optional: a step, since stages compute tensors only.
  bool passes_non_tensor(const ::onnx::NodeProto& node) const {
    return node.op_type() == "Identity" && node.input_size() == 1 && non_tensors_.count(node.input(0));
  }

  int opset_of(const ::onnx::NodeProto& node) const {
    for (const auto& o : model_.opset_import())
      if (o.domain() == node.domain() || (node.domain().empty() && o.domain() == "ai.onnx"))
        return static_cast<int>(o.version());
    return -1;
  }

  const ::onnx::ModelProto& model_;
  std::string base_dir_;
  const ImportOptions& options_;
  std::shared_ptr<std::map<std::string, NDArray>> constants_;  // every graph's initializers, the bound inputs
  std::set<std::string> non_tensors_;                          // collect_non_tensors
};

}  // namespace

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

std::shared_ptr<const Program> import_program(const std::string& path, const ImportOptions& options, bool always) {
  return with_model_file(
      path, [&](const ::onnx::ModelProto& model, const std::string& dir) -> std::shared_ptr<const Program> {
        if (!always && !needs_program(model, options)) return nullptr;
        const std::vector<runtime::BufferSpec> tensors = model_inputs(path, options);  // checks every operator too
        std::shared_ptr<Program> program = ProgramBuilder(model, dir, options).main();
        for (const std::string& name : program->inputs) {
          relay_ir::ProgramInputType t;
          auto declared = std::find_if(tensors.begin(), tensors.end(), [&](const auto& s) { return s.name == name; });
          if (declared != tensors.end()) t.tensor = *declared;
          for (const auto& in : model.graph().input()) {
            if (in.name() != name) continue;
            if (in.type().has_sequence_type()) t.kind = relay_ir::ProgramInputType::Sequence;
            if (in.type().has_optional_type()) t.kind = relay_ir::ProgramInputType::Optional;
          }
          program->input_types.push_back(std::move(t));
        }
        return program;
      });
}

}  // namespace tessera::frontend::onnx
