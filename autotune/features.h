// Features of a lowered kernel for the cost model (in the manner of Ansor's): one fixed-length
// vector per schedule candidate, read off the loop nest the code generator will see. Per store
// statement: arithmetic by kind scaled by trip counts, vector lanes, unrolled/parallel/serial
// iterations, loop depth and extents; per buffer it touches: bytes touched at several loop
// levels, innermost stride (invariant, contiguous, strided, gather), reuse (count, distance in
// iterations and bytes), whether it is written. The vector holds a global block, then the two
// statements doing the most arithmetic, each with its four largest buffers. Counts are
// log2(1 + x) scaled. For GPU kernels, block and thread axes count as parallel loops, and the
// vector adds blocks and threads per launch, shared memory per block, the share of global-memory
// bytes neighbouring threads access coalesced, and per buffer its stride between neighbouring
// threads and whether it is shared memory (Ansor's GPU features, in short). Extraction is deterministic and takes microseconds.
#pragma once
#include <string>
#include <vector>

#include "tensor_ir/stmt.h"

namespace tessera::autotune {

// Length of every feature vector.
size_t feature_count();
// A short name per feature ("s0.float_mul", "s0.b1.reuse_count"), for tests and debugging.
const std::vector<std::string>& feature_names();

std::vector<float> extract_features(const tensor_ir::LoweredFunc& func);

}  // namespace tessera::autotune
