#include <kjudge/core/text.hpp>

#include <gtest/gtest.h>

TEST(text, listed_names_the_first_and_counts_the_rest) {
  EXPECT_EQ(kj::listed({}, 3, ", "), "");
  EXPECT_EQ(kj::listed({"a", "b"}, 3, ", "), "a, b");
  EXPECT_EQ(kj::listed({"a", "b", "c"}, 3, "; "), "a; b; c");
  EXPECT_EQ(kj::listed({"a", "b", "c", "d", "e"}, 2, ", "), "a, b, and 3 more");
}
