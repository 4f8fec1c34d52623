#include <unordered_set>

#include "runtime/error.h"
#include "schedule/templates/cpu.h"
#include "schedule/templates/extent_hint.h"
#include "tensor_ir/graph.h"

namespace tessera::schedule {

using tensor_ir::ComputeOp;

namespace {
// Below this much work (output elements times their reductions' steps) a parallel loop costs
// more than it saves.
constexpr int64_t kMinParallelWork = 16384;
}  // namespace

void inline_injective_producers(Schedule& s, const Tensor& output) {
  for (const Tensor& t : tensor_ir::topological_order({output})) {
    const auto* c = t.as<ComputeOp>();
    // Asks the stage, not s.outputs(): rfactor and cache_write replace an output's operation.
    if (!c || s[t].is_output() || !c->reduce_axis().empty()) continue;
    s[t].compute_inline();
  }
}

namespace {

struct LoopExtent {
  int64_t hint;
  bool symbolic;
};

// The extent of a loop of `st`, from its root loop's axis through the splits and fuses.
LoopExtent extent_of(const Stage& st, const Loop& l) {
  const auto* c = st.op().as<ComputeOp>();
  const auto& roots = st.root_loops();
  for (size_t i = 0; i < roots.size(); ++i) {
    if (roots[i] != l) continue;
    const auto& iv = i < c->axis.size() ? c->axis[i] : c->reduce_axis()[i - c->axis.size()];
    return {extent_hint(iv->dom.extent), tensor_ir::as_const_int(iv->dom.extent) == nullptr};
  }
  for (const Relation& r : st.relations()) {
    if (r.kind == Relation::Fuse && r.fuse.fused == l) {
      LoopExtent a = extent_of(st, r.fuse.outer), b = extent_of(st, r.fuse.inner);
      return {a.hint * b.hint, a.symbolic || b.symbolic};
    }
    if (r.kind != Relation::Split || (r.split.outer != l && r.split.inner != l)) continue;
    const bool given = r.split.factor ? r.split.inner == l : r.split.outer == l;  // the constant part
    const int64_t parts = r.split.factor ? r.split.factor : r.split.nparts;
    if (given) return {parts, false};
    LoopExtent p = extent_of(st, r.split.parent);
    return {(p.hint + parts - 1) / parts, p.symbolic};
  }
  fail("internal error: loop ", l->name, " is not a loop of stage ", st.name());
}

}  // namespace

Loop fuse_for_parallel(Stage& st, const std::vector<Loop>& outer, size_t* joined) {
  Loop fused = outer.at(0);
  LoopExtent first = extent_of(st, fused);
  int64_t iterations = first.hint;
  bool symbolic = first.symbolic;
  size_t i = 1;
  for (; i < outer.size(); ++i) {
    LoopExtent e = extent_of(st, outer[i]);
    if ((e.symbolic || symbolic) && iterations >= kParallelChunks) break;
    symbolic |= e.symbolic;
    fused = st.fuse(fused, outer[i]);
    iterations *= e.hint;
  }
  if (joined) *joined = i;
  return fused;
}

Loop split_into_vectors(Stage& st, const Loop& last, int64_t extent, int lanes, std::vector<Loop>& outer) {
  if (extent >= lanes) {
    auto [o, i] = st.split(last, lanes);
    outer.push_back(o);
    return i;
  }
  if (extent > 1) return last;
  outer.push_back(last);
  return Loop();
}

void schedule_generic_stage(Schedule& s, const Tensor& t) {
  Stage& st = s[t];
  const auto* c = st.op().as<ComputeOp>();
  if (!c || c->axis.empty()) return;
  std::vector<Loop> data, reduce;
  for (const auto& l : st.leaf_loops()) (l->kind == tensor_ir::IterKind::Reduce ? reduce : data).push_back(l);
  // The work counts each reduction's steps too: a one-row product of 256 outputs over 513 cached
  // values (a decoding step's attention times values) is not small.
  int64_t work = 1;
  for (size_t d = 0; d < c->axis.size(); ++d) work *= dim_hint(c, d);
  for (const auto& iv : c->reduce_axis()) work *= extent_hint(iv->dom.extent);
  // Innermost data axis: vector lanes. A reduction then runs outside it (the accumulators of
  // one vector stay in a register across the reduction).
  std::vector<Loop> outer(data.begin(), data.end() - 1);
  Loop vec = split_into_vectors(st, data.back(), dim_hint(c, c->axis.size() - 1), s.hardware().lanes(c->dtype), outer);
  std::vector<Loop> order = outer;
  order.insert(order.end(), reduce.begin(), reduce.end());
  if (vec) order.push_back(vec);
  if (order.size() > 1) st.reorder(order);
  if (vec) st.vectorize(vec);
  if (outer.empty()) return;
  parallel_if_worth(st, fuse_for_parallel(st, outer), st.op(), work, kMinParallelWork);
}

TunableTemplate without_knobs(CpuTemplate schedule) {
  return [schedule = std::move(schedule)](Schedule& s, const Tensor& output, TemplateKnobs&) { schedule(s, output); };
}

std::unique_ptr<Schedule> default_cpu_schedule(const std::vector<Tensor>& outputs, const Tensor& anchor,
                                               const HardwareParams& hardware) {
  auto s = std::make_unique<Schedule>(outputs, hardware);
  DefaultKnobs knobs;
  apply_cpu_templates(*s, outputs, anchor, knobs);
  return s;
}

void apply_cpu_templates(Schedule& s, const std::vector<Tensor>& outputs, const Tensor& anchor, TemplateKnobs& knobs) {
  const auto& templates = cpu_templates();
  for (const auto& out : outputs) {
    // Outputs sharing stages (TopK's values and indices) are scheduled once.
    if (s[out].has_loop_schedule() || s[out].attach_kind() != AttachKind::Root) continue;
    const Tensor& main = anchor.defined() ? anchor : out;
    const auto* c = main.as<ComputeOp>();
    auto it = c ? templates.find(c->tag) : templates.end();
    if (it != templates.end()) {
      it->second(s, main, knobs);
      if (main.same_as(out)) continue;
      // The epilogue after the anchor: its injective stages inline into the output.
      std::unordered_set<const tensor_ir::Object*> before;
      for (const Tensor& t : tensor_ir::topological_order({main})) before.insert(t.get());
      for (const Tensor& t : tensor_ir::topological_order({out})) {
        const auto* tc = t.as<ComputeOp>();
        if (tc && !before.count(t.get()) && !t.same_as(out) && tc->reduce_axis().empty()) s[t].compute_inline();
      }
    } else {
      inline_injective_producers(s, out);
    }
    for (const Tensor& t : tensor_ir::topological_order({out})) {
      const auto* tc = t.as<ComputeOp>();
      Stage& st = s[t];
      if (tc && st.attach_kind() == AttachKind::Root && !st.has_loop_schedule()) schedule_generic_stage(s, t);
    }
  }
}

}  // namespace tessera::schedule
