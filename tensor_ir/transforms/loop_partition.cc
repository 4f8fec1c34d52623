#include "tensor_ir/transforms/loop_partition.h"

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
  std::vector<const Call*> guards;
  arith::IntervalMap inner_loops;

 protected:
  void visit_(const Call* op) override {
    if (op->op == Intrinsic::likely) guards.push_back(op);
    IRVisitor::visit_(op);
  }
  void visit_(const For* op) override {
    inner_loops[op->var.get()] = {op->min, arith::simplify(op->min + op->extent - 1)};
    IRVisitor::visit_(op);
  }
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

class Partitioner : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  Stmt mutate_(const For* op) override {
    GuardCollector collector;
    collector.visit(op->body);
    // For each guard `a < b` with a - b = c*v + rest (c > 0): it holds for every inner iteration
    // while c*v + max(rest) < 0, i.e. for v < floor((-max(rest) - 1) / c) + 1.
    Expr split;
    std::unordered_set<const Call*> proven;
    for (const Call* guard : collector.guards) {
      Expr end = guard_end(guard->args[0], op->var, collector.inner_loops);
      if (!end) continue;
      split = split ? min(split, end) : end;
      proven.insert(guard);
    }
    if (!split) return IRMutator::mutate_(op);
    Expr begin = op->min;
    Expr stop = arith::simplify(op->min + op->extent);
    split = arith::simplify(max(begin, min(split, stop)));
    Stmt main_body = mutate(GuardRemover(proven).mutate(op->body));
    Stmt tail_body = mutate(op->body);
    Stmt main = For::make(op->var, begin, arith::simplify(split - begin), op->for_kind, main_body, op->pragmas);
    Stmt tail = For::make(op->var, split, arith::simplify(stop - split), op->for_kind, tail_body, op->pragmas);
    return Block::make({main, tail});
  }

 private:
  // The first value of `var` for which the guard may fail, or undefined if it cannot be said.
  Expr guard_end(const Expr& condition, const Var& var, const arith::IntervalMap& inner) {
    const auto* lt = condition.as<LT>();
    if (!lt || !lt->a.type().is_integer()) return Expr();
    arith::LinearForm f = arith::to_linear_form(arith::simplify(lt->a - lt->b));
    int64_t coeff = 0;
    arith::LinearForm rest{f.type, {}, f.constant};
    for (const auto& [term, c] : f.terms) {
      if (term.same_as(var) || (term.as<VarNode>() == var.get())) coeff += c;
      else if (uses_var(term, var.get())) return Expr();  // not linear in var
      else rest.add_term(term, c);
    }
    if (coeff <= 0) return Expr();
    arith::Interval r = arith::eval_interval(rest.to_expr(), inner);
    // Inner loops whose bounds depend on var leave it in the bound: no single split point.
    if (!r.max || uses_var(r.max, var.get())) return Expr();
    return arith::simplify(floordiv(Expr(0) - r.max - 1, Expr(coeff)) + 1);
  }
};

}  // namespace

Stmt partition_loops(const Stmt& s) { return Partitioner().mutate(s); }

}  // namespace tessera::tensor_ir
