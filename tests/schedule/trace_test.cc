// Traces: every primitive serializes to JSON and back, prints as code, and replays on a fresh
// compute definition to the identical lowered program.
#include <gtest/gtest.h>

#include <algorithm>

#include "schedule/primitive.h"
#include "schedule_test_util.h"
#include "tensor_ir/structural.h"

namespace tessera::schedule::testing {
namespace {

class TraceRoundTrip : public ::testing::TestWithParam<Case> {};

TEST_P(TraceRoundTrip, ReplaysToTheSameProgram) {
  Matmul original = matmul(19, 37, 11);
  Schedule s({original.C});
  GetParam().apply(s, original);
  LoweredFunc expected = lower_case(GetParam(), s, {original.A, original.B, original.C});

  Trace parsed = Trace::from_json(s.trace().to_json());
  EXPECT_EQ(parsed, s.trace());
  EXPECT_EQ(parsed.to_json(), s.trace().to_json());

  Matmul fresh = matmul(19, 37, 11);
  Schedule replayed({fresh.C});
  parsed.apply(replayed);
  LoweredFunc actual = lower_case(GetParam(), replayed, {fresh.A, fresh.B, fresh.C});
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
  Trace bad = Trace::from_json(
      R"([{"kind": "split", "stage": "C", "loops": ["q"], "attrs": {"factor": 2}, "outputs": ["q.outer", "q.inner"]}])");
  try {
    bad.apply(s);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_TRUE(contains(msg, "instruction 0")) << msg;
    EXPECT_TRUE(contains(msg, "no loop 'q'")) << msg;
  }
}

// Every primitive of the table is recorded by some case, and its instructions go through JSON and
// back to the same instructions and the same printed code; a new primitive needs a case.
TEST(Trace, EveryPrimitiveRoundTripsThroughJsonAndCode) {
  for (const Primitive& p : primitives()) {
    SCOPED_TRACE(p.name);
    int cases = 0;
    for (const Case& c : schedule_cases()) {
      Matmul mm = matmul(19, 37, 11);
      Schedule s({mm.C});
      c.apply(s, mm);
      const auto& insts = s.trace().instructions();
      auto is_p = [&](const Instruction& i) { return i.kind == p.name; };
      if (std::none_of(insts.begin(), insts.end(), is_p)) continue;
      ++cases;
      Trace parsed = Trace::from_json(s.trace().to_json());
      EXPECT_EQ(parsed, s.trace()) << c.name;
      EXPECT_EQ(parsed.to_code(), s.trace().to_code()) << c.name;
      Matmul fresh = matmul(19, 37, 11);
      Schedule replayed({fresh.C});
      parsed.apply(replayed);
      EXPECT_EQ(replayed.trace().to_code(), s.trace().to_code()) << c.name;
    }
    EXPECT_GT(cases, 0) << "no case in schedule_cases() records " << p.name;
  }
}

// The printed code of every primitive, as tessera.te runs it (and as earlier versions printed it).
TEST(Trace, PrintsEveryPrimitiveAsCode) {
  Matmul mm = matmul(16, 16, 16);
  Schedule s({mm.C});
  Tensor bl = s.cache_read(mm.B, "local", {mm.C});
  Tensor cc = s.cache_write(mm.C, "local");
  auto [io, ii] = s[mm.C].split_nparts(s[mm.C].loop("i"), 2);
  auto [jo, ji] = s[mm.C].split(s[mm.C].loop("j"), 8);
  s[mm.C].reorder({io, jo, ii, ji});
  Loop fused = s[mm.C].fuse(io, jo);
  s[mm.C].parallel(fused);
  s[mm.C].unroll(ii);
  s[mm.C].vectorize(ji);
  s[mm.C].pragma(ii, "unroll_explicit", 0);
  s[cc].compute_at(s[mm.C], fused);
  s[cc].set_storage_align(0, 16, 1);
  s[bl].compute_inline();
  auto [ko, ki] = s[cc].split(s[cc].loop("k"), 4);
  s[cc].prefetch(mm.A, ko, s[mm.C], fused, 1);
  Matmul mm2 = matmul(16, 16, 16);
  Schedule s2({mm2.C});
  auto [ko2, ki2] = s2[mm2.C].split(s2[mm2.C].loop("k"), 4);
  Tensor rf = s2.rfactor(mm2.C, ki2, 1);
  s2[rf].compute_root();
  EXPECT_EQ(s.trace().to_code() + s2.trace().to_code(), R"(B_local = s.cache_read("B", "local", ["C"])
C_local = s.cache_write("C", "local")
i_outer, i_inner = s["C"].split("i", nparts=2)
j_outer, j_inner = s["C"].split("j", factor=8)
s["C"].reorder("i.outer", "j.outer", "i.inner", "j.inner")
i_outer_j_outer_fused = s["C"].fuse("i.outer", "j.outer")
s["C"].parallel("i.outer.j.outer.fused")
s["C"].unroll("i.inner")
s["C"].vectorize("j.inner")
s["C"].pragma("i.inner", "unroll_explicit", 0)
s["C.local"].compute_at(s["C"], "i.outer.j.outer.fused")
s["C.local"].storage_align(0, 16, 1)
s["B.local"].compute_inline()
k_outer, k_inner = s["C.local"].split("k", factor=4)
s["C.local"].prefetch(s["A"], "k.outer", s["C"], "i.outer.j.outer.fused", 1)
k_outer, k_inner = s["C"].split("k", factor=4)
C_rf = s.rfactor("C", "k.inner", factor_axis=1)
s["C.rf"].compute_root()
)");
}

TEST(Trace, AttributesAreCheckedAtParse) {
  auto parse_error = [](const std::string& json) {
    try {
      Trace::from_json(json);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  auto split = [](const std::string& attrs) {
    return R"([{"kind": "split", "stage": "C", "loops": ["i"], "attrs": )" + attrs +
           R"(, "outputs": ["i.outer", "i.inner"]}])";
  };
  std::string missing = parse_error(split("{}"));
  EXPECT_TRUE(contains(missing, "instruction 0: split on stage C")) << missing;
  EXPECT_TRUE(contains(missing, "exactly one of the attributes factor, nparts")) << missing;
  std::string both = parse_error(split(R"({"factor": 8, "nparts": 2})"));
  EXPECT_TRUE(contains(both, "exactly one of the attributes factor, nparts")) << both;
  std::string wrong_type = parse_error(split(R"({"factor": "8"})"));
  EXPECT_TRUE(contains(wrong_type, "split on stage C: attribute 'factor' is a string, expected an integer"))
      << wrong_type;
  std::string unknown = parse_error(split(R"({"factor": 8, "axis": 1})"));
  EXPECT_TRUE(contains(unknown, "split on stage C: unknown attribute 'axis' (it takes: factor, nparts)")) << unknown;
  std::string absent =
      parse_error(R"([{"kind": "pragma", "stage": "C", "loops": ["k"], "attrs": {"key": "unroll_max"}}])");
  EXPECT_TRUE(contains(absent, "pragma on stage C: missing attribute 'value' (an integer)")) << absent;
  std::string loops = parse_error(R"([{"kind": "fuse", "stage": "C", "loops": ["i"], "outputs": ["i.fused"]}])");
  EXPECT_TRUE(contains(loops, "fuse on stage C: takes 2 loop(s), got 1")) << loops;
  std::string outputs = parse_error(R"([{"kind": "cache_write", "stage": "C", "attrs": {"scope": "local"}}])");
  EXPECT_TRUE(contains(outputs, "cache_write on stage C: makes 1 loop(s) or stage(s)")) << outputs;
  std::string second = parse_error(R"([{"kind": "compute_root", "stage": "C"},
      {"kind": "compute_at", "stage": "B", "loops": ["i"], "attrs": {"target": 3}}])");
  EXPECT_TRUE(contains(second,
                       "instruction 1: compute_at on stage B: attribute 'target' is an integer, expected "
                       "a string"))
      << second;
}

TEST(Trace, PrimitiveOutsideTheTableCannotBeRecorded) {
  Trace trace;
  try {
    trace.append({"teleport", "C", {"i"}, {}, {}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "unknown schedule primitive 'teleport'")) << e.what();
  }
  EXPECT_EQ(trace.size(), 0u);
  // Nor can a primitive of the table with attributes outside its schema.
  EXPECT_THROW(trace.append({"vectorize", "C", {"i"}, {{"lanes", int64_t(8)}}, {}}), Error);
  EXPECT_EQ(trace.size(), 0u);
}

}  // namespace
}  // namespace tessera::schedule::testing
