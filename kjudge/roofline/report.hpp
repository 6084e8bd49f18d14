#pragma once
/** @file What `kjudge roofline` prints and writes: a table for people (checked figures only; a
 *  figure that failed its checks shows its flag instead of a number) and the JSON document
 *  (the raw result plus the checked "ceilings" and every flag). */

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include <kjudge/roofline/check.hpp>
#include <kjudge/roofline/result.hpp>

namespace kj::roofline {

/** The report for people. `origin` says where the figures come from ("measured now", "cached
 *  <path>", "from <path>"). */
[[nodiscard]] std::string render_text(const roofline_result& r, const checked_roofline& c,
                                      std::string_view origin);

/** The kjudge.roofline/1 document: to_json(r) plus "ceilings" (to_json(c)) and "check_flags"
 *  (c.flags). from_json() reads it back (the extra sections are recomputed, not read). */
[[nodiscard]] nlohmann::json to_document(const roofline_result& r, const checked_roofline& c);

}  // namespace kj::roofline
