#include "tensor_ir/substitute.h"

#include "tensor_ir/functor.h"

namespace tessera::tensor_ir {

namespace {
class Substituter : public IRMutator {
 public:
  explicit Substituter(const VarMap& map) : map_(map) {}
  using IRMutator::mutate;

 protected:
  Expr mutate_(const VarNode* op) override {
    auto it = map_.find(op);
    return it == map_.end() ? Expr(op) : it->second;
  }

 private:
  const VarMap& map_;
};

class VarUseFinder : public IRVisitor {
 public:
  explicit VarUseFinder(const VarNode* var) : var_(var) {}
  bool found = false;
  void visit(const Expr& e) override {
    if (!found) IRVisitor::visit(e);
  }
  void visit(const Stmt& s) override {
    if (!found) IRVisitor::visit(s);
  }

 protected:
  void visit_(const VarNode* op) override { found |= op == var_; }

 private:
  const VarNode* var_;
};

class VarCollector : public IRVisitor {
 public:
  std::vector<Var> vars;

 protected:
  void visit_(const VarNode* op) override {
    for (const Var& v : vars)
      if (v.get() == op) return;
    vars.push_back(Var(op));
  }
};
}  // namespace

Expr substitute(const Expr& e, const VarMap& map) {
  if (map.empty()) return e;
  return Substituter(map).mutate(e);
}

Stmt substitute(const Stmt& s, const VarMap& map) {
  if (map.empty()) return s;
  return Substituter(map).mutate(s);
}

Expr substitute(const Expr& e, const Var& var, const Expr& value) { return substitute(e, VarMap{{var.get(), value}}); }

bool uses_var(const Expr& e, const VarNode* var) {
  VarUseFinder f(var);
  f.visit(e);
  return f.found;
}

bool uses_var(const Stmt& s, const VarNode* var) {
  VarUseFinder f(var);
  f.visit(s);
  return f.found;
}

std::vector<Var> vars_of(const Expr& e) {
  VarCollector c;
  c.visit(e);
  return c.vars;
}

}  // namespace tessera::tensor_ir
