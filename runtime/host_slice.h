// ONNX's Slice and Expand run on the host, for a program whose starts, ends, axes or steps, or
// whose target shape, the data gives (the program builtins "slice" and "expand",
// runtime/program_builtins.h): the stages around them are then built for every shape instead of
// once for each value met.
#pragma once
#include <cstdint>
#include <vector>

#include "runtime/ndarray.h"

namespace tessera::runtime {

// One axis's part of a slice: `count` entries from `start`, `step` apart.
struct SliceRange {
  int64_t start = 0, step = 1, count = 0;
};

// The entries of a dimension of size `dim` that Slice takes from `start` to `end` (exclusive) by
// `step` (nonzero): negative positions count from the end, and positions past either end clamp
// to it (ONNX's rules; so INT64_MAX or INT64_MIN as an end means "to the end").
SliceRange slice_range(int64_t dim, int64_t start, int64_t end, int64_t step);

// Slice of `x` (a host array) by `starts`, `ends`, and optionally `axes` (each once, in [-rank,
// rank); none: 0, 1, ...) and `steps` (none: 1s), as ONNX (10+) gives them. Throws naming what
// does not fit: lists of different lengths, an axis out of range or given twice, a step of 0.
NDArray host_slice(const NDArray& x, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                   const std::vector<int64_t>& axes, const std::vector<int64_t>& steps);

// Expand of `x` (a host array) to `target`: the two shapes broadcast both ways, as numpy's (ONNX's
// rule), and each dimension of 1 of x repeats. Throws naming both shapes where a pair of
// dimensions differs and neither is 1.
NDArray host_expand(const NDArray& x, const std::vector<int64_t>& target);

}  // namespace tessera::runtime
