#include "targets/llvm/llvm_intrinsics.h"

#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/Module.h>

#include <cmath>
#include <limits>

#include "runtime/error.h"

namespace tessera::targets::llvm_backend {

namespace {

using llvm::Value;

// Cephes-style float32 approximations (range reduction, then a short polynomial), written once
// for scalars and vectors alike so a kernel's vector body and scalar tail agree bit for bit.
// They run with `contract` alone: reassociation would fold the two-part ln(2) of the range
// reductions back into one constant and lose the digits the split exists to keep.
class Approx {
 public:
  Approx(llvm::IRBuilder<>& b, llvm::Type* type, const IntrinsicOptions& options = {})
      : b_(b), guard_(b), t_(type), options_(options) {
    llvm::FastMathFlags contract;
    contract.setAllowContract(true);
    b_.setFastMathFlags(contract);
    llvm::Type* i32 = b.getInt32Ty();
    i_ = type->isVectorTy() ? llvm::VectorType::get(i32, llvm::cast<llvm::VectorType>(type)->getElementCount()) : i32;
  }

  // exp: x = n ln2 + r with |r| <= ln2 / 2, exp(r) by a degree-7 polynomial, times 2^n.
  Value* exp(Value* x) {
    // exp(89) overflows and exp(-104) underflows float32, so clamping changes no result.
    Value* xc = min(max(x, c(-104.0)), c(89.0));
    Value* n = b_.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, mul(xc, c(1.44269504088896341)));
    Value* r = sub(xc, mul(n, c(0.693359375)));
    r = sub(r, mul(n, c(-2.12194440e-4)));
    Value* p =
        poly(r, {1.9875691500E-4, 1.3981999507E-3, 8.3334519073E-3, 4.1665795894E-2, 1.6666665459E-1, 5.0000001201E-1});
    Value* y = add(add(mul(mul(p, r), r), r), c(1.0));
    y = times_pow2(y, n);
    return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, y);
  }

  // log: x = m 2^e with m in [sqrt(1/2), sqrt(2)), log(m) by a polynomial in m - 1.
  Value* log(Value* x) {
    // Denormals are scaled into the normal range first so their exponent field means something.
    Value* tiny = b_.CreateFCmpOLT(x, c(std::numeric_limits<float>::min()));
    Value* xs = b_.CreateSelect(tiny, mul(x, c(8388608.0)), x);
    Value* bits = b_.CreateBitCast(xs, i_);
    Value* e = b_.CreateSub(b_.CreateLShr(bits, ci(23)), ci(126));
    e = b_.CreateSub(e, b_.CreateSelect(tiny, ci(23), ci(0)));
    Value* m = b_.CreateBitCast(b_.CreateOr(b_.CreateAnd(bits, ci(0x807fffff)), ci(0x3f000000)), t_);  // [0.5, 1)
    Value* low = b_.CreateFCmpOLT(m, c(0.707106781186547524));
    e = b_.CreateSub(e, b_.CreateZExt(low, i_));
    m = b_.CreateSelect(low, sub(add(m, m), c(1.0)), sub(m, c(1.0)));
    Value* z = mul(m, m);
    Value* y = poly(m, {7.0376836292E-2, -1.1514610310E-1, 1.1676998740E-1, -1.2420140846E-1, 1.4249322787E-1,
                        -1.6668057665E-1, 2.0000714765E-1, -2.4999993993E-1, 3.3333331174E-1});
    y = mul(mul(y, m), z);
    Value* fe = b_.CreateSIToFP(e, t_);
    y = add(y, mul(fe, c(-2.12194440e-4)));
    y = sub(y, mul(c(0.5), z));
    Value* r = add(add(m, y), mul(fe, c(0.693359375)));
    const double inf = std::numeric_limits<double>::infinity();
    r = b_.CreateSelect(b_.CreateFCmpOEQ(x, c(inf)), c(inf), r);
    r = b_.CreateSelect(b_.CreateFCmpOEQ(x, c(0.0)), c(-inf), r);
    return b_.CreateSelect(b_.CreateFCmpULT(x, c(0.0)), c(std::nan("")), r);  // negative or NaN
  }

  // tanh: an odd polynomial near zero, where 1 - 2 / (exp(2|x|) + 1) would cancel.
  Value* tanh(Value* x) {
    Value* a = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
    Value* s = exp(mul(c(2.0), a));
    Value* large = b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, sub(c(1.0), div(c(2.0), add(s, c(1.0)))), x);
    Value* z = mul(x, x);
    Value* p = poly(z, {-5.70498872745E-3, 2.06390887954E-2, -5.37397155531E-2, 1.33314422036E-1, -3.33332819422E-1});
    Value* small = add(mul(mul(p, z), x), x);
    return b_.CreateSelect(b_.CreateFCmpOGT(a, c(0.625)), large, small);  // NaN takes `small`
  }

  Value* sigmoid(Value* x) { return div(c(1.0), add(c(1.0), exp(b_.CreateFNeg(x)))); }

  // erf: x P(x^2) / Q(x^2) on |x| <= 4 (erf(4) rounds to 1), the rational minimax form of
  // Eigen's and XLA's fast erf: one branch, so it costs a third of a Taylor series and an
  // exp-based tail evaluated side by side; within 4e-7 of erf in float32. A NaN passes through
  // every step (the clamps keep it), so it needs no select of its own.
  Value* erf(Value* x) {
    Value* a = min_keeping_nan(b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x), c(4.0));
    Value* z = mul(a, a);
    Value* p = poly(z, {-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
                        -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02});
    Value* q = poly(z, {-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03,
                        -1.42647390514189e-02});
    Value* r = div(mul(p, a), q);
    r = min_keeping_nan(r, c(1.0));  // rounding can lift it a hair above 1
    return b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, r, x);
  }

 private:
  Value* c(double v) { return llvm::ConstantFP::get(t_, v); }
  Value* ci(uint32_t v) { return llvm::ConstantInt::get(i_, v); }
  Value* add(Value* a, Value* b) { return b_.CreateFAdd(a, b); }
  Value* sub(Value* a, Value* b) { return b_.CreateFSub(a, b); }
  Value* mul(Value* a, Value* b) { return b_.CreateFMul(a, b); }
  Value* div(Value* a, Value* b) { return b_.CreateFDiv(a, b); }
  Value* min(Value* a, Value* b) { return b_.CreateSelect(b_.CreateFCmpOLT(a, b), a, b); }
  Value* min_keeping_nan(Value* a, Value* b) { return b_.CreateSelect(b_.CreateFCmpOGT(a, b), b, a); }
  Value* max(Value* a, Value* b) { return b_.CreateSelect(b_.CreateFCmpOGT(a, b), a, b); }
  // Horner's rule; coefficients from the highest degree down.
  Value* poly(Value* x, const std::vector<double>& coefficients) {
    Value* p = c(coefficients[0]);
    for (size_t i = 1; i < coefficients.size(); ++i) p = add(mul(p, x), c(coefficients[i]));
    return p;
  }
  // 2^n for n in [-126, 127], built from the exponent bits.
  Value* pow2(Value* n) { return b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(n, ci(127)), ci(23)), t_); }

  // y * 2^n for y in [0.5, 2] and an integral float n in [-150, 129], rounded once: as two factors
  // built from exponent bits, each a normal float (overflow to infinity and gradual underflow to
  // denormals and zero then come out of the multiplications; the first never rounds), or on 16
  // lanes with AVX-512 by vscalefps, which computes the same.
  Value* times_pow2(Value* y, Value* n) {
    auto* vec = llvm::dyn_cast<llvm::FixedVectorType>(t_);
    if (options_.avx512_scalef && vec && vec->getNumElements() == 16) {
      llvm::Value* all = b_.getInt16(0xffff);
      llvm::Value* current_rounding = b_.getInt32(4);
      return b_.CreateIntrinsic(llvm::Intrinsic::x86_avx512_mask_scalef_ps_512, {},
                                {y, n, llvm::UndefValue::get(t_), all, current_rounding});
    }
    Value* ni = b_.CreateFPToSI(n, i_);
    Value* n1 = b_.CreateAShr(ni, ci(1));
    Value* n2 = b_.CreateSub(ni, n1);
    return mul(mul(y, pow2(n1)), pow2(n2));
  }

  llvm::IRBuilder<>& b_;
  llvm::IRBuilderBase::FastMathFlagGuard guard_;
  llvm::Type* t_;
  IntrinsicOptions options_;
  llvm::Type* i_ = nullptr;  // int32 with t_'s lane count
};

// A libm function ("tanh" -> tanhf for float), called lane by lane on vectors.
Value* call_libm(llvm::IRBuilder<>& b, const std::string& name, const std::vector<Value*>& args) {
  llvm::Type* type = args[0]->getType();
  llvm::Type* scalar = type->getScalarType();
  auto* fn_type = llvm::FunctionType::get(scalar, std::vector<llvm::Type*>(args.size(), scalar), false);
  llvm::Module* module = b.GetInsertBlock()->getModule();
  llvm::FunctionCallee fn = module->getOrInsertFunction(scalar->isFloatTy() ? name + "f" : name, fn_type);
  if (auto* f = llvm::dyn_cast<llvm::Function>(fn.getCallee())) {
    // As with -fno-math-errno: pure, so LLVM may hoist and share calls.
    f->addFnAttr(llvm::Attribute::NoUnwind);
    f->addFnAttr(llvm::Attribute::ReadNone);
    f->addFnAttr(llvm::Attribute::WillReturn);
  }
  auto* vec = llvm::dyn_cast<llvm::FixedVectorType>(type);
  if (!vec) return b.CreateCall(fn, args);
  Value* result = llvm::UndefValue::get(type);
  for (unsigned i = 0; i < vec->getNumElements(); ++i) {
    std::vector<Value*> lane;
    for (Value* a : args) lane.push_back(b.CreateExtractElement(a, i));
    result = b.CreateInsertElement(result, b.CreateCall(fn, lane), i);
  }
  return result;
}

Value* unary(llvm::IRBuilder<>& b, llvm::Intrinsic::ID id, Value* x) { return b.CreateUnaryIntrinsic(id, x); }

}  // namespace

llvm::Value* emit_intrinsic(llvm::IRBuilder<>& b, tensor_ir::Intrinsic op, const std::vector<llvm::Value*>& args,
                            runtime::DataType type, const IntrinsicOptions& options) {
  using tensor_ir::Intrinsic;
  Value* x = args[0];
  llvm::Type* t = x->getType();
  const bool f32 = t->getScalarType()->isFloatTy();
  switch (op) {
    case Intrinsic::exp:
      return f32 ? Approx(b, t, options).exp(x) : unary(b, llvm::Intrinsic::exp, x);
    case Intrinsic::log:
      return f32 ? Approx(b, t).log(x) : unary(b, llvm::Intrinsic::log, x);
    case Intrinsic::tanh:
      return f32 ? Approx(b, t, options).tanh(x) : call_libm(b, "tanh", args);
    case Intrinsic::erf:
      return f32 ? Approx(b, t).erf(x) : call_libm(b, "erf", args);
    case Intrinsic::sigmoid: {
      if (f32) return Approx(b, t, options).sigmoid(x);
      Value* one = llvm::ConstantFP::get(t, 1.0);
      return b.CreateFDiv(one, b.CreateFAdd(one, unary(b, llvm::Intrinsic::exp, b.CreateFNeg(x))));
    }
    case Intrinsic::sqrt:
      return unary(b, llvm::Intrinsic::sqrt, x);
    case Intrinsic::rsqrt: {
      // Without `arcp`: with it x86 turns 1 / sqrt(x) into an estimate plus a Newton step, which
      // gives NaN for 0 and infinity and -inf for denormals.
      llvm::IRBuilderBase::FastMathFlagGuard guard(b);
      b.clearFastMathFlags();
      return b.CreateFDiv(llvm::ConstantFP::get(t, 1.0), unary(b, llvm::Intrinsic::sqrt, x));
    }
    case Intrinsic::pow:
      return b.CreateBinaryIntrinsic(llvm::Intrinsic::pow, x, args[1]);
    case Intrinsic::abs:
      if (type.is_float()) return unary(b, llvm::Intrinsic::fabs, x);
      if (type.is_uint()) return x;
      return b.CreateBinaryIntrinsic(llvm::Intrinsic::abs, x, b.getFalse());  // abs(INT_MIN) wraps
    case Intrinsic::floor:
      return unary(b, llvm::Intrinsic::floor, x);
    case Intrinsic::ceil:
      return unary(b, llvm::Intrinsic::ceil, x);
    case Intrinsic::trunc:
      return unary(b, llvm::Intrinsic::trunc, x);
    case Intrinsic::round:
      return unary(b, llvm::Intrinsic::roundeven, x);  // half to even, like numpy
    case Intrinsic::sin:
      return unary(b, llvm::Intrinsic::sin, x);
    case Intrinsic::cos:
      return unary(b, llvm::Intrinsic::cos, x);
    case Intrinsic::tan:
      return call_libm(b, "tan", args);
    case Intrinsic::asin:
      return call_libm(b, "asin", args);
    case Intrinsic::acos:
      return call_libm(b, "acos", args);
    case Intrinsic::atan:
      return call_libm(b, "atan", args);
    case Intrinsic::sinh:
      return call_libm(b, "sinh", args);
    case Intrinsic::cosh:
      return call_libm(b, "cosh", args);
    case Intrinsic::asinh:
      return call_libm(b, "asinh", args);
    case Intrinsic::acosh:
      return call_libm(b, "acosh", args);
    case Intrinsic::atanh:
      return call_libm(b, "atanh", args);
    case Intrinsic::isnan:
      return b.CreateFCmpUNO(x, x);
    case Intrinsic::isinf:
      return b.CreateFCmpOEQ(unary(b, llvm::Intrinsic::fabs, x), llvm::ConstantFP::getInfinity(t));
    case Intrinsic::bitwise_and:
      return b.CreateAnd(x, args[1]);
    case Intrinsic::bitwise_or:
      return b.CreateOr(x, args[1]);
    case Intrinsic::bitwise_xor:
      return b.CreateXor(x, args[1]);
    case Intrinsic::bitwise_not:
      return b.CreateNot(x);
    case Intrinsic::shift_left:
      return b.CreateShl(x, args[1]);
    case Intrinsic::shift_right:
      return type.is_uint() ? b.CreateLShr(x, args[1]) : b.CreateAShr(x, args[1]);
    case Intrinsic::likely:  // lowering drops it; if one is left, it still guides block layout
      return t->isVectorTy() ? x : b.CreateIntrinsic(llvm::Intrinsic::expect, {t}, {x, b.getTrue()});
    case Intrinsic::prefetch:  // CodeGenLLVM emits it from the load's address, never its value
    case Intrinsic::barrier:   // CodeGenLLVM refuses device kernels first
    case Intrinsic::warp_shuffle_down:
    case Intrinsic::reinterpret:  // CodeGenLLVM::emit_reinterpret knows how float16 is held
      break;
  }
  fail("internal error: intrinsic ", tensor_ir::intrinsic_name(op), " has no LLVM lowering");
}

}  // namespace tessera::targets::llvm_backend
