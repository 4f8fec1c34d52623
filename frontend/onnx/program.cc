#include "frontend/onnx/program.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "frontend/onnx/converter.h"
#include "frontend/onnx/model_proto.h"
#include "frontend/onnx/program_graph.h"
#include "frontend/onnx/program_stage.h"
#include "frontend/onnx/recurrence_scan.h"
#include "frontend/onnx/sizes_from_data.h"
#include "frontend/onnx/tensor_proto.h"

namespace tessera::frontend::onnx {

using runtime::NDArray;
using runtime::ProgramPlan;
using runtime::ProgramStep;

namespace {

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

// ONNX's reductions, run as steps where the data gives their axes, by their builtins' names.
const std::map<std::string, std::string> kReductionBuiltins = {{"ReduceSum", "reduce_sum"},
                                                               {"ReduceMean", "reduce_mean"},
                                                               {"ReduceMax", "reduce_max"},
                                                               {"ReduceMin", "reduce_min"},
                                                               {"ReduceProd", "reduce_prod"},
                                                               {"ReduceL1", "reduce_l1"},
                                                               {"ReduceL2", "reduce_l2"},
                                                               {"ReduceLogSum", "reduce_log_sum"},
                                                               {"ReduceLogSumExp", "reduce_log_sum_exp"},
                                                               {"ReduceSumSquare", "reduce_sum_square"}};

class ProgramBuilder {
 public:
  ProgramBuilder(const ::onnx::ModelProto& model, std::string base_dir, const ImportOptions& options)
      : model_(model),
        base_dir_(std::move(base_dir)),
        options_(options),
        constants_(std::make_shared<std::map<std::string, NDArray>>(options.bind.begin(), options.bind.end())),
        data_(model, options) {
    collect_non_tensors(model.graph(), non_tensors_);
  }

  // The stages of every program built so far, by ProgramStep::stage.
  std::vector<std::shared_ptr<const relay_ir::StageSource>> stages;

  std::shared_ptr<ProgramPlan> main() {
    std::vector<std::string> inputs;
    std::set<std::string> initializers;
    for (const auto& init : model_.graph().initializer()) initializers.insert(init.name());
    for (const auto& in : model_.graph().input())
      if (!initializers.count(in.name()) && !options_.bind.count(in.name())) inputs.push_back(in.name());
    return program(model_.graph(), inputs);
  }

 private:
  std::shared_ptr<ProgramPlan> program(const ::onnx::GraphProto& graph, std::vector<std::string> inputs) {
    for (const auto& init : graph.initializer()) (*constants_)[init.name()] = tensor_from_proto(init, base_dir_);
    auto p = std::make_shared<ProgramPlan>();
    p->inputs = std::move(inputs);
    bool typed = true;
    for (const auto& out : graph.output()) {
      p->outputs.push_back(out.name());
      const auto& tensor = out.type().tensor_type();
      typed = typed && tensor.elem_type() != 0;
      if (!typed) continue;
      runtime::ProgramOutputType type{dtype_from_onnx(tensor.elem_type(), "graph output '" + out.name() + "'"), {}};
      if (tensor.has_shape()) {
        std::vector<int64_t> shape;
        for (const auto& d : tensor.shape().dim())
          if (d.has_dim_value()) shape.push_back(d.dim_value());
        if (static_cast<int>(shape.size()) == tensor.shape().dim_size()) type.shape = shape;
      }
      p->output_types.push_back(type);
    }
    if (!typed) p->output_types.clear();

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
      if (auto value = constant_node_value(graph.node(i))) {
        // A constant, not a stage's output: the stages and bodies that read it take its value, as
        // they do an initializer's (a stage built for every size needs its axes and shapes so).
        (*constants_)[graph.node(i).output(0)] = *value;
        continue;
      }
      if (shaped_by_the_data(graph, graph.node(i))) {
        add_stage(*p, graph, stage, last_read);
        stage.clear();
        p->steps.push_back(step_of(graph.node(i)));
        continue;
      }
      if (!is_step(graph.node(i)) && !passes_non_tensor(graph.node(i))) {
        if (reads_data_as_constant(graph, stage, graph.node(i))) {
          add_stage(*p, graph, stage, last_read);
          stage.clear();
        }
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

  void add_stage(ProgramPlan& p, const ::onnx::GraphProto& graph, const std::vector<int>& nodes,
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
    step.stage = static_cast<int>(stages.size());
    stages.push_back(onnx_stage(std::move(proto), inputs, constants, constants_, base_dir_, options_.evaluate));
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
      } else if (op == "Reshape") {
        check_attrs({"allowzero"});
        step.builtin = "reshape";
        int_attr("allowzero", 0);
      } else if (op == "Expand") {
        check_attrs({});
        step.builtin = "expand";
      } else if (op == "TopK") {  // its results sorted, which also answers sorted=0
        check_attrs({"axis", "largest", "sorted"});
        step.builtin = "topk";
        int_attr("axis", -1);
        int_attr("largest", 1);
      } else if (op == "Split") {  // given its lengths (from opset 13), so without num_outputs
        check_attrs({"axis"});
        step.builtin = "split";
        int_attr("axis", 0);
      } else if (op == "CumSum" || op == "CumProd") {
        check_attrs({"exclusive", "reverse"});
        step.builtin = op == "CumSum" ? "cumsum" : "cumprod";
        int_attr("exclusive", 0);
        int_attr("reverse", 0);
      } else if (kReductionBuiltins.count(op)) {  // its axes an input (ReduceSum from opset 13, the rest 18)
        check_attrs({"keepdims", "noop_with_empty_axes"});
        step.builtin = kReductionBuiltins.at(op);
        int_attr("keepdims", 1);
        int_attr("noop_with_empty_axes", 0);
      } else if (op == "Range") {
        check_attrs({});
        step.builtin = "range";
      } else if (op == "MelWeightMatrix") {  // its sizes (and rate, edges) given by the data
        check_attrs({"output_datatype"});
        step.builtin = "mel_weight_matrix";
        auto it = attrs.find("output_datatype");
        step.attrs.set_dtype("dtype", dtype_from_onnx(it == attrs.end() ? 1 : static_cast<int>(it->second->i()),
                                                      step.origin + " output_datatype"));
      } else if (op == "STFT") {  // its frame length given by the data
        check_attrs({"onesided"});
        step.builtin = "stft";
        int_attr("onesided", 1);
      } else if (op == "Dropout") {  // its ratio or training_mode given by the data (opset 12 on)
        check_attrs({"seed"});
        step.builtin = "dropout";
      } else if (op == kResizeOutputSize) {
        check_attrs({"axes"});
        step.builtin = "resize_output_size";
        ints_attr("axes");
      } else if (op == "Squeeze" || op == "Unsqueeze" || op == "Slice") {
        check_attrs({});
        step.builtin = op == "Squeeze" ? "squeeze" : op == "Unsqueeze" ? "unsqueeze" : "slice";
      } else if (kSequenceBuiltins.count(op)) {
        check_attrs({"dtype", "type"});  // SequenceEmpty's and Optional's element types: values carry theirs
        step.builtin = kSequenceBuiltins.at(op);
      } else {
        fail(step.origin, ": not a program step");
      }
    }
    return step;
  }

  // The value of an ONNX Constant node of a tensor or numbers; none for any other node (and for a
  // sparse or string Constant, which the stage's converter refuses by name).
  std::optional<NDArray> constant_node_value(const ::onnx::NodeProto& node) const {
    if (node.op_type() != "Constant" || !is_ai_onnx(node) || node.attribute_size() != 1 || node.output_size() != 1)
      return std::nullopt;
    const auto& a = node.attribute(0);
    auto numbers = [](const auto& values, bool scalar) {
      using T = std::decay_t<decltype(values[0])>;
      const std::vector<int64_t> shape = scalar ? std::vector<int64_t>{} : std::vector<int64_t>{values.size()};
      NDArray out = NDArray::empty(shape, std::is_same_v<T, float> ? runtime::kFloat32 : runtime::kInt64);
      std::copy(values.begin(), values.end(), out.data_as<T>());
      return out;
    };
    if (a.name() == "value" && a.has_t()) return tensor_from_proto(a.t(), base_dir_);
    if (a.name() == "value_int") return numbers(std::vector<int64_t>{a.i()}, true);
    if (a.name() == "value_ints") return numbers(std::vector<int64_t>(a.ints().begin(), a.ints().end()), false);
    if (a.name() == "value_float") return numbers(std::vector<float>{a.f()}, true);
    if (a.name() == "value_floats") return numbers(std::vector<float>(a.floats().begin(), a.floats().end()), false);
    return std::nullopt;
  }

  // Whether `node` reads as a constant (a shape, a count, axes) a value that `stage` computes from
  // the data: the stage ends before it, so that the value reaches it as an input, which its stage
  // binds.
  bool reads_data_as_constant(const ::onnx::GraphProto& graph, const std::vector<int>& stage,
                              const ::onnx::NodeProto& node) {
    for (const std::string& value : data_.values_read(node))
      for (int s : stage)
        for (const auto& out : graph.node(s).output())
          if (out == value) return true;
    return false;
  }

  // An operator whose output shape values the data gives set (an input of the model, or a value
  // computed from one): Reshape's and Expand's target, Squeeze's or Unsqueeze's axes, Slice's starts, ends,
  // axes or steps, TopK's k, Split's lengths, a reduction's axes, and a Range that stages cannot
  // take as sizes (a delta from the data, or floats: a window's length), the output sizes of a
  // Resize by scales from the data (frontend/onnx/sizes_from_data.h); CumSum's or CumProd's
  // axis, which a kernel needs as a constant; and Dropout's ratio or training_mode, which decide
  // whether it is an error; MelWeightMatrix's inputs and STFT's frame length, which size the
  // transform's coefficients. A step (runtime/program_builtins.h)
  // computes it while the model runs, so the stages around it are built for every shape (a module
  // can hold them) rather than for each value met.
  bool shaped_by_the_data(const ::onnx::GraphProto& graph, const ::onnx::NodeProto& node) {
    if (node.op_type() == kResizeOutputSize) return true;
    static const std::set<std::string> kHostSteps = {"Reshape", "Squeeze", "Unsqueeze",      "TopK",
                                                     "Slice",   "Split",   "Expand",         "CumSum",
                                                     "CumProd", "Dropout", "MelWeightMatrix"};
    const std::vector<std::string> values = data_.values_read(node);
    if (values.empty()) return false;
    if (node.op_type() == "STFT")
      return node.input_size() > 3 && std::count(values.begin(), values.end(), node.input(3));
    if (node.op_type() != "Range") return kHostSteps.count(node.op_type()) || kReductionBuiltins.count(node.op_type());
    if (node.input_size() == 3 && std::count(values.begin(), values.end(), node.input(2))) return true;
    for (const auto& in : node.input())
      if (auto dtype = declared_dtype(graph, in)) return dtype->is_float();
    return false;
  }

  // The element type of a constant (an initializer too) or an input of `graph` or the model's.
  std::optional<runtime::DataType> declared_dtype(const ::onnx::GraphProto& graph, const std::string& name) const {
    if (auto c = constants_->find(name); c != constants_->end()) return c->second.dtype();
    for (const ::onnx::GraphProto* g : {&graph, &model_.graph()}) {
      for (const auto& in : g->input())
        if (in.name() == name && in.type().has_tensor_type() && in.type().tensor_type().elem_type() != 0)
          return dtype_from_onnx(in.type().tensor_type().elem_type(), "input '" + name + "'");
    }
    return std::nullopt;
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
  // Every graph's initializers and Constants (their names unique: with_unique_names), the bound inputs.
  std::shared_ptr<std::map<std::string, NDArray>> constants_;
  std::set<std::string> non_tensors_;                          // collect_non_tensors
  DataDependence data_;
};

// What a sequence input declares of its elements: their dtype, and their shape (an unnamed
// dimension a variable of its own).
void declare_elements(const ::onnx::TypeProto& element, runtime::ProgramInputType& t) {
  if (!element.has_tensor_type() || element.tensor_type().elem_type() == 0) return;
  const auto& tensor = element.tensor_type();
  t.tensor.dtype = dtype_from_onnx(tensor.elem_type(), "sequence input '" + t.tensor.name + "'");
  t.element_dtype = true;
  if (!tensor.has_shape()) return;
  for (int d = 0; d < tensor.shape().dim_size(); ++d) {
    const auto& dim = tensor.shape().dim(d);
    if (dim.has_dim_value()) t.tensor.shape.push_back(dim.dim_value());
    else
      t.tensor.shape.push_back(runtime::ShapeExpr::var(
          dim.dim_param().empty() ? t.tensor.name + "[]." + std::to_string(d) : dim.dim_param()));
  }
  t.element_shape = true;
}

bool has_subgraphs(const ::onnx::GraphProto& graph) {
  return std::any_of(graph.node().begin(), graph.node().end(), [](const auto& node) {
    bool found = false;
    for_each_subgraph(node, [&](const ::onnx::GraphProto&) { found = true; });
    return found;
  });
}

// Whether the main graph has a recurrent node: with symbolic inputs, its sequence length may be.
bool has_recurrence(const ::onnx::ModelProto& model) {
  const auto& nodes = model.graph().node();
  return std::any_of(nodes.begin(), nodes.end(), [](const auto& n) {
    return n.domain().empty() && (n.op_type() == "RNN" || n.op_type() == "GRU" || n.op_type() == "LSTM");
  });
}

// Whether a node of the main graph reads as a constant (a shape, a count, axes) a value that the
// data gives (an input, or a value computed from one): no single graph, of any sizes, computes it.
bool sets_shapes_from_the_data(const ::onnx::ModelProto& model, const ImportOptions& options) {
  DataDependence data(model, options);
  const auto& nodes = model.graph().node();
  return std::any_of(nodes.begin(), nodes.end(), [&](const auto& node) { return !data.values_read(node).empty(); });
}

}  // namespace

std::shared_ptr<const relay_ir::Program> import_program(const std::string& path, const ImportOptions& options,
                                                        bool always) {
  return with_model_file(
      path, [&](const ::onnx::ModelProto& file, const std::string& dir) -> std::shared_ptr<const relay_ir::Program> {
        std::optional<::onnx::ModelProto> renamed;
        if (has_subgraphs(file.graph())) renamed = with_unique_names(file);
        const ::onnx::ModelProto& model = renamed ? *renamed : file;
        // Recurrences of symbolic length as Scans, or sizes that the data gives as other values made
        // sizes (frontend/onnx/sizes_from_data.h).
        std::optional<::onnx::ModelProto> rewritten = with_sizes_from_data(model, options);
        // A model of symbolic sizes whose inputs set shapes is a program even where it has no step
        // (built per size, it would still need their values).
        const bool symbolic = has_symbolic_inputs(model, options);
        if (!rewritten && !always && !needs_program(model, options) &&
            !(symbolic && sets_shapes_from_the_data(model, options))) {
          const std::vector<SymbolicRecurrence> loops = symbolic && has_recurrence(model)
                                                            ? symbolic_recurrences(model, dir, options)
                                                            : std::vector<SymbolicRecurrence>{};
          if (loops.empty()) return nullptr;
          rewritten = recurrences_as_scans(model, loops, dir);
          if (!needs_program(*rewritten, options)) return nullptr;  // too old an opset to rewrite
        }
        const std::vector<runtime::BufferSpec> tensors = model_inputs(path, options);  // checks every operator too
        ProgramBuilder builder(rewritten ? *rewritten : model, dir, options);
        std::shared_ptr<ProgramPlan> program = builder.main();
        for (const std::string& name : program->inputs) {
          runtime::ProgramInputType t;
          t.tensor.name = name;
          auto declared = std::find_if(tensors.begin(), tensors.end(), [&](const auto& s) { return s.name == name; });
          if (declared != tensors.end()) t.tensor = *declared;
          for (const auto& in : model.graph().input()) {
            if (in.name() != name) continue;
            if (in.type().has_sequence_type()) {
              t.kind = runtime::ProgramInputType::Sequence;
              declare_elements(in.type().sequence_type().elem_type(), t);
            }
            if (in.type().has_optional_type()) t.kind = runtime::ProgramInputType::Optional;
          }
          program->input_types.push_back(std::move(t));
        }
        return std::make_shared<const relay_ir::Program>(relay_ir::Program{program, std::move(builder.stages)});
      });
}

}  // namespace tessera::frontend::onnx
