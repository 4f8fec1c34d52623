// CPU templates of the math family's compute definitions, by tag.
#include "schedule/templates/math.h"

#include "schedule/templates/cpu.h"
#include "schedule/templates/extent_hint.h"
#include "tensor_ir/functor.h"
#include "tensor_ir/graph.h"
#include "tensor_ir/op.h"
#include "tensor_ir/substitute.h"

namespace tessera::schedule {

using tensor_ir::ComputeOp;

namespace {

// Below this many elements read, threads cost more than they save.
constexpr int64_t kMinParallelWork = 32768;
// Parts of a parallel partial reduction (rfactor): enough for the cores, few to combine.
constexpr int64_t kPartialSums = 16;
// Each part should still read this much.
constexpr int64_t kMinPartWork = 8192;
// Vector accumulators a kept-innermost reduction keeps in flight (hides the add latency).
constexpr int64_t kAccumulators = 4;
// Innermost reductions up to this long are vectorized by lanes (see schedule_reduced_innermost).
constexpr int64_t kShortReduction = 128;

// The load of the reduced data: the first one indexed by a reduction variable.
const tensor_ir::ProducerLoad* reduced_load(const std::vector<Expr>& loads, const tensor_ir::Reduce* r) {
  for (const auto& e : loads) {
    const auto* load = e.as<tensor_ir::ProducerLoad>();
    for (const auto& index : load->indices)
      for (const auto& iv : r->axis)
        if (tensor_ir::uses_var(index, iv.var().get())) return load;
  }
  return nullptr;
}

// Whether every load reads along `v` contiguously (v is its last index and in no other) or not
// at all: then vectors along v need no gathers.
bool vectorizable_along(const std::vector<Expr>& loads, const Var& v) {
  for (const auto& e : loads) {
    const auto& idx = e.as<tensor_ir::ProducerLoad>()->indices;
    for (size_t d = 0; d < idx.size(); ++d) {
      if (!tensor_ir::uses_var(idx[d], v.get())) continue;
      if (d + 1 != idx.size() || idx[d].as<tensor_ir::VarNode>() != v.get()) return false;
    }
  }
  return true;
}

int64_t extent_of(const tensor_ir::IterVar& iv) { return extent_hint(iv->dom.extent); }

// The reduction loops whose variables index the load's trailing dimensions, innermost last, in
// order and alone (x[..., r1, r2]): fused, they walk memory contiguously.
size_t contiguous_trailing(const tensor_ir::ProducerLoad* load, const std::vector<tensor_ir::IterVar>& raxis) {
  size_t n = 0;
  for (size_t k = 0; k < raxis.size() && k < load->indices.size(); ++k) {
    const auto& index = load->indices[load->indices.size() - 1 - k];
    const auto* v = index.as<tensor_ir::VarNode>();
    if (!v || v != raxis[raxis.size() - 1 - k].var().get()) break;
    ++n;
  }
  return n;
}

void schedule_stage(Schedule& s, const Tensor& t, bool may_split);
void schedule_kept_innermost(Schedule& s, const Tensor& t, int64_t work);

void schedule_reduced_innermost(Schedule& s, const Tensor& t, const tensor_ir::ProducerLoad* load, int64_t work,
                                bool may_split) {
  Stage* st = &s[t];
  const auto* c = st->op().as<ComputeOp>();
  const auto& raxis = c->reduce_axis();
  int64_t out = 1;
  for (const auto& iv : c->axis) out *= extent_of(iv);
  // Few outputs for much work: parallel partial reductions over chunks of the outermost
  // reduction loop, combined by a small final reduction.
  int64_t r0 = extent_of(raxis[0]);
  int64_t parts = std::min(kPartialSums, work / kMinPartWork);
  if (may_split && out < kPartialSums / 2 && parts >= 2 && r0 >= parts) {
    Loop po = st->split_nparts(st->loop(raxis[0]), parts).first;
    schedule_stage(s, s.rfactor(t, po, 0), false);
    schedule_stage(s, t, false);
    return;
  }
  size_t contiguous = load ? contiguous_trailing(load, raxis) : 0;
  // A short contiguous innermost reduction: LLVM would unroll it whole and vectorize across
  // rows with gathers. Partial results per vector lane (rfactor of the lanes) run vectorized,
  // a small reduction over the lanes follows. Lanes must divide the extent: a tail would leave
  // a guard in the vector loop.
  int64_t last = extent_of(raxis.back());
  const int register_lanes = s.hardware().lanes(c->dtype);
  int lanes = 0;
  for (int v : {register_lanes, 8, 4})
    if (!lanes && v <= register_lanes && last % v == 0) lanes = v;
  if (may_split && contiguous > 0 && lanes && last >= 2 * lanes && last <= kShortReduction) {
    Loop ri = st->split(st->loop(raxis.back()), lanes).second;
    Tensor partial = s.rfactor(t, ri, static_cast<int>(c->axis.size()));
    schedule_kept_innermost(s, partial, work);
    schedule_stage(s, t, false);
    vectorize_combining_loop(s[t]);
    return;
  }
  std::vector<Loop> data, reduce;
  for (const auto& l : st->leaf_loops()) (l->kind == tensor_ir::IterKind::Reduce ? reduce : data).push_back(l);
  Loop inner = reduce.back();
  for (size_t k = 1; k < contiguous; ++k) inner = st->fuse(reduce[reduce.size() - 1 - k], inner);
  if (data.empty()) return;
  Loop fused = fuse_for_parallel(*st, data);
  if (out > 1) parallel_if_worth(*st, fused, t, work, kMinParallelWork);
}

void schedule_kept_innermost(Schedule& s, const Tensor& t, int64_t work) {
  Stage& st = s[t];
  const auto* c = st.op().as<ComputeOp>();
  std::vector<Loop> data, reduce;
  for (const auto& l : st.leaf_loops()) (l->kind == tensor_ir::IterKind::Reduce ? reduce : data).push_back(l);
  int64_t extent = extent_of(c->axis.back());
  int lanes = s.hardware().lanes(c->dtype);
  std::vector<Loop> outer(data.begin(), data.end() - 1), inner;
  if (extent >= lanes) {
    auto [vo, vi] = st.split(data.back(), lanes);
    // Splitting an uneven vector count again would leave guarded tails inside the reduction.
    if (extent % (lanes * kAccumulators) == 0) {
      auto [voo, voi] = st.split(vo, kAccumulators);
      outer.push_back(voo);
      inner = {voi, vi};
    } else {
      outer.push_back(vo);
      inner = {vi};
    }
  } else if (extent > 1) {
    inner = {data.back()};
  } else {
    outer.push_back(data.back());
  }
  std::vector<Loop> order = outer;
  order.insert(order.end(), reduce.begin(), reduce.end());
  order.insert(order.end(), inner.begin(), inner.end());
  st.reorder(order);
  if (!inner.empty()) st.vectorize(inner.back());
  if (inner.size() == 2) st.unroll(inner[0]);
  if (outer.empty()) return;
  parallel_if_worth(st, fuse_for_parallel(st, outer), t, work, kMinParallelWork);
}

void schedule_stage(Schedule& s, const Tensor& t, bool may_split) {
  const auto* c = s[t].op().as<ComputeOp>();
  const auto* r = c->body.as<tensor_ir::Reduce>();
  int64_t work = 1;
  for (const auto& iv : c->axis) work *= extent_of(iv);
  for (const auto& iv : r->axis) work *= extent_of(iv);
  std::vector<Expr> loads = leaf_loads(s, r->source);
  // Vectors along the output's last axis when the loads allow it (the kept axis is the data's
  // innermost, or the data does not depend on it); otherwise along the reduction.
  if (!c->axis.empty() && extent_of(c->axis.back()) > 1 && vectorizable_along(loads, c->axis.back().var()))
    schedule_kept_innermost(s, t, work);
  else schedule_reduced_innermost(s, t, reduced_load(loads, r), work, may_split);
}

}  // namespace

void schedule_reduction_stage(Schedule& s, const Tensor& t) { schedule_stage(s, t, true); }

void vectorize_combining_loop(Stage& st) {
  const Loop innermost = st.leaf_loops().back();
  if (innermost->kind == tensor_ir::IterKind::Reduce && innermost->for_kind == ForKind::Serial) st.vectorize(innermost);
}

namespace {

// Injective producers inlined; every remaining stage by its kind.
void schedule_math_group(Schedule& s, const Tensor& output) {
  inline_injective_producers(s, output);
  for (const Tensor& t : tensor_ir::topological_order({output})) {
    const auto* c = t.as<ComputeOp>();
    if (!c || s[t].attach_kind() != AttachKind::Root) continue;
    if (c->body.as<tensor_ir::Reduce>()) schedule_reduction_stage(s, t);
    else schedule_elementwise_stage(s, t);
  }
}

}  // namespace

void add_math_templates(std::map<std::string, TunableTemplate>& t) {
  for (const char* tag : {"elemwise", "broadcast", "reduce"}) t[tag] = without_knobs(schedule_math_group);
}

}  // namespace tessera::schedule
