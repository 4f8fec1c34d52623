#include "runtime/checksum.h"

#include <gtest/gtest.h>

#include <string>

namespace tessera::runtime {
namespace {

// Reference values of XXH64 (seed 0) from the xxHash project and its Python binding.
TEST(Checksum, MatchesXXH64ReferenceValues) {
  EXPECT_EQ(xxhash64("", 0), 0xEF46DB3751D8E999ULL);
  EXPECT_EQ(xxhash64("a", 1), 0xD24EC4F1A98C6E5BULL);
  EXPECT_EQ(xxhash64("abc", 3), 0x44BC2CF5AD770999ULL);
  const std::string long_text = "Nobody inspects the spammish repetition";
  EXPECT_EQ(xxhash64(long_text.data(), long_text.size()), 0xFBCEA83C8A378BF1ULL);
}

TEST(Checksum, SeesEveryByte) {
  std::string data(1000, 'x');
  const uint64_t h = xxhash64(data.data(), data.size());
  for (size_t i : {0, 31, 32, 500, 996, 999}) {
    std::string changed = data;
    changed[i] ^= 1;
    EXPECT_NE(xxhash64(changed.data(), changed.size()), h) << "byte " << i;
  }
}

}  // namespace
}  // namespace tessera::runtime
