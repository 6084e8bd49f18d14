#include <kjudge/report/json_printer.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>

#include <kjudge/core/error.hpp>

namespace kj::report {

std::string render_json(const eval_result& r) {
  return nlohmann::json(r).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

void write_json(const eval_result& r, const std::filesystem::path& path) {
  const std::string text = render_json(r);
  if (path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return;
  }
  const auto tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) KJ_THROW(error_kind::io, "cannot write {}", tmp);
    out << text;
    if (!out.flush()) KJ_THROW(error_kind::io, "writing {} failed", tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) KJ_THROW(error_kind::io, "cannot move {} to {}: {}", tmp, path.string(), ec.message());
}

eval_result read_json(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) KJ_THROW(error_kind::io, "cannot read {}", path.string());
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::exception& e) {
    KJ_THROW(error_kind::protocol, "{} is not JSON: {}", path.string(), e.what());
  }
  return j.get<eval_result>();
}

}  // namespace kj::report
