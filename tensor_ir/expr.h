// Expression nodes of the tensor IR (Halide/TVM style). Every expression has a DataType; index
// arithmetic is int64. `make` checks its operands and computes the result type; the operators
// in op.h add the implicit constant conversions a person expects when writing A[i] + 1.
#pragma once
#include <string>
#include <vector>

#include "runtime/data_type.h"
#include "tensor_ir/node.h"

namespace tessera::tensor_ir {

using runtime::DataType;
constexpr DataType kIndexType = runtime::kInt64;

struct ExprNode : Object {
  DataType type;
  static constexpr bool kind_matches(NodeKind k) {
#define TESSERA_X(kind, type) k == NodeKind::kind ||
    return TESSERA_EXPR_NODES(TESSERA_X) false;
#undef TESSERA_X
  }

 protected:
  ExprNode(NodeKind k, DataType t) : Object(k), type(t) {}
};

class Expr : public Ref<ExprNode> {
 public:
  using Ref<ExprNode>::Ref;
  Expr() = default;
  Expr(int64_t value);                                    // NOLINT: an int64 constant, so A[i + 1] reads naturally
  Expr(int value) : Expr(static_cast<int64_t>(value)) {}  // NOLINT
  // Not from a bool: `a && b` on two handles is a C++ bool (both defined), which would become the
  // int64 1 where logical_and(a, b) was meant.
  Expr(bool) = delete;
  DataType type() const { return get()->type; }
};

struct Range {
  Expr min, extent;
  Range() = default;
  Range(Expr min, Expr extent) : min(std::move(min)), extent(std::move(extent)) {}
  // [begin, end) as a Range with min = begin, extent = end - begin.
  static Range from_min_max(Expr begin, Expr end);
};

struct IntImm : ExprNode {
  TESSERA_NODE(IntImm)
  int64_t value;
  TESSERA_FIELDS(type, value)
  static Expr make(DataType type, int64_t value);
  IntImm(DataType t, int64_t v) : ExprNode(kKind, t), value(v) {}
};

struct FloatImm : ExprNode {
  TESSERA_NODE(FloatImm)
  double value;
  TESSERA_FIELDS(type, value)
  static Expr make(DataType type, double value);
  FloatImm(DataType t, double v) : ExprNode(kKind, t), value(v) {}
};

// A variable; two variables are the same only if they are the same node, whatever their names.
struct VarNode : ExprNode {
  TESSERA_NODE(Var)
  std::string name;
  TESSERA_FIELDS(type, name)
  static Expr make(DataType type, std::string name);
  VarNode(DataType t, std::string n) : ExprNode(kKind, t), name(std::move(n)) {}
};

class Var : public Ref<VarNode> {
 public:
  using Ref<VarNode>::Ref;
  Var() = default;
  explicit Var(std::string name, DataType type = kIndexType);
  operator Expr() const { return Expr(get()); }  // NOLINT
  const std::string& name() const { return get()->name; }
  DataType type() const { return get()->type; }
};

// Binary nodes share one layout; `make` of arithmetic ones requires equal types, of
// comparisons returns bool with the operands' lane count.
template <NodeKind K>
struct BinaryNode : ExprNode {
  static constexpr NodeKind kKind = K;
  static constexpr bool kind_matches(NodeKind k) { return k == K; }
  Expr a, b;
  TESSERA_FIELDS(a, b)
  static Expr make(Expr a, Expr b);
  BinaryNode(DataType t, Expr a_, Expr b_) : ExprNode(K, t), a(std::move(a_)), b(std::move(b_)) {}
};
using Add = BinaryNode<NodeKind::Add>;
using Sub = BinaryNode<NodeKind::Sub>;
using Mul = BinaryNode<NodeKind::Mul>;
using Div = BinaryNode<NodeKind::Div>;            // floats: true division; integers: rounds toward zero
using Mod = BinaryNode<NodeKind::Mod>;            // integers: sign of the dividend (C's %); floats: fmod
using FloorDiv = BinaryNode<NodeKind::FloorDiv>;  // integers: rounds toward -infinity
using FloorMod = BinaryNode<NodeKind::FloorMod>;  // integers: sign of the divisor (Python's %)
using Min = BinaryNode<NodeKind::Min>;
using Max = BinaryNode<NodeKind::Max>;
using EQ = BinaryNode<NodeKind::EQ>;
using NE = BinaryNode<NodeKind::NE>;
using LT = BinaryNode<NodeKind::LT>;
using LE = BinaryNode<NodeKind::LE>;
using GT = BinaryNode<NodeKind::GT>;
using GE = BinaryNode<NodeKind::GE>;
using And = BinaryNode<NodeKind::And>;
using Or = BinaryNode<NodeKind::Or>;

struct Not : ExprNode {
  TESSERA_NODE(Not)
  Expr a;
  TESSERA_FIELDS(a)
  static Expr make(Expr a);
  Not(DataType t, Expr a_) : ExprNode(kKind, t), a(std::move(a_)) {}
};

struct Select : ExprNode {
  TESSERA_NODE(Select)
  Expr condition, true_value, false_value;
  TESSERA_FIELDS(condition, true_value, false_value)
  static Expr make(Expr condition, Expr true_value, Expr false_value);
  Select(DataType t, Expr c, Expr tv, Expr fv)
      : ExprNode(kKind, t), condition(std::move(c)), true_value(std::move(tv)), false_value(std::move(fv)) {}
};

struct Cast : ExprNode {
  TESSERA_NODE(Cast)
  Expr value;
  TESSERA_FIELDS(type, value)
  static Expr make(DataType type, Expr value);
  Cast(DataType t, Expr v) : ExprNode(kKind, t), value(std::move(v)) {}
};

// Pure math and bit intrinsics, the likely hint, the prefetch, the device barrier and the warp
// shuffle.
// X(name, number of arguments).
#define TESSERA_INTRINSICS(X)                                                                                      \
  X(exp, 1)                                                                                                        \
  X(log, 1)                                                                                                        \
  X(sqrt, 1) X(rsqrt, 1) X(tanh, 1) X(sigmoid, 1) X(erf, 1) X(pow, 2) X(abs, 1) X(floor, 1) X(ceil, 1) X(round, 1) \
      X(trunc, 1) X(sin, 1) X(cos, 1) X(tan, 1) X(asin, 1) X(acos, 1) X(atan, 1) X(sinh, 1) X(cosh, 1) X(asinh, 1) \
          X(acosh, 1) X(atanh, 1) X(isnan, 1) X(isinf, 1) X(bitwise_and, 2) X(bitwise_or, 2) X(bitwise_xor, 2)     \
              X(bitwise_not, 1) X(shift_left, 2) X(shift_right, 2) X(likely, 1) X(prefetch, 1) X(barrier, 0)       \
                  X(warp_shuffle_down, 2) X(reinterpret, 1)

enum class Intrinsic : uint8_t {
#define TESSERA_X(name, arity) name,
  TESSERA_INTRINSICS(TESSERA_X)
#undef TESSERA_X
};
#define TESSERA_X(name, arity) +1
constexpr int kNumIntrinsics = 0 TESSERA_INTRINSICS(TESSERA_X);
#undef TESSERA_X
const char* intrinsic_name(Intrinsic op);
int intrinsic_arity(Intrinsic op);
// exp, log, tanh, sigmoid, erf, pow and the trigonometric and hyperbolic functions: those
// computed by polynomials of a few dozen operations.
bool is_transcendental(Intrinsic op);
// Throws tessera::Error naming `name` if it is not an intrinsic.
Intrinsic parse_intrinsic(const std::string& name);

struct Call : ExprNode {
  TESSERA_NODE(Call)
  Intrinsic op;
  std::vector<Expr> args;
  TESSERA_FIELDS(type, op, args)
  // Float math takes and returns the argument type; isnan/isinf return bool; bit ops are integer.
  // likely(c) marks a bool condition that is almost always true (the guard of an uneven split):
  // loop partitioning looks for it; lowering removes it before code generation.
  // prefetch(load) brings the cache line of a scalar load's element into cache and reads
  // nothing (its value is zero): Stage::prefetch's lowering evaluates it for its effect.
  // barrier() (int32, zero) is evaluated for its effect in device kernels: each thread of a block
  // waits there until all have reached it, and sees what the others wrote to shared memory before
  // (CUDA's __syncthreads(), OpenCL's barrier(CLK_LOCAL_MEM_FENCE)).
  // warp_shuffle_down(value, offset) (scalar value, int32 offset) is, in each lane of a warp, the
  // value of the lane `offset` above it, or its own where that lane is past the warp's end (CUDA's
  // __shfl_down_sync over the full warp). Every lane of the warp must evaluate it together, so,
  // like a barrier, it may not sit under control flow that depends on the thread index.
  // reinterpret(x) is x's bits read as the call's type, of the same width in memory (a narrow
  // type's bits are its storage_type()'s): float32 <-> uint32, bfloat16 <-> uint16.
  static Expr make(DataType type, Intrinsic op, std::vector<Expr> args);
  Call(DataType t, Intrinsic o, std::vector<Expr> a) : ExprNode(kKind, t), op(o), args(std::move(a)) {}
};

// The vector base, base + stride, ..., base + (lanes-1) * stride.
struct Ramp : ExprNode {
  TESSERA_NODE(Ramp)
  Expr base, stride;
  int64_t lanes;
  TESSERA_FIELDS(base, stride, lanes)
  static Expr make(Expr base, Expr stride, int64_t lanes);
  Ramp(DataType t, Expr b, Expr s, int64_t l)
      : ExprNode(kKind, t), base(std::move(b)), stride(std::move(s)), lanes(l) {}
};

// A scalar repeated in every lane.
struct Broadcast : ExprNode {
  TESSERA_NODE(Broadcast)
  Expr value;
  int64_t lanes;
  TESSERA_FIELDS(value, lanes)
  static Expr make(Expr value, int64_t lanes);
  Broadcast(DataType t, Expr v, int64_t l) : ExprNode(kKind, t), value(std::move(v)), lanes(l) {}
};

struct Let : ExprNode {
  TESSERA_NODE(Let)
  Var var;
  Expr value, body;
  TESSERA_FIELDS(var, value, body)
  static Expr make(Var var, Expr value, Expr body);
  Let(DataType t, Var v, Expr val, Expr b)
      : ExprNode(kKind, t), var(std::move(v)), value(std::move(val)), body(std::move(b)) {}
};

}  // namespace tessera::tensor_ir
