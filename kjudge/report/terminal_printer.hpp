#pragma once
/** @file The terminal report of an evaluation, rendered from the result alone. */

#include <string>

#include <kjudge/core/result.hpp>

namespace kj::report {

struct terminal_options {
  bool verbose = false;  ///< also show the worker's output tail on success
};

[[nodiscard]] std::string render_terminal(const eval_result& r,
                                          const terminal_options& options = {});
/** The report's status line and, for any status but correct, the message's first line. */
[[nodiscard]] std::string render_status(const eval_result& r);

}  // namespace kj::report
