// The primitives that change the dataflow graph, not just loops: cache_read, cache_write and
// rfactor add a stage and rewrite the operations around it.
#include <algorithm>
#include <unordered_map>

#include "runtime/error.h"
#include "schedule/schedule.h"
#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/functor.h"
#include "tensor_ir/op.h"
#include "tensor_ir/substitute.h"

namespace tessera::schedule {

using namespace tensor_ir;

namespace {

class ReadReplacer : public IRMutator {
 public:
  ReadReplacer(const Tensor& from, const Tensor& to) : from_(from), to_(to) {}
  using IRMutator::mutate;

 protected:
  Expr mutate_(const ProducerLoad* op) override {
    Expr e = IRMutator::mutate_(op);
    const auto* load = e.as<ProducerLoad>();
    if (load && load->tensor.same_as(from_)) return ProducerLoad::make(to_, load->indices);
    return e;
  }

 private:
  Tensor from_, to_;
};

// The same computation with `body` (keeps the axes, so the stage's loops stay valid).
Tensor with_body(const Tensor& op, Expr body) {
  const auto* c = op.as<ComputeOp>();
  return ComputeOp::make(c->name, c->axis, std::move(body), c->tag);
}

// Fresh data-parallel axes shaped like `axes`, and the substitution from the old ones.
std::vector<IterVar> fresh_axes(const std::vector<IterVar>& axes, VarMap& map) {
  std::vector<IterVar> out;
  for (const auto& iv : axes) {
    Var v(iv.name());
    map[iv.var().get()] = v;
    out.push_back(IterVarNode::make(v, iv->dom, IterKind::DataPar));
  }
  return out;
}

std::vector<Expr> as_exprs(const std::vector<IterVar>& axes) {
  std::vector<Expr> out;
  for (const auto& iv : axes) out.push_back(iv.var());
  return out;
}

}  // namespace

void Schedule::replace_reads(const std::vector<Stage*>& readers, const Tensor& from, const Tensor& to) {
  for (Stage* r : readers) {
    const auto* c = r->op_.as<ComputeOp>();
    Tensor old_op = r->op_;
    std::vector<Stage*> next = consumers(*r);
    Tensor new_op = with_body(old_op, ReadReplacer(from, to).mutate(c->body));
    // Outputs keep answering to the tensor the user holds through origin_op_.
    for (auto& o : outputs_)
      if (o.same_as(old_op)) o = new_op;
    r->op_ = new_op;
    // The reader is a new operation now: its own readers must read that one.
    if (!next.empty()) replace_reads(next, old_op, new_op);
  }
}

Tensor Schedule::cache_read(const Tensor& t, const std::string& scope, const std::vector<Tensor>& readers) {
  Stage& source = (*this)[t];
  check_storage_scope("cache_read", source.name_, scope);
  if (readers.empty()) fail("cache_read of ", source.name_, ": no readers given");
  std::vector<Stage*> reader_stages;
  std::vector<std::string> reader_names;
  auto consumers_of = consumers(source);
  for (const auto& r : readers) {
    Stage& rs = (*this)[r];
    if (std::find(consumers_of.begin(), consumers_of.end(), &rs) == consumers_of.end())
      fail("cache_read of ", source.name_, ": stage ", rs.name_, " does not read it");
    reader_stages.push_back(&rs);
    reader_names.push_back(rs.name_);
  }
  Tensor src = source.op_;
  std::vector<IterVar> axes;
  for (size_t d = 0; d < src.ndim(); ++d)
    axes.push_back(IterVarNode::make(Var("ax" + std::to_string(d)), Range(Expr(0), src->shape[d]), IterKind::DataPar));
  Tensor cache =
      ComputeOp::make(unique_stage_name(source.name_ + "." + scope), axes, src(as_exprs(axes)), "cache_read");
  replace_reads(reader_stages, src, cache);
  Stage& stage = add_stage(cache, false, position_of(source) + 1);
  stage.scope_ = scope;
  source.record({"cache_read", "", {}, {{"scope", scope}, {"readers", reader_names}}, {stage.name_}});
  return cache;
}

Tensor Schedule::cache_write(const Tensor& t, const std::string& scope) {
  Stage& stage = (*this)[t];
  const auto* c = stage.op_.as<ComputeOp>();
  if (!c) fail("cache_write: ", stage.name_, " is an input (placeholder)");
  check_storage_scope("cache_write", stage.name_, scope);
  if (stage.has_loop_schedule() || stage.attach_kind_ != AttachKind::Root)
    fail("cache_write of ", stage.name_, " must come before any other primitive on that stage");
  // The cache computes the original definition on fresh axes; the stage becomes a copy of it.
  VarMap map;
  std::vector<IterVar> axes = fresh_axes(c->axis, map);
  Tensor cache = ComputeOp::make(unique_stage_name(stage.name_ + "." + scope), axes, substitute(c->body, map), c->tag);
  Tensor copy = ComputeOp::make(c->name, c->axis, cache(as_exprs(c->axis)), "cache_write");
  for (auto& o : outputs_)
    if (o.same_as(stage.op_)) o = copy;
  replace_reads(consumers(stage), stage.op_, copy);  // another output may read it
  stage.op_ = copy;
  stage.init_loops();
  Stage& cache_stage = add_stage(cache, false, position_of(stage));
  cache_stage.scope_ = scope;
  stage.record({"cache_write", "", {}, {{"scope", scope}}, {cache_stage.name_}});
  return cache;
}

Tensor Schedule::rfactor(const Tensor& t, const Loop& loop, int factor_axis) {
  Stage& stage = (*this)[t];
  const auto* c = stage.op_.as<ComputeOp>();
  const auto* reduce = c ? c->body.as<Reduce>() : nullptr;
  if (!reduce) fail("rfactor: ", stage.name_, " is not a reduction");
  stage.leaf_position(loop, "rfactor");
  if (loop->kind != IterKind::Reduce)
    fail("rfactor on stage ", stage.name_, ": ", loop->name, " is not a reduction loop");
  if (factor_axis < 0 || factor_axis > static_cast<int>(c->axis.size()))
    fail("rfactor on stage ", stage.name_, ": factor_axis ", factor_axis, " out of range");
  if (stage.attach_kind_ != AttachKind::Root)
    fail("rfactor on stage ", stage.name_, ": apply it before compute_at/compute_inline");
  // The stage gets a new definition, so only its reduction loops may have been scheduled.
  for (const auto& l : stage.leaf_loops_)
    if (l->kind == IterKind::DataPar &&
        (l->for_kind != ForKind::Serial || !l->pragmas.empty() || !l->thread_tag.empty()))
      fail("rfactor on stage ", stage.name_, ": apply it before annotating data-parallel loop ", l->name);
  for (const auto& r : stage.relations_)
    if ((r.kind == Relation::Split ? r.split.parent : r.fuse.outer)->kind == IterKind::DataPar)
      fail("rfactor on stage ", stage.name_, ": apply it before splitting or fusing data-parallel loops");

  // Extents of the reduction loops (constants, or expressions of symbolic dimensions) and each
  // root reduction variable as an expression of the leaves (parent = outer * inner_extent +
  // inner), with conditions for uneven splits.
  std::unordered_map<const LoopNode*, Expr> extent;
  std::unordered_map<const LoopNode*, Expr> value;
  for (const auto& l : stage.root_loops_) {
    if (l->kind != IterKind::Reduce) continue;
    const IterVar* iv = nullptr;
    for (const auto& r : reduce->axis)
      if (r.var().same_as(l->var)) iv = &r;
    if (!is_zero((*iv)->dom.min))
      fail("rfactor on stage ", stage.name_, ": reduction axis ", l->name, " needs a domain starting at 0");
    extent[l.get()] = (*iv)->dom.extent;
  }
  for (const auto& r : stage.relations_) {
    if (r.kind == Relation::Fuse) {
      if (r.fuse.fused->kind == IterKind::Reduce)
        fail("rfactor on stage ", stage.name_, ": fused reduction loops are not supported; split only");
      continue;
    }
    const auto& s = r.split;
    if (s.parent->kind != IterKind::Reduce) continue;
    const Expr& e = extent.at(s.parent.get());
    extent[s.inner.get()] = arith::simplify(s.factor ? Expr(s.factor) : floordiv(e + (s.nparts - 1), Expr(s.nparts)));
    extent[s.outer.get()] = arith::simplify(s.factor ? floordiv(e + (s.factor - 1), Expr(s.factor)) : Expr(s.nparts));
  }
  // New variables: the factored loop becomes a data axis, the other reduction leaves new axes.
  VarMap map;
  std::vector<IterVar> rf_axes = fresh_axes(c->axis, map);
  Var rf_var(loop->name);
  rf_axes.insert(rf_axes.begin() + factor_axis,
                 IterVarNode::make(rf_var, Range(Expr(0), extent.at(loop.get())), IterKind::DataPar));
  std::vector<IterVar> rf_reduce;
  for (const auto& l : stage.leaf_loops_) {
    if (l->kind != IterKind::Reduce) continue;
    if (l == loop) {
      value[l.get()] = rf_var;
      continue;
    }
    IterVar rv = reduce_axis(Range(Expr(0), extent.at(l.get())), l->name);
    rf_reduce.push_back(rv);
    value[l.get()] = rv.var();
  }
  Expr condition = reduce->condition;
  for (auto it = stage.relations_.rbegin(); it != stage.relations_.rend(); ++it) {
    if (it->kind != Relation::Split || it->split.parent->kind != IterKind::Reduce) continue;
    const auto& s = it->split;
    const Expr& inner = extent.at(s.inner.get());
    Expr parent = value.at(s.outer.get()) * inner + value.at(s.inner.get());
    value[s.parent.get()] = parent;
    if (!arith::can_prove(extent.at(s.outer.get()) * inner == extent.at(s.parent.get())))
      // likely: the loops partition at it (tensor_ir/transforms/loop_partition.h), so all but the
      // last iterations read without the guard's masks.
      condition = logical_and(condition, call(Intrinsic::likely, {parent < extent.at(s.parent.get())}));
  }
  for (const auto& l : stage.root_loops_)
    if (l->kind == IterKind::Reduce) map[l->var.get()] = value.at(l.get());
  if (rf_reduce.empty()) {
    // Everything but the factored loop is gone: the rf stage is a plain (guarded) computation.
    rf_reduce.push_back(reduce_axis(Range(Expr(0), Expr(1)), "unit"));
  }
  Expr rf_body = Reduce::make(reduce->combiner, substitute(reduce->source, map), rf_reduce, substitute(condition, map));
  Tensor rf = ComputeOp::make(unique_stage_name(stage.name_ + ".rf"), rf_axes, rf_body, c->tag);

  // The original stage now reduces the partial results over the factored axis.
  IterVar k = reduce_axis(Range(Expr(0), extent.at(loop.get())), loop->name);
  std::vector<Expr> idx = as_exprs(c->axis);
  idx.insert(idx.begin() + factor_axis, k.var());
  Tensor combined = ComputeOp::make(c->name, c->axis, Reduce::make(reduce->combiner, rf(idx), {k}, Expr()), c->tag);
  replace_reads(consumers(stage), stage.op_, combined);
  for (auto& o : outputs_)
    if (o.same_as(stage.op_)) o = combined;
  std::string loop_name = loop->name;
  stage.op_ = combined;
  stage.init_loops();
  Stage& rf_stage = add_stage(rf, false, position_of(stage));
  stage.record({"rfactor", "", {loop_name}, {{"factor_axis", int64_t(factor_axis)}}, {rf_stage.name_}});
  return rf;
}

}  // namespace tessera::schedule
