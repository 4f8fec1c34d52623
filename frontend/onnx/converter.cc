#include "frontend/onnx/converter.h"

#include <algorithm>

#include "frontend/onnx/importer.h"
#include "frontend/onnx/tensor_proto.h"
#include "relay_ir/functor.h"
#include "relay_ir/transforms/infer_type.h"
#include "tensor_ir/dimension_must_equal.h"
#include "tensor_ir/printer.h"

namespace tessera::frontend::onnx {

using relay_ir::Expr;

ConvertContext::ConvertContext(const ::onnx::NodeProto& node, int opset, std::vector<Expr> inputs,
                               std::vector<std::string> input_names, std::string base_dir,
                               std::vector<int> value_inputs)
    : node_(node),
      opset_(opset),
      inputs_(std::move(inputs)),
      input_names_(std::move(input_names)),
      base_dir_(std::move(base_dir)),
      value_inputs_(std::move(value_inputs)) {}

std::string node_description(const ::onnx::NodeProto& node, int opset) {
  return node.op_type() + " (node '" + (node.name().empty() ? node.output(0) : node.name()) + "', opset " +
         std::to_string(opset) + ")";
}

std::string ConvertContext::where() const { return node_description(node_, opset_); }

void ConvertContext::error(const std::string& message) const { fail(where(), ": ", message); }

const Expr& ConvertContext::input(size_t i) const {
  if (!has_input(i)) error("missing input " + std::to_string(i));
  if (is_dim_input(i)) error("input " + std::to_string(i) + " is a shape value of symbolic sizes, not a tensor");
  return inputs_[i];
}

const relay_ir::TensorTypeNode& ConvertContext::input_type(size_t i) const {
  const Expr& e = input(i);
  relay_ir::infer_type(e);
  return relay_ir::as_tensor(e->checked_type, where() + " input " + std::to_string(i));
}

std::optional<runtime::NDArray> ConvertContext::try_constant_input(size_t i) const {
  if (!has_input(i)) return std::nullopt;
  if (const auto* c = inputs_[i].as<relay_ir::ConstantNode>()) return c->data;
  return std::nullopt;
}

runtime::NDArray ConvertContext::constant_input(size_t i, const std::string& what) const {
  if (std::find(value_inputs_.begin(), value_inputs_.end(), static_cast<int>(i)) == value_inputs_.end())
    fail("internal error: the converter of ", op_type(), " reads input ", i, " (", what,
         ") as a constant without declaring it a value input");
  if (auto c = try_constant_input(i)) return *c;
  if (is_dim_input(i)) {
    std::string dims;
    for (const auto& e : dim_inputs_[i]) dims += (dims.empty() ? "" : ", ") + tensor_ir::to_string(e);
    error(what + " (input '" + input_names_[i] + "') is [" + dims +
          "], of symbolic sizes, where this operator needs constants");
  }
  input(i);
  // The graph inputs it is computed from: binding them makes it a constant.
  std::vector<std::string> graph_inputs;
  for (const Expr& e : relay_ir::post_order(inputs_[i]))
    if (const auto* v = e.as<relay_ir::VarNode>()) graph_inputs.push_back(v->name);
  throw BindingRequired(where() + ": " + what + " (input '" + input_names_[i] + "') must be known at compile time",
                        graph_inputs);
}

std::vector<int64_t> ConvertContext::constant_ints(size_t i, const std::string& what) const {
  runtime::NDArray a = constant_input(i, what);
  std::vector<int64_t> out(a.numel());
  if (a.dtype() == runtime::kInt64) std::copy(a.data_as<int64_t>(), a.data_as<int64_t>() + a.numel(), out.begin());
  else if (a.dtype() == runtime::kInt32) std::copy(a.data_as<int32_t>(), a.data_as<int32_t>() + a.numel(), out.begin());
  else error(what + " must be int32 or int64, got " + a.dtype().str());
  return out;
}

std::vector<tensor_ir::Expr> ConvertContext::dim_ints(size_t i, const std::string& what) const {
  if (is_dim_input(i)) return dim_inputs_[i];
  std::vector<tensor_ir::Expr> out;
  for (int64_t v : constant_ints(i, what)) out.emplace_back(v);
  return out;
}

void ConvertContext::set_dim_input(size_t i, std::vector<tensor_ir::Expr> elements) {
  if (dim_inputs_.size() <= i) dim_inputs_.resize(i + 1);
  dim_inputs_[i] = std::move(elements);
}

const ::onnx::AttributeProto* ConvertContext::find_attr(const std::string& name) const {
  for (const auto& a : node_.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

bool ConvertContext::has_attr(const std::string& name) const { return find_attr(name) != nullptr; }

int64_t ConvertContext::attr_int(const std::string& name, int64_t fallback) const {
  const auto* a = find_attr(name);
  return a ? a->i() : fallback;
}

int64_t ConvertContext::attr_int(const std::string& name) const {
  const auto* a = find_attr(name);
  if (!a) error("missing required attribute '" + name + "'");
  return a->i();
}

float ConvertContext::attr_float(const std::string& name, float fallback) const {
  const auto* a = find_attr(name);
  return a ? a->f() : fallback;
}

std::string ConvertContext::attr_string(const std::string& name, const std::string& fallback) const {
  const auto* a = find_attr(name);
  return a ? a->s() : fallback;
}

std::vector<int64_t> ConvertContext::attr_ints(const std::string& name, std::vector<int64_t> fallback) const {
  const auto* a = find_attr(name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : fallback;
}

std::vector<float> ConvertContext::attr_floats(const std::string& name, std::vector<float> fallback) const {
  const auto* a = find_attr(name);
  return a ? std::vector<float>(a->floats().begin(), a->floats().end()) : fallback;
}

runtime::NDArray ConvertContext::attr_tensor(const std::string& name) const {
  const auto* a = find_attr(name);
  if (!a || !a->has_t()) error("missing tensor attribute '" + name + "'");
  return tensor_from_proto(a->t(), base_dir_);
}

void ConvertContext::check_attrs(std::initializer_list<const char*> known) const {
  std::string unknown;
  for (const auto& a : node_.attribute()) {
    bool ok = std::any_of(known.begin(), known.end(), [&](const char* k) { return a.name() == k; });
    if (!ok) unknown += (unknown.empty() ? "" : ", ") + a.name();
  }
  if (!unknown.empty()) error("unsupported attribute(s): " + unknown);
}

Expr ConvertContext::call(const std::string& name, std::vector<Expr> args, relay_ir::Attrs attrs) const {
  try {
    Expr e =
        relay_ir::call(name, std::move(args), std::move(attrs), node_.name().empty() ? node_.output(0) : node_.name());
    relay_ir::infer_type(e);
    return e;
  } catch (const BindingRequired&) {
    throw;
  } catch (const tensor_ir::DimensionRequirement&) {
    throw;  // the importer declares the dimension so and imports again
  } catch (const Error& e) {
    error(e.what());
  }
}

void ConverterTable::add(const std::string& op_type, Converter c, std::vector<int> value_inputs,
                         std::vector<int> run_time_inputs) {
  if (entries_.count(op_type)) fail("internal error: two converters for ONNX ", op_type);
  entries_[op_type] = {std::move(c), "", false, std::move(value_inputs), std::move(run_time_inputs)};
}

void ConverterTable::unsupported(const std::string& op_type, const std::string& reason) {
  entries_[op_type] = {nullptr, reason, false, {}};
}

void ConverterTable::program_step(const std::string& op_type) { entries_[op_type] = {nullptr, "", true, {}}; }

const ConverterTable::Entry* ConverterTable::find(const std::string& domain, const std::string& op_type) const {
  if (!domain.empty() && domain != "ai.onnx" && domain != "ai.onnx.ml") return nullptr;
  auto it = entries_.find(domain == "ai.onnx.ml" ? domain + "." + op_type : op_type);
  return it == entries_.end() ? nullptr : &it->second;
}

const ConverterTable& ConverterTable::global() {
  static const ConverterTable table = [] {
    ConverterTable t;
    register_all_converters(t);
    return t;
  }();
  return table;
}

std::vector<std::string> supported_operators() {
  std::vector<std::string> out;
  for (const auto& [name, e] : ConverterTable::global().entries())
    if (e.convert || e.program_step) out.push_back(name);
  return out;
}

}  // namespace tessera::frontend::onnx
