#include "autotune/sketch_rules.h"

#include <algorithm>
#include <unordered_set>

#include "schedule/schedule.h"
#include "schedule/templates/cpu.h"
#include "tensor_ir/functor.h"
#include "tensor_ir/graph.h"
#include "tensor_ir/op.h"
#include "tensor_ir/structural.h"
#include "tensor_ir/substitute.h"

namespace tessera::autotune {

using namespace tensor_ir;

namespace {

// More sketches than this multiply the sampling effort without adding much: rule variants are
// few per stage, so only kernels with many reductions reach it.
constexpr size_t kMaxSketches = 16;
// A GPU's cross-thread reduction needs some reduction axis at least this long.
constexpr int64_t kMinCrossThreadReduction = 16;

bool expensive(Intrinsic op) {
  switch (op) {
    case Intrinsic::abs:
    case Intrinsic::floor:
    case Intrinsic::ceil:
    case Intrinsic::round:
    case Intrinsic::trunc:
    case Intrinsic::isnan:
    case Intrinsic::isinf:
    case Intrinsic::bitwise_and:
    case Intrinsic::bitwise_or:
    case Intrinsic::bitwise_xor:
    case Intrinsic::bitwise_not:
    case Intrinsic::shift_left:
    case Intrinsic::shift_right:
    case Intrinsic::likely:
    case Intrinsic::reinterpret:
      return false;
    default:
      return true;
  }
}

class BranchOrExpensive : public IRVisitor {
 public:
  bool found = false;

 protected:
  void visit_(const Select* op) override { found = true; }
  void visit_(const Call* op) override {
    found |= expensive(op->op);
    IRVisitor::visit_(op);
  }
};

class VarCollector : public IRVisitor {
 public:
  std::unordered_set<const VarNode*> vars;

 protected:
  void visit_(const VarNode* op) override { vars.insert(op); }
};

// `e` with reads of the tensors in `inlined` replaced by their definitions.
class StrictInliner : public IRMutator {
 public:
  explicit StrictInliner(const std::unordered_set<const Object*>& inlined) : inlined_(inlined) {}
  using IRMutator::mutate;

 protected:
  Expr mutate_(const ProducerLoad* op) override {
    Expr e = IRMutator::mutate_(op);
    const auto* load = e.as<ProducerLoad>();
    if (!inlined_.count(load->tensor.get())) return e;
    const auto* c = load->tensor.as<ComputeOp>();
    VarMap map;
    for (size_t d = 0; d < c->axis.size(); ++d) map[c->axis[d].var().get()] = load->indices[d];
    return mutate(substitute(c->body, map));
  }

 private:
  const std::unordered_set<const Object*>& inlined_;
};

const ComputeOp* compute_of(const schedule::Stage& st) { return st.op().as<ComputeOp>(); }

struct Analysis {
  schedule::Schedule& s;
  std::unordered_set<const Object*> strict;  // stages always inlined

  // The stage a reduction's result reaches through always-inlined stages, if it reaches exactly
  // one and that is an injective output: where the reduction can be computed at a tile.
  schedule::Stage* fusion_consumer(schedule::Stage& a) {
    schedule::Stage* at = &a;
    while (true) {
      std::vector<schedule::Stage*> readers = s.consumers(*at);
      if (readers.size() != 1) return nullptr;
      at = readers[0];
      if (strict.count(at->op().get())) continue;
      const auto* c = compute_of(*at);
      return at->is_output() && c && c->reduce_axis().empty() ? at : nullptr;
    }
  }

  // Per axis of `consumer`, the axis of `anchor` indexed by exactly that axis's variable.
  std::vector<int> matched_axes(schedule::Stage& consumer, schedule::Stage& anchor) {
    const auto* c = compute_of(consumer);
    std::vector<int> matched(c->axis.size(), -1);
    Expr body = StrictInliner(strict).mutate(c->body);
    const std::vector<const ProducerLoad*> loads = loads_in(body, anchor.op().get());
    if (loads.empty()) return matched;
    const auto& first = loads[0]->indices;
    for (const auto* l : loads)
      for (size_t d = 0; d < first.size(); ++d)
        if (!structural_equal(l->indices[d], first[d])) return matched;
    for (size_t d = 0; d < first.size(); ++d) {
      for (size_t ax = 0; ax < c->axis.size(); ++ax)
        if (first[d].get() == c->axis[ax].var().get() && matched[ax] < 0) matched[ax] = static_cast<int>(d);
    }
    return matched;
  }

  // The single output depending on `st` (where it may be computed), or "".
  std::string target_of(const schedule::Stage& st) {
    std::string found;
    for (const auto& out : s.outputs()) {
      for (const auto& t : topological_order({out})) {
        if (t.get() != st.op().get()) continue;
        if (!found.empty()) return "";
        found = s[out].name();
      }
    }
    return found;
  }

  // The innermost reduction axis is long enough to split into vectors (on a GPU: some reduction
  // axis is long enough to share among a warp's threads).
  bool can_rfactor(const schedule::Stage& st) {
    const auto* c = compute_of(st);
    if (gpu()) {
      return std::any_of(c->reduce_axis().begin(), c->reduce_axis().end(), [](const IterVar& r) {
        const int64_t* k = as_const_int(r->dom.extent);
        return k && *k >= kMinCrossThreadReduction;
      });
    }
    const int64_t* k = as_const_int(c->reduce_axis().back()->dom.extent);
    return k && *k >= s.hardware().lanes(c->dtype);
  }

  bool gpu() const { return s.hardware().is_gpu(); }
};

// The rule variants of one stage (each sketch picks one per stage).
std::vector<StageSketch> variants(Analysis& an, schedule::Stage& st,
                                  const std::unordered_set<const Object*>& fused_anchors,
                                  const std::vector<std::pair<schedule::Stage*, schedule::Stage*>>& pairs) {
  const auto* c = compute_of(st);
  StageSketch base;
  base.stage = st.name();
  if (!c) return {};
  bool reduce = !c->reduce_axis().empty();
  // A GPU's tiled reduction with its inputs in registers only, and (where shared memory is on
  // the chip) staged in shared memory.
  auto with_shared = [&](StageSketch tiled) -> std::vector<StageSketch> {
    if (!an.gpu() || !an.s.hardware().gpu.dedicated_shared_memory) return {tiled};
    StageSketch shared = tiled;
    shared.shared = true;
    return {tiled, shared};
  };
  if (st.is_output()) {
    for (const auto& [consumer, anchor] : pairs) {
      if (consumer != &st) continue;
      base.loops = LoopRule::TileFused;
      base.anchor = anchor->name();
      base.matched = an.matched_axes(st, *anchor);
      return with_shared(base);
    }
    if (reduce && has_data_reuse(st.op())) {
      StageSketch cached = base;
      base.loops = LoopRule::Tile;
      cached.loops = LoopRule::TileFused;
      cached.cache_write = true;
      for (size_t d = 0; d < c->axis.size(); ++d) cached.matched.push_back(static_cast<int>(d));
      // A GPU accumulates in registers, never in the output's global memory.
      if (an.gpu()) return with_shared(cached);
      return {base, cached};
    }
    if (!reduce) {
      base.loops = LoopRule::Rows;
      return {base};
    }
  } else {
    if (fused_anchors.count(st.op().get())) {
      base.placement = Placement::InConsumer;
      return {base};
    }
    if (an.strict.count(st.op().get())) {
      base.placement = Placement::Inline;
      return {base};
    }
    if (reduce && has_data_reuse(st.op())) {
      base.loops = LoopRule::Tile;
      return {base};
    }
    base.placement = Placement::Decided;
    // A GPU's stages are computed at the root or inline: a tile level of another stage is
    // inside its threads.
    if (!an.gpu()) base.target = an.target_of(st);
    base.injective = !reduce;
    if (!reduce) {
      base.loops = LoopRule::Rows;
      return {base};
    }
  }
  // A reduction without reuse.
  base.loops = LoopRule::ReduceRows;
  if (!an.can_rfactor(st)) return {base};
  StageSketch factored = base;
  factored.loops = LoopRule::Rfactor;
  return {base, factored};
}

const char* rule_name(const StageSketch& st) {
  switch (st.loops) {
    case LoopRule::Rows:
      return "rows";
    case LoopRule::ReduceRows:
      return "reduce_rows";
    case LoopRule::Rfactor:
      return "rfactor";
    case LoopRule::Tile:
      return "tile";
    case LoopRule::TileFused:
      if (st.shared) return st.cache_write ? "cache_write_tile_shared" : "tile_fused_shared";
      return st.cache_write ? "cache_write_tile" : "tile_fused";
    case LoopRule::None:
      return st.placement == Placement::Inline ? "inline" : "in_consumer";
  }
  return "?";
}

std::string sketch_name(const std::vector<StageSketch>& stages) {
  std::string name;
  for (const auto& st : stages) {
    if (st.placement == Placement::Inline || st.placement == Placement::InConsumer) continue;
    name += (name.empty() ? "" : " ") + st.stage + ":" + rule_name(st);
    if (!st.anchor.empty()) name += "(" + st.anchor + ")";
  }
  return name;
}

}  // namespace

bool strictly_inlinable(const Tensor& t) {
  const auto* c = t.as<ComputeOp>();
  if (!c || !c->reduce_axis().empty()) return false;
  BranchOrExpensive v;
  v.visit(c->body);
  return !v.found;
}

bool has_data_reuse(const Tensor& t) {
  const auto* c = t.as<ComputeOp>();
  if (!c || c->reduce_axis().empty()) return false;
  for (const auto* load : loads_in(c->body)) {
    VarCollector used;
    for (const auto& idx : load->indices) used.visit(idx);
    for (size_t d = 0; d < c->axis.size(); ++d)
      if (c->dim(d) > 1 && !used.vars.count(c->axis[d].var().get())) return true;
  }
  return false;
}

std::vector<Sketch> generate_sketches(const std::vector<Tensor>& outputs, const schedule::HardwareParams& hardware) {
  schedule::Schedule s(outputs, hardware);
  Analysis an{s, {}};
  for (const auto& st : s.stages())
    if (!st->is_output() && strictly_inlinable(st->op())) an.strict.insert(st->op().get());
  std::vector<std::pair<schedule::Stage*, schedule::Stage*>> pairs;
  std::unordered_set<const Object*> fused_anchors;
  for (const auto& st : s.stages()) {
    if (st->is_output() || !has_data_reuse(st->op())) continue;
    if (schedule::Stage* consumer = an.fusion_consumer(*st)) {
      // One anchor per consumer: a second reduction into the same output stays at the root.
      bool taken = std::any_of(pairs.begin(), pairs.end(), [&](const auto& p) { return p.first == consumer; });
      if (taken) continue;
      pairs.emplace_back(consumer, st.get());
      fused_anchors.insert(st->op().get());
    }
  }
  // Consumers first: a stage's place may be a loop of its consumer, which must exist by then.
  std::vector<std::vector<StageSketch>> per_stage;
  for (auto it = s.stages().rbegin(); it != s.stages().rend(); ++it) {
    std::vector<StageSketch> v = variants(an, **it, fused_anchors, pairs);
    if (!v.empty()) per_stage.push_back(std::move(v));
  }
  std::vector<std::vector<StageSketch>> combos{{}};
  for (const auto& options : per_stage) {
    std::vector<std::vector<StageSketch>> next;
    for (const auto& prefix : combos)
      for (const auto& o : options) {
        if (next.size() >= kMaxSketches) break;
        next.push_back(prefix);
        next.back().push_back(o);
      }
    combos = std::move(next);
  }
  std::vector<Sketch> sketches;
  for (auto& stages : combos) sketches.push_back({sketch_name(stages), false, false, std::move(stages)});
  return sketches;
}

}  // namespace tessera::autotune
