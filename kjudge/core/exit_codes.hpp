#pragma once
/** @file Process exit codes of `kjudge eval` (documented in docs/cli.md). */

#include <string_view>

namespace kj {

/** Outcome of an evaluation, as shown to users and scripts. */
enum class eval_status {
  correct,
  incorrect,
  compile_error,
  runtime_error,  ///< the candidate raised, returned an error, or hit a CUDA error
  crashed,        ///< the worker died (signal, exit() in the candidate, out of host memory)
  timed_out,
  problem_error,  ///< the reference problem could not be loaded or run
  internal_error,
};

[[nodiscard]] std::string_view to_string(eval_status s) noexcept;
[[nodiscard]] eval_status eval_status_from_string(std::string_view s);

namespace exit_code {
inline constexpr int correct = 0;
inline constexpr int incorrect = 1;
inline constexpr int usage = 2;
inline constexpr int compile_error = 3;
inline constexpr int runtime_error = 4;  ///< runtime error or crash of the candidate
inline constexpr int timed_out = 5;
inline constexpr int problem_error = 6;
inline constexpr int internal_error = 7;
/** The evaluation ran but its --json result could not be written: not the verdict's code, so
 *  that a script never takes a missing result file for a verdict. */
inline constexpr int result_not_written = 8;
}  // namespace exit_code

[[nodiscard]] int exit_code_for(eval_status s) noexcept;

}  // namespace kj
