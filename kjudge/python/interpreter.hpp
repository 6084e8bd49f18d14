#pragma once
/** @file Which python3 the worker embeds. The binary links one libpython (the version it was built
 *  against); the interpreter chosen here only decides sys.prefix and site-packages, so it must be
 *  that same version and hold torch. Order: an explicit setting (--python, then $KJUDGE_PYTHON),
 *  then the interpreter kjudge was configured with, then probing known virtual environments.
 *  Never plain PATH: a python3 on PATH may lack a shared libpython or torch. Probed interpreters
 *  are judged by their layout alone; an explicit one is run once (`-c`, torch found but not
 *  imported) to learn that it is a Python of the embedded version with torch on its path.
 */

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace kj::python {

struct interpreter_choice {
  std::filesystem::path executable;
  std::string source;                 ///< "--python", "$KJUDGE_PYTHON", "configured", "probed"
  std::vector<std::string> rejected;  ///< candidates looked at and why they were skipped
};

/** The longest an interpreter named by the user may run (see choose_interpreter). */
inline constexpr std::chrono::milliseconds k_interpreter_check_limit{20'000};

/** Throws kj::error(usage) when an explicit choice does not exist, is not a Python, is one of
 *  another version than the embedded one or finds no torch (its run lasts `check_limit` at most:
 *  an evaluation passes the smaller of that and its --timeout); kj::error(python) when nothing
 *  usable is found by probing (the message lists what was tried). */
[[nodiscard]] interpreter_choice choose_interpreter(
    const std::filesystem::path& explicit_python,
    std::chrono::milliseconds check_limit = k_interpreter_check_limit);

/** "3.11": the Python version this binary embeds. */
[[nodiscard]] std::string embedded_version();

}  // namespace kj::python
