#include "help.hpp"

namespace kj::embedded {
extern const std::string_view cli_md;
}

namespace kj::app {

std::string help_section(std::string_view command) {
  const std::string_view doc = embedded::cli_md;
  const std::string heading =
      command.empty() ? "## kjudge\n" : "## kjudge " + std::string(command) + "\n";
  std::size_t start = doc.find(heading);
  if (start == std::string_view::npos) return "";
  start += 3;  // drop "## "
  std::size_t end = doc.find("\n## ", start);
  std::string_view body =
      doc.substr(start, end == std::string_view::npos ? doc.size() - start : end + 1 - start);
  return std::string(body);
}

}  // namespace kj::app
