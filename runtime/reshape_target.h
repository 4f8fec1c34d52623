// ONNX Reshape's target shape, for the importer (a target known when the model is built) and for
// the program builtin "reshape" (a target the data gives while the model runs).
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

}  // namespace tessera::runtime
