#include "tensor_ir/transforms/unswitch_clamps.h"

#include <map>
#include <unordered_map>
#include <unordered_set>

#include "tensor_ir/arith/interval.h"
#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/functor.h"
#include "tensor_ir/op.h"
#include "tensor_ir/printer.h"
#include "tensor_ir/substitute.h"

namespace tessera::tensor_ir {

namespace {

// The clamps of the loads in one outermost loop's body that the loops inside keep below their
// bound under a condition on the loops outside, and those conditions.
class ClampFinder : public IRVisitor {
 public:
  // `outer`: the outermost loop, over its range.
  ClampFinder(const arith::BoundMap& known, arith::IntervalMap outer) : known_(known), outer_(std::move(outer)) {}

  std::unordered_map<const Min*, Expr> unclamped;  // a clamp -> its x
  std::map<std::string, Expr> conditions;          // by their text, each once
  std::unordered_set<const Min*> kept;             // clamps some read needs

  using IRVisitor::visit;

 protected:
  void visit_(const For* op) override {
    visit(op->min);
    visit(op->extent);
    bound_.insert(op->var.get());
    const arith::Interval extent = arith::eval_interval(op->extent, inner_);
    if (extent.max.defined())
      inner_[op->var.get()] = {op->min, arith::eval_interval(op->min, inner_).max + extent.max - 1};
    visit(op->body);
  }
  void visit_(const LetStmt* op) override {
    bound_.insert(op->var.get());
    IRVisitor::visit_(op);
  }
  void visit_(const Let* op) override {
    bound_.insert(op->var.get());
    IRVisitor::visit_(op);
  }
  void visit_(const Load* op) override {
    ++in_index_;
    visit(op->index);
    --in_index_;
  }
  void visit_(const Min* op) override {
    IRVisitor::visit_(op);
    if (in_index_ == 0 || !op->type.is_int() || !op->type.is_scalar()) return;
    if (!(try_unclamp(op, op->a, op->b) || try_unclamp(op, op->b, op->a))) kept.insert(op);
  }

 private:
  // Whether min(x, y) is x over the loops inside under a condition on the ones outside.
  bool try_unclamp(const Min* op, const Expr& x, const Expr& y) {
    if (uses_bound(y) || !uses_bound(x)) return false;
    const Expr most = arith::eval_interval(x, inner_).max;
    if (!most.defined() || uses_bound(most)) return false;
    // Over the outermost loop's range, the condition may hold always, sometimes or never.
    const arith::Interval excess = arith::eval_interval(arith::simplify(most - y, known_), outer_);
    const arith::ConstBound least = arith::const_bound(excess.min.defined() ? excess.min : most - y, known_);
    if (least.min > 0) return false;
    unclamped[op] = x;
    const arith::ConstBound largest = arith::const_bound(excess.max.defined() ? excess.max : most - y, known_);
    if (largest.max > 0) {
      Expr condition = arith::simplify(most <= y, known_);
      conditions.emplace(to_string(condition), condition);
    }
    return true;
  }
  bool uses_bound(const Expr& e) const {
    for (const Var& v : vars_of(e))
      if (bound_.count(v.get())) return true;
    return false;
  }

  const arith::BoundMap& known_;
  const arith::IntervalMap outer_;
  std::unordered_set<const VarNode*> bound_;  // variables bound inside the body
  arith::IntervalMap inner_;                  // the loops inside, over their ranges
  int in_index_ = 0;                          // inside how many loads' indices
};

// The body with the clamps `unclamped` maps replaced by their x.
class Unclamper : public IRMutator {
 public:
  explicit Unclamper(const std::unordered_map<const Min*, Expr>& unclamped) : unclamped_(unclamped) {}
  using IRMutator::mutate;

 protected:
  Expr mutate_(const Min* op) override {
    auto it = unclamped_.find(op);
    return it == unclamped_.end() ? IRMutator::mutate_(op) : mutate(it->second);
  }

 private:
  const std::unordered_map<const Min*, Expr>& unclamped_;
};

class Unswitcher : public IRMutator {
 public:
  explicit Unswitcher(const arith::BoundMap& known) : known_(known) {}
  using IRMutator::mutate;

 protected:
  // An outermost loop: its body is unswitched once, the loops inside it left as they are.
  Stmt mutate_(const For* op) override {
    ClampFinder finder(known_, {{op->var.get(), arith::Interval::from_range(Range(op->min, op->extent))}});
    finder.visit(op->body);
    for (const Min* m : finder.kept) finder.unclamped.erase(m);  // a read elsewhere needs it
    if (finder.unclamped.empty()) return Stmt(op);
    Stmt fast = Unclamper(finder.unclamped).mutate(op->body);
    Expr condition;
    for (const auto& [text, c] : finder.conditions) condition = condition.defined() ? condition && c : c;
    Stmt body = condition.defined() ? IfThenElse::make(condition, fast, op->body) : fast;
    return For::make(op->var, op->min, op->extent, op->for_kind, body, op->pragmas);
  }

 private:
  const arith::BoundMap& known_;
};

}  // namespace

Stmt unswitch_clamps(const Stmt& s, const arith::BoundMap& known) { return Unswitcher(known).mutate(s); }

}  // namespace tessera::tensor_ir
