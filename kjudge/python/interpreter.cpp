#include <kjudge/python/interpreter.hpp>

#include <cstdlib>
#include <system_error>

#include <kjudge/config.hpp>
#include <kjudge/core/error.hpp>

namespace kj::python {

namespace fs = std::filesystem;

std::string embedded_version() {
  return KJ_PYTHON_VERSION;
}

namespace {

/** A cheap check that needs no subprocess: <prefix>/lib/pythonX.Y/site-packages/torch exists
 *  (venvs and pip installs), or the Debian dist-packages layout. */
bool has_torch(const fs::path& python, std::string& why) {
  std::error_code ec;
  if (!fs::exists(python, ec)) {
    why = "does not exist";
    return false;
  }
  const fs::path prefix = python.parent_path().parent_path();
  const std::string ver = embedded_version();
  const fs::path candidates[] = {
      prefix / "lib" / ("python" + ver) / "site-packages" / "torch" / "__init__.py",
      prefix / "local" / "lib" / ("python" + ver) / "dist-packages" / "torch" / "__init__.py",
      prefix / "lib" / "python3" / "dist-packages" / "torch" / "__init__.py",
  };
  for (const auto& c : candidates)
    if (fs::exists(c, ec)) return true;
  why = "no torch for Python " + ver + " under " + prefix.string();
  return false;
}

}  // namespace

interpreter_choice choose_interpreter(const fs::path& explicit_python) {
  interpreter_choice out;
  // Absolute, not resolved: a venv's python3 is a link whose venv must stay found, and the worker
  // pool runs from / (a relative path would name nothing there).
  const auto take = [&out](const fs::path& path, const char* source) {
    std::error_code ec;
    out.executable = fs::absolute(path, ec);
    out.source = source;
    return out;
  };
  if (!explicit_python.empty()) {
    std::error_code ec;
    if (!fs::exists(explicit_python, ec))
      KJ_THROW(error_kind::usage, "--python {}: no such file", explicit_python.string());
    return take(explicit_python, "--python");
  }
  if (const char* env = std::getenv("KJUDGE_PYTHON"); env && *env) {
    std::error_code ec;
    if (!fs::exists(env, ec)) KJ_THROW(error_kind::usage, "$KJUDGE_PYTHON={}: no such file", env);
    return take(env, "$KJUDGE_PYTHON");
  }
  struct probe {
    fs::path path;
    const char* source;
  };
  std::vector<probe> probes = {{KJ_DEFAULT_PYTHON, "configured"},
                               {fs::path(KJ_SOURCE_DIR) / ".venv/bin/python3", "probed"},
                               {"/opt/torch/.venv/bin/python3", "probed"},
                               {"/usr/bin/python3", "probed"}};
  if (const char* venv = std::getenv("VIRTUAL_ENV"); venv && *venv)
    probes.insert(probes.begin() + 1, {fs::path(venv) / "bin/python3", "probed"});
  for (const auto& p : probes) {
    std::string why;
    if (has_torch(p.path, why)) return take(p.path, p.source);
    out.rejected.push_back(p.path.string() + ": " + why);
  }
  std::string tried;
  for (const auto& r : out.rejected) tried += "\n  " + r;
  KJ_THROW(error_kind::python,
           "no python3 {} with torch found; pass --python or set KJUDGE_PYTHON. Tried:{}",
           embedded_version(), tried);
}

}  // namespace kj::python
