// A program: what one graph plan cannot express. Stages (graph plans, or graphs the compiler
// builds for every size or at the shapes they meet) joined by branches chosen at run time, loops, and operators whose
// output size depends on the data (NonZero, Unique, ...). runtime/program_runner.h runs it, as
// TVM's Relay VM runs its bytecode: branches, loops and the data-dependent operators run on the
// host between stages, and whoever holds the stages runs them.
//
// Values are named. A body (a branch, a loop's iteration) sees its own inputs and, by name, every
// value of the programs around it, as ONNX subgraphs do.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/kernel.h"
#include "runtime/ndarray.h"

namespace tessera::runtime {

// A builtin's or a Scan's attributes, as ONNX names them: integers and integer lists.
class StepAttrs {
 public:
  bool has(const std::string& name) const;
  int64_t get_int(const std::string& name) const;  // throws naming the attribute
  const std::vector<int64_t>& get_ints(const std::string& name) const;
  void set(const std::string& name, int64_t value) { set(name, std::vector<int64_t>{value}, true); }
  void set(const std::string& name, std::vector<int64_t> values, bool scalar = false);
  // An element type, held as {type code, bits}; get_dtype throws naming a malformed one.
  DataType get_dtype(const std::string& name) const;
  void set_dtype(const std::string& name, DataType dtype) { set(name, {static_cast<int64_t>(dtype.code), dtype.bits}); }

  struct Item {
    std::string name;
    std::vector<int64_t> values;
    bool scalar = false;  // set as one integer
  };
  const std::vector<Item>& items() const { return items_; }

 private:
  std::vector<Item> items_;
};

struct ProgramPlan;

// A program input's declared type: a tensor (its dtype and shape, a dimension possibly a
// variable), a sequence of tensors, or an optional value.
struct ProgramInputType {
  enum Kind { Tensor, Sequence, Optional } kind = Tensor;
  BufferSpec tensor;  // a Tensor's; a Sequence's elements', as far as the flags say it is declared
  bool element_dtype = false, element_shape = false;
};

struct ProgramStep {
  enum class Kind {
    Stage,        // stage `stage` computes the outputs from the inputs
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
  int stage = -1;                    // a Stage's index among the whole program's stages
  std::string
      builtin;  // also "identity", "values_as_shape", ONNX's sequence and optional operators: "sequence_at", ...
  StepAttrs attrs;                   // a builtin's and Scan's attributes
  std::vector<std::shared_ptr<const ProgramPlan>> bodies;
};

// A program output's declared type: what a loop that runs no iteration, or a scan over nothing,
// gives its empty scan outputs.
struct ProgramOutputType {
  DataType dtype;
  std::optional<std::vector<int64_t>> shape;  // where every dimension is declared a number
};

struct ProgramPlan {
  std::vector<std::string> inputs;  // given by the caller (a body: by its step), in order
  // The inputs' declared types (a model's; a body's are not declared): the runner checks the
  // values it is given against them.
  std::vector<ProgramInputType> input_types;
  std::vector<std::string> outputs;  // a body's: as ONNX orders a subgraph's outputs
  // The outputs' declared types (empty unless every output declares its element type).
  std::vector<ProgramOutputType> output_types;
  std::vector<ProgramStep> steps;  // in order of execution
  // Values its steps (not its stages, which hold their own) and outputs read: initializers.
  std::vector<std::pair<std::string, NDArray>> constants;
};

// The program as text, a line per step (its outputs, its kind, its inputs, where it came from),
// bodies indented under their steps: what `tessera inspect` prints for such a model.
std::string to_text(const ProgramPlan& program);

// The number of stages the program and its bodies name (the largest index plus one).
int count_stages(const ProgramPlan& program);

}  // namespace tessera::runtime
