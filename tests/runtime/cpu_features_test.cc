#include "runtime/cpu_features.h"

#include <gtest/gtest.h>

namespace tessera::runtime {
namespace {

TEST(CpuFeatures, EveryDetectableFeatureOfTheHostIsChecked) {
  // The names a compiler records for this architecture are all ones this runtime can test.
  for (const std::string& f : detectable_cpu_features(host_arch())) {
    auto missing = missing_cpu_features({f});
    if (!missing.empty()) {
      EXPECT_EQ(missing[0].find("unknown"), std::string::npos) << missing[0];
    }
  }
}

TEST(CpuFeatures, BaselineIsPresentAndUnknownNamesAreMissing) {
  if (host_arch() == "x86_64") {
    EXPECT_TRUE(missing_cpu_features({"sse2", "cmov"}).empty());
  }
  auto missing = missing_cpu_features({"no-such-feature"});
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0], "no-such-feature (unknown to this runtime)");
}

}  // namespace
}  // namespace tessera::runtime
