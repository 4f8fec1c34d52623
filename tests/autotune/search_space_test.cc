// The rule-generated search space: which sketches each kind of kernel gets, and that every
// sampled candidate lowers, replays from its trace alone to the identical program, and comes back
// from the sketch name and decisions the database stores with that trace.
#include <gtest/gtest.h>

#include "autotune/search_space.h"
#include "runtime/error.h"
#include "schedule/templates/cpu.h"
#include "search_test_util.h"
#include "tensor_ir/printer.h"
#include "tensor_ir/structural.h"

namespace tessera::autotune {
namespace {

using namespace testing;

std::vector<std::string> sketch_names(const SearchSpace& space) {
  std::vector<std::string> names;
  for (const auto& s : space.sketches()) names.push_back(s.name);
  return names;
}

bool has_sketch(const SearchSpace& space, const std::string& name) {
  for (const auto& s : space.sketches())
    if (s.name == name) return true;
  return false;
}

const StageSketch* stage_of(const Sketch& sketch, const std::string& stage) {
  for (const auto& st : sketch.stages)
    if (st.stage == stage) return &st;
  return nullptr;
}

TEST(SketchRules, Analyses) {
  Task mm = matmul_task(48, 64, 32);
  schedule::Schedule s(mm.compute.outputs);
  EXPECT_TRUE(has_data_reuse(s.stage("matmul").op()));              // A ignores j, B ignores i
  EXPECT_FALSE(strictly_inlinable(s.stage("matmul_packed").op()));  // a select: its place is sampled
  Task sm = softmax_task();
  schedule::Schedule t(sm.compute.outputs);
  EXPECT_FALSE(has_data_reuse(t.stage("softmax_max").op()));      // a row reduction reads every element once
  EXPECT_FALSE(strictly_inlinable(t.stage("softmax_exp").op()));  // exp is expensive to repeat
  Task conv = conv_task();
  schedule::Schedule u(conv.compute.outputs);
  EXPECT_TRUE(strictly_inlinable(u.stage("add").op()));
}

TEST(SketchRules, MatmulTilesTheProductAtTheOutputsTile) {
  SearchSpace space(for_hardware(matmul_task(48, 64, 32), avx512_hardware()).compute);
  ASSERT_EQ(space.sketches().size(), 3u) << ::testing::PrintToString(sketch_names(space));
  EXPECT_TRUE(space.sketches()[0].is_default);
  EXPECT_TRUE(space.sketches()[1].is_template);
  const Sketch& sk = space.sketches()[2];
  EXPECT_EQ(stage_of(sk, "matmul_out")->loops, LoopRule::TileFused);
  EXPECT_EQ(stage_of(sk, "matmul_out")->anchor, "matmul");
  EXPECT_EQ(stage_of(sk, "matmul_out")->matched, (std::vector<int>{0, 1}));
  EXPECT_EQ(stage_of(sk, "matmul")->placement, Placement::InConsumer);
  EXPECT_EQ(stage_of(sk, "matmul_packed")->placement, Placement::Decided);
  // Tile sizes for both output axes (4 levels: 3 factors each), the reduction split, threads,
  // where the product goes, the packing's place, and unrolling.
  std::vector<std::string> names;
  for (const auto& spec : space.layout(2)) names.push_back(spec.name);
  EXPECT_EQ(names, (std::vector<std::string>{"matmul_out.i", "matmul_out.j", "matmul_out.parallel", "matmul.at",
                                             "matmul.k", "matmul_packed.place", "matmul_packed.vector",
                                             "matmul_packed.parallel", "matmul.unroll"}));
  EXPECT_EQ(space.layout(2)[0].levels, 3);
  EXPECT_EQ(space.layout(2)[1].vector_lanes, 16);
}

TEST(SketchRules, AnOutputAccumulatingItselfGetsACacheWriteVariant) {
  SearchSpace space(te_gemm_task(40).compute);
  EXPECT_TRUE(has_sketch(space, "C:tile")) << ::testing::PrintToString(sketch_names(space));
  EXPECT_TRUE(has_sketch(space, "C:cache_write_tile")) << ::testing::PrintToString(sketch_names(space));
}

TEST(SketchRules, ConvInlinesTheEpilogueAndSamplesThePaddingsPlace) {
  SearchSpace space(conv_task().compute);
  ASSERT_EQ(space.sketches().size(), 3u) << ::testing::PrintToString(sketch_names(space));
  const Sketch& sk = space.sketches()[2];
  EXPECT_EQ(stage_of(sk, "relu")->loops, LoopRule::TileFused);
  EXPECT_EQ(stage_of(sk, "relu")->anchor, "conv_blocked");
  EXPECT_EQ(stage_of(sk, "add")->placement, Placement::Inline);
  EXPECT_EQ(stage_of(sk, "conv")->placement, Placement::Inline);  // the unblocking copy
  EXPECT_EQ(stage_of(sk, "conv_pad")->placement, Placement::Decided);
  EXPECT_EQ(stage_of(sk, "conv_pad")->target, "relu");
  // The output's channel axis walks the blocked product through // and %: not matched; its
  // rows and columns are.
  EXPECT_EQ(stage_of(sk, "relu")->matched, (std::vector<int>{-1, -1, 2, 3}));
}

// The templates' knobs (schedule/templates/knobs.h) as a sketch: each knob one choice, the
// template's own first; all at their first option is the default schedule, and other answers
// give other schedules of the same template.
TEST(SketchRules, TemplateKnobsAreASketchWhoseFirstOptionsAreTheDefault) {
  SearchSpace space(matmul_task(48, 64, 32).compute);
  std::vector<std::string> names;
  Candidate own{1, {}};
  for (const auto& spec : space.layout(1)) {
    names.push_back(spec.name);
    EXPECT_EQ(spec.kind, DecisionSpec::Kind::Choice);
    own.decisions.push_back(spec.options.at(0));
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{"matmul.parallel", "matmul.panel_outer", "matmul.k_unroll", "matmul.prefetch"}));
  EXPECT_EQ(space.layout(1)[2].options, (std::vector<int64_t>{4, 2, 8}));
  std::string default_trace = space.trace_json(SearchSpace::default_candidate());
  EXPECT_EQ(space.trace_json(own), default_trace);
  Candidate other = own;
  other.decisions[2] = 8;  // the reduction unrolled by 8
  std::string unrolled = space.trace_json(other);
  EXPECT_NE(unrolled, default_trace);
  EXPECT_EQ(space.stored(other), (SketchDecisions{"template_knobs", other.decisions}));
  EXPECT_EQ(space.candidate(space.stored(other)), other);
  // A depthwise convolution's knobs: threads, the block of rows (divisors of 4), where the
  // padded input comes from (read in place, copied per plane or per block of rows).
  SearchSpace depthwise(depthwise_task().compute);
  ASSERT_TRUE(depthwise.sketches().size() > 1 && depthwise.sketches()[1].is_template);
  names.clear();
  for (const auto& spec : depthwise.layout(1)) names.push_back(spec.name);
  EXPECT_EQ(names, (std::vector<std::string>{"depthwise.parallel", "depthwise.rows", "depthwise.pad"}));
  EXPECT_EQ(depthwise.layout(1)[1].options, (std::vector<int64_t>{4, 2, 1}));
  EXPECT_EQ(depthwise.layout(1)[2].options, (std::vector<int64_t>{0, 1, 2}));
  // Rows of 14 at stride 1 take a copy per block of rows first (in vectors of 16).
  Task rows_of_14 = for_hardware(
      host_task(kernel(
          "%p0: float32[1, 8, 14, 14], %p1: float32[8, 1, 3, 3]", "float32[1, 8, 14, 14]",
          "  %0 = fn [primitive=1] (%a: float32[1, 8, 14, 14], %w: float32[8, 1, 3, 3]) -> float32[1, 8, 14, 14] {\n"
          "    conv(%a, %w, dilations=[], groups=8, packed_channels=0, pads=[1, 1, 1, 1], strides=[1, 1])\n"
          "  };",
          "%p0, %p1")),
      avx512_hardware());
  EXPECT_EQ(SearchSpace(rows_of_14.compute).layout(1)[2].options, (std::vector<int64_t>{2, 0, 1}));
  // Kernels whose templates have no knobs get no such sketch.
  EXPECT_FALSE(has_sketch(SearchSpace(elementwise_task().compute), "template_knobs"));
}

TEST(SketchRules, ElementwiseAndFusedElementwise) {
  SearchSpace ew(elementwise_task().compute);
  EXPECT_EQ(sketch_names(ew), (std::vector<std::string>{"default", "sigmoid:rows"}));
  SearchSpace fused(fused_elementwise_task().compute);
  ASSERT_EQ(fused.sketches().size(), 2u) << ::testing::PrintToString(sketch_names(fused));
  EXPECT_EQ(stage_of(fused.sketches()[1], "add")->placement, Placement::Inline);
  EXPECT_EQ(stage_of(fused.sketches()[1], "exp")->placement, Placement::Decided);
}

TEST(SketchRules, ReductionsWithoutReuseGetRowsAndRfactorVariants) {
  SearchSpace space(softmax_task().compute);
  // max and sum, each rows or rfactor.
  EXPECT_EQ(space.sketches().size(), 5u) << ::testing::PrintToString(sketch_names(space));
  EXPECT_TRUE(has_sketch(space, "softmax:rows softmax_sum:rfactor softmax_exp:rows softmax_max:rfactor"))
      << ::testing::PrintToString(sketch_names(space));
  SearchSpace sum(for_hardware(reduce_task(), avx512_hardware()).compute);
  EXPECT_EQ(sketch_names(sum),
            (std::vector<std::string>{"default", "reduce_sum:reduce_rows"}));  // 12 < 16 lanes: no rfactor
}

TEST(SearchSpace, DefaultCandidateIsTheTemplatesSchedule) {
  Task t = conv_task();
  SearchSpace space(t.compute);
  auto s = space.apply(SearchSpace::default_candidate());
  auto expected = schedule::default_cpu_schedule(t.compute.outputs, t.compute.anchor, t.compute.hardware);
  EXPECT_EQ(s->trace().to_json(), expected->trace().to_json());
  EXPECT_EQ(space.stored(SearchSpace::default_candidate()), (SketchDecisions{"default", {}}));
  EXPECT_EQ(space.candidate({"default", {}}), SearchSpace::default_candidate());
  // The blocked convolution streams the next block of packed weights (conv.prefetch), a share
  // per input channel, and the lowered kernel issues the prefetches.
  std::string code = s->trace().to_code(), lowered = tensor_ir::to_string(space.lower(*s));
  EXPECT_NE(code.find(".prefetch(s[\"conv_packed_weight\"], \"rc\""), std::string::npos) << code;
  EXPECT_NE(lowered.find("prefetch(conv_packed_weight["), std::string::npos) << lowered;
}

TEST(SearchSpace, EverySampleLowersReplaysAndComesBackFromWhatIsStored) {
  for (const Task& task : all_tasks()) {
    SearchSpace space(task.compute);
    std::mt19937_64 rng(7);
    int valid = 0;
    const int n = 24;
    for (int i = 0; i < n; ++i) {
      Candidate c = space.sample(rng);
      SCOPED_TRACE(task.workload.key + " sample " + std::to_string(i) + " of " + space.sketches()[c.sketch].name);
      std::unique_ptr<schedule::Schedule> s;
      tensor_ir::LoweredFunc f;
      try {
        s = space.apply(c);
        f = space.lower(*s);
      } catch (const Error& e) {
        ADD_FAILURE() << e.what();  // the rules only make schedules that lower
        continue;
      }
      ++valid;
      std::string json = s->trace().to_json();
      auto replayed = space.replay(json);
      EXPECT_TRUE(tensor_ir::structural_equal(space.lower(*replayed), f));
      auto back = space.candidate(space.stored(c));
      ASSERT_TRUE(back.has_value());
      EXPECT_EQ(*back, c);
      EXPECT_EQ(space.trace_json(*back), json);
    }
    EXPECT_EQ(valid, n);
  }
}

TEST(SearchSpace, MutationAndCrossoverKeepTheLayout) {
  SearchSpace space(conv_task().compute);
  std::mt19937_64 rng(3);
  Candidate a = space.sample(rng), b = space.sample(rng);
  while (b.sketch != a.sketch) b = space.sample(rng);  // crossover needs one sketch
  int changed = 0, valid = 0;
  for (int i = 0; i < 40; ++i) {
    Candidate m = space.mutate(i % 2 ? a : space.crossover(a, b, rng), rng);
    EXPECT_EQ(m.decisions.size(), a.decisions.size());
    changed += !(m == a);
    try {
      space.lower(*space.apply(m));
      ++valid;
    } catch (const Error&) {
    }
  }
  EXPECT_GT(changed, 30);
  EXPECT_GT(valid, 30);
}

TEST(SearchSpace, TileMutationMovesFactorsBetweenLevels) {
  DecisionSpec spec;
  spec.kind = DecisionSpec::Kind::Tile;
  spec.extent = 64;
  spec.levels = 3;
  std::mt19937_64 rng(1);
  std::vector<int64_t> tile{4, 2, 2};  // innermost first; the outermost level is 64 / 16 = 4
  for (int i = 0; i < 20; ++i) {
    tile = mutate_decision(spec, tile, rng);
    int64_t product = tile[0] * tile[1] * tile[2];
    EXPECT_EQ(64 % product, 0);  // still a factorization
    EXPECT_LE(tile[0], kMaxInnermostFactor);
  }
}

TEST(SearchSpace, BadCandidatesAndUnknownSketchesAreRejected) {
  SearchSpace space(matmul_task(48, 64, 32).compute);
  std::mt19937_64 rng(5);
  Candidate c = space.sample(rng);
  Candidate longer = c;
  longer.decisions.push_back(1);
  EXPECT_THROW(space.apply(longer), Error);
  Candidate shorter = c;
  shorter.decisions.pop_back();
  EXPECT_THROW(space.apply(shorter), Error);
  // A sketch the rules of this version do not make (stored by another).
  EXPECT_FALSE(space.candidate({"matmul:no_such_rule", c.decisions}).has_value());
}

}  // namespace
}  // namespace tessera::autotune
