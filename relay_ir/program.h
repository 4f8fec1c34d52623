// A program (runtime/program_plan.h) whose stages are graph-IR functions of static operators,
// imported by a frontend at the shapes the executor meets (driver/program_executor.h): a stage is
// specialized to the shapes of the values it is given (and, where the compiler needs them as
// constants, to their values), compiled as usual once per such signature, and reused.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "relay_ir/module.h"
#include "runtime/error.h"
#include "runtime/program_plan.h"

namespace tessera::relay_ir {

// The graph of a stage at given input values.
struct StageSpecialization {
  Module module;  // its parameters: the inputs not in `bound`, in order; its outputs: the stage's
  // Inputs imported as constants (the compiler needed their values): a use of this specialization
  // must be given equal values for them.
  std::vector<bool> bound;
};

// Where a stage's graph comes from (a frontend's subgraph, imported at the values' shapes).
class StageSource {
 public:
  virtual ~StageSource() = default;
  // The stage for `inputs` (one per stage input, in order), importing at least the inputs marked
  // in `bound` as constants, and more when the compiler needs them.
  virtual StageSpecialization specialize(const std::vector<runtime::NDArray>& inputs,
                                         const std::vector<bool>& bound) const = 0;
  // The stage for inputs of any size that fits `inputs` (dtypes and shapes, a dimension possibly a
  // variable), with no input bound: what a module that runs at any size holds. The inputs listed
  // in `by_shape` (integer tensors of static shape) it takes instead as shapes that hold their
  // values (values_as_shape in runtime/program_builtins.h), so that the operators that need them
  // (a pad, a count, a shape) get them as dimension variables. Where `values` (one per input, or
  // empty) knows such an input's values as constants or dimension variables of the other inputs
  // (an earlier stage computed it from the sizes), it takes them as those. Throws ValuesRequired
  // where operators need the values of inputs not in `by_shape`, naming the operator otherwise.
  virtual Module specialize_symbolic(const std::vector<runtime::BufferSpec>& inputs,
                                     const std::vector<size_t>& by_shape = {},
                                     const std::vector<std::optional<runtime::SymbolicShape>>& values = {}) const = 0;
};

// What specialize_symbolic throws where operators need the values of stage inputs.
struct ValuesRequired : Error {
  ValuesRequired(const std::string& what, std::vector<size_t> inputs) : Error(what), inputs(std::move(inputs)) {}
  std::vector<size_t> inputs;  // stage input indices
};

// A program (runtime/program_plan.h) and where its stages come from: step.stage indexes
// `stages`.
struct Program {
  std::shared_ptr<const runtime::ProgramPlan> plan;
  std::vector<std::shared_ptr<const StageSource>> stages;
};

}  // namespace tessera::relay_ir
