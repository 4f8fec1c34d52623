// Visitors and mutators over expressions and statements. The defaults walk every Expr and Stmt
// field (never binding variables, the bodies of other tensors or reduction axes), so a pass
// overrides only the nodes it cares about. A mutator returns the same node when nothing below
// it changed, which makes "did this pass change anything" a pointer comparison.
#pragma once
#include "tensor_ir/ir.h"

namespace tessera::tensor_ir {

class IRVisitor {
 public:
  virtual ~IRVisitor() = default;
  virtual void visit(const Expr& e);
  virtual void visit(const Stmt& s);

 protected:
#define TESSERA_X(kind, type) virtual void visit_(const type* op);
  TESSERA_EXPR_NODES(TESSERA_X)
  TESSERA_STMT_NODES(TESSERA_X)
#undef TESSERA_X
  template <typename T>
  void visit_children(const T* op) {
    for_each_field(op, [this](const std::string&, const auto& f) { visit_field(f); });
  }
  void visit_field(const Expr& e) {
    if (e) visit(e);
  }
  void visit_field(const Stmt& s) {
    if (s) visit(s);
  }
  void visit_field(const Range& r) {
    visit_field(r.min);
    visit_field(r.extent);
  }
  template <typename T>
  void visit_field(const std::vector<T>& v) {
    for (const auto& x : v) visit_field(x);
  }
  template <typename T>
  void visit_field(const T&) {}
};

class IRMutator {
 public:
  virtual ~IRMutator() = default;
  virtual Expr mutate(const Expr& e);
  virtual Stmt mutate(const Stmt& s);

 protected:
#define TESSERA_X(kind, type) virtual Expr mutate_(const type* op);
  TESSERA_EXPR_NODES(TESSERA_X)
#undef TESSERA_X
#define TESSERA_X(kind, type) virtual Stmt mutate_(const type* op);
  TESSERA_STMT_NODES(TESSERA_X)
#undef TESSERA_X

  // Mutates every field; rebuilds the node through T::make only if a field changed.
  // Result is Expr or Stmt. Binding variables (For::var, LetStmt::var) are left as they are.
  template <typename Result, typename T>
  Result rebuild(const T* op) {
    bool changed = false;
    auto fields = std::apply(
        [&](const auto&... f) { return std::tuple<std::decay_t<decltype(f)>...>{mutate_field(f, changed)...}; },
        op->fields());
    if (!changed) return Result(op);
    return std::apply([](auto&&... f) { return T::make(std::move(f)...); }, std::move(fields));
  }

  Expr mutate_field(const Expr& e, bool& changed);
  Stmt mutate_field(const Stmt& s, bool& changed);
  Range mutate_field(const Range& r, bool& changed);
  template <typename T>
  std::vector<T> mutate_field(const std::vector<T>& v, bool& changed) {
    std::vector<T> out;
    out.reserve(v.size());
    for (const auto& x : v) out.push_back(mutate_field(x, changed));
    return out;
  }
  template <typename T>
  T mutate_field(const T& x, bool&) {
    return x;
  }
};

}  // namespace tessera::tensor_ir
