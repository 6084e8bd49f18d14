#pragma once
// Helpers shared by the profile unit tests.

#include <algorithm>
#include <string>
#include <vector>

#include <kjudge/core/result.hpp>

namespace kj::profile::test {

inline std::vector<std::string> codes(const std::vector<flag>& flags) {
  std::vector<std::string> out;
  for (const auto& f : flags) out.push_back(f.code);
  return out;
}

inline bool has_code(const std::vector<flag>& flags, const std::string& code) {
  return std::any_of(flags.begin(), flags.end(), [&](const flag& f) { return f.code == code; });
}

inline const flag* find_code(const std::vector<flag>& flags, const std::string& code) {
  for (const auto& f : flags)
    if (f.code == code) return &f;
  return nullptr;
}

}  // namespace kj::profile::test
