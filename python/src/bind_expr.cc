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
  if (py::hasattr(value, "__float__")) return FloatImm::make(runtime::kFloat64, value.attr("__float__")().cast<double>());
  throw py::type_error("cannot use a " + std::string(py::str(value.get_type())) + " as a Tessera expression");
}

namespace {

// Operators shared by Expr and IterVar (an axis reads as its variable).
template <typename T>
void def_operators(py::class_<T>& cls) {
  auto self = [](const T& x) { return to_expr(py::cast(x)); };
  cls.def("__add__", [self](const T& a, py::object b) { return self(a) + to_expr(b); })
      .def("__radd__", [self](const T& a, py::object b) { return to_expr(b) + self(a); })
      .def("__sub__", [self](const T& a, py::object b) { return self(a) - to_expr(b); })
      .def("__rsub__", [self](const T& a, py::object b) { return to_expr(b) - self(a); })
      .def("__mul__", [self](const T& a, py::object b) { return self(a) * to_expr(b); })
      .def("__rmul__", [self](const T& a, py::object b) { return to_expr(b) * self(a); })
      .def("__truediv__", [self](const T& a, py::object b) { return self(a) / to_expr(b); })
      .def("__rtruediv__", [self](const T& a, py::object b) { return to_expr(b) / self(a); })
      .def("__floordiv__", [self](const T& a, py::object b) { return floordiv(self(a), to_expr(b)); })
      .def("__rfloordiv__", [self](const T& a, py::object b) { return floordiv(to_expr(b), self(a)); })
      .def("__mod__", [self](const T& a, py::object b) { return floormod(self(a), to_expr(b)); })
      .def("__rmod__", [self](const T& a, py::object b) { return floormod(to_expr(b), self(a)); })
      .def("__neg__", [self](const T& a) { return -self(a); })
      .def("__lt__", [self](const T& a, py::object b) { return self(a) < to_expr(b); })
      .def("__le__", [self](const T& a, py::object b) { return self(a) <= to_expr(b); })
      .def("__gt__", [self](const T& a, py::object b) { return self(a) > to_expr(b); })
      .def("__ge__", [self](const T& a, py::object b) { return self(a) >= to_expr(b); })
      .def("__eq__", [self](const T& a, py::object b) { return self(a) == to_expr(b); })
      .def("__ne__", [self](const T& a, py::object b) { return self(a) != to_expr(b); })
      .def("__and__", [self](const T& a, py::object b) { return logical_and(self(a), to_expr(b)); })
      .def("__or__", [self](const T& a, py::object b) { return logical_or(self(a), to_expr(b)); })
      .def("__invert__", [self](const T& a) { return logical_not(self(a)); })
      .def("__bool__", [](const T&) -> bool {
        throw py::type_error("a Tessera expression has no truth value; use te.select / te.all / te.any");
      })
      .def("__hash__", [](const T& a) { return std::hash<const void*>()(a.get()); })
      .def("astype", [self](const T& a, const std::string& dtype) { return cast(runtime::DataType::parse(dtype), self(a)); })
      .def_property_readonly("dtype", [self](const T& a) { return self(a).type().str(); })
      .def("__repr__", [self](const T& a) { return to_string(self(a)); });
}

}  // namespace

void bind_expr(py::module_& m) {
  py::class_<Expr> expr(m, "Expr", "A Tessera tensor-IR expression.");
  def_operators(expr);
  expr.def_property_readonly("value", [](const Expr& e) -> py::object {
    if (const int64_t* i = as_const_int(e)) return py::int_(*i);
    if (const double* f = as_const_float(e)) return py::float_(*f);
    throw py::value_error("expression " + to_string(e) + " is not a constant");
  });
  expr.def("same_as", [](const Expr& a, const Expr& b) { return a.same_as(b); });
  expr.def("structurally_equal", [](const Expr& a, const Expr& b) { return structural_equal(a, b); });

  py::class_<IterVar> iv(m, "IterVar", "A loop axis of an operation (data-parallel or reduction).");
  def_operators(iv);
  iv.def_property_readonly("var", [](const IterVar& v) { return Expr(v.var()); })
      .def_property_readonly("name", [](const IterVar& v) { return v.name(); })
      .def_property_readonly("dom", [](const IterVar& v) { return py::make_tuple(v->dom.min, v->dom.extent); })
      .def_property_readonly("is_reduce", [](const IterVar& v) { return v->iter_kind == IterKind::Reduce; });

  m.def("const", [](py::object value, const std::string& dtype) {
    return make_const(runtime::DataType::parse(dtype), value.cast<double>());
  }, py::arg("value"), py::arg("dtype"));
  m.def("var", [](const std::string& name, const std::string& dtype) { return Expr(Var(name, runtime::DataType::parse(dtype))); },
        py::arg("name"), py::arg("dtype") = "int64");
  m.def("cast", [](py::object value, const std::string& dtype) { return cast(runtime::DataType::parse(dtype), to_expr(value)); });
  m.def("select", [](py::object c, py::object t, py::object f) { return select(to_expr(c), to_expr(t), to_expr(f)); });
  m.def("min", [](py::object a, py::object b) { return min(to_expr(a), to_expr(b)); });
  m.def("max", [](py::object a, py::object b) { return max(to_expr(a), to_expr(b)); });
  m.def("truncdiv", [](py::object a, py::object b) { return to_expr(a) / to_expr(b); });
  m.def("truncmod", [](py::object a, py::object b) { return to_expr(a) % to_expr(b); });
  m.def("intrinsic", [](const std::string& name, py::args args) {
    std::vector<Expr> exprs;
    for (auto a : args) exprs.push_back(to_expr(a));
    return call(parse_intrinsic(name), exprs);
  });
}

}  // namespace tessera::python
