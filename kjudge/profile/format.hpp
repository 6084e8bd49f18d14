#pragma once
/** @file Rates for people: bytes/s and FLOP/s with a decimal SI prefix chosen by size, so a
 *  message never shows "0.0 TB/s" for a slow level nor a 13-digit number. */

#include <string>

namespace kj::profile {

/** "13.6 GB/s", "3.35 TB/s", "812 MB/s" (10^9 and 10^12, not GiB). */
[[nodiscard]] std::string format_bytes_per_s(double bytes_per_s);
/** "989.4 TFLOP/s", "51.9 GFLOP/s". */
[[nodiscard]] std::string format_flop_per_s(double flop_per_s);
/** "328.96 kB", "1.20 MB", "512 B" (decimal prefixes, two decimals). */
[[nodiscard]] std::string format_bytes(double bytes);
/** A FLOP count: "17.0 MFLOP", "9.20 MFLOP". */
[[nodiscard]] std::string format_flop(double flop);
/** "12.4%". */
[[nodiscard]] std::string format_pct(double pct);

}  // namespace kj::profile
