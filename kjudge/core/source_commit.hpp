#pragma once
/** @file The commit kjudge was built from. */

namespace kj {

/** The source tree's commit at build time, as `git describe --always --dirty` gives it
 *  ("9d5a81b1c2d3", "9d5a81b1c2d3-dirty" where files differed from it), or "unknown" where the
 *  sources were no git checkout. */
[[nodiscard]] const char* source_commit() noexcept;

}  // namespace kj
