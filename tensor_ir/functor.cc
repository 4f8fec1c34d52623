#include "tensor_ir/functor.h"

namespace tessera::tensor_ir {

void IRVisitor::visit(const Expr& e) {
  dispatch(e.get(), [this](const auto* op) {
    if constexpr (std::is_base_of_v<ExprNode, std::remove_pointer_t<decltype(op)>>) visit_(op);
  });
}

void IRVisitor::visit(const Stmt& s) {
  dispatch(s.get(), [this](const auto* op) {
    if constexpr (std::is_base_of_v<StmtNode, std::remove_pointer_t<decltype(op)>>) visit_(op);
  });
}

#define TESSERA_X(kind, type) \
  void IRVisitor::visit_(const type* op) { visit_children(op); }
TESSERA_EXPR_NODES(TESSERA_X)
TESSERA_STMT_NODES(TESSERA_X)
#undef TESSERA_X

Expr IRMutator::mutate(const Expr& e) {
  if (!e) return e;
  return dispatch(e.get(), [this](const auto* op) -> Expr {
    if constexpr (std::is_base_of_v<ExprNode, std::remove_pointer_t<decltype(op)>>) return mutate_(op);
    else return Expr();
  });
}

Stmt IRMutator::mutate(const Stmt& s) {
  if (!s) return s;
  return dispatch(s.get(), [this](const auto* op) -> Stmt {
    if constexpr (std::is_base_of_v<StmtNode, std::remove_pointer_t<decltype(op)>>) return mutate_(op);
    else return Stmt();
  });
}

#define TESSERA_X(kind, type) \
  Expr IRMutator::mutate_(const type* op) { return rebuild<Expr>(op); }
TESSERA_EXPR_NODES(TESSERA_X)
#undef TESSERA_X
#define TESSERA_X(kind, type) \
  Stmt IRMutator::mutate_(const type* op) { return rebuild<Stmt>(op); }
TESSERA_STMT_NODES(TESSERA_X)
#undef TESSERA_X

Expr IRMutator::mutate_field(const Expr& e, bool& changed) {
  Expr n = mutate(e);
  if (!n.same_as(e)) changed = true;
  return n;
}

Stmt IRMutator::mutate_field(const Stmt& s, bool& changed) {
  Stmt n = mutate(s);
  if (!n.same_as(s)) changed = true;
  return n;
}

Range IRMutator::mutate_field(const Range& r, bool& changed) {
  return Range(mutate_field(r.min, changed), mutate_field(r.extent, changed));
}

}  // namespace tessera::tensor_ir
