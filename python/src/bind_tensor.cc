// Tensors and operations in Python: placeholder, compute, reduce_axis and the reductions.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include "python/src/bindings.h"
#include "runtime/error.h"
#include "tensor_ir/graph.h"
#include "tensor_ir/op.h"
#include "tensor_ir/printer.h"
#include "tensor_ir/tensor.h"

namespace tessera::python {

using namespace tensor_ir;

namespace {

std::vector<Expr> to_exprs(const py::handle& seq) {
  std::vector<Expr> out;
  if (py::isinstance<py::tuple>(seq) || py::isinstance<py::list>(seq)) {
    for (auto x : seq) out.push_back(to_expr(x));
  } else {
    out.push_back(to_expr(seq));
  }
  return out;
}

std::vector<IterVar> to_axes(const py::handle& axis) {
  std::vector<IterVar> out;
  if (py::isinstance<py::tuple>(axis) || py::isinstance<py::list>(axis)) {
    for (auto x : axis) out.push_back(x.cast<IterVar>());
  } else {
    out.push_back(axis.cast<IterVar>());
  }
  return out;
}

py::tuple shape_tuple(const Tensor& t) {
  py::tuple out(t.ndim());
  for (size_t d = 0; d < t.ndim(); ++d) {
    const auto* c = t->shape[d].as<IntImm>();
    if (c) out[d] = py::int_(c->value);
    else out[d] = py::cast(t->shape[d]);
  }
  return out;
}

Expr reduction(ReduceKind kind, py::object source, py::object axis, py::object where) {
  return Reduce::make(kind, to_expr(source), to_axes(axis), where.is_none() ? Expr() : to_expr(where));
}

}  // namespace

void bind_tensor(py::module_& m) {
  // Registered before Tensor, whose `op` returns one, so that signatures name it.
  py::class_<Operation> operation(m, "Operation",
                                  "What computes a tensor (T.op): a placeholder or a compute, with its axes.");
  py::class_<Tensor>(m, "Tensor",
                     "The output of an operation: a placeholder or a compute. T[i, j] is the expression reading the "
                     "element at (i, j); tensors compare equal when they are the same tensor.")
      .def(
          "__getitem__", [](const Tensor& t, py::object idx) { return t(to_exprs(idx)); }, py::arg("indices"))
      .def_property_readonly("name", &Tensor::name, "The tensor's (and its operation's) name.")
      .def_property_readonly(
          "dtype", [](const Tensor& t) { return t.dtype().str(); }, "The element type, e.g. \"float32\".")
      .def_property_readonly("shape", &shape_tuple, "The shape: ints, or Exprs for symbolic dimensions.")
      .def_property_readonly("ndim", &Tensor::ndim, "The number of dimensions.")
      .def_property_readonly(
          "op", [](const Tensor& t) { return Operation{t}; },
          "The Operation computing this tensor (its axes, reduction axes and body).")
      .def(
          "same_as", [](const Tensor& a, const Tensor& b) { return a.same_as(b); }, py::arg("other"),
          "Whether both are the same tensor.")
      .def("__hash__", [](const Tensor& t) { return std::hash<const void*>()(t.get()); })
      .def(
          "__eq__", [](const Tensor& a, const Tensor& b) { return a.same_as(b); }, py::arg("other"))
      .def("__repr__", [](const Tensor& t) { return "Tensor(" + t.name() + ", " + t.dtype().str() + ")"; });

  operation
      .def_property_readonly(
          "name", [](const Operation& o) { return o.tensor.name(); }, "The operation's name.")
      .def_property_readonly(
          "axis",
          [](const Operation& o) {
            const auto* c = o.tensor.as<ComputeOp>();
            return c ? c->axis : std::vector<IterVar>{};
          },
          "The data-parallel axes, one per output dimension (empty for a placeholder).")
      .def_property_readonly(
          "reduce_axis",
          [](const Operation& o) {
            const auto* c = o.tensor.as<ComputeOp>();
            return c ? c->reduce_axis() : std::vector<IterVar>{};
          },
          "The reduction axes its body reduces over.")
      .def_property_readonly(
          "tag",
          [](const Operation& o) {
            const auto* c = o.tensor.as<ComputeOp>();
            return c ? c->tag : std::string("placeholder");
          },
          "The compute's tag (te.compute(tag=...)); \"placeholder\" for a placeholder.")
      .def_property_readonly(
          "body",
          [](const Operation& o) -> py::object {
            const auto* c = o.tensor.as<ComputeOp>();
            return c ? py::cast(c->body) : py::none();
          },
          "The expression computing one element (None for a placeholder).")
      .def_property_readonly(
          "input_tensors", [](const Operation& o) { return input_tensors(o.tensor); }, "The tensors the body reads.")
      .def(
          "output",
          [](const Operation& o, int i) {
            if (i != 0) throw py::index_error("operations have one output");
            return o.tensor;
          },
          py::arg("index"), "The output tensor `index` (operations have one: index 0; IndexError otherwise).");

  m.def(
      "placeholder",
      [](py::object shape, const std::string& dtype, const std::string& name) {
        return placeholder(to_exprs(shape), runtime::DataType::parse(dtype), name);
      },
      py::arg("shape"), py::arg("dtype") = "float32", py::arg("name") = "placeholder",
      "An input tensor; `shape` is an int, an expression or a sequence of them (backs te.placeholder).");

  m.def(
      "compute",
      [](py::object shape, py::function f, const std::string& name, const std::string& tag,
         std::vector<std::string> axis_names) {
        return compute(
            to_exprs(shape),
            [&](const std::vector<Var>& vars) {
              py::tuple args(vars.size());
              for (size_t i = 0; i < vars.size(); ++i) args[i] = py::cast(Expr(vars[i]));
              return to_expr(f(*args));
            },
            name, tag, std::move(axis_names));
      },
      py::arg("shape"), py::arg("fcompute"), py::arg("name") = "compute", py::arg("tag") = "",
      py::arg("axis_names") = std::vector<std::string>{},
      "A tensor whose element at (i, j, ...) is fcompute(i, j, ...), the axes named `axis_names` (backs te.compute).");

  m.def(
      "reduce_axis",
      [](py::object dom, const std::string& name) {
        auto bounds = to_exprs(dom);
        if (bounds.size() != 2) throw py::value_error("reduce_axis takes (begin, end)");
        return reduce_axis(Range::from_min_max(bounds[0], bounds[1]), name);
      },
      py::arg("dom"), py::arg("name") = "k", "A reduction axis over [begin, end) given as `dom` = (begin, end).");

  m.def(
      "sum", [](py::object s, py::object axis, py::object where) { return reduction(ReduceKind::Sum, s, axis, where); },
      py::arg("expr"), py::arg("axis"), py::arg("where") = py::none(),
      "The sum of `expr` over the reduction axis or axes `axis`, where the condition `where` holds (all if None).");
  m.def(
      "prod",
      [](py::object s, py::object axis, py::object where) { return reduction(ReduceKind::Prod, s, axis, where); },
      py::arg("expr"), py::arg("axis"), py::arg("where") = py::none(),
      "The product of `expr` over the reduction axis or axes `axis`, where `where` holds (all if None).");
  m.def(
      "max_reduce",
      [](py::object s, py::object axis, py::object where) { return reduction(ReduceKind::Max, s, axis, where); },
      py::arg("expr"), py::arg("axis"), py::arg("where") = py::none(),
      "The maximum of `expr` over the reduction axis or axes `axis`, where `where` holds (backs te.max).");
  m.def(
      "min_reduce",
      [](py::object s, py::object axis, py::object where) { return reduction(ReduceKind::Min, s, axis, where); },
      py::arg("expr"), py::arg("axis"), py::arg("where") = py::none(),
      "The minimum of `expr` over the reduction axis or axes `axis`, where `where` holds (backs te.min).");
  m.def(
      "print_compute", [](const std::vector<Tensor>& outputs) { return to_string(outputs); }, py::arg("outputs"),
      "The compute definitions of `outputs` and the tensors they read, as text.");
}

}  // namespace tessera::python
