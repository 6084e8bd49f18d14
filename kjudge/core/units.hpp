#pragma once
/** @file Time units. Durations are std::chrono types with double representation, so a value
 *  always says whether it is ns, us or ms; conversion to a bare double happens only at the JSON
 *  and printing edges, into fields whose names end in the unit (`median_us`). */

#include <chrono>

namespace kj {

using nanoseconds = std::chrono::duration<double, std::nano>;
using microseconds = std::chrono::duration<double, std::micro>;
using milliseconds = std::chrono::duration<double, std::milli>;
using seconds = std::chrono::duration<double>;

}  // namespace kj
