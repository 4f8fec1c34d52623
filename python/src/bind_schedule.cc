// Schedules in Python: s = create_schedule(C); s[C].split(...), s.cache_write(...), s.trace.
#include <pybind11/stl.h>

#include "python/src/bindings.h"
#include "runtime/error.h"
#include "schedule/lower.h"
#include "schedule/primitive.h"
#include "schedule/schedule.h"
#include "targets/target.h"
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
  throw py::type_error("expected a loop, an axis or a loop name, got " + std::string(py::str(py::type::of(h))));
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
      .def_property_readonly(
          "name", [](const LoopNode& l) { return l.name; },
          "The loop's name, unique in its stage and saying its role (\"i\", \"i.outer\", \"i.j.fused\").")
      .def_property_readonly(
          "var", [](const LoopNode& l) { return tensor_ir::Expr(l.var); }, "The loop variable, an Expr.")
      .def_property_readonly(
          "is_reduce", [](const LoopNode& l) { return l.kind == tensor_ir::IterKind::Reduce; },
          "Whether the loop comes from a reduction axis.")
      .def_property_readonly(
          "thread_tag", [](const LoopNode& l) { return l.thread_tag; },
          "The thread axis the loop is bound to (\"blockIdx.x\", ..., \"vthread\"), or \"\" when it is not bound.")
      .def("__repr__", [](const LoopNode& l) { return "Loop(" + l.name + ")"; });

  py::class_<Stage>(
      m, "Stage",
      "How one operation's loops run (s[T]). Primitives taking a loop accept a Loop, an axis of the "
      "operation (T.op.axis[0]) or a loop name; each checks its arguments, raises tessera.Error naming the "
      "stage and loop when they are invalid, and is recorded in the schedule's trace.")
      .def_property_readonly("name", &Stage::name, "The stage's name (its operation's).")
      .def_property_readonly(
          "op", [](const Stage& s) { return Operation{s.op()}; },
          "The operation this stage computes now (cache_write replaces the original's).")
      .def_property_readonly("leaf_loops", &Stage::leaf_loops, "The current loops, outermost first.")
      .def(
          "loop", [](const Stage& s, py::object l) { return to_loop(s, l); }, py::arg("loop"),
          "The Loop given as a Loop, an axis of the operation or a loop name.")
      .def(
          "split",
          [](Stage& s, py::object parent, py::object factor, py::object nparts) {
            if (factor.is_none() == nparts.is_none())
              throw py::value_error("split takes exactly one of factor= and nparts=");
            auto r = factor.is_none() ? s.split_nparts(to_loop(s, parent), nparts.cast<int64_t>())
                                      : s.split(to_loop(s, parent), factor.cast<int64_t>());
            return py::make_tuple(r.first, r.second);
          },
          py::arg("parent"), py::arg("factor") = py::none(), py::arg("nparts") = py::none(),
          "Splits loop `parent` into (outer, inner) with an inner extent of `factor` (int) or an outer extent of "
          "`nparts` (int); give exactly one. Returns the two Loops.")
      .def(
          "tile",
          [](Stage& s, py::object x, py::object y, int64_t xf, int64_t yf) {
            auto r = s.tile(to_loop(s, x), to_loop(s, y), xf, yf);
            return py::make_tuple(r[0], r[1], r[2], r[3]);
          },
          py::arg("x_parent"), py::arg("y_parent"), py::arg("x_factor"), py::arg("y_factor"),
          "Splits loops x and y by their factors and orders the result; returns "
          "(x_outer, y_outer, x_inner, y_inner).")
      .def(
          "fuse",
          [](Stage& s, py::args loops) {
            if (loops.size() < 1) throw py::value_error("fuse takes at least one loop");
            Loop fused = to_loop(s, loops[0]);
            for (size_t i = 1; i < loops.size(); ++i) fused = s.fuse(fused, to_loop(s, loops[i]));
            return fused;
          },
          "fuse(*loops): fuses adjacent loops, given outermost first, into one Loop and returns it.")
      .def(
          "reorder",
          [](Stage& s, py::args loops) {
            std::vector<Loop> order;
            for (auto l : loops) order.push_back(to_loop(s, l));
            s.reorder(order);
          },
          "reorder(*loops): the given loops take, in this order, the positions they occupy among the leaf loops.")
      .def(
          "vectorize", [](Stage& s, py::object l) { s.vectorize(to_loop(s, l)); }, py::arg("loop"),
          "Runs data-parallel loop `loop` as vector instructions, best the innermost with a constant extent.")
      .def(
          "unroll", [](Stage& s, py::object l) { s.unroll(to_loop(s, l)); }, py::arg("loop"),
          "Unrolls loop `loop` (its extent must be a constant).")
      .def(
          "parallel", [](Stage& s, py::object l) { s.parallel(to_loop(s, l)); }, py::arg("loop"),
          "Runs the iterations of data-parallel loop `loop` on the thread pool (tessera.num_threads() threads).")
      .def(
          "bind",
          [](Stage& s, py::object l, py::object thread_axis) {
            py::object tag = py::isinstance<py::str>(thread_axis) ? thread_axis : thread_axis.attr("tag");
            s.bind(to_loop(s, l), tag.cast<std::string>());
          },
          py::arg("loop"), py::arg("thread_axis"),
          "Binds loop `loop` to a thread axis of a device launch: te.thread_axis(\"blockIdx.x\") (or its "
          "tag), one of blockIdx.x/y/z, threadIdx.x/y/z and vthread. Each block or thread runs one iteration; a "
          "vthread loop is unrolled in one thread. A reduction loop bound to threadIdx is reduced across the block's "
          "threads (after rfactor, as TVM's row reductions). Bind after splitting and fusing.")
      .def(
          "pragma",
          [](Stage& s, py::object l, const std::string& key, int64_t value) { s.pragma(to_loop(s, l), key, value); },
          py::arg("loop"), py::arg("key"), py::arg("value") = 1,
          "Annotates loop `loop` with `key` = `value` for code generation (\"unroll_explicit\" = 0 on an unrolled "
          "loop leaves the unrolling to LLVM); unknown keys are kept and ignored.")
      .def(
          "compute_at", [](Stage& s, Stage& target, py::object l) { s.compute_at(target, to_loop(target, l)); },
          py::arg("parent"), py::arg("loop"),
          "Computes this stage inside loop `loop` of stage `parent` (a consumer), as much as each iteration needs.")
      .def(
          "prefetch",
          [](Stage& s, py::object tensor, py::object at, Stage& from_stage, py::object from, int64_t offset) {
            Tensor t = py::isinstance<Stage>(tensor) ? tensor.cast<Stage&>().op() : tensor.cast<Tensor>();
            Loop from_loop = py::isinstance<py::str>(from) ? from_stage.loop_or_fused(from.cast<std::string>())
                                                           : to_loop(from_stage, from);
            s.prefetch(t, to_loop(s, at), from_stage, from_loop, offset);
          },
          py::arg("tensor"), py::arg("at"), py::arg("from_stage"), py::arg("from_loop"), py::arg("offset") = 1,
          "Fetches into cache the part of `tensor` (a tensor or its stage) that the iteration `offset` steps further "
          "along `from_loop` (a loop of `from_stage` at or around `at`, or a loop fused into one: its next iteration "
          "is as many steps ahead as the loops fused inside it run) reads, a share at each iteration of `at` across "
          "the iterations before it (Stage::prefetch in schedule.h).")
      .def("compute_inline", &Stage::compute_inline,
           "Substitutes this stage's expression into its consumers instead of storing it (not for outputs, "
           "placeholders or reductions).")
      .def("compute_root", &Stage::compute_root,
           "Computes this stage at the root, all of it before its consumers (the default).")
      .def(
          "storage_align",
          [](Stage& s, py::object axis, int64_t factor, int64_t offset) {
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
          },
          py::arg("axis"), py::arg("factor"), py::arg("offset"),
          "Pads the stride of dimension `axis` (an int or an axis of the operation) of this stage's buffer so that "
          "stride % factor == offset (to avoid cache-set conflicts).")
      .def("set_scope", &Stage::set_scope, py::arg("scope"),
           "Places this stage's buffer in memory `scope`: \"global\" (the default), \"shared\" (one per thread "
           "block) or \"local\" (one per thread).")
      .def_property_readonly(
          "scope", &Stage::scope,
          "The memory scope of the stage's buffer as cache_read, cache_write or set_scope gave it; \"\" when none did "
          "(lowering then picks local inside a loop bound to threadIdx, shared inside one bound to blockIdx, global "
          "otherwise).")
      .def("__repr__", [](const Stage& s) { return "Stage(" + s.name() + ")"; });

  // Before Schedule, whose signatures name it.
  py::class_<Trace>(
      m, "Trace",
      "The primitives a schedule applied, replayable on a fresh definition (Schedule.replay). str() prints "
      "it as tessera.te code; len() is the number of primitives.")
      .def("to_json", &Trace::to_json, "The trace as JSON text (what tuning records store).")
      .def_static("from_json", &Trace::from_json, py::arg("json"),
                  "A trace from its JSON text; tessera.Error for malformed JSON, an unknown primitive or an "
                  "instruction whose attributes do not fit its primitive (naming the instruction).")
      .def_static(
          "primitives",
          [] {
            py::list out;
            for (const auto& p : primitives()) {
              py::list params;
              for (const auto& param : p.params)
                params.append((param.source == Param::AllLoops ? "*" : "") + std::string(param.name));
              out.append(py::dict(py::arg("name") = p.name,
                                  py::arg("method_of") = p.method_of == MethodOf::Stage ? "Stage" : "Schedule",
                                  py::arg("params") = params));
            }
            return out;
          },
          "The primitives a trace holds, as dicts: name, method_of (\"Stage\" or \"Schedule\", whose method "
          "it is) and params (the method's parameters after self, \"*loops\" for loops given one by one).")
      .def("__len__", &Trace::size)
      .def(
          "__eq__", [](const Trace& a, const Trace& b) { return a == b; }, py::arg("other"))
      .def("__str__", &Trace::to_code);

  py::class_<Schedule>(m, "Schedule",
                       "How the operations computing some output tensors run: one Stage per operation (s[T]), and the "
                       "trace of the primitives applied. Schedule(outputs) is te.create_schedule(outputs).")
      .def(py::init([](py::object outputs) { return std::make_unique<Schedule>(to_tensors(outputs)); }),
           py::arg("outputs"),
           "A schedule with default loops for `outputs` (a Tensor or a list) and every operation they read.")
      .def(
          "__getitem__",
          [](Schedule& s, py::object key) -> Stage& {
            if (py::isinstance<py::str>(key)) return s.stage(key.cast<std::string>());
            return s[key.cast<Tensor>()];
          },
          py::return_value_policy::reference_internal, py::arg("tensor"))
      .def_property_readonly(
          "stages",
          [](Schedule& s) {
            std::vector<Stage*> out;
            for (auto& st : s.stages()) out.push_back(st.get());
            return out;
          },
          py::return_value_policy::reference_internal,
          "The stages in dependency order (producers first), placeholders included.")
      .def_property_readonly("outputs", &Schedule::outputs, "The output tensors the schedule was made for.")
      .def(
          "cache_read",
          [](Schedule& s, py::object t, const std::string& scope, py::list readers) {
            std::vector<Tensor> rs;
            for (auto r : readers) rs.push_back(to_tensor(s, r));
            return s.cache_read(to_tensor(s, t), scope, rs);
          },
          py::arg("tensor"), py::arg("scope"), py::arg("readers"),
          "Adds a stage copying `tensor` into a buffer of memory scope `scope` (\"global\", \"shared\" or \"local\"), "
          "read by `readers` (tensors or stage names) instead of `tensor`. Returns the copy's tensor.")
      .def(
          "cache_write",
          [](Schedule& s, py::object t, const std::string& scope) { return s.cache_write(to_tensor(s, t), scope); },
          py::arg("tensor"), py::arg("scope"),
          "Computes `tensor` into a new stage of memory scope `scope` (\"global\", \"shared\" or \"local\"), then "
          "copies it into `tensor`; "
          "must come before other primitives on tensor's stage. Returns the new stage's tensor.")
      .def(
          "rfactor",
          [](Schedule& s, py::object t, py::object loop, int factor_axis) {
            Tensor tensor = to_tensor(s, t);
            return s.rfactor(tensor, to_loop(s[tensor], loop), factor_axis);
          },
          py::arg("tensor"), py::arg("loop"), py::arg("factor_axis") = 0,
          "Factors reduction loop `loop` of `tensor` out into a new stage computing partial results along a new axis "
          "at position `factor_axis`; `tensor` then reduces over that axis. Returns the partial results' tensor.")
      .def_property_readonly(
          "trace", [](const Schedule& s) { return s.trace(); }, "The Trace of the primitives applied so far.")
      .def(
          "replay", [](Schedule& s, const Trace& t) { t.apply(s); }, py::arg("trace"),
          "Applies the primitives of `trace` to this schedule; tessera.Error names the instruction that does not "
          "apply.");

  m.def(
      "lower",
      [](Schedule& s, const std::vector<Tensor>& args, const std::string& name, bool for_device,
         const std::string& target) {
        const int warp_size = target.empty() ? 1 : targets::Target::parse(target).warp_size();
        return tensor_ir::to_string(for_device ? lower_for_device(s, args, name, warp_size) : lower(s, args, name));
      },
      py::arg("schedule"), py::arg("args"), py::arg("name") = "main", py::arg("for_device") = false,
      py::arg("target") = "",
      "The lowered loop nest of function `name` over the buffers `args`, as text, for a CPU or a device (the "
      "device of `target` where given: its warps) (backs te.lower).");
  m.def("thread_axis_tags", &thread_axis_tags, "The thread axes Stage.bind takes (backs te.thread_axis).");
}

}  // namespace tessera::python
