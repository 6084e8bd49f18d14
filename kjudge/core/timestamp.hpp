#pragma once
/** @file Wall-clock timestamps for provenance (results, roofline measurements). */

#include <ctime>
#include <string>

namespace kj {

/** Now, UTC, ISO 8601 to the second: "2026-11-30T06:30:01Z". */
[[nodiscard]] std::string utc_now();

/** `t`, UTC, ISO 8601 to the second. */
[[nodiscard]] std::string utc_time(std::time_t t);

}  // namespace kj
