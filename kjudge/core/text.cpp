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

std::string figure_beside(double value, double beside) {
  int digits = 3;
  std::string text = fmt::format("{:.{}g}", value, digits);
  while (value != beside && digits < 9 && text == fmt::format("{:.{}g}", beside, digits))
    text = fmt::format("{:.{}g}", value, ++digits);
  return text;
}

}  // namespace kj
