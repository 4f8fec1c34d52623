#include "tensor_ir/transforms/loop_partition.h"

#include <optional>
#include <unordered_set>

#include "tensor_ir/arith/interval.h"
#include "tensor_ir/arith/linear_form.h"
#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/functor.h"
#include "tensor_ir/op.h"
#include "tensor_ir/substitute.h"

namespace tessera::tensor_ir {

namespace {

// The likely(...) guards in a statement and the loops nested inside it.
class GuardCollector : public IRVisitor {
 public:
  explicit GuardCollector(const arith::BoundMap& known) : known_(known) {}
  std::vector<const Call*> guards;
  arith::IntervalMap inner_loops;

 protected:
  void visit_(const Call* op) override {
    if (op->op == Intrinsic::likely) guards.push_back(op);
    IRVisitor::visit_(op);
  }
  void visit_(const For* op) override {
    inner_loops[op->var.get()] = {op->min, arith::simplify(op->min + op->extent - 1, known_)};
    IRVisitor::visit_(op);
  }

 private:
  const arith::BoundMap& known_;
};

// Replaces the given guards with true.
class GuardRemover : public IRMutator {
 public:
  explicit GuardRemover(const std::unordered_set<const Call*>& proven) : proven_(proven) {}
  using IRMutator::mutate;

 protected:
  Expr mutate_(const Call* op) override {
    if (proven_.count(op)) return const_true();
    return IRMutator::mutate_(op);
  }

 private:
  const std::unordered_set<const Call*>& proven_;
};

// A guard or a clip `lhs < rhs` (or <=) in the form coeff*var + rest, with rest's largest value over
// the loops nested inside the partitioned one.
struct LinearBound {
  int64_t coeff = 0;
  Expr rest_max;
};

// lhs - rhs as coeff*var + rest; nothing when it is not linear in var or rest has no upper bound
// free of var (inner loops whose bounds depend on var leave it there: no single split point).
std::optional<LinearBound> linear_bound(const Expr& lhs, const Expr& rhs, const Var& var,
                                        const arith::IntervalMap& inner, const arith::BoundMap& known) {
  if (!lhs.type().is_integer()) return std::nullopt;
  arith::LinearForm f = arith::to_linear_form(arith::simplify(lhs - rhs, known));
  LinearBound b;
  arith::LinearForm rest{f.type, {}, f.constant};
  for (const auto& [term, c] : f.terms) {
    if (term.same_as(var) || (term.as<VarNode>() == var.get())) b.coeff += c;
    else if (uses_var(term, var.get())) return std::nullopt;
    else rest.add_term(term, c);
  }
  arith::Interval r = arith::eval_interval(rest.to_expr(), inner);
  if (!r.max || uses_var(r.max, var.get())) return std::nullopt;
  b.rest_max = r.max;
  return b;
}

// In the main part of a partitioned loop, where every proven guard coeff*var + rest < 0 holds,
// resolves min and max whose sides compare the same way: a tile clipped to a symbolic extent
// (min(i.outer*4 + 3, M - 1)) keeps its whole size there, so its loops stay constant and vectorize.
class ClipResolver : public IRMutator {
 public:
  ClipResolver(const Var& var, std::vector<LinearBound> guards, const arith::IntervalMap& inner,
               const arith::BoundMap& known)
      : var_(var), guards_(std::move(guards)), inner_(inner), known_(known) {}
  using IRMutator::mutate;

 protected:
  Expr mutate_(const Min* op) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (at_most(a, b)) return a;
    if (at_most(b, a)) return b;
    return min(a, b);
  }
  Expr mutate_(const Max* op) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (at_most(a, b)) return b;
    if (at_most(b, a)) return a;
    return max(a, b);
  }

 private:
  // Whether a <= b follows from a guard: a - b = c*var + R with R <= R_guard + 1 gives
  // a - b <= c*var + R_guard + 1 <= 0.
  bool at_most(const Expr& a, const Expr& b) const {
    std::optional<LinearBound> d = linear_bound(a, b, var_, inner_, known_);
    if (!d || d->coeff <= 0) return false;
    for (const LinearBound& g : guards_)
      if (g.coeff == d->coeff && arith::can_prove(d->rest_max <= g.rest_max + 1, known_)) return true;
    return false;
  }

  const Var& var_;
  std::vector<LinearBound> guards_;
  const arith::IntervalMap& inner_;
  const arith::BoundMap& known_;
};

class Partitioner : public IRMutator {
 public:
  explicit Partitioner(const arith::BoundMap& known) : known_(known) {}
  using IRMutator::mutate;

 protected:
  bool depends_on_sizes(const Expr& e) const {
    for (const Var& v : vars_of(e))
      if (known_.count(v.get())) return true;
    return false;
  }

  Stmt mutate_(const For* op) override {
    GuardCollector collector(known_);
    collector.visit(op->body);
    // For each guard `a < b` with a - b = c*v + rest (c > 0): it holds for every inner iteration
    // while c*v + max(rest) < 0, i.e. for v < floor((-max(rest) - 1) / c) + 1.
    Expr split;
    std::unordered_set<const Call*> proven;
    std::vector<LinearBound> bounds;
    for (const Call* guard : collector.guards) {
      const auto* lt = guard->args[0].as<LT>();
      std::optional<LinearBound> b =
          lt ? linear_bound(lt->a, lt->b, op->var, collector.inner_loops, known_) : std::nullopt;
      if (!b || b->coeff <= 0) continue;
      Expr end = arith::simplify(floordiv(Expr(0) - b->rest_max - 1, Expr(b->coeff)) + 1, known_);
      split = split ? min(split, end) : end;
      proven.insert(guard);
      bounds.push_back(*b);
    }
    if (!split) return IRMutator::mutate_(op);
    Expr begin = op->min;
    Expr stop = arith::simplify(op->min + op->extent, known_);
    split = arith::simplify(max(begin, min(split, stop)), known_);
    // Split where only the call knows (at a kernel's symbolic size), a vectorized loop's parts
    // would have extents of their own and run scalar: it stays whole, its guarded stores writing
    // the lanes that hold.
    if (op->for_kind == ForKind::Vectorized && depends_on_sizes(split)) return IRMutator::mutate_(op);
    Stmt main_body = GuardRemover(proven).mutate(op->body);
    main_body = mutate(ClipResolver(op->var, bounds, collector.inner_loops, known_).mutate(main_body));
    Stmt tail_body = mutate(op->body);
    Stmt main = For::make(op->var, begin, arith::simplify(split - begin, known_), op->for_kind, main_body, op->pragmas);
    Stmt tail = For::make(op->var, split, arith::simplify(stop - split, known_), op->for_kind, tail_body, op->pragmas);
    return Block::make({main, tail});
  }

 private:
  const arith::BoundMap& known_;
};

}  // namespace

Stmt partition_loops(const Stmt& s, const arith::BoundMap& known) { return Partitioner(known).mutate(s); }

}  // namespace tessera::tensor_ir
