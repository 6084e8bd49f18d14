#pragma once
/** @file The ceilings of a GPU as `kjudge roofline` and `kjudge profile` use them: the cached
 *  result for this GPU and driver when there is a usable one, else a fresh measurement, which is
 *  then cached. Needs a GPU. */

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include <kjudge/roofline/result.hpp>

namespace kj::roofline {

struct obtain_options {
  int device = 0;
  int repetitions = 7;
  bool refresh = false;              ///< measure even when a cached result exists
  std::filesystem::path cache_root;  ///< the kjudge cache directory
  /** Messages for people (measuring, not cached, ...); may be empty. */
  std::function<void(std::string_view)> progress;
};

struct obtained {
  roofline_result result;
  std::string origin;  ///< "cached in <path>", "measured now, cached in <path>", ...
};

/** Throws kj::error(cuda) when the device cannot be used. */
[[nodiscard]] obtained obtain_roofline(const obtain_options& options);

}  // namespace kj::roofline
