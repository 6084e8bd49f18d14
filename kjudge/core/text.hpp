#pragma once
/** @file Text for messages. */

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace kj {

/** The first `shown` of `items` joined by `separator`, then "<separator>and N more" where some
 *  were left out: a flag's list of names or changes. */
[[nodiscard]] std::string listed(const std::vector<std::string>& items, std::size_t shown,
                                 std::string_view separator);

}  // namespace kj
