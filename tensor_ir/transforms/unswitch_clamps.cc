#include "tensor_ir/transforms/unswitch_clamps.h"

#include <map>
#include <unordered_map>
#include <unordered_set>

#include "tensor_ir/arith/interval.h"
#include "tensor_ir/arith/linear_form.h"
#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/functor.h"
#include "tensor_ir/op.h"
#include "tensor_ir/printer.h"
#include "tensor_ir/substitute.h"

namespace tessera::tensor_ir {

namespace {

// TileGuards: every tile guard (a kernel of symbolic sizes); VectorTileGuards: only those in a
// vectorized loop, where partitioning would make the writes scalar (a static kernel).
enum class Unswitch { Clamps, TileGuards, VectorTileGuards };

// In one outermost loop's body, the clamps of loads (or the likely() guards of tiles) that the
// loops inside keep below their bound under a condition on the loops outside, and those
// conditions.
class ClampFinder : public IRVisitor {
 public:
  // `outer`: the outermost loop, over its range.
  ClampFinder(Unswitch what, const arith::BoundMap& known, const Var& outer_var, arith::IntervalMap outer)
      : what_(what), known_(known), outer_var_(outer_var), outer_(std::move(outer)) {}

  std::unordered_map<const Min*, Expr> unclamped;  // a clamp -> its x
  std::unordered_set<const Call*> true_guards;     // guards that hold under the conditions
  std::map<std::string, Expr> conditions;          // by their text, each once
  std::unordered_set<const Min*> kept_clamps;      // clamps some read needs
  std::unordered_set<const Call*> kept_guards;     // guards some write needs

  using IRVisitor::visit;

 protected:
  void visit_(const For* op) override {
    visit(op->min);
    visit(op->extent);
    bound_.insert(op->var.get());
    const arith::Interval extent = arith::eval_interval(op->extent, inner_);
    if (extent.max.defined())
      inner_[op->var.get()] = {op->min, arith::eval_interval(op->min, inner_).max + extent.max - 1};
    const bool vectorized = op->for_kind == ForKind::Vectorized;
    in_vectorized_ += vectorized;
    visit(op->body);
    in_vectorized_ -= vectorized;
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
    if (what_ != Unswitch::Clamps || in_index_ == 0 || !op->type.is_int() || !op->type.is_scalar()) return;
    if (try_bound(op->a, op->b, 0)) unclamped[op] = op->a;
    else if (try_bound(op->b, op->a, 0)) unclamped[op] = op->b;
    else kept_clamps.insert(op);
  }
  void visit_(const Call* op) override {
    IRVisitor::visit_(op);
    if (what_ == Unswitch::Clamps || op->op != Intrinsic::likely) return;
    if (what_ == Unswitch::VectorTileGuards && in_vectorized_ == 0) {
      kept_guards.insert(op);
      return;
    }
    const auto* lt = op->args[0].as<LT>();
    const auto* le = op->args[0].as<LE>();
    if (lt && try_bound(lt->a, lt->b, 1, /*linear_ok=*/false)) true_guards.insert(op);
    else if (le && try_bound(le->a, le->b, 0, /*linear_ok=*/false)) true_guards.insert(op);
    else kept_guards.insert(op);
  }

 private:
  // Whether x + gap <= y (gap 0 or 1: x <= y or x < y) over the loops inside under a condition on the ones outside,
  // which it records. A guard is left to loop partitioning where the condition is linear in the outermost loop's
  // variable: partitioning that loop removes it with no branch.
  bool try_bound(const Expr& x, const Expr& y, int64_t gap, bool linear_ok = true) {
    if (!x.type().is_int() || uses_bound(y) || !uses_bound(x)) return false;
    const Expr most = arith::eval_interval(x, inner_).max;
    if (!most.defined() || uses_bound(most)) return false;
    const Expr excess_expr = arith::simplify(most + make_const(most.type(), static_cast<double>(gap)) - y, known_);
    if (!linear_ok && linear_in_outer_var(excess_expr)) return false;
    // Over the outermost loop's range, the condition may hold always, sometimes or never.
    const arith::Interval excess = arith::eval_interval(excess_expr, outer_);
    const arith::ConstBound least = arith::const_bound(excess.min.defined() ? excess.min : excess_expr, known_);
    if (least.min > 0) return false;
    const arith::ConstBound largest = arith::const_bound(excess.max.defined() ? excess.max : excess_expr, known_);
    if (largest.max > 0) {
      Expr condition = arith::simplify(gap == 0 ? most <= y : most < y, known_);
      conditions.emplace(to_string(condition), condition);
    }
    return true;
  }
  bool linear_in_outer_var(const Expr& e) const {
    for (const auto& [term, coeff] : arith::to_linear_form(e).terms)
      if (term.as<VarNode>() != outer_var_.get() && uses_var(term, outer_var_.get())) return false;
    return true;
  }
  bool uses_bound(const Expr& e) const {
    for (const Var& v : vars_of(e))
      if (bound_.count(v.get())) return true;
    return false;
  }

  const Unswitch what_;
  const arith::BoundMap& known_;
  const Var outer_var_;
  const arith::IntervalMap outer_;
  std::unordered_set<const VarNode*> bound_;  // variables bound inside the body
  arith::IntervalMap inner_;                  // the loops inside, over their ranges
  int in_index_ = 0;                          // inside how many loads' indices
  int in_vectorized_ = 0;                     // inside how many vectorized loops
};

// The body with the clamps `unclamped` maps replaced by their x and the guards `true_guards` by
// true.
class Unclamper : public IRMutator {
 public:
  explicit Unclamper(const ClampFinder& found) : found_(found) {}
  using IRMutator::mutate;

 protected:
  Expr mutate_(const Min* op) override {
    auto it = found_.unclamped.find(op);
    return it == found_.unclamped.end() ? IRMutator::mutate_(op) : mutate(it->second);
  }
  Expr mutate_(const Call* op) override { return found_.true_guards.count(op) ? const_true() : IRMutator::mutate_(op); }

 private:
  const ClampFinder& found_;
};

// In the body that runs where conditions l < r (or l <= r) hold: min(a, b) is a where
// a - b <= l + 1 - r (<= 0) follows, and b the other way round. So the clipped extent of a tile
// whose rows all lie inside, min(t*14 + 13, R - 1) + 1 - t*14, is its whole size there, a
// constant, and its loops stay unrolled.
class ClipsUnderConditions : public IRMutator {
 public:
  ClipsUnderConditions(const std::map<std::string, Expr>& conditions, const arith::BoundMap& known) : known_(known) {
    for (const auto& [text, c] : conditions) collect(c);
  }
  using IRMutator::mutate;

 protected:
  Expr mutate_(const Min* op) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    for (const Expr& s : slacks_) {
      if (a.type() == s.type()) {  // an index (a minimum of data values fails the proofs)
        if (arith::can_prove(a - b - s <= 0, known_)) return a;
        if (arith::can_prove(b - a - s <= 0, known_)) return b;
      }
    }
    return min(a, b);
  }

 private:
  // The slack l + 1 - r (or l - r) of a condition, which is at most 0 where it holds.
  void collect(const Expr& c) {
    if (const auto* lt = c.as<LT>(); lt && lt->a.type().is_int() && lt->a.type().is_scalar()) {
      slacks_.push_back(lt->a + 1 - lt->b);
    } else if (const auto* le = c.as<LE>(); le && le->a.type().is_int() && le->a.type().is_scalar()) {
      slacks_.push_back(le->a - le->b);
    }
  }

  const arith::BoundMap& known_;
  std::vector<Expr> slacks_;
};

class Unswitcher : public IRMutator {
 public:
  Unswitcher(Unswitch what, const arith::BoundMap& known) : what_(what), known_(known) {}
  using IRMutator::mutate;

 protected:
  // An outermost loop: its body is unswitched once, the loops inside it left as they are.
  Stmt mutate_(const For* op) override {
    ClampFinder finder(what_, known_, op->var,
                       {{op->var.get(), arith::Interval::from_range(Range(op->min, op->extent))}});
    finder.visit(op->body);
    // A use elsewhere needs them.
    for (const Min* m : finder.kept_clamps) finder.unclamped.erase(m);
    for (const Call* g : finder.kept_guards) finder.true_guards.erase(g);
    if (finder.unclamped.empty() && finder.true_guards.empty()) return Stmt(op);
    Stmt fast = Unclamper(finder).mutate(op->body);
    Expr condition;
    for (const auto& [text, c] : finder.conditions) condition = condition.defined() ? logical_and(condition, c) : c;
    if (condition.defined()) fast = ClipsUnderConditions(finder.conditions, known_).mutate(fast);
    Stmt body = condition.defined() ? IfThenElse::make(condition, fast, op->body) : fast;
    return For::make(op->var, op->min, op->extent, op->for_kind, body, op->pragmas);
  }

 private:
  const Unswitch what_;
  const arith::BoundMap& known_;
};

}  // namespace

Stmt unswitch_clamps(const Stmt& s, const arith::BoundMap& known) {
  return Unswitcher(Unswitch::Clamps, known).mutate(s);
}

Stmt unswitch_tile_guards(const Stmt& s, const arith::BoundMap& known) {
  return Unswitcher(known.empty() ? Unswitch::VectorTileGuards : Unswitch::TileGuards, known).mutate(s);
}

}  // namespace tessera::tensor_ir
