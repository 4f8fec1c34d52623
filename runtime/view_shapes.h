// The shapes of ONNX's operators that view their input at another shape (Reshape, Squeeze,
// Unsqueeze): for the importer (a target known when the model is built) and for the program's
// builtins (a target or axes the data gives while the model runs, runtime/program_builtins.h).
#pragma once
#include <cstdint>
#include <vector>

namespace tessera::runtime {

// The shape an input of shape `in` takes for Reshape's `target`: a 0 copies the input's dimension
// there (unless `allowzero`, where it is a 0), one -1 is inferred. Throws tessera::Error naming
// what is invalid: more than one -1, a dimension below -1, a 0 past the input's rank, 0 and -1
// together under allowzero, a -1 that cannot be inferred, or (`check_count`) element counts that
// differ.
std::vector<int64_t> reshape_target(const std::vector<int64_t>& in, std::vector<int64_t> target, bool allowzero,
                                    bool check_count = true);

// Squeeze: `in` without the dimensions `axes` (each in [-rank, rank), each of size 1).
std::vector<int64_t> squeezed_shape(const std::vector<int64_t>& in, const std::vector<int64_t>& axes);

// Unsqueeze: `in` with a dimension of size 1 at each of `axes` (positions in the result, each in
// [-rank, rank) of the result, none twice).
std::vector<int64_t> unsqueezed_shape(const std::vector<int64_t>& in, const std::vector<int64_t>& axes);

}  // namespace tessera::runtime
