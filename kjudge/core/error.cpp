#include <kjudge/core/error.hpp>

#include <filesystem>

namespace kj {

std::string_view to_string(error_kind k) noexcept {
  switch (k) {
    case error_kind::usage:
      return "usage";
    case error_kind::io:
      return "io";
    case error_kind::problem:
      return "problem";
    case error_kind::candidate:
      return "candidate";
    case error_kind::cuda:
      return "cuda";
    case error_kind::python:
      return "python";
    case error_kind::protocol:
      return "protocol";
    case error_kind::internal:
      return "internal";
  }
  return "unknown";
}

error::error(error_kind kind, const std::string& message, std::source_location where)
    : std::runtime_error(fmt::format("{}:{}: {}",
                                     std::filesystem::path(where.file_name()).filename().string(),
                                     where.line(), message)),
      m_kind(kind),
      m_message(message) {}

}  // namespace kj
