#include <kjudge/core/text.hpp>

#include <algorithm>

#include <fmt/format.h>

namespace kj {

std::string listed(const std::vector<std::string>& items, std::size_t shown,
                   std::string_view separator) {
  const std::size_t named = std::min(items.size(), shown);
  std::string out;
  for (std::size_t i = 0; i < named; ++i) {
    if (i > 0) out += separator;
    out += items[i];
  }
  if (named < items.size()) out += fmt::format("{}and {} more", separator, items.size() - named);
  return out;
}

}  // namespace kj
