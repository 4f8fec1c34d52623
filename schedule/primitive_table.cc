// The table of schedule primitives: one entry per primitive, saying how its Python method's
// arguments sit in an Instruction (from which its schema check and printed code follow) and
// replaying it through the Stage or Schedule method that recorded it.
#include "runtime/error.h"
#include "schedule/primitive.h"
#include "schedule/schedule.h"

namespace tessera::schedule {

namespace {

using Made = std::vector<std::string>;
using T = AttrType;

Loop loop(const Stage& st, const Instruction& inst, size_t n) { return st.loop(inst.loops[n]); }

}  // namespace

const std::vector<Primitive>& primitives() {
  // The Python parameters are named and ordered as in python/src/bind_schedule.cc (a test checks),
  // so the printed code runs as it is.
  static const std::vector<Primitive> table = {
      {"split",
       MethodOf::Stage,
       {loop_param("parent"), keyword_param("factor", T::Int, 1), keyword_param("nparts", T::Int, 1)},
       2,
       [](Schedule&, Stage& st, const Instruction& inst) -> Made {
         Loop parent = loop(st, inst, 0);
         auto [outer, inner] = inst.attrs.count("factor") ? st.split(parent, inst.int_attr("factor"))
                                                          : st.split_nparts(parent, inst.int_attr("nparts"));
         return {outer->name, inner->name};
       }},
      {"fuse",
       MethodOf::Stage,
       {loops_param(2)},
       1,
       [](Schedule&, Stage& st, const Instruction& inst) -> Made {
         return {st.fuse(loop(st, inst, 0), loop(st, inst, 1))->name};
       }},
      {"reorder",
       MethodOf::Stage,
       {loops_param()},
       0,
       [](Schedule&, Stage& st, const Instruction& inst) -> Made {
         std::vector<Loop> order;
         for (size_t n = 0; n < inst.loops.size(); ++n) order.push_back(loop(st, inst, n));
         st.reorder(order);
         return {};
       }},
      {"vectorize",
       MethodOf::Stage,
       {loop_param("loop")},
       0,
       [](Schedule&, Stage& st, const Instruction& inst) -> Made {
         st.vectorize(loop(st, inst, 0));
         return {};
       }},
      {"unroll",
       MethodOf::Stage,
       {loop_param("loop")},
       0,
       [](Schedule&, Stage& st, const Instruction& inst) -> Made {
         st.unroll(loop(st, inst, 0));
         return {};
       }},
      {"parallel",
       MethodOf::Stage,
       {loop_param("loop")},
       0,
       [](Schedule&, Stage& st, const Instruction& inst) -> Made {
         st.parallel(loop(st, inst, 0));
         return {};
       }},
      {"bind",
       MethodOf::Stage,
       {loop_param("loop"), attr_param("thread_axis", T::String, "tag")},
       0,
       [](Schedule&, Stage& st, const Instruction& inst) -> Made {
         st.bind(loop(st, inst, 0), inst.str_attr("tag"));
         return {};
       }},
      {"pragma",
       MethodOf::Stage,
       {loop_param("loop"), attr_param("key", T::String), attr_param("value", T::Int)},
       0,
       [](Schedule&, Stage& st, const Instruction& inst) -> Made {
         st.pragma(loop(st, inst, 0), inst.str_attr("key"), inst.int_attr("value"));
         return {};
       }},
      {"prefetch",
       MethodOf::Stage,
       {stage_param("tensor", "tensor"), loop_param("at"), stage_param("from_stage", "from_stage"),
        attr_param("from_loop", T::String, "from"), attr_param("offset", T::Int)},
       0,
       [](Schedule& s, Stage& st, const Instruction& inst) -> Made {
         const Tensor& tensor = s.stage(inst.str_attr("tensor")).op();
         Stage& from_stage = s.stage(inst.str_attr("from_stage"));
         Loop from = from_stage.loop_or_fused(inst.str_attr("from"));
         st.prefetch(tensor, loop(st, inst, 0), from_stage, from, inst.int_attr("offset"));
         return {};
       }},
      {"compute_at",
       MethodOf::Stage,
       {stage_param("parent", "target"), loop_param("loop")},
       0,
       [](Schedule& s, Stage& st, const Instruction& inst) -> Made {
         Stage& target = s.stage(inst.str_attr("target"));
         st.compute_at(target, loop(target, inst, 0));
         return {};
       }},
      {"compute_inline",
       MethodOf::Stage,
       {},
       0,
       [](Schedule&, Stage& st, const Instruction&) -> Made {
         st.compute_inline();
         return {};
       }},
      {"compute_root",
       MethodOf::Stage,
       {},
       0,
       [](Schedule&, Stage& st, const Instruction&) -> Made {
         st.compute_root();
         return {};
       }},
      {"storage_align",
       MethodOf::Stage,
       {attr_param("axis", T::Int, "dim"), attr_param("factor", T::Int), attr_param("offset", T::Int)},
       0,
       [](Schedule&, Stage& st, const Instruction& inst) -> Made {
         int dim = static_cast<int>(inst.int_attr("dim"));
         st.set_storage_align(dim, inst.int_attr("factor"), inst.int_attr("offset"));
         return {};
       }},
      {"set_scope",
       MethodOf::Stage,
       {attr_param("scope", T::String)},
       0,
       [](Schedule&, Stage& st, const Instruction& inst) -> Made {
         st.set_scope(inst.str_attr("scope"));
         return {};
       }},
      {"cache_read",
       MethodOf::Schedule,
       {self_stage_param("tensor"), attr_param("scope", T::String), attr_param("readers", T::StringList)},
       1,
       [](Schedule& s, Stage& st, const Instruction& inst) -> Made {
         std::vector<Tensor> readers;
         for (const auto& r : inst.list_attr("readers")) readers.push_back(s.stage(r).op());
         return {s[s.cache_read(st.op(), inst.str_attr("scope"), readers)].name()};
       }},
      {"cache_write",
       MethodOf::Schedule,
       {self_stage_param("tensor"), attr_param("scope", T::String)},
       1,
       [](Schedule& s, Stage& st, const Instruction& inst) -> Made {
         return {s[s.cache_write(st.op(), inst.str_attr("scope"))].name()};
       }},
      {"rfactor",
       MethodOf::Schedule,
       {self_stage_param("tensor"), loop_param("loop"), keyword_param("factor_axis", T::Int)},
       1,
       [](Schedule& s, Stage& st, const Instruction& inst) -> Made {
         int factor_axis = static_cast<int>(inst.int_attr("factor_axis"));
         return {s[s.rfactor(st.op(), loop(st, inst, 0), factor_axis)].name()};
       }},
  };
  return table;
}

}  // namespace tessera::schedule
