// The one source of random ids: the length asked for, hex only, never the
// same twice in a run of many, and numbers under their bound.

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "mayura/random_id.hpp"

namespace mayura {
namespace {

TEST(RandomId, HexOfTheLengthAskedAndNeverTwice) {
  std::set<std::string> seen;
  for (int i = 0; i < 10000; ++i) {
    const std::string id = random_hex(16);
    ASSERT_EQ(id.size(), 16u);
    ASSERT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 10000u);
  EXPECT_EQ(random_hex(1).size(), 1u);
  EXPECT_EQ(random_hex(33).size(), 33u);
  EXPECT_EQ(random_hex(0), "");
}

TEST(RandomId, NumbersStayUnderTheirBoundAndReachEveryValue) {
  std::set<std::uint64_t> seen;
  for (int i = 0; i < 2000; ++i) {
    const std::uint64_t v = random_below(7);
    ASSERT_LT(v, 7u);
    seen.insert(v);
  }
  EXPECT_EQ(seen.size(), 7u);
  EXPECT_EQ(random_below(1), 0u);
}

}  // namespace
}  // namespace mayura
