#pragma once
/** @file Help text: sections of docs/cli.md, compiled into the binary. */

#include <string>
#include <string_view>

namespace kj::app {

/** The section "## kjudge" (command empty) or "## kjudge <command>" of docs/cli.md, without the
 *  heading line's hashes. Empty when there is no such section. */
[[nodiscard]] std::string help_section(std::string_view command);

}  // namespace kj::app
