// Recurrent operators (RNN, GRU, LSTM) over a sequence of symbolic length. Their converters
// unroll over a constant length (ops_extra_rnn.cc); over a symbolic one they throw
// SymbolicRecurrence, and a model loaded for every size runs each such node as a program's Scan
// (frontend/onnx/program.h) whose body is the same operator over a sequence of one step: one build
// for every length, the state carried between steps by the program runner.
#pragma once
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "relay_ir/type.h"
#include "runtime/error.h"

namespace tessera::frontend::onnx {

// The attribute by which a Scan's step tells its recurrent node that X holds one step's input
// projections X W^T of every direction ([D, B, G * H], the reverse direction's of its own step),
// computed before the Scan as one matrix product per direction, so the node applies only the
// recurrence (Tessera's own, set by recurrences_as_scans only).
inline constexpr const char* kProjectedInput = "tessera.projected_input";

// What a recurrent node's converter throws when its sequence length is symbolic, with what the
// rewrite into a Scan needs to know of it.
class SymbolicRecurrence : public Error {
 public:
  // The activation functions of one direction and the alpha and beta values each takes (the
  // node's own or the defaults), in the order the operator consumes them.
  struct Direction {
    std::vector<std::string> activations;
    std::vector<float> alpha, beta;
  };
  using Error::Error;
  std::string output;                        // the node's first output, which identifies it
  int elem_type = 0;                         // X's ONNX element type
  int64_t hidden = 0;                        // hidden_size
  std::vector<Direction> directions;         // forward, then reverse when bidirectional
  std::vector<relay_ir::Type> output_types;  // Y, Y_h (and Y_c)
};

// `model` (whose external data `base_dir` holds) with each recurrent node of its main graph
// described in `nodes` replaced by Scans over the sequence and the layout changes around them:
// one Scan for both directions of a bidirectional node whose directions apply the same
// activations, with W a constant, from opset 10 (each step one batched product of both
// directions' states); else one per direction. Needs opset 9 (Scan without a batch axis) and, for
// a reverse direction with sequence_lens, 10 (ReverseSequence): a node of an older model is left
// as it is (built per length).
::onnx::ModelProto recurrences_as_scans(const ::onnx::ModelProto& model, const std::vector<SymbolicRecurrence>& nodes,
                                        const std::string& base_dir);

}  // namespace tessera::frontend::onnx
