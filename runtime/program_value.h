// A value of a program (relay_ir/program.h) as the executor holds it: a tensor, a sequence of
// tensors (ONNX's sequence type), or the absent value of an optional (an optional that holds a
// value is that tensor or sequence).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "runtime/error.h"
#include "runtime/ndarray.h"

namespace tessera::runtime {

struct ProgramValue {
  enum class Kind { Tensor, Sequence, None };
  Kind kind = Kind::None;
  NDArray tensor;
  std::vector<NDArray> sequence;

  ProgramValue() = default;
  ProgramValue(NDArray t) : kind(Kind::Tensor), tensor(std::move(t)) {}  // NOLINT
  static ProgramValue of_sequence(std::vector<NDArray> elements) {
    ProgramValue v;
    v.kind = Kind::Sequence;
    v.sequence = std::move(elements);
    return v;
  }

  bool is_tensor() const { return kind == Kind::Tensor; }
  bool is_sequence() const { return kind == Kind::Sequence; }
  bool is_none() const { return kind == Kind::None; }
  // "a tensor float32(2, 3)", "a sequence of 4 tensors", "no value": for messages.
  std::string describe() const {
    if (is_tensor()) return "a tensor " + tensor.dtype().str() + tensor.shape_str();
    if (is_sequence()) return "a sequence of " + std::to_string(sequence.size()) + " tensors";
    return "no value (an empty optional)";
  }
  // The tensor, or an error saying that `what` needs one.
  const NDArray& as_tensor(const std::string& what) const {
    if (!is_tensor()) fail(what, " must be a tensor, got ", describe());
    return tensor;
  }
  const std::vector<NDArray>& as_sequence(const std::string& what) const {
    if (!is_sequence()) fail(what, " must be a sequence, got ", describe());
    return sequence;
  }
};

}  // namespace tessera::runtime
