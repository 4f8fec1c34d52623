#include "tensor_ir/parallel_work.h"

#include <unordered_set>

#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/op.h"
#include "tensor_ir/substitute.h"

namespace tessera::tensor_ir {

namespace {

const DataType kIndex = DataType::Int(64);

class StoreCounter {
 public:
  // Undefined when some extent has no bound.
  Expr count(const Stmt& s) {
    switch (s->kind) {
      case NodeKind::For: {
        const auto* f = s.as<For>();
        inner_.insert(f->var.get());
        return times(extent(f->extent), count(f->body));
      }
      case NodeKind::ThreadExtent: {
        const auto* t = s.as<ThreadExtent>();
        inner_.insert(t->var.get());
        return times(extent(t->extent), count(t->body));
      }
      case NodeKind::LetStmt: {
        const auto* l = s.as<LetStmt>();
        inner_.insert(l->var.get());
        return count(l->body);
      }
      case NodeKind::IfThenElse: {
        const auto* i = s.as<IfThenElse>();
        Expr then_count = count(i->then_case);
        if (!i->else_case) return then_count;
        Expr else_count = count(i->else_case);
        return then_count.defined() && else_count.defined() ? max(then_count, else_count) : Expr();
      }
      case NodeKind::Block: {
        Expr total = make_zero(kIndex);
        for (const Stmt& part : s.as<Block>()->stmts) {
          Expr c = count(part);
          if (!c.defined()) return Expr();
          total = total + c;
        }
        return total;
      }
      case NodeKind::Allocate:
        return count(s.as<Allocate>()->body);
      case NodeKind::Store:
        return make_const(kIndex, s.as<Store>()->value.type().lanes);
      default:
        return make_const(kIndex, 1);
    }
  }

 private:
  static Expr times(const Expr& a, const Expr& b) { return a.defined() && b.defined() ? a * b : Expr(); }

  // The extent itself where it reads only variables bound outside, else its constant bound.
  Expr extent(const Expr& e) {
    bool inner = false;
    for (const Var& v : vars_of(e)) inner = inner || inner_.count(v.get());
    if (!inner) return cast(kIndex, e);
    int64_t bound = arith::upper_bound(e);
    if (bound == arith::ConstBound::kPosInf) return Expr();
    return make_const(kIndex, static_cast<double>(bound));
  }

  std::unordered_set<const VarNode*> inner_;
};

}  // namespace

Expr stored_values(const Stmt& s) {
  Expr n = StoreCounter().count(s);
  return n.defined() ? arith::simplify(n) : n;
}

Expr worth_parallel_launch(const For* loop) {
  for (const auto& [key, min_work] : loop->pragmas) {
    if (key != kParallelMinWork) continue;
    Expr work = stored_values(For::make(loop->var, loop->min, loop->extent, ForKind::Serial, loop->body));
    if (!work.defined()) return Expr();
    return arith::simplify(work >= make_const(kIndex, static_cast<double>(min_work)));
  }
  return Expr();
}

}  // namespace tessera::tensor_ir
