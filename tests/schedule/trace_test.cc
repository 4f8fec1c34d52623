// Traces: every primitive serializes to JSON and back, prints as code, and replays on a fresh
// compute definition to the identical lowered program.
#include <gtest/gtest.h>

#include "schedule_test_util.h"
#include "tensor_ir/structural.h"

namespace tessera::schedule::testing {
namespace {

class TraceRoundTrip : public ::testing::TestWithParam<Case> {};

TEST_P(TraceRoundTrip, ReplaysToTheSameProgram) {
  Matmul original = matmul(19, 37, 11);
  Schedule s({original.C});
  GetParam().apply(s, original);
  LoweredFunc expected = lower(s, {original.A, original.B, original.C});

  Trace parsed = Trace::from_json(s.trace().to_json());
  EXPECT_EQ(parsed, s.trace());
  EXPECT_EQ(parsed.to_json(), s.trace().to_json());

  Matmul fresh = matmul(19, 37, 11);
  Schedule replayed({fresh.C});
  parsed.apply(replayed);
  LoweredFunc actual = lower(replayed, {fresh.A, fresh.B, fresh.C});
  EXPECT_TRUE(structural_equal(expected, actual)) << to_string(expected) << "\nvs\n" << to_string(actual);
  EXPECT_EQ(to_string(expected), to_string(actual));
  EXPECT_EQ(replayed.trace(), s.trace());
}

INSTANTIATE_TEST_SUITE_P(Schedule, TraceRoundTrip, ::testing::ValuesIn(schedule_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Trace, PrintsAsCode) {
  Matmul mm = matmul(16, 16, 16);
  Schedule s({mm.C});
  auto [io, ii] = s[mm.C].split(s[mm.C].loop("i"), 4);
  s[mm.C].vectorize(ii);
  s[mm.C].compute_root();
  s[mm.C].prefetch(mm.B, s[mm.C].loop("k"), s[mm.C], io, 2);
  EXPECT_EQ(s.trace().to_code(),
            "i_outer, i_inner = s[\"C\"].split(\"i\", factor=4)\n"
            "s[\"C\"].vectorize(\"i.inner\")\n"
            "s[\"C\"].compute_root()\n"
            "s[\"C\"].prefetch(s[\"B\"], \"k\", s[\"C\"], \"i.outer\", 2)\n");
}

TEST(Trace, TransfersToAnotherShape) {
  // Loops are named by role and factors kept as data, so a trace replays on a similar shape.
  Matmul small = matmul(16, 16, 16);
  Schedule s({small.C});
  Tensor cc = s.cache_write(small.C, "local");
  auto loops = s[small.C].tile(s[small.C].loop("i"), s[small.C].loop("j"), 8, 8);
  s[cc].compute_at(s[small.C], loops[1]);
  Matmul big = matmul(33, 70, 9);
  Schedule t({big.C});
  s.trace().apply(t);
  NDArray a = random_array({33, 9}, 5), b = random_array({9, 70}, 6), c = NDArray::empty({33, 70}, runtime::kFloat32);
  run(t, {big.A, big.B, big.C}, {a, b, c});
  EXPECT_LT(matmul_error(big, a, b, c), 1e-4);
}

TEST(Trace, MalformedInputIsAClearError) {
  EXPECT_THROW(Trace::from_json("{not json"), Error);
  EXPECT_THROW(Trace::from_json("{}"), Error);
  EXPECT_THROW(Trace::from_json(R"([{"kind": "teleport", "stage": "C"}])"), Error);
  EXPECT_THROW(Trace::from_json(R"([{"stage": "C"}])"), Error);
  Matmul mm = matmul(8, 8, 8);
  Schedule s({mm.C});
  Trace bad = Trace::from_json(R"([{"kind": "split", "stage": "C", "loops": ["q"], "attrs": {"factor": 2}, "outputs": ["q.outer", "q.inner"]}])");
  try {
    bad.apply(s);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_TRUE(contains(msg, "instruction 0")) << msg;
    EXPECT_TRUE(contains(msg, "no loop 'q'")) << msg;
  }
}

}  // namespace
}  // namespace tessera::schedule::testing
