#pragma once
/** @file Text for messages. */

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace kj {

/** The first `shown` of `items` joined by `separator`, then "<separator>and N more" where some
 *  were left out: a flag's list of names or changes. */
[[nodiscard]] std::string listed(const std::vector<std::string>& items, std::size_t shown,
                                 std::string_view separator);

/** `value` with 3 significant digits, or as many more (up to 9) as it takes to read differently
 *  from `beside` where the two differ: a figure's error of 0.50032% next to its target of 0.5%
 *  read "at 0.5% (target 0.5%)", as if it had met it. */
[[nodiscard]] std::string figure_beside(double value, double beside);

/** A duration for a message, with the digits it needs: "30.0 s" from a second up, "0.31 s" from
 *  a tenth, "45 ms" or "0.4 ms" below that ("timed out after 0.0 s" read as no wait at all). */
[[nodiscard]] std::string seconds_text(double seconds);

/** `text` as a terminal shows it without acting on it: control characters (C0 but newline and
 *  tab, DEL, and C1 as UTF-8) and bytes that are not UTF-8 as a backslash, "x" and two hex
 *  digits (a C1 character, and the bidirectional overrides and isolates U+202A-202E and
 *  U+2066-2069, which reorder a line: "u" and four). A candidate's output and error messages reach
 * the report: its escape sequences could move the cursor and rewrite the verdict on the screen, a
 * carriage return overwrite it. */
[[nodiscard]] std::string terminal_safe(std::string_view text);
/** terminal_safe(text) on one line: newline and tab shown as "\x0a" and "\x09" too (a path, whose
 *  newline would split the line it is shown on). */
[[nodiscard]] std::string terminal_safe_line(std::string_view text);

}  // namespace kj
