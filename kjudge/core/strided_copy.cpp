#include <kjudge/core/strided_copy.hpp>

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

namespace kj {

void gather_strided(const std::byte* from, std::span<const std::int64_t> sizes,
                    std::span<const std::int64_t> strides, std::size_t element, std::byte* to) {
  // The dimensions that move, outermost first, merged where one continues the next.
  std::vector<std::int64_t> size, stride;
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return;
    if (sizes[d] == 1) continue;
    if (!size.empty() && stride.back() == sizes[d] * strides[d]) {
      size.back() *= sizes[d];
      stride.back() = strides[d];
    } else {
      size.push_back(sizes[d]);
      stride.push_back(strides[d]);
    }
  }
  if (size.empty()) {
    std::memcpy(to, from, element);
    return;
  }
  const std::size_t outer = size.size() - 1;
  const std::int64_t inner = size[outer];
  const std::int64_t inner_stride = stride[outer];
  const auto run = static_cast<std::size_t>(inner) * element;
  std::vector<std::int64_t> index(outer, 0);
  std::int64_t offset = 0;  // of the current run's first element, in elements
  while (true) {
    const std::byte* p = from + offset * static_cast<std::int64_t>(element);
    if (inner_stride == 1) {
      std::memcpy(to, p, run);
      to += run;
    } else {
      const auto step = inner_stride * static_cast<std::int64_t>(element);
      for (std::int64_t i = 0; i < inner; ++i, p += step, to += element)
        std::memcpy(to, p, element);
    }
    // The next run: an odometer over the outer dimensions, the last fastest.
    std::size_t d = outer;
    while (d > 0) {
      --d;
      if (++index[d] < size[d]) {
        offset += stride[d];
        break;
      }
      offset -= (size[d] - 1) * stride[d];
      index[d] = 0;
      if (d == 0) return;
    }
    if (outer == 0) return;
  }
}

std::size_t strided_reach(std::span<const std::int64_t> sizes,
                          std::span<const std::int64_t> strides) noexcept {
  constexpr auto most = std::numeric_limits<std::size_t>::max();
  std::size_t reach = 1;
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] <= 0) return 0;
    const auto span = static_cast<std::size_t>(sizes[d] - 1);
    const auto step = static_cast<std::size_t>(std::max<std::int64_t>(strides[d], 0));
    if (step != 0 && span > (most - reach) / step) return most;
    reach += span * step;
  }
  return reach;
}

}  // namespace kj
