#include "runtime/shape_expr.h"

#include <optional>

#include <algorithm>

#include "runtime/error.h"
#include "runtime/ndarray.h"

namespace tessera::runtime {

namespace {

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

const char* function_name(ShapeExpr::Op op) {
  switch (op) {
    case ShapeExpr::Op::FloorDiv:
      return "floordiv";
    case ShapeExpr::Op::FloorMod:
      return "floormod";
    case ShapeExpr::Op::Min:
      return "min";
    case ShapeExpr::Op::Max:
      return "max";
    default:
      return nullptr;
  }
}

}  // namespace

ShapeExpr::ShapeExpr(int64_t value) : node_(std::make_shared<const Node>(Node{Op::Const, value, {}, {}, {}})) {}

ShapeExpr ShapeExpr::var(std::string name) {
  if (name.empty()) fail("a dimension variable needs a name");
  return ShapeExpr(std::make_shared<const Node>(Node{Op::Var, 0, std::move(name), {}, {}}));
}

ShapeExpr ShapeExpr::binary(Op op, ShapeExpr a, ShapeExpr b) {
  if (op == Op::Const || op == Op::Var) fail("internal error: ShapeExpr::binary of a leaf");
  return ShapeExpr(std::make_shared<const Node>(Node{op, 0, {}, a.node_, b.node_}));
}

int64_t ShapeExpr::constant() const {
  if (!is_constant()) fail("the dimension ", str(), " is not a constant");
  return node_->value;
}

ShapeExpr ShapeExpr::lhs() const {
  if (!node_->a) fail("internal error: ShapeExpr::lhs of a leaf");
  return ShapeExpr(node_->a);
}

ShapeExpr ShapeExpr::rhs() const {
  if (!node_->b) fail("internal error: ShapeExpr::rhs of a leaf");
  return ShapeExpr(node_->b);
}

void ShapeExpr::collect_vars(std::vector<std::string>& names) const {
  if (const std::string* name = var_name()) {
    if (std::find(names.begin(), names.end(), *name) == names.end()) names.push_back(*name);
    return;
  }
  if (node_->a) ShapeExpr(node_->a).collect_vars(names);
  if (node_->b) ShapeExpr(node_->b).collect_vars(names);
}

int64_t ShapeExpr::evaluate(const std::map<std::string, int64_t>& values) const {
  const Node& n = *node_;
  if (n.op == Op::Const) return n.value;
  if (n.op == Op::Var) {
    auto it = values.find(n.name);
    if (it == values.end()) fail("the dimension variable ", n.name, " has no value");
    return it->second;
  }
  const int64_t a = ShapeExpr(n.a).evaluate(values), b = ShapeExpr(n.b).evaluate(values);
  switch (n.op) {
    case Op::Add:
      return a + b;
    case Op::Sub:
      return a - b;
    case Op::Mul:
      return a * b;
    case Op::FloorDiv:
    case Op::FloorMod:
      if (b == 0) fail("the dimension ", str(), " divides by zero");
      return n.op == Op::FloorDiv ? floor_div(a, b) : a - floor_div(a, b) * b;
    case Op::Min:
      return std::min(a, b);
    case Op::Max:
      return std::max(a, b);
    default:
      fail("internal error: unknown shape expression");
  }
}

std::string ShapeExpr::str() const {
  const Node& n = *node_;
  switch (n.op) {
    case Op::Const:
      return std::to_string(n.value);
    case Op::Var:
      return n.name;
    case Op::Add:
      return "(" + ShapeExpr(n.a).str() + " + " + ShapeExpr(n.b).str() + ")";
    case Op::Sub:
      return "(" + ShapeExpr(n.a).str() + " - " + ShapeExpr(n.b).str() + ")";
    case Op::Mul:
      return ShapeExpr(n.a).str() + "*" + ShapeExpr(n.b).str();
    default:
      return std::string(function_name(n.op)) + "(" + ShapeExpr(n.a).str() + ", " + ShapeExpr(n.b).str() + ")";
  }
}

bool ShapeExpr::operator==(const ShapeExpr& o) const {
  const Node &a = *node_, &b = *o.node_;
  if (&a == &b) return true;
  if (a.op != b.op || a.value != b.value || a.name != b.name) return false;
  return (!a.a || ShapeExpr(a.a) == ShapeExpr(b.a)) && (!a.b || ShapeExpr(a.b) == ShapeExpr(b.b));
}

bool is_static(const SymbolicShape& shape) {
  return std::all_of(shape.begin(), shape.end(), [](const ShapeExpr& d) { return d.is_constant(); });
}

std::vector<int64_t> static_shape(const SymbolicShape& shape, const std::string& what) {
  std::vector<int64_t> dims;
  for (const ShapeExpr& d : shape) {
    if (!d.is_constant())
      fail(what, " has the symbolic shape ", symbolic_shape_str(shape), " where a static one is needed");
    dims.push_back(d.constant());
  }
  return dims;
}

bool equals(const SymbolicShape& shape, const std::vector<int64_t>& dims) {
  if (shape.size() != dims.size()) return false;
  for (size_t i = 0; i < dims.size(); ++i)
    if (!shape[i].is_constant() || shape[i].constant() != dims[i]) return false;
  return true;
}

SymbolicShape symbolic_shape(const std::vector<int64_t>& shape) { return SymbolicShape(shape.begin(), shape.end()); }

std::string symbolic_shape_str(const SymbolicShape& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + shape[i].str();
  return s + (shape.size() == 1 ? ",)" : ")");
}

std::optional<std::pair<std::string, int64_t>> scaled_var(const ShapeExpr& e) {
  if (const std::string* name = e.var_name()) return std::pair{*name, int64_t{1}};
  if (e.op() != ShapeExpr::Op::Mul) return std::nullopt;
  for (const auto& [v, c] : {std::pair{e.lhs(), e.rhs()}, std::pair{e.rhs(), e.lhs()}})
    if (v.var_name() && c.is_constant() && c.constant() > 0) return std::pair{*v.var_name(), c.constant()};
  return std::nullopt;
}

std::map<std::string, int64_t> bind_shape_vars(const std::vector<SymbolicShape>& expected,
                                               const std::vector<std::vector<int64_t>>& got,
                                               const std::vector<std::string>& names, const std::string& where) {
  std::map<std::string, int64_t> values;
  std::map<std::string, std::string> source;  // where each value came from, for errors
  auto arg = [&](size_t i) { return where + " " + names.at(i) + " (#" + std::to_string(i) + ")"; };
  for (size_t i = 0; i < expected.size(); ++i)
    if (got[i].size() != expected[i].size())
      fail(arg(i), ": expected ", expected[i].size(), " dimensions ", symbolic_shape_str(expected[i]), ", got ",
           got[i].size());
  // A variable by itself first, then one a constant multiplies (N*4: the heads of N sequences);
  // the checks below catch a size the constant does not divide.
  for (bool scaled : {false, true})
    for (size_t i = 0; i < expected.size(); ++i)
      for (size_t d = 0; d < expected[i].size(); ++d) {
        const auto var = scaled_var(expected[i][d]);
        if (!var || values.count(var->first) || (var->second != 1) != scaled) continue;
        values[var->first] = got[i][d] / var->second;
        source[var->first] = names.at(i) + " dimension " + std::to_string(d);
      }
  for (size_t i = 0; i < expected.size(); ++i) {
    for (size_t d = 0; d < expected[i].size(); ++d) {
      const ShapeExpr& e = expected[i][d];
      std::vector<std::string> unbound;
      e.collect_vars(unbound);
      for (const std::string& v : unbound)
        if (!values.count(v))
          fail(arg(i), ": dimension ", d, " is ", e.str(), ", and no argument has the dimension ", v,
               " by itself or times a constant to tell its value");
      const int64_t want = e.evaluate(values);
      if (got[i][d] == want) continue;
      // A multiple whose variable this dimension gives: it does not divide.
      if (const auto var = scaled_var(e); var && var->second > 1 && got[i][d] % var->second != 0 &&
                                          source[var->first] == names.at(i) + " dimension " + std::to_string(d))
        fail(arg(i), ": dimension ", d, " must be a multiple of ", var->second, " (", e.str(),
             ": the model splits it so), got ", got[i][d], " (shape ", shape_str(got[i]), ")");
      std::string because;
      std::vector<std::string> vars;
      e.collect_vars(vars);
      for (const std::string& v : vars)
        because += (because.empty() ? " (" : ", ") +
                   (e.var_name() ? "" : v + " = " + std::to_string(values.at(v)) + " ") + "from " + source[v];
      if (!vars.empty()) because += ")";
      fail(arg(i), ": dimension ", d, " must be ", e.is_constant() ? "" : e.str() + " = ", want, because, ", got ",
           got[i][d], " (shape ", shape_str(got[i]), ", expected ", symbolic_shape_str(expected[i]), ")");
    }
  }
  return values;
}

}  // namespace tessera::runtime
