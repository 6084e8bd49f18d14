#pragma once
/** @file Typed errors with source context. Library code throws these; only the CLI's main, the
 *  worker boundary and the Python bridge catch and translate them. Expected outcomes of an
 *  evaluation (incorrect output, compile error, crash) are result values, not exceptions. */

#include <source_location>
#include <stdexcept>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace kj {

/** What went wrong, at the granularity a caller can act on. */
enum class error_kind {
  usage,      ///< bad command line or option value
  io,         ///< a file could not be read or written
  problem,    ///< the reference problem is broken (does not load, run, or give outputs)
  candidate,  ///< the candidate misbehaved in a way the caller did not ask to tolerate
  cuda,       ///< a CUDA runtime / driver / NVRTC / CUPTI call failed
  python,     ///< the embedded interpreter raised
  protocol,   ///< worker and orchestrator disagree (bad JSON, wrong schema version)
  internal,   ///< a kjudge bug
};

[[nodiscard]] std::string_view to_string(error_kind k) noexcept;

/** The one exception type kjudge throws. `what()` carries "file:line: message". */
class error : public std::runtime_error {
 public:
  error(error_kind kind, const std::string& message,
        std::source_location where = std::source_location::current());

  [[nodiscard]] error_kind kind() const noexcept { return m_kind; }
  /** The message without the source location, for users. */
  [[nodiscard]] const std::string& message() const noexcept { return m_message; }

 private:
  error_kind m_kind;
  std::string m_message;
};

}  // namespace kj

/** Throws kj::error of the given kind with a fmt-formatted message. */
#define KJ_THROW(kind, ...) throw ::kj::error((kind), ::fmt::format(__VA_ARGS__))

/** Checks a condition that must hold; throws an internal error naming it otherwise. */
#define KJ_EXPECTS(cond)                                                                 \
  do {                                                                                   \
    if (!(cond)) KJ_THROW(::kj::error_kind::internal, "precondition failed: {}", #cond); \
  } while (0)
