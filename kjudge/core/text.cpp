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

std::string seconds_text(double seconds) {
  if (seconds >= 0.995) return fmt::format("{:.1f} s", seconds);
  if (seconds >= 0.0995) return fmt::format("{:.2f} s", seconds);
  return fmt::format("{:.2g} ms", seconds * 1e3);
}

namespace {

/** The length of the UTF-8 sequence at `i` (2-4), 0 where it is not a well-formed one (a stray
 *  continuation byte, an overlong form, a surrogate, past U+10FFFF, cut short). */
std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto at = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = at(i);
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // the second byte's range
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0) lo = 0xa0;  // overlong
    if (c == 0xed) hi = 0x9f;  // surrogates
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0) lo = 0x90;  // overlong
    if (c == 0xf4) hi = 0x8f;  // past U+10FFFF
  } else {
    return 0;
  }
  if (i + n > s.size() || at(i + 1) < lo || at(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (at(i + k) < 0x80 || at(i + k) > 0xbf) return 0;
  return n;
}

/** terminal_safe's work; `line_breaks`: newline and tab kept. */
std::string shown(std::string_view text, bool line_breaks) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if ((c < 0x20 && !(line_breaks && (c == '\n' || c == '\t'))) || c == 0x7f)
        out += fmt::format("\\x{:02x}", c);
      else
        out += static_cast<char>(c);
      ++i;
      continue;
    }
    const std::size_t n = utf8_length(text, i);
    if (n == 0) {
      out += fmt::format("\\x{:02x}", c);
      ++i;
    } else if (c == 0xc2 && static_cast<unsigned char>(text[i + 1]) <= 0x9f) {  // C1: U+0080-9F
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(text[i + 1]));
      i += 2;
    } else if (const unsigned b = static_cast<unsigned char>(text[i + 1]),
               d = n == 3 ? static_cast<unsigned char>(text[i + 2]) : 0u;
               c == 0xe2 &&
               ((b == 0x80 && d >= 0xaa && d <= 0xae) || (b == 0x81 && d >= 0xa6 && d <= 0xa9))) {
      // Bidirectional overrides and isolates (U+202A-202E, U+2066-2069): they reorder what
      // follows on the line.
      out += fmt::format("\\u{:04x}", ((c & 0x0fu) << 12) | ((b & 0x3fu) << 6) | (d & 0x3fu));
      i += 3;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace

std::string terminal_safe(std::string_view text) {
  return shown(text, true);
}

std::string terminal_safe_line(std::string_view text) {
  return shown(text, false);
}

}  // namespace kj
