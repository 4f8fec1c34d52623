// The builtin steps of a program (runtime/program_plan.h), run on the host between stages: operators
// whose output size depends on the data (runtime/data_dependent_ops.h: Range's too), operators whose output
// shape values the data gives set (ONNX's reshape with its attr allowzero, squeeze and unsqueeze:
// views, at a target or axes given as the second input; slice: a copy, its starts, ends, axes and
// steps inputs as from opset 10; split: copies, its lengths the second input as from opset 13;
// expand: a copy, its target shape the second input),
// ONNX's Dropout given its ratio or training_mode by the data (checked: inference only),
// ONNX's sequence and optional operators, the array moves that loops and sequences need, and
// values_as_shape: integer values as the shape (values..., 0) of an empty tensor, for a stage
// built for every size that takes them as sizes.
#pragma once
#include <string>
#include <vector>

#include "runtime/program_plan.h"
#include "runtime/program_value.h"

namespace tessera::runtime {

// What values_as_shape throws for a value that cannot be a size (a negative pad): the build for
// every size cannot take it, where a build at that value may (driver/program_executor.h).
class ValueNotASize : public Error {
 public:
  using Error::Error;
};

// The outputs of builtin `step` (ProgramStep::builtin, its attrs) on `in` (an omitted optional
// input is ProgramValue::Kind::None); throws naming the step.
std::vector<ProgramValue> run_builtin(const ProgramStep& step, const std::vector<ProgramValue>& in);
// Whether run_builtin knows the builtin `name`.
bool is_builtin(const std::string& name);

// The entries [begin, end) of `x` along `axis`.
NDArray slice_along(const NDArray& x, int64_t axis, int64_t begin, int64_t end);
// Entry `i` of `x` along `axis`, that dimension dropped: a view of x's storage where the entry is
// contiguous there (every dimension before `axis` is 1), else a copy.
NDArray take(const NDArray& x, int64_t axis, int64_t i);
// `pieces` joined along `axis` (they must agree in dtype and every other dimension); `what` names
// them in errors.
NDArray concat(const std::vector<NDArray>& pieces, int64_t axis, const std::string& what);
// `pieces` (of one shape and dtype) stacked along a new dimension `axis`.
NDArray stack(const std::vector<NDArray>& pieces, int64_t axis, const std::string& what);

// `axis` in [-rank, rank) as a non-negative one; throws naming `what` otherwise.
int64_t normalized_axis(int64_t axis, int64_t rank, const std::string& what);
// The one element of `a` (a condition, a count, a position) as an integer.
int64_t single_value(const NDArray& a, const std::string& what);

}  // namespace tessera::runtime
