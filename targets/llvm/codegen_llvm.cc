#include "targets/llvm/codegen_llvm.h"

#include <llvm/ADT/Triple.h>
#include <llvm/IR/MDBuilder.h>

#include <algorithm>
#include <cctype>
#include <unordered_set>

#include "runtime/error.h"
#include "targets/llvm/build_llvm.h"
#include "targets/llvm/external_symbols.h"
#include "targets/llvm/llvm_intrinsics.h"
#include "tensor_ir/functor.h"
#include "tensor_ir/op.h"
#include "tensor_ir/printer.h"
#include "tensor_ir/structural.h"

namespace tessera::targets::llvm_backend {

namespace {

// Unrolling more than this is a schedule mistake that would only surface as a huge compile.
constexpr int64_t kMaxUnrolledIterations = 4096;

bool is_c_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (unsigned char c : s)
    if (!std::isalnum(c) && c != '_') return false;
  return true;
}

// Signed 64-bit arithmetic never wraps in index computations; saying so lets LLVM reason about
// strides. Narrower integers are user data, where wrapping is observable and must stay defined.
bool no_signed_wrap(DataType t) { return t.is_int() && t.bits == 64; }

// The loads in an expression, whether it binds variables (inside a Let an index may have
// another value than the same index outside), and its transcendental calls.
struct LoadFinder : IRVisitor {
  explicit LoadFinder(bool unconditional) : unconditional(unconditional) {}
  const bool unconditional;  // only loads that run whenever the expression does: none in a select's branch
  std::vector<Expr> loads;
  bool binds = false;
  int transcendental_calls = 0;
  void visit_(const Load* op) override {
    loads.emplace_back(op);
    IRVisitor::visit_(op);
  }
  void visit_(const Call* op) override {
    transcendental_calls += is_transcendental(op->op);
    IRVisitor::visit_(op);
  }
  void visit_(const Let* op) override {
    binds = true;
    IRVisitor::visit_(op);
  }
  void visit_(const Select* op) override {
    if (unconditional) visit(op->condition);
    else IRVisitor::visit_(op);
  }
};

// Whether a branch of `op` (`branches`: what its sides hold) reads memory its condition does not.
// Such a read may be out of bounds where the select does not pick its side (zero padding:
// select(inside, X[y - pad], 0)). A read the condition makes itself is in bounds wherever the
// select runs (ReLU: select(A[i] > 0, A[i], 0)).
bool reads_beyond_condition(const Select* op, const LoadFinder& branches) {
  if (branches.loads.empty()) return false;
  LoadFinder condition(true);
  condition.visit(op->condition);
  if (condition.binds || branches.binds) return true;
  return std::any_of(branches.loads.begin(), branches.loads.end(), [&](const Expr& load) {
    return std::none_of(condition.loads.begin(), condition.loads.end(),
                        [&](const Expr& read) { return structural_equal(load, read); });
  });
}

// Whether a vector select whose condition all lanes share should branch rather than mask both
// sides. Masking computes both, which pays for a zero-padding guard (one load) but not for a
// concat's select chain over computed inputs: every vector would compute every input. A branch
// in a hot loop costs more than a few masked loads (MobileNet's padded convolutions).
bool branches_on_shared_condition(const LoadFinder& branches) {
  return branches.transcendental_calls > 0 || branches.loads.size() > 4;
}

int64_t unroll_explicit(const Pragmas& pragmas) {
  for (const auto& [key, value] : pragmas)
    if (key == "unroll_explicit") return value;
  return 1;
}

}  // namespace

CodeGenLLVM::CodeGenLLVM(llvm::Module& module, const ResolvedTarget& target)
    : module_(module), ctx_(module.getContext()), target_(target), builder_(module.getContext()) {
  // Everything but nnan/ninf: isnan, isinf and the NaN handling of min/max must keep working.
  llvm::FastMathFlags fmf;
  fmf.setAllowReassoc();
  fmf.setAllowContract(true);
  fmf.setNoSignedZeros();
  fmf.setAllowReciprocal();
  fmf.setApproxFunc();
  builder_.setFastMathFlags(fmf);
  intrinsic_options_.avx512_scalef =
      llvm::Triple(target_.triple).getArch() == llvm::Triple::x86_64 && has_feature(target_, "avx512f");
}

// --- types and functions --------------------------------------------------------------------

llvm::Type* CodeGenLLVM::value_type(DataType t) {
  // A narrow type's values reach code generation only as the bits that are loaded, stored and
  // reinterpreted (tensor_ir/transforms/narrow_types.h).
  if (t.is_narrow()) t = t.storage_type();
  llvm::Type* scalar = nullptr;
  switch (t.code) {
    case runtime::TypeCode::Bool:
      scalar = builder_.getInt1Ty();
      break;
    case runtime::TypeCode::Int:
    case runtime::TypeCode::UInt:
      scalar = builder_.getIntNTy(t.bits);
      break;
    case runtime::TypeCode::Float:
      if (t.bits == 16 || t.bits == 32) scalar = builder_.getFloatTy();
      else if (t.bits == 64) scalar = builder_.getDoubleTy();
      break;
    default:
      break;
  }
  if (!scalar) fail("kernel '", kernel_name_, "': type ", t.str(), " has no LLVM representation");
  return t.is_vector() ? llvm::FixedVectorType::get(scalar, t.lanes) : scalar;
}

llvm::Type* CodeGenLLVM::memory_type(DataType t) {
  if (t.is_bool()) return builder_.getInt8Ty();
  if (t.is_float() && t.bits == 16) return builder_.getHalfTy();
  return value_type(t.element());
}

llvm::Function* CodeGenLLVM::create_function(const std::string& name, llvm::Type* ret,
                                             const std::vector<llvm::Type*>& params,
                                             llvm::GlobalValue::LinkageTypes linkage) {
  auto* f = llvm::Function::Create(llvm::FunctionType::get(ret, params, false), linkage, name, module_);
  f->addFnAttr("target-cpu", target_.cpu);
  if (!target_.features.empty()) f->addFnAttr("target-features", target_.features);
  // Lets LLVM speculate floating-point operations (hoist them out of conditions).
  f->addFnAttr("no-trapping-math", "true");
  f->addFnAttr(llvm::Attribute::NoUnwind);
  return f;
}

void CodeGenLLVM::set_buffer_attributes(llvm::Function* f, unsigned arg, const BufferNode* buffer) {
  f->addParamAttr(arg, llvm::Attribute::NoAlias);
  f->addParamAttr(arg, llvm::Attribute::NonNull);
  f->addParamAttr(arg, llvm::Attribute::getWithAlignment(ctx_, llvm::Align(runtime::kAllocAlignment)));
  // Knowing the whole buffer is readable lets LLVM hoist loads out of loops and conditions.
  const bool static_size =
      std::all_of(buffer->shape.begin(), buffer->shape.end(), [](const Expr& d) { return d.as<IntImm>() != nullptr; });
  const int64_t bytes = static_size ? buffer->num_elements() * buffer->dtype.element_bytes() : 0;
  if (bytes > 0) f->addDereferenceableParamAttr(arg, static_cast<uint64_t>(bytes));
  f->getArg(arg)->setName(buffer->name);
}

void CodeGenLLVM::start_function(llvm::Function* f) {
  state_ = FunctionState();
  state_.function = f;
  builder_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", f));
}

void CodeGenLLVM::generate(const std::vector<LoweredFunc>& funcs) {
  std::unordered_set<std::string> names;
  for (const auto& f : funcs) {
    if (!is_c_identifier(f.name)) fail("kernel name '", f.name, "' is not a C identifier");
    if (is_external_symbol(f.name))
      fail("kernel name '", f.name, "' is taken by a library function generated code calls");
    if (!names.insert(f.name).second) fail("two kernels are named '", f.name, "'");
  }
  // Exported names are claimed first, so internal functions created later never take them.
  std::vector<llvm::Function*> wrappers;
  for (const auto& f : funcs)
    wrappers.push_back(create_function(f.name, builder_.getInt32Ty(),
                                       {builder_.getInt8PtrTy()->getPointerTo(), builder_.getInt32Ty()},
                                       llvm::GlobalValue::ExternalLinkage));
  for (size_t i = 0; i < funcs.size(); ++i) emit_kernel(funcs[i], wrappers[i]);
}

void CodeGenLLVM::emit_kernel(const LoweredFunc& f, llvm::Function* wrapper) {
  kernel_name_ = f.name;
  std::vector<llvm::Type*> params;
  std::unordered_set<const BufferNode*> seen;
  for (const Buffer& b : f.args) {
    if (!b) fail("kernel '", f.name, "' has an undefined argument");
    // Two arguments naming one buffer would break the noalias promise below.
    if (!seen.insert(b.get()).second) fail("kernel '", f.name, "' takes buffer '", b.name(), "' twice");
    params.push_back(memory_type(b.dtype())->getPointerTo());
  }
  for (const Var& v : f.shape_vars) params.push_back(value_type(v.type()));
  llvm::Function* impl =
      create_function(f.name + "_impl", builder_.getInt32Ty(), params, llvm::GlobalValue::InternalLinkage);
  // Inlining into the wrapper turns the noalias arguments into alias scopes on every access.
  impl->addFnAttr(llvm::Attribute::AlwaysInline);
  for (unsigned i = 0; i < f.args.size(); ++i) set_buffer_attributes(impl, i, f.args[i].get());
  start_function(impl);
  for (unsigned i = 0; i < f.args.size(); ++i) state_.buffers[f.args[i].get()] = impl->getArg(i);
  for (unsigned i = 0; i < f.shape_vars.size(); ++i) {
    llvm::Argument* value = impl->getArg(static_cast<unsigned>(f.args.size()) + i);
    value->setName(f.shape_vars[i].name());
    bind(f.shape_vars[i], value);
  }
  if (f.body) emit(f.body);
  builder_.CreateRet(builder_.getInt32(0));

  start_function(wrapper);
  llvm::Value* args = wrapper->getArg(0);
  llvm::Value* num_args = wrapper->getArg(1);
  args->setName("args");
  num_args->setName("num_args");
  auto* bad = llvm::BasicBlock::Create(ctx_, "bad_argument_count", wrapper);
  auto* call = llvm::BasicBlock::Create(ctx_, "call", wrapper);
  const size_t expected_args = f.args.size() + (f.shape_vars.empty() ? 0 : 1);
  builder_.CreateCondBr(builder_.CreateICmpNE(num_args, builder_.getInt32(static_cast<int32_t>(expected_args))), bad,
                        call);
  builder_.SetInsertPoint(bad);
  builder_.CreateRet(builder_.getInt32(kStatusBadArgumentCount));
  builder_.SetInsertPoint(call);
  std::vector<llvm::Value*> pointers;
  for (unsigned i = 0; i < f.args.size(); ++i) {
    llvm::Value* slot = builder_.CreateConstInBoundsGEP1_64(builder_.getInt8PtrTy(), args, i);
    llvm::Value* p = builder_.CreateLoad(builder_.getInt8PtrTy(), slot, f.args[i].name());
    pointers.push_back(builder_.CreateBitCast(p, params[i]));
  }
  // The dimension variables' values: an array of int64 after the buffers.
  if (!f.shape_vars.empty()) {
    llvm::Value* slot = builder_.CreateConstInBoundsGEP1_64(builder_.getInt8PtrTy(), args, f.args.size());
    llvm::Type* i64 = builder_.getInt64Ty();
    llvm::Value* values =
        builder_.CreateBitCast(builder_.CreateLoad(builder_.getInt8PtrTy(), slot, "shape_vars"), i64->getPointerTo());
    for (unsigned i = 0; i < f.shape_vars.size(); ++i) {
      llvm::Value* v = builder_.CreateLoad(i64, builder_.CreateConstInBoundsGEP1_64(i64, values, i));
      pointers.push_back(builder_.CreateIntCast(v, value_type(f.shape_vars[i].type()), true, f.shape_vars[i].name()));
    }
  }
  builder_.CreateRet(builder_.CreateCall(impl, pointers));
}

llvm::Value* CodeGenLLVM::bind(const Var& var, llvm::Value* value) {
  auto it = state_.vars.find(var.get());
  llvm::Value* previous = it == state_.vars.end() ? nullptr : it->second;
  state_.vars[var.get()] = value;
  return previous;
}

void CodeGenLLVM::unbind(const Var& var, llvm::Value* previous) {
  if (previous) state_.vars[var.get()] = previous;
  else state_.vars.erase(var.get());
}

// --- expressions ----------------------------------------------------------------------------

// Defined before emit(), which instantiates it: clang 14 otherwise leaves the instantiations out.
template <typename T>
llvm::Value* CodeGenLLVM::emit_expr(const T* op) {
  fail("internal error: ", node_kind_name(op->kind), " reached the LLVM code generator in kernel '", kernel_name_,
       "' (lowering must remove it)");
}

llvm::Value* CodeGenLLVM::emit(const Expr& e) {
  TESSERA_CHECK(e.defined(), "undefined expression in kernel ", kernel_name_);
  return dispatch(e.get(), [this](const auto* op) -> llvm::Value* {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(op)>>;
    if constexpr (std::is_base_of_v<ExprNode, T>) return emit_expr(op);
    TESSERA_CHECK(false, "an expression that is not an ExprNode");
    return nullptr;
  });
}

llvm::Value* CodeGenLLVM::emit_expr(const IntImm* op) {
  return llvm::ConstantInt::get(value_type(op->type), static_cast<uint64_t>(op->value), op->type.is_int());
}

llvm::Value* CodeGenLLVM::emit_expr(const FloatImm* op) {
  return llvm::ConstantFP::get(value_type(op->type), op->value);
}

llvm::Value* CodeGenLLVM::emit_expr(const VarNode* op) {
  auto it = state_.vars.find(op);
  if (it == state_.vars.end())
    fail("kernel '", kernel_name_, "' uses variable '", op->name, "', which nothing defines");
  return it->second;
}

llvm::Value* CodeGenLLVM::emit_expr(const Add* op) {
  llvm::Value *a = emit(op->a), *b = emit(op->b);
  if (op->type.is_float()) return builder_.CreateFAdd(a, b);
  return builder_.CreateAdd(a, b, "", false, no_signed_wrap(op->type));
}

llvm::Value* CodeGenLLVM::emit_expr(const Sub* op) {
  llvm::Value *a = emit(op->a), *b = emit(op->b);
  if (op->type.is_float()) return builder_.CreateFSub(a, b);
  return builder_.CreateSub(a, b, "", false, no_signed_wrap(op->type));
}

llvm::Value* CodeGenLLVM::emit_expr(const Mul* op) {
  llvm::Value *a = emit(op->a), *b = emit(op->b);
  if (op->type.is_float()) {
    // Without reassoc: a * (b / c) as (a * b) / c, or with a reciprocal, moves a product off a
    // tie that rounding then resolves the other way (a requantization multiplier's).
    llvm::IRBuilderBase::FastMathFlagGuard guard(builder_);
    llvm::FastMathFlags exact = builder_.getFastMathFlags();
    exact.setAllowReassoc(false);
    builder_.setFastMathFlags(exact);
    return builder_.CreateFMul(a, b);
  }
  return builder_.CreateMul(a, b, "", false, no_signed_wrap(op->type));
}

llvm::Value* CodeGenLLVM::emit_expr(const Div* op) {
  llvm::Value *a = emit(op->a), *b = emit(op->b);
  if (op->type.is_float()) {
    // Without arcp: x * (1 / y) differs from x / y in the last bit, which rounding, floor and
    // quantization expose (floor(41 / 41) would be 0); without reassoc for the same reason.
    llvm::IRBuilderBase::FastMathFlagGuard guard(builder_);
    llvm::FastMathFlags exact = builder_.getFastMathFlags();
    exact.setAllowReciprocal(false);
    exact.setAllowReassoc(false);
    builder_.setFastMathFlags(exact);
    return builder_.CreateFDiv(a, b);
  }
  return op->type.is_uint() ? builder_.CreateUDiv(a, b) : builder_.CreateSDiv(a, b);
}

llvm::Value* CodeGenLLVM::emit_expr(const Mod* op) {
  llvm::Value *a = emit(op->a), *b = emit(op->b);
  if (op->type.is_float()) return builder_.CreateFRem(a, b);
  return op->type.is_uint() ? builder_.CreateURem(a, b) : builder_.CreateSRem(a, b);
}

namespace {
// log2 of a positive power-of-two constant divisor, else -1: index math divides by tile sizes,
// and a shift or mask is much cheaper than the general floor-division sequence.
int power_of_two(const Expr& e) {
  const int64_t* c = as_const_int(e);
  if (!c || *c <= 0 || (*c & (*c - 1)) != 0) return -1;
  return __builtin_ctzll(static_cast<uint64_t>(*c));
}
}  // namespace

llvm::Value* CodeGenLLVM::emit_expr(const FloorDiv* op) {
  llvm::Value *a = emit(op->a), *b = emit(op->b);
  if (op->type.is_uint()) return builder_.CreateUDiv(a, b);
  if (int k = power_of_two(op->b); k >= 0) return builder_.CreateAShr(a, llvm::ConstantInt::get(a->getType(), k));
  // C division truncates; step down when the remainder is nonzero and its sign differs from b's.
  llvm::Value* q = builder_.CreateSDiv(a, b);
  llvm::Value* r = builder_.CreateSRem(a, b);
  llvm::Value* zero = llvm::Constant::getNullValue(a->getType());
  llvm::Value* adjust =
      builder_.CreateAnd(builder_.CreateICmpNE(r, zero), builder_.CreateICmpSLT(builder_.CreateXor(r, b), zero));
  return builder_.CreateSub(q, builder_.CreateZExt(adjust, a->getType()));
}

llvm::Value* CodeGenLLVM::emit_expr(const FloorMod* op) {
  llvm::Value *a = emit(op->a), *b = emit(op->b);
  if (op->type.is_uint()) return builder_.CreateURem(a, b);
  if (int k = power_of_two(op->b); k >= 0)
    return builder_.CreateAnd(a, llvm::ConstantInt::get(a->getType(), (uint64_t{1} << k) - 1));
  llvm::Value* r = builder_.CreateSRem(a, b);
  llvm::Value* zero = llvm::Constant::getNullValue(a->getType());
  llvm::Value* adjust =
      builder_.CreateAnd(builder_.CreateICmpNE(r, zero), builder_.CreateICmpSLT(builder_.CreateXor(r, b), zero));
  return builder_.CreateSelect(adjust, builder_.CreateAdd(r, b), r);
}

// select(a < b, a, b) rather than llvm.minnum: it is what x86's minps computes, NaN cases included.
llvm::Value* CodeGenLLVM::emit_expr(const Min* op) {
  llvm::Value *a = emit(op->a), *b = emit(op->b);
  DataType t = op->type;
  llvm::Value* less = t.is_float() ? builder_.CreateFCmpOLT(a, b)
                                   : (t.is_uint() ? builder_.CreateICmpULT(a, b) : builder_.CreateICmpSLT(a, b));
  return builder_.CreateSelect(less, a, b);
}

llvm::Value* CodeGenLLVM::emit_expr(const Max* op) {
  llvm::Value *a = emit(op->a), *b = emit(op->b);
  DataType t = op->type;
  llvm::Value* greater = t.is_float() ? builder_.CreateFCmpOGT(a, b)
                                      : (t.is_uint() ? builder_.CreateICmpUGT(a, b) : builder_.CreateICmpSGT(a, b));
  return builder_.CreateSelect(greater, a, b);
}

llvm::Value* CodeGenLLVM::compare(NodeKind kind, const Expr& ea, const Expr& eb) {
  using P = llvm::CmpInst::Predicate;
  llvm::Value *a = emit(ea), *b = emit(eb);
  DataType t = ea.type();
  if (t.is_float()) {
    // Ordered, so any comparison with NaN is false, except != which is then true (as in C).
    P p = kind == NodeKind::EQ   ? P::FCMP_OEQ
          : kind == NodeKind::NE ? P::FCMP_UNE
          : kind == NodeKind::LT ? P::FCMP_OLT
          : kind == NodeKind::LE ? P::FCMP_OLE
          : kind == NodeKind::GT ? P::FCMP_OGT
                                 : P::FCMP_OGE;
    return builder_.CreateFCmp(p, a, b);
  }
  const bool s = t.is_int();
  P p = kind == NodeKind::EQ   ? P::ICMP_EQ
        : kind == NodeKind::NE ? P::ICMP_NE
        : kind == NodeKind::LT ? (s ? P::ICMP_SLT : P::ICMP_ULT)
        : kind == NodeKind::LE ? (s ? P::ICMP_SLE : P::ICMP_ULE)
        : kind == NodeKind::GT ? (s ? P::ICMP_SGT : P::ICMP_UGT)
                               : (s ? P::ICMP_SGE : P::ICMP_UGE);
  return builder_.CreateICmp(p, a, b);
}

llvm::Value* CodeGenLLVM::emit_expr(const EQ* op) { return compare(op->kind, op->a, op->b); }
llvm::Value* CodeGenLLVM::emit_expr(const NE* op) { return compare(op->kind, op->a, op->b); }
llvm::Value* CodeGenLLVM::emit_expr(const LT* op) { return compare(op->kind, op->a, op->b); }
llvm::Value* CodeGenLLVM::emit_expr(const LE* op) { return compare(op->kind, op->a, op->b); }
llvm::Value* CodeGenLLVM::emit_expr(const GT* op) { return compare(op->kind, op->a, op->b); }
llvm::Value* CodeGenLLVM::emit_expr(const GE* op) { return compare(op->kind, op->a, op->b); }
llvm::Value* CodeGenLLVM::emit_expr(const And* op) { return builder_.CreateAnd(emit(op->a), emit(op->b)); }
llvm::Value* CodeGenLLVM::emit_expr(const Or* op) { return builder_.CreateOr(emit(op->a), emit(op->b)); }
llvm::Value* CodeGenLLVM::emit_expr(const Not* op) { return builder_.CreateNot(emit(op->a)); }

// A Select reads memory only for the side it picks: operators guard out-of-range reads with it
// (zero padding: select(inside, X[y - pad], 0)), so evaluating both sides could fault. Vector
// selects mask their branches' loads (load_mask_), scalar ones branch.
llvm::Value* CodeGenLLVM::emit_expr(const Select* op) {
  llvm::Value* c = emit(op->condition);
  // A condition known here (a loop unrolled over a Winograd transform's positions) picks its
  // side now: the other, which LLVM would only delete, is never emitted.
  if (auto* known = llvm::dyn_cast<llvm::ConstantInt>(c))
    return emit(known->isOne() ? op->true_value : op->false_value);
  LoadFinder branches(false);
  branches.visit(op->true_value);
  branches.visit(op->false_value);
  // Sides that read nothing new are harmless to evaluate both: a blend (or vmaxps) beats masking.
  if (!reads_beyond_condition(op, branches))
    return builder_.CreateSelect(c, emit(op->true_value), emit(op->false_value));
  // A branch rather than a masked <1 x T> load: the loop vectorizer if-converts a guarded load
  // into a masked vector load, but leaves loops calling masked-load intrinsics scalar.
  const bool shared_condition = !c->getType()->isVectorTy();
  if (op->type.is_scalar() || (shared_condition && branches_on_shared_condition(branches)))
    return emit_if_else(
        c, [&] { return emit(op->true_value); }, [&] { return emit(op->false_value); });
  if (shared_condition) c = builder_.CreateVectorSplat(static_cast<unsigned>(op->type.lanes), c);
  llvm::Value* t = emit_masked(op->true_value, c);
  llvm::Value* f = emit_masked(op->false_value, builder_.CreateNot(c));
  return builder_.CreateSelect(c, t, f);
}

llvm::Value* CodeGenLLVM::emit_masked(const Expr& e, llvm::Value* lanes) {
  llvm::Value* outer = load_mask_;
  // Nested selects compose: a load runs only where every enclosing select picks its side.
  if (outer) lanes = builder_.CreateAnd(load_mask(static_cast<unsigned>(e.type().lanes)), lanes);
  load_mask_ = lanes;
  llvm::Value* v = emit(e);
  load_mask_ = outer;
  return v;
}

llvm::Value* CodeGenLLVM::emit_if_else(llvm::Value* condition, const std::function<llvm::Value*()>& then_value,
                                       const std::function<llvm::Value*()>& else_value) {
  llvm::Function* fn = state_.function;
  auto* then_bb = llvm::BasicBlock::Create(ctx_, "select.true", fn);
  auto* else_bb = llvm::BasicBlock::Create(ctx_, "select.false", fn);
  auto* end_bb = llvm::BasicBlock::Create(ctx_, "select.end", fn);
  builder_.CreateCondBr(condition, then_bb, else_bb);
  builder_.SetInsertPoint(then_bb);
  llvm::Value* t = then_value();
  llvm::BasicBlock* then_end = builder_.GetInsertBlock();  // nested selects may have moved on
  builder_.CreateBr(end_bb);
  builder_.SetInsertPoint(else_bb);
  llvm::Value* f = else_value();
  llvm::BasicBlock* else_end = builder_.GetInsertBlock();
  builder_.CreateBr(end_bb);
  builder_.SetInsertPoint(end_bb);
  llvm::PHINode* phi = builder_.CreatePHI(t->getType(), 2);
  phi->addIncoming(t, then_end);
  phi->addIncoming(f, else_end);
  return phi;
}

llvm::Value* CodeGenLLVM::emit_expr(const Cast* op) { return convert(emit(op->value), op->value.type(), op->type); }

llvm::Value* CodeGenLLVM::convert(llvm::Value* v, DataType from, DataType to) {
  if (from == to) return v;
  llvm::Type* dst = value_type(to);
  if (to.is_bool()) {
    llvm::Value* zero = llvm::Constant::getNullValue(v->getType());
    return from.is_float() ? builder_.CreateFCmpUNE(v, zero) : builder_.CreateICmpNE(v, zero);
  }
  if (from.is_bool()) return to.is_float() ? builder_.CreateUIToFP(v, dst) : builder_.CreateZExt(v, dst);
  if (from.is_integer() && to.is_integer()) return builder_.CreateIntCast(v, dst, from.is_int());
  if (from.is_integer()) return from.is_int() ? builder_.CreateSIToFP(v, dst) : builder_.CreateUIToFP(v, dst);
  if (to.is_float()) return builder_.CreateFPCast(v, dst);  // float16 and float32 share registers
  if (to.bits == 64) return to.is_int() ? builder_.CreateFPToSI(v, dst) : builder_.CreateFPToUI(v, dst);
  if (to.is_int() && to.bits == 32) return builder_.CreateFPToSI(v, dst);
  // Narrow targets convert through a wider signed integer and wrap, as C compilers and numpy do
  // on x86 (-1.0 -> uint8 255); converting directly would make such values poison.
  int wide_bits = to.bits == 32 ? 64 : 32;
  llvm::Value* wide = builder_.CreateFPToSI(v, value_type(DataType::Int(wide_bits, to.lanes)));
  return builder_.CreateTrunc(wide, dst);
}

llvm::Value* CodeGenLLVM::emit_expr(const Call* op) {
  if (op->op == Intrinsic::prefetch) return emit_prefetch(op);
  if (op->op == Intrinsic::barrier)
    fail("kernel '", kernel_name_, "' synchronizes the threads of a block: build it for a GPU target (opencl, cuda)");
  if (op->op == Intrinsic::warp_shuffle_down)
    fail("kernel '", kernel_name_, "' exchanges values between the lanes of a warp: build it for cuda");
  if (op->op == Intrinsic::reinterpret) return emit_reinterpret(emit(op->args[0]), op->args[0].type(), op->type);
  std::vector<llvm::Value*> args;
  for (const Expr& a : op->args) args.push_back(emit(a));
  return emit_intrinsic(builder_, op->op, args, op->args[0].type(), intrinsic_options_);
}

// float16 values live in float registers: their bits are those of the half they narrow to.
llvm::Value* CodeGenLLVM::emit_reinterpret(llvm::Value* v, DataType from, DataType to) {
  auto is_half = [](DataType t) { return t.is_float() && t.bits == 16; };
  auto half_type = [&](DataType t) -> llvm::Type* {
    llvm::Type* h = builder_.getHalfTy();
    return t.is_vector() ? llvm::FixedVectorType::get(h, t.lanes) : h;
  };
  if (is_half(from)) v = builder_.CreateFPTrunc(v, half_type(from));
  llvm::Value* bits = builder_.CreateBitCast(v, is_half(to) ? half_type(to) : value_type(to));
  return is_half(to) ? builder_.CreateFPExt(bits, value_type(to)) : bits;
}

llvm::Value* CodeGenLLVM::emit_expr(const Ramp* op) {
  llvm::Value* base = emit(op->base);
  llvm::Value* stride = emit(op->stride);
  auto lanes = static_cast<unsigned>(op->lanes);
  std::vector<llvm::Constant*> steps;
  for (unsigned i = 0; i < lanes; ++i) steps.push_back(llvm::ConstantInt::get(base->getType(), i));
  bool nsw = no_signed_wrap(op->type);
  llvm::Value* offsets =
      builder_.CreateMul(builder_.CreateVectorSplat(lanes, stride), llvm::ConstantVector::get(steps), "", false, nsw);
  return builder_.CreateAdd(builder_.CreateVectorSplat(lanes, base), offsets, "", false, nsw);
}

llvm::Value* CodeGenLLVM::emit_expr(const Broadcast* op) {
  return builder_.CreateVectorSplat(static_cast<unsigned>(op->lanes), emit(op->value));
}

llvm::Value* CodeGenLLVM::emit_expr(const Let* op) {
  llvm::Value* previous = bind(op->var, emit(op->value));
  if (op->var.type().is_integer() && op->var.type().is_scalar()) index_facts_[op->var.get()] = mod_rem(op->value);
  llvm::Value* body = emit(op->body);
  index_facts_.erase(op->var.get());
  unbind(op->var, previous);
  return body;
}

// --- statements -----------------------------------------------------------------------------

void CodeGenLLVM::emit(const Stmt& s) {
  if (!s) return;
  dispatch(s.get(), [this](const auto* op) {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(op)>>;
    if constexpr (std::is_base_of_v<StmtNode, T>) emit_stmt(op);
  });
}

template <typename T>
void CodeGenLLVM::emit_stmt(const T* op) {
  fail("internal error: ", node_kind_name(op->kind), " reached the LLVM code generator in kernel '", kernel_name_,
       "' (lowering must remove it)");
}

void CodeGenLLVM::emit_stmt(const ThreadExtent* op) {
  fail("kernel '", kernel_name_, "' binds loop ", op->var.name(), " to ", op->tag,
       ": build it for a GPU target (opencl, cuda), or leave its loops unbound for CPUs");
}

void CodeGenLLVM::emit_stmt(const LetStmt* op) {
  llvm::Value* previous = bind(op->var, emit(op->value));
  if (op->var.type().is_integer() && op->var.type().is_scalar()) index_facts_[op->var.get()] = mod_rem(op->value);
  if (op->body) emit(op->body);
  index_facts_.erase(op->var.get());
  unbind(op->var, previous);
}

llvm::MDNode* CodeGenLLVM::loop_hint(const char* name) {
  std::vector<llvm::Metadata*> hint = {llvm::MDString::get(ctx_, name)};
  if (std::string(name) == "llvm.loop.vectorize.enable")
    hint.push_back(llvm::ConstantAsMetadata::get(builder_.getTrue()));
  // Loop metadata is a distinct node whose first operand is itself.
  llvm::MDNode* loop = llvm::MDNode::getDistinct(ctx_, {nullptr, llvm::MDNode::get(ctx_, hint)});
  loop->replaceOperandWith(0, loop);
  return loop;
}

void CodeGenLLVM::emit_serial_loop(const Var& var, llvm::Value* begin, llvm::Value* end, const Stmt& body,
                                   llvm::MDNode* loop_md) {
  llvm::Function* fn = state_.function;
  llvm::BasicBlock* preheader = builder_.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx_, "for." + var.name(), fn);
  auto* body_bb = llvm::BasicBlock::Create(ctx_, "for." + var.name() + ".body", fn);
  auto* exit = llvm::BasicBlock::Create(ctx_, "for." + var.name() + ".end", fn);
  builder_.CreateBr(header);
  builder_.SetInsertPoint(header);
  llvm::PHINode* i = builder_.CreatePHI(begin->getType(), 2, var.name());
  i->addIncoming(begin, preheader);
  const bool is_signed = var.type().is_int();
  builder_.CreateCondBr(is_signed ? builder_.CreateICmpSLT(i, end) : builder_.CreateICmpULT(i, end), body_bb, exit);
  builder_.SetInsertPoint(body_bb);
  llvm::Value* previous = bind(var, i);
  if (body) emit(body);
  unbind(var, previous);
  // i < end, so i + 1 cannot wrap.
  llvm::Value* next = builder_.CreateAdd(i, llvm::ConstantInt::get(i->getType(), 1), "", !is_signed, is_signed);
  llvm::BranchInst* back = builder_.CreateBr(header);
  if (loop_md) back->setMetadata(llvm::LLVMContext::MD_loop, loop_md);
  i->addIncoming(next, builder_.GetInsertBlock());
  builder_.SetInsertPoint(exit);
}

void CodeGenLLVM::emit_stmt(const For* op) {
  if (op->for_kind == ForKind::Parallel) return emit_parallel_for(op);
  if (op->for_kind == ForKind::Unrolled && unroll_explicit(op->pragmas) != 0) {
    const int64_t* extent = as_const_int(op->extent);
    if (!extent)
      fail("kernel '", kernel_name_, "': loop ", op->var.name(), " is unrolled but its extent ", to_string(op->extent),
           " is not a constant");
    if (*extent > kMaxUnrolledIterations)
      fail("kernel '", kernel_name_, "': loop ", op->var.name(), " is unrolled ", *extent, " times (at most ",
           kMaxUnrolledIterations, ")");
    llvm::Value* min = emit(op->min);
    for (int64_t k = 0; k < *extent; ++k) {
      llvm::Value* previous = bind(op->var, builder_.CreateAdd(min, llvm::ConstantInt::get(min->getType(), k)));
      emit(op->body);
      unbind(op->var, previous);
    }
    return;
  }
  llvm::Value* begin = emit(op->min);
  llvm::Value* end = builder_.CreateAdd(begin, emit(op->extent));
  llvm::MDNode* hint = nullptr;
  // Unrolling left to LLVM (unroll_explicit = 0); a vectorized loop lowering left alone.
  if (op->for_kind == ForKind::Unrolled) hint = loop_hint("llvm.loop.unroll.full");
  if (op->for_kind == ForKind::Vectorized) hint = loop_hint("llvm.loop.vectorize.enable");
  emit_serial_loop(op->var, begin, end, op->body, hint);
}

void CodeGenLLVM::emit_stmt(const IfThenElse* op) {
  if (op->condition.type().is_vector()) return emit_predicated_store(op);
  llvm::Value* cond = emit(op->condition);
  llvm::Function* fn = state_.function;
  auto* then_bb = llvm::BasicBlock::Create(ctx_, "if.then", fn);
  auto* end_bb = llvm::BasicBlock::Create(ctx_, "if.end", fn);
  auto* else_bb = op->else_case ? llvm::BasicBlock::Create(ctx_, "if.else", fn) : end_bb;
  builder_.CreateCondBr(cond, then_bb, else_bb);
  builder_.SetInsertPoint(then_bb);
  if (op->then_case) emit(op->then_case);
  builder_.CreateBr(end_bb);
  if (op->else_case) {
    builder_.SetInsertPoint(else_bb);
    emit(op->else_case);
    builder_.CreateBr(end_bb);
  }
  builder_.SetInsertPoint(end_bb);
}

void CodeGenLLVM::emit_stmt(const Block* op) {
  for (const Stmt& s : op->stmts) emit(s);
}

void CodeGenLLVM::emit_stmt(const Evaluate* op) { emit(op->value); }

void CodeGenLLVM::return_if_failed(llvm::Value* status) {
  auto* failed = llvm::BasicBlock::Create(ctx_, "failed", state_.function);
  auto* ok = llvm::BasicBlock::Create(ctx_, "ok", state_.function);
  llvm::MDNode* unlikely = llvm::MDBuilder(ctx_).createBranchWeights(1, 1 << 20);
  builder_.CreateCondBr(builder_.CreateICmpNE(status, builder_.getInt32(0)), failed, ok, unlikely);
  builder_.SetInsertPoint(failed);
  for (auto it = state_.heap_buffers.rbegin(); it != state_.heap_buffers.rend(); ++it)
    builder_.CreateCall(
        external_function("free", llvm::FunctionType::get(builder_.getVoidTy(), {builder_.getInt8PtrTy()}, false)),
        {*it});
  builder_.CreateRet(status);
  builder_.SetInsertPoint(ok);
}

llvm::AllocaInst* CodeGenLLVM::entry_alloca(llvm::Type* type, llvm::Value* count, const std::string& name) {
  // In the entry block, so a buffer inside a loop is one stack slot, not a growing stack.
  llvm::BasicBlock& entry = state_.function->getEntryBlock();
  llvm::IRBuilder<> b(&entry, entry.begin());
  llvm::AllocaInst* a = b.CreateAlloca(type, count, name);
  a->setAlignment(llvm::Align(runtime::kAllocAlignment));
  return a;
}

llvm::FunctionCallee CodeGenLLVM::external_function(const char* name, llvm::FunctionType* type) {
  llvm::FunctionCallee f = module_.getOrInsertFunction(name, type);
  if (auto* fn = llvm::dyn_cast<llvm::Function>(f.getCallee())) fn->addFnAttr(llvm::Attribute::NoUnwind);
  return f;
}

}  // namespace tessera::targets::llvm_backend
