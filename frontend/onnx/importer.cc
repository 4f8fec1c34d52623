#include "frontend/onnx/importer.h"

#include <algorithm>
#include <optional>
#include <set>
#include <unordered_map>

#include <onnx/onnx_pb.h>

#include "frontend/onnx/converter.h"
#include "frontend/onnx/dim_values.h"
#include "frontend/onnx/model_proto.h"
#include "frontend/onnx/recurrence_scan.h"
#include "frontend/onnx/tensor_proto.h"
#include "relay_ir/functor.h"
#include "relay_ir/transforms/infer_type.h"
#include "runtime/element.h"
#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/dimension_must_equal.h"
#include "tensor_ir/op.h"
#include "tensor_ir/shape_expr.h"

namespace tessera::frontend::onnx {

using relay_ir::Expr;

namespace {

// Opsets before 7 are accepted too: where an operator changed since, its converter sees the
// opset, and attributes of old versions it does not know (consumed_inputs, is_test, ...) are
// rejected by name, never ignored.
constexpr int kMinOpset = 1;

// How a caller fixes an input's shape, in Python and on the command line.
std::string how_to_give_shape(const std::string& input) {
  return "give its shape with shapes={'" + input + "': (...)} in Python or --shape " + input +
         "=D0,D1,... on the command line";
}

class Importer {
 public:
  Importer(const ::onnx::ModelProto& model, std::string base_dir, const ImportOptions& options)
      : model_(model), graph_(model.graph()), base_dir_(std::move(base_dir)), options_(options) {}

  // Makes run() a probe that collects in `found` the recurrent nodes of symbolic sequence length
  // instead of failing on them, each imported as values of its output types (never to be built).
  void collect_symbolic_recurrences(std::vector<SymbolicRecurrence>& found) { recurrences_ = &found; }

  relay_ir::Module run() {
    check_model();
    if (program_)
      fail("the model has control flow decided at run time or outputs whose size depends on the data (",
           program_steps(graph_),
           "): it runs as a program of compiled stages (tessera.onnx.load and tessera.build "
           "in Python), not as one static graph");
    for (const auto& init : graph_.initializer())
      values_[init.name()] = relay_ir::constant(tensor_from_proto(init, base_dir_));
    read_inputs();
    lift_initializers();
    for (const auto& node : graph_.node()) convert(node);
    std::vector<Expr> outputs;
    for (const auto& out : graph_.output()) {
      if (auto d = dim_values_.find(out.name()); d != dim_values_.end()) {
        outputs.push_back(shape_tensor(d->second, out.name()));
        continue;
      }
      auto it = values_.find(out.name());
      if (it == values_.end() || !it->second) fail("ONNX graph output '", out.name(), "' is not produced by any node");
      outputs.push_back(it->second);
    }
    if (outputs.empty()) fail("ONNX graph has no outputs");
    Expr body = outputs.size() == 1 ? outputs[0] : relay_ir::tuple(outputs);
    relay_ir::Module m(relay_ir::function(params_, body));
    return relay_ir::infer_type(m);
  }

  std::vector<runtime::BufferSpec> inputs() {
    check_model();
    return declared_inputs();
  }

 private:
  void check_model() {
    read_opset();
    check_nodes();
    program_ = needs_program(model_, options_);
    check_operators(graph_);
  }

  // The ai.onnx opset; a model of ai.onnx.ml operators only may import none.
  void read_opset() {
    opset_ = -1;
    bool ml = false;
    for (const auto& o : model_.opset_import()) {
      if (o.domain().empty() || o.domain() == "ai.onnx") opset_ = static_cast<int>(o.version());
      ml = ml || o.domain() == "ai.onnx.ml";
    }
    if (opset_ < 0 && !ml) fail("ONNX model imports no ai.onnx opset");
    if (opset_ < 0) {
      for (const auto& node : graph_.node())
        if (node.domain().empty() || node.domain() == "ai.onnx")
          fail("ONNX model imports no ai.onnx opset, but node '", node.name(), "' is ", node.op_type());
      return;
    }
    if (opset_ < kMinOpset)
      fail("ONNX model uses opset ", opset_, "; Tessera supports opsets ", kMinOpset, " and newer");
  }

  // Every node has an output: error messages and graph origins name an unnamed node by its first.
  void check_nodes() {
    for (int i = 0; i < graph_.node_size(); ++i)
      if (graph_.node(i).output_size() == 0)
        fail("ONNX node ", i, " (", graph_.node(i).op_type(), ", '", graph_.node(i).name(), "') has no outputs");
  }

  // The opset the model imports for `domain` (ai.onnx for ""), -1 for none.
  int opset_of(const std::string& domain) const {
    if (domain.empty() || domain == "ai.onnx") return opset_;
    for (const auto& o : model_.opset_import())
      if (o.domain() == domain) return static_cast<int>(o.version());
    return -1;
  }

  static bool is_if(const ::onnx::NodeProto& node) { return node.op_type() == "If" && node.domain().empty(); }

  // One error for every unsupported operator of `graph`, before anything is converted: of a
  // program, in every subgraph; of a static graph, an If's branches when one is chosen.
  void check_operators(const ::onnx::GraphProto& graph) {
    std::map<std::string, std::vector<std::string>> unsupported;  // "Op (opset N): reason" -> nodes
    collect_unsupported(graph, unsupported);
    if (unsupported.empty()) return;
    std::string msg = "the ONNX model uses " + std::to_string(unsupported.size()) + " unsupported operator(s):";
    for (const auto& [op, nodes] : unsupported) {
      msg += "\n  " + op + " — node" + (nodes.size() > 1 ? "s " : " ");
      for (size_t i = 0; i < nodes.size() && i < 5; ++i) msg += (i ? ", '" : "'") + nodes[i] + "'";
      if (nodes.size() > 5) msg += " and " + std::to_string(nodes.size() - 5) + " more";
    }
    fail(msg);
  }

  void collect_unsupported(const ::onnx::GraphProto& graph, std::map<std::string, std::vector<std::string>>& out) {
    for (const auto& node : graph.node()) {
      const auto* entry = ConverterTable::global().find(node.domain(), node.op_type());
      if (entry && entry->program_step) {  // of a static graph, only an If of a known condition
        for (const auto& a : node.attribute()) {
          if (!program_) break;
          if (a.has_g()) collect_unsupported(a.g(), out);
          for (const auto& g : a.graphs()) collect_unsupported(g, out);
        }
        continue;
      }
      if (entry && entry->convert) continue;
      std::string domain = node.domain().empty() ? "" : node.domain() + ".";
      std::string key = domain + node.op_type() + " (opset " + std::to_string(opset_of(node.domain())) + ")";
      if (entry) key += ": " + entry->unsupported;
      else if (!node.domain().empty() && node.domain() != "ai.onnx" && node.domain() != "ai.onnx.ml")
        key += ": operators of domain " + node.domain() + " are not supported";
      out[key].push_back(node.name().empty() ? node.output(0) : node.name());
    }
  }

  // The tensor inputs to give at run time, as declared (bound ones, initializers and a program's
  // sequences and optionals aside): a dimension with no value is a variable named by its
  // dim_param, or `input.d` when it has none.
  std::vector<runtime::BufferSpec> declared_inputs() {
    std::set<std::string> used_options;
    std::vector<runtime::BufferSpec> inputs;
    std::set<std::string> initializers;
    for (const auto& init : graph_.initializer()) initializers.insert(init.name());
    for (const auto& in : graph_.input()) {
      const std::string& name = in.name();
      if (initializers.count(name)) continue;  // an initializer listed as an input (IR version < 4)
      if (options_.bind.count(name)) {
        used_options.insert(name);
        continue;
      }
      if (!in.type().has_tensor_type() && program_ && (in.type().has_sequence_type() || in.type().has_optional_type()))
        continue;  // a program's value (frontend/onnx/program.h)
      if (!in.type().has_tensor_type())
        fail("ONNX graph input '", name, "' is neither a tensor, a sequence nor an optional (maps are not supported)");
      const auto& tt = in.type().tensor_type();
      runtime::BufferSpec spec{name, {}, dtype_from_onnx(tt.elem_type(), "graph input '" + name + "'")};
      if (auto s = options_.shapes.find(name); s != options_.shapes.end()) {
        spec.shape = runtime::symbolic_shape(s->second);
        used_options.insert(name);
        if (tt.has_shape() && tt.shape().dim_size() != static_cast<int>(s->second.size()))
          fail("graph input '", name, "' has ", tt.shape().dim_size(), " dimensions, the given shape ",
               runtime::shape_str(s->second), " has ", s->second.size());
      } else {
        if (!tt.has_shape()) fail("graph input '", name, "' has no shape in the model; ", how_to_give_shape(name));
        for (int d = 0; d < tt.shape().dim_size(); ++d) {
          const auto& dim = tt.shape().dim(d);
          std::string var = dim.dim_param().empty() ? name + "." + std::to_string(d) : dim.dim_param();
          for (auto same = options_.same_dims.find(var); same != options_.same_dims.end();
               same = options_.same_dims.find(var))
            var = same->second;
          if (dim.has_dim_value()) spec.shape.push_back(dim.dim_value());
          else if (auto e = options_.declared_dims.find(var); e != options_.declared_dims.end())
            spec.shape.push_back(e->second);
          else spec.shape.push_back(runtime::ShapeExpr::var(var));
        }
      }
      inputs.push_back(std::move(spec));
    }
    for (const auto& [name, s] : options_.shapes)
      if (!used_options.count(name)) fail("shapes: the model has no graph input '", name, "'");
    for (const auto& [name, v] : options_.bind)
      if (!used_options.count(name)) fail("bind: the model has no graph input '", name, "'");
    return inputs;
  }

  void read_inputs() {
    for (const auto& [name, value] : options_.bind) values_[name] = relay_ir::constant(value);
    for (const runtime::BufferSpec& in : declared_inputs()) {
      std::vector<tensor_ir::Expr> dims;
      for (const runtime::ShapeExpr& d : in.shape) {
        if (d.is_constant()) {
          dims.push_back(d.constant());
          continue;
        }
        if (!options_.symbolic)
          fail("graph input '", in.name, "' has symbolic dimension '", d.str(), "'; ", how_to_give_shape(in.name),
               " (tessera.onnx.load without shapes= gives a DynamicModule, which runs at any size)");
        // A variable, or an expression of them (a dimension declared a multiple, or P + L).
        dims.push_back(tensor_ir::from_shape_expr(d, [&](const std::string& name) {
          auto [var, added] = dim_vars_.try_emplace(name, name);
          if (added) dim_bounds_[var->second.get()] = {0, tensor_ir::arith::ConstBound::kPosInf};
          return var->second;
        }));
      }
      relay_ir::Var v(in.name, relay_ir::tensor_type(relay_ir::Shape(dims), in.dtype));
      params_.push_back(v);
      values_[in.name] = v;
    }
  }

  void lift_initializers() {
    for (const auto& name : options_.initializers_as_inputs) {
      auto it = values_.find(name);
      const auto* c = it == values_.end() ? nullptr : it->second.as<relay_ir::ConstantNode>();
      if (!c) fail("initializers_as_inputs: the model has no initializer '", name, "'");
      relay_ir::Var v(name, relay_ir::tensor_type(c->data.shape(), c->data.dtype()));
      params_.push_back(v);
      it->second = v;
    }
  }

  // If (ONNX 1 and later) whose condition is known when the model is compiled, from constants,
  // shapes or bound inputs: the chosen branch's nodes are converted in its place (they may read
  // any value of the enclosing graphs). A condition that depends on the data makes the model a
  // program (frontend/onnx/program.h), which chooses the branch at run time.
  void convert_if(const ::onnx::NodeProto& node) {
    ConvertContext ctx(node, opset_, {values_.at(node.input(0))}, {node.input(0)}, base_dir_, {0});
    const runtime::NDArray cond = ctx.constant_input(0, "the condition");
    if (cond.numel() != 1) ctx.error("the condition must hold one value, got shape " + cond.shape_str());
    const char* chosen = runtime::element_as_double(cond, 0) != 0 ? "then_branch" : "else_branch";
    const ::onnx::GraphProto* branch = nullptr;
    for (const auto& a : node.attribute())
      if (a.name() == chosen && a.has_g()) branch = &a.g();
    if (!branch) ctx.error(std::string("has no ") + chosen + " graph");
    if (branch->output_size() != node.output_size())
      ctx.error(std::string(chosen) + " has " + std::to_string(branch->output_size()) + " outputs, the node " +
                std::to_string(node.output_size()));
    check_operators(*branch);
    for (const auto& init : branch->initializer())
      values_[init.name()] = relay_ir::constant(tensor_from_proto(init, base_dir_));
    for (const auto& inner : branch->node()) convert(inner);
    for (int i = 0; i < node.output_size(); ++i) {
      if (auto d = dim_values_.find(branch->output(i).name()); d != dim_values_.end()) {
        if (!node.output(i).empty()) dim_values_[node.output(i)] = d->second;
        continue;
      }
      auto it = values_.find(branch->output(i).name());
      if (it == values_.end() || !it->second)
        ctx.error(std::string(chosen) + " output '" + branch->output(i).name() + "' is not produced by any node");
      if (!node.output(i).empty()) values_[node.output(i)] = it->second;
    }
  }

  void convert(const ::onnx::NodeProto& node) {
    if (is_if(node)) return convert_if(node);
    if (convert_dim_arithmetic(node)) return;
    std::vector<Expr> inputs;
    std::vector<std::string> names;
    const std::vector<int>& value_inputs = ConverterTable::global().find(node.domain(), node.op_type())->value_inputs;
    for (const auto& in : node.input()) {
      names.push_back(in);
      const bool value_input =
          std::find(value_inputs.begin(), value_inputs.end(), static_cast<int>(names.size()) - 1) != value_inputs.end();
      if (in.empty() || (dim_values_.count(in) && value_input)) {
        inputs.emplace_back();  // an omitted optional input, or a shape value the context holds
        continue;
      }
      if (auto d = dim_values_.find(in); d != dim_values_.end()) {  // a shape value computed with as a tensor
        inputs.push_back(shape_tensor(d->second, in));
        continue;
      }
      auto it = values_.find(in);
      if (it == values_.end())
        fail("ONNX node '", node.name(), "' (", node.op_type(), ") reads '", in, "', which no earlier node produces");
      inputs.push_back(it->second);
    }
    std::vector<Expr> outputs;
    try {
      outputs = convert_widened(node, inputs, names);
    } catch (const BindingRequired&) {
      throw;
    } catch (const tensor_ir::DimensionRequirement& e) {
      throw e.in(node_description(node, opset_of(node.domain())));
    } catch (const SymbolicRecurrence& r) {
      if (!recurrences_) throw Error(r.what());
      recurrences_->push_back(r);
      for (const relay_ir::Type& t : r.output_types) {
        const auto& tensor = relay_ir::as_tensor(t, "a recurrence's output");
        outputs.push_back(
            relay_ir::call("broadcast_to", {relay_ir::scalar(0, tensor.dtype)}, {{"shape", tensor.shape}}));
      }
    } catch (const Error& e) {
      // A converter's own checks name the node; a shape read as constants (symbolic) may not.
      const std::string where = node_description(node, opset_of(node.domain()));
      if (std::string(e.what()).rfind(where, 0) == 0) throw;
      fail(where, ": ", e.what());
    }
    if (outputs.size() < static_cast<size_t>(node.output_size())) {
      // Optional outputs a converter does not produce must not be used.
      outputs.resize(node.output_size());
    }
    if (options_.evaluate) fold(outputs, inputs);
    for (int i = 0; i < node.output_size(); ++i)
      if (!node.output(i).empty()) values_[node.output(i)] = outputs[i];
  }

  // Converts `node`. Only the conversions, the quantizers and the operators that move elements
  // without computing take narrow types (bfloat16, float8, 4- and 2-bit integers), whose kernels
  // copy their bits: any other operator computes on their compute types (float32, int8, uint8),
  // its inputs widened and its outputs of that type narrowed again.
  std::vector<Expr> convert_widened(const ::onnx::NodeProto& node, std::vector<Expr> inputs,
                                    const std::vector<std::string>& names) {
    static const std::set<std::string> kTakesNarrowTypes = {
        "Cast",    "CastLike",  "BitCast", "QuantizeLinear", "DequantizeLinear", "Identity", "Reshape", "Transpose",
        "Squeeze", "Unsqueeze", "Flatten", "Slice",          "Gather",           "Expand",   "Tile",    "Split",
        "Concat",  "Pad",       "Where"};
    const ConverterTable::Entry& entry = *ConverterTable::global().find(node.domain(), node.op_type());
    ConvertContext as_given(node, opset_of(node.domain()), inputs, names, base_dir_, entry.value_inputs);
    std::optional<runtime::DataType> narrow;
    if (!kTakesNarrowTypes.count(node.op_type()))
      for (size_t i = 0; i < inputs.size(); ++i) {
        if (!as_given.has_input(i) || !as_given.input_type(i).dtype.is_narrow()) continue;
        const runtime::DataType t = as_given.input_type(i).dtype;
        if (!narrow) narrow = t;
        inputs[i] = widened(as_given, inputs[i], t.compute_type());
      }
    add_dim_inputs(node, as_given);
    if (!narrow) return entry.convert(as_given);
    ConvertContext ctx(node, opset_of(node.domain()), inputs, names, base_dir_, entry.value_inputs);
    add_dim_inputs(node, ctx);
    std::vector<Expr> outputs = entry.convert(ctx);
    for (auto& e : outputs) {
      if (!e) continue;
      relay_ir::infer_type(e);
      const auto* t = e->checked_type.as<relay_ir::TensorTypeNode>();
      if (t && t->dtype == narrow->compute_type()) e = ctx.call("cast", {e}, {{"dtype", narrow->str()}});
    }
    return outputs;
  }

  // Shape arithmetic on symbolic sizes (frontend/onnx/dim_values.h): Shape or Size of a tensor
  // of symbolic shape, and the shape arithmetic on their values, give DimValues (constants when
  // the sizes cancel). False when `node` is not such a node: it is converted as usual.
  bool convert_dim_arithmetic(const ::onnx::NodeProto& node) {
    std::vector<DimValue> outputs;
    const int opset = opset_of(node.domain());
    const bool shape_op = (node.op_type() == "Shape" || node.op_type() == "Size") && node.domain().empty();
    if (shape_op && node.input_size() == 1 && values_.count(node.input(0))) {
      relay_ir::infer_type(values_.at(node.input(0)));
      const auto* t = values_.at(node.input(0))->checked_type.as<relay_ir::TensorTypeNode>();
      if (!t || t->shape.is_static()) return false;
      if (node.op_type() == "Size") {
        outputs.push_back(DimValue::scalar_of(tensor_ir::arith::simplify(t->shape.numel())));
      } else {
        ConvertContext ctx(node, opset, {}, {}, base_dir_, {});
        ctx.check_attrs({"start", "end"});
        const auto rank = static_cast<int64_t>(t->shape.size());
        outputs.push_back(shape_value(t->shape, ctx.attr_int("start", 0), ctx.attr_int("end", rank)));
      }
    } else {
      std::vector<DimOperand> operands;
      bool reads_dims = false;
      for (const auto& in : node.input()) {
        DimOperand& o = operands.emplace_back();
        if (in.empty()) continue;
        if (auto d = dim_values_.find(in); d != dim_values_.end()) {
          o.dims = d->second;
          reads_dims = true;
        } else if (auto v = values_.find(in); v != values_.end() && v->second.as<relay_ir::ConstantNode>()) {
          o.constant = v->second.as<relay_ir::ConstantNode>()->data;
        } else {
          return false;  // a tensor: a converter's value input, or an operator computing on it
        }
      }
      if (!reads_dims || reads_constant_at_sizes(node, operands)) return false;
      auto values = evaluate_dim_node(node, opset, operands, dim_bounds_);
      if (!values) return false;
      outputs = std::move(*values);
    }
    for (int i = 0; i < node.output_size() && i < static_cast<int>(outputs.size()); ++i) {
      if (node.output(i).empty()) continue;
      if (outputs[i].is_constant()) values_[node.output(i)] = relay_ir::constant(outputs[i].constant());
      else dim_values_[node.output(i)] = outputs[i];
    }
    return true;
  }

  // Whether `node` is a Slice or Gather of a constant at positions the sizes give (a causal mask
  // or BERT's position ids cut to the sequence's length): it reads the constant as data, its
  // converter taking the positions as sizes. (At constant positions, a constant of integers is
  // shape values: a list of dimensions picked from.)
  static bool reads_constant_at_sizes(const ::onnx::NodeProto& node, const std::vector<DimOperand>& operands) {
    if ((node.op_type() != "Slice" && node.op_type() != "Gather") || !operands.at(0).constant) return false;
    const runtime::DataType dtype = operands[0].constant->dtype();
    if (!dtype.is_integer() && dtype != runtime::kBool) return true;
    return std::any_of(operands.begin() + 1, operands.end(), [](const DimOperand& o) {
      return o.dims && std::any_of(o.dims->elements.begin(), o.dims->elements.end(),
                                   [](const tensor_ir::Expr& e) { return !tensor_ir::as_const_int(e); });
    });
  }

  // A shape value of symbolic sizes as a tensor, for an operator that computes with it (or a graph
  // output): its elements computed from the sizes at each call.
  static Expr shape_tensor(const DimValue& d, const std::string& name) {
    return relay_ir::call("shape_values", {}, shape_values_attrs(d, name));
  }

  // The shape values a converter reads as values (the others it was given as tensors).
  void add_dim_inputs(const ::onnx::NodeProto& node, ConvertContext& ctx) const {
    const std::vector<int>& value_inputs = ConverterTable::global().find(node.domain(), node.op_type())->value_inputs;
    for (int i : value_inputs)
      if (i < node.input_size())
        if (auto d = dim_values_.find(node.input(i)); d != dim_values_.end()) {
          if (d->second.shape.size() > 1)
            ctx.error("input '" + node.input(i) + "' is the shape value " + d->second.str() + " of rank " +
                      std::to_string(d->second.shape.size()) + ", where a scalar or a list is needed");
          ctx.set_dim_input(i, d->second.elements);
        }
  }

  // `e` converted to `type`; a constant converted here, for converters that read its values.
  static Expr widened(const ConvertContext& c, const Expr& e, runtime::DataType type) {
    if (const auto* k = e.as<relay_ir::ConstantNode>()) return relay_ir::constant(runtime::converted(k->data, type));
    return c.call("cast", {e}, {{"dtype", type.str()}});
  }

  // Whether `e`, a converter's output, is computed from constants only: walked down to the node's
  // inputs, which count as what they are. (CastLike reads only the type of its second input, so
  // its output can be a constant while that input is not.)
  static bool from_constants(const Expr& e, const std::vector<Expr>& inputs) {
    if (e.as<relay_ir::ConstantNode>()) return true;
    if (const auto* call = e.as<relay_ir::CallNode>(); call && call->args.empty()) return false;  // shape values
    if (std::any_of(inputs.begin(), inputs.end(), [&](const Expr& in) { return in.same_as(e); })) return false;
    if (const auto* call = e.as<relay_ir::CallNode>())
      return std::all_of(call->args.begin(), call->args.end(), [&](const Expr& a) { return from_constants(a, inputs); });
    if (const auto* tuple = e.as<relay_ir::TupleNode>())
      return std::all_of(tuple->elements.begin(), tuple->elements.end(),
                         [&](const Expr& a) { return from_constants(a, inputs); });
    if (const auto* item = e.as<relay_ir::TupleGetItemNode>()) return from_constants(item->tuple, inputs);
    return false;
  }

  // Replaces outputs computed from constants only by their values; one of symbolic shape (a
  // constant broadcast to a shape of the sizes) stays computed, at each call's sizes.
  void fold(std::vector<Expr>& outputs, const std::vector<Expr>& inputs) {
    for (auto& e : outputs) {
      if (!e || e.as<relay_ir::ConstantNode>() || !from_constants(e, inputs)) continue;
      relay_ir::infer_type(e);
      const auto* type = e->checked_type.as<relay_ir::TensorTypeNode>();
      if (!type || !type->shape.is_static()) continue;
      std::vector<runtime::NDArray> values = options_.evaluate(e);
      e = relay_ir::constant(values.at(0));
    }
  }

  const ::onnx::ModelProto& model_;
  const ::onnx::GraphProto& graph_;
  std::string base_dir_;
  const ImportOptions& options_;
  int opset_ = 0;
  bool program_ = false;  // needs_program: imported as a program's stages, not as one graph
  std::vector<SymbolicRecurrence>* recurrences_ = nullptr;  // collect_symbolic_recurrences
  std::unordered_map<std::string, Expr> values_;
  std::vector<relay_ir::Var> params_;
  std::map<std::string, tensor_ir::Var> dim_vars_;  // one variable per symbolic dimension name
  tensor_ir::arith::BoundMap dim_bounds_;           // each of them non-negative
  std::unordered_map<std::string, DimValue> dim_values_;  // shape values of symbolic sizes
};

}  // namespace

::onnx::ModelProto parse_model(const std::string& bytes) {
  ::onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) fail("not a valid ONNX model (the protobuf does not parse)");
  if (!model.has_graph()) fail("ONNX model has no graph");
  return model;
}

bool ImportOptions::declare(const tensor_ir::DimensionRequirement& r) {
  const std::string& v = r.var;
  if (same_dims.count(v) || declared_dims.count(v)) return false;
  // A variable an expression reads stays one (no expression of expressions).
  for (const auto& [_, e] : declared_dims) {
    std::vector<std::string> vars;
    e.collect_vars(vars);
    if (std::find(vars.begin(), vars.end(), v) != vars.end()) return false;
  }
  using runtime::ShapeExpr;
  switch (r.kind) {
    case tensor_ir::DimensionRequirement::Kind::Constant:
      declared_dims.emplace(v, r.value);
      return true;
    case tensor_ir::DimensionRequirement::Kind::Multiple:
      declared_dims.emplace(
          v, ShapeExpr::binary(ShapeExpr::Op::Mul, ShapeExpr::var(multiple_dim_var(v, r.value)), r.value));
      return true;
    case tensor_ir::DimensionRequirement::Kind::SameAs:
      for (std::string o = r.other;; o = same_dims.at(o)) {
        if (o == v) return false;
        if (!same_dims.count(o)) break;
      }
      same_dims[v] = r.other;
      return true;
    case tensor_ir::DimensionRequirement::Kind::Is:
      declared_dims.emplace(v, tensor_ir::to_shape_expr(r.expression));
      return true;
  }
  return false;
}

// `import(o)` for options `o` (from `options`), again with each input dimension declared as an
// operator needs it (tensor_ir/dimension_must_equal.h); any other variable stays an error.
template <typename F>
auto with_fixed_dims(const ImportOptions& options, F import) {
  ImportOptions o = options;
  for (;;) {
    try {
      return import(o);
    } catch (const tensor_ir::DimensionRequirement& e) {
      if (!o.symbolic || !o.declare(e)) throw Error(e.what());
    }
  }
}

relay_ir::Module import_model_proto(const ::onnx::ModelProto& model, const std::string& base_dir,
                                    const ImportOptions& options) {
  return with_fixed_dims(options, [&](const ImportOptions& o) { return Importer(model, base_dir, o).run(); });
}

relay_ir::Module import_model_bytes(const std::string& bytes, const std::string& base_dir,
                                    const ImportOptions& options) {
  return import_model_proto(parse_model(bytes), base_dir, options);
}

relay_ir::Module import_model(const std::string& path, const ImportOptions& options) {
  return with_model_file(path, [&](const ::onnx::ModelProto& model, const std::string& dir) {
    return import_model_proto(model, dir, options);
  });
}

std::vector<SymbolicRecurrence> symbolic_recurrences(const ::onnx::ModelProto& model, const std::string& base_dir,
                                                     const ImportOptions& options) {
  ImportOptions symbolic = options;
  symbolic.symbolic = true;
  return with_fixed_dims(symbolic, [&](const ImportOptions& o) {
    std::vector<SymbolicRecurrence> found;
    Importer probe(model, base_dir, o);
    probe.collect_symbolic_recurrences(found);
    try {
      probe.run();
    } catch (const tensor_ir::DimensionRequirement&) {
      throw;
    } catch (const Error&) {  // an operator that needs constant sizes: the nodes before it are found
    }
    return found;
  });
}

std::vector<runtime::BufferSpec> model_inputs(const std::string& path, const ImportOptions& options) {
  return with_model_file(path, [&](const ::onnx::ModelProto& model, const std::string& dir) {
    return Importer(model, dir, options).inputs();
  });
}

}  // namespace tessera::frontend::onnx
