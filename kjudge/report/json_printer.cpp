#include <kjudge/report/json_printer.hpp>

#include <kjudge/core/error.hpp>
#include <kjudge/core/file_io.hpp>

namespace kj::report {

std::string render_json(const eval_result& r) {
  return nlohmann::json(r).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

void write_json(const eval_result& r, const std::filesystem::path& path) {
  write_output(path, render_json(r));
}

eval_result read_json(const std::filesystem::path& path) {
  const std::string text = read_file(path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    KJ_THROW(error_kind::protocol, "{} is not JSON: {}", path.string(), e.what());
  }
  return j.get<eval_result>();
}

}  // namespace kj::report
