#include "targets/source/lift_lets.h"

#include <vector>

#include "tensor_ir/functor.h"
#include "tensor_ir/op.h"
#include "tensor_ir/substitute.h"

namespace tessera::targets::source {

using namespace tensor_ir;

namespace {

bool has_let(const Expr& e) {
  struct Finder : IRVisitor {
    bool found = false;
    void visit_(const Let*) override { found = true; }
  } finder;
  finder.visit(e);
  return finder.found;
}

// What runs before the expression left: a let's binding, or an if filling a local buffer.
struct Step {
  Var var;
  Expr value;
  Stmt fill;
  Buffer temp;
};

class LetLifter : public IRMutator {
 public:
  std::vector<Step> steps;

 private:
  // Each binding gets a variable of its own: one variable may be bound by several lets (copies
  // of one expression), and each becomes a declaration.
  Expr mutate_(const Let* op) override {
    Expr value = mutate(op->value);
    Var own(op->var.name(), op->var.type());
    steps.push_back({own, value, Stmt(), Buffer()});
    return mutate(substitute(op->body, op->var, own));
  }
  Expr mutate_(const Select* op) override {
    if (!has_let(op->true_value) && !has_let(op->false_value)) return IRMutator::mutate_(op);
    Expr condition = mutate(op->condition);
    const Expr zero = make_zero(kIndexType);
    Buffer temp = BufferNode::make("chosen", op->type, {Expr(1)}, MemoryScope::Local);
    Stmt fill = IfThenElse::make(condition, lift_let_expressions(Store::make(temp, op->true_value, zero)),
                                 lift_let_expressions(Store::make(temp, op->false_value, zero)));
    steps.push_back({Var(), Expr(), fill, temp});
    return Load::make(temp, zero);
  }
  Expr mutate_(const And* op) override {
    if (!has_let(op->b)) return IRMutator::mutate_(op);
    return mutate(select(op->a, op->b, const_false()));
  }
  Expr mutate_(const Or* op) override {
    if (!has_let(op->b)) return IRMutator::mutate_(op);
    return mutate(select(op->a, const_true(), op->b));
  }
};

}  // namespace

Stmt lift_let_expressions(const Stmt& s) {
  const auto* store = s.as<Store>();
  if (!store || store->value.type().lanes != 1 || !(has_let(store->value) || has_let(store->index))) return s;
  LetLifter lifter;
  Expr index = lifter.mutate(store->index);
  Expr value = lifter.mutate(store->value);
  Stmt result = Store::make(store->buffer, value, index);
  for (auto it = lifter.steps.rbegin(); it != lifter.steps.rend(); ++it)
    result = it->fill ? Allocate::make(it->temp, Block::make({it->fill, result}))
                      : LetStmt::make(it->var, it->value, result);
  return result;
}

}  // namespace tessera::targets::source
