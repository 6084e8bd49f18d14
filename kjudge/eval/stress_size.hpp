#pragma once
/** @file How much memory a stress trial's inputs would take, from a nominal trial's, before any
 *  is drawn: a problem whose stress inputs the machine cannot hold would otherwise draw them
 *  until the allocator refuses (the problem's error) or the kernel's out-of-memory killer ends
 *  the worker (a crash the candidate would be blamed for). */

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kj::eval {

/** The bytes of one copy of the stress inputs: each tensor input of a nominal trial (`shapes`,
 *  `dtypes` as trial_result holds them) with every dimension that equals a size the trial drew
 *  by jitter from a nominal size of 7 or more (`jitter`: nominal -> drawn; the sizes a stress
 *  trial multiplies; not those in `pinned`, drawn while the models were built, which keep their
 *  value in every trial) times `scale`. An estimate: a fixed dimension that happens to equal a
 * drawn size counts as scaled. Dtypes kjudge does not know count 8 bytes an element. */
[[nodiscard]] double stress_input_bytes(const std::vector<std::vector<std::int64_t>>& shapes,
                                        const std::vector<std::string>& dtypes,
                                        const std::map<std::string, std::int64_t>& jitter,
                                        const std::vector<std::int64_t>& pinned,
                                        std::int64_t scale);

/** The host's available memory (MemAvailable of /proc/meminfo), or nullopt. */
[[nodiscard]] std::optional<double> host_available_bytes();

}  // namespace kj::eval
