#include <kjudge/core/text.hpp>

#include <gtest/gtest.h>

TEST(text, a_figure_beside_another_reads_differently_where_they_differ) {
  EXPECT_EQ(kj::figure_beside(0.7123, 0.5), "0.712");
  EXPECT_EQ(kj::figure_beside(0.50032, 0.5), "0.5003");
  EXPECT_EQ(kj::figure_beside(0.5, 0.5), "0.5");
  EXPECT_EQ(kj::figure_beside(0.4999, 0.5), "0.4999");
  EXPECT_EQ(kj::figure_beside(12.3456, 12.3), "12.35");
}

TEST(text, listed_names_the_first_and_counts_the_rest) {
  EXPECT_EQ(kj::listed({}, 3, ", "), "");
  EXPECT_EQ(kj::listed({"a", "b"}, 3, ", "), "a, b");
  EXPECT_EQ(kj::listed({"a", "b", "c"}, 3, "; "), "a; b; c");
  EXPECT_EQ(kj::listed({"a", "b", "c", "d", "e"}, 2, ", "), "a, b, and 3 more");
}
