#include <kjudge/core/strided_copy.hpp>

#include <cstddef>
#include <cstdint>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

namespace {

/** The elements of (sizes, strides) over `base` from `offset`, gathered by gather_strided. */
std::vector<float> gathered(const std::vector<float>& base, std::int64_t offset,
                            const std::vector<std::int64_t>& sizes,
                            const std::vector<std::int64_t>& strides) {
  std::int64_t n = 1;
  for (const auto s : sizes) n *= s;
  std::vector<float> out(static_cast<std::size_t>(n), -1.0F);
  kj::gather_strided(reinterpret_cast<const std::byte*>(base.data() + offset), sizes, strides,
                     sizeof(float), reinterpret_cast<std::byte*>(out.data()));
  return out;
}

/** The same elements read one by one, in row-major order. */
std::vector<float> expected(const std::vector<float>& base, std::int64_t offset,
                            const std::vector<std::int64_t>& sizes,
                            const std::vector<std::int64_t>& strides) {
  std::vector<float> out;
  std::vector<std::int64_t> index(sizes.size(), 0);
  for (const auto s : sizes)
    if (s == 0) return out;
  while (true) {
    std::int64_t at = offset;
    for (std::size_t d = 0; d < sizes.size(); ++d) at += index[d] * strides[d];
    out.push_back(base[static_cast<std::size_t>(at)]);
    std::size_t d = sizes.size();
    while (d > 0 && ++index[d - 1] == sizes[d - 1]) index[--d] = 0;
    if (d == 0) return out;
  }
}

TEST(strided_copy, GathersEveryLayoutInRowMajorOrder) {
  std::vector<float> base(4096);
  std::iota(base.begin(), base.end(), 0.0F);
  struct layout {
    std::int64_t offset;
    std::vector<std::int64_t> sizes, strides;
  };
  const std::vector<layout> layouts = {
      {0, {}, {}},                        // a 0-d tensor
      {7, {}, {}},                        // a 0-d view
      {0, {64}, {1}},                     // contiguous
      {0, {8, 16}, {16, 1}},              // contiguous, merged into one run
      {0, {16, 8}, {1, 16}},              // transposed
      {3, {8, 5}, {16, 1}},               // a slice of the rows' columns
      {0, {32}, {33}},                    // a diagonal
      {5, {4, 1, 6}, {100, 7, 2}},        // a size-1 dimension with any stride
      {0, {3, 4}, {0, 1}},                // expanded rows
      {2, {4, 3}, {1, 0}},                // expanded columns
      {0, {2, 3, 4, 5}, {60, 20, 5, 1}},  // contiguous, four dimensions
      {1, {2, 3, 4, 5}, {1, 2, 6, 24}},   // reversed strides
      {0, {3, 3}, {1, 1}},                // overlapping (as_strided)
      {0, {2, 2, 2}, {1000, 10, 1}},      // runs far apart
  };
  for (const auto& l : layouts)
    EXPECT_EQ(gathered(base, l.offset, l.sizes, l.strides),
              expected(base, l.offset, l.sizes, l.strides))
        << "offset " << l.offset << ", " << l.sizes.size() << " dimensions";
}

TEST(strided_copy, ReadsNothingWhereASizeIsZero) {
  std::vector<float> out(1, 5.0F);
  const std::vector<std::int64_t> sizes = {3, 0}, strides = {1, 1};
  kj::gather_strided(nullptr, sizes, strides, sizeof(float),
                     reinterpret_cast<std::byte*>(out.data()));
  EXPECT_EQ(out[0], 5.0F);
}

TEST(strided_copy, CopiesElementsOfAnySize) {
  // Three-byte elements, every other one.
  const std::vector<unsigned char> base = {1, 2, 3, 9, 9, 9, 4, 5, 6, 9, 9, 9, 7, 8, 0};
  std::vector<unsigned char> out(9, 0xFF);
  const std::vector<std::int64_t> sizes = {3}, strides = {2};
  kj::gather_strided(reinterpret_cast<const std::byte*>(base.data()), sizes, strides, 3,
                     reinterpret_cast<std::byte*>(out.data()));
  EXPECT_EQ(out, (std::vector<unsigned char>{1, 2, 3, 4, 5, 6, 7, 8, 0}));
}

TEST(strided_copy, ReachCountsTheElementsFromTheFirstToTheFarthest) {
  using sizes = std::vector<std::int64_t>;
  EXPECT_EQ(kj::strided_reach(sizes{}, sizes{}), 1U);                  // a 0-dim tensor
  EXPECT_EQ(kj::strided_reach(sizes{4, 5}, sizes{5, 1}), 20U);         // contiguous
  EXPECT_EQ(kj::strided_reach(sizes{4, 5}, sizes{10, 1}), 35U);        // rows of a wider matrix
  EXPECT_EQ(kj::strided_reach(sizes{1, 5}, sizes{999, 1}), 5U);        // a size-1 dimension
  EXPECT_EQ(kj::strided_reach(sizes{16384, 16384}, sizes{0, 0}), 1U);  // one float expanded
  EXPECT_EQ(kj::strided_reach(sizes{1000, 8}, sizes{0, 1}), 8U);       // a row expanded
  EXPECT_EQ(kj::strided_reach(sizes{3, 3}, sizes{1, 1}), 5U);          // overlapping rows
  EXPECT_EQ(kj::strided_reach(sizes{3, 0}, sizes{1, 1}), 0U);          // no elements
  const std::int64_t big = std::int64_t{1} << 62;
  EXPECT_EQ(kj::strided_reach(sizes{big, 8}, sizes{big, 1}), SIZE_MAX);  // saturates
}

}  // namespace
