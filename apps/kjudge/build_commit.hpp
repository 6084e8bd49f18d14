#pragma once
/** @file The commit this executable was built from (cmake/kjudge_source_commit.cmake). */

namespace kj::app {

/** KJ_SOURCE_COMMIT of the generated header, which only build_commit.cpp includes: a new commit
 *  recompiles that one file. */
[[nodiscard]] const char* build_commit() noexcept;

}  // namespace kj::app
