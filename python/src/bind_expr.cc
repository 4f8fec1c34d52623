// Expressions in Python: arithmetic and comparison operators, constants, casts and intrinsics.
#include <pybind11/operators.h>
#include <pybind11/stl.h>

#include "python/src/bindings.h"
#include "runtime/error.h"
#include "tensor_ir/op.h"
#include "tensor_ir/printer.h"
#include "tensor_ir/structural.h"
#include "tensor_ir/tensor.h"

namespace tessera::python {

using namespace tensor_ir;

Expr to_expr(const py::handle& value) {
  if (py::isinstance<Expr>(value)) return value.cast<Expr>();
  if (py::isinstance<IterVar>(value)) return value.cast<IterVar>().var();
  if (py::isinstance<py::bool_>(value)) return make_const(runtime::kBool, value.cast<bool>());
  if (py::isinstance<py::int_>(value)) return Expr(value.cast<int64_t>());
  if (py::isinstance<py::float_>(value)) return FloatImm::make(runtime::kFloat64, value.cast<double>());
  // numpy scalars and anything else with __index__ / __float__
  if (py::hasattr(value, "__index__")) return Expr(value.attr("__index__")().cast<int64_t>());
  if (py::hasattr(value, "__float__"))
    return FloatImm::make(runtime::kFloat64, value.attr("__float__")().cast<double>());
  throw py::type_error("cannot use a " + std::string(py::str(py::type::of(value))) + " as a Tessera expression");
}

namespace {

// Operators shared by Expr and IterVar (an axis reads as its variable).
template <typename T>
void def_operators(py::class_<T>& cls) {
  auto self = [](const T& x) { return to_expr(py::cast(x)); };
  cls.def(
         "__add__", [self](const T& a, py::object b) { return self(a) + to_expr(b); }, py::arg("other"))
      .def(
          "__radd__", [self](const T& a, py::object b) { return to_expr(b) + self(a); }, py::arg("other"))
      .def(
          "__sub__", [self](const T& a, py::object b) { return self(a) - to_expr(b); }, py::arg("other"))
      .def(
          "__rsub__", [self](const T& a, py::object b) { return to_expr(b) - self(a); }, py::arg("other"))
      .def(
          "__mul__", [self](const T& a, py::object b) { return self(a) * to_expr(b); }, py::arg("other"))
      .def(
          "__rmul__", [self](const T& a, py::object b) { return to_expr(b) * self(a); }, py::arg("other"))
      .def(
          "__truediv__", [self](const T& a, py::object b) { return self(a) / to_expr(b); }, py::arg("other"))
      .def(
          "__rtruediv__", [self](const T& a, py::object b) { return to_expr(b) / self(a); }, py::arg("other"))
      .def(
          "__floordiv__", [self](const T& a, py::object b) { return floordiv(self(a), to_expr(b)); }, py::arg("other"))
      .def(
          "__rfloordiv__", [self](const T& a, py::object b) { return floordiv(to_expr(b), self(a)); }, py::arg("other"))
      .def(
          "__mod__", [self](const T& a, py::object b) { return floormod(self(a), to_expr(b)); }, py::arg("other"))
      .def(
          "__rmod__", [self](const T& a, py::object b) { return floormod(to_expr(b), self(a)); }, py::arg("other"))
      .def("__neg__", [self](const T& a) { return -self(a); })
      .def(
          "__lt__", [self](const T& a, py::object b) { return self(a) < to_expr(b); }, py::arg("other"))
      .def(
          "__le__", [self](const T& a, py::object b) { return self(a) <= to_expr(b); }, py::arg("other"))
      .def(
          "__gt__", [self](const T& a, py::object b) { return self(a) > to_expr(b); }, py::arg("other"))
      .def(
          "__ge__", [self](const T& a, py::object b) { return self(a) >= to_expr(b); }, py::arg("other"))
      .def(
          "__eq__", [self](const T& a, py::object b) { return self(a) == to_expr(b); }, py::arg("other"))
      .def(
          "__ne__", [self](const T& a, py::object b) { return self(a) != to_expr(b); }, py::arg("other"))
      .def(
          "__and__", [self](const T& a, py::object b) { return logical_and(self(a), to_expr(b)); }, py::arg("other"))
      .def(
          "__or__", [self](const T& a, py::object b) { return logical_or(self(a), to_expr(b)); }, py::arg("other"))
      .def("__invert__", [self](const T& a) { return logical_not(self(a)); })
      .def("__bool__",
           [](const T&) -> bool {
             throw py::type_error("a Tessera expression has no truth value; use te.select / te.all / te.any");
           })
      .def("__hash__", [](const T& a) { return std::hash<const void*>()(a.get()); })
      .def(
          "astype",
          [self](const T& a, const std::string& dtype) { return cast(runtime::DataType::parse(dtype), self(a)); },
          py::arg("dtype"), "This value converted to `dtype` (\"float32\", \"int64\", \"bool\", ...): a cast.")
      .def_property_readonly(
          "dtype", [self](const T& a) { return self(a).type().str(); },
          "The data type, as a string (\"float32\", \"int64\", \"float32x16\" for vectors, ...).")
      .def("__repr__", [self](const T& a) { return to_string(self(a)); });
}

}  // namespace

void bind_expr(py::module_& m) {
  py::class_<Expr> expr(
      m, "Expr",
      "A tensor-IR expression. Arithmetic (+ - * / // %), comparisons and & | ~ build new expressions "
      "(// and % round toward minus infinity, as in Python); a Python number takes the other operand's "
      "type. An expression has no truth value: use te.select, te.all, te.any.");
  def_operators(expr);
  expr.def_property_readonly(
      "value",
      [](const Expr& e) -> py::object {
        if (const int64_t* i = as_const_int(e)) return py::int_(*i);
        if (const double* f = as_const_float(e)) return py::float_(*f);
        throw py::value_error("expression " + to_string(e) + " is not a constant");
      },
      "The Python int or float of a constant expression; ValueError for any other.");
  expr.def(
      "same_as", [](const Expr& a, const Expr& b) { return a.same_as(b); }, py::arg("other"),
      "Whether both are the same node (identity; `==` builds a comparison expression instead).");
  expr.def(
      "structurally_equal", [](const Expr& a, const Expr& b) { return structural_equal(a, b); }, py::arg("other"),
      "Whether both expressions have the same structure (kinds, constants, types, variables).");

  py::class_<IterVar> iv(m, "IterVar", "A loop axis of an operation (data-parallel or reduction).");
  def_operators(iv);
  iv.def_property_readonly(
        "var", [](const IterVar& v) { return Expr(v.var()); }, "The loop variable, an Expr.")
      .def_property_readonly(
          "name", [](const IterVar& v) { return v.name(); }, "The axis name.")
      .def_property_readonly(
          "dom", [](const IterVar& v) { return py::make_tuple(v->dom.min, v->dom.extent); },
          "The range as (min, extent) expressions.")
      .def_property_readonly(
          "is_reduce", [](const IterVar& v) { return v->iter_kind == IterKind::Reduce; },
          "Whether this is a reduction axis (te.reduce_axis).");

  m.def(
      "const",
      [](py::object value, const std::string& dtype) {
        return make_const(runtime::DataType::parse(dtype), value.cast<double>());
      },
      py::arg("value"), py::arg("dtype"),
      "A constant expression of `value` (a Python number) and `dtype` (\"float32\", \"int32\", \"bool\", ...).");
  m.def(
      "var",
      [](const std::string& name, const std::string& dtype) {
        return Expr(Var(name, runtime::DataType::parse(dtype)));
      },
      py::arg("name"), py::arg("dtype") = "int64", "A scalar variable named `name`, e.g. a symbolic dimension.");
  m.def(
      "cast",
      [](py::object value, const std::string& dtype) { return cast(runtime::DataType::parse(dtype), to_expr(value)); },
      py::arg("value"), py::arg("dtype"), "`value` (an expression or Python number) converted to `dtype`.");
  m.def(
      "select", [](py::object c, py::object t, py::object f) { return select(to_expr(c), to_expr(t), to_expr(f)); },
      py::arg("cond"), py::arg("true_value"), py::arg("false_value"),
      "`true_value` where the boolean expression `cond` holds, else `false_value`; the side not taken reads no memory "
      "(zero padding: select(inside, X[i - pad], 0)).");
  m.def(
      "min", [](py::object a, py::object b) { return min(to_expr(a), to_expr(b)); }, py::arg("a"), py::arg("b"),
      "The smaller of two expressions, elementwise (te.min also reduces).");
  m.def(
      "max", [](py::object a, py::object b) { return max(to_expr(a), to_expr(b)); }, py::arg("a"), py::arg("b"),
      "The larger of two expressions, elementwise (te.max also reduces).");
  m.def(
      "truncdiv", [](py::object a, py::object b) { return to_expr(a) / to_expr(b); }, py::arg("a"), py::arg("b"),
      "Integer division rounding toward zero, as in C (`//` rounds toward minus infinity, as in Python).");
  m.def(
      "truncmod", [](py::object a, py::object b) { return to_expr(a) % to_expr(b); }, py::arg("a"), py::arg("b"),
      "The remainder of truncdiv, with the sign of `a`, as in C (`%` follows Python).");
  m.def(
      "intrinsic",
      [](const std::string& name, py::args args) {
        std::vector<Expr> exprs;
        for (auto a : args) exprs.push_back(to_expr(a));
        return call(parse_intrinsic(name), exprs);
      },
      py::arg("name"),
      "A call of the intrinsic `name` (\"exp\", \"pow\", ...) on the expressions given (te.exp & co).");
}

}  // namespace tessera::python
