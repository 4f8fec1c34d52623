// Building graphs from Python: variables, constants, calls of registered ops with keyword
// attributes, tuples and functions; and training steps.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstring>

#include "python/src/bindings.h"
#include "relay_ir/functor.h"
#include "relay_ir/op.h"
#include "relay_ir/printer.h"
#include "relay_ir/transforms/infer_type.h"
#include "relay_ir/transforms/training.h"
#include "runtime/error.h"

namespace tessera::python {

using namespace relay_ir;

namespace {

AttrValue to_attr(const std::string& name, const py::handle& v) {
  if (py::isinstance<py::bool_>(v)) return static_cast<int64_t>(v.cast<bool>());
  if (py::isinstance<py::int_>(v)) return v.cast<int64_t>();
  if (py::isinstance<py::float_>(v)) return v.cast<double>();
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    bool all_int = true;
    for (auto x : v) all_int &= py::isinstance<py::int_>(x) && !py::isinstance<py::bool_>(x);
    if (all_int) return v.cast<std::vector<int64_t>>();
    return v.cast<std::vector<double>>();
  }
  throw py::type_error("attribute " + name + ": cannot use a " + std::string(py::str(py::type::of(v))));
}

runtime::NDArray copy_of(py::array a) {
  a = py::array::ensure(a, py::array::c_style);
  std::string kind = py::str(a.dtype());
  runtime::DataType dtype = runtime::DataType::parse(kind);
  std::vector<int64_t> shape(a.shape(), a.shape() + a.ndim());
  runtime::NDArray out = runtime::NDArray::empty(shape, dtype);
  std::memcpy(out.data(), a.data(), out.nbytes());
  return out;
}

}  // namespace

void bind_relay(py::module_& m) {
  py::class_<Expr>(m, "GraphExpr", "A value of a graph under construction (tessera.relay.var/const/call).")
      .def_property_readonly(
          "type", [](const Expr& e) { return to_string(infer_type(e)); },
          "The inferred type as text, e.g. \"Tensor[(2, 3), float32]\".")
      .def(
          "__getitem__", [](const Expr& e, int64_t i) { return tuple_get(e, i); }, py::arg("index"))
      .def("__repr__", [](const Expr& e) { return to_text(e); });

  m.def(
      "graph_var",
      [](const std::string& name, std::vector<int64_t> shape, const std::string& dtype) {
        return Expr(Var(name, tensor_type(std::move(shape), runtime::DataType::parse(dtype))));
      },
      py::arg("name"), py::arg("shape"), py::arg("dtype") = "float32", "A graph variable (backs tessera.relay.var).");
  m.def(
      "graph_const", [](py::array a) { return constant(copy_of(a)); }, py::arg("value"),
      "A constant holding a copy of `value` (backs tessera.relay.const).");
  m.def(
      "graph_call",
      [](const std::string& op, const std::vector<Expr>& args, py::dict attrs) {
        Attrs a;
        for (auto item : attrs) {
          std::string k = item.first.cast<std::string>();
          a.set(k, to_attr(k, item.second));
        }
        Expr e = call(op, args, a);
        infer_type(e);  // type errors now, at the line that made the call
        return e;
      },
      py::arg("op"), py::arg("args"), py::arg("attrs"),
      "A type-checked call of a registered op (backs tessera.relay.call).");
  m.def(
      "graph_tuple", [](const std::vector<Expr>& elements) { return tuple(elements); }, py::arg("elements"),
      "A tuple of graph values (backs tessera.relay.tuple_).");
  m.def(
      "graph_module",
      [](const std::vector<Expr>& params, const Expr& body) {
        std::vector<Var> vars;
        for (const auto& p : params) {
          const auto* v = p.as<VarNode>();
          if (!v) fail("function: parameters must be variables (tessera.relay.var)");
          vars.push_back(Var(v));
        }
        return infer_type(Module(function(vars, body)));
      },
      py::arg("params"), py::arg("body"),
      "A module whose main function takes `params` and returns `body` (backs tessera.relay.function).");
  m.def(
      "op_names", [] { return OpRegistry::global().names(); }, "The names of the registered graph ops.");
  m.def(
      "graph_apply",
      [](const Module& mod, const std::vector<Expr>& args) {
        Expr e = apply_function(mod.main(), args);
        infer_type(e);
        return e;
      },
      py::arg("module"), py::arg("args"),
      "Module `module`'s main function applied to `args` (backs tessera.relay.apply).");

  m.def(
      "training_step",
      [](const Module& loss, const std::vector<std::string>& wrt, const std::string& kind, double lr, double momentum,
         double weight_decay, double beta1, double beta2, double eps) {
        OptimizerSpec spec;
        if (kind == "sgd") spec.kind = OptimizerSpec::SGD;
        else if (kind == "adam") spec.kind = OptimizerSpec::Adam;
        else fail("unknown optimizer '", kind, "' (sgd or adam)");
        spec.learning_rate = lr;
        spec.momentum = momentum;
        spec.weight_decay = weight_decay;
        spec.beta1 = beta1;
        spec.beta2 = beta2;
        spec.epsilon = eps;
        return training_step(loss, wrt, spec);
      },
      py::arg("loss"), py::arg("wrt"), py::arg("kind"), py::arg("lr"), py::arg("momentum"), py::arg("weight_decay"),
      py::arg("beta1"), py::arg("beta2"), py::arg("eps"),
      "One training step of loss module `loss` over the parameters `wrt` with optimizer `kind` (\"sgd\" or \"adam\"), "
      "as a module returning the loss, the new parameters and the new optimizer state (backs tessera.train.Trainer).");
  m.def(
      "optimizer_state_names",
      [](const std::string& kind, double momentum) {
        OptimizerSpec spec;
        spec.kind = kind == "adam" ? OptimizerSpec::Adam : OptimizerSpec::SGD;
        spec.momentum = momentum;
        return optimizer_state_names(spec);
      },
      py::arg("kind"), py::arg("momentum"),
      "The optimizer state kept per parameter by optimizer `kind` (\"sgd\" or \"adam\"): none, [\"v\"] or [\"m\", "
      "\"v\"].");
}

}  // namespace tessera::python
