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

}  // namespace kj::report
