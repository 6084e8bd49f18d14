#pragma once
/** @file Wall-clock timestamps for provenance (results, roofline measurements). */

#include <string>

namespace kj {

/** Now, UTC, ISO 8601 to the second: "2026-11-30T06:30:01Z". */
[[nodiscard]] std::string utc_now();

}  // namespace kj
