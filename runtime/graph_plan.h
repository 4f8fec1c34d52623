// What a compiled graph runs, as plain data the runtime needs no compiler to follow: its
// tensors (inputs, outputs, constants, intermediates in slots of one memory arena), and the
// steps that call kernels on them. The driver makes it; exported modules store it (module_metadata.h).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "runtime/ndarray.h"
#include "runtime/shape_expr.h"

namespace tessera::runtime {

struct GraphPlan {
  struct TensorInfo {
    enum Kind { Input, Output, Constant, Intermediate } kind;
    std::string name;
    std::vector<int64_t> shape;
    DataType dtype;
    int index = -1;  // Input/Output: position; Constant: into constants; Intermediate: arena slot
    // Another tensor whose bytes this one is (a reshape is a view, not a copy); -1: none.
    int alias_of = -1;
  };
  struct Step {
    std::string kernel;     // empty: copy args[0] into args[1]
    std::vector<int> args;  // tensor ids, in the kernel's argument order
    // Each output element reads only the same element of same-shaped inputs, so an output may
    // take the storage of such an input that is dead afterwards.
    bool elementwise = false;
  };
  std::vector<TensorInfo> tensors;
  std::vector<Step> steps;
  std::vector<int> inputs, outputs;  // tensor ids, in the graph's order
  std::vector<NDArray> constants;
  std::vector<int64_t> slot_offsets;  // byte offset of each arena slot (64-byte aligned)
  int64_t arena_bytes = 0;

  // A plan of symbolic sizes (a model built once for every size) names its dimension variables;
  // each tensor's shape and each slot's size are then expressions of them, and the fields above
  // (tensors' shapes, slot_offsets, arena_bytes) hold their values at the sizes bound last:
  // GraphExecutor evaluates them for each new size. Empty for a static plan.
  std::vector<std::string> shape_vars;
  std::vector<SymbolicShape> symbolic_shapes;  // one per tensor
  std::vector<ShapeExpr> slot_bytes;           // one per slot, multiples of 64
  // Dimensions that must be at least 1 at each call, with what needs them (an operator that reads
  // an element along a dimension of symbolic size, as Gather does): a call at sizes that make one
  // 0 is an error naming it, before any kernel runs.
  // A dimension that must not be 0 where `reads` (the reads along it) is not 0.
  struct NonEmpty {
    ShapeExpr dim;
    std::string what;
    ShapeExpr reads = 1;
  };
  std::vector<NonEmpty> nonempty;
  bool is_symbolic() const { return !shape_vars.empty(); }
};

// Checks that `hot`, a plan of static sizes, takes and gives what `plan`, of symbolic sizes, does
// at those sizes, and returns plan's variables' values there; throws naming what differs.
std::map<std::string, int64_t> hot_sizes_of(const GraphPlan& plan, const GraphPlan& hot);
// Checks that inputs of `shapes` fit `plan`: every relation its input shapes declare between the
// dimension variables holds (a dimension taken as another, as a multiple); throws naming the
// input and dimension that does not.
void check_input_shapes(const GraphPlan& plan, const std::vector<std::vector<int64_t>>& shapes);
// Whether check_input_shapes passes.
bool takes_shapes(const GraphPlan& plan, const std::vector<std::vector<int64_t>>& shapes);
// Whether inputs of `shapes` fit inputs of the symbolic shapes `expected` (bind_shape_vars).
bool takes_shapes(const std::vector<SymbolicShape>& expected, const std::vector<std::vector<int64_t>>& shapes);
// The symbolic shapes of `plan`'s inputs, in order.
std::vector<SymbolicShape> input_shapes(const GraphPlan& plan);
// "N = 1, L = 128": `values` of plan's variables, in its order.
std::string sizes_str(const GraphPlan& plan, const std::map<std::string, int64_t>& values);

}  // namespace tessera::runtime
