// Sampled schedules compute what the default schedule computes: a few candidates of every kernel
// kind are compiled for this CPU and run on the same random inputs.
#include <gtest/gtest.h>

#include "search_test_util.h"

namespace tessera::autotune {
namespace {

using namespace testing;

TEST(SearchSpace, SamplesComputeTheDefaultSchedulesResults) {
  for (const Task& task : all_tasks()) {
    SearchSpace space(task.compute);
    auto expected = make_args(space, 11);
    run(space, SearchSpace::default_candidate(), expected);
    std::mt19937_64 rng(21);
    for (int i = 0; i < 4; ++i) {
      Candidate c = space.sample(rng);
      SCOPED_TRACE(task.workload.key + " " + space.sketches()[c.sketch].name + "\n" +
                   space.apply(c)->trace().to_code());
      auto args = make_args(space, 11);
      run(space, c, args);
      size_t first_output = space.compute().inputs.size();
      for (size_t o = first_output; o < args.size(); ++o) EXPECT_LT(max_abs_diff(args[o], expected[o]), 1e-3);
    }
  }
}

}  // namespace
}  // namespace tessera::autotune
