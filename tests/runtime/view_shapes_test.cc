// ONNX Reshape's target shape (runtime/view_shapes.h): ONNX's examples (0 copies, -1 infers,
// allowzero), empty inputs, and the errors of targets that do not fit.
#include "runtime/view_shapes.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "error_of.h"

namespace tessera::runtime {
namespace {

using Shape = std::vector<int64_t>;

using testing::error_of;

std::string error_of(const Shape& in, const Shape& target, bool allowzero = false) {
  return error_of([&] { reshape_target(in, target, allowzero); });
}

TEST(ReshapeTarget, CopiesZerosAndInfersMinusOne) {
  EXPECT_EQ(reshape_target({2, 3, 4}, {4, 2, 3}, false), (Shape{4, 2, 3}));
  EXPECT_EQ(reshape_target({2, 3, 4}, {2, 0, 4, 1}, false), (Shape{2, 3, 4, 1}));  // test_reshape_zero_dim
  EXPECT_EQ(reshape_target({2, 3, 4}, {2, 0, 1, -1}, false), (Shape{2, 3, 1, 4}));
  EXPECT_EQ(reshape_target({2, 3, 4}, {-1, 2, 3, 4}, false), (Shape{1, 2, 3, 4}));
  EXPECT_EQ(reshape_target({0, 3, 4}, {3, 4, 0}, true), (Shape{3, 4, 0}));  // test_reshape_allowzero_reordered
  EXPECT_EQ(reshape_target({0, 3}, {0, 3}, false), (Shape{0, 3}));          // 0 copies the input's 0
  EXPECT_EQ(reshape_target({}, {1, -1}, false), (Shape{1, 1}));             // a scalar
}

TEST(ReshapeTarget, NamesWhatDoesNotFit) {
  EXPECT_EQ(error_of({2, 6}, {5, 5}), "cannot reshape (2, 6) (12 elements) to (5, 5) (25)");
  EXPECT_EQ(error_of({2, 6}, {-1, -1}), "the shape (-1, -1) has more than one -1");
  EXPECT_EQ(error_of({2, 6}, {-2, 6}), "the shape (-2, 6) has the invalid dimension -2");
  EXPECT_EQ(error_of({2, 6}, {5, -1}), "cannot infer the -1 of shape (5, -1) for an input of shape (2, 6)");
  // Any size fits a -1 beside a 0, as numpy says too.
  EXPECT_EQ(error_of({0, 3}, {0, -1}), "cannot infer the -1 of shape (0, -1) for an input of shape (0, 3)");
  EXPECT_EQ(error_of({0, 6}, {0, -1}, true), "with allowzero=1 the shape cannot hold both 0 and -1");
  EXPECT_EQ(error_of({12}, {3, 0}), "shape entry 1 is 0 (copy the input dimension), but the input has rank 1");
  EXPECT_EQ(error_of({1ll << 40, 1ll << 30}, {-1}),
            "the input shape (1099511627776, 1073741824) has more elements "
            "than 64 bits count");
}

TEST(SqueezedShape, DropsTheAxesOfSizeOne) {
  EXPECT_EQ(squeezed_shape({1, 3, 1, 5}, {0}), (Shape{3, 1, 5}));
  EXPECT_EQ(squeezed_shape({1, 3, 1, 5}, {-2, 0}), (Shape{3, 5}));
  EXPECT_EQ(squeezed_shape({1, 0, 1}, {2}), (Shape{1, 0}));
  EXPECT_EQ(squeezed_shape({3}, {}), (Shape{3}));
  EXPECT_EQ(error_of([] { squeezed_shape({1, 3}, {1}); }), "cannot squeeze axis 1 of (1, 3): its size is 3, not 1");
  EXPECT_EQ(error_of([] { squeezed_shape({1, 3}, {2}); }), "axis 2 is out of range for rank 2");
  EXPECT_EQ(error_of([] { squeezed_shape({1, 3}, {0, -2}); }), "the axes (0, 0) name an axis twice");
}

TEST(UnsqueezedShape, InsertsOnesAtTheResultsAxes) {
  EXPECT_EQ(unsqueezed_shape({3, 4, 5}, {0}), (Shape{1, 3, 4, 5}));
  EXPECT_EQ(unsqueezed_shape({3, 4, 5}, {5, 4, 2}), (Shape{3, 4, 1, 5, 1, 1}));  // test_unsqueeze_unsorted_axes
  EXPECT_EQ(unsqueezed_shape({3, 4, 5}, {-2}), (Shape{3, 4, 1, 5}));
  EXPECT_EQ(unsqueezed_shape({}, {0, 1}), (Shape{1, 1}));
  EXPECT_EQ(unsqueezed_shape({0}, {1}), (Shape{0, 1}));
  EXPECT_EQ(error_of([] { unsqueezed_shape({3}, {2}); }), "axis 2 is out of range for rank 2");
  EXPECT_EQ(error_of([] { unsqueezed_shape({3}, {1, -2}); }), "the axes (1, 1) name an axis twice");
}

}  // namespace
}  // namespace tessera::runtime
