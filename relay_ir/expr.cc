#include "relay_ir/expr.h"

#include <cstring>
#include <mutex>
#include <unordered_map>

#include "relay_ir/op.h"
#include "runtime/element.h"
#include "runtime/error.h"

namespace tessera::relay_ir {

const Type& Expr::type() const {
  if (!get()->checked_type) fail("internal error: the type of an expression is asked before InferType ran");
  return get()->checked_type;
}

Var::Var(std::string name, Type type) : Ref<VarNode>(new VarNode(std::move(name), std::move(type))) {}

const std::string& OpNode::name() const { return def->name; }

const OpDef* CallNode::op_def() const {
  const auto* o = op.as<OpNode>();
  return o ? o->def : nullptr;
}

Expr constant(runtime::NDArray data) {
  if (!data.defined()) fail("constant: undefined array");
  return Expr(new ConstantNode(std::move(data)));
}

std::optional<double> float_scalar_value(const Expr& e) {
  const auto* c = e.as<ConstantNode>();
  if (!c || c->data.numel() != 1 || c->data.dtype().code != runtime::TypeCode::Float) return std::nullopt;
  if (c->data.dtype().bits == 32) return c->data.data_as<float>()[0];
  if (c->data.dtype().bits == 64) return c->data.data_as<double>()[0];
  return std::nullopt;
}

Expr scalar(double value, DataType dtype) {
  runtime::NDArray a = runtime::NDArray::empty({}, dtype);
  if (dtype.is_narrow()) {
    runtime::store_element(a, 0, value);
    return constant(a);
  }
  switch (dtype.code) {
    case runtime::TypeCode::Float:
      if (dtype.bits == 64) *a.data_as<double>() = value;
      else if (dtype.bits == 32) *a.data_as<float>() = static_cast<float>(value);
      else fail("scalar: float16 constants are not supported; make a float32 one and cast it");
      break;
    case runtime::TypeCode::Int:
    case runtime::TypeCode::UInt:
    case runtime::TypeCode::Bool: {
      int64_t v = static_cast<int64_t>(value);
      std::memcpy(a.data(), &v, dtype.element_bytes());  // little-endian: the low bytes
      break;
    }
    default:
      fail("scalar: unsupported dtype ", dtype.str());
  }
  return constant(a);
}

Expr op(const std::string& name) {
  // One OpNode per registered op, made on first use.
  static std::mutex mutex;
  static std::unordered_map<const OpDef*, Expr> nodes;
  const OpDef* def = &OpRegistry::global().get(name);
  std::lock_guard<std::mutex> lock(mutex);
  auto it = nodes.find(def);
  if (it == nodes.end()) it = nodes.emplace(def, Expr(new OpNode(def))).first;
  return it->second;
}

namespace {

// Converts a given attribute to the kind the schema declares where that is lossless.
AttrValue coerce(const OpDef& def, const AttrSpec& spec, AttrValue v) {
  if (v.index() == spec.default_value.index()) return v;
  if (std::holds_alternative<Shape>(v) && std::holds_alternative<std::vector<int64_t>>(spec.default_value)) return v;
  if (std::holds_alternative<Shape>(v) && std::get<Shape>(v).size() == 1 &&
      std::holds_alternative<int64_t>(spec.default_value))
    return v;  // a symbolic int (Attrs::get_dim)
  if (std::holds_alternative<int64_t>(v) && std::holds_alternative<double>(spec.default_value))
    return static_cast<double>(std::get<int64_t>(v));
  if (std::holds_alternative<std::vector<int64_t>>(v) &&
      std::holds_alternative<std::vector<double>>(spec.default_value)) {
    const auto& xs = std::get<std::vector<int64_t>>(v);
    return std::vector<double>(xs.begin(), xs.end());
  }
  // An empty list parses as ints; it is as good as an empty list of floats.
  if (std::holds_alternative<std::vector<double>>(v) && std::get<std::vector<double>>(v).empty() &&
      std::holds_alternative<std::vector<int64_t>>(spec.default_value))
    return std::vector<int64_t>{};
  fail(def.name, ": attribute '", spec.name, "' must be ", attr_kind_name(spec.default_value), ", got ",
       attr_kind_name(v), " ", attr_to_string(v));
}

}  // namespace

Expr call(const std::string& name, std::vector<Expr> args, Attrs attrs, std::string origin) {
  const OpDef& def = OpRegistry::global().get(name);
  int n = static_cast<int>(args.size());
  if (n < def.min_args || (def.max_args >= 0 && n > def.max_args)) {
    std::string expected = def.min_args == def.max_args ? std::to_string(def.min_args)
                           : def.max_args < 0           ? "at least " + std::to_string(def.min_args)
                                              : std::to_string(def.min_args) + " to " + std::to_string(def.max_args);
    fail(name, ": takes ", expected, " arguments, got ", n);
  }
  for (const auto& a : args)
    if (!a) fail(name, ": undefined argument");
  Attrs checked;
  for (const auto& [key, value] : attrs.items()) {
    const AttrSpec* spec = nullptr;
    for (const auto& s : def.attrs)
      if (s.name == key) spec = &s;
    if (!spec) {
      std::string known;
      for (const auto& s : def.attrs) known += (known.empty() ? "" : ", ") + s.name;
      fail(name, ": unknown attribute '", key, "' (it has: ", known.empty() ? "none" : known, ")");
    }
    checked.set(key, coerce(def, *spec, value));
  }
  for (const auto& s : def.attrs) {
    if (checked.has(s.name)) continue;
    if (s.required) fail(name, ": missing required attribute '", s.name, "'");
    checked.set(s.name, s.default_value);
  }
  auto* node = new CallNode(op(name), std::move(args), std::move(checked));
  node->origin = std::move(origin);
  return Expr(node);
}

Expr call_function(const Function& f, std::vector<Expr> args) {
  if (args.size() != f->params.size())
    fail("call of a function with ", f->params.size(), " parameters with ", args.size(), " arguments");
  return Expr(new CallNode(f, std::move(args), Attrs()));
}

Expr tuple(std::vector<Expr> fields) { return Expr(new TupleNode(std::move(fields))); }

Expr tuple_get(Expr t, int64_t index) {
  if (index < 0) fail("tuple projection with negative index ", index);
  return Expr(new TupleGetItemNode(std::move(t), index));
}

Function function(std::vector<Var> params, Expr body, Attrs attrs) {
  if (!body) fail("function with an undefined body");
  return Function(new FunctionNode(std::move(params), std::move(body), std::move(attrs)));
}

}  // namespace tessera::relay_ir
