#pragma once
/** @file The commit kjudge was built from. */

namespace kj {

/** The source tree's commit when the executable was built, as it said with set_source_commit
 *  ("9d5a81b1c2d3", "9d5a81b1c2d3-dirty" where tracked files differed from it), or "unknown":
 *  the sources were no git checkout, or the program (a unit test) did not say. */
[[nodiscard]] const char* source_commit() noexcept;

/** Called by the executable's main before anything else; `commit` must live as long as the
 *  program (a string literal). Kept out of the libraries, so that a new commit relinks only the
 *  executable (apps/kjudge/build_commit.cpp). */
void set_source_commit(const char* commit) noexcept;

}  // namespace kj
