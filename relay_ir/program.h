// A program: what a static graph cannot express. Graph-IR functions of static operators (stages)
// joined by branches chosen at run time, loops, and operators whose output size depends on the
// data (NonZero, Unique, ...). driver/program_executor.h runs it, as TVM's Relay VM runs its
// bytecode: a stage is specialized to the shapes of the values it is given (and, where the
// compiler needs them as constants, to their values), compiled as usual once per such signature,
// and reused; branches, loops and the data-dependent operators run between stages.
//
// Values are named. A body (a branch, a loop's iteration) sees its own inputs and, by name, every
// value of the programs around it, as ONNX subgraphs do.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "relay_ir/attrs.h"
#include "relay_ir/module.h"
#include "runtime/kernel.h"

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
};

struct Program;

// A program input's declared type: a tensor (its dtype and shape, a dimension possibly a
// variable), a sequence of tensors, or an optional value.
struct ProgramInputType {
  enum Kind { Tensor, Sequence, Optional } kind = Tensor;
  runtime::BufferSpec tensor;  // a Tensor's
};

struct ProgramStep {
  enum class Kind {
    Stage,        // `stage` computes the outputs from the inputs
    Builtin,      // `builtin` ("nonzero", "compress", "unique", "non_max_suppression"), ONNX's semantics
    If,           // inputs: the condition; bodies: then, else (no inputs of their own)
    Loop,         // ONNX Loop: inputs: trip count, condition, initial states; bodies: the iteration
    Scan,         // ONNX Scan: inputs: initial states then scanned inputs; bodies: the iteration; attrs
    SequenceMap,  // ONNX SequenceMap: inputs: sequences or tensors; bodies: the function of one element
  };
  Kind kind = Kind::Stage;
  std::string origin;                // what messages name: "Loop (node 'decode')"
  std::vector<std::string> inputs;   // "" for an omitted optional input
  std::vector<std::string> outputs;  // "" for an output nobody reads
  std::shared_ptr<const StageSource> stage;
  std::string builtin;  // also "identity", and ONNX's sequence and optional operators: "sequence_at", ...
  Attrs attrs;  // a builtin's and Scan's attributes, as ONNX names them
  std::vector<std::shared_ptr<const Program>> bodies;
};

// A program output's declared type: what a loop that runs no iteration, or a scan over nothing,
// gives its empty scan outputs.
struct ProgramOutputType {
  runtime::DataType dtype;
  std::optional<std::vector<int64_t>> shape;  // where every dimension is declared a number
};

struct Program {
  std::vector<std::string> inputs;  // given by the caller (a body: by its step), in order
  // The inputs' declared types (a model's; a body's are not declared): the executor checks the
  // values it is given against them.
  std::vector<ProgramInputType> input_types;
  std::vector<std::string> outputs;  // a body's: as ONNX orders a subgraph's outputs
  // The outputs' declared types (empty unless every output declares its element type).
  std::vector<ProgramOutputType> output_types;
  std::vector<ProgramStep> steps;  // in order of execution
  // Values its steps (not its stages, which hold their own) and outputs read: initializers.
  std::vector<std::pair<std::string, runtime::NDArray>> constants;
};

// The program as text, a line per step (its outputs, its kind, its inputs, where it came from),
// bodies indented under their steps: what `tessera inspect` prints for such a model.
std::string to_text(const Program& program);

}  // namespace tessera::relay_ir
