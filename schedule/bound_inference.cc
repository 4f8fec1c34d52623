#include "schedule/bound_inference.h"

#include <algorithm>
#include <unordered_set>

#include "runtime/error.h"
#include "tensor_ir/arith/interval.h"
#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/functor.h"
#include "tensor_ir/op.h"
#include "tensor_ir/printer.h"

namespace tessera::schedule {

using namespace tensor_ir;
namespace arith = tensor_ir::arith;

namespace {

// Replaces reads of inlined tensors with their definitions, indices first (a gather may read
// one inlined tensor to index another).
class Inliner : public IRMutator {
 public:
  explicit Inliner(const std::unordered_map<const Object*, const ComputeOp*>& inlined,
                   const std::unordered_map<const Object*, Expr>& bodies)
      : inlined_(inlined), bodies_(bodies) {}
  using IRMutator::mutate;

 protected:
  Expr mutate_(const ProducerLoad* op) override {
    Expr e = IRMutator::mutate_(op);
    const auto* load = e.as<ProducerLoad>();
    auto it = inlined_.find(load->tensor.get());
    if (it == inlined_.end()) return e;
    VarMap map;
    for (size_t d = 0; d < load->indices.size(); ++d) map[it->second->axis[d].var().get()] = load->indices[d];
    return substitute(bodies_.at(load->tensor.get()), map);
  }

 private:
  const std::unordered_map<const Object*, const ComputeOp*>& inlined_;
  const std::unordered_map<const Object*, Expr>& bodies_;
};

// Every read of one tensor in an expression: its index lists.
class AccessCollector : public IRVisitor {
 public:
  explicit AccessCollector(const Object* tensor) : tensor_(tensor) {}
  std::vector<std::vector<Expr>> accesses;

 protected:
  void visit_(const ProducerLoad* op) override {
    if (op->tensor.get() == tensor_) accesses.push_back(op->indices);
    IRVisitor::visit_(op);
  }

 private:
  const Object* tensor_;
};

class BoundInference {
 public:
  explicit BoundInference(Schedule& s) : schedule_(s) {}

  LoweringPlan run() {
    compute_effective_bodies();
    const auto& stages = schedule_.stages();
    // A symbolic dimension is never negative; knowing it simplifies the extents of split loops.
    for (const auto& st : stages)
      for (const Expr& d : st->op()->shape)
        for (const Var& v : vars_of(d)) var_bounds_[v.get()] = {0, arith::ConstBound::kPosInf};
    for (const auto& st : stages)
      for (const auto& l : st->leaf_loops())
        if (is_thread_tag(l->thread_tag)) thread_tag_of_[l->var.get()] = l->thread_tag;
    std::vector<StagePlan> plans(stages.size());
    // Consumers before producers: a stage's region depends on its consumers' loops.
    for (size_t i = stages.size(); i-- > 0;) {
      Stage* st = stages[i].get();
      if (!st->op().as<ComputeOp>() || st->attach_kind() == AttachKind::Inline) continue;
      plans[i].stage = st;
      plans[i].body = bodies_.at(st->op().get());
      planned_[st] = &plans[i];
      infer_stage(plans[i]);
    }
    LoweringPlan plan;
    for (auto& p : plans) {
      if (!p.stage) continue;
      plan.index[p.stage] = plan.stages.size();
      plan.stages.push_back(std::move(p));
    }
    plan.var_bounds = var_bounds_;
    return plan;
  }

 private:
  void compute_effective_bodies() {
    std::unordered_map<const Object*, const ComputeOp*> inlined;
    for (const auto& st : schedule_.stages()) {
      const auto* c = st->op().as<ComputeOp>();
      if (!c) continue;
      bodies_[st->op().get()] = Inliner(inlined, bodies_).mutate(c->body);
      if (st->attach_kind() == AttachKind::Inline) inlined[st->op().get()] = c;
      if (st->attach_kind() == AttachKind::At && st->attach_stage()->attach_kind() == AttachKind::Inline)
        fail("stage ", st->name(), " is computed at a loop of ", st->attach_stage()->name(),
             ", which is inlined and has no loops");
    }
  }

  Expr simplify(const Expr& e) { return arith::simplify(e, var_bounds_); }

  void infer_stage(StagePlan& p) {
    Stage& st = *p.stage;
    const auto* c = st.op().as<ComputeOp>();
    // Context: where the stage's loops sit.
    if (st.attach_kind() == AttachKind::At) {
      const StagePlan* target = planned(st.attach_stage(), st);
      const Var& at = st.attach_loop()->var;
      auto it = std::find_if(target->context.begin(), target->context.end(),
                             [&](const auto& e) { return e.first.same_as(at); });
      p.context.assign(target->context.begin(), it + 1);
      p.scope = st.scope().empty() ? scope_by_threads(p.context) : st.scope();
      infer_region(p);
    } else {
      p.scope = st.scope().empty() ? "global" : st.scope();
      for (size_t d = 0; d < c->axis.size(); ++d) {
        p.region.push_back(Range(Expr(0), c->shape[d]));
        p.buffer_extent.push_back(c->shape[d]);
      }
    }
    // Root loop ranges: the region for data axes, the whole domain for reduction axes.
    std::vector<Range> root_ranges = p.region;
    for (const auto& r : c->reduce_axis()) root_ranges.push_back(r->dom);
    const auto& roots = st.root_loops();
    for (size_t i = 0; i < roots.size(); ++i) p.extent[roots[i].get()] = simplify(root_ranges[i].extent);
    // Extents flow down through splits and fuses.
    for (const auto& r : st.relations()) {
      if (r.kind == Relation::Split) {
        const auto& s = r.split;
        Expr e = p.extent.at(s.parent.get());
        Expr inner = s.factor ? Expr(s.factor) : floordiv(e + (s.nparts - 1), Expr(s.nparts));
        Expr outer = s.factor ? floordiv(e + (s.factor - 1), Expr(s.factor)) : Expr(s.nparts);
        p.extent[s.inner.get()] = simplify(inner);
        p.extent[s.outer.get()] = simplify(outer);
      } else {
        const auto& f = r.fuse;
        p.extent[f.fused.get()] = simplify(p.extent.at(f.outer.get()) * p.extent.at(f.inner.get()));
      }
    }
    for (const auto& leaf : st.leaf_loops()) {
      Expr ext = p.extent.at(leaf.get());
      p.context.emplace_back(leaf->var, ext);
      arith::ConstBound b = arith::const_bound(ext, var_bounds_);
      var_bounds_[leaf->var.get()] = {0, b.max == arith::ConstBound::kPosInf ? b.max : b.max - 1};
    }
    // Values flow up: each loop's offset from the leaves, then each root's value.
    std::unordered_map<const LoopNode*, Expr> offset;
    for (const auto& leaf : st.leaf_loops()) offset[leaf.get()] = leaf->var;
    const auto& rels = st.relations();
    for (auto it = rels.rbegin(); it != rels.rend(); ++it) {
      if (it->kind == Relation::Split) {
        const auto& s = it->split;
        Expr parent = simplify(offset.at(s.outer.get()) * p.extent.at(s.inner.get()) + offset.at(s.inner.get()));
        offset[s.parent.get()] = parent;
        Expr covered = p.extent.at(s.outer.get()) * p.extent.at(s.inner.get());
        if (!arith::can_prove(covered <= p.extent.at(s.parent.get()), var_bounds_))
          p.predicates.push_back(call(Intrinsic::likely, {simplify(parent < p.extent.at(s.parent.get()))}));
      } else {
        const auto& f = it->fuse;
        Expr inner_ext = p.extent.at(f.inner.get()), fused = offset.at(f.fused.get());
        // A fused loop of one extent-1 loop is the other: without the division, bounds of the
        // other's uses stay tight (a tile of rows [1, 25] fused would need all 25 rows).
        if (is_const_int(p.extent.at(f.outer.get()), 1)) {
          offset[f.outer.get()] = Expr(0), offset[f.inner.get()] = fused;
        } else if (is_const_int(inner_ext, 1)) {
          offset[f.outer.get()] = fused, offset[f.inner.get()] = Expr(0);
        } else {
          offset[f.outer.get()] = simplify(floordiv(fused, inner_ext));
          offset[f.inner.get()] = simplify(floormod(fused, inner_ext));
        }
      }
    }
    for (size_t i = 0; i < roots.size(); ++i)
      p.root_value[roots[i]->var.get()] = simplify(root_ranges[i].min + offset.at(roots[i].get()));
    for (const auto& spec : st.prefetches()) p.prefetches.push_back(infer_prefetch(p, spec));
  }

  size_t context_position(const StagePlan& p, const Loop& loop, const char* role, const PrefetchSpec& spec) {
    auto it =
        std::find_if(p.context.begin(), p.context.end(), [&](const auto& e) { return e.first.same_as(loop->var); });
    if (it == p.context.end())
      fail("prefetch of ", spec.tensor.name(), " on stage ", p.stage->name(), ": its ", role, " loop ", loop->name,
           " is not a loop around the stage's computation (split or fused after the prefetch?)");
    return static_cast<size_t>(it - p.context.begin());
  }

  // The region of spec.tensor that the iteration `offset` steps further along `from` reads (the
  // loops inside `from` ranging), and which share of it each iteration of `at` fetches: the
  // `offset` iterations of `from` before that one, times the iterations of the loops from
  // `from` down to `at`, each take one. A `from` fused into a leaf steps along that leaf by the
  // iterations of the loops fused inside it.
  PrefetchRegion infer_prefetch(const StagePlan& p, const PrefetchSpec& spec) {
    auto [from_leaf, inside] = spec.from_stage->leaf_of_fused(spec.from);
    size_t at = context_position(p, spec.at, "at", spec), from = context_position(p, from_leaf, "from", spec);
    if (from > at)
      fail("prefetch of ", spec.tensor.name(), " on stage ", p.stage->name(), ": loop ", spec.from->name, " is inside ",
           spec.at->name);
    for (size_t d = 0; d < spec.tensor.ndim(); ++d)
      if (!as_const_int(spec.tensor->shape[d]))
        fail("prefetch of ", spec.tensor.name(), " on stage ", p.stage->name(), ": its dimension ", d, " (",
             to_string(spec.tensor->shape[d]), ") is symbolic; a prefetch needs a static shape");
    const auto& from_extent = spec.from_stage == p.stage ? p.extent : planned(spec.from_stage, *p.stage)->extent;
    Expr steps(spec.offset);
    for (const Loop& l : inside) steps = steps * from_extent.at(l.get());
    steps = simplify(steps);
    AccessCollector collect(spec.tensor.get());
    collect.visit(p.body);
    if (collect.accesses.empty())
      fail("prefetch: stage ", p.stage->name(), " does not read ", spec.tensor.name(), " itself");
    arith::IntervalMap ranging;
    for (size_t i = from + 1; i < p.context.size(); ++i) {
      const auto& [var, ext] = p.context[i];
      ranging[var.get()] = {make_zero(kIndexType), arith::eval_interval(simplify(ext - 1), ranging).max};
    }
    VarMap ahead{{from_leaf->var.get(), from_leaf->var + steps}};
    std::vector<arith::Interval> needed(spec.tensor.ndim());
    for (size_t a = 0; a < collect.accesses.size(); ++a) {
      for (size_t d = 0; d < needed.size(); ++d) {
        Expr index = simplify(substitute(substitute(collect.accesses[a][d], p.root_value), ahead));
        arith::Interval iv = arith::eval_interval(index, ranging);
        if (!iv.bounded())
          fail("prefetch: cannot bound the index ", to_string(collect.accesses[a][d]), " of ", spec.tensor.name(),
               " read by ", p.stage->name());
        needed[d] = a ? arith::union_of(needed[d], iv) : iv;
      }
    }
    PrefetchRegion r{spec.at, spec.tensor, {}, {}, floormod(from_leaf->var, steps), steps};
    // Constant extents keep the arithmetic of the prefetch loop cheap; the region may then run
    // past the end of the tensor (in the last iterations), which a prefetch may: it never faults.
    for (size_t d = 0; d < needed.size(); ++d) {
      Expr lo = simplify(needed[d].min);
      arith::ConstBound extent = arith::const_bound(simplify(needed[d].max - lo + 1), var_bounds_);
      if (extent.max == arith::ConstBound::kPosInf)
        fail("prefetch of ", spec.tensor.name(), " on stage ", p.stage->name(), ": the region of dimension ", d,
             " has no constant size");
      r.min.push_back(lo);
      r.extent.push_back(std::min(extent.max, spec.tensor->dim(d)));
    }
    for (size_t i = from + 1; i <= at; ++i) {
      // A loop of the region computed per iteration of an outer one: its extent a clipped span
      // (min(i, N - 1) + 1 - max(i, 0), at most 1) where the sizes are symbolic.
      const int64_t extent = arith::upper_bound(p.context[i].second, var_bounds_);
      if (extent == arith::ConstBound::kPosInf)
        fail("prefetch of ", spec.tensor.name(), " on stage ", p.stage->name(), ": loop ", p.context[i].first.name(),
             " has no constant extent (", to_string(p.context[i].second), ")");
      r.part = r.part * Expr(extent) + p.context[i].first;
      r.parts = r.parts * Expr(extent);
    }
    r.part = simplify(r.part);
    r.parts = simplify(r.parts);
    return r;
  }

  const StagePlan* planned(const Stage* s, const Stage& for_stage) {
    auto it = planned_.find(s);
    if (it == planned_.end())
      fail("stage ", for_stage.name(), " is computed at stage ", s->name(), ", which is not computed before it");
    return it->second;
  }

  // TVM's default scope of a stage computed inside `context`: a thread's own memory inside a loop
  // bound to threadIdx, its block's inside one bound to blockIdx.
  std::string scope_by_threads(const std::vector<std::pair<Var, Expr>>& context) const {
    std::string scope = "global";
    for (const auto& [var, extent] : context) {
      auto it = thread_tag_of_.find(var.get());
      if (it == thread_tag_of_.end()) continue;
      if (it->second.rfind("threadIdx", 0) == 0) return "local";
      scope = "shared";
    }
    return scope;
  }

  // Whether a stage of `scope` computed inside loop `var` must cover what every iteration of it
  // reads (TVM's rule): a loop bound to a thread axis runs its iterations at once, on threads that
  // share the stage's buffer when its memory is as wide as the axis: a shared buffer serves all
  // threads of a block (threadIdx relaxed, each block its own), a global one every block; a local
  // one is each thread's own.
  bool relaxed(const Var& var, const std::string& scope) const {
    auto it = thread_tag_of_.find(var.get());
    if (it == thread_tag_of_.end()) return false;
    if (scope == "global") return true;
    return scope == "shared" && it->second.rfind("threadIdx", 0) == 0;
  }

  // The region of a compute_at stage its consumers read in one iteration of the attach loop (with
  // the thread-bound loops around it that its scope relaxes ranging).
  void infer_region(StagePlan& p) {
    Stage& st = *p.stage;
    const Tensor& t = st.op();
    std::vector<arith::Interval> needed(t.ndim());
    bool any = false;
    // In schedule order, so the inferred expressions do not depend on hash-map order.
    for (const auto& candidate : schedule_.stages()) {
      auto found = planned_.find(candidate.get());
      if (found == planned_.end() || candidate.get() == &st) continue;
      const StagePlan& consumer = *found->second;
      AccessCollector collect(t.get());
      collect.visit(consumer.body);
      if (collect.accesses.empty()) continue;
      // The consumer must run inside the loop the stage is attached at.
      bool inside = consumer.context.size() >= p.context.size();
      for (size_t i = 0; inside && i < p.context.size(); ++i)
        inside = consumer.context[i].first.same_as(p.context[i].first);
      if (!inside)
        fail("compute_at: stage ", consumer.stage->name(), " reads ", st.name(), " outside the loop ",
             st.attach_loop()->name, " of ", st.attach_stage()->name(), " where ", st.name(), " is computed");
      // The consumer's loops inside the attach point range; then, over the region they give
      // (its ends simplified first, so a clipped tile's extent cancels against its start), the
      // thread-bound loops outside it that the stage's scope relaxes.
      arith::IntervalMap inner, threads;
      for (size_t i = 0; i < consumer.context.size(); ++i) {
        const auto& [var, ext] = consumer.context[i];
        bool is_inner = i >= p.context.size();
        if (!is_inner && !relaxed(var, p.scope)) continue;
        arith::IntervalMap& ranging = is_inner ? inner : threads;
        // The extent may depend on loops further out that range too (the clipped tail of a
        // tile): take its largest value over them, or the region would name their variables.
        ranging[var.get()] = {make_zero(kIndexType), arith::eval_interval(simplify(ext - 1), ranging).max};
      }
      for (const auto& idx : collect.accesses) {
        for (size_t d = 0; d < idx.size(); ++d) {
          Expr at = simplify(substitute(idx[d], consumer.root_value));
          arith::Interval iv = arith::eval_interval(at, inner);
          if (!threads.empty() && iv.bounded())
            iv = {arith::eval_interval(simplify(iv.min), threads).min,
                  arith::eval_interval(simplify(iv.max), threads).max};
          if (!iv.bounded())
            fail("bound inference: cannot bound the index ", to_string(idx[d]), " of ", st.name(), " read by ",
                 consumer.stage->name());
          needed[d] = any ? arith::union_of(needed[d], iv) : iv;
        }
        any = true;
      }
    }
    if (!any) fail("compute_at: no stage inside ", st.attach_stage()->name(), " reads ", st.name());
    // The loops around the stage, over their whole ranges: where the region lies inside the
    // tensor in every iteration of them, it needs no clipping (with symbolic sizes the simplifier
    // cannot drop a clip such as min(fused // 448, N - 1) alone).
    arith::IntervalMap around;
    bool symbolic = false;
    for (const auto& [var, ext] : p.context) {
      around[var.get()] = {make_zero(kIndexType), arith::eval_interval(simplify(ext - 1), around).max};
      symbolic |= !as_const_int(ext);
    }
    auto provably_nonnegative = [&](const Expr& e) {
      return e.defined() && arith::const_bound(simplify(e), var_bounds_).min >= 0;
    };
    for (size_t d = 0; d < t.ndim(); ++d) {
      arith::Interval domain{make_zero(kIndexType), simplify(t->shape[d] - 1)};
      arith::Interval clipped = arith::intersect(needed[d], domain);
      if (symbolic || !as_const_int(t->shape[d])) {
        if (provably_nonnegative(arith::eval_interval(needed[d].min, around).min)) clipped.min = needed[d].min;
        if (const Expr most = arith::eval_interval(needed[d].max, around).max;
            most.defined() && provably_nonnegative(domain.max - most))
          clipped.max = needed[d].max;
      }
      Expr lo = simplify(clipped.min);
      p.region.push_back(Range(lo, simplify(clipped.max - lo + 1)));
      // The buffer must hold the unclipped region in any iteration; its extent cancels outer
      // loop variables (io*8 + 7 - io*8 + 1 = 8), where the clipped one would not.
      int64_t extent = arith::upper_bound(simplify(needed[d].max) - needed[d].min + 1, var_bounds_);
      if (extent == arith::ConstBound::kPosInf) {
        // A region of symbolic size (a panel of symbolic depth) is held by a buffer of that size
        // when it depends on the dimension variables alone, not on the loops around the stage;
        // on a CPU only (a GPU's shared and local memory are sized when the kernel is compiled).
        Expr size = simplify(needed[d].max - needed[d].min + 1);
        bool holdable = !schedule_.hardware().is_gpu();
        for (const auto& [var, ext] : p.context) holdable &= !uses_var(size, var.get());
        if (!holdable)
          fail("bound inference: the region of ", st.name(), " dimension ", d,
               " has no constant size, nor one independent of the loops around it on a CPU (", to_string(needed[d].min),
               " to ", to_string(needed[d].max), ")");
        p.buffer_extent.push_back(size);
        continue;
      }
      const int64_t* whole = as_const_int(t->shape[d]);
      p.buffer_extent.push_back(Expr(whole ? std::min(extent, *whole) : extent));
    }
  }

  Schedule& schedule_;
  std::unordered_map<const Object*, Expr> bodies_;
  std::unordered_map<const Stage*, StagePlan*> planned_;
  std::unordered_map<const VarNode*, std::string> thread_tag_of_;  // loops bound to blocks or threads
  arith::BoundMap var_bounds_;
};

}  // namespace

LoweringPlan infer_bounds(Schedule& schedule) { return BoundInference(schedule).run(); }

}  // namespace tessera::schedule
