#include "tensor_ir/transforms/legalize.h"

#include "tensor_ir/functor.h"
#include "tensor_ir/op.h"

namespace tessera::tensor_ir {

namespace {
class Legalizer : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  Expr mutate_(const Call* op) override {
    if (op->op == Intrinsic::likely) return mutate(op->args[0]);
    return IRMutator::mutate_(op);
  }
  Stmt mutate_(const For* op) override {
    Stmt s = IRMutator::mutate_(op);
    const auto* f = s.as<For>();
    if (f && (f->for_kind == ForKind::Unrolled || f->for_kind == ForKind::Vectorized) && !as_const_int(f->extent))
      return For::make(f->var, f->min, f->extent, ForKind::Serial, f->body, f->pragmas);
    return s;
  }
};
}  // namespace

Stmt legalize_for_codegen(const Stmt& s) { return Legalizer().mutate(s); }

}  // namespace tessera::tensor_ir
