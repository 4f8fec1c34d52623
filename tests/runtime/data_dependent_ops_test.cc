// The host-side ONNX operators whose output size depends on the input's values
// (runtime/data_dependent_ops.h), against ONNX's examples and node tests and numpy's answers:
// edge shapes, ties, NaNs, integers that doubles cannot tell apart, and the errors bad input gets.
#include "runtime/data_dependent_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "runtime/error.h"
#include "runtime/half.h"

namespace tessera::runtime {
namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const DataType kInt4 = DataType::Int(4), kUInt64 = DataType::UInt(64), kInt8 = DataType::Int(8);

template <typename T>
NDArray array(std::vector<int64_t> shape, const std::vector<T>& values, DataType dtype) {
  NDArray a = NDArray::empty(std::move(shape), dtype);
  EXPECT_EQ(a.nbytes(), values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(a.data(), values.data(), a.nbytes());
  return a;
}
NDArray floats(std::vector<int64_t> shape, const std::vector<float>& values) { return array(shape, values, kFloat32); }
NDArray int64s(std::vector<int64_t> shape, const std::vector<int64_t>& values) { return array(shape, values, kInt64); }
NDArray bools(const std::vector<uint8_t>& values) { return array({int64_t(values.size())}, values, kBool); }

template <typename T>
std::vector<T> values(const NDArray& a) {
  EXPECT_EQ(a.dtype().element_bytes(), static_cast<int>(sizeof(T)));
  std::vector<T> v(a.numel());
  if (!v.empty()) std::memcpy(v.data(), a.data(), a.nbytes());
  return v;
}

using Shape = std::vector<int64_t>;
using I64 = std::vector<int64_t>;

// An int64 result's shape and elements.
void expect_int64(const NDArray& a, const Shape& shape, const I64& expected) {
  EXPECT_EQ(a.dtype(), kInt64);
  EXPECT_EQ(a.shape(), shape);
  EXPECT_EQ(values<int64_t>(a), expected);
}

// Unique's four outputs (Y as T).
template <typename T>
void expect_unique(const std::vector<NDArray>& out, DataType dtype, const Shape& y_shape, const std::vector<T>& y,
                   const I64& indices, const I64& inverse, const I64& counts) {
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].dtype(), dtype);
  EXPECT_EQ(out[0].shape(), y_shape);
  EXPECT_EQ(values<T>(out[0]), y);
  expect_int64(out[1], {int64_t(indices.size())}, indices);
  expect_int64(out[2], {int64_t(inverse.size())}, inverse);
  expect_int64(out[3], {int64_t(counts.size())}, counts);
}

// The message of the Error `f` throws ("" if it throws none).
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
#define EXPECT_FAILS(call, text) \
  EXPECT_NE(error_of([&] { call; }).find(text), std::string::npos) << error_of([&] { call; })

// A CPU array's bytes presented as living on a CUDA device (nothing touches the device).
NDArray on_cuda(const NDArray& a) {
  return NDArray::view(a.device_data(), a.shape(), a.dtype(), nullptr, {DeviceType::CUDA, 0});
}

// ---- NonZero ----

TEST(NonZero, TwoDimensionalInRowMajorOrder) {
  // -0.0 is zero, NaN is not.
  expect_int64(nonzero(floats({2, 3}, {0, 2, 0, kNaN, 0, -0.0f})), {2, 2}, {0, 1, 1, 0});
  // ONNX's node test: [[1, 0], [1, 1]] as bool.
  expect_int64(nonzero(array<uint8_t>({2, 2}, {1, 0, 1, 1}, kBool)), {2, 3}, {0, 1, 1, 0, 0, 1});
  expect_int64(nonzero(int64s({2, 1, 2}, {0, int64_t(1) << 62, -1, 0})), {3, 2}, {0, 1, 0, 0, 1, 0});
}

TEST(NonZero, ScalarGivesNoCoordinateRows) {
  expect_int64(nonzero(floats({}, {5})), {0, 1}, {});
  expect_int64(nonzero(floats({}, {0})), {0, 0}, {});
}

TEST(NonZero, EmptyAndAllZero) {
  expect_int64(nonzero(floats({0, 3}, {})), {2, 0}, {});
  expect_int64(nonzero(int64s({2, 2}, {0, 0, 0, 0})), {2, 0}, {});
  // A narrow integer is nonzero by its 4 bits.
  expect_int64(nonzero(array<uint8_t>({3}, {0x0, 0x8, 0xF}, kInt4)), {1, 2}, {1, 2});
}

TEST(NonZero, RefusesAnArrayNotOnTheCPU) {
  EXPECT_FAILS(nonzero(on_cuda(floats({2}, {1, 0}))), "NonZero: X is on cuda(0)");
}

// ---- Compress ----

const std::vector<float> k3x2 = {1, 2, 3, 4, 5, 6};

TEST(Compress, FlattensWithoutAxis) {
  // ONNX's compress_default_axis: [F, T, F, F, T] over [[1, 2], [3, 4], [5, 6]].
  const NDArray y = compress(floats({3, 2}, k3x2), bools({0, 1, 0, 0, 1}), std::nullopt);
  EXPECT_EQ(y.shape(), Shape{2});
  EXPECT_EQ(values<float>(y), (std::vector<float>{2, 5}));
  // A scalar flattens to one element.
  EXPECT_EQ(values<float>(compress(floats({}, {7}), bools({1}), std::nullopt)), std::vector<float>{7});
}

TEST(Compress, AlongAnAxisAndFromTheBack) {
  // ONNX's compress_0, compress_1 and compress_negative_axis.
  NDArray y = compress(floats({3, 2}, k3x2), bools({0, 1, 1}), 0);
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  EXPECT_EQ(values<float>(y), (std::vector<float>{3, 4, 5, 6}));
  y = compress(floats({3, 2}, k3x2), bools({0, 1}), 1);
  EXPECT_EQ(y.shape(), (Shape{3, 1}));
  EXPECT_EQ(values<float>(y), (std::vector<float>{2, 4, 6}));
  y = compress(floats({3, 2}, k3x2), bools({0, 1}), -1);
  EXPECT_EQ(y.shape(), (Shape{3, 1}));
  EXPECT_EQ(values<float>(y), (std::vector<float>{2, 4, 6}));
  // The middle axis of [2, 3, 2].
  y = compress(int64s({2, 3, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}), bools({1, 0, 1}), -2);
  EXPECT_EQ(y.shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(values<int64_t>(y), (I64{0, 1, 4, 5, 6, 7, 10, 11}));
}

TEST(Compress, ShortConditionDropsTheRestAndLongOneMayOnlyBeFalsePastTheEnd) {
  NDArray y = compress(floats({3, 2}, k3x2), bools({1}), 0);
  EXPECT_EQ(y.shape(), (Shape{1, 2}));
  EXPECT_EQ(values<float>(y), (std::vector<float>{1, 2}));
  y = compress(floats({3, 2}, k3x2), bools({0, 1}), std::nullopt);
  EXPECT_EQ(values<float>(y), std::vector<float>{2});
  y = compress(floats({3, 2}, k3x2), bools({1, 0, 0, 0}), 1);
  EXPECT_EQ(values<float>(y), (std::vector<float>{1, 3, 5}));
  EXPECT_FAILS(compress(floats({3, 2}, k3x2), bools({1, 0, 0, 1}), 1),
               "Compress: condition is true at index 3, past the input's 2 slices along axis 1");
  EXPECT_FAILS(compress(floats({3, 2}, k3x2), bools({0, 0, 0, 0, 0, 0, 1}), std::nullopt),
               "past the input's 6 elements");
}

TEST(Compress, NumericConditionAndEmptyResults) {
  // A numeric condition: nonzero (NaN included) is true.
  NDArray y = compress(floats({3, 2}, k3x2), floats({3}, {kNaN, 0, -2.5f}), 0);
  EXPECT_EQ(values<float>(y), (std::vector<float>{1, 2, 5, 6}));
  y = compress(floats({3, 2}, k3x2), bools({0, 0, 0}), 0);
  EXPECT_EQ(y.shape(), (Shape{0, 2}));
  y = compress(floats({3, 0}, {}), bools({1, 0, 1}), 0);
  EXPECT_EQ(y.shape(), (Shape{2, 0}));
  y = compress(floats({0}, {}), bools({}), std::nullopt);
  EXPECT_EQ(y.shape(), Shape{0});
}

TEST(Compress, CopiesElementsAsTheyAre) {
  const uint16_t nan_with_payload = 0x7e01, negative_zero = 0x8000;
  const NDArray y =
      compress(array<uint16_t>({3}, {nan_with_payload, 0x3c00, negative_zero}, kFloat16), bools({1, 0, 1}), 0);
  EXPECT_EQ(y.dtype(), kFloat16);
  EXPECT_EQ(values<uint16_t>(y), (std::vector<uint16_t>{nan_with_payload, negative_zero}));
  const int64_t big = (int64_t(1) << 62) + 1;
  EXPECT_EQ(values<int64_t>(compress(int64s({2}, {big, 1}), bools({1, 0}), std::nullopt)), I64{big});
}

TEST(Compress, RefusesBadInput) {
  const NDArray x = floats({3, 2}, k3x2);
  EXPECT_FAILS(compress(x, array<uint8_t>({}, {1}, kBool), 0), "Compress: condition must be 1-D, got shape ()");
  EXPECT_FAILS(compress(x, array<uint8_t>({1, 2}, {1, 0}, kBool), 0), "condition must be 1-D, got shape (1, 2)");
  EXPECT_FAILS(compress(x, bools({1}), 2), "Compress: axis 2 is out of range for an input of rank 2");
  EXPECT_FAILS(compress(x, bools({1}), -3), "Compress: axis -3 is out of range");
  EXPECT_FAILS(compress(floats({}, {1}), bools({1}), 0), "axis 0 is out of range for an input of rank 0");
  EXPECT_FAILS(compress(on_cuda(x), bools({1}), 0), "Compress: input is on cuda(0)");
  EXPECT_FAILS(compress(x, on_cuda(bools({1})), 0), "Compress: condition is on cuda(0)");
}

// ---- Unique ----

TEST(Unique, OnnxExamplesWithoutAxis) {
  // Example 1: not sorted, in order of first occurrence.
  expect_unique<int64_t>(unique(int64s({6}, {2, 1, 1, 3, 4, 3}), std::nullopt, false), kInt64, {4}, {2, 1, 3, 4},
                         {0, 1, 3, 4}, {0, 1, 1, 2, 3, 2}, {1, 2, 2, 1});
  // ... and sorted.
  expect_unique<int64_t>(unique(int64s({6}, {2, 1, 1, 3, 4, 3}), std::nullopt, true), kInt64, {4}, {1, 2, 3, 4},
                         {1, 0, 3, 4}, {1, 0, 0, 2, 3, 2}, {2, 1, 2, 1});
  // Example 2: a 2-D input flattened, sorted.
  expect_unique<int64_t>(unique(int64s({2, 2}, {1, 3, 2, 3}), std::nullopt, true), kInt64, {3}, {1, 2, 3}, {0, 2, 1},
                         {0, 2, 1, 2}, {1, 1, 2});
  // ... and not sorted (the reference implementation's np.take(x, indices, axis=0) cannot do this one).
  expect_unique<int64_t>(unique(int64s({2, 2}, {1, 3, 2, 3}), std::nullopt, false), kInt64, {3}, {1, 3, 2}, {0, 1, 2},
                         {0, 1, 2, 1}, {1, 2, 1});
}

TEST(Unique, SlicesAlongAnAxis) {
  // Example 3: rows.
  expect_unique<int64_t>(unique(int64s({3, 3}, {1, 0, 0, 1, 0, 0, 2, 3, 4}), 0, true), kInt64, {2, 3},
                         {1, 0, 0, 2, 3, 4}, {0, 2}, {0, 0, 1}, {2, 1});
  // ONNX's unique_sorted_with_negative_axis: the columns of [[1, 0, 0], [1, 0, 0], [2, 3, 3]].
  expect_unique<int64_t>(unique(int64s({3, 3}, {1, 0, 0, 1, 0, 0, 2, 3, 3}), -1, true), kInt64, {3, 2},
                         {0, 1, 0, 1, 3, 2}, {1, 0}, {1, 0, 0}, {2, 1});
  // Columns ordered by their second element when the first ties: [5, 1], [5, 0], [4, 9].
  expect_unique<int64_t>(unique(int64s({2, 3}, {5, 5, 4, 1, 0, 9}), 1, true), kInt64, {2, 3}, {4, 5, 5, 9, 0, 1},
                         {2, 1, 0}, {2, 1, 0}, {1, 1, 1});
}

TEST(Unique, SlicesOfAThreeDimensionalInput) {
  const std::vector<float> x = {1, 1, 0, 1, 2, 1, 0, 1, 1, 1, 0, 1, 2, 1, 0, 1};  // Example 4, [2, 4, 2]
  const std::vector<float> y = {0, 1, 1, 1, 2, 1, 0, 1, 1, 1, 2, 1};
  for (int64_t axis : {1, -2})
    expect_unique<float>(unique(floats({2, 4, 2}, x), axis, true), kFloat32, {2, 3, 2}, y, {1, 0, 2}, {1, 0, 2, 0},
                         {2, 1, 1});
  // Not sorted: first occurrences, [1, 1], [0, 1], [2, 1].
  expect_unique<float>(unique(floats({2, 4, 2}, x), 1, false), kFloat32, {2, 3, 2},
                       {1, 1, 0, 1, 2, 1, 1, 1, 0, 1, 2, 1}, {0, 1, 2}, {0, 1, 2, 1}, {1, 2, 1});
  // Along the last axis of [2, 2, 3]: slices 0 and 2 are equal, slice 1 (all zeros) sorts first.
  const I64 z = {1, 0, 1, 2, 0, 2, 3, 0, 3, 4, 0, 4};
  expect_unique<int64_t>(unique(int64s({2, 2, 3}, z), 2, true), kInt64, {2, 2, 2}, {0, 1, 0, 2, 0, 3, 0, 4}, {1, 0},
                         {1, 0, 1}, {1, 2});
  expect_unique<int64_t>(unique(int64s({2, 2, 3}, z), -1, false), kInt64, {2, 2, 2}, {1, 0, 2, 0, 3, 0, 4, 0}, {0, 1},
                         {0, 1, 0}, {2, 1});
  // Along the first: [[0, 9], [1, 2]] sorts before [[1, 2], [1, 2]], which occurs twice.
  expect_unique<int64_t>(unique(int64s({3, 2, 2}, {1, 2, 1, 2, 0, 9, 1, 2, 1, 2, 1, 2}), 0, true), kInt64, {2, 2, 2},
                         {0, 9, 1, 2, 1, 2, 1, 2}, {1, 0}, {1, 0, 1}, {1, 2});
}

TEST(Unique, IntegersCompareExactly) {
  const int64_t two53 = int64_t(1) << 53;  // two53 + 1 is the same double as two53
  expect_unique<int64_t>(unique(int64s({4}, {two53 + 1, two53, two53 + 1, two53}), std::nullopt, true), kInt64, {2},
                         {two53, two53 + 1}, {1, 0}, {1, 0, 1, 0}, {2, 2});
  const int64_t top = std::numeric_limits<int64_t>::max(), bottom = std::numeric_limits<int64_t>::min();
  expect_unique<int64_t>(unique(int64s({2, 2}, {top, top - 1, top, top}), 0, true), kInt64, {2, 2},
                         {top, top - 1, top, top}, {0, 1}, {0, 1}, {1, 1});
  expect_unique<int64_t>(unique(int64s({3}, {top, bottom, bottom + 1}), std::nullopt, true), kInt64, {3},
                         {bottom, bottom + 1, top}, {1, 2, 0}, {2, 0, 1}, {1, 1, 1});
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  expect_unique<uint64_t>(unique(array<uint64_t>({3}, {max, max - 1, max}, kUInt64), std::nullopt, true), kUInt64, {2},
                          {max - 1, max}, {1, 0}, {1, 0, 1}, {1, 2});
  expect_unique<int8_t>(unique(array<int8_t>({4}, {-128, 127, -1, -128}, kInt8), std::nullopt, true), kInt8, {3},
                        {-128, -1, 127}, {0, 2, 1}, {0, 2, 1, 0}, {2, 1, 1});
}

TEST(Unique, BoolAndNarrowIntegers) {
  expect_unique<uint8_t>(unique(bools({1, 0, 1}), std::nullopt, true), kBool, {2}, {0, 1}, {1, 0}, {1, 0, 1}, {1, 2});
  // int4 codes 0xF (-1), 0x1, 0x7, 0x8 (-8), 0xF: ordered as the signed values they are.
  expect_unique<uint8_t>(unique(array<uint8_t>({5}, {0xF, 0x1, 0x7, 0x8, 0xF}, kInt4), std::nullopt, true), kInt4, {4},
                         {0x8, 0xF, 0x1, 0x7}, {3, 0, 1, 2}, {1, 2, 3, 0, 1}, {1, 2, 1, 1});
}

TEST(Unique, FloatsWithDuplicatesZerosAndNaNs) {
  // numpy: NaN sorts last and all NaNs are one value; -0.0 and 0.0 are one, kept as first seen.
  const auto out = unique(floats({7}, {2, kNaN, 1, kNaN, -0.0f, 0.0f, 1}), std::nullopt, true);
  ASSERT_EQ(out.size(), 4u);
  const std::vector<float> y = values<float>(out[0]);
  ASSERT_EQ(y.size(), 4u);
  EXPECT_TRUE(y[0] == 0 && std::signbit(y[0]));
  EXPECT_EQ(y[1], 1);
  EXPECT_EQ(y[2], 2);
  EXPECT_TRUE(std::isnan(y[3]));
  expect_int64(out[1], {4}, {4, 2, 0, 1});
  expect_int64(out[2], {7}, {2, 3, 1, 3, 0, 0, 1});
  expect_int64(out[3], {4}, {2, 2, 1, 2});
  // Not sorted: first occurrences.
  const auto first = unique(floats({7}, {2, kNaN, 1, kNaN, -0.0f, 0.0f, 1}), std::nullopt, false);
  expect_int64(first[1], {4}, {0, 1, 2, 4});
  expect_int64(first[2], {7}, {0, 1, 2, 1, 3, 3, 2});
  expect_int64(first[3], {4}, {1, 2, 2, 2});
  // float16 ordered by value, its bits kept.
  expect_unique<uint16_t>(
      unique(array<uint16_t>({4}, {float_to_half(3), float_to_half(-1), float_to_half(3), 0x8000}, kFloat16),
             std::nullopt, true),
      kFloat16, {3}, {float_to_half(-1), 0x8000, float_to_half(3)}, {1, 3, 0}, {2, 0, 2, 1}, {1, 1, 2});
}

TEST(Unique, SlicesHoldingNaNAreAllDistinct) {
  // numpy.unique(x, axis=0) of rows [1, NaN], [0, 1], [1, NaN], [NaN, 0], [0, 1], [-0, 1].
  const auto out = unique(floats({6, 2}, {1, kNaN, 0, 1, 1, kNaN, kNaN, 0, 0, 1, -0.0f, 1}), 0, true);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].shape(), (Shape{4, 2}));
  const std::vector<float> y = values<float>(out[0]);
  EXPECT_TRUE(y[0] == 0 && y[1] == 1 && y[2] == 1 && std::isnan(y[3]) && y[4] == 1 && std::isnan(y[5]) &&
              std::isnan(y[6]) && y[7] == 0);
  expect_int64(out[1], {4}, {1, 0, 2, 3});
  expect_int64(out[2], {6}, {1, 0, 2, 3, 0, 0});
  expect_int64(out[3], {4}, {3, 1, 1, 1});
  // Rows level at a NaN are ordered by what follows it: [NaN, 0] (twice, distinct) before [NaN, 1].
  const auto nan_rows = unique(floats({4, 2}, {kNaN, 1, kNaN, 0, 1, 2, kNaN, 0}), 0, true);
  expect_int64(nan_rows[1], {4}, {2, 1, 3, 0});
  expect_int64(nan_rows[2], {4}, {3, 1, 0, 2});
  expect_int64(nan_rows[3], {4}, {1, 1, 1, 1});
}

TEST(Unique, EmptyAndScalarInputs) {
  expect_unique<float>(unique(floats({0}, {}), std::nullopt, true), kFloat32, {0}, {}, {}, {}, {});
  expect_unique<float>(unique(floats({0, 2}, {}), std::nullopt, false), kFloat32, {0}, {}, {}, {}, {});
  expect_unique<float>(unique(floats({0, 3}, {}), 0, true), kFloat32, {0, 3}, {}, {}, {}, {});
  // Three empty rows are one row, as numpy says.
  expect_unique<float>(unique(floats({3, 0}, {}), 0, true), kFloat32, {1, 0}, {}, {0}, {0, 0, 0}, {3});
  expect_unique<float>(unique(floats({3, 0}, {}), 1, true), kFloat32, {3, 0}, {}, {}, {}, {});
  expect_unique<float>(unique(floats({}, {5}), std::nullopt, true), kFloat32, {1}, {5}, {0}, {0}, {1});
}

TEST(Unique, RefusesBadInput) {
  EXPECT_FAILS(unique(floats({}, {5}), 0, true), "Unique: axis 0 is out of range for an input of rank 0");
  EXPECT_FAILS(unique(floats({2, 2}, {1, 2, 3, 4}), -3, true),
               "Unique: axis -3 is out of range for an input of rank 2");
  EXPECT_FAILS(unique(floats({2, 2}, {1, 2, 3, 4}), 2, false), "Unique: axis 2 is out of range");
  EXPECT_FAILS(unique(on_cuda(floats({2}, {1, 2})), std::nullopt, true), "Unique: X is on cuda(0)");
}

// ---- NonMaxSuppression: ONNX's node tests (onnx/backend/test/case/node/nonmaxsuppression.py) ----

const std::vector<float> kSixBoxes = {0, 0,  1, 1,  0, 0.1f,  1, 1.1f,  0, -0.1f, 1, 0.9f,
                                      0, 10, 1, 11, 0, 10.1f, 1, 11.1f, 0, 100,   1, 101};
const std::vector<float> kSixScores = {0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f};

NDArray nms(const NDArray& boxes, const NDArray& scores, int64_t max_output, float score_threshold = 0,
            bool center_point_box = false) {
  return non_max_suppression(boxes, scores, max_output, 0.5f, score_threshold, center_point_box);
}

// ---- TopK ----

TEST(TopK, LargestAndSmallestAlongAnAxis) {
  // ONNX's test_top_k: the three largest of each row.
  std::vector<NDArray> out = topk(floats({3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}), 3, -1, true);
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{3, 2, 1, 7, 6, 5, 11, 10, 9}));
  expect_int64(out[1], {3, 3}, {3, 2, 1, 3, 2, 1, 3, 2, 1});
  // Along the first axis, the smallest two of each column.
  out = topk(floats({3, 2}, {5, 0, 1, 4, 3, 2}), 2, 0, false);
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{1, 0, 3, 2}));
  expect_int64(out[1], {2, 2}, {1, 0, 2, 2});
  expect_int64(topk(floats({3}, {1, 2, 3}), 0, 0, true)[1], {0}, {});
}

TEST(TopK, TiesGoToTheLowerIndexAndNaNRanksLastEitherWay) {
  for (bool largest : {true, false}) {
    std::vector<NDArray> out = topk(floats({5}, {kNaN, 2, 7, 2, kNaN}), 5, 0, largest);
    expect_int64(out[1], {5}, largest ? I64{2, 1, 3, 0, 4} : I64{1, 3, 2, 0, 4});
  }
}

TEST(TopK, IntegersCompareExactly) {
  const int64_t two53 = int64_t(1) << 53;  // two53 + 1 is the same double as two53
  std::vector<NDArray> out = topk(int64s({3}, {two53, two53 + 1, 0}), 2, 0, true);
  EXPECT_EQ(values<int64_t>(out[0]), (I64{two53 + 1, two53}));
  expect_int64(out[1], {2}, {1, 0});
}

TEST(TopK, RefusesBadInput) {
  EXPECT_FAILS(topk(floats({3}, {1, 2, 3}), 4, 0, true), "TopK: k (4) must be in [0, 3], the length of axis 0");
  EXPECT_FAILS(topk(floats({3}, {1, 2, 3}), -1, 0, true), "TopK: k (-1) must be in [0, 3]");
  EXPECT_FAILS(topk(floats({3}, {1, 2, 3}), 1, 1, true), "TopK: axis 1 is out of range");
  EXPECT_FAILS(topk(floats({}, {1}), 1, 0, true), "TopK: X is a scalar");
  EXPECT_FAILS(topk(on_cuda(floats({3}, {1, 2, 3})), 1, 0, true), "TopK: X is on cuda");
}

TEST(NonMaxSuppression, SuppressByIOU) {
  expect_int64(nms(floats({1, 6, 4}, kSixBoxes), floats({1, 1, 6}, kSixScores), 3), {3, 3},
               {0, 0, 3, 0, 0, 0, 0, 0, 5});
}

TEST(NonMaxSuppression, SuppressByIOUAndScores) {
  expect_int64(nms(floats({1, 6, 4}, kSixBoxes), floats({1, 1, 6}, kSixScores), 3, 0.4f), {2, 3}, {0, 0, 3, 0, 0, 0});
}

TEST(NonMaxSuppression, CenterPointBox) {
  const std::vector<float> boxes = {0.5f, 0.5f,  1, 1, 0.5f, 0.6f,  1, 1, 0.5f, 0.4f,   1, 1,
                                    0.5f, 10.5f, 1, 1, 0.5f, 10.6f, 1, 1, 0.5f, 100.5f, 1, 1};
  expect_int64(nms(floats({1, 6, 4}, boxes), floats({1, 1, 6}, kSixScores), 3, 0, true), {3, 3},
               {0, 0, 3, 0, 0, 0, 0, 0, 5});
}

TEST(NonMaxSuppression, FlippedCoordinates) {
  const std::vector<float> boxes = {1, 1,  0, 0,  0, 0.1f,  1, 1.1f,  0, 0.9f, 1, -0.1f,
                                    0, 10, 1, 11, 1, 10.1f, 0, 11.1f, 1, 101,  0, 100};
  expect_int64(nms(floats({1, 6, 4}, boxes), floats({1, 1, 6}, kSixScores), 3), {3, 3}, {0, 0, 3, 0, 0, 0, 0, 0, 5});
}

TEST(NonMaxSuppression, IdenticalBoxesAndASingleBox) {
  std::vector<float> boxes;
  for (int i = 0; i < 10; ++i) boxes.insert(boxes.end(), {0, 0, 1, 1});
  expect_int64(nms(floats({1, 10, 4}, boxes), floats({1, 1, 10}, std::vector<float>(10, 0.9f)), 3), {1, 3}, {0, 0, 0});
  expect_int64(nms(floats({1, 1, 4}, {0, 0, 1, 1}), floats({1, 1, 1}, {0.9f}), 3), {1, 3}, {0, 0, 0});
}

TEST(NonMaxSuppression, LimitOutputSize) {
  expect_int64(nms(floats({1, 6, 4}, kSixBoxes), floats({1, 1, 6}, kSixScores), 2), {2, 3}, {0, 0, 3, 0, 0, 0});
  // None at all for 0 or less.
  expect_int64(nms(floats({1, 6, 4}, kSixBoxes), floats({1, 1, 6}, kSixScores), 0), {0, 3}, {});
  expect_int64(nms(floats({1, 6, 4}, kSixBoxes), floats({1, 1, 6}, kSixScores), -1), {0, 3}, {});
}

TEST(NonMaxSuppression, TwoBatchesAndTwoClasses) {
  std::vector<float> two_boxes = kSixBoxes, two_scores = kSixScores;
  two_boxes.insert(two_boxes.end(), kSixBoxes.begin(), kSixBoxes.end());
  two_scores.insert(two_scores.end(), kSixScores.begin(), kSixScores.end());
  expect_int64(nms(floats({2, 6, 4}, two_boxes), floats({2, 1, 6}, two_scores), 2), {4, 3},
               {0, 0, 3, 0, 0, 0, 1, 0, 3, 1, 0, 0});
  expect_int64(nms(floats({1, 6, 4}, kSixBoxes), floats({1, 2, 6}, two_scores), 2), {4, 3},
               {0, 0, 3, 0, 0, 0, 0, 1, 3, 0, 1, 0});
}

TEST(NonMaxSuppression, IOUEqualToTheThresholdKeepsTheBox) {
  const NDArray boxes = floats({1, 2, 4}, {0, 0, 1, 1, 0.5f, 0.5f, 1.5f, 1.5f});
  const NDArray scores = floats({1, 1, 2}, {0.9f, 0.8f});
  const float exact_iou = static_cast<float>(0.25 / 1.75);
  expect_int64(non_max_suppression(boxes, scores, 3, exact_iou, 0.0f, false), {2, 3}, {0, 0, 0, 0, 0, 1});
  expect_int64(non_max_suppression(boxes, scores, 3, std::nextafter(exact_iou, 0.0f), 0.0f, false), {1, 3}, {0, 0, 0});
}

TEST(NonMaxSuppression, ScoreThresholdIsStrictAndOptional) {
  // Without a threshold every box competes, a zero score too; with 0.3 the box scoring exactly 0.3 does not.
  std::vector<float> scores = kSixScores;
  scores[5] = 0;
  expect_int64(
      non_max_suppression(floats({1, 6, 4}, kSixBoxes), floats({1, 1, 6}, scores), 6, 0.5f, std::nullopt, false),
      {3, 3}, {0, 0, 3, 0, 0, 0, 0, 0, 5});
  expect_int64(nms(floats({1, 6, 4}, kSixBoxes), floats({1, 1, 6}, kSixScores), 6, 0.3f), {2, 3}, {0, 0, 3, 0, 0, 0});
}

TEST(NonMaxSuppression, TiesGoToTheLowerIndexAndNaNScoresRankLast) {
  const NDArray apart = floats({1, 3, 4}, {0, 0, 1, 1, 0, 10, 1, 11, 0, 20, 1, 21});
  expect_int64(nms(apart, floats({1, 1, 3}, {kNaN, 0.5f, 0.5f}), 3), {2, 3}, {0, 0, 1, 0, 0, 2});
  expect_int64(non_max_suppression(apart, floats({1, 1, 3}, {kNaN, 0.5f, 0.7f}), 3, 0.5f, std::nullopt, false), {3, 3},
               {0, 0, 2, 0, 0, 1, 0, 0, 0});
}

TEST(NonMaxSuppression, EmptyInputs) {
  expect_int64(nms(floats({1, 0, 4}, {}), floats({1, 3, 0}, {}), 3), {0, 3}, {});
  expect_int64(nms(floats({0, 6, 4}, {}), floats({0, 1, 6}, {}), 3), {0, 3}, {});
}

TEST(NonMaxSuppression, RefusesBadInput) {
  const NDArray boxes = floats({1, 6, 4}, kSixBoxes), scores = floats({1, 1, 6}, kSixScores);
  EXPECT_FAILS(nms(floats({6, 4}, kSixBoxes), scores, 3),
               "NonMaxSuppression: boxes must be float32 [num_batches, spatial_dimension, 4], got (6, 4) float32");
  EXPECT_FAILS(nms(boxes, floats({1, 6}, kSixScores), 3),
               "NonMaxSuppression: scores must be float32 [num_batches, num_classes, spatial_dimension], got (1, 6)");
  EXPECT_FAILS(nms(floats({1, 8, 3}, kSixBoxes), scores, 3), "boxes (1, 8, 3) and scores (1, 1, 6) do not match");
  EXPECT_FAILS(nms(boxes, floats({1, 1, 5}, {1, 2, 3, 4, 5}), 3), "boxes (1, 6, 4) and scores (1, 1, 5) do not match");
  EXPECT_FAILS(nms(boxes, floats({2, 1, 3}, kSixScores), 3), "boxes (1, 6, 4) and scores (2, 1, 3) do not match");
  EXPECT_FAILS(nms(array<double>({1, 1, 4}, {0, 0, 1, 1}, kFloat64), floats({1, 1, 1}, {1}), 3),
               "boxes must be float32 [num_batches, spatial_dimension, 4], got (1, 1, 4) float64");
  EXPECT_FAILS(nms(on_cuda(boxes), scores, 3), "NonMaxSuppression: boxes is on cuda(0)");
  EXPECT_FAILS(nms(boxes, on_cuda(scores), 3), "NonMaxSuppression: scores is on cuda(0)");
}

}  // namespace
}  // namespace tessera::runtime
