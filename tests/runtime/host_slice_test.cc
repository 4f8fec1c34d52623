// ONNX's Slice on the host (runtime/host_slice.h): the clamping of starts and ends (ONNX's
// test_slice_* cases), negative steps down to the first entry, the extremes of int64 as ends,
// empty results, and what bad bounds are told.
#include "runtime/host_slice.h"

#include <gtest/gtest.h>

#include <limits>
#include <numeric>
#include <vector>

#include "error_of.h"

namespace tessera::runtime {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();

std::vector<int64_t> range_of(int64_t dim, int64_t start, int64_t end, int64_t step) {
  const SliceRange r = slice_range(dim, start, end, step);
  return {r.start, r.step, r.count};
}

TEST(SliceRange, ClampsAsONNXSays) {
  EXPECT_EQ(range_of(10, 0, 3, 1), (std::vector<int64_t>{0, 1, 3}));
  EXPECT_EQ(range_of(10, -3, kMax, 1), (std::vector<int64_t>{7, 1, 3}));
  EXPECT_EQ(range_of(10, 1, 1000, 1), (std::vector<int64_t>{1, 1, 9}));      // test_slice_end_out_of_bounds
  EXPECT_EQ(range_of(10, 1000, 1000, 1), (std::vector<int64_t>{10, 1, 0}));  // test_slice_start_out_of_bounds
  EXPECT_EQ(range_of(10, 0, 10, 3), (std::vector<int64_t>{0, 3, 4}));
  EXPECT_EQ(range_of(10, -1, kMin, -1), (std::vector<int64_t>{9, -1, 10}));  // the whole axis backwards
  EXPECT_EQ(range_of(10, 20, -100, -3), (std::vector<int64_t>{9, -3, 4}));
  EXPECT_EQ(range_of(10, 5, 5, -1), (std::vector<int64_t>{5, -1, 0}));
  EXPECT_EQ(range_of(0, 0, kMax, 1), (std::vector<int64_t>{0, 1, 0}));
  EXPECT_THROW(slice_range(10, 0, 1, 0), Error);
}

TEST(HostSlice, CopiesTheSelectedEntries) {
  NDArray x = NDArray::empty({3, 4}, kInt32);
  std::iota(x.data_as<int32_t>(), x.data_as<int32_t>() + 12, 0);
  NDArray y = host_slice(x, {2, 3}, {0, kMin}, {}, {-1, -2});  // x[2:0:-1, 3::-2]
  ASSERT_EQ(y.shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(std::vector<int32_t>(y.data_as<int32_t>(), y.data_as<int32_t>() + 4), (std::vector<int32_t>{11, 9, 7, 5}));
  NDArray rows = host_slice(x, {1}, {kMax}, {-2}, {});
  EXPECT_EQ(rows.shape(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(rows.data_as<int32_t>()[0], 4);
  EXPECT_EQ(host_slice(x, {3}, {3}, {1}, {}).shape(), (std::vector<int64_t>{3, 0}));
}

TEST(HostSlice, NamesBadBounds) {
  using testing::error_of;
  NDArray x = NDArray::empty({3, 4}, kFloat32);
  EXPECT_EQ(error_of([&] {
              host_slice(x, {0}, {1, 2}, {}, {});
            }),
            "starts, ends, axes and steps must have one length, got 1, 2, 0 and 0");
  EXPECT_EQ(error_of([&] { host_slice(x, {0}, {1}, {2}, {}); }), "axis 2 is out of range for rank 2");
  EXPECT_EQ(error_of([&] { host_slice(x, {0, 0}, {1, 1}, {0, -2}, {}); }), "axis 0 is sliced twice");
  EXPECT_EQ(error_of([&] { host_slice(x, {0}, {1}, {}, {0}); }), "the step of axis 0 is 0");
}

}  // namespace
}  // namespace tessera::runtime
