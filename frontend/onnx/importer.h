// ONNX import: a model file becomes a graph-IR module. Symbolic input dimensions are fixed by
// `shapes` (model_inputs tells which there are: a build per size serves a dynamic model,
// driver/shape_specialized_build.h), or kept as dimension variables (`symbolic`), and inputs that set shapes or indices
// (Reshape's shape, Slice's starts, TopK's k, ...) can be bound to values with `bind`. Node
// outputs computed from known values only are folded into constants as they are imported, by
// an evaluator the caller supplies (the frontend runs nothing itself). Models with unsupported
// operators fail before anything is built, with one error listing every one of them.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "relay_ir/module.h"
#include "runtime/error.h"
#include "runtime/kernel.h"
#include "runtime/shape_expr.h"
#include "tensor_ir/dimension_must_equal.h"

namespace tessera::frontend::onnx {

// Evaluates a closed expression (no free variables) to its value(s): one array per tensor of
// its type, tuples flattened.
using ConstantEvaluator = std::function<std::vector<runtime::NDArray>(const relay_ir::Expr&)>;

struct ImportOptions {
  std::map<std::string, std::vector<int64_t>> shapes;  // input name -> static shape
  std::map<std::string, runtime::NDArray> bind;        // input name -> value, imported as a constant
  ConstantEvaluator evaluate;                          // none: nothing is folded
  // Initializers that become graph inputs instead of constants (the weights to train when
  // fine-tuning), in this order after the model's own inputs.
  std::vector<std::string> initializers_as_inputs;
  // Import the symbolic input dimensions that `shapes` does not fix as dimension variables
  // (relay_ir/shape.h) instead of refusing them: one module for every size, as far as the
  // operators it reaches type symbolic shapes (one that needs a constant throws naming itself).
  bool symbolic = false;
  // Dimension variables declared as an operator needs them (tensor_ir/dimension_must_equal.h), in
  // every input dimension of that name, and checked at each call: another variable (same_dims: a
  // broadcast of [N] against [M]), or an expression (declared_dims): a value (a convolution's
  // channels), a multiple of a constant (H of factor 2 as multiple_dim_var("H", 2) times 2: a
  // reshape that splits it), an expression of other variables (a mask of S positions broadcast
  // against P + L keys).
  std::map<std::string, std::string> same_dims;
  std::map<std::string, runtime::ShapeExpr> declared_dims;
  // Records `r`; false where its variable is declared already (or would be its own alias).
  bool declare(const tensor_ir::DimensionRequirement& r);
};

// "H_div2": the variable of a dimension H declared a multiple of 2 (ImportOptions::declared_dims).
inline std::string multiple_dim_var(const std::string& var, int64_t factor) {
  return var + "_div" + std::to_string(factor);
}

// Thrown when values the compiler needs at compile time come from graph inputs: `inputs`
// names them, so a caller can bind them and import again.
class BindingRequired : public Error {
 public:
  // `need`: what needs a value, "Reshape (node 'r', opset 17): the target shape (input 's') must
  // be known at compile time"; the message adds which inputs to bind.
  BindingRequired(std::string need, std::vector<std::string> inputs)
      : Error(need + "; bind graph input(s) " + quoted(inputs) + " to values (bind={name: array})"),
        need(std::move(need)),
        inputs(std::move(inputs)) {}
  std::string need;
  std::vector<std::string> inputs;

 private:
  static std::string quoted(const std::vector<std::string>& names) {
    std::string s;
    for (const auto& n : names) s += (s.empty() ? "'" : ", '") + n + "'";
    return s;
  }
};

relay_ir::Module import_model(const std::string& path, const ImportOptions& options);
// `base_dir` is where external data files may be read from (nothing outside it).
relay_ir::Module import_model_bytes(const std::string& bytes, const std::string& base_dir,
                                    const ImportOptions& options);

// The graph inputs a caller gives (neither initializers nor bound), as the model declares them: a
// dimension the model names (dim_param) or leaves unnamed is a variable, unless `shapes` fixes the
// input. Checks the model's operators as import_model does (one error naming every unsupported one).
std::vector<runtime::BufferSpec> model_inputs(const std::string& path, const ImportOptions& options);

// Every ONNX operator the importer converts (domain "" is ai.onnx), for documentation and the
// conformance runner.
std::vector<std::string> supported_operators();

}  // namespace tessera::frontend::onnx
