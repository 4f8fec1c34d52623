// Schedules in Python: s = create_schedule(C); s[C].split(...), s.cache_write(...), s.trace.
#include <pybind11/stl.h>

#include "python/src/bindings.h"
#include "runtime/error.h"
#include "schedule/lower.h"
#include "schedule/schedule.h"
#include "tensor_ir/printer.h"

namespace tessera::python {

using namespace schedule;
using tensor_ir::Tensor;

namespace {

// A loop given as a Loop, an axis of the operation (C.op.axis[0]) or a loop name.
Loop to_loop(const Stage& stage, const py::handle& h) {
  if (py::isinstance<LoopNode>(h)) return h.cast<Loop>();
  if (py::isinstance<tensor_ir::IterVar>(h)) return stage.loop(h.cast<tensor_ir::IterVar>());
  if (py::isinstance<py::str>(h)) return stage.loop(h.cast<std::string>());
  throw py::type_error("expected a loop, an axis or a loop name, got " + std::string(py::str(h.get_type())));
}

std::vector<Tensor> to_tensors(const py::handle& h) {
  if (py::isinstance<Tensor>(h)) return {h.cast<Tensor>()};
  return h.cast<std::vector<Tensor>>();
}

// A tensor given as itself or by its stage's name, as printed traces write it.
Tensor to_tensor(Schedule& s, const py::handle& h) {
  if (py::isinstance<py::str>(h)) return s.stage(h.cast<std::string>()).op();
  return h.cast<Tensor>();
}

}  // namespace

void bind_schedule(py::module_& m) {
  py::class_<LoopNode, Loop>(m, "Loop", "A loop of a stage: an axis or a loop made by split or fuse.")
      .def_property_readonly("name", [](const LoopNode& l) { return l.name; })
      .def_property_readonly("var", [](const LoopNode& l) { return tensor_ir::Expr(l.var); })
      .def_property_readonly("is_reduce", [](const LoopNode& l) { return l.kind == tensor_ir::IterKind::Reduce; })
      .def("__repr__", [](const LoopNode& l) { return "Loop(" + l.name + ")"; });

  py::class_<Stage>(m, "Stage")
      .def_property_readonly("name", &Stage::name)
      .def_property_readonly("op", [](const Stage& s) { return Operation{s.op()}; })
      .def_property_readonly("leaf_loops", &Stage::leaf_loops)
      .def("loop", [](const Stage& s, py::object l) { return to_loop(s, l); })
      .def("split", [](Stage& s, py::object parent, py::object factor, py::object nparts) {
        if (factor.is_none() == nparts.is_none()) throw py::value_error("split takes exactly one of factor= and nparts=");
        auto r = factor.is_none() ? s.split_nparts(to_loop(s, parent), nparts.cast<int64_t>())
                                  : s.split(to_loop(s, parent), factor.cast<int64_t>());
        return py::make_tuple(r.first, r.second);
      }, py::arg("parent"), py::arg("factor") = py::none(), py::arg("nparts") = py::none())
      .def("tile", [](Stage& s, py::object x, py::object y, int64_t xf, int64_t yf) {
        auto r = s.tile(to_loop(s, x), to_loop(s, y), xf, yf);
        return py::make_tuple(r[0], r[1], r[2], r[3]);
      }, py::arg("x_parent"), py::arg("y_parent"), py::arg("x_factor"), py::arg("y_factor"))
      .def("fuse", [](Stage& s, py::args loops) {
        if (loops.size() < 1) throw py::value_error("fuse takes at least one loop");
        Loop fused = to_loop(s, loops[0]);
        for (size_t i = 1; i < loops.size(); ++i) fused = s.fuse(fused, to_loop(s, loops[i]));
        return fused;
      })
      .def("reorder", [](Stage& s, py::args loops) {
        std::vector<Loop> order;
        for (auto l : loops) order.push_back(to_loop(s, l));
        s.reorder(order);
      })
      .def("vectorize", [](Stage& s, py::object l) { s.vectorize(to_loop(s, l)); })
      .def("unroll", [](Stage& s, py::object l) { s.unroll(to_loop(s, l)); })
      .def("parallel", [](Stage& s, py::object l) { s.parallel(to_loop(s, l)); })
      .def("pragma", [](Stage& s, py::object l, const std::string& key, int64_t value) { s.pragma(to_loop(s, l), key, value); },
           py::arg("loop"), py::arg("key"), py::arg("value") = 1)
      .def("compute_at", [](Stage& s, Stage& target, py::object l) { s.compute_at(target, to_loop(target, l)); })
      .def("prefetch", [](Stage& s, py::object tensor, py::object at, Stage& from_stage, py::object from, int64_t offset) {
        Tensor t = py::isinstance<Stage>(tensor) ? tensor.cast<Stage&>().op() : tensor.cast<Tensor>();
        s.prefetch(t, to_loop(s, at), from_stage, to_loop(from_stage, from), offset);
      }, py::arg("tensor"), py::arg("at"), py::arg("from_stage"), py::arg("from_loop"), py::arg("offset") = 1,
         "Fetches into cache the part of `tensor` (a tensor or its stage) that the iteration `offset` steps further along "
         "`from_loop` (a loop of `from_stage`, at or around `at`) reads, a share at each iteration of `at` across the "
         "`offset` iterations before it (Stage::prefetch in schedule.h).")
      .def("compute_inline", &Stage::compute_inline)
      .def("compute_root", &Stage::compute_root)
      .def("storage_align", [](Stage& s, py::object axis, int64_t factor, int64_t offset) {
        int dim = -1;
        if (py::isinstance<py::int_>(axis)) {
          dim = axis.cast<int>();
        } else {
          auto iv = axis.cast<tensor_ir::IterVar>();
          const auto* c = s.op().as<tensor_ir::ComputeOp>();
          for (size_t d = 0; c && d < c->axis.size(); ++d)
            if (c->axis[d].same_as(iv)) dim = static_cast<int>(d);
          if (dim < 0) throw py::value_error("storage_align: " + iv.name() + " is not an axis of " + s.name());
        }
        s.set_storage_align(dim, factor, offset);
      }, py::arg("axis"), py::arg("factor"), py::arg("offset"))
      .def("__repr__", [](const Stage& s) { return "Stage(" + s.name() + ")"; });

  py::class_<Schedule>(m, "Schedule")
      .def(py::init([](py::object outputs) { return std::make_unique<Schedule>(to_tensors(outputs)); }))
      .def("__getitem__", [](Schedule& s, py::object key) -> Stage& {
        if (py::isinstance<py::str>(key)) return s.stage(key.cast<std::string>());
        return s[key.cast<Tensor>()];
      }, py::return_value_policy::reference_internal)
      .def_property_readonly("stages", [](Schedule& s) {
        std::vector<Stage*> out;
        for (auto& st : s.stages()) out.push_back(st.get());
        return out;
      }, py::return_value_policy::reference_internal)
      .def_property_readonly("outputs", &Schedule::outputs)
      .def("cache_read", [](Schedule& s, py::object t, const std::string& scope, py::list readers) {
        std::vector<Tensor> rs;
        for (auto r : readers) rs.push_back(to_tensor(s, r));
        return s.cache_read(to_tensor(s, t), scope, rs);
      })
      .def("cache_write", [](Schedule& s, py::object t, const std::string& scope) { return s.cache_write(to_tensor(s, t), scope); })
      .def("rfactor", [](Schedule& s, py::object t, py::object loop, int factor_axis) {
        Tensor tensor = to_tensor(s, t);
        return s.rfactor(tensor, to_loop(s[tensor], loop), factor_axis);
      }, py::arg("tensor"), py::arg("loop"), py::arg("factor_axis") = 0)
      .def_property_readonly("trace", [](const Schedule& s) { return s.trace(); })
      .def("replay", [](Schedule& s, const Trace& t) { t.apply(s); });

  py::class_<Trace>(m, "Trace", "The primitives a schedule applied, replayable on a fresh definition.")
      .def("to_json", &Trace::to_json)
      .def_static("from_json", &Trace::from_json)
      .def("__len__", &Trace::size)
      .def("__eq__", [](const Trace& a, const Trace& b) { return a == b; })
      .def("__str__", &Trace::to_code);

  m.def("lower", [](Schedule& s, const std::vector<Tensor>& args, const std::string& name) {
    return tensor_ir::to_string(lower(s, args, name));
  }, py::arg("schedule"), py::arg("args"), py::arg("name") = "main");
}

}  // namespace tessera::python
