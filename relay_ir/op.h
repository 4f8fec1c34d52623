// Operator definitions. Each op is registered once, in its family's file under relay_ir/ops/,
// with everything the compiler needs to know about it in one place: its attributes, how its
// output type follows from its inputs (type relation), how it fuses (pattern), which compute
// definition in tensor_ir/ops/ implements it and its gradient. Schedules come from
// schedule/templates (relay_ir/ops/families.h says what adding an op touches).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "relay_ir/attrs.h"
#include "relay_ir/expr.h"
#include "relay_ir/type.h"
#include "tensor_ir/tensor.h"

namespace tessera::relay_ir {

// How an op combines with its neighbours when fusing (TVM's pattern kinds, in order: a kind
// fuses into kinds at or above it).
enum class OpPattern : int {
  Elemwise = 0,         // out[i] = f(in[i])
  Broadcast = 1,        // elementwise with broadcasting
  Injective = 2,        // each output element reads a few inputs (transpose, slice, concat)
  CommReduce = 3,       // reductions
  OutEWiseFusable = 4,  // conv, matmul: elementwise ops may fuse into their output
  Opaque = 8,           // fuses with nothing
};
const char* pattern_name(OpPattern p);

struct AttrSpec {
  std::string name;
  AttrValue default_value;  // also gives the kind
  bool required = false;
};

// Given the argument types and the call's attributes, the result type; throws tessera::Error
// (naming the op and what is wrong) when they do not fit.
using TypeRelation = std::function<Type(const std::vector<Type>& args, const Attrs& attrs)>;
// Builds the op's output tensor(s) from input tensors (placeholders shaped like the argument
// types); `out` is the inferred result type.
using ComputeFn = std::function<std::vector<tensor_ir::Tensor>(const std::vector<tensor_ir::Tensor>& inputs,
                                                               const Attrs& attrs, const Type& out)>;
// The ComputeFn of an op with one output, from a function of the inputs and attributes.
template <typename F>
ComputeFn single_output(F f) {
  return [f](const std::vector<tensor_ir::Tensor>& in, const Attrs& attrs, const Type&) {
    return std::vector<tensor_ir::Tensor>{f(in, attrs)};
  };
}

// Given a call of the op (typed) and the cotangent of its result (a Tuple of one cotangent per
// output when the op returns a tuple), the cotangent of each argument, as graph expressions;
// an undefined Expr for an argument that has none (indices, shapes, integer inputs).
using GradientFn = std::function<std::vector<Expr>(const Expr& call, const Expr& output_grad)>;

struct OpDef {
  std::string name;
  std::string doc;
  int min_args = 1, max_args = 1;  // max_args -1: any number
  std::vector<AttrSpec> attrs;
  TypeRelation infer_type;
  OpPattern pattern = OpPattern::Opaque;
  ComputeFn compute;
  // The tag the compute gives the stage computing the (first) output: the key of the default
  // schedule template that schedules the op (schedule/templates/). relay_ir does not see the
  // templates; tests/driver/op_schedule_test.cc checks that every op's tag has one (or is one of
  // the few scheduled generically on purpose) and that a call's compute carries it.
  std::string schedule_tag;
  // Reverse-mode derivative; empty for ops that are not differentiable (yet).
  GradientFn gradient = nullptr;
  // The output is the input's bytes under another shape (reshape): run as a view, no kernel.
  bool is_view = false;
  // Dimensions of a call's arguments that must not be empty at run time, beyond what its types
  // say (Gather reads an element along its axis), each with the number of reads that need it (none:
  // an empty dimension is fine): a plan of symbolic sizes checks them at each call. Any other
  // relation of the sizes that a call must meet is such an expression that must be at least 1 (a
  // blocksize dividing a height: 1 - H % 2; a slice's end within its axis), `need` saying which.
  struct NonEmptyDim {
    tensor_ir::Expr dim, reads;
    // Why, after the call's name; empty: it reads an element along `dim`.
    std::string need;
  };
  std::function<std::vector<NonEmptyDim>(const CallNode& call)> nonempty_dims = nullptr;
};

class OpRegistry {
 public:
  // Every op of every family, registered on first use.
  static const OpRegistry& global();
  const OpDef* find(const std::string& name) const;
  const OpDef& get(const std::string& name) const;  // throws, suggesting close names
  std::vector<std::string> names() const;
  // Adds an op; a second op of the same name is an internal error.
  void add(OpDef def);

 private:
  std::unordered_map<std::string, std::unique_ptr<OpDef>> ops_;
};

}  // namespace tessera::relay_ir
